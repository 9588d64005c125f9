-- The lean write path (sqlite 20261211000100_lean_indexes: why each index
-- is there is said there): no counter rows per transition, partial indexes
-- over the rows each query reads.
DROP TRIGGER action_counts_insert ON actions;
DROP TRIGGER action_counts_update ON actions;
DROP TRIGGER action_counts_delete ON actions;
DROP FUNCTION action_counts_insert();
DROP FUNCTION action_counts_update();
DROP FUNCTION action_counts_delete();
DROP TABLE action_counts;
CREATE INDEX actions_project_status ON actions(project, status);

DROP INDEX actions_status;
DROP INDEX actions_updated;
DROP INDEX actions_escalate;
DROP INDEX actions_project_pending;
CREATE INDEX actions_pending_expiry ON actions(expires_at, project, on_expire)
    WHERE status = 'pending' AND expires_at IS NOT NULL;
CREATE INDEX actions_pending_escalate ON actions(escalate_at)
    WHERE status = 'pending' AND escalate_at IS NOT NULL;
CREATE INDEX actions_approved ON actions(created_at, id)
    WHERE status = 'approved';
CREATE INDEX actions_executing ON actions(lease_until)
    WHERE status = 'executing';
CREATE INDEX actions_settled ON actions(updated_at)
    WHERE status IN ('executed', 'failed', 'rejected', 'expired');
