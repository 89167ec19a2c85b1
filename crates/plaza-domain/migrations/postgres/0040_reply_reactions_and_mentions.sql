-- Reactions and mentions on replies (DECISIONS.md "Conversations (round
-- 5)"): the tables and triggers of 0039, for replies. A reply deleted into
-- a placeholder (no author, no content) keeps neither its reactions nor its
-- mentions.
CREATE TABLE reply_reactions (
    reply_id BIGINT NOT NULL REFERENCES replies (id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    emoji TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (reply_id, user_id, emoji)
);
CREATE INDEX reply_reactions_who ON reply_reactions (reply_id, emoji, created_at, user_id);
CREATE INDEX reply_reactions_user ON reply_reactions (user_id, created_at, reply_id);

CREATE TABLE reply_reaction_counts (
    reply_id BIGINT NOT NULL REFERENCES replies (id) ON DELETE CASCADE,
    emoji TEXT NOT NULL,
    total BIGINT NOT NULL,
    first_reacted_at BIGINT NOT NULL,
    PRIMARY KEY (reply_id, emoji)
);

-- As `post_reactions_count` (0039): exact under concurrency.
CREATE FUNCTION reply_reactions_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO reply_reaction_counts (reply_id, emoji, total, first_reacted_at)
        VALUES (NEW.reply_id, NEW.emoji, 1, NEW.created_at)
        ON CONFLICT (reply_id, emoji) DO UPDATE SET total = reply_reaction_counts.total + 1;
    ELSE
        UPDATE reply_reaction_counts SET total = total - 1
        WHERE reply_id = OLD.reply_id AND emoji = OLD.emoji;
        DELETE FROM reply_reaction_counts
        WHERE reply_id = OLD.reply_id AND emoji = OLD.emoji AND total <= 0;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER reply_reactions_count AFTER INSERT OR DELETE ON reply_reactions
    FOR EACH ROW EXECUTE FUNCTION reply_reactions_count();

CREATE TRIGGER reply_reactions_generation_insert AFTER INSERT ON reply_reactions
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION content_generation_bump_if_changed();
CREATE TRIGGER reply_reactions_generation_delete AFTER DELETE ON reply_reactions
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION content_generation_bump_if_changed();

CREATE TABLE reply_mentions (
    reply_id BIGINT NOT NULL REFERENCES replies (id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    position BIGINT NOT NULL,
    PRIMARY KEY (reply_id, user_id)
);
CREATE INDEX reply_mentions_user ON reply_mentions (user_id);

CREATE TRIGGER reply_mentions_generation_delete AFTER DELETE ON reply_mentions
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION content_generation_bump_if_changed();

CREATE FUNCTION replies_placeholder_clears_reactions_and_mentions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM reply_reactions WHERE reply_id = NEW.id;
    DELETE FROM reply_mentions WHERE reply_id = NEW.id;
    RETURN NULL;
END $$;

CREATE TRIGGER replies_placeholder_clears_reactions_and_mentions
    AFTER UPDATE OF status ON replies
    FOR EACH ROW WHEN (NEW.status = 'deleted')
    EXECUTE FUNCTION replies_placeholder_clears_reactions_and_mentions();
