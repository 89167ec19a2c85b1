-- Sessions counted where they start (see the SQLite migration). Ties of
-- the first event are broken by the attributes' byte order (COLLATE "C"),
-- as SQLite and the ingest writer break them.
ALTER TABLE analytics_rollup_slices ADD COLUMN session_starts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE analytics_rollup_slices ADD COLUMN viewing_starts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE analytics_rollup_slices ADD COLUMN bounced_starts BIGINT NOT NULL DEFAULT 0;

-- Each session once: its start (the first event's time, ties broken by the
-- attributes) and its page views, which the ingest writer reads, locked,
-- to move the session's start and bounce between slices. The retention
-- purge ends a session whose events it deletes (it began before the
-- window): its row goes and its start is no longer counted. `session_key`
-- is never ''.
CREATE TABLE analytics_rollup_sessions (
    user_id BIGINT NOT NULL,
    session_key TEXT NOT NULL,
    first_at BIGINT NOT NULL,
    device_type TEXT NOT NULL,
    country TEXT NOT NULL,
    is_vpn BOOLEAN NOT NULL,
    page_views BIGINT NOT NULL,
    PRIMARY KEY (user_id, session_key)
);

-- The sessions that start in a period's ragged ends (under a slice).
CREATE INDEX analytics_rollup_session_starts ON analytics_rollup_sessions (first_at);

INSERT INTO analytics_rollup_sessions
    (user_id, session_key, first_at, device_type, country, is_vpn, page_views)
SELECT user_id, session_key, occurred_at, device_type, country, is_vpn, page_views
FROM (
    SELECT user_id, session_key, occurred_at, device_type, COALESCE(country, '') AS country, is_vpn,
        ROW_NUMBER() OVER (PARTITION BY user_id, session_key
            ORDER BY occurred_at, device_type COLLATE "C", COALESCE(country, '') COLLATE "C", is_vpn) AS position,
        SUM(CASE WHEN event_type = 'page_view' THEN 1 ELSE 0 END)
            OVER (PARTITION BY user_id, session_key) AS page_views
    FROM analytics_events WHERE session_key <> ''
) AS ordered
WHERE position = 1;

UPDATE analytics_rollup_slices SET
    session_starts = starts.sessions, viewing_starts = starts.viewing,
    bounced_starts = starts.bounced
FROM (
    SELECT first_at / 900000 AS slice, device_type, country, is_vpn, COUNT(*) AS sessions,
        SUM(CASE WHEN page_views > 0 THEN 1 ELSE 0 END) AS viewing,
        SUM(CASE WHEN page_views = 1 THEN 1 ELSE 0 END) AS bounced
    FROM analytics_rollup_sessions GROUP BY 1, 2, 3, 4
) AS starts
WHERE analytics_rollup_slices.slice = starts.slice
    AND analytics_rollup_slices.device_type = starts.device_type
    AND analytics_rollup_slices.country = starts.country
    AND analytics_rollup_slices.is_vpn = starts.is_vpn;

-- The slices' totals per UTC day: a year's totals sum 365 rows per device
-- type, country and VPN flag instead of 35,040, and the slices only for the
-- partial days at the period's ends (on SQLite, grouping a year of slices
-- took 0.45 s of a year's dashboard).
CREATE TABLE analytics_rollup_days (
    day BIGINT NOT NULL,
    device_type TEXT NOT NULL,
    country TEXT NOT NULL,
    is_vpn BOOLEAN NOT NULL,
    events BIGINT NOT NULL,
    page_views BIGINT NOT NULL,
    clicks BIGINT NOT NULL,
    timed_sessions BIGINT NOT NULL,
    session_millis BIGINT NOT NULL,
    session_starts BIGINT NOT NULL,
    viewing_starts BIGINT NOT NULL,
    bounced_starts BIGINT NOT NULL,
    PRIMARY KEY (day, device_type, country, is_vpn)
);

INSERT INTO analytics_rollup_days
    (day, device_type, country, is_vpn, events, page_views, clicks, timed_sessions,
     session_millis, session_starts, viewing_starts, bounced_starts)
SELECT slice / 96, device_type, country, is_vpn, SUM(events), SUM(page_views), SUM(clicks),
    SUM(timed_sessions), SUM(session_millis), SUM(session_starts), SUM(viewing_starts),
    SUM(bounced_starts)
FROM analytics_rollup_slices GROUP BY 1, 2, 3, 4;
