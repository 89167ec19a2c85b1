-- The audit trail: who changed what, from where, with the change itself as
-- before/after. Append-only: the code has no path that updates or deletes
-- an entry. An entry is written in the same transaction as its change, so
-- neither exists without the other. The actor's email is copied so the
-- entry still names them after their account is deleted.
CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at BIGINT NOT NULL,
    actor_id BIGINT REFERENCES users (id) ON DELETE SET NULL,
    actor_email TEXT,
    action TEXT NOT NULL,
    target_type TEXT NOT NULL,
    target_id TEXT,
    ip_address TEXT,
    user_agent TEXT,
    changes TEXT NOT NULL DEFAULT '{}',
    surface TEXT NOT NULL
);
CREATE INDEX audit_log_created_at ON audit_log (created_at);
CREATE INDEX audit_log_actor ON audit_log (actor_id, created_at);
CREATE INDEX audit_log_target ON audit_log (target_type, target_id, created_at);
