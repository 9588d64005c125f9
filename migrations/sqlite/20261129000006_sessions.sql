-- Agent sessions (DESIGN §5): one running agent, its wake target and an
-- opaque checkpointed state blob with a CAS revision.
CREATE TABLE agent_sessions (
    session_id  TEXT PRIMARY KEY,               -- client-chosen (e.g. Claude Code's session id)
    agent       TEXT NOT NULL DEFAULT '',
    project     TEXT NOT NULL DEFAULT '',
    cwd         TEXT NOT NULL DEFAULT '',
    wake_target TEXT,                           -- JSON WakeTarget, NULL = none
    state_blob  TEXT,                           -- last checkpoint (opaque to handoff)
    status      TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'idle', 'ended')),
    revision    INTEGER NOT NULL DEFAULT 1,     -- checkpoint CAS token
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
