-- The moderation queue's total (`GET /api/v1/admin/posts?reported=true`)
-- from a counter instead of counting the reported posts' index range on
-- every page: half of a page's cost at 20,000 reported posts (measured
-- with callgrind). `post_counts` row `reported` is the number of posts
-- with at least one report, kept by statement-level triggers (as the other
-- `post_counts` rows) in the writing transaction.
INSERT INTO post_counts (scope, total)
SELECT 'reported', COUNT(*) FROM posts WHERE report_count > 0;

CREATE FUNCTION posts_reported_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE post_counts SET total = total + (SELECT count(*) FROM inserted WHERE report_count > 0)
    WHERE scope = 'reported';
    RETURN NULL;
END $$;

CREATE FUNCTION posts_reported_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE post_counts SET total = total - (SELECT count(*) FROM deleted WHERE report_count > 0)
    WHERE scope = 'reported';
    RETURN NULL;
END $$;

CREATE FUNCTION posts_reported_count_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE post_counts
    SET total = total + (SELECT count(*) FROM after_rows WHERE report_count > 0)
                      - (SELECT count(*) FROM before_rows WHERE report_count > 0)
    WHERE scope = 'reported';
    RETURN NULL;
END $$;

CREATE TRIGGER posts_reported_count_insert AFTER INSERT ON posts
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION posts_reported_count_insert();
CREATE TRIGGER posts_reported_count_delete AFTER DELETE ON posts
    REFERENCING OLD TABLE AS deleted
    FOR EACH STATEMENT EXECUTE FUNCTION posts_reported_count_delete();
CREATE TRIGGER posts_reported_count_update AFTER UPDATE ON posts
    REFERENCING OLD TABLE AS before_rows NEW TABLE AS after_rows
    FOR EACH STATEMENT EXECUTE FUNCTION posts_reported_count_update();
