-- The live alert stream (GET /api/alerts/stream) asks two questions: "did
-- anything change since I last looked?" (the newest delivery and the
-- newest dismissal, once a second per instance while a stream is open) and
-- "what did this user get or dismiss since time T?". These indexes answer
-- both without a scan.
CREATE INDEX alerts_delivered ON alerts (delivered_at);
CREATE INDEX alert_dismissals_user_time ON alert_dismissals (user_id, dismissed_at);
