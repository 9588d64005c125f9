-- Permission grants (issue 13): "approve for this session" / "always
-- approve" taps on an agent's permission prompt (`claude.<Tool>` actions).
-- A grant decides later prompts of the same tool whose input its pattern
-- covers, at once, audited as `grant:<id>`.
--
-- A tap writes the grant first (unconfirmed), then approves the prompt,
-- then confirms the grant only if that approval won: a crash or a lost race
-- in between leaves an inert row, never a live grant. No foreign key on
-- action_id: a purge of old actions must not take an "always" grant with it.
CREATE TABLE grants (
    id            TEXT PRIMARY KEY,                        -- uuid v7 hex
    scope         TEXT NOT NULL CHECK (scope IN ('session', 'always')),
    agent         TEXT NOT NULL,                           -- `claude`
    session       TEXT NOT NULL,                           -- the agent session ('' for always)
    project       TEXT NOT NULL,                           -- always-grants hold within one project
    tool          TEXT NOT NULL,                           -- `Bash`, `Edit`, … (exact)
    pattern       TEXT NOT NULL,                           -- `npm test:*`, an exact command, a file path
    action_id     TEXT NOT NULL,                           -- the prompt it was given on
    created_by    TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    confirmed_at  INTEGER,                                 -- set once the approval won; NULL = inert
    revoked_at    INTEGER,                                 -- NULL while it holds
    revoked_by    TEXT
);
CREATE INDEX grants_live ON grants (tool, project) WHERE revoked_at IS NULL AND confirmed_at IS NOT NULL;
-- One grant per prompt: a double tap never saves two.
CREATE UNIQUE INDEX grants_action ON grants (action_id);
