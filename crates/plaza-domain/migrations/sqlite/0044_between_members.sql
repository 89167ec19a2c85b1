-- Between members (DECISIONS.md "Between members: follows, blocks, mutes
-- and filters"): who follows whom, whom a member blocks or mutes, and the
-- keyword filters a member reads through.
--
-- A follow: one row per (follower, followed). The followed member's
-- followers and the follower's follows are listed newest first.
CREATE TABLE follows (
    follower_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    followed_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (follower_id, followed_id),
    CHECK (follower_id <> followed_id)
);
CREATE INDEX follows_followers ON follows (followed_id, created_at, follower_id);
CREATE INDEX follows_following ON follows (follower_id, created_at, followed_id);

-- The public profile's counts, kept by the triggers below in the
-- transaction of every follow and unfollow (a cascade included), so a
-- profile reads them instead of counting.
ALTER TABLE users ADD COLUMN followers_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN following_count BIGINT NOT NULL DEFAULT 0;

CREATE TRIGGER follows_count_insert AFTER INSERT ON follows BEGIN
    UPDATE users SET followers_count = followers_count + 1 WHERE id = NEW.followed_id;
    UPDATE users SET following_count = following_count + 1 WHERE id = NEW.follower_id;
END;

CREATE TRIGGER follows_count_delete AFTER DELETE ON follows BEGIN
    UPDATE users SET followers_count = followers_count - 1 WHERE id = OLD.followed_id;
    UPDATE users SET following_count = following_count - 1 WHERE id = OLD.follower_id;
END;

-- What one member (`user_id`) holds against another (`other_id`): a block
-- (`blocked_at`), a mute (`muted_at`, ending at `mute_expires_at` when
-- set), or both. A row holding neither is deleted. The key serves the
-- lists' "is this author hidden from me" probe and the check of a block
-- both ways (two key lookups).
CREATE TABLE member_relations (
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    other_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    blocked_at BIGINT,
    muted_at BIGINT,
    mute_expires_at BIGINT,
    PRIMARY KEY (user_id, other_id),
    CHECK (user_id <> other_id)
);
CREATE INDEX member_relations_other ON member_relations (other_id);
-- A member's blocks and mutes, newest first.
CREATE INDEX member_relations_blocks ON member_relations (user_id, blocked_at, other_id)
    WHERE blocked_at IS NOT NULL;
CREATE INDEX member_relations_mutes ON member_relations (user_id, muted_at, other_id)
    WHERE muted_at IS NOT NULL;

-- A member's keyword filters (at most 100 each, a rule of the writer).
-- `action` is `hide` or `warn`; a filter ends at `expires_at` when set.
CREATE TABLE member_filters (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    phrase TEXT NOT NULL,
    whole_word INTEGER NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('hide', 'warn')),
    expires_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX member_filters_user ON member_filters (user_id, id);

-- A member's relations version: it moves with every change to their
-- blocks, mutes and filters (plain SQL and cascades included), and the
-- statement that resolves a session reads it, so an instance knows on
-- every signed-in request whether the copy it keeps is current.
ALTER TABLE users ADD COLUMN relations_version BIGINT NOT NULL DEFAULT 0;

CREATE TRIGGER member_relations_version_insert AFTER INSERT ON member_relations BEGIN
    UPDATE users SET relations_version = relations_version + 1 WHERE id = NEW.user_id;
END;
CREATE TRIGGER member_relations_version_update AFTER UPDATE ON member_relations BEGIN
    UPDATE users SET relations_version = relations_version + 1 WHERE id = NEW.user_id;
END;
CREATE TRIGGER member_relations_version_delete AFTER DELETE ON member_relations BEGIN
    UPDATE users SET relations_version = relations_version + 1 WHERE id = OLD.user_id;
END;
CREATE TRIGGER member_filters_version_insert AFTER INSERT ON member_filters BEGIN
    UPDATE users SET relations_version = relations_version + 1 WHERE id = NEW.user_id;
END;
CREATE TRIGGER member_filters_version_update AFTER UPDATE ON member_filters BEGIN
    UPDATE users SET relations_version = relations_version + 1 WHERE id = NEW.user_id;
END;
CREATE TRIGGER member_filters_version_delete AFTER DELETE ON member_filters BEGIN
    UPDATE users SET relations_version = relations_version + 1 WHERE id = OLD.user_id;
END;
