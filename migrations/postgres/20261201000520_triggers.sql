-- handoff's triggers on PostgreSQL: the same names and the same behaviour as
-- the SQLite ones (their migrations say why each exists), written as
-- PL/pgSQL functions. Refusals raise the exact SQLite RAISE(ABORT) message,
-- which the store matches on, with SQLSTATE 23001 (restrict_violation).
-- One difference the store must know: on PostgreSQL an error aborts the
-- whole transaction, not just the statement.

-- Refuse the change with the message given as the trigger's argument.
CREATE FUNCTION handoff_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING MESSAGE = TG_ARGV[0], ERRCODE = 'restrict_violation';
END $$;

-- SQLite's json_set(doc, '$.k1', v1, '$.k2', v2, …) for top-level keys and
-- text values, producing the same text: the document's members in their
-- order (a member whose key is set takes the new value in place), then the
-- keys it lacked in the order given, with no whitespace. The members are
-- copied as written, so `doc` must be compact JSON, as the store writes it
-- (serde_json, or the t_details a statement builds). NULL in, NULL out.
CREATE FUNCTION handoff_json_set(doc TEXT, keys TEXT[], vals TEXT[]) RETURNS TEXT
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    parsed JSON := doc::json;
    out    TEXT := '';
    done   BOOLEAN[] := array_fill(false, ARRAY[cardinality(keys)]);
    member RECORD;
    i      INT;
BEGIN
    IF doc IS NULL THEN
        RETURN NULL;
    END IF;
    IF json_typeof(parsed) <> 'object' THEN
        RETURN doc;  -- SQLite leaves a non-object as it is: no member to set
    END IF;
    FOR member IN SELECT key, value FROM json_each(parsed) LOOP
        i := array_position(keys, member.key);
        IF out <> '' THEN out := out || ','; END IF;
        IF i IS NULL THEN
            out := out || to_json(member.key)::text || ':' || member.value::text;
        ELSE
            out := out || to_json(member.key)::text || ':' || COALESCE(to_json(vals[i])::text, 'null');
            done[i] := true;
        END IF;
    END LOOP;
    FOR i IN 1 .. COALESCE(cardinality(keys), 0) LOOP
        IF NOT done[i] THEN
            IF out <> '' THEN out := out || ','; END IF;
            out := out || to_json(keys[i])::text || ':' || COALESCE(to_json(vals[i])::text, 'null');
        END IF;
    END LOOP;
    RETURN '{' || out || '}';
END $$;

-- Append-only tables: UPDATE and DELETE refused per row, as on SQLite, and
-- TRUNCATE (which PostgreSQL runs without DELETE triggers) refused too.
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
FOR EACH ROW EXECUTE FUNCTION handoff_refuse('events are append-only');
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
FOR EACH ROW EXECUTE FUNCTION handoff_refuse('events are append-only');
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
FOR EACH STATEMENT EXECUTE FUNCTION handoff_refuse('events are append-only');

CREATE TRIGGER question_replies_no_update BEFORE UPDATE ON question_replies
FOR EACH ROW EXECUTE FUNCTION handoff_refuse('question replies are append-only');
CREATE TRIGGER question_replies_no_delete BEFORE DELETE ON question_replies
FOR EACH ROW EXECUTE FUNCTION handoff_refuse('question replies are append-only');
CREATE TRIGGER question_replies_no_truncate BEFORE TRUNCATE ON question_replies
FOR EACH STATEMENT EXECUTE FUNCTION handoff_refuse('question replies are append-only');

CREATE TRIGGER board_row_annotations_no_update BEFORE UPDATE ON board_row_annotations
FOR EACH ROW EXECUTE FUNCTION handoff_refuse('annotation history is append-only');
CREATE TRIGGER board_row_annotations_no_delete BEFORE DELETE ON board_row_annotations
FOR EACH ROW EXECUTE FUNCTION handoff_refuse('annotation history is append-only');
CREATE TRIGGER board_row_annotations_no_truncate BEFORE TRUNCATE ON board_row_annotations
FOR EACH STATEMENT EXECUTE FUNCTION handoff_refuse('annotation history is append-only');

