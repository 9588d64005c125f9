-- Instant cross-process wake-ups (issue 12 item 4).
--
-- Every daemon LISTENs on `handoff_events` (src/follow/listen.rs) and nudges
-- its followers (chat, notify, waiters, long polls, SSE) when a notification
-- arrives, so a write made through one daemon, the CLI or an MCP server wakes
-- the others at once instead of at their next fallback poll.
--
-- Why a trigger and not a NOTIFY in each writer: every event is appended
-- through an INSERT on `events`, whoever writes it, so no writer can forget.
-- Why statement level: one notification per INSERT statement, not per row.
-- NOTIFY is queued by the statement and delivered only when (and if) the
-- transaction commits, so a listener is never woken for a rollback, and never
-- before the rows are visible to it.
--
-- The payload is the statement's highest seq, in decimal. Why not empty: the
-- listener keeps the newest seq it was told about, so its fallback poll of
-- the log's end nudges only for a commit it was not told about (a lost
-- notification), never once more for one it was. The price: PostgreSQL folds
-- identical payloads within a transaction, and these differ per statement, so
-- a transaction of several INSERTs notifies once per INSERT; the extra nudges
-- cost a follower a read that finds nothing new.
CREATE FUNCTION events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    top BIGINT;
BEGIN
    SELECT max(seq) INTO top FROM inserted;
    -- An INSERT … SELECT that inserted nothing fires the trigger too.
    IF top IS NOT NULL THEN
        PERFORM pg_notify('handoff_events', top::text);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER events_notify AFTER INSERT ON events
REFERENCING NEW TABLE AS inserted
FOR EACH STATEMENT EXECUTE FUNCTION events_notify();
