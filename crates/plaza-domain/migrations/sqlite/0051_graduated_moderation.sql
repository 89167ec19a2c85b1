-- Graduated moderation (DECISIONS.md "Graduated moderation (round 5)").
--
-- The site's rules, in the order members read them. Reports and warnings
-- cite them by id; a rule removed later stays cited by its id.
CREATE TABLE site_rules (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    position BIGINT NOT NULL,
    title TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- A moderation action: one record per hide, delete, flag or lock of a
-- member's content, ban, silence or warning, written in the unit of work
-- of its effect, with its statement of reasons. A reversal is a record of
-- its own (`reverse`, naming the action it undoes in `reverses_id`);
-- records are never edited. `user_id` is the member affected (the
-- author, or the user acted on), `moderator_id` who acted (null when
-- automated or erased), `undo` what reversing needs (JSON: the deleted
-- post, the ban, the silence or the warning).
CREATE TABLE moderation_actions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    action TEXT NOT NULL CHECK (action IN ('hide', 'delete', 'flag', 'lock', 'ban', 'silence',
                                           'warning', 'reverse')),
    target_type TEXT NOT NULL CHECK (target_type IN ('post', 'reply', 'user')),
    target_id BIGINT NOT NULL,
    user_id BIGINT REFERENCES users (id) ON DELETE CASCADE,
    moderator_id BIGINT REFERENCES users (id) ON DELETE SET NULL,
    reason TEXT NOT NULL DEFAULT '',
    rule_ids TEXT NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    automated INTEGER NOT NULL DEFAULT 0,
    reverses_id BIGINT REFERENCES moderation_actions (id) ON DELETE CASCADE,
    undo TEXT
);
CREATE INDEX moderation_actions_user ON moderation_actions (user_id, created_at, id);
CREATE INDEX moderation_actions_created ON moderation_actions (created_at, id);
CREATE INDEX moderation_actions_target ON moderation_actions (target_type, target_id, created_at);
CREATE UNIQUE INDEX moderation_actions_one_reversal ON moderation_actions (reverses_id)
    WHERE reverses_id IS NOT NULL;

-- Warnings given to members; a warning withdrawn on appeal stops counting.
CREATE TABLE warnings (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    reason TEXT NOT NULL,
    rule_ids TEXT NOT NULL DEFAULT '[]',
    post_id BIGINT,
    reply_id BIGINT,
    created_at BIGINT NOT NULL,
    created_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
    withdrawn_at BIGINT
);
CREATE INDEX warnings_user ON warnings (user_id, created_at, id);

-- Silences, timed like bans: at most one in force per member; the expiry
-- job lifts the due ones (`lifted_by` null with a `lifted_at`: expired).
CREATE TABLE user_silences (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    silenced_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
    reason TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    lifted_at BIGINT,
    lifted_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
    lift_reason TEXT
);
CREATE INDEX user_silences_user ON user_silences (user_id, created_at);
CREATE UNIQUE INDEX user_silences_one_in_force ON user_silences (user_id) WHERE lifted_at IS NULL;
CREATE INDEX user_silences_in_force ON user_silences (expires_at) WHERE lifted_at IS NULL;

-- Appeals: one per moderation action, decided by someone other than who
-- took the action.
CREATE TABLE appeals (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    moderation_action_id BIGINT NOT NULL UNIQUE
        REFERENCES moderation_actions (id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    text TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'decided')),
    created_at BIGINT NOT NULL,
    decision TEXT CHECK (decision IN ('uphold', 'reverse')),
    decision_reason TEXT,
    decided_at BIGINT,
    decided_by BIGINT REFERENCES users (id) ON DELETE SET NULL
);
CREATE INDEX appeals_status ON appeals (status, created_at, id);

-- The mailed link a banned member appeals with: only its hash is kept; it
-- works until the appeal window closes, for that one action.
CREATE TABLE appeal_tokens (
    token_hash TEXT PRIMARY KEY,
    moderation_action_id BIGINT NOT NULL REFERENCES moderation_actions (id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

-- Reports on members, once per reporter and member; a moderator's
-- warning, silence or ban of the member resolves them.
CREATE TABLE user_reports (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    reporter_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    reason TEXT NOT NULL,
    category TEXT NOT NULL DEFAULT 'other'
        CHECK (category IN ('spam', 'harassment', 'illegal', 'rule_violation', 'other')),
    rule_ids TEXT NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL,
    resolved_at BIGINT,
    resolved_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
    UNIQUE (user_id, reporter_id)
);
CREATE INDEX user_reports_reporter ON user_reports (reporter_id);
CREATE INDEX user_reports_created ON user_reports (created_at);
CREATE INDEX user_reports_open ON user_reports (user_id) WHERE resolved_at IS NULL;

-- The rules a report on a post or reply cites.
ALTER TABLE post_reports ADD COLUMN rule_ids TEXT NOT NULL DEFAULT '[]';
ALTER TABLE reply_reports ADD COLUMN rule_ids TEXT NOT NULL DEFAULT '[]';
