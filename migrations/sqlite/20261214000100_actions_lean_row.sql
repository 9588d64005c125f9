-- The transition's log entry leaves the action's row (docs/design.md §4,
-- §6): each transition's statement appends its event (its audit entry)
-- and, for an approval, the approvals row itself, in the same call
-- (src/store/actions/logged.rs), so nothing about the entry is stored on
-- `actions` and no trigger reads it from there. The log, its append-only
-- triggers and the `action_audit` view are unchanged.
DROP TRIGGER actions_log_proposal;
DROP TRIGGER actions_log_transition;
ALTER TABLE actions DROP COLUMN t_seq;
ALTER TABLE actions DROP COLUMN t_event;
ALTER TABLE actions DROP COLUMN t_actor;
ALTER TABLE actions DROP COLUMN t_channel;
ALTER TABLE actions DROP COLUMN t_details;
ALTER TABLE actions DROP COLUMN t_patched;
