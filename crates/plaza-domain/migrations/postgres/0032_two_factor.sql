-- Two-factor sign-in (TOTP). `totp_secret` is the user's secret sealed
-- (AES-256-GCM under the TOTP key, which the database does not hold, bound
-- to the user's id); a setup writes it, and it stays pending until a first
-- code sets `totp_enabled_at`. `totp_last_step` is the 30-second step of
-- the last code accepted: a code of that step or an earlier one is refused,
-- so each code works once.
ALTER TABLE users ADD COLUMN totp_secret TEXT;
ALTER TABLE users ADD COLUMN totp_enabled_at BIGINT;
ALTER TABLE users ADD COLUMN totp_last_step BIGINT;

-- The one-time recovery codes of a user with TOTP on, as SHA-256 hashes;
-- a used one keeps its row with the time it was used.
CREATE TABLE totp_recovery_codes (
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash TEXT NOT NULL,
    used_at BIGINT,
    PRIMARY KEY (user_id, code_hash)
);

-- Sign-ins waiting for their second factor: the password or the provider
-- was right, the code is still to come (the sign-in page's second step).
-- Found by the hash of a cookie's token; they last minutes.
CREATE TABLE second_factor_challenges (
    token_hash TEXT PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    callback_url TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX second_factor_challenges_expires ON second_factor_challenges (expires_at);
