-- Web Inbox logins (issue 6): one-time login codes printed by
-- `handoff inbox-link`, and the browser sessions they open. Only SHA-256
-- hashes of the codes and session cookies are stored.
CREATE TABLE inbox_login_codes (
    id          TEXT PRIMARY KEY,               -- uuid v7 hex
    hash        TEXT NOT NULL UNIQUE,           -- hex SHA-256 of the code
    name        TEXT NOT NULL,                  -- the session's actor name (`--as`)
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,               -- the code is refused from this ms on
    used_at     INTEGER                         -- NULL until the one login it allows
);

CREATE TABLE inbox_sessions (
    id          TEXT PRIMARY KEY,               -- uuid v7 hex
    hash        TEXT NOT NULL UNIQUE,           -- hex SHA-256 of the cookie value
    name        TEXT NOT NULL,                  -- recorded as `by` of the session's writes
    code_id     TEXT NOT NULL REFERENCES inbox_login_codes (id),
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    revoked_at  INTEGER                         -- logout; NULL while valid
);
