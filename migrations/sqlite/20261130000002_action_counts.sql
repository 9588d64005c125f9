-- /metrics reads counters kept as actions change, not a scan of every
-- action (issue 15): one row per (project, stored status), maintained by
-- triggers in the transaction of each change. Lazily expired actions (still
-- `pending` in their row) are counted by a range over the index below,
-- which holds only what that needs.
CREATE TABLE action_counts (
    project TEXT    NOT NULL,
    status  TEXT    NOT NULL,
    n       INTEGER NOT NULL,
    PRIMARY KEY (project, status)
) WITHOUT ROWID;

INSERT INTO action_counts (project, status, n)
SELECT project, status, COUNT(*) FROM actions GROUP BY project, status;

CREATE TRIGGER action_counts_insert AFTER INSERT ON actions
BEGIN
    INSERT INTO action_counts (project, status, n) VALUES (NEW.project, NEW.status, 1)
    ON CONFLICT (project, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER action_counts_update AFTER UPDATE OF status, project ON actions
WHEN OLD.status IS NOT NEW.status OR OLD.project IS NOT NEW.project
BEGIN
    UPDATE action_counts SET n = n - 1 WHERE project = OLD.project AND status = OLD.status;
    INSERT INTO action_counts (project, status, n) VALUES (NEW.project, NEW.status, 1)
    ON CONFLICT (project, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER action_counts_delete AFTER DELETE ON actions
BEGIN
    UPDATE action_counts SET n = n - 1 WHERE project = OLD.project AND status = OLD.status;
END;

-- Pending actions past their expiry, per project, without reading rows.
CREATE INDEX actions_project_pending ON actions(project, expires_at, on_expire)
    WHERE status = 'pending' AND expires_at IS NOT NULL;
