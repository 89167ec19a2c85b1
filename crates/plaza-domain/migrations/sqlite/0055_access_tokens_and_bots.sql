-- Personal access tokens and bot accounts (DECISIONS.md "Tokens for
-- members and bots, and webhooks (round 5)"). A token is kept as the
-- SHA-256 of its secret only; revoking or ending one deletes its row.
-- `scopes` is its scopes joined by spaces (`read write notifications`).
-- `last_used_at` is written at the first use, then at most once a minute.
CREATE TABLE access_tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL,
    scopes TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    last_used_at BIGINT
);
CREATE UNIQUE INDEX access_tokens_hash ON access_tokens (token_hash);
CREATE INDEX access_tokens_user ON access_tokens (user_id, id);

-- A bot: an account a program drives with its tokens, shown as such
-- wherever it appears as an author.
ALTER TABLE users ADD COLUMN is_bot INTEGER NOT NULL DEFAULT 0;
