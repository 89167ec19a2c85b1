-- Every bump of the content generation is announced on the channel
-- `plaza_content` (payload: the new generation), delivered to every
-- listening instance when the writing transaction commits, so an instance
-- can serve its cached public answers from memory until the next one
-- arrives (see docs/architecture.md, "Mechanisms behind the API").
CREATE OR REPLACE FUNCTION content_generation_bump() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bumped BIGINT;
BEGIN
    UPDATE content_generation SET value = value + 1 WHERE id = 1 RETURNING value INTO bumped;
    PERFORM pg_notify('plaza_content', bumped::text);
    RETURN NULL;
END $$;
