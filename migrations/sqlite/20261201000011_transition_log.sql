-- One round trip per transition (issue 11). A transition is one guarded
-- UPDATE (or the proposal's INSERT) that also says what it was in the t_*
-- columns; the triggers below append its audit row, its event and (for an
-- approval) its approvals row inside that same statement. So a winning
-- transition is a single call to the database, and the event and audit rows
-- still commit with the change or not at all.
--
-- A statement that does not bump t_seq logs nothing (lease extensions, and
-- the older multi-statement writers that append their rows themselves).
ALTER TABLE actions ADD COLUMN t_seq     INTEGER NOT NULL DEFAULT 0; -- transitions logged through the triggers
ALTER TABLE actions ADD COLUMN t_event   TEXT;    -- the audit event (the event type is 'action.' || t_event)
ALTER TABLE actions ADD COLUMN t_actor   TEXT;    -- who made the transition
ALTER TABLE actions ADD COLUMN t_channel TEXT;    -- through which door (inbox, chat, agent, cli, daemon, webhook)
ALTER TABLE actions ADD COLUMN t_details TEXT;    -- the audit details, JSON, secrets already redacted
ALTER TABLE actions ADD COLUMN t_patched TEXT;    -- an approval's patch audit details (redacted JSON), else NULL

CREATE TRIGGER actions_log_proposal AFTER INSERT ON actions
WHEN NEW.t_event IS NOT NULL
BEGIN
    INSERT INTO action_audit (action_id, at, actor, event, details)
    VALUES (NEW.id, NEW.updated_at, NEW.t_actor, NEW.t_event, NEW.t_details);
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
    VALUES (NEW.updated_at, 'action.' || NEW.t_event, 'action', NEW.id, NEW.t_actor, NEW.t_channel,
            NEW.project, NEW.session,
            json_set(NEW.t_details, '$.status', NEW.status, '$.kind', NEW.kind, '$.summary', NEW.summary));
END;

CREATE TRIGGER actions_log_transition AFTER UPDATE OF t_seq ON actions
WHEN NEW.t_seq <> OLD.t_seq
BEGIN
    -- An approval: its row, so the same approver can never count twice.
    INSERT INTO action_approvals (action_id, approver, at)
    SELECT NEW.id, NEW.t_actor, NEW.updated_at WHERE NEW.approvals > OLD.approvals;
    -- An approval with a patch: the patch's own audit row and event first.
    INSERT INTO action_audit (action_id, at, actor, event, details)
    SELECT NEW.id, NEW.updated_at, NEW.t_actor, 'patched', NEW.t_patched
    WHERE NEW.t_patched IS NOT NULL;
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
    SELECT NEW.updated_at, 'action.patched', 'action', NEW.id, NEW.t_actor, NEW.t_channel,
           NEW.project, NEW.session,
           json_set(NEW.t_patched, '$.status', NEW.status, '$.kind', NEW.kind, '$.summary', NEW.summary)
    WHERE NEW.t_patched IS NOT NULL;
    INSERT INTO action_audit (action_id, at, actor, event, details)
    VALUES (NEW.id, NEW.updated_at, NEW.t_actor, NEW.t_event, NEW.t_details);
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
    VALUES (NEW.updated_at, 'action.' || NEW.t_event, 'action', NEW.id, NEW.t_actor, NEW.t_channel,
            NEW.project, NEW.session,
            json_set(NEW.t_details, '$.status', NEW.status, '$.kind', NEW.kind, '$.summary', NEW.summary));
END;

-- The same for a question's reply writers and the agent's pickup: the
-- guarded UPDATE names its event in t_*; the trigger appends the history
-- row (a reply or a clear; none for a pickup) and the event.
ALTER TABLE questions ADD COLUMN t_seq     INTEGER NOT NULL DEFAULT 0; -- events logged through the trigger
ALTER TABLE questions ADD COLUMN t_at      INTEGER; -- when (ms): the write's time
ALTER TABLE questions ADD COLUMN t_event   TEXT;    -- the event type, e.g. question.answered
ALTER TABLE questions ADD COLUMN t_history TEXT;    -- 'reply' | 'clear' | NULL: the history row to append
ALTER TABLE questions ADD COLUMN t_by      TEXT;    -- who wrote, as given ('' when unnamed)
ALTER TABLE questions ADD COLUMN t_actor   TEXT;    -- the event's actor
ALTER TABLE questions ADD COLUMN t_channel TEXT;    -- the door it came through
ALTER TABLE questions ADD COLUMN t_payload TEXT;    -- the event payload, JSON

CREATE TRIGGER questions_log_transition AFTER UPDATE OF t_seq ON questions
WHEN NEW.t_seq <> OLD.t_seq
BEGIN
    INSERT INTO question_replies
        (question_id, reply_seq, action, reply, reply_context, kind, source, by, revision, at)
    SELECT NEW.id, NEW.reply_seq, NEW.t_history,
           CASE WHEN NEW.t_history = 'reply' THEN NEW.reply END,
           CASE WHEN NEW.t_history = 'reply' THEN NEW.reply_context END,
           CASE WHEN NEW.t_history = 'reply' THEN NEW.reply_kind END,
           NEW.t_channel, NEW.t_by, NEW.revision, NEW.t_at
    WHERE NEW.t_history IS NOT NULL;
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
    VALUES (NEW.t_at, NEW.t_event, 'question', NEW.id, NEW.t_actor,
            NEW.t_channel, NEW.project, NEW.session, NEW.t_payload);
END;

-- A new question logs its `question.flagged` event from its INSERT.
CREATE TRIGGER questions_log_flag AFTER INSERT ON questions
WHEN NEW.t_event IS NOT NULL
BEGIN
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
    VALUES (NEW.t_at, NEW.t_event, 'question', NEW.id, NEW.t_actor, NEW.t_channel,
            NEW.project, NEW.session, NEW.t_payload);
END;
