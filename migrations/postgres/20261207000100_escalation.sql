-- Escalation chains (sqlite 20261207000100_escalation: what each column
-- means is said there).
ALTER TABLE actions ADD COLUMN escalation TEXT;
ALTER TABLE actions ADD COLUMN escalated BIGINT NOT NULL DEFAULT 0;
ALTER TABLE actions ADD COLUMN escalate_at BIGINT;
ALTER TABLE actions ADD COLUMN escalated_at BIGINT;
CREATE INDEX actions_escalate ON actions (status, escalate_at);
