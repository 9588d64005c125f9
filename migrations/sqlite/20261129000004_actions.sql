-- Pending actions (DESIGN §4): proposals that must not run until a person
-- approves them. Every transition is one guarded UPDATE inside one
-- BEGIN IMMEDIATE transaction that also appends its audit row and its event.
CREATE TABLE actions (
    id                 TEXT    PRIMARY KEY,
    kind               TEXT    NOT NULL,
    summary            TEXT    NOT NULL,
    args               TEXT    NOT NULL,                -- canonical JSON object, as proposed
    fingerprint        TEXT    NOT NULL,                -- SHA-256 hex of canonical {kind, summary, args}
    dedup_key          TEXT,
    status             TEXT    NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending','approved','executing','executed','failed','unknown','rejected','expired')),
    expires_at         INTEGER,                         -- ms; NULL = never
    on_expire          TEXT    NOT NULL DEFAULT 'expire' CHECK (on_expire IN ('expire','reject')),
    approvals_required INTEGER NOT NULL DEFAULT 1 CHECK (approvals_required >= 1),
    approvals          INTEGER NOT NULL DEFAULT 0,      -- distinct approvers so far (rows in action_approvals)
    decided_by         TEXT,
    decided_at         INTEGER,
    reason             TEXT,
    patch              TEXT,                            -- JSON object an approver applied, if any
    effective_args     TEXT    NOT NULL,                -- canonical JSON the executor receives
    redact_keys        TEXT    NOT NULL,                -- JSON array of key patterns fixed at proposal
    exec               TEXT,                            -- JSON argv of the executor, if proposed with --exec
    verify             TEXT,                            -- JSON argv of the verifier, if any
    owner              TEXT,                            -- executor that claimed it
    lease_until        INTEGER,
    result             TEXT,
    error              TEXT,
    attempts           INTEGER NOT NULL DEFAULT 0,      -- claims so far
    proposer           TEXT    NOT NULL DEFAULT '',
    project            TEXT    NOT NULL DEFAULT '',
    session            TEXT    NOT NULL DEFAULT '',
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
);
-- The database, not the application, enforces dedup: one live action per key.
CREATE UNIQUE INDEX actions_dedup_live ON actions(dedup_key)
    WHERE dedup_key IS NOT NULL AND status IN ('pending','approved','executing');
CREATE INDEX actions_status ON actions(status, expires_at);
CREATE INDEX actions_updated ON actions(updated_at);

-- One row per distinct approver: a double tap cannot count twice.
CREATE TABLE action_approvals (
    action_id TEXT    NOT NULL REFERENCES actions(id),
    approver  TEXT    NOT NULL,
    at        INTEGER NOT NULL,
    UNIQUE (action_id, approver)
);

-- The audit trail, written in the transaction of each transition.
CREATE TABLE action_audit (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    action_id TEXT    NOT NULL,
    at        INTEGER NOT NULL,
    actor     TEXT    NOT NULL,
    event     TEXT    NOT NULL,
    details   TEXT    NOT NULL DEFAULT '{}'             -- JSON, secrets redacted
);
CREATE INDEX action_audit_action ON action_audit(action_id, seq);

-- Ids being purged. The purge transaction fills it, deletes, and empties it
-- again before commit, so no other connection ever sees a row here.
CREATE TABLE action_purge_guard (
    action_id TEXT PRIMARY KEY
);

CREATE TRIGGER action_audit_no_update BEFORE UPDATE ON action_audit
BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;

-- The only way an audit row disappears: purge of a settled action.
CREATE TRIGGER action_audit_no_delete BEFORE DELETE ON action_audit
WHEN NOT EXISTS (
    SELECT 1 FROM action_purge_guard g JOIN actions a ON a.id = g.action_id
    WHERE g.action_id = OLD.action_id AND a.status IN ('executed','failed','rejected','expired')
)
BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
