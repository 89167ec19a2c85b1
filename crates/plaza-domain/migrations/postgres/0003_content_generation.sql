-- Changes whenever any post is written, so caches of rendered lists and
-- searches can tell with one cheap read whether an entry is still current,
-- whichever process wrote (API, command line, another instance, plain SQL).
CREATE TABLE content_generation (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    value BIGINT NOT NULL
);
INSERT INTO content_generation (id, value) VALUES (1, 0);

CREATE FUNCTION content_generation_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE content_generation SET value = value + 1 WHERE id = 1;
    RETURN NULL;
END $$;

CREATE TRIGGER posts_generation AFTER INSERT OR UPDATE OR DELETE ON posts
    FOR EACH STATEMENT EXECUTE FUNCTION content_generation_bump();
