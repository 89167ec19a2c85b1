-- The default grants (DECISIONS.md "Default grants, kept by the migration";
-- the tests of `grants.rs` check the same table): `moderator` holds
-- `posts:moderate`; `admin` holds `users:manage`, `posts:moderate` and
-- `analytics:read`; `permissions:manage` is the super admin's alone. Migration 0001 seeded
-- them. From this version the analytics dashboard needs `analytics:read`,
-- which it did not before, so an install that lost that grant (or the
-- default `posts:moderate` ones) gets it back and keeps what its
-- administrators could do. `users:manage` and `permissions:manage` were
-- read from the grants already: what an install holds of them stays as it
-- is. Nothing is taken away.
INSERT INTO permissions (name, display_name, description, category, risk_level, sort_order, created_at, updated_at) VALUES
    ('posts:moderate', 'Moderate posts', 'Approve, hide, flag and delete posts', 'content', 'medium', 20, 0, 0),
    ('analytics:read', 'Read analytics', 'View the analytics dashboards', 'analytics', 'low', 40, 0, 0)
ON CONFLICT (name) DO NOTHING;

INSERT INTO role_permissions (role_id, permission_id)
    SELECT r.id, p.id FROM roles r, permissions p
    WHERE (r.name = 'moderator' AND p.name = 'posts:moderate')
       OR (r.name = 'admin' AND p.name IN ('posts:moderate', 'analytics:read'))
ON CONFLICT (role_id, permission_id) DO NOTHING;
