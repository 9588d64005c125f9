-- Notification discipline (issue 13, item 8): a push may wait before it
-- goes out, durably, so a daemon restart neither loses nor hurries it.
--   held    — inside its kind's grace period (`[[kinds]] grace_secs`);
--   quiet   — inside its chat's quiet hours; goes out in one digest after;
--   skipped — settled while it waited: never pushed (the record stays so a
--             replayed event does not push it after all).
-- `due_at` (ms) is when a held or quiet record is looked at again. SQLite
-- cannot widen a CHECK in place, so the table is rebuilt with its rows.
CREATE TABLE chat_messages_new (
    item_kind  TEXT    NOT NULL,
    item_id    TEXT    NOT NULL,
    chat_id    INTEGER NOT NULL,
    thread_id  INTEGER,
    message_id INTEGER,
    status     TEXT    NOT NULL
               CHECK (status IN ('sending', 'sent', 'digest', 'held', 'quiet', 'skipped')),
    revision   INTEGER NOT NULL DEFAULT 0,
    text_hash  TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    dirty_at   INTEGER,
    due_at     INTEGER,
    PRIMARY KEY (item_kind, item_id, chat_id)
);
INSERT INTO chat_messages_new
    (item_kind, item_id, chat_id, thread_id, message_id, status, revision, text_hash,
     created_at, updated_at, dirty_at)
SELECT item_kind, item_id, chat_id, thread_id, message_id, status, revision, text_hash,
       created_at, updated_at, dirty_at
FROM chat_messages;
DROP TABLE chat_messages;
ALTER TABLE chat_messages_new RENAME TO chat_messages;
CREATE INDEX chat_messages_by_message ON chat_messages(chat_id, message_id);
CREATE INDEX chat_messages_sending ON chat_messages(status) WHERE status = 'sending';
CREATE INDEX chat_messages_dirty ON chat_messages(dirty_at) WHERE dirty_at IS NOT NULL;
CREATE INDEX chat_messages_due ON chat_messages(due_at) WHERE status IN ('held', 'quiet');
