-- Content: posts with tags, reports on posts, and the full-text indexes over
-- posts and users.
--
-- A post's moderation status (published, draft, hidden, flagged) is derived
-- from two columns, so an author's publish switch and a moderator's decision
-- never overwrite each other: `published` is the author's choice, and
-- `moderation` is `none`, `flagged` or `hidden`. Hidden wins over everything,
-- then an unpublished post is a draft, then a flag shows.
--
-- Deleting a user deletes their posts and reports (ON DELETE CASCADE); the
-- triggers below keep the counters and search indexes in step with every
-- write, cascades included.

CREATE TABLE posts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    author_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    content TEXT NOT NULL,
    -- Normalized tags separated by single spaces, in the author's order; the
    -- post_tags rows are the index for the tag filter.
    tags TEXT NOT NULL DEFAULT '',
    published INTEGER NOT NULL DEFAULT 1,
    moderation TEXT NOT NULL DEFAULT 'none' CHECK (moderation IN ('none', 'flagged', 'hidden')),
    report_count BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX posts_created ON posts (created_at, id);
CREATE INDEX posts_updated ON posts (updated_at, id);
CREATE INDEX posts_title ON posts (title, id);
CREATE INDEX posts_author ON posts (author_id, created_at, id);
CREATE INDEX posts_reported ON posts (created_at, id) WHERE report_count > 0;

-- created_at is copied from the post (it never changes), so a tag page is
-- one index range in creation order.
CREATE TABLE post_tags (
    post_id BIGINT NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (post_id, tag)
);
CREATE INDEX post_tags_tag ON post_tags (tag, created_at, post_id);

-- Row counts per (published, moderation) pair, so list totals without an
-- author or tag filter are a sum of at most six numbers instead of a count
-- over a million rows. Scope names: `published:none`, `unpublished:hidden`, …
CREATE TABLE post_counts (
    scope TEXT PRIMARY KEY,
    total BIGINT NOT NULL
);
INSERT INTO post_counts (scope, total) VALUES
    ('published:none', 0), ('published:flagged', 0), ('published:hidden', 0),
    ('unpublished:none', 0), ('unpublished:flagged', 0), ('unpublished:hidden', 0);

CREATE TRIGGER posts_count_insert AFTER INSERT ON posts BEGIN
    UPDATE post_counts SET total = total + 1
    WHERE scope = (CASE WHEN NEW.published THEN 'published:' ELSE 'unpublished:' END) || NEW.moderation;
END;

CREATE TRIGGER posts_count_delete AFTER DELETE ON posts BEGIN
    UPDATE post_counts SET total = total - 1
    WHERE scope = (CASE WHEN OLD.published THEN 'published:' ELSE 'unpublished:' END) || OLD.moderation;
END;

CREATE TRIGGER posts_count_update AFTER UPDATE OF published, moderation ON posts BEGIN
    UPDATE post_counts SET total = total - 1
    WHERE scope = (CASE WHEN OLD.published THEN 'published:' ELSE 'unpublished:' END) || OLD.moderation;
    UPDATE post_counts SET total = total + 1
    WHERE scope = (CASE WHEN NEW.published THEN 'published:' ELSE 'unpublished:' END) || NEW.moderation;
END;

CREATE TABLE post_reports (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    post_id BIGINT NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
    reporter_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    reason TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    -- Set when a moderator acts on the post (the moderation report's
    -- resolved count and resolution time).
    resolved_at BIGINT,
    resolved_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
    UNIQUE (post_id, reporter_id)
);
CREATE INDEX post_reports_reporter ON post_reports (reporter_id);
CREATE INDEX post_reports_created ON post_reports (created_at);

CREATE TRIGGER post_reports_count_insert AFTER INSERT ON post_reports BEGIN
    UPDATE posts SET report_count = report_count + 1 WHERE id = NEW.post_id;
END;

CREATE TRIGGER post_reports_count_delete AFTER DELETE ON post_reports BEGIN
    UPDATE posts SET report_count = report_count - 1 WHERE id = OLD.post_id;
END;

-- Full text: FTS5 over the rows themselves (external content), ranked with
-- bm25 and column weights chosen at query time. Prefix indexes of 2 and 3
-- characters keep as-you-type queries on short prefixes cheap.
CREATE VIRTUAL TABLE posts_fts USING fts5 (
    title, content, tags,
    content = 'posts', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2',
    prefix = '2 3'
);

CREATE TRIGGER posts_fts_insert AFTER INSERT ON posts BEGIN
    INSERT INTO posts_fts (rowid, title, content, tags) VALUES (NEW.id, NEW.title, NEW.content, NEW.tags);
END;

CREATE TRIGGER posts_fts_delete AFTER DELETE ON posts BEGIN
    INSERT INTO posts_fts (posts_fts, rowid, title, content, tags)
        VALUES ('delete', OLD.id, OLD.title, OLD.content, OLD.tags);
END;

CREATE TRIGGER posts_fts_update AFTER UPDATE OF title, content, tags ON posts BEGIN
    INSERT INTO posts_fts (posts_fts, rowid, title, content, tags)
        VALUES ('delete', OLD.id, OLD.title, OLD.content, OLD.tags);
    INSERT INTO posts_fts (rowid, title, content, tags) VALUES (NEW.id, NEW.title, NEW.content, NEW.tags);
END;

CREATE VIRTUAL TABLE users_fts USING fts5 (
    username, name, bio,
    content = 'users', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2',
    prefix = '2 3'
);
INSERT INTO users_fts (users_fts) VALUES ('rebuild');

CREATE TRIGGER users_fts_insert AFTER INSERT ON users BEGIN
    INSERT INTO users_fts (rowid, username, name, bio) VALUES (NEW.id, NEW.username, NEW.name, NEW.bio);
END;

CREATE TRIGGER users_fts_delete AFTER DELETE ON users BEGIN
    INSERT INTO users_fts (users_fts, rowid, username, name, bio)
        VALUES ('delete', OLD.id, OLD.username, OLD.name, OLD.bio);
END;

CREATE TRIGGER users_fts_update AFTER UPDATE OF username, name, bio ON users BEGIN
    INSERT INTO users_fts (users_fts, rowid, username, name, bio)
        VALUES ('delete', OLD.id, OLD.username, OLD.name, OLD.bio);
    INSERT INTO users_fts (rowid, username, name, bio) VALUES (NEW.id, NEW.username, NEW.name, NEW.bio);
END;

-- The public user list: active users with public profiles, newest first.
CREATE INDEX users_listing ON users (status, profile_public, created_at, id);
