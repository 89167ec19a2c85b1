//! Reading a backup archive into staging folders: the manifest first,
//! checked against this install before anything else is read, then each
//! entry, whose path must be a plain relative name of a part a Plaza backup
//! holds (the database, a generated key, an upload file) and whose kind a
//! file or, for uploads, a folder. Each entry's bytes are checked before it
//! is written: against what the manifest states for its part (each part a
//! total) and against the free space left on the staging folder's
//! filesystem; so an archive cannot write more than it says, nor fill the
//! disk. A damaged stream, a duplicate, a missing database or keys other
//! than the manifest lists refuse the whole archive.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Component, Path, PathBuf};

use flate2::read::GzDecoder;
use plaza_domain::Backend;

use super::archive::{
    BackupError, FORMAT, FORMAT_VERSION, KEYS, MANIFEST_ENTRY, Manifest, POSTGRES_ENTRY,
    SQLITE_ENTRY, create_private_file, failed,
};
use crate::startup::create_private_dir;

/// A manifest is a few hundred bytes; a larger first entry is no manifest.
const MANIFEST_MAX_BYTES: u64 = 1 << 20;
/// A generated key is under 100 bytes; a larger one is no key.
const KEY_MAX_BYTES: u64 = 4096;

/// What the archive must match.
pub(super) struct Expected {
    pub(super) backend: Backend,
    pub(super) latest_schema: i64,
    /// Whether this install's upload store is a local folder.
    pub(super) local_store: bool,
    pub(super) store: String,
}

/// Where [`unpack`] writes each kind of entry.
pub(super) struct Targets {
    pub(super) database: PathBuf,
    pub(super) keys: PathBuf,
    pub(super) uploads: Option<PathBuf>,
}

impl Targets {
    /// The folders entries are written into.
    fn folders(&self) -> Vec<&Path> {
        let mut folders = vec![self.keys.as_path()];
        folders.extend(self.database.parent());
        folders.extend(self.uploads.as_deref());
        folders
    }
}

/// The free space of the filesystems the staging folders are on, taken as
/// entries are planned or written.
#[derive(Clone)]
struct FreeSpace {
    /// By filesystem (device number): the bytes still free.
    left: Vec<(u64, u64)>,
}

impl FreeSpace {
    #[cfg(unix)]
    fn of(folders: &[&Path]) -> io::Result<FreeSpace> {
        let mut left = Vec::new();
        for folder in folders {
            let device = device_of(folder)?;
            if !left.iter().any(|(known, _)| *known == device) {
                let stats = rustix::fs::statvfs(*folder)?;
                left.push((device, stats.f_bavail.saturating_mul(stats.f_frsize)));
            }
        }
        Ok(FreeSpace { left })
    }

    #[cfg(not(unix))]
    fn of(_folders: &[&Path]) -> io::Result<FreeSpace> {
        Ok(FreeSpace { left: Vec::new() })
    }

    /// Takes `bytes` from the filesystem of `folder`; fails saying what
    /// would not fit.
    fn take(&mut self, folder: &Path, bytes: u64, what: &str) -> Result<(), BackupError> {
        let Ok(device) = device_of(folder) else {
            return Ok(());
        };
        let Some((_, left)) = self.left.iter_mut().find(|(known, _)| *known == device) else {
            return Ok(());
        };
        if bytes > *left {
            return Err(BackupError::Refused(format!(
                "{what} does not fit: {bytes} bytes into {}, whose filesystem has {} bytes free \
                 for it. Free space there, or restore an archive that fits",
                folder.display(),
                *left
            )));
        }
        *left -= bytes;
        Ok(())
    }
}

#[cfg(unix)]
fn device_of(folder: &Path) -> io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(folder).map(|metadata| metadata.dev())
}

#[cfg(not(unix))]
fn device_of(_folder: &Path) -> io::Result<u64> {
    Ok(0)
}

/// What the entries read so far hold, against what the manifest states.
#[derive(Default)]
struct Written {
    keys: u64,
    uploads: u64,
}

/// What [`unpack`] read.
pub(super) struct Unpacked {
    pub(super) manifest: Manifest,
    pub(super) keys: Vec<String>,
    pub(super) upload_files: u64,
    pub(super) upload_bytes: u64,
}

pub(super) fn bad(error: impl std::fmt::Display) -> BackupError {
    BackupError::BadArchive(format!(
        "the archive is damaged or not a Plaza backup (.tar.gz): {error}"
    ))
}

