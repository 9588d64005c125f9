-- Durable cursors of event-log followers (the daemon's chat worker, …): the
-- last `seq` each has fully applied. A restarted follower resumes after it.
CREATE TABLE cursors (
    name       TEXT PRIMARY KEY,
    seq        INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

-- One chat message per (item, chat): the push's durable status. `sending` is
-- written before the Bot API call and `sent` (with the message id) after it,
-- so a push interrupted by a crash is found and resent at start-up.
CREATE TABLE chat_messages (
    item_kind  TEXT    NOT NULL,                -- question | row | action
    item_id    TEXT    NOT NULL,
    chat_id    INTEGER NOT NULL,
    thread_id  INTEGER,                         -- forum topic
    message_id INTEGER,                         -- set once sent
    status     TEXT    NOT NULL CHECK (status IN ('sending', 'sent', 'digest')),
    revision   INTEGER NOT NULL DEFAULT 0,      -- item revision the message shows
    text_hash  TEXT    NOT NULL DEFAULT '',     -- of the last text drawn, to skip no-op edits
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (item_kind, item_id, chat_id)
);
CREATE INDEX chat_messages_by_message ON chat_messages(chat_id, message_id);
CREATE INDEX chat_messages_sending ON chat_messages(status) WHERE status = 'sending';

-- Pending `/start` pairings: an unknown Telegram user asked to be admitted;
-- `handoff pair CODE --role …` on the host admits them.
CREATE TABLE chat_pairings (
    code       TEXT PRIMARY KEY,
    user_id    INTEGER NOT NULL,
    chat_id    INTEGER NOT NULL,
    username   TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    used_at    INTEGER
);

-- Users admitted by pairing, in addition to the config's allow-lists.
CREATE TABLE chat_members (
    chat_id  INTEGER NOT NULL,
    user_id  INTEGER NOT NULL,
    role     TEXT    NOT NULL CHECK (role IN ('answer', 'approve')),
    added_at INTEGER NOT NULL,
    PRIMARY KEY (chat_id, user_id, role)
);
