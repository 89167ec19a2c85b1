-- The distinct viewers of the most viewed pages are counted on the page
-- view events alone; the index now holds every column that count reads
-- (the viewer and the dashboard's filters), so it is answered from the
-- index in path order instead of one table row per view scattered over the
-- table: a year of ten pages over 10,000,000 events took 0.78 s from the
-- rows and 0.06 s from this index.
DROP INDEX analytics_events_page_views;
CREATE INDEX analytics_events_page_viewers
    ON analytics_events (path, occurred_at, user_id, device_type, country, is_vpn)
    WHERE event_type = 'page_view';