/// Reads the whole archive into the staging folders, checking its
/// manifest against `expected` first and every entry's path and kind.
pub(super) fn unpack(
    archive: File,
    expected: &Expected,
    targets: &Targets,
) -> Result<Unpacked, BackupError> {
    let mut space = FreeSpace::of(&targets.folders())
        .map_err(failed("reading the free space of the staging folders"))?;
    let mut written = Written::default();
    let mut reader = tar::Archive::new(GzDecoder::new(BufReader::new(archive)));
    let mut manifest: Option<Manifest> = None;
    let mut database = false;
    let mut keys = Vec::new();
    let (mut upload_files, mut upload_bytes) = (0, 0);
    for entry in reader.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let path = entry.path().map_err(bad)?.into_owned();
        let kind = entry.header().entry_type();
        let Some(read) = &manifest else {
            if path != Path::new(MANIFEST_ENTRY) || !kind.is_file() {
                return Err(BackupError::BadArchive(format!(
                    "not a Plaza backup: its first entry is {}, not {MANIFEST_ENTRY}",
                    path.display()
                )));
            }
            let mut text = Vec::new();
            entry
                .by_ref()
                .take(MANIFEST_MAX_BYTES + 1)
                .read_to_end(&mut text)
                .map_err(bad)?;
            if text.len() as u64 > MANIFEST_MAX_BYTES {
                return Err(BackupError::BadArchive(format!(
                    "not a Plaza backup: its {MANIFEST_ENTRY} is over {MANIFEST_MAX_BYTES} bytes"
                )));
            }
            let parsed: Manifest = serde_json::from_slice(&text).map_err(|error| {
                BackupError::BadArchive(format!("its {MANIFEST_ENTRY} cannot be read: {error}"))
            })?;
            check_manifest(&parsed, expected)?;
            if let Some(sizes) = &parsed.sizes {
                let mut planned = space.clone();
                let database = targets.database.parent().unwrap_or(Path::new("."));
                planned.take(database, sizes.database, "the archive's database")?;
                planned.take(&targets.keys, sizes.keys, "the archive's keys")?;
                if let Some(uploads) = targets
                    .uploads
                    .as_deref()
                    .filter(|_| parsed.upload_store.files_included)
                {
                    planned.take(
                        uploads,
                        sizes.uploads,
                        "the archive's upload files together",
                    )?;
                }
            }
            manifest = Some(parsed);
            continue;
        };
        let parts = entry_parts(&path)?;
        let (destination, part) = match parts.as_slice() {
            [folder, name] if folder == "database" => {
                let wanted = match expected.backend {
                    Backend::Sqlite => SQLITE_ENTRY,
                    Backend::Postgres => POSTGRES_ENTRY,
                };
                if name != wanted || database {
                    return Err(unexpected(&path));
                }
                database = true;
                (targets.database.clone(), Part::Database)
            }
            [folder, name] if folder == "keys" && KEYS.contains(&name.as_str()) => {
                keys.push(name.clone());
                (targets.keys.join(name), Part::Key)
            }
            [folder, rest @ ..] if folder == "uploads" && !rest.is_empty() => {
                let Some(uploads) = targets
                    .uploads
                    .as_ref()
                    .filter(|_| read.upload_store.files_included)
                else {
                    return Err(unexpected(&path));
                };
                (
                    rest.iter()
                        .fold(uploads.clone(), |path, part| path.join(part)),
                    Part::Upload,
                )
            }
            _ => return Err(unexpected(&path)),
        };
        if kind.is_file() {
            let size = entry.size();
            check_size(read, part, size, &mut written, &path)?;
            let folder = destination.parent().unwrap_or(Path::new("."));
            space.take(folder, size, &format!("the archive's {}", path.display()))?;
        }
        match kind {
            tar::EntryType::Directory if part == Part::Upload => {
                create_private_dir(&destination)
                    .map_err(failed(format!("creating {}", destination.display())))?;
            }
            kind if kind.is_file() => {
                let written = write_entry(&mut entry, &destination).map_err(|error| {
                    if error.kind() == io::ErrorKind::AlreadyExists {
                        BackupError::BadArchive(format!(
                            "the archive holds {} twice",
                            path.display()
                        ))
                    } else if error.kind() == io::ErrorKind::UnexpectedEof
                        || error.kind() == io::ErrorKind::InvalidData
                        || error.kind() == io::ErrorKind::InvalidInput
                    {
                        bad(error)
                    } else {
                        BackupError::Failed(format!("writing {}: {error}", destination.display()))
                    }
                })?;
                if part == Part::Upload {
                    upload_files += 1;
                    upload_bytes += written;
                }
            }
            other => {
                return Err(BackupError::BadArchive(format!(
                    "the archive's entry {} is a {other:?}: a Plaza backup holds files and \
                     folders only",
                    path.display()
                )));
            }
        }
    }
    // The rest of the compressed stream, so its checksum is verified.
    io::copy(&mut reader.into_inner(), &mut io::sink()).map_err(bad)?;
    let Some(manifest) = manifest else {
        return Err(BackupError::BadArchive(
            "the archive is empty: not a Plaza backup".to_owned(),
        ));
    };
    if !database {
        return Err(BackupError::BadArchive(
            "the archive ends before its database: it is incomplete".to_owned(),
        ));
    }
    keys.sort();
    let mut listed = manifest.keys.clone();
    listed.sort();
    if keys != listed {
        return Err(BackupError::BadArchive(format!(
            "the archive holds the keys {keys:?}, its manifest lists {listed:?}"
        )));
    }
    Ok(Unpacked {
        manifest,
        keys,
        upload_files,
        upload_bytes,
    })
}

