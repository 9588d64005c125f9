-- Separation of duties: an action proposed under `not_by_proposer`
-- (`[approvals]` in the config, fixed at proposal like its quorum) refuses
-- an approval by its own proposer. 1: refused; 0: anyone eligible may
-- approve. The approval's guarded UPDATE reads it, so the refusal costs no
-- extra round trip.
ALTER TABLE actions ADD COLUMN not_by_proposer INTEGER NOT NULL DEFAULT 0;
