-- Changes whenever any post is written, so caches of rendered lists and
-- searches can tell with one cheap read whether an entry is still current,
-- whichever process wrote (API, command line, another instance, plain SQL).
CREATE TABLE content_generation (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    value BIGINT NOT NULL
);
INSERT INTO content_generation (id, value) VALUES (1, 0);

CREATE TRIGGER posts_generation_insert AFTER INSERT ON posts BEGIN
    UPDATE content_generation SET value = value + 1 WHERE id = 1;
END;

CREATE TRIGGER posts_generation_update AFTER UPDATE ON posts BEGIN
    UPDATE content_generation SET value = value + 1 WHERE id = 1;
END;

CREATE TRIGGER posts_generation_delete AFTER DELETE ON posts BEGIN
    UPDATE content_generation SET value = value + 1 WHERE id = 1;
END;
