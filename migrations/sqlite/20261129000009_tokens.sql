-- API bearer tokens (issue 6): only the SHA-256 of a token is stored; the
-- token itself is printed once by `handoff token create`.
CREATE TABLE api_tokens (
    id          TEXT PRIMARY KEY,               -- uuid v7 hex
    name        TEXT NOT NULL,                  -- who the token acts as (audit, approvals)
    role        TEXT NOT NULL CHECK (role IN ('agent', 'human', 'admin')),
    project     TEXT,                           -- NULL = every project
    hash        TEXT NOT NULL UNIQUE,           -- hex SHA-256 of the whole token
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER                         -- NULL while valid
);
-- A name picks out one live token (revoke NAME); revoked names may be reused.
CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;
