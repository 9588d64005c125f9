-- `pending` reads only open questions with a reply, usually for one
-- session: index exactly that, so pickup cost does not grow with the
-- number of open questions.
CREATE INDEX questions_pending ON questions(session, replied_at) WHERE status = 'open' AND reply IS NOT NULL;
