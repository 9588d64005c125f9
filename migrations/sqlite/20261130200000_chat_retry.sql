-- A chat message whose item changed and whose message has not been redrawn
-- yet: set by the chat follower before its cursor moves past the change,
-- cleared once the message shows the item's state (or the edit settled for
-- good). A daemon that stops in between redraws these at start-up, so an
-- edit is as durable as a push (`sending` → `sent`).
ALTER TABLE chat_messages ADD COLUMN dirty_at INTEGER;
CREATE INDEX chat_messages_dirty ON chat_messages(dirty_at) WHERE dirty_at IS NOT NULL;
