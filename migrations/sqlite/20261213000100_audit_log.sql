-- One append-only log is the audit (docs/design.md §4, §6). An action's
-- audit entry is the event its transition appends, carrying the audit
-- details (secrets already redacted) in `events.audit`; the entry's name is
-- the event type without its `action.` prefix. `action_audit` stops being a
-- table: every row it held is carried into the log here, checked row for
-- row, and the name stays as a read-only view of the log with the old
-- columns.
ALTER TABLE events ADD COLUMN audit TEXT; -- an action's audit details (JSON, redacted); NULL: not an audit entry

-- The transition triggers append one event per audit entry and no audit row.
DROP TRIGGER actions_log_proposal;
DROP TRIGGER actions_log_transition;

CREATE TRIGGER actions_log_proposal AFTER INSERT ON actions
WHEN NEW.t_event IS NOT NULL
BEGIN
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload, audit)
    VALUES (NEW.updated_at, 'action.' || NEW.t_event, 'action', NEW.id, NEW.t_actor, NEW.t_channel,
            NEW.project, NEW.session,
            json_set(NEW.t_details, '$.status', NEW.status, '$.kind', NEW.kind, '$.summary', NEW.summary),
            NEW.t_details);
END;

CREATE TRIGGER actions_log_transition AFTER UPDATE OF t_seq ON actions
WHEN NEW.t_seq <> OLD.t_seq
BEGIN
    -- An approval: its row, so the same approver can never count twice.
    INSERT INTO action_approvals (action_id, approver, at)
    SELECT NEW.id, NEW.t_actor, NEW.updated_at WHERE NEW.approvals > OLD.approvals;
    -- An approval with a patch: the patch's own entry first.
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload, audit)
    SELECT NEW.updated_at, 'action.patched', 'action', NEW.id, NEW.t_actor, NEW.t_channel,
           NEW.project, NEW.session,
           json_set(NEW.t_patched, '$.status', NEW.status, '$.kind', NEW.kind, '$.summary', NEW.summary),
           NEW.t_patched
    WHERE NEW.t_patched IS NOT NULL;
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload, audit)
    VALUES (NEW.updated_at, 'action.' || NEW.t_event, 'action', NEW.id, NEW.t_actor, NEW.t_channel,
            NEW.project, NEW.session,
            json_set(NEW.t_details, '$.status', NEW.status, '$.kind', NEW.kind, '$.summary', NEW.summary),
            NEW.t_details);
END;

-- Carry the audit rows over. A row written with its event (the same
-- action, time, actor and name, the k-th of such rows with the k-th such
-- event) gives that event its details; a row that never had one (the
-- dedup-key release notes of 20261130000001, fault-injected rows) is
-- appended as an event of its own, type `action.<its name>`.
CREATE TEMP TABLE audit_carry AS
WITH a AS (
    SELECT seq, action_id, at, actor, event, details,
           ROW_NUMBER() OVER (PARTITION BY action_id, at, actor, event ORDER BY seq) AS k
    FROM action_audit
), e AS (
    SELECT seq, entity_id, at, actor, type,
           ROW_NUMBER() OVER (PARTITION BY entity_id, at, actor, type ORDER BY seq) AS k
    FROM events WHERE entity_kind = 'action'
)
SELECT a.seq AS audit_seq, e.seq AS event_seq, a.action_id, a.at, a.actor, a.event, a.details
FROM a LEFT JOIN e
  ON e.entity_id = a.action_id AND e.at = a.at AND e.actor = a.actor
 AND e.type = 'action.' || a.event AND e.k = a.k;

DROP TRIGGER events_no_update;
UPDATE events SET audit = (SELECT c.details FROM audit_carry c WHERE c.event_seq = events.seq)
WHERE seq IN (SELECT event_seq FROM audit_carry WHERE event_seq IS NOT NULL);
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload, audit)
SELECT c.at, 'action.' || c.event, 'action', c.action_id, c.actor, '',
       COALESCE(x.project, ''), COALESCE(x.session, ''), c.details, c.details
FROM audit_carry c LEFT JOIN actions x ON x.id = c.action_id
WHERE c.event_seq IS NULL
ORDER BY c.audit_seq;

-- Row for row: as many entries in the log as audit rows, and each audit
-- row found there with its action, time, actor, name and details. A
-- mismatch fails this migration (the CHECK), so nothing is dropped.
CREATE TEMP TABLE audit_carried (ok INTEGER NOT NULL CHECK (ok = 1));
INSERT INTO audit_carried
SELECT (SELECT COUNT(*) FROM events WHERE audit IS NOT NULL) = (SELECT COUNT(*) FROM action_audit)
   AND NOT EXISTS (
       SELECT 1 FROM action_audit a WHERE NOT EXISTS (
           SELECT 1 FROM events e
           WHERE e.entity_kind = 'action' AND e.entity_id = a.action_id AND e.audit = a.details
             AND e.at = a.at AND e.actor = a.actor AND e.type = 'action.' || a.event));
DROP TABLE audit_carried;
DROP TABLE audit_carry;

-- The table goes (its triggers and index with it); its name reads the log.
DROP TABLE action_audit;
CREATE VIEW action_audit (seq, action_id, at, actor, event, details) AS
SELECT seq, entity_id, at, actor, substr(type, 8), audit
FROM events WHERE entity_kind = 'action' AND audit IS NOT NULL;
