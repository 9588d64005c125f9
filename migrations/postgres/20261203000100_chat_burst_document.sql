-- chat_messages gains the `burst` status and `document_id` (sqlite
-- 20261203000100_chat_burst_document: what each means is said there).
ALTER TABLE chat_messages DROP CONSTRAINT chat_messages_status_check;
ALTER TABLE chat_messages ADD CONSTRAINT chat_messages_status_check
    CHECK (status IN ('sending', 'sent', 'digest', 'held', 'quiet', 'burst', 'skipped'));
ALTER TABLE chat_messages ADD COLUMN document_id BIGINT;
DROP INDEX chat_messages_due;
CREATE INDEX chat_messages_due ON chat_messages(due_at) WHERE status IN ('held', 'quiet', 'burst');
