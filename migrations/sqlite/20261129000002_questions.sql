-- Questions an agent hands to a human (DESIGN §2), and the append-only
-- history of every reply and clear.
CREATE TABLE questions (
    id             TEXT    PRIMARY KEY,           -- new_id(): UUIDv7 hex
    project        TEXT    NOT NULL DEFAULT '',
    agent          TEXT    NOT NULL DEFAULT '',
    session        TEXT    NOT NULL DEFAULT '',
    key            TEXT,                          -- "one question, one place" per project
    title          TEXT    NOT NULL,
    detail         TEXT    NOT NULL DEFAULT '',
    context        TEXT    NOT NULL DEFAULT '',
    options        TEXT    NOT NULL DEFAULT '[]', -- JSON [{label, recommended}]
    status         TEXT    NOT NULL DEFAULT 'open'
                   CHECK (status IN ('open', 'resolved', 'dismissed')),
    outcome        TEXT,                          -- resolve outcome / dismiss reason
    reply          TEXT,                          -- NULL: no reply waiting or given
    reply_context  TEXT,
    reply_kind     TEXT    CHECK (reply_kind IN ('answer', 'clarify', 'decline')),
    reply_source   TEXT    CHECK (reply_source IN ('inbox', 'chat', 'agent')),
    replied_by     TEXT,
    replied_at     INTEGER,
    reply_seen_at  INTEGER,                       -- delivered to an agent
    -- Bumped by every reply and clear. The pickup mark names the exact reply
    -- it read by this counter: two replies in the same millisecond share
    -- `replied_at` but never `reply_seq`.
    reply_seq      INTEGER NOT NULL DEFAULT 0,
    revision       INTEGER NOT NULL DEFAULT 1,    -- bumped when the agent re-flags the key
    snoozed_until  INTEGER,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    resolved_at    INTEGER                        -- resolved or dismissed
);

-- One open question per (project, key): re-flagging updates it in place.
CREATE UNIQUE INDEX questions_open_key ON questions(project, key)
    WHERE key IS NOT NULL AND status = 'open';
CREATE INDEX questions_status ON questions(status, project, created_at);
CREATE INDEX questions_session ON questions(session, status) WHERE session <> '';

-- Every reply and every clear, in order. Never rewritten.
CREATE TABLE question_replies (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    question_id  TEXT    NOT NULL REFERENCES questions(id),
    reply_seq    INTEGER NOT NULL,                -- questions.reply_seq after this write
    action       TEXT    NOT NULL CHECK (action IN ('reply', 'clear')),
    reply        TEXT,
    reply_context TEXT,
    kind         TEXT    CHECK (kind IN ('answer', 'clarify', 'decline')),
    source       TEXT    NOT NULL CHECK (source IN ('inbox', 'chat', 'agent')),
    by           TEXT    NOT NULL DEFAULT '',
    revision     INTEGER NOT NULL,                -- question revision it answered
    at           INTEGER NOT NULL
);
CREATE INDEX question_replies_question ON question_replies(question_id, seq);

CREATE TRIGGER question_replies_no_update BEFORE UPDATE ON question_replies
BEGIN SELECT RAISE(ABORT, 'question replies are append-only'); END;
CREATE TRIGGER question_replies_no_delete BEFORE DELETE ON question_replies
BEGIN SELECT RAISE(ABORT, 'question replies are append-only'); END;
