-- One round trip per board write (issue 11, item 1). A board write is one
-- multi-statement call: its first statement decides (the CAS on the board
-- version and the row revisions, the refusal checks) and, when it wins,
-- stamps the board with a token fresh for that call. Every later statement
-- of the call (events, history, row writes, auto-archive, the read-back)
-- acts only on the board carrying that token, so a refused call writes
-- nothing. Tokens are never reused; the last one simply stays.
ALTER TABLE boards ADD COLUMN write_token TEXT;
CREATE INDEX boards_write_token ON boards(write_token) WHERE write_token IS NOT NULL;
