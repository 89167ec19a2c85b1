-- A provider sign-in is bound to the browser that started it: the hash of a
-- short-lived cookie set at the start is kept with the state and checked at
-- the callback (login CSRF). A sign-in started from a signed-in session
-- remembers that user, so the callback links the provider to them.
ALTER TABLE oauth_states ADD COLUMN browser_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE oauth_states ADD COLUMN link_user_id BIGINT REFERENCES users (id) ON DELETE CASCADE;
