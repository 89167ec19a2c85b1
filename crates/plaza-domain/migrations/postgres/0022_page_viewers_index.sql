-- The distinct viewers of the most viewed pages are counted on the page
-- view events alone; the index now includes every column that count reads
-- (the viewer and the dashboard's filters), so it is answered by an
-- index-only scan instead of one heap row per view (see the SQLite
-- migration for the figures).
DROP INDEX analytics_events_page_views;
CREATE INDEX analytics_events_page_viewers
    ON analytics_events (path, occurred_at) INCLUDE (user_id, device_type, country, is_vpn)
    WHERE event_type = 'page_view';
