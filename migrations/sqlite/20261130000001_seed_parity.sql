-- Guarantees of the seed designs (issue 17) and project isolation of dedup
-- keys (issue 15).

-- 1. Dedup covers `unknown` and is per project. An action whose outcome is
-- unknown may already have happened: a retry with the same key must get it
-- back, not a second Approve button. Keys are unique per project, so one
-- project can neither see nor squat another's.
--
-- Before this index, an `unknown` action released its key, so a database may
-- hold an `unknown` action and a later action with the same key. The newest
-- keeps the key; every older one releases it, and its audit says so.
INSERT INTO action_audit (action_id, at, actor, event, details)
SELECT a.id, CAST(strftime('%s', 'now') AS INTEGER) * 1000, 'migration', 'dedup_key_released',
       json_object('dedup_key', a.dedup_key,
                   'why', 'a newer action holds this key; unknown outcomes block duplicates from now on')
FROM actions a
WHERE a.status = 'unknown' AND a.dedup_key IS NOT NULL AND EXISTS (
    SELECT 1 FROM actions o
    WHERE o.project = a.project AND o.dedup_key = a.dedup_key AND o.id <> a.id
      AND o.status IN ('pending', 'approved', 'executing', 'unknown')
      AND (o.created_at, o.id) > (a.created_at, a.id));
UPDATE actions SET dedup_key = NULL
WHERE status = 'unknown' AND dedup_key IS NOT NULL AND EXISTS (
    SELECT 1 FROM actions o
    WHERE o.project = actions.project AND o.dedup_key = actions.dedup_key AND o.id <> actions.id
      AND o.status IN ('pending', 'approved', 'executing', 'unknown')
      AND (o.created_at, o.id) > (actions.created_at, actions.id));

DROP INDEX actions_dedup_live;
CREATE UNIQUE INDEX actions_dedup_live ON actions(project, dedup_key)
    WHERE dedup_key IS NOT NULL AND status IN ('pending', 'approved', 'executing', 'unknown');

-- 2. A person's response to a row stays with the agent until the agent
-- resolves it, blocked or not: 1 from a human response until an agent write
-- to the row after that response was delivered. A board does not
-- auto-archive while one of its rows has an open response.
ALTER TABLE board_rows ADD COLUMN response_open INTEGER NOT NULL DEFAULT 0
    CHECK (response_open IN (0, 1));
UPDATE board_rows SET response_open = 1
WHERE (annotation IS NOT NULL AND annotation_seen_at IS NULL)
   OR (handled_at IS NOT NULL AND handled_seen_at IS NULL);

-- 3. The ledger belongs to registered sessions, and a call's event id is
-- unique within its session (not across the database: one project must
-- neither see nor squat another's ids). Ledger rows written before this
-- rule for sessions that never registered get an ended session of their
-- own, so their calls can still be completed and resumed.
INSERT INTO agent_sessions (session_id, status, created_at, updated_at, ended_at)
SELECT session_id, 'ended', MIN(at), MAX(at), MAX(at) FROM execution_ledger
WHERE session_id NOT IN (SELECT session_id FROM agent_sessions)
GROUP BY session_id;

-- The table is rebuilt for its new UNIQUE constraint (rows copied as they
-- are; DROP TABLE fires no DELETE trigger).
CREATE TABLE execution_ledger_new (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id     TEXT    NOT NULL,                -- client-chosen idempotency key, unique per session
    session_id   TEXT    NOT NULL REFERENCES agent_sessions(session_id),
    tool         TEXT    NOT NULL,
    payload      TEXT    NOT NULL,                -- canonical JSON of the call's input
    payload_hash TEXT    NOT NULL,                -- SHA-256 hex of the canonical payload
    status       TEXT    NOT NULL CHECK (status IN ('started', 'completed', 'failed')),
    result       TEXT,                            -- canonical JSON, on completed/failed rows
    result_hash  TEXT,
    replay_safe  INTEGER NOT NULL DEFAULT 0 CHECK (replay_safe IN (0, 1)),
    at           INTEGER NOT NULL,
    UNIQUE (session_id, event_id, status)
);
INSERT INTO execution_ledger_new
    (seq, event_id, session_id, tool, payload, payload_hash, status, result, result_hash, replay_safe, at)
SELECT seq, event_id, session_id, tool, payload, payload_hash, status, result, result_hash, replay_safe, at
FROM execution_ledger;
DROP TABLE execution_ledger;
ALTER TABLE execution_ledger_new RENAME TO execution_ledger;

-- At most one outcome per call: the database, not the application, forbids
-- both a `completed` and a `failed` row for one call.
CREATE UNIQUE INDEX execution_ledger_one_outcome ON execution_ledger(session_id, event_id)
    WHERE status <> 'started';
CREATE INDEX execution_ledger_session ON execution_ledger(session_id, seq);

CREATE TRIGGER execution_ledger_no_update BEFORE UPDATE ON execution_ledger
BEGIN SELECT RAISE(ABORT, 'the execution ledger is append-only'); END;
CREATE TRIGGER execution_ledger_no_delete BEFORE DELETE ON execution_ledger
BEGIN SELECT RAISE(ABORT, 'the execution ledger is append-only'); END;
-- Enforced by the engine whoever writes: a row for a session that was never
-- registered is refused (the foreign key holds only where foreign_keys=ON).
CREATE TRIGGER execution_ledger_session_known BEFORE INSERT ON execution_ledger
WHEN NOT EXISTS (SELECT 1 FROM agent_sessions WHERE session_id = NEW.session_id)
BEGIN SELECT RAISE(ABORT, 'the ledger belongs to a registered session'); END;
