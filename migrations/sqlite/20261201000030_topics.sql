-- Forum topics (issue 13 item 7): a chat configured with `topics =
-- "project" | "session"` gets one forum topic per project (or agent
-- session), created with createForumTopic on first use and remembered here,
-- so a daemon restart reuses it instead of creating a twin.
CREATE TABLE chat_topics (
    chat_id     INTEGER NOT NULL,                          -- the Telegram group
    key         TEXT NOT NULL,                             -- `project:<name>` or `session:<id>`
    thread_id   INTEGER NOT NULL,                          -- message_thread_id of the topic
    name        TEXT NOT NULL,                             -- the topic's title as created
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (chat_id, key)
);
