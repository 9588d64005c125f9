-- One round trip per ledger write (issue 11): the ledger row's own INSERT
-- appends its event (ledger.started / ledger.completed / ledger.failed)
-- through this trigger, inside the same statement, so a winning
-- `ledger_begin` or `ledger_complete` is a single call and the event still
-- commits with the row or not at all. A replayed call inserts nothing
-- (ON CONFLICT DO NOTHING) and so logs nothing.
CREATE TRIGGER execution_ledger_log AFTER INSERT ON execution_ledger
BEGIN
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
    VALUES (NEW.at, 'ledger.' || NEW.status, 'session', NEW.session_id, NEW.session_id, 'agent',
            COALESCE((SELECT project FROM agent_sessions WHERE session_id = NEW.session_id), ''),
            NEW.session_id,
            json_object('event_id', NEW.event_id, 'ledger_seq', NEW.seq,
                        'replay_safe', json(CASE WHEN NEW.replay_safe THEN 'true' ELSE 'false' END),
                        'tool', NEW.tool));
END;
