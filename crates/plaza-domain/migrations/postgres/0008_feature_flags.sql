-- Feature flags of the versioned admin surface (PUT/GET
-- /api/v1/admin/feature-flags), and the indexes the admin reports read by
-- date: sign-ins (sessions started) and resolved reports.
-- `target_roles` is a JSON array of role names (empty: every role);
-- `rollout_percentage` 0..100 of users, chosen by a stable hash of the flag
-- name and the user id (plaza_domain::feature_flags::is_enabled_for).
CREATE TABLE feature_flags (
    name TEXT PRIMARY KEY,
    enabled BOOLEAN NOT NULL,
    description TEXT,
    rollout_percentage INTEGER NOT NULL DEFAULT 100 CHECK (rollout_percentage BETWEEN 0 AND 100),
    target_roles TEXT NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    updated_by BIGINT REFERENCES users (id) ON DELETE SET NULL
);

CREATE INDEX sessions_created ON sessions (created_at);
CREATE INDEX post_reports_resolved ON post_reports (resolved_at);
