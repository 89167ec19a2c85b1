-- An administrator's capabilities (their active permissions' names, through
-- their role or a direct grant, joined by ', ' in name order), read with
-- their session or admin token (`admin_principal::capabilities_sql`). A
-- function, so that the session statement's plan does not name the four
-- permission tables: PostgreSQL locks every table a cached plan names at
-- each execution, and written inline they took the session lookup, which
-- nearly every request makes, from 0.093 to 0.104-0.111 ms (pgbench), for
-- a lookup that only administrators' sessions run. PL/pgSQL, so it is never
-- inlined back. SQLite, which has no such cost, keeps it inline.
CREATE FUNCTION admin_capabilities(holder BIGINT, holder_role TEXT) RETURNS TEXT
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
        SELECT string_agg(p.name, ', ' ORDER BY p.name) FROM permissions p
        WHERE p.status = 'active'
          AND (p.id IN (SELECT rp.permission_id FROM role_permissions rp
                        JOIN roles r ON r.id = rp.role_id WHERE r.name = holder_role)
               OR p.id IN (SELECT up.permission_id FROM user_permissions up
                           WHERE up.user_id = holder))
    );
END $$;
