-- The emoji catalog and custom emojis (SPEC.md "Emoji"). Unicode emojis are
-- loaded from the `emojis` crate on start (plaza-emoji) and refreshed when
-- the crate brings a new catalog (`emoji_catalog.fingerprint`); custom
-- emojis are uploaded by users and stay personal until a moderator
-- approves them. `version_rank` is the Emoji version as major * 100 +
-- minor, so a list for an OS compares integers; `search_text` is the
-- lowercase name, aliases and keywords for the list's `search`.
CREATE TABLE emoji_categories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    description TEXT NOT NULL,
    sort_order BIGINT NOT NULL
);

CREATE TABLE emojis (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    emoji_id TEXT NOT NULL UNIQUE,
    unicode_codepoint TEXT,
    unicode_char TEXT,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    category_id BIGINT NOT NULL REFERENCES emoji_categories (id),
    tags TEXT NOT NULL DEFAULT '[]',
    aliases TEXT NOT NULL DEFAULT '[]',
    keywords TEXT NOT NULL DEFAULT '[]',
    search_text TEXT NOT NULL,
    is_custom INTEGER NOT NULL,
    owner_id BIGINT REFERENCES users (id) ON DELETE CASCADE,
    upload_id BIGINT REFERENCES uploads (id) ON DELETE SET NULL,
    custom_image_url TEXT,
    usage_count BIGINT NOT NULL DEFAULT 0,
    version_min TEXT,
    version_rank BIGINT NOT NULL,
    is_approved INTEGER NOT NULL,
    approved_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
    approved_at BIGINT,
    sort_order BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX emojis_custom_name ON emojis (owner_id, name) WHERE is_custom;
CREATE INDEX emojis_listing ON emojis (is_custom, sort_order);
CREATE INDEX emojis_category ON emojis (category_id, sort_order);
CREATE INDEX emojis_popular ON emojis (usage_count);
CREATE INDEX emojis_pending ON emojis (is_custom, is_approved, created_at);

CREATE TABLE emoji_catalog (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    fingerprint TEXT NOT NULL,
    loaded_at BIGINT NOT NULL
);
