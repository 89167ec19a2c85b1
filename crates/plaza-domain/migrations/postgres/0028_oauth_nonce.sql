-- An OpenID Connect sign-in keeps the nonce it sent the provider with its
-- state; the callback accepts only an ID token carrying that nonce. Plain
-- OAuth sign-ins have none.
ALTER TABLE oauth_states ADD COLUMN nonce TEXT;
