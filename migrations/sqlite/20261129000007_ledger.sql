-- Durable sessions (DESIGN §5, §7): the append-only execution ledger, inbound
-- wakes deduplicated by delivery id, and the per-session `wait` cursor.

-- Where `handoff wait` / `resume` stand in the event log for a session:
-- action decisions and inbound wakes with `seq` above it are still unclaimed.
-- Advanced only forward, by a guarded UPDATE (compare-and-set).
ALTER TABLE agent_sessions ADD COLUMN last_wait_seq INTEGER NOT NULL DEFAULT 0;
-- When the session was ended (`handoff session end`), NULL while it runs.
ALTER TABLE agent_sessions ADD COLUMN ended_at INTEGER;

-- One row per step of a tool call: `started` is written before the call runs,
-- `completed` or `failed` after. Rows are never changed: the status of a call
-- is the set of its rows.
CREATE TABLE execution_ledger (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id     TEXT    NOT NULL,                -- client-chosen idempotency key
    session_id   TEXT    NOT NULL,
    tool         TEXT    NOT NULL,
    payload      TEXT    NOT NULL,                -- canonical JSON of the call's input
    payload_hash TEXT    NOT NULL,                -- SHA-256 hex of the canonical payload
    status       TEXT    NOT NULL CHECK (status IN ('started', 'completed', 'failed')),
    result       TEXT,                            -- canonical JSON, on completed/failed rows
    result_hash  TEXT,
    replay_safe  INTEGER NOT NULL DEFAULT 0 CHECK (replay_safe IN (0, 1)),
    at           INTEGER NOT NULL,
    UNIQUE (event_id, status)
);
-- At most one outcome per call: the database, not the application, forbids
-- both a `completed` and a `failed` row for one event id.
CREATE UNIQUE INDEX execution_ledger_one_outcome ON execution_ledger(event_id)
    WHERE status <> 'started';
CREATE INDEX execution_ledger_session ON execution_ledger(session_id, seq);

CREATE TRIGGER execution_ledger_no_update BEFORE UPDATE ON execution_ledger
BEGIN SELECT RAISE(ABORT, 'the execution ledger is append-only'); END;
CREATE TRIGGER execution_ledger_no_delete BEFORE DELETE ON execution_ledger
BEGIN SELECT RAISE(ABORT, 'the execution ledger is append-only'); END;

-- Inbound wakes (`POST /v1/sessions/{id}/wake`): one row per delivery, so a
-- replayed delivery id is recognised and not recorded twice.
CREATE TABLE session_wakes (
    source      TEXT    NOT NULL,                 -- who sent it: github, ci, a configured source name
    delivery_id TEXT    NOT NULL,                 -- webhook-id / X-GitHub-Delivery
    session_id  TEXT    NOT NULL,
    event_seq   INTEGER NOT NULL DEFAULT 0,       -- the `session.wake` event it produced
    at          INTEGER NOT NULL,
    UNIQUE (source, delivery_id)
);
