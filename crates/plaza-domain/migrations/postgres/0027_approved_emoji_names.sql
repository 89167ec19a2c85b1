-- Approved custom emojis share one namespace: two users' approved emojis
-- never hold the same name, even when two moderators approve them at once
-- on two instances. An install where approved custom emojis already share
-- a name keeps the earliest approved of each name; the others wait for
-- review again.
UPDATE emojis SET is_approved = FALSE, approved_by = NULL, approved_at = NULL
WHERE is_custom AND is_approved AND EXISTS (
    SELECT 1 FROM emojis earlier
    WHERE earlier.is_custom AND earlier.is_approved AND earlier.name = emojis.name
      AND (earlier.approved_at < emojis.approved_at
           OR (earlier.approved_at = emojis.approved_at AND earlier.id < emojis.id))
);

CREATE UNIQUE INDEX emojis_approved_name ON emojis (name) WHERE is_custom AND is_approved;
