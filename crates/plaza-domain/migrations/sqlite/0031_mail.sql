-- One-time tokens mailed to a user's address: email verification (valid
-- 24 hours) and password reset (valid 1 hour). Only a SHA-256 of each token
-- is kept. Using a token deletes its row in the same statement, so a token
-- works once; `email` is the address it was sent to, and verifying checks
-- the user's address is still that one.
CREATE TABLE email_tokens (
    token_hash TEXT PRIMARY KEY,
    purpose TEXT NOT NULL CHECK (purpose IN ('verify_email', 'reset_password')),
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX email_tokens_user ON email_tokens (user_id, purpose);
CREATE INDEX email_tokens_expiry ON email_tokens (expires_at);

-- Mail on its way out, written in the transaction of the change that causes
-- it and sent by the job runner. A sender claims a row with a conditional
-- UPDATE that moves `next_attempt_at` to the end of its lease, so each
-- attempt happens on one instance and a crashed sender's mail is taken up
-- again when the lease ends. A delivered mail keeps its row (`sent`,
-- bodies cleared) and a mail given up on keeps everything (`failed`) until
-- the retention purge.
CREATE TABLE outgoing_mail (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    user_id BIGINT REFERENCES users (id) ON DELETE CASCADE,
    recipient TEXT NOT NULL,
    subject TEXT NOT NULL,
    body_text TEXT,
    body_html TEXT,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    claimed_by TEXT,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    finished_at BIGINT
);
CREATE INDEX outgoing_mail_due ON outgoing_mail (next_attempt_at) WHERE status = 'pending';
CREATE INDEX outgoing_mail_finished ON outgoing_mail (finished_at) WHERE status <> 'pending';
CREATE INDEX outgoing_mail_user ON outgoing_mail (user_id);
