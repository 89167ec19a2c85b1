-- The feed as a timeline per reader (DECISIONS.md "Between members"):
-- one entry per (reader, post) for the posts of the members the reader
-- follows, whatever the post's state; the feed's statement reads a page of
-- the reader's entries newest first and keeps those whose post is public
-- and whose author the reader still follows, so publishing, hiding,
-- unfollowing and blocking take effect at once without touching entries.
-- A deleted post or member takes their entries with them.
CREATE TABLE feed_entries (
    reader_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    post_id BIGINT NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
    author_id BIGINT NOT NULL,
    PRIMARY KEY (reader_id, created_at, post_id)
);
CREATE INDEX feed_entries_post ON feed_entries (post_id);
CREATE INDEX feed_entries_author ON feed_entries (reader_id, author_id);

-- Posts whose entries are still being written, one row each: a post of a
-- member with followers is queued here in the transaction that creates
-- it, the fan-out job gives the entry to its followers a batch at a time
-- (the follows after `next_followed_at`, `next_follower_id`, in the order
-- of the `follows_followers` index), and deletes the row after the last
-- batch. Until then the feed's statement reads the post from here.
CREATE TABLE feed_fanouts (
    post_id BIGINT PRIMARY KEY REFERENCES posts (id) ON DELETE CASCADE,
    author_id BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    next_followed_at BIGINT NOT NULL DEFAULT -1,
    next_follower_id BIGINT NOT NULL DEFAULT -1
);
CREATE INDEX feed_fanouts_author ON feed_fanouts (author_id);

CREATE FUNCTION feed_fanouts_queue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO feed_fanouts (post_id, author_id, created_at)
    SELECT NEW.id, NEW.author_id, NEW.created_at
    WHERE EXISTS (SELECT 1 FROM follows WHERE followed_id = NEW.author_id);
    RETURN NULL;
END $$;

CREATE TRIGGER feed_fanouts_queue AFTER INSERT ON posts
    FOR EACH ROW EXECUTE FUNCTION feed_fanouts_queue();

-- A new follow brings the followed member's latest 100 posts into the
-- follower's feed; an ended one (unfollow, block, a cascade) takes all of
-- that member's entries out.
CREATE FUNCTION feed_entries_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO feed_entries (reader_id, created_at, post_id, author_id)
        SELECT NEW.follower_id, p.created_at, p.id, p.author_id FROM posts p
        WHERE p.author_id = NEW.followed_id
        ORDER BY p.created_at DESC, p.id DESC LIMIT 100
        ON CONFLICT DO NOTHING;
    ELSE
        DELETE FROM feed_entries WHERE reader_id = OLD.follower_id AND author_id = OLD.followed_id;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER feed_entries_follow AFTER INSERT OR DELETE ON follows
    FOR EACH ROW EXECUTE FUNCTION feed_entries_follow();

-- The follows made before this migration, as if made now.
INSERT INTO feed_entries (reader_id, created_at, post_id, author_id)
SELECT f.follower_id, p.created_at, p.id, p.author_id
FROM follows f
JOIN (SELECT id, author_id, created_at,
        ROW_NUMBER() OVER (PARTITION BY author_id ORDER BY created_at DESC, id DESC) AS newness
      FROM posts) p ON p.author_id = f.followed_id AND p.newness <= 100;
