-- Question cards of an agent's own multiple-choice prompts (issue 13 item 5:
-- Claude Code's AskUserQuestion). `choice` says how a card is drawn and
-- answered: '' a plain question (options, Clarify, Decline), 'one' a single
-- choice (options, Other…, Decline), 'many' a multiple choice (toggles with
-- a ✓, Done, Other…, Decline). `picked` holds a multiple choice's ticked
-- options as a bitmask (bit n: option n); a toggle flips one bit and bumps
-- `revision` in one guarded UPDATE, so a tap drawn before it is stale.
ALTER TABLE questions ADD COLUMN choice TEXT NOT NULL DEFAULT ''
    CHECK (choice IN ('', 'one', 'many'));
ALTER TABLE questions ADD COLUMN picked INTEGER NOT NULL DEFAULT 0;
