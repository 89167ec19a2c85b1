-- Uploaded images. The files live in the object store (a local folder or
-- S3) under `storage_key` and the keys of `variants` (a JSON array of
-- {name, key, mime_type, width, height, size}); the files are written
-- before this row, so a row always has its files, and `cleanup_uploads`
-- removes files no row names (a crash between the two).
CREATE TABLE uploads (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT REFERENCES users (id) ON DELETE SET NULL,
    storage_key TEXT NOT NULL UNIQUE,
    original_name TEXT NOT NULL,
    mime_type TEXT NOT NULL,
    size BIGINT NOT NULL,
    width BIGINT NOT NULL,
    height BIGINT NOT NULL,
    file_hash TEXT NOT NULL,
    variants TEXT NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL
);
CREATE INDEX uploads_user ON uploads (user_id, created_at);
