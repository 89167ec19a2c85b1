//! Backup archives. `plaza backup`, the `backup_database` maintenance
//! action and the scheduled backup write one `.tar.gz` holding a
//! consistent copy of the database, the generated keys and the files of a
//! local upload store ([`write_backup`]); `plaza restore` fills an empty
//! data directory (and, on PostgreSQL, an empty database) from one
//! ([`restore`]).
//!
//! An archive holds `manifest.json` first, then `database/plaza.db` (an
//! SQLite copy made with `VACUUM INTO`) or `database/plaza.dump` (`pg_dump
//! --format=custom`, taken in the snapshot the manifest's counts were read
//! in), then `keys/jwt-secret`, `keys/analytics-salt`, `keys/totp-key`,
//! `keys/vapid-key` and `keys/webhook-key` when the data directory holds
//! them, then `uploads/<key>` for each file of a local
//! store. An S3 store's objects are not copied; the manifest names the
//! store. The manifest states each part's bytes, which bound what a
//! restore writes, and the fingerprints of the keys in force, which a
//! restore compares with the install's. What both directions share (the
//! manifest, the key fingerprints, the errors, running PostgreSQL's client
//! tools) is in `archive`.

mod archive;
mod restore;
mod unpack;
mod write;

pub use archive::{BackupError, Manifest};
pub use restore::{KeyComparison, RESTORE_MARKER, Restored, restore, unfinished_restore};
pub use write::{Written, write_backup};
