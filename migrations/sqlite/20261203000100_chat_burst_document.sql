-- Chat delivery: two record states, each for one rule.
--   burst       — a push beyond the digest threshold, waiting with the rest
--                 of its burst (same chat and forum topic) until `due_at`,
--                 then sent in one digest;
--   document_id — the message id of the file carrying a message's whole
--                 text once it arrived, 0 when its upload was given up (the
--                 card then says the file is missing), NULL while none was
--                 sent (or none is owed). A card with a file is sent after it.
-- SQLite cannot widen a CHECK in place, so the table is rebuilt with its rows.
CREATE TABLE chat_messages_new (
    item_kind   TEXT    NOT NULL,
    item_id     TEXT    NOT NULL,
    chat_id     INTEGER NOT NULL,
    thread_id   INTEGER,
    message_id  INTEGER,
    status      TEXT    NOT NULL
                CHECK (status IN ('sending', 'sent', 'digest', 'held', 'quiet', 'burst', 'skipped')),
    revision    INTEGER NOT NULL DEFAULT 0,
    text_hash   TEXT    NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    dirty_at    INTEGER,
    due_at      INTEGER,
    document_id INTEGER,
    PRIMARY KEY (item_kind, item_id, chat_id)
);
INSERT INTO chat_messages_new
    (item_kind, item_id, chat_id, thread_id, message_id, status, revision, text_hash,
     created_at, updated_at, dirty_at, due_at)
SELECT item_kind, item_id, chat_id, thread_id, message_id, status, revision, text_hash,
       created_at, updated_at, dirty_at, due_at
FROM chat_messages;
DROP TABLE chat_messages;
ALTER TABLE chat_messages_new RENAME TO chat_messages;
CREATE INDEX chat_messages_by_message ON chat_messages(chat_id, message_id);
CREATE INDEX chat_messages_sending ON chat_messages(status) WHERE status = 'sending';
CREATE INDEX chat_messages_dirty ON chat_messages(dirty_at) WHERE dirty_at IS NOT NULL;
CREATE INDEX chat_messages_due ON chat_messages(due_at) WHERE status IN ('held', 'quiet', 'burst');
