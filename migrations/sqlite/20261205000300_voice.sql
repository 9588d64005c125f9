-- Voice replies. A reply's medium: `text` (typed or tapped) or `voice`
-- (a transcribed voice note the speaker confirmed with Send). On
-- `questions` it belongs to the standing reply (NULL while there is none);
-- the reply history records it with each reply.
ALTER TABLE questions ADD COLUMN reply_medium TEXT CHECK (reply_medium IN ('text', 'voice'));
ALTER TABLE question_replies ADD COLUMN medium TEXT NOT NULL DEFAULT 'text'
    CHECK (medium IN ('text', 'voice'));

-- The history row now carries the reply's medium (otherwise as in
-- 20261201000011_transition_log).
DROP TRIGGER questions_log_transition;
CREATE TRIGGER questions_log_transition AFTER UPDATE OF t_seq ON questions
WHEN NEW.t_seq <> OLD.t_seq
BEGIN
    INSERT INTO question_replies
        (question_id, reply_seq, action, reply, reply_context, kind, source, by, revision, at, medium)
    SELECT NEW.id, NEW.reply_seq, NEW.t_history,
           CASE WHEN NEW.t_history = 'reply' THEN NEW.reply END,
           CASE WHEN NEW.t_history = 'reply' THEN NEW.reply_context END,
           CASE WHEN NEW.t_history = 'reply' THEN NEW.reply_kind END,
           NEW.t_channel, NEW.t_by, NEW.revision, NEW.t_at,
           CASE WHEN NEW.t_history = 'reply' THEN COALESCE(NEW.reply_medium, 'text') ELSE 'text' END
    WHERE NEW.t_history IS NOT NULL;
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
    VALUES (NEW.t_at, NEW.t_event, 'question', NEW.id, NEW.t_actor,
            NEW.t_channel, NEW.project, NEW.session, NEW.t_payload);
END;

-- One voice note sent to answer an item, and how far it got. Its progress
-- is durable so a restart loses nothing and repeats nothing:
--   received     → taken from the update, not yet transcribed
--   transcribing → `worker` is transcribing it since `started_at` (a
--                  worker that died is replaced once that is stale)
--   transcribed  → `transcript` shown with Send / Edit / Discard until
--                  `expires_at`
--   sent | edited | discarded | expired | failed → settled (`error` says
--                  why it failed)
-- `target` is what the note answers: `answer` (a reply to the item's
-- message, or /answer), `clarify`, or `other` (a card's Other… words,
-- drawn for `revision`).
CREATE TABLE voice_replies (
    id               TEXT    PRIMARY KEY,
    chat_id          INTEGER NOT NULL,
    message_id       INTEGER NOT NULL,
    thread_id        INTEGER,
    user_id          INTEGER NOT NULL,
    by               TEXT    NOT NULL DEFAULT '',
    item_kind        TEXT    NOT NULL CHECK (item_kind IN ('question', 'row')),
    item_id          TEXT    NOT NULL,
    target           TEXT    NOT NULL DEFAULT 'answer'
                     CHECK (target IN ('answer', 'clarify', 'other')),
    revision         INTEGER,
    file_id          TEXT    NOT NULL,
    duration_secs    INTEGER NOT NULL DEFAULT 0,
    file_size        INTEGER,
    state            TEXT    NOT NULL DEFAULT 'received'
                     CHECK (state IN ('received', 'transcribing', 'transcribed', 'sent',
                                      'edited', 'discarded', 'expired', 'failed')),
    worker           TEXT,
    started_at       INTEGER,
    transcript       TEXT,
    error            TEXT,
    shown_message_id INTEGER,
    expires_at       INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    UNIQUE (chat_id, message_id)
);
CREATE INDEX voice_replies_live ON voice_replies(state, updated_at)
    WHERE state IN ('received', 'transcribing', 'transcribed');
