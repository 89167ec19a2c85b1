-- The front door's content side (DECISIONS.md "The front door (round 5)"):
-- the site's word filters, and posts and replies held for a moderator.
--
-- A word filter: a phrase (1-100 characters, compared after
-- `plaza_domain::phrases::normalize`), what it does (`block` refuses the
-- write, `hold` stores the post or reply pending, `flag` stores it
-- published and flagged), whether it matches whole words only, and the
-- kinds of text it applies to, space-separated (a subset of `post reply
-- username profile`). Ids are never reused, so the count of rows with the
-- highest id tells an instance whether its compiled filters are current.
CREATE TABLE word_filters (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    phrase TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('block', 'hold', 'flag')),
    whole_word INTEGER NOT NULL DEFAULT 1,
    applies_to TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    created_by BIGINT REFERENCES users (id) ON DELETE SET NULL
);

-- A held post is stored unpublished (so every public read, count and
-- index passes it by as it does a draft) with `held` set; a moderator's
-- approval publishes it. `review_reason` says why a post or reply entered
-- the moderation queue by itself (`new_account`, `word_filter:<phrase>`),
-- kept while it is held or flagged by a word filter.
ALTER TABLE posts ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
ALTER TABLE posts ADD COLUMN review_reason TEXT;
CREATE INDEX posts_held ON posts (created_at, id) WHERE held;
ALTER TABLE replies ADD COLUMN review_reason TEXT;

-- Set when a moderator approves one of the member's held posts or
-- replies: the new-account hold no longer applies to them.
ALTER TABLE users ADD COLUMN writes_approved INTEGER NOT NULL DEFAULT 0;
