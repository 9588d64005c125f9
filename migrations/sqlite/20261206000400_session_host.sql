-- The machine a session runs on, as the registering process names it
-- (its hostname); empty for sessions registered before this column, or
-- by a client that did not say. The fleet view shows it.
ALTER TABLE agent_sessions ADD COLUMN host TEXT NOT NULL DEFAULT '';
