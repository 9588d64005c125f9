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

-- 3. The ledger belongs to registered sessions. Enforced by the engine: a
-- row for a session that was never registered is refused. Ledger rows
-- written before this rule for sessions that never registered get an ended
-- session of their own, so their calls can still be completed and resumed.
INSERT INTO agent_sessions (session_id, status, created_at, updated_at, ended_at)
SELECT session_id, 'ended', MIN(at), MAX(at), MAX(at) FROM execution_ledger
WHERE session_id NOT IN (SELECT session_id FROM agent_sessions)
GROUP BY session_id;
CREATE TRIGGER execution_ledger_session_known BEFORE INSERT ON execution_ledger
WHEN NOT EXISTS (SELECT 1 FROM agent_sessions WHERE session_id = NEW.session_id)
BEGIN SELECT RAISE(ABORT, 'the ledger belongs to a registered session'); END;
