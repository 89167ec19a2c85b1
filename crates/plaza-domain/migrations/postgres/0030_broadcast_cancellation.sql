-- An admin withdraws a scheduled broadcast by setting `cancelled_at`; a
-- cancelled broadcast is never delivered. Cancelling and delivering are
-- both conditional UPDATEs of the broadcast's row (each requires the
-- other's column to be NULL), so when they race exactly one of them wins.
ALTER TABLE alerts ADD COLUMN cancelled_at BIGINT;

-- Scheduled broadcasts still to deliver, by due time: cancelled ones leave
-- the index, so the delivery job never reads them again.
DROP INDEX alerts_due;
CREATE INDEX alerts_due ON alerts (deliver_at) WHERE delivered_at IS NULL AND cancelled_at IS NULL;

-- The admins' list of broadcasts, newest first.
CREATE INDEX alerts_broadcasts ON alerts (created_at, id) WHERE source = 'broadcast';
