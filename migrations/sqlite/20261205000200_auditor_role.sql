-- API tokens gain the `auditor` role: reads, and the audit export. SQLite
-- cannot change a CHECK in place, so the table is copied into its new
-- shape (the same columns and index).
CREATE TABLE api_tokens_new (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('agent', 'human', 'admin', 'auditor')),
    project     TEXT,
    hash        TEXT NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);
INSERT INTO api_tokens_new (id, name, role, project, hash, created_at, revoked_at)
    SELECT id, name, role, project, hash, created_at, revoked_at FROM api_tokens;
DROP TABLE api_tokens;
ALTER TABLE api_tokens_new RENAME TO api_tokens;
CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;
