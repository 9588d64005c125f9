-- The lean write path (docs/design.md §4): a transition
-- writes no counter rows and moves as few index entries as its queries
-- need.
--
-- /metrics counts actions from `actions_project_status` at scrape time, an
-- index-only count per project (a range of one project's entries, or the
-- whole index for every project), so the per-(project, status) counter
-- rows and the three triggers that kept them in every transition go.
DROP TRIGGER action_counts_insert;
DROP TRIGGER action_counts_update;
DROP TRIGGER action_counts_delete;
DROP TABLE action_counts;
CREATE INDEX actions_project_status ON actions(project, status);

-- The full indexes whose entries moved on every transition (status and
-- updated_at change each time) become partial indexes over the rows their
-- queries read: live rows in one state, or settled rows, whose entry is
-- written once and never moves again.
DROP INDEX actions_status;
DROP INDEX actions_updated;
DROP INDEX actions_escalate;
DROP INDEX actions_project_pending;
-- The expiry sweep, the next expiry's time, and the lapsed count /metrics
-- adds per project (covering: the count reads no row).
CREATE INDEX actions_pending_expiry ON actions(expires_at, project, on_expire)
    WHERE status = 'pending' AND expires_at IS NOT NULL;
-- The escalation sweep and its next due time.
CREATE INDEX actions_pending_escalate ON actions(escalate_at)
    WHERE status = 'pending' AND escalate_at IS NOT NULL;
-- Recovery: approved actions nobody claimed, newest first.
CREATE INDEX actions_approved ON actions(created_at, id)
    WHERE status = 'approved';
-- Recovery: executing actions whose lease ran out, and the next lease due.
CREATE INDEX actions_executing ON actions(lease_until)
    WHERE status = 'executing';
-- The purge: settled actions last changed before a cutoff.
CREATE INDEX actions_settled ON actions(updated_at)
    WHERE status IN ('executed','failed','rejected','expired');
