-- PostgreSQL's migration 0025 adds the function `admin_capabilities`, which
-- keeps the session statement's plan small there. SQLite has no stored
-- functions and no such cost: its session statement reads an
-- administrator's capabilities inline (`admin_principal::capabilities_sql`),
-- so this step changes nothing and is kept to number the two trees alike.
SELECT 1;
