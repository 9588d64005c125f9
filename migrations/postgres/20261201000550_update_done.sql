-- chat_updates.done_at: when the daemon that took the update finished
-- handling it. A take left unfinished (its daemon died mid-update) may be
-- taken again, by a daemon that knows the taker is gone or once the take
-- is older than a handler ever runs; a finished one never.
ALTER TABLE chat_updates ADD COLUMN done_at BIGINT;
