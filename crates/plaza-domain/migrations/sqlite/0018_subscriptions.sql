-- Subscriptions (the unversioned admin user list's "Subscriptions" group):
-- a user's plans, each active or inactive, with when it started and, when
-- it has one, when it ends. A subscription whose `ends_at` has passed
-- counts as inactive whatever its stored status. Admins manage them through
-- `POST /api/admin/users/{id}/subscriptions` and
-- `PUT /api/admin/subscriptions/{id}`.
CREATE TABLE subscriptions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    plan_name TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive')),
    started_at BIGINT NOT NULL,
    ends_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX subscriptions_user ON subscriptions (user_id);