/// Refuses an entry of `size` bytes that would write more than the
/// manifest states for its part (a decompression bomb: a small archive
/// whose entries claim far more than it was written with), or a key larger
/// than any key. Archives without stated sizes are bounded by the free
/// space alone.
fn check_size(
    manifest: &Manifest,
    part: Part,
    size: u64,
    written: &mut Written,
    path: &Path,
) -> Result<(), BackupError> {
    if part == Part::Key && size > KEY_MAX_BYTES {
        return Err(BackupError::BadArchive(format!(
            "the archive's {} holds {size} bytes: no key is over {KEY_MAX_BYTES}",
            path.display()
        )));
    }
    let Some(sizes) = &manifest.sizes else {
        return Ok(());
    };
    let (total, stated, what) = match part {
        Part::Database => (size, sizes.database, "its database"),
        Part::Key => {
            written.keys = written.keys.saturating_add(size);
            (written.keys, sizes.keys, "its keys")
        }
        Part::Upload => {
            written.uploads = written.uploads.saturating_add(size);
            (written.uploads, sizes.uploads, "its upload files")
        }
    };
    if total > stated {
        return Err(BackupError::BadArchive(format!(
            "the archive holds more than its manifest states: with {} ({size} bytes), {what} \
             come to {total} bytes, over the {stated} stated. Nothing was put in place",
            path.display()
        )));
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Database,
    Key,
    Upload,
}

fn unexpected(path: &Path) -> BackupError {
    BackupError::BadArchive(format!(
        "the archive holds {}, which is not part of a Plaza backup",
        path.display()
    ))
}

/// The parts of an entry's path: plain names only (no root, no `..`, no
/// `.`), each valid UTF-8.
fn entry_parts(path: &Path) -> Result<Vec<String>, BackupError> {
    path.components()
        .map(|component| match component {
            Component::Normal(part) => part.to_str().map(str::to_owned),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()
        .filter(|parts| !parts.is_empty())
        .ok_or_else(|| {
            BackupError::BadArchive(format!(
                "the archive's entry {:?} is not a plain relative path",
                path.display()
            ))
        })
}

/// Copies one entry into a new file at `destination` (0600); answers its
/// bytes.
fn write_entry(entry: &mut impl Read, destination: &Path) -> io::Result<u64> {
    if let Some(parent) = destination.parent() {
        create_private_dir(parent)?;
    }
    let mut file = create_private_file(destination)?;
    let written = io::copy(entry, &mut file)?;
    file.sync_all()?;
    Ok(written)
}

fn check_manifest(manifest: &Manifest, expected: &Expected) -> Result<(), BackupError> {
    if manifest.format != FORMAT {
        return Err(BackupError::BadArchive(format!(
            "not a Plaza backup: its manifest's format is {:?}",
            manifest.format
        )));
    }
    if manifest.format_version > FORMAT_VERSION {
        return Err(BackupError::Refused(format!(
            "the archive is of format {}, newer than this Plaza ({}) reads: restore it with \
             Plaza {} or newer",
            manifest.format_version,
            env!("CARGO_PKG_VERSION"),
            manifest.plaza_version
        )));
    }
    if manifest.engine != expected.backend.name() {
        return Err(BackupError::Refused(format!(
            "the archive holds a {} database, but database_url names {}: restore it into the \
             engine it was taken from",
            manifest.engine,
            expected.backend.name()
        )));
    }
    if manifest.schema_version > expected.latest_schema {
        return Err(BackupError::Refused(format!(
            "the archive's schema version {} is newer than this Plaza's ({}): restore it with \
             Plaza {} or newer",
            manifest.schema_version, expected.latest_schema, manifest.plaza_version
        )));
    }
    if manifest.upload_store.files_included && !expected.local_store {
        return Err(BackupError::Refused(format!(
            "the archive holds the files of the local store {}, but storage_url names {}: \
             restore with a local store (storage_url unset or file://…), then move the files",
            manifest.upload_store.location, expected.store
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_paths_are_plain_relative_names() {
        assert_eq!(
            entry_parts(Path::new("uploads/a/b.png")).unwrap(),
            ["uploads", "a", "b.png"]
        );
        for refused in ["/etc/passwd", "uploads/../../x", "./x", ""] {
            assert!(
                matches!(
                    entry_parts(Path::new(refused)),
                    Err(BackupError::BadArchive(_))
                ),
                "{refused}"
            );
        }
    }
}
