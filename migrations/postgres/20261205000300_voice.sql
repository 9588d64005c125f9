-- Voice replies (sqlite 20261205000300_voice: what each column and state
-- means is said there).
ALTER TABLE questions ADD COLUMN reply_medium TEXT CHECK (reply_medium IN ('text', 'voice'));
ALTER TABLE question_replies ADD COLUMN medium TEXT NOT NULL DEFAULT 'text'
    CHECK (medium IN ('text', 'voice'));

-- The history row now carries the reply's medium.
CREATE OR REPLACE FUNCTION questions_log_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.t_history IS NOT NULL THEN
        INSERT INTO question_replies
            (question_id, reply_seq, action, reply, reply_context, kind, source, "by", revision, at, medium)
        VALUES (NEW.id, NEW.reply_seq, NEW.t_history,
                CASE WHEN NEW.t_history = 'reply' THEN NEW.reply END,
                CASE WHEN NEW.t_history = 'reply' THEN NEW.reply_context END,
                CASE WHEN NEW.t_history = 'reply' THEN NEW.reply_kind END,
                NEW.t_channel, NEW.t_by, NEW.revision, NEW.t_at,
                CASE WHEN NEW.t_history = 'reply' THEN COALESCE(NEW.reply_medium, 'text') ELSE 'text' END);
    END IF;
    INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
    VALUES (NEW.t_at, NEW.t_event, 'question', NEW.id, NEW.t_actor,
            NEW.t_channel, NEW.project, NEW.session, NEW.t_payload);
    RETURN NULL;
END $$;

CREATE TABLE voice_replies (
    id               TEXT    PRIMARY KEY,
    chat_id          BIGINT  NOT NULL,
    message_id       BIGINT  NOT NULL,
    thread_id        BIGINT,
    user_id          BIGINT  NOT NULL,
    "by"             TEXT    NOT NULL DEFAULT '',
    item_kind        TEXT    NOT NULL CHECK (item_kind IN ('question', 'row')),
    item_id          TEXT    NOT NULL,
    target           TEXT    NOT NULL DEFAULT 'answer'
                     CHECK (target IN ('answer', 'clarify', 'other')),
    revision         BIGINT,
    file_id          TEXT    NOT NULL,
    duration_secs    BIGINT  NOT NULL DEFAULT 0,
    file_size        BIGINT,
    state            TEXT    NOT NULL DEFAULT 'received'
                     CHECK (state IN ('received', 'transcribing', 'transcribed', 'sent',
                                      'edited', 'discarded', 'expired', 'failed')),
    worker           TEXT,
    started_at       BIGINT,
    transcript       TEXT,
    error            TEXT,
    shown_message_id BIGINT,
    expires_at       BIGINT,
    created_at       BIGINT  NOT NULL,
    updated_at       BIGINT  NOT NULL,
    UNIQUE (chat_id, message_id)
);
CREATE INDEX voice_replies_live ON voice_replies(state, updated_at)
    WHERE state IN ('received', 'transcribing', 'transcribed');
