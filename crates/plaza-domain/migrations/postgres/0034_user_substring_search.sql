-- The admin user lists find users by a part of their username or email
-- (`LOWER(username) LIKE '%…%' OR email LIKE '%…%'`): trigram indexes on
-- both expressions let the planner read only the matching rows. pg_trgm
-- ships with PostgreSQL and is a trusted extension: a database owner may
-- create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX users_username_trigram_search ON users USING GIN (LOWER(username) gin_trgm_ops);
CREATE INDEX users_email_trigram_search ON users USING GIN (email gin_trgm_ops);
