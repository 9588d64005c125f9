-- Request ids (issue 11): a CLI call that went to the local daemon over
-- its socket and lost the answer (the daemon died after committing) is
-- retried through the database file with the same request id. Each write
-- the first attempt committed under that id is remembered here, in the
-- same transaction as the write itself, with the value it produced; the
-- retry replays those values instead of writing again. Rows are kept for a
-- day (housekeeping forgets older ones).
CREATE TABLE requests (
    key        TEXT NOT NULL,             -- the call's request id
    n          INTEGER NOT NULL,          -- the n-th write of that call (from 0)
    kind       TEXT NOT NULL,             -- the write's result type, checked on replay
    value      TEXT NOT NULL,             -- that result, as JSON
    created_at INTEGER NOT NULL,
    PRIMARY KEY (key, n)
) WITHOUT ROWID;
CREATE INDEX requests_created ON requests (created_at);
