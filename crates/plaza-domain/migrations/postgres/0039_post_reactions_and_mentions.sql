-- Reactions and mentions on posts (DECISIONS.md "Conversations (round 5)").
-- Replies get tables of the same shape in 0040; one table per kind of item
-- keeps every key free of NULLs and lets a foreign key to the item cascade.
--
-- A member's reaction: one row per (post, member, emoji); adding it again
-- inserts nothing. `emoji` is a catalog emoji as `GET /api/emojis` spells
-- it (`unicode_char`) or `:name:` of an approved custom emoji.
CREATE TABLE post_reactions (
    post_id BIGINT NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    emoji TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (post_id, user_id, emoji)
);
-- Who reacted with one emoji, newest first (ties: the higher user id first).
CREATE INDEX post_reactions_who ON post_reactions (post_id, emoji, created_at, user_id);
-- A member's reactions, for their export and for the cascade of their erasure.
CREATE INDEX post_reactions_user ON post_reactions (user_id, created_at, post_id);

-- How many members reacted to a post with each emoji, kept by the triggers
-- below in the transaction of every insert and delete of a reaction (a
-- cascade included), so a page of posts reads its counts instead of counting.
-- `first_reacted_at` orders a post's emojis by when each was first added.
-- A count that reaches 0 is deleted.
CREATE TABLE post_reaction_counts (
    post_id BIGINT NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
    emoji TEXT NOT NULL,
    total BIGINT NOT NULL,
    first_reacted_at BIGINT NOT NULL,
    PRIMARY KEY (post_id, emoji)
);

-- Exact under concurrency: the upsert adds 1 atomically (two first
-- reactions at once: one inserts, the other waits and updates), and the
-- decrement holds the count's row lock until the commit, so its deletion
-- at 0 sees no other transaction's change.
CREATE FUNCTION post_reactions_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO post_reaction_counts (post_id, emoji, total, first_reacted_at)
        VALUES (NEW.post_id, NEW.emoji, 1, NEW.created_at)
        ON CONFLICT (post_id, emoji) DO UPDATE SET total = post_reaction_counts.total + 1;
    ELSE
        UPDATE post_reaction_counts SET total = total - 1
        WHERE post_id = OLD.post_id AND emoji = OLD.emoji;
        DELETE FROM post_reaction_counts
        WHERE post_id = OLD.post_id AND emoji = OLD.emoji AND total <= 0;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER post_reactions_count AFTER INSERT OR DELETE ON post_reactions
    FOR EACH ROW EXECUTE FUNCTION post_reactions_count();

-- Bumps the content generation (and announces it, as
-- `content_generation_bump` does) once per statement that changed rows:
-- `changed_rows` is the transition table its triggers declare, empty for
-- an idempotent repeat (`ON CONFLICT DO NOTHING`, a delete of nothing),
-- which leaves cached public answers as they are.
CREATE FUNCTION content_generation_bump_if_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bumped BIGINT;
BEGIN
    IF EXISTS (SELECT 1 FROM changed_rows) THEN
        UPDATE content_generation SET value = value + 1 WHERE id = 1 RETURNING value INTO bumped;
        PERFORM pg_notify('plaza_content', bumped::text);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER post_reactions_generation_insert AFTER INSERT ON post_reactions
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION content_generation_bump_if_changed();
CREATE TRIGGER post_reactions_generation_delete AFTER DELETE ON post_reactions
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION content_generation_bump_if_changed();

-- The users a post's content mentions, written with its content (at most
-- 20, `position` their order of first appearance). Deleting a mentioned
-- user removes the row, which changes public answers: the generation moves.
CREATE TABLE post_mentions (
    post_id BIGINT NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    position BIGINT NOT NULL,
    PRIMARY KEY (post_id, user_id)
);
CREATE INDEX post_mentions_user ON post_mentions (user_id);

CREATE TRIGGER post_mentions_generation_delete AFTER DELETE ON post_mentions
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION content_generation_bump_if_changed();

-- Mentions show the mentioned user's current username: a new one changes
-- public answers too.
CREATE TRIGGER users_username_generation AFTER UPDATE OF username ON users
    FOR EACH ROW WHEN (OLD.username IS DISTINCT FROM NEW.username)
    EXECUTE FUNCTION content_generation_bump();
