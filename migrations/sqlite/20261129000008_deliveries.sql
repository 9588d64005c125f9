-- Wake-up deliveries (DESIGN §6-7): one row per (event, target) with a
-- durable status, so a wake-up survives retries and daemon restarts and a
-- replayed event never enqueues twice.
CREATE TABLE deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    event_seq       INTEGER NOT NULL,               -- the event being delivered
    target_key      TEXT    NOT NULL,               -- <kind>:<hash of the target>
    origin          TEXT    NOT NULL,               -- session | rule:<name>
    target          TEXT    NOT NULL,               -- JSON WakeTarget, as resolved at enqueue
    status          TEXT    NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'delivering', 'delivered', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0,     -- claims so far; also the claim token
    next_attempt_at INTEGER NOT NULL,               -- ms; due when <= now
    lease_ms        INTEGER NOT NULL,               -- how long one attempt may hold the row
    lease_until     INTEGER,                        -- set while delivering
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    UNIQUE (event_seq, target_key)
);
CREATE INDEX deliveries_due ON deliveries(status, next_attempt_at)
    WHERE status IN ('pending', 'delivering');

-- Targets that told us to stop (a webhook answering 410 Gone): later
-- events skip them.
CREATE TABLE disabled_targets (
    target_key  TEXT PRIMARY KEY,
    reason      TEXT    NOT NULL,
    disabled_at INTEGER NOT NULL
);

-- The notify worker's cursor starts at the log's end as of this migration:
-- a store upgraded with history does not wake sessions for answers handled
-- long ago, and every event written after it is delivered (set here, not
-- at the daemon's first start, so nothing written in between is skipped).
-- updated_at 0: a migration has no clock.
INSERT INTO cursors (name, seq, updated_at)
SELECT 'notify', COALESCE(MAX(seq), 0), 0 FROM events WHERE true
ON CONFLICT (name) DO NOTHING;
