-- Webhooks (DECISIONS.md "Tokens for members and bots, and webhooks
-- (round 5)"). An event is written to the outbox (`webhook_events`) in the
-- unit of work that caused it, with one delivery per active webhook that
-- subscribes to its type; nothing is written when none does. Senders claim
-- due deliveries with a conditional UPDATE that moves `next_attempt_at` to
-- the end of their lease, so each attempt happens on one instance and a
-- crashed sender's deliveries are due again when the lease ends. Every
-- attempt leaves a row in `webhook_attempts`.
--
-- `secret_sealed` is the signing secret sealed (AES-256-GCM) with the
-- webhook key kept outside the database. `failures_in_row` counts the
-- deliveries that failed since the last one delivered; at 50 the webhook
-- is deactivated.
CREATE TABLE webhooks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    url TEXT NOT NULL,
    description TEXT,
    secret_sealed TEXT NOT NULL,
    active INTEGER NOT NULL DEFAULT 1,
    failures_in_row BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE webhook_subscriptions (
    webhook_id BIGINT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event TEXT NOT NULL,
    PRIMARY KEY (event, webhook_id)
);
CREATE INDEX webhook_subscriptions_webhook ON webhook_subscriptions (webhook_id);

CREATE TABLE webhook_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE webhook_deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id BIGINT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id BIGINT NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    claimed_by TEXT,
    created_at BIGINT NOT NULL,
    finished_at BIGINT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_of_webhook ON webhook_deliveries (webhook_id, id);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at)
    WHERE status <> 'pending';

CREATE TABLE webhook_attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id BIGINT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    at BIGINT NOT NULL,
    response_code BIGINT,
    duration_ms BIGINT NOT NULL,
    error TEXT
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
