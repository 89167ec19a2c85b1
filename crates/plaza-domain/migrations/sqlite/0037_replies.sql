-- Conversations (DECISIONS.md "Conversations (round 5)"): replies to posts
-- and to one another, in threads, and the posts' reply counts and lock.
--
-- Thread order is a materialised path. A reply's `path` is its parent's
-- path (none for an answer to the post) followed by one segment: its rank
-- among its siblings (0 for the first answer to the same parent, then 1, …)
-- in an order-preserving, prefix-free code over the characters 0-9 a-z
-- (`plaza_domain::replies::path`). Compared as bytes, paths put each reply
-- after its parent and before its parent's next sibling, siblings oldest
-- first: a thread page is one range of the index (post_id, path), and the
-- subtree below a reply is the range of the paths that start with its path.
-- `newest_path` is the same path with its first segment's code inverted, so
-- that the answers to the post come newest first while each subtree keeps
-- thread order: the `sort=newest` walk is one range of (post_id,
-- newest_path). A cursor is the last path a page returned.
--
-- Ranks are handed out by the parent's `child_seq` (the post's for answers
-- to the post). Every write to a thread first takes its post's row (the
-- write lock on SQLite, `FOR UPDATE` on PostgreSQL), so the writes of one
-- thread queue: ranks follow arrival, which is also the order of ids and of
-- creation times, and the counts are adjusted by relative updates that
-- cannot lose one another.
--
-- `reply_count` is the number of visible (published or flagged) replies
-- below a reply, direct and indirect; the post's `reply_count` those of the
-- whole thread. A deleted reply keeps its row as a placeholder (`status`
-- deleted, empty content, no author) while rows remain below it; it is
-- shown while visible replies are below it (`reply_count > 0`). Deleting
-- a post deletes its replies; erasing a user leaves their rows as
-- placeholders or removes them (`author_id` is cleared by the erasure, and
-- set to NULL should a user row go any other way).
--
-- Few rows are pending, hidden or deleted; the partial index
-- `replies_out_of_view` holds just those, so a page's total (the visible
-- count plus the placeholders and the held replies the caller sees) counts
-- a handful of entries rather than the thread.

ALTER TABLE posts ADD COLUMN reply_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE posts ADD COLUMN child_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE posts ADD COLUMN locked INTEGER NOT NULL DEFAULT 0;

CREATE TABLE replies (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    post_id BIGINT NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
    parent_id BIGINT REFERENCES replies (id) ON DELETE CASCADE,
    author_id BIGINT REFERENCES users (id) ON DELETE SET NULL,
    content TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'published'
        CHECK (status IN ('published', 'pending', 'hidden', 'flagged', 'deleted')),
    depth BIGINT NOT NULL,
    path TEXT NOT NULL,
    newest_path TEXT NOT NULL,
    child_seq BIGINT NOT NULL DEFAULT 0,
    reply_count BIGINT NOT NULL DEFAULT 0,
    report_count BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    edited_at BIGINT
);
CREATE UNIQUE INDEX replies_thread ON replies (post_id, path);
CREATE UNIQUE INDEX replies_newest ON replies (post_id, newest_path);
CREATE INDEX replies_parent ON replies (parent_id);
CREATE INDEX replies_author ON replies (author_id, id);
CREATE INDEX replies_status ON replies (status, id);
CREATE INDEX replies_out_of_view ON replies (post_id, path)
    WHERE status IN ('pending', 'hidden', 'deleted');
CREATE INDEX replies_reported ON replies (id) WHERE report_count > 0;

-- Public answers (post lists, searches) are cached on the content
-- generation: a reply written, deleted or moderated moves it. Count
-- changes move it through the post's row.
CREATE TRIGGER replies_generation_insert AFTER INSERT ON replies BEGIN
    UPDATE content_generation SET value = value + 1 WHERE id = 1;
END;

CREATE TRIGGER replies_generation_update AFTER UPDATE OF content, status, author_id ON replies BEGIN
    UPDATE content_generation SET value = value + 1 WHERE id = 1;
END;

CREATE TRIGGER replies_generation_delete AFTER DELETE ON replies BEGIN
    UPDATE content_generation SET value = value + 1 WHERE id = 1;
END;

-- Full text over the replies' content, as for posts.
CREATE VIRTUAL TABLE replies_fts USING fts5 (
    content,
    content = 'replies', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2',
    prefix = '2 3'
);

CREATE TRIGGER replies_fts_insert AFTER INSERT ON replies BEGIN
    INSERT INTO replies_fts (rowid, content) VALUES (NEW.id, NEW.content);
END;

CREATE TRIGGER replies_fts_delete AFTER DELETE ON replies BEGIN
    INSERT INTO replies_fts (replies_fts, rowid, content) VALUES ('delete', OLD.id, OLD.content);
END;

CREATE TRIGGER replies_fts_update AFTER UPDATE OF content ON replies BEGIN
    INSERT INTO replies_fts (replies_fts, rowid, content) VALUES ('delete', OLD.id, OLD.content);
    INSERT INTO replies_fts (rowid, content) VALUES (NEW.id, NEW.content);
END;
