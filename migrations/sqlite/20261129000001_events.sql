-- The append-only event log: every state change appends one row here, in the
-- same transaction as the change. Followers (the daemon's chat and wake-up
-- workers, long-poll waiters) read it by `seq`.
CREATE TABLE events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    at          INTEGER NOT NULL,               -- ms since epoch, from the Clock
    type        TEXT    NOT NULL,               -- e.g. question.answered
    entity_kind TEXT    NOT NULL,               -- question | row | board | action | session
    entity_id   TEXT    NOT NULL,
    actor       TEXT    NOT NULL DEFAULT '',    -- who caused it (user, agent, rule:<name>)
    channel     TEXT    NOT NULL DEFAULT '',    -- inbox | chat | agent | cli | daemon
    project     TEXT    NOT NULL DEFAULT '',
    session     TEXT    NOT NULL DEFAULT '',
    payload     TEXT    NOT NULL DEFAULT '{}'   -- JSON
);
CREATE INDEX events_entity ON events(entity_kind, entity_id, seq);
CREATE INDEX events_session ON events(session, seq) WHERE session <> '';

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
