-- Every sign-in (a session started), kept after its session ends, so the
-- admin user-activity report counts sign-ins of a range even when the
-- sessions are gone (signed out or expired and purged). The purge job
-- drops entries older than `sign_in_retention_days`, in chunks.
CREATE TABLE sign_ins (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    ip_address TEXT,
    user_agent TEXT
);
CREATE INDEX sign_ins_created ON sign_ins (created_at);
CREATE INDEX sign_ins_user_created ON sign_ins (user_id, created_at);

-- Sign-ins before this migration: the sessions that still exist.
INSERT INTO sign_ins (user_id, created_at, ip_address, user_agent)
SELECT user_id, created_at, ip_address, user_agent FROM sessions ORDER BY created_at;