CREATE TRIGGER execution_ledger_no_update BEFORE UPDATE ON execution_ledger
FOR EACH ROW EXECUTE FUNCTION handoff_refuse('the execution ledger is append-only');
CREATE TRIGGER execution_ledger_no_delete BEFORE DELETE ON execution_ledger
FOR EACH ROW EXECUTE FUNCTION handoff_refuse('the execution ledger is append-only');
CREATE TRIGGER execution_ledger_no_truncate BEFORE TRUNCATE ON execution_ledger
FOR EACH STATEMENT EXECUTE FUNCTION handoff_refuse('the execution ledger is append-only');

CREATE TRIGGER action_audit_no_update BEFORE UPDATE ON action_audit
FOR EACH ROW EXECUTE FUNCTION handoff_refuse('audit log is append-only');
CREATE TRIGGER action_audit_no_truncate BEFORE TRUNCATE ON action_audit
FOR EACH STATEMENT EXECUTE FUNCTION handoff_refuse('audit log is append-only');

-- The only way an audit row disappears: purge of a settled action (its id
-- in action_purge_guard for the length of the purge transaction).
CREATE FUNCTION action_audit_no_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM action_purge_guard g JOIN actions a ON a.id = g.action_id
        WHERE g.action_id = OLD.action_id AND a.status IN ('executed','failed','rejected','expired')
    ) THEN
        RAISE EXCEPTION USING MESSAGE = 'audit log is append-only', ERRCODE = 'restrict_violation';
    END IF;
    RETURN OLD;
END $$;
CREATE TRIGGER action_audit_no_delete BEFORE DELETE ON action_audit
FOR EACH ROW EXECUTE FUNCTION action_audit_no_delete();

-- A ledger row for a session that never registered is refused (the foreign
-- key says the same; this trigger fires first, with the message the store
-- recognises).
CREATE FUNCTION execution_ledger_session_known() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM agent_sessions WHERE session_id = NEW.session_id) THEN
        RAISE EXCEPTION USING MESSAGE = 'the ledger belongs to a registered session',
                              ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER execution_ledger_session_known BEFORE INSERT ON execution_ledger
FOR EACH ROW EXECUTE FUNCTION execution_ledger_session_known();

-- A ledger row's event (sqlite 20261201000300). The payload is built as
-- text so it reads exactly as SQLite's json_object(): no whitespace.
CREATE FUNCTION execution_ledger_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
    VALUES (NEW.at, 'ledger.' || NEW.status, 'session', NEW.session_id, NEW.session_id, 'agent',
            COALESCE((SELECT project FROM agent_sessions WHERE session_id = NEW.session_id), ''),
            NEW.session_id,
            '{"event_id":' || to_json(NEW.event_id)::text
            || ',"ledger_seq":' || NEW.seq::text
            || ',"replay_safe":' || CASE WHEN NEW.replay_safe <> 0 THEN 'true' ELSE 'false' END
            || ',"tool":' || to_json(NEW.tool)::text || '}');
    RETURN NULL;
END $$;
CREATE TRIGGER execution_ledger_log AFTER INSERT ON execution_ledger
FOR EACH ROW EXECUTE FUNCTION execution_ledger_log();

-- /metrics counters per (project, status) (sqlite 20261130000002).
CREATE FUNCTION action_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO action_counts (project, status, n) VALUES (NEW.project, NEW.status, 1)
    ON CONFLICT (project, status) DO UPDATE SET n = action_counts.n + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER action_counts_insert AFTER INSERT ON actions
FOR EACH ROW EXECUTE FUNCTION action_counts_insert();

CREATE FUNCTION action_counts_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE action_counts SET n = n - 1 WHERE project = OLD.project AND status = OLD.status;
    INSERT INTO action_counts (project, status, n) VALUES (NEW.project, NEW.status, 1)
    ON CONFLICT (project, status) DO UPDATE SET n = action_counts.n + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER action_counts_update AFTER UPDATE OF status, project ON actions
FOR EACH ROW
WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.project IS DISTINCT FROM NEW.project)
EXECUTE FUNCTION action_counts_update();

CREATE FUNCTION action_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE action_counts SET n = n - 1 WHERE project = OLD.project AND status = OLD.status;
    RETURN NULL;
END $$;
CREATE TRIGGER action_counts_delete AFTER DELETE ON actions
FOR EACH ROW EXECUTE FUNCTION action_counts_delete();

