-- Reports name a category (DECISIONS.md "Conversations (round 5)"): spam,
-- harassment, illegal, rule_violation or other (the default, and what the
-- reports filed before this migration become). Replies are reported as
-- posts are, once per reporter, in a table of the same shape whose
-- triggers keep the reply's `report_count`.
ALTER TABLE post_reports ADD COLUMN category TEXT NOT NULL DEFAULT 'other'
    CHECK (category IN ('spam', 'harassment', 'illegal', 'rule_violation', 'other'));

CREATE TABLE reply_reports (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    reply_id BIGINT NOT NULL REFERENCES replies (id) ON DELETE CASCADE,
    reporter_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    reason TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    -- Set when a moderator acts on the reply.
    resolved_at BIGINT,
    resolved_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
    category TEXT NOT NULL DEFAULT 'other'
        CHECK (category IN ('spam', 'harassment', 'illegal', 'rule_violation', 'other')),
    UNIQUE (reply_id, reporter_id)
);
CREATE INDEX reply_reports_reporter ON reply_reports (reporter_id);
CREATE INDEX reply_reports_created ON reply_reports (created_at);

CREATE TRIGGER reply_reports_count_insert AFTER INSERT ON reply_reports BEGIN
    UPDATE replies SET report_count = report_count + 1 WHERE id = NEW.reply_id;
END;

CREATE TRIGGER reply_reports_count_delete AFTER DELETE ON reply_reports BEGIN
    UPDATE replies SET report_count = report_count - 1 WHERE id = OLD.reply_id;
END;
