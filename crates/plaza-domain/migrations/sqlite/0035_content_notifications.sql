-- PostgreSQL's migration 0035 announces every bump of the content
-- generation to the instances listening on a channel. SQLite has one
-- process serving it, which learns of its own writes as each unit of work
-- commits (`Database::commits`), so this step changes nothing and is kept
-- to number the two trees alike.
SELECT 1;
