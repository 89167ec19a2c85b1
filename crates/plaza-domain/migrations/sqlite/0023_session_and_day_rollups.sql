-- Sessions, each once: in the slice of its first event and with that
-- event's device type, country and VPN flag (a session is counted where it
-- started, as web analytics tools count it). The dashboards count the
-- sessions that started in a period from the index below instead of
-- grouping the period's visits by session, which for a year of 10,000,000
-- events was a sort of half a million rows. `first_at` is the first
-- event's time, ties broken by the attributes' byte order; the ingest
-- writer keeps the earliest start it has seen and adds the counts, the
-- retention purge subtracts purged events and drops sessions left with
-- none (a session keeps the start it had). `session_key` is never ''.
CREATE TABLE analytics_rollup_sessions (
    user_id BIGINT NOT NULL,
    session_key TEXT NOT NULL,
    first_at BIGINT NOT NULL,
    first_slice BIGINT NOT NULL,
    device_type TEXT NOT NULL,
    country TEXT NOT NULL,
    is_vpn INTEGER NOT NULL,
    events BIGINT NOT NULL,
    page_views BIGINT NOT NULL,
    PRIMARY KEY (user_id, session_key)
) WITHOUT ROWID;

-- Every column a dashboard reads, in slice order: sessions per slice come
-- from the index alone, grouped as they are read.
CREATE INDEX analytics_rollup_session_starts ON analytics_rollup_sessions
    (first_slice, first_at, device_type, country, is_vpn, page_views);

-- The sessions stored so far.
INSERT INTO analytics_rollup_sessions
    (user_id, session_key, first_at, first_slice, device_type, country, is_vpn, events, page_views)
SELECT user_id, session_key, occurred_at, occurred_at / 900000, device_type, country, is_vpn,
    events, page_views
FROM (
    SELECT user_id, session_key, occurred_at, device_type, COALESCE(country, '') AS country, is_vpn,
        ROW_NUMBER() OVER (PARTITION BY user_id, session_key
            ORDER BY occurred_at, device_type, COALESCE(country, ''), is_vpn) AS position,
        COUNT(*) OVER (PARTITION BY user_id, session_key) AS events,
        SUM(CASE WHEN event_type = 'page_view' THEN 1 ELSE 0 END)
            OVER (PARTITION BY user_id, session_key) AS page_views
    FROM analytics_events WHERE session_key <> ''
) AS ordered
WHERE position = 1;

-- The slices' totals per UTC day: a year's overview, devices and countries
-- sum 365 rows per device type, country and VPN flag instead of 35,040,
-- and the slices only for the partial days at the period's ends (on
-- SQLite, grouping a year of slices took 0.45 s of a year's dashboard).
CREATE TABLE analytics_rollup_days (
    day BIGINT NOT NULL,
    device_type TEXT NOT NULL,
    country TEXT NOT NULL,
    is_vpn INTEGER NOT NULL,
    events BIGINT NOT NULL,
    page_views BIGINT NOT NULL,
    clicks BIGINT NOT NULL,
    timed_sessions BIGINT NOT NULL,
    session_millis BIGINT NOT NULL,
    PRIMARY KEY (day, device_type, country, is_vpn)
) WITHOUT ROWID;

INSERT INTO analytics_rollup_days
    (day, device_type, country, is_vpn, events, page_views, clicks, timed_sessions, session_millis)
SELECT slice / 96, device_type, country, is_vpn, SUM(events), SUM(page_views), SUM(clicks),
    SUM(timed_sessions), SUM(session_millis)
FROM analytics_rollup_slices GROUP BY 1, 2, 3, 4;
