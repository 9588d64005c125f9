-- Separation of duties (sqlite 20261205000100_not_by_proposer: what it
-- means is said there).
ALTER TABLE actions ADD COLUMN not_by_proposer BIGINT NOT NULL DEFAULT 0;
