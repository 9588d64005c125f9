-- One append-only log is the audit (sqlite 20261213000100_audit_log says
-- why and how): `events.audit` carries an action's audit details, the
-- transition triggers write no audit row, the old rows are carried into
-- the log and checked row for row, and `action_audit` becomes a view.
ALTER TABLE events ADD COLUMN audit TEXT;

CREATE OR REPLACE FUNCTION actions_log_proposal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload, audit)
    VALUES (NEW.updated_at, 'action.' || NEW.t_event, 'action', NEW.id, NEW.t_actor, NEW.t_channel,
            NEW.project, NEW.session,
            handoff_json_set(NEW.t_details, ARRAY['status', 'kind', 'summary'],
                             ARRAY[NEW.status, NEW.kind, NEW.summary]),
            NEW.t_details);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION actions_log_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- An approval: its row, so the same approver can never count twice.
    IF NEW.approvals > OLD.approvals THEN
        INSERT INTO action_approvals (action_id, approver, at)
        VALUES (NEW.id, NEW.t_actor, NEW.updated_at);
    END IF;
    -- An approval with a patch: the patch's own entry first.
    IF NEW.t_patched IS NOT NULL THEN
        INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload, audit)
        VALUES (NEW.updated_at, 'action.patched', 'action', NEW.id, NEW.t_actor, NEW.t_channel,
                NEW.project, NEW.session,
                handoff_json_set(NEW.t_patched, ARRAY['status', 'kind', 'summary'],
                                 ARRAY[NEW.status, NEW.kind, NEW.summary]),
                NEW.t_patched);
    END IF;
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload, audit)
    VALUES (NEW.updated_at, 'action.' || NEW.t_event, 'action', NEW.id, NEW.t_actor, NEW.t_channel,
            NEW.project, NEW.session,
            handoff_json_set(NEW.t_details, ARRAY['status', 'kind', 'summary'],
                             ARRAY[NEW.status, NEW.kind, NEW.summary]),
            NEW.t_details);
    RETURN NULL;
END $$;

-- Carry the audit rows over: the k-th row of an (action, time, actor,
-- name) gives the k-th such event its details; a row with no event is
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

DROP TRIGGER events_no_update ON events;
UPDATE events SET audit = c.details FROM audit_carry c WHERE c.event_seq = events.seq;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
FOR EACH ROW EXECUTE FUNCTION handoff_refuse('events are append-only');

INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload, audit)
SELECT c.at, 'action.' || c.event, 'action', c.action_id, c.actor, '',
       COALESCE(x.project, ''), COALESCE(x.session, ''), c.details, c.details
FROM audit_carry c LEFT JOIN actions x ON x.id = c.action_id
WHERE c.event_seq IS NULL
ORDER BY c.audit_seq;

-- Row for row, or this migration fails and nothing is dropped.
DO $$
BEGIN
    IF (SELECT COUNT(*) FROM events WHERE audit IS NOT NULL) <> (SELECT COUNT(*) FROM action_audit)
       OR EXISTS (
           SELECT 1 FROM action_audit a WHERE NOT EXISTS (
               SELECT 1 FROM events e
               WHERE e.entity_kind = 'action' AND e.entity_id = a.action_id AND e.audit = a.details
                 AND e.at = a.at AND e.actor = a.actor AND e.type = 'action.' || a.event))
    THEN
        RAISE EXCEPTION 'the audit rows were not carried into the event log row for row';
    END IF;
END $$;
DROP TABLE audit_carry;

DROP TABLE action_audit;
DROP FUNCTION action_audit_no_delete();
CREATE VIEW action_audit (seq, action_id, at, actor, event, details) AS
SELECT seq, entity_id, at, actor, substr(type, 8), audit
FROM events WHERE entity_kind = 'action' AND audit IS NOT NULL;
