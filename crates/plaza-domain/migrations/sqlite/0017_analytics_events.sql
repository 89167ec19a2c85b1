-- Analytics events (SPEC.md "Analytics event"), written in batches by the
-- ingest writer. No foreign key to users: a batch holds many users' events,
-- and one user deleted between the session check and the commit must not
-- fail everyone's batch. `occurred_at` is the client's timestamp (the
-- retention purge and the dashboards go by it); `received_at` the server's.
-- Flags are INTEGER 0/1 here, BOOLEAN on PostgreSQL (see 0001).
CREATE TABLE analytics_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL UNIQUE,
    user_id BIGINT NOT NULL,
    event_type TEXT NOT NULL,
    event_data TEXT NOT NULL,
    path TEXT,
    session_key TEXT,
    duration_ms BIGINT,
    click_x BIGINT,
    click_y BIGINT,
    client_hash TEXT NOT NULL,
    device_type TEXT NOT NULL,
    country TEXT,
    is_vpn INTEGER NOT NULL,
    occurred_at BIGINT NOT NULL,
    received_at BIGINT NOT NULL
);
CREATE INDEX analytics_events_occurred ON analytics_events (occurred_at);
