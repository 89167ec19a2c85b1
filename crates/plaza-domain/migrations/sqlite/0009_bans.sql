-- Bans: a ban is a timed record, not only a status. `users.status` says
-- whether the user is banned now; `user_bans` keeps every ban with who
-- imposed it, why, until when (NULL: permanent) and when and by whom it was
-- lifted (NULL `lifted_by` with a `lifted_at`: it expired). At most one ban
-- of a user is in force (not lifted) at a time. The ban-expiry job finds the
-- due ones through `user_bans_in_force`.
CREATE TABLE user_bans (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    banned_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
    reason TEXT NOT NULL,
    notes TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    lifted_at BIGINT,
    lifted_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
    lift_reason TEXT
);
CREATE INDEX user_bans_user ON user_bans (user_id, created_at);
CREATE UNIQUE INDEX user_bans_one_in_force ON user_bans (user_id) WHERE lifted_at IS NULL;
CREATE INDEX user_bans_in_force ON user_bans (expires_at) WHERE lifted_at IS NULL;

-- Admin tokens issued before this time (Unix milliseconds) are refused:
-- banning a user revokes every token they hold without knowing their ids.
ALTER TABLE users ADD COLUMN credentials_valid_after BIGINT;

-- The admin user list filters by status or role and sorts by creation.
CREATE INDEX users_status_created ON users (status, created_at, id);
CREATE INDEX users_role_created ON users (role, created_at, id);
