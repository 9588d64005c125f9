-- An event log that never skips (issue 12 item 3).
--
-- Followers (the chat and wake-up workers, long polls, `events --follow`)
-- read `WHERE seq > cursor ORDER BY seq` and move their cursor to the last
-- seq they saw. That is only safe if no event with a lower seq can become
-- visible after one with a higher seq. A PostgreSQL sequence does not give
-- that: nextval() is handed out at INSERT time, not at commit, so writer A
-- can take 7, writer B take 8 and commit first, a follower read 8 and move
-- past 7, and A's 7 commit a moment later, never to be seen.
--
-- So `events.seq` comes from the one row below, taken by
-- `UPDATE … SET seq = seq + 1 RETURNING seq` in a BEFORE INSERT trigger. The
-- UPDATE locks that row until the writing transaction ends, so the next
-- writer's UPDATE waits for it, then (READ COMMITTED re-reads the row)
-- continues from the committed value. Seqs are therefore handed out in the
-- order their transactions commit: by the time a seq is visible, every lower
-- one has committed (and is visible: the lock is released only after the
-- commit is visible to new snapshots) or was rolled back together with its
-- counter bump, so the next writer reuses it — no gaps at all.
--
-- The price: transactions that append events commit one at a time from
-- their first event on, which is what SQLite's single writer does anyway.
-- Writers should append their events late in a transaction and keep it short.
CREATE TABLE events_seq (
    one BOOLEAN PRIMARY KEY DEFAULT true CHECK (one), -- exactly one row
    seq BIGINT  NOT NULL                              -- the last seq handed out
);
INSERT INTO events_seq (one, seq) VALUES (true, 0);

CREATE FUNCTION events_commit_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.seq IS NULL THEN
        UPDATE events_seq SET seq = seq + 1 RETURNING seq INTO NEW.seq;
    ELSE
        -- A row copied with its seq (an export from SQLite): keep it, and
        -- never hand it out again. Still under the same row lock.
        UPDATE events_seq SET seq = GREATEST(seq, NEW.seq);
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER events_commit_order BEFORE INSERT ON events
FOR EACH ROW EXECUTE FUNCTION events_commit_order();
