-- Identity: roles, users (one role each), linked provider accounts, sessions,
-- capabilities granted to roles and to single users, revoked admin tokens and
-- sign-in throttling.
-- Timestamps are Unix milliseconds (BIGINT) on both engines. Flags are INTEGER
-- 0/1 here and BOOLEAN on PostgreSQL (sqlx's Any driver cannot read SQLite
-- BOOLEAN columns).

CREATE TABLE roles (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    rank INTEGER NOT NULL,
    assignable INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    email TEXT NOT NULL UNIQUE,
    email_verified_at BIGINT,
    username TEXT NOT NULL UNIQUE,
    name TEXT,
    image TEXT,
    bio TEXT NOT NULL DEFAULT '',
    location TEXT NOT NULL DEFAULT '',
    profile_public INTEGER NOT NULL DEFAULT 1,
    password_hash TEXT,
    role TEXT NOT NULL DEFAULT 'user' REFERENCES roles (name),
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive', 'banned')),
    admin_notes TEXT,
    login_count BIGINT NOT NULL DEFAULT 0,
    last_login_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX users_created_at ON users (created_at);
CREATE INDEX users_role ON users (role);

CREATE TABLE accounts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    provider_account_id TEXT NOT NULL,
    email TEXT,
    email_verified INTEGER NOT NULL DEFAULT 0,
    last_used_at BIGINT,
    created_at BIGINT NOT NULL,
    UNIQUE (provider, provider_account_id)
);
CREATE INDEX accounts_user_id ON accounts (user_id);

CREATE TABLE sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    token_hash TEXT NOT NULL UNIQUE,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    user_agent TEXT,
    ip_address TEXT
);
CREATE INDEX sessions_user_id ON sessions (user_id);
CREATE INDEX sessions_expires_at ON sessions (expires_at);

CREATE TABLE oauth_states (
    state_hash TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    pkce_verifier TEXT NOT NULL,
    callback_url TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE TABLE permissions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    category TEXT NOT NULL,
    is_inheritable INTEGER NOT NULL DEFAULT 0,
    risk_level TEXT NOT NULL DEFAULT 'low' CHECK (risk_level IN ('low', 'medium', 'high', 'critical')),
    dependencies TEXT NOT NULL DEFAULT '[]',
    metadata TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled', 'archived')),
    sort_order INTEGER NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE role_permissions (
    role_id BIGINT NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
    permission_id BIGINT NOT NULL REFERENCES permissions (id) ON DELETE CASCADE,
    PRIMARY KEY (role_id, permission_id)
);

CREATE TABLE user_permissions (
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    permission_id BIGINT NOT NULL REFERENCES permissions (id) ON DELETE CASCADE,
    granted_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
    granted_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, permission_id)
);

CREATE TABLE revoked_tokens (
    jti TEXT PRIMARY KEY,
    revoked_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE TABLE login_failures (
    throttle_key TEXT PRIMARY KEY,
    failures INTEGER NOT NULL,
    window_started_at BIGINT NOT NULL
);

INSERT INTO roles (name, display_name, description, rank, assignable) VALUES
    ('user', 'User', 'A member of the community', 10, 1),
    ('moderator', 'Moderator', 'Moderates posts and reports', 20, 1),
    ('admin', 'Administrator', 'Administers users, content and settings', 30, 1),
    ('super_admin', 'Super administrator', 'Everything; granted only from the command line or the database', 40, 0);

INSERT INTO permissions (name, display_name, description, category, risk_level, sort_order, created_at, updated_at) VALUES
    ('users:manage', 'Manage users', 'List, edit, ban and unban users', 'users', 'high', 10, 0, 0),
    ('posts:moderate', 'Moderate posts', 'Approve, hide, flag and delete posts', 'content', 'medium', 20, 0, 0),
    ('permissions:manage', 'Manage permissions', 'Create permissions and grant them', 'security', 'critical', 30, 0, 0),
    ('analytics:read', 'Read analytics', 'View the analytics dashboards', 'analytics', 'low', 40, 0, 0);

INSERT INTO role_permissions (role_id, permission_id)
    SELECT r.id, p.id FROM roles r, permissions p
    WHERE (r.name = 'moderator' AND p.name = 'posts:moderate')
       OR (r.name = 'admin' AND p.name IN ('users:manage', 'posts:moderate', 'analytics:read'))
       OR (r.name = 'super_admin');
