-- Edit locks and alerts.
--
-- An edit lock says "this admin is changing this user or post right now":
-- a mutating admin operation takes it (insert, or take over one that has
-- expired or is its own, in one statement) and removes it in the unit of
-- work that makes its change. A holder that dies leaves its lock behind
-- until `expires_at`, after which anyone may take it over. Another admin's
-- write meanwhile answers 423 RESOURCE_LOCKED.
CREATE TABLE edit_locks (
    resource_type TEXT NOT NULL,
    resource_id BIGINT NOT NULL,
    holder_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    locked_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (resource_type, resource_id)
);

-- Alerts users see in GET /api/alerts. A moderation alert has one
-- recipient (`user_id`). A broadcast has none: its audience is stored
-- (`target_all`, `target_roles` as ' role role ', and `alert_recipients`
-- for user ids) and resolved when a user reads their alerts, so a broadcast
-- to every user is one row, not one per user. An alert shows once
-- `delivered_at` is set: at once, or for a scheduled broadcast by the
-- delivery job, which sets it with a conditional UPDATE so a delivery
-- happens exactly once whichever instance runs it.
CREATE TABLE alerts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source TEXT NOT NULL CHECK (source IN ('broadcast', 'moderation')),
    type TEXT NOT NULL CHECK (type IN ('info', 'success', 'warning', 'error')),
    title TEXT NOT NULL,
    message TEXT NOT NULL,
    user_id BIGINT REFERENCES users (id) ON DELETE CASCADE,
    target_all INTEGER NOT NULL DEFAULT 0,
    target_roles TEXT NOT NULL DEFAULT '',
    created_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
    created_at BIGINT NOT NULL,
    deliver_at BIGINT NOT NULL,
    delivered_at BIGINT,
    recipient_count BIGINT
);
-- A user's own alerts, and (user_id IS NULL) the delivered broadcasts, newest first.
CREATE INDEX alerts_recipient ON alerts (user_id, delivered_at);
-- Scheduled broadcasts not delivered yet, by due time.
CREATE INDEX alerts_due ON alerts (deliver_at) WHERE delivered_at IS NULL;

CREATE TABLE alert_recipients (
    alert_id BIGINT NOT NULL REFERENCES alerts (id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    PRIMARY KEY (alert_id, user_id)
);
CREATE INDEX alert_recipients_user ON alert_recipients (user_id);

CREATE TABLE alert_dismissals (
    alert_id BIGINT NOT NULL REFERENCES alerts (id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    dismissed_at BIGINT NOT NULL,
    PRIMARY KEY (alert_id, user_id)
);
CREATE INDEX alert_dismissals_user ON alert_dismissals (user_id);

-- Admin post lists sorted by report count (and the reported filter in that order).
CREATE INDEX posts_report_count ON posts (report_count, id);
