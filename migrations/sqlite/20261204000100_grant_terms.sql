-- Grants gain an end and a place. `expires_at`: the millisecond from which
-- the grant no longer matches (NULL: until revoked); the matching query
-- compares it with the caller's clock, so an expired grant never decides a
-- prompt whether or not anything swept it. `path`: a glob the prompt's
-- working directory must match (`/home/dev/shop/**`: that folder and
-- everything beneath it; '' matches anywhere in the grant's project).
ALTER TABLE grants ADD COLUMN expires_at INTEGER;
ALTER TABLE grants ADD COLUMN path TEXT NOT NULL DEFAULT '';
