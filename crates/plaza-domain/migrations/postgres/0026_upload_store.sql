-- Which object store holds an upload's files: `file://<absolute folder>`
-- or `s3://<bucket>[/<prefix>]`, as `Storage::location` names it. An
-- instance sweeps only the records of its own store, and refuses to start
-- when the records name another store (unless `storage_moved` says the
-- files moved). Rows recorded before this column name no store (NULL):
-- which store holds them is unknown, so no sweep removes them and the
-- start-up check does not count them, until an instance started with
-- `storage_moved` claims every row for its store.
ALTER TABLE uploads ADD COLUMN store TEXT;
CREATE INDEX uploads_store ON uploads (store, id);
