-- The transition's log entry leaves the action's row (sqlite
-- 20261214000100_actions_lean_row says why): each transition is one
-- statement whose data-modifying WITH appends its event and approvals row
-- (src/store/actions/logged.rs); the triggers that read `t_*` go.
DROP TRIGGER actions_log_proposal ON actions;
DROP TRIGGER actions_log_transition ON actions;
DROP FUNCTION actions_log_proposal();
DROP FUNCTION actions_log_transition();
ALTER TABLE actions DROP COLUMN t_seq, DROP COLUMN t_event, DROP COLUMN t_actor,
    DROP COLUMN t_channel, DROP COLUMN t_details, DROP COLUMN t_patched;
