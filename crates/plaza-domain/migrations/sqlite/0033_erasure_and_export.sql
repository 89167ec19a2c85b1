-- Erasing a user (DECISIONS.md "Accounts (round 4)", erasure) deletes their
-- upload records in its unit of work and lists every stored object of those
-- uploads here in the same transaction: the upload routes answer 404 for a
-- listed object at once, whether or not the store has deleted it yet. Right
-- after the commit the erasing instance deletes the objects and their rows;
-- what the store could not delete stays, and the job `erased_file_retry`
-- tries again at `next_attempt_at`, with a wait that doubles each attempt.
-- `store` names the object store as upload records do (`file://…`,
-- `s3://…`); an instance works only through the rows of its own store.
CREATE TABLE store_deletions (
    object_key TEXT PRIMARY KEY,
    store TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_error TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX store_deletions_due ON store_deletions (store, next_attempt_at);

-- A user's analytics events, for their export (read in pages by id) and
-- their erasure.
CREATE INDEX analytics_events_user ON analytics_events (user_id, id);