-- One round trip per transition (sqlite 20261201000011): the proposal's
-- INSERT and every UPDATE that bumps t_seq append their audit row, their
-- event and (for an approval) the approvals row in the same statement.
CREATE FUNCTION actions_log_proposal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO action_audit (action_id, at, actor, event, details)
    VALUES (NEW.id, NEW.updated_at, NEW.t_actor, NEW.t_event, NEW.t_details);
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
    VALUES (NEW.updated_at, 'action.' || NEW.t_event, 'action', NEW.id, NEW.t_actor, NEW.t_channel,
            NEW.project, NEW.session,
            handoff_json_set(NEW.t_details, ARRAY['status', 'kind', 'summary'],
                             ARRAY[NEW.status, NEW.kind, NEW.summary]));
    RETURN NULL;
END $$;
CREATE TRIGGER actions_log_proposal AFTER INSERT ON actions
FOR EACH ROW WHEN (NEW.t_event IS NOT NULL)
EXECUTE FUNCTION actions_log_proposal();

CREATE FUNCTION actions_log_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- An approval: its row, so the same approver can never count twice.
    IF NEW.approvals > OLD.approvals THEN
        INSERT INTO action_approvals (action_id, approver, at)
        VALUES (NEW.id, NEW.t_actor, NEW.updated_at);
    END IF;
    -- An approval with a patch: the patch's own audit row and event first.
    IF NEW.t_patched IS NOT NULL THEN
        INSERT INTO action_audit (action_id, at, actor, event, details)
        VALUES (NEW.id, NEW.updated_at, NEW.t_actor, 'patched', NEW.t_patched);
        INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
        VALUES (NEW.updated_at, 'action.patched', 'action', NEW.id, NEW.t_actor, NEW.t_channel,
                NEW.project, NEW.session,
                handoff_json_set(NEW.t_patched, ARRAY['status', 'kind', 'summary'],
                                 ARRAY[NEW.status, NEW.kind, NEW.summary]));
    END IF;
    INSERT INTO action_audit (action_id, at, actor, event, details)
    VALUES (NEW.id, NEW.updated_at, NEW.t_actor, NEW.t_event, NEW.t_details);
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
    VALUES (NEW.updated_at, 'action.' || NEW.t_event, 'action', NEW.id, NEW.t_actor, NEW.t_channel,
            NEW.project, NEW.session,
            handoff_json_set(NEW.t_details, ARRAY['status', 'kind', 'summary'],
                             ARRAY[NEW.status, NEW.kind, NEW.summary]));
    RETURN NULL;
END $$;
CREATE TRIGGER actions_log_transition AFTER UPDATE OF t_seq ON actions
FOR EACH ROW WHEN (NEW.t_seq <> OLD.t_seq)
EXECUTE FUNCTION actions_log_transition();

-- A question's reply writers and pickup (sqlite 20261201000011): the
-- history row (a reply or a clear; none for a pickup) and the event.
CREATE FUNCTION questions_log_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.t_history IS NOT NULL THEN
        INSERT INTO question_replies
            (question_id, reply_seq, action, reply, reply_context, kind, source, "by", revision, at)
        VALUES (NEW.id, NEW.reply_seq, NEW.t_history,
                CASE WHEN NEW.t_history = 'reply' THEN NEW.reply END,
                CASE WHEN NEW.t_history = 'reply' THEN NEW.reply_context END,
                CASE WHEN NEW.t_history = 'reply' THEN NEW.reply_kind END,
                NEW.t_channel, NEW.t_by, NEW.revision, NEW.t_at);
    END IF;
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
    VALUES (NEW.t_at, NEW.t_event, 'question', NEW.id, NEW.t_actor,
            NEW.t_channel, NEW.project, NEW.session, NEW.t_payload);
    RETURN NULL;
END $$;
CREATE TRIGGER questions_log_transition AFTER UPDATE OF t_seq ON questions
FOR EACH ROW WHEN (NEW.t_seq <> OLD.t_seq)
EXECUTE FUNCTION questions_log_transition();

-- A new question logs its `question.flagged` event from its INSERT.
CREATE FUNCTION questions_log_flag() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
    VALUES (NEW.t_at, NEW.t_event, 'question', NEW.id, NEW.t_actor, NEW.t_channel,
            NEW.project, NEW.session, NEW.t_payload);
    RETURN NULL;
END $$;
CREATE TRIGGER questions_log_flag AFTER INSERT ON questions
FOR EACH ROW WHEN (NEW.t_event IS NOT NULL)
EXECUTE FUNCTION questions_log_flag();
