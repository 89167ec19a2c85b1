-- Analytics rollups: the events pre-counted, kept by the ingest writer and
-- the retention purge in the same transaction as the events they count, so
-- the dashboards read thousands of rows instead of millions. Slices are
-- 15-minute spans of UTC time (`occurred_at / 900000`), fine enough for the
-- buckets of every time zone; days are UTC days (`occurred_at / 86400000`),
-- for the views without a time axis. `country` is '' when no trusted header
-- named one; `session_key` is '' for events outside a session. Flags are
-- INTEGER 0/1 here, BOOLEAN on PostgreSQL (see 0001).
CREATE TABLE analytics_rollup_slices (
    slice BIGINT NOT NULL,
    device_type TEXT NOT NULL,
    country TEXT NOT NULL,
    is_vpn INTEGER NOT NULL,
    events BIGINT NOT NULL,
    page_views BIGINT NOT NULL,
    clicks BIGINT NOT NULL,
    timed_sessions BIGINT NOT NULL,
    session_millis BIGINT NOT NULL,
    PRIMARY KEY (slice, device_type, country, is_vpn)
) WITHOUT ROWID;

-- Who was active in a slice, in which of their sessions: distinct users and
-- sessions, bounces and session starts come from here.
CREATE TABLE analytics_rollup_visits (
    slice BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    session_key TEXT NOT NULL,
    device_type TEXT NOT NULL,
    country TEXT NOT NULL,
    is_vpn INTEGER NOT NULL,
    events BIGINT NOT NULL,
    page_views BIGINT NOT NULL,
    PRIMARY KEY (slice, user_id, session_key, device_type, country, is_vpn)
) WITHOUT ROWID;

CREATE TABLE analytics_rollup_pages (
    day BIGINT NOT NULL,
    path TEXT NOT NULL,
    device_type TEXT NOT NULL,
    country TEXT NOT NULL,
    is_vpn INTEGER NOT NULL,
    views BIGINT NOT NULL,
    PRIMARY KEY (day, path, device_type, country, is_vpn)
) WITHOUT ROWID;

-- Clicks per 20-pixel cell of a page.
CREATE TABLE analytics_rollup_clicks (
    day BIGINT NOT NULL,
    path TEXT NOT NULL,
    cell_x BIGINT NOT NULL,
    cell_y BIGINT NOT NULL,
    device_type TEXT NOT NULL,
    country TEXT NOT NULL,
    is_vpn INTEGER NOT NULL,
    clicks BIGINT NOT NULL,
    PRIMARY KEY (day, path, cell_x, cell_y, device_type, country, is_vpn)
) WITHOUT ROWID;

-- The distinct viewers of the most viewed pages are counted on the events.
CREATE INDEX analytics_events_page_views ON analytics_events (path, occurred_at)
    WHERE event_type = 'page_view';

-- Durations are kept only up to a day since this release: older events may
-- hold any value, which a rollup sum must not overflow on.
UPDATE analytics_events SET duration_ms = NULL WHERE duration_ms > 86400000;

-- The events stored so far, counted once.
INSERT INTO analytics_rollup_slices
    (slice, device_type, country, is_vpn, events, page_views, clicks, timed_sessions, session_millis)
SELECT occurred_at / 900000, device_type, COALESCE(country, ''), is_vpn, COUNT(*),
    SUM(CASE WHEN event_type = 'page_view' THEN 1 ELSE 0 END),
    SUM(CASE WHEN event_type = 'button_click' THEN 1 ELSE 0 END),
    SUM(CASE WHEN event_type = 'session_end' AND duration_ms IS NOT NULL THEN 1 ELSE 0 END),
    COALESCE(SUM(CASE WHEN event_type = 'session_end' THEN duration_ms END), 0)
FROM analytics_events GROUP BY 1, 2, 3, 4;
INSERT INTO analytics_rollup_visits
    (slice, user_id, session_key, device_type, country, is_vpn, events, page_views)
SELECT occurred_at / 900000, user_id, COALESCE(session_key, ''), device_type, COALESCE(country, ''),
    is_vpn, COUNT(*), SUM(CASE WHEN event_type = 'page_view' THEN 1 ELSE 0 END)
FROM analytics_events GROUP BY 1, 2, 3, 4, 5, 6;
INSERT INTO analytics_rollup_pages (day, path, device_type, country, is_vpn, views)
SELECT occurred_at / 86400000, path, device_type, COALESCE(country, ''), is_vpn, COUNT(*)
FROM analytics_events WHERE event_type = 'page_view' AND path IS NOT NULL GROUP BY 1, 2, 3, 4, 5;
INSERT INTO analytics_rollup_clicks (day, path, cell_x, cell_y, device_type, country, is_vpn, clicks)
SELECT occurred_at / 86400000, path, click_x / 20, click_y / 20, device_type, COALESCE(country, ''),
    is_vpn, COUNT(*)
FROM analytics_events
WHERE event_type = 'button_click' AND path IS NOT NULL AND click_x IS NOT NULL AND click_y IS NOT NULL
GROUP BY 1, 2, 3, 4, 5, 6, 7;
