-- Grants gain an end and a place (sqlite 20261204000100_grant_terms: what
-- each means is said there).
ALTER TABLE grants ADD COLUMN expires_at BIGINT;
ALTER TABLE grants ADD COLUMN path TEXT NOT NULL DEFAULT '';
