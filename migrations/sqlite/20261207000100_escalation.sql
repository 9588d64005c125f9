-- Escalation chains: the steps an action moves through while nobody
-- decides it (`[approvals] escalate` in the config), fixed when it is
-- proposed as its quorum is. `escalation`: the steps as JSON, each with its
-- absolute due time (ms) and where it goes; `escalated`: how many have
-- fired; `escalate_at`: when the next one is due (NULL: none left);
-- `escalated_at`: when the last one fired. A step is claimed by one guarded
-- UPDATE on `escalated`, so it fires once however many daemons look.
ALTER TABLE actions ADD COLUMN escalation TEXT;
ALTER TABLE actions ADD COLUMN escalated INTEGER NOT NULL DEFAULT 0;
ALTER TABLE actions ADD COLUMN escalate_at INTEGER;
ALTER TABLE actions ADD COLUMN escalated_at INTEGER;
CREATE INDEX actions_escalate ON actions (status, escalate_at);
