-- The admin user lists find users by a part of their username or email.
-- Those substrings are indexed as trigrams: an FTS5 table over the rows
-- themselves (external content), kept in step by triggers. Its matches
-- fold case more widely than the lists' LIKE, so a list narrows to them
-- and still applies the LIKE. A search shorter than three characters has
-- no trigram, and one matching many users finds a page sooner in the
-- list's own order: both read the users through the LIKE alone.
CREATE VIRTUAL TABLE users_substring_fts USING fts5 (
    username, email,
    content = 'users', content_rowid = 'id',
    tokenize = 'trigram'
);
INSERT INTO users_substring_fts (users_substring_fts) VALUES ('rebuild');

CREATE TRIGGER users_substring_fts_insert AFTER INSERT ON users BEGIN
    INSERT INTO users_substring_fts (rowid, username, email) VALUES (NEW.id, NEW.username, NEW.email);
END;

CREATE TRIGGER users_substring_fts_delete AFTER DELETE ON users BEGIN
    INSERT INTO users_substring_fts (users_substring_fts, rowid, username, email)
        VALUES ('delete', OLD.id, OLD.username, OLD.email);
END;

CREATE TRIGGER users_substring_fts_update AFTER UPDATE OF username, email ON users BEGIN
    INSERT INTO users_substring_fts (users_substring_fts, rowid, username, email)
        VALUES ('delete', OLD.id, OLD.username, OLD.email);
    INSERT INTO users_substring_fts (rowid, username, email) VALUES (NEW.id, NEW.username, NEW.email);
END;
