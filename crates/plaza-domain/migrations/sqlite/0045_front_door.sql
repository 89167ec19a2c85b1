-- The front door (DECISIONS.md "The front door"): the site settings an
-- administrator changes while the server runs, registration applications
-- and who invited whom, invites, email-domain blocks and IP blocks.
--
-- A user awaiting approval has the status `pending`. SQLite cannot alter a
-- CHECK constraint, so the users table's definition is rewritten in place
-- (the procedure of https://www.sqlite.org/lang_altertable.html#otheralter
-- for loosening a constraint: no stored row can break the wider CHECK);
-- `writable_schema = RESET` reloads the schema on this connection and the
-- table created after it bumps the schema version for the others.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
SET sql = replace(sql, 'CHECK (status IN (''active'', ''inactive'', ''banned''))',
                  'CHECK (status IN (''active'', ''inactive'', ''banned'', ''pending''))')
WHERE type = 'table' AND name = 'users';
PRAGMA writable_schema = RESET;

-- The one row of site settings. `registration_mode` is null until an
-- administrator sets it: until then the `signup` setting decides (open or
-- closed). `version` grows with every change to this row or to the IP
-- blocks; each instance reads it every second and reloads what changed.
CREATE TABLE site_settings (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    registration_mode TEXT CHECK (registration_mode IN ('open', 'approval', 'invite', 'closed')),
    registration_question TEXT,
    invites_by_members INTEGER NOT NULL DEFAULT 0,
    new_account_hold_count BIGINT NOT NULL DEFAULT 0
        CHECK (new_account_hold_count BETWEEN 0 AND 50),
    public_modlog INTEGER NOT NULL DEFAULT 0,
    version BIGINT NOT NULL DEFAULT 0,
    updated_at BIGINT,
    updated_by BIGINT REFERENCES users (id) ON DELETE SET NULL
);
INSERT INTO site_settings (id) VALUES (1);

-- What a sign-up in approval mode answered, and who invited a user (null
-- once the inviter's account is deleted, or without an invite).
ALTER TABLE users ADD COLUMN application TEXT;
ALTER TABLE users ADD COLUMN invited_by BIGINT REFERENCES users (id) ON DELETE SET NULL;
-- The registrations awaiting a decision, oldest first.
CREATE INDEX users_pending ON users (created_at, id) WHERE status = 'pending';

-- An invite: a code good for `max_uses` sign-ups until `expires_at`.
-- Withdrawing one deletes it.
CREATE TABLE invites (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    code TEXT NOT NULL UNIQUE,
    created_by BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    max_uses BIGINT NOT NULL CHECK (max_uses BETWEEN 1 AND 100),
    uses BIGINT NOT NULL DEFAULT 0,
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX invites_created_by ON invites (created_by, created_at, id);

-- A blocked email domain (lower case); its subdomains are blocked too.
CREATE TABLE email_domain_blocks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    domain TEXT NOT NULL UNIQUE,
    reason TEXT NOT NULL DEFAULT '',
    created_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
    created_at BIGINT NOT NULL
);

-- A blocked address range (`cidr` in its canonical form): `sign_up`
-- refuses sign-ups from it, `all` every request but the probes; until
-- `expires_at` when set.
CREATE TABLE ip_blocks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    cidr TEXT NOT NULL,
    severity TEXT NOT NULL CHECK (severity IN ('sign_up', 'all')),
    expires_at BIGINT,
    reason TEXT NOT NULL DEFAULT '',
    created_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX ip_blocks_created_at ON ip_blocks (created_at, id);
