-- Notifications (DECISIONS.md "Notifications (round 5)"): what members learn
-- in the app, live, by mail and by Web Push. A notification is written in
-- the unit of work of its cause; mail and push go out through the
-- outboxes below, claimed by the job runner.
--
-- `updated_at` is when its newest event happened: a group of reactions
-- (`group_key` set while it is open: unread and under an hour old, see
-- `plaza_domain::notifications`) moves it to the top. `mail_state` is
-- 'immediate' or 'daily' while a mail of it is due, NULL otherwise.
CREATE TABLE notifications (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    type TEXT NOT NULL CHECK (type IN ('reply', 'mention', 'reaction', 'follow', 'moderation',
        'warning', 'registration', 'appeal')),
    actor_id BIGINT REFERENCES users (id) ON DELETE SET NULL,
    post_id BIGINT REFERENCES posts (id) ON DELETE CASCADE,
    reply_id BIGINT REFERENCES replies (id) ON DELETE CASCADE,
    emoji TEXT,
    text TEXT,
    group_key TEXT,
    group_count BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    read_at BIGINT,
    mail_state TEXT CHECK (mail_state IN ('immediate', 'daily'))
);
-- A member's list, newest first, one index range from a cursor however
-- many they have; the unread ones alone by the partial index.
CREATE INDEX notifications_list ON notifications (user_id, updated_at, id);
CREATE INDEX notifications_unread ON notifications (user_id, updated_at, id)
    WHERE read_at IS NULL;
-- At most one open group of reactions per member and item: two reactions
-- at once update one row.
CREATE UNIQUE INDEX notifications_open_group ON notifications (user_id, group_key)
    WHERE group_key IS NOT NULL;
-- The newest change, which wakes the live streams.
CREATE INDEX notifications_changed ON notifications (updated_at);
-- Mails due: the immediate ones, and the digest's oldest first and per member.
CREATE INDEX notifications_mail_due ON notifications (mail_state, created_at)
    WHERE mail_state IS NOT NULL;
CREATE INDEX notifications_digest_of_user ON notifications (user_id, created_at)
    WHERE mail_state = 'daily';
-- The cascades of a deleted actor, post or reply.
CREATE INDEX notifications_actor ON notifications (actor_id) WHERE actor_id IS NOT NULL;
CREATE INDEX notifications_post ON notifications (post_id) WHERE post_id IS NOT NULL;
CREATE INDEX notifications_reply ON notifications (reply_id) WHERE reply_id IS NOT NULL;

-- Each member's unread notifications, kept by the triggers below in the
-- transaction of every insert, read and delete (a cascade included), so
-- the count is one row whatever the list holds.
CREATE TABLE notification_counts (
    user_id BIGINT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    unread BIGINT NOT NULL
);

CREATE TRIGGER notifications_unread_insert AFTER INSERT ON notifications
WHEN NEW.read_at IS NULL BEGIN
    INSERT INTO notification_counts (user_id, unread) VALUES (NEW.user_id, 1)
    ON CONFLICT (user_id) DO UPDATE SET unread = notification_counts.unread + 1;
END;

CREATE TRIGGER notifications_unread_read AFTER UPDATE OF read_at ON notifications
WHEN OLD.read_at IS NULL AND NEW.read_at IS NOT NULL BEGIN
    UPDATE notification_counts SET unread = unread - 1 WHERE user_id = NEW.user_id;
END;

CREATE TRIGGER notifications_unread_delete AFTER DELETE ON notifications
WHEN OLD.read_at IS NULL BEGIN
    UPDATE notification_counts SET unread = unread - 1 WHERE user_id = OLD.user_id;
END;

-- A member's choices per type; NULL keeps the type's default.
CREATE TABLE notification_preferences (
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    email TEXT CHECK (email IN ('off', 'immediate', 'daily')),
    push INTEGER,
    PRIMARY KEY (user_id, type)
);

-- Web Push subscriptions (RFC 8030): one per browser endpoint; a member
-- who subscribes an endpoint another member held takes it over.
CREATE TABLE push_subscriptions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    endpoint TEXT NOT NULL UNIQUE,
    p256dh TEXT NOT NULL,
    auth TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX push_subscriptions_user ON push_subscriptions (user_id, created_at, id);

-- Pushes on their way out: one per subscription and notification, written
-- with the notification and claimed as outgoing mail is (a conditional
-- UPDATE moving `next_attempt_at` to the end of a lease). A delivered push
-- is deleted; one still failing at `expires_at` is given up on.
CREATE TABLE push_deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    subscription_id BIGINT NOT NULL REFERENCES push_subscriptions (id) ON DELETE CASCADE,
    notification_id BIGINT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    claimed_by TEXT,
    last_error TEXT,
    UNIQUE (subscription_id, notification_id)
);
CREATE INDEX push_deliveries_due ON push_deliveries (next_attempt_at, id);
CREATE INDEX push_deliveries_notification ON push_deliveries (notification_id);

-- A notification mail's one-click unsubscribe URL (RFC 8058), sent as its
-- `List-Unsubscribe` header; NULL for the account mails.
ALTER TABLE outgoing_mail ADD COLUMN list_unsubscribe TEXT;
