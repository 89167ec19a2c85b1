//! Backups Plaza restores from, through the real binary on both databases:
//! `plaza backup` beside a running server, `plaza restore` into a fresh
//! data directory (and PostgreSQL database) that `plaza serve` then serves
//! with the same users, sessions, posts, files and admin tokens; what a
//! restore refuses (a directory or database in use, a served SQLite
//! database or a PostgreSQL one another Plaza is connected to, a damaged
//! or foreign archive, one writing more than its manifest states or than
//! fits, keys other than the install's without `--force`); and the
//! scheduled backup.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{self, As, Backend, PASSWORD, Prepared, Schema, TestServer, call, member};
use crate::uploads::{Moto, borrowed, create_bucket, refused_start_of, s3_env};

on_both_databases!(
    a_restored_backup_serves_the_same_users_sessions_posts_files_and_tokens,
    an_install_that_is_not_empty_is_replaced_only_with_force,
    damaged_and_foreign_archives_are_refused_with_a_clear_error,
    a_backup_is_written_on_schedule,
    an_archive_writes_no_more_than_its_manifest_states_nor_than_fits,
    a_restore_shows_key_fingerprints_and_needs_force_when_they_differ,
    an_install_on_s3_is_backed_up_and_restored,
    a_killed_backups_working_copy_is_removed_by_the_next,
    an_unfinished_restore_keeps_the_install_from_serving_until_restored_again,
);

on_postgres!(
    a_restore_is_refused_while_another_plaza_uses_the_database,
    a_stopped_restore_stops_pg_restore_and_leaves_the_install_marked,
);

/// Whether `pg_dump` and `pg_restore` can run; a PostgreSQL test without
/// them says so and passes, unless `PLAZA_TEST_REQUIRE_TOOLS=1`.
fn postgres_tools_present(backend: Backend, test: &str) -> bool {
    if backend == Backend::Sqlite {
        return true;
    }
    let runs = |tool: &str| {
        std::process::Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|output| output.status.success())
    };
    if runs("pg_dump") && runs("pg_restore") {
        return true;
    }
    common::skip(
        test,
        "pg_dump and pg_restore (PostgreSQL client tools) are not on the PATH",
    );
    false
}

/// A server whose admin-token key is generated into its data directory,
/// as without `jwt_secret`, so a backup must carry it.
async fn server_with_generated_keys(backend: Backend, env: &[(&str, &str)]) -> TestServer {
    Prepared::starting_from(backend, Schema::Empty, "", env)
        .await
        .without("PLAZA_JWT_SECRET")
        .serve()
}

/// A data directory and database for a restore, with generated keys too.
async fn fresh_install(backend: Backend) -> Prepared {
    Prepared::starting_from(backend, Schema::Empty, "", &[])
        .await
        .without("PLAZA_JWT_SECRET")
}

fn text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs `plaza backup --output <folder>/<name>` with `server`'s settings
/// and answers the archive's path.
fn back_up(server: &TestServer, folder: &Path, name: &str) -> PathBuf {
    let archive = folder.join(name);
    let output = server.cli(&["backup", "--output", archive.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output));
    archive
}

fn restore(install: &Prepared, archive: &Path, force: bool) -> std::process::Output {
    let mut args = vec!["restore", "--input", archive.to_str().unwrap()];
    if force {
        args.push("--force");
    }
    install.cli(&args)
}

/// A PNG of `side` × `side` pixels, large enough for the minimum upload
/// size.
fn png(side: u32) -> Vec<u8> {
    let picture = image::RgbImage::from_fn(side, side, |x, y| {
        image::Rgb([
            (x % 251) as u8,
            (y % 241) as u8,
            ((x * 7 + y * 3) % 239) as u8,
        ])
    });
    let mut bytes = Vec::new();
    image::DynamicImage::ImageRgb8(picture)
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .expect("encode");
    bytes
}

/// Uploads an image as the user of `cookie`; answers the path it is
/// served at.
async fn upload(server: &TestServer, cookie: &str) -> String {
    let boundary = "plaza-backup-boundary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\n\
         Content-Type: image/png\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(&png(96));
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let response = server
        .client
        .post(server.url("/api/upload/image"))
        .header("cookie", cookie)
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
        .send()
        .await
        .expect("upload");
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.expect("JSON");
    answer["file"]["url"].as_str().expect("url").to_owned()
}

async fn served_bytes(server: &TestServer, path: &str) -> Vec<u8> {
    let response = server.get(path).await;
    assert_eq!(response.status(), 200, "GET {path}");
    response.bytes().await.expect("body").to_vec()
}

async fn audit_actions(server: &TestServer, token: &str, action: &str) -> Vec<Value> {
    let path = format!("/api/v1/admin/audit-logs?action={action}&limit=100");
    let answer = server.send(As::Token(token), "GET", &path, None).await;
    assert_eq!(answer.status(), 200);
    let body: Value = answer.json().await.expect("JSON");
    body["data"].as_array().expect("entries").clone()
}

async fn a_restored_backup_serves_the_same_users_sessions_posts_files_and_tokens(backend: Backend) {
    use std::os::unix::fs::PermissionsExt;

    if !postgres_tools_present(backend, "a_restored_backup_serves_the_same_users") {
        return;
    }
    let source = server_with_generated_keys(backend, &[]).await;
    source.create_user("admin@example.com", PASSWORD, "admin");
    let token = source.mint("admin@example.com", "admin:read");
    let (_, cookie) = member(&source, "writer@example.com", "user").await;
    let post = common::post(
        &source,
        &cookie,
        json!({"title": "Kept", "content": "A post that survives a restore", "published": true}),
    )
    .await;
    let file = upload(&source, &cookie).await;
    let bytes = served_bytes(&source, &file).await;

    let folder = tempfile::tempdir().unwrap();
    let archive = back_up(&source, folder.path(), "plaza.tar.gz");
    assert_eq!(
        std::fs::metadata(&archive).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(
        std::fs::read_dir(folder.path()).unwrap().count() == 1,
        "the backup left only its archive"
    );
    let manifest = manifest_of(&archive);
    assert_eq!(manifest["format"], "plaza-backup", "{manifest}");
    assert_eq!(manifest["engine"], backend_name(backend));
    assert_eq!(manifest["counts"]["users"], 2, "{manifest}");
    assert_eq!(manifest["counts"]["posts"], 1, "{manifest}");
    assert_eq!(manifest["counts"]["uploads"], 1, "{manifest}");
    assert_eq!(manifest["uploadStore"]["filesIncluded"], true);

    let install = fresh_install(backend).await;
    let restored = restore(&install, &archive, false);
    assert!(restored.status.success(), "{}", text(&restored));
    let store = format!(
        "file://{}",
        std::fs::canonicalize(install.data_dir.path().join("uploads"))
            .unwrap()
            .display()
    );
    assert!(
        text(&restored).contains(&format!("now name {store}")),
        "{}",
        text(&restored)
    );
    drop(source);
    let server = install.serve();

    server.sign_in("writer@example.com", PASSWORD).await;
    let session: Value = server.get_json_as("/api/auth/session", &cookie).await;
    assert_eq!(session["user"]["email"], "writer@example.com", "{session}");
    let (status, posts) = call(&server, "GET", "/api/posts", None, None).await;
    assert_eq!(status, 200, "{posts}");
    assert!(posts.to_string().contains(&post), "{posts}");
    assert_eq!(served_bytes(&server, &file).await, bytes);
    let restores = audit_actions(&server, &token, "system.restore").await;
    assert_eq!(restores.len(), 1, "{restores:?}");
    assert_eq!(
        restores[0]["changes"]["uploadStore"]["after"],
        store.as_str()
    );
}

fn backend_name(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    }
}

/// The manifest of the archive at `path`, its first entry.
fn manifest_of(path: &Path) -> Value {
    let file = std::fs::File::open(path).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut entries = archive.entries().unwrap();
    let mut first = entries.next().expect("an entry").unwrap();
    assert_eq!(first.path().unwrap().to_str(), Some("manifest.json"));
    let mut text = String::new();
    first.read_to_string(&mut text).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The names of what a folder holds, sorted; SQLite's `-wal` and `-shm`
/// files, which come and go with its connections, aside.
fn listing(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| !name.ends_with("-wal") && !name.ends_with("-shm"))
        .collect();
    names.sort();
    names
}

async fn an_install_that_is_not_empty_is_replaced_only_with_force(backend: Backend) {
    if !postgres_tools_present(
        backend,
        "an_install_that_is_not_empty_is_replaced_only_with_force",
    ) {
        return;
    }
    let source = server_with_generated_keys(backend, &[]).await;
    source.create_user("kept@example.com", PASSWORD, "user");
    let folder = tempfile::tempdir().unwrap();
    let archive = back_up(&source, folder.path(), "plaza.tar.gz");

    // An install that served: its database, keys and uploads folder.
    let other = server_with_generated_keys(backend, &[]).await;
    other.create_user("replaced@example.com", PASSWORD, "user");
    let install = other.stop();
    let before = listing(install.data_dir.path());
    let refused = restore(&install, &archive, false);
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(
        text(&refused).contains("is not empty") && text(&refused).contains("--force"),
        "{}",
        text(&refused)
    );
    assert_eq!(listing(install.data_dir.path()), before);

    let replaced = restore(&install, &archive, true);
    assert!(replaced.status.success(), "{}", text(&replaced));
    assert_eq!(listing(install.data_dir.path()), before);
    let server = install.serve();
    server.sign_in("kept@example.com", PASSWORD).await;
    assert_eq!(
        server
            .try_sign_in("replaced@example.com", PASSWORD)
            .await
            .status(),
        401
    );
    if backend == Backend::Postgres {
        // An empty data directory beside a database that holds tables (no
        // longer served: a served one is refused before, see
        // a_restore_is_refused_while_another_plaza_uses_the_database).
        let stopped = server.stop();
        let database_in_use = Prepared::starting_from(
            backend,
            Schema::Empty,
            "",
            &[("PLAZA_DATABASE_URL", stopped.database_url.as_str())],
        )
        .await;
        let refused = restore(&database_in_use, &archive, false);
        assert!(!refused.status.success(), "{}", text(&refused));
        assert!(
            text(&refused).contains("(it holds tables)"),
            "{}",
            text(&refused)
        );
    }
}

on_postgres!(a_postgres_backup_without_pg_dump_says_what_is_missing);

async fn a_postgres_backup_without_pg_dump_says_what_is_missing() {
    let server = TestServer::start(Backend::Postgres).await;
    let folder = tempfile::tempdir().unwrap();
    let archive = folder.path().join("plaza.tar.gz");
    let output = server.cli_with_env(
        &[("PATH", "/nonexistent")],
        &["backup", "--output", archive.to_str().unwrap()],
    );
    assert!(!output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains("pg_dump is not installed on this machine (not on the PATH)"),
        "{}",
        text(&output)
    );
    assert_eq!(
        listing(folder.path()).len(),
        0,
        "the failed backup left files"
    );
}

/// A served SQLite database is never restored over, with `--force` too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_is_refused_while_a_server_serves_the_sqlite_database() {
    let server = TestServer::start(Backend::Sqlite).await;
    server.create_user("still@example.com", PASSWORD, "user");
    let folder = tempfile::tempdir().unwrap();
    let archive = back_up(&server, folder.path(), "plaza.tar.gz");
    let before = listing(server.data_dir.path());
    let output = server.cli(&["restore", "--input", archive.to_str().unwrap(), "--force"]);
    assert!(!output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains(&format!("(pid {}) serves the database", server.pid())),
        "{}",
        text(&output)
    );
    assert_eq!(listing(server.data_dir.path()), before);
    server.sign_in("still@example.com", PASSWORD).await;
}

/// Rewrites the archive at `from` into `to`, its manifest first, with
/// `change` applied to the entries that follow: (path, kind, bytes).
fn rewrite_archive(
    from: &Path,
    to: &Path,
    change: impl FnOnce(&mut Vec<(Vec<u8>, tar::EntryType, Vec<u8>)>),
) {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(from).unwrap(),
    ));
    let mut entries = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path_bytes().into_owned();
        let kind = entry.header().entry_type();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        entries.push((path, kind, bytes));
    }
    change(&mut entries);
    let encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(to).unwrap(),
        flate2::Compression::fast(),
    );
    let mut builder = tar::Builder::new(encoder);
    for (path, kind, bytes) in entries {
        let mut header = tar::Header::new_gnu();
        // The name is written as it stands, `..` and all, as a hostile
        // archive would hold it.
        header.as_gnu_mut().unwrap().name[..path.len()].copy_from_slice(&path);
        header.set_entry_type(kind);
        header.set_size(bytes.len() as u64);
        header.set_mode(0o600);
        if kind == tar::EntryType::Symlink {
            header.set_link_name("/etc/passwd").unwrap();
        }
        header.set_cksum();
        builder.append(&header, bytes.as_slice()).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap();
}

async fn damaged_and_foreign_archives_are_refused_with_a_clear_error(backend: Backend) {
    if !postgres_tools_present(backend, "damaged_and_foreign_archives_are_refused") {
        return;
    }
    let source = server_with_generated_keys(backend, &[]).await;
    let (_, cookie) = member(&source, "writer@example.com", "user").await;
    upload(&source, &cookie).await;
    let folder = tempfile::tempdir().unwrap();
    let archive = back_up(&source, folder.path(), "plaza.tar.gz");
    let whole = std::fs::read(&archive).unwrap();
    let path = |name: &str| folder.path().join(name);

    std::fs::write(path("truncated.tar.gz"), &whole[..whole.len() * 2 / 3]).unwrap();
    std::fs::write(path("garbage.tar.gz"), b"not an archive at all").unwrap();
    rewrite_archive(&archive, &path("foreign.tar.gz"), |entries| {
        entries.remove(0);
    });
    let upload_entry = |entries: &Vec<(Vec<u8>, tar::EntryType, Vec<u8>)>| {
        entries
            .iter()
            .position(|(name, _, _)| name.starts_with(b"uploads/"))
            .expect("an upload in the archive")
    };
    rewrite_archive(&archive, &path("escaping.tar.gz"), |entries| {
        let at = upload_entry(entries);
        entries[at].0 = b"uploads/../../escaped".to_vec();
    });
    rewrite_archive(&archive, &path("absolute.tar.gz"), |entries| {
        let at = upload_entry(entries);
        entries[at].0 = b"/tmp/plaza-absolute-entry".to_vec();
    });
    rewrite_archive(&archive, &path("symlink.tar.gz"), |entries| {
        let at = upload_entry(entries);
        entries[at].1 = tar::EntryType::Symlink;
        entries[at].2.clear();
    });
    rewrite_archive(&archive, &path("nodatabase.tar.gz"), |entries| {
        entries.retain(|(name, _, _)| !name.starts_with(b"database/"));
    });
    let cases = [
        ("truncated.tar.gz", "damaged or not a Plaza backup"),
        ("garbage.tar.gz", "damaged or not a Plaza backup"),
        ("foreign.tar.gz", "its first entry is database/"),
        ("escaping.tar.gz", "is not a plain relative path"),
        ("absolute.tar.gz", "is not a plain relative path"),
        ("symlink.tar.gz", "files and folders only"),
        ("nodatabase.tar.gz", "ends before its database"),
    ];
    let install = fresh_install(backend).await;
    let mut untouched = vec!["plaza.toml".to_owned(), "uploads".to_owned()];
    if backend == Backend::Sqlite {
        untouched.push("plaza.db.lock".to_owned());
    }
    untouched.sort();
    for (name, expected) in cases {
        let output = restore(&install, &path(name), false);
        let said = text(&output);
        assert!(!output.status.success(), "{name}: {said}");
        assert!(said.contains(expected), "{name}: {said}");
        assert!(!said.contains("panicked"), "{name}: {said}");
        assert_eq!(
            listing(install.data_dir.path()),
            untouched,
            "{name} left files behind"
        );
        assert_eq!(listing(&install.data_dir.path().join("uploads")).len(), 0);
    }
    assert!(!folder.path().join("escaped").exists());
    assert!(!Path::new("/tmp/plaza-absolute-entry").exists());
}

async fn a_backup_is_written_on_schedule(backend: Backend) {
    if !postgres_tools_present(backend, "a_backup_is_written_on_schedule") {
        return;
    }
    let server = TestServer::start_with(backend, &[("PLAZA_BACKUP_INTERVAL_HOURS", "24")]).await;
    server.wait_for_log("scheduled backup written");
    let backups = listing(&server.data_dir.path().join("backups"));
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert!(
        backups[0].starts_with("plaza-") && backups[0].ends_with(".tar.gz"),
        "{backups:?}"
    );
    let manifest = manifest_of(&server.data_dir.path().join("backups").join(&backups[0]));
    assert_eq!(manifest["engine"], backend_name(backend));

    // A failed run is a warning: here the backups folder cannot be made.
    let failing = Prepared::starting_from(
        backend,
        Schema::Empty,
        "",
        &[("PLAZA_BACKUP_INTERVAL_HOURS", "24")],
    )
    .await;
    std::fs::write(failing.data_dir.path().join("backups"), "in the way").unwrap();
    let failing = failing.serve();
    failing.wait_for_log("the scheduled backup failed");
    let logs = failing.logs();
    let line = logs
        .lines()
        .find(|line| line.contains("the scheduled backup failed"))
        .unwrap();
    assert!(line.contains("WARN"), "{line}");
}

/// The contents of `folder` a failed restore into a fresh install leaves.
fn untouched(backend: Backend) -> Vec<String> {
    let mut names = vec!["plaza.toml".to_owned(), "uploads".to_owned()];
    if backend == Backend::Sqlite {
        names.push("plaza.db.lock".to_owned());
    }
    names.sort();
    names
}

async fn an_archive_writes_no_more_than_its_manifest_states_nor_than_fits(backend: Backend) {
    if !postgres_tools_present(
        backend,
        "an_archive_writes_no_more_than_its_manifest_states",
    ) {
        return;
    }
    let source = server_with_generated_keys(backend, &[]).await;
    let (_, cookie) = member(&source, "writer@example.com", "user").await;
    upload(&source, &cookie).await;
    let folder = tempfile::tempdir().unwrap();
    let archive = back_up(&source, folder.path(), "plaza.tar.gz");
    let manifest = manifest_of(&archive);
    let sizes = &manifest["sizes"];
    assert!(
        sizes["database"].as_u64().unwrap() > 0
            && sizes["keys"].as_u64().unwrap() > 0
            && sizes["uploads"].as_u64().unwrap() > 0,
        "{manifest}"
    );
    assert_eq!(
        manifest["keyFingerprints"].as_object().unwrap().len(),
        5,
        "{manifest}"
    );
    let path = |name: &str| folder.path().join(name);

    // 64 MiB of zeros compress to about 64 KiB: a small archive that
    // would write far more than it was written with.
    rewrite_archive(&archive, &path("bomb.tar.gz"), |entries| {
        entries.push((
            b"uploads/zz/bomb".to_vec(),
            tar::EntryType::Regular,
            vec![0; 64 << 20],
        ));
    });
    assert!(std::fs::metadata(path("bomb.tar.gz")).unwrap().len() < 1 << 20);
    rewrite_archive(&archive, &path("database.tar.gz"), |entries| {
        let at = entries
            .iter()
            .position(|(name, _, _)| name.starts_with(b"database/"))
            .unwrap();
        entries[at].2.extend(std::iter::repeat_n(0, 8 << 20));
    });
    rewrite_archive(&archive, &path("huge.tar.gz"), |entries| {
        let mut manifest: Value = serde_json::from_slice(&entries[0].2).unwrap();
        manifest["sizes"]["uploads"] = json!(1_u64 << 60);
        entries[0].2 = serde_json::to_vec(&manifest).unwrap();
    });
    let cases = [
        ("bomb.tar.gz", "more than its manifest states"),
        ("database.tar.gz", "more than its manifest states"),
        ("huge.tar.gz", "does not fit"),
    ];
    let install = fresh_install(backend).await;
    for (name, expected) in cases {
        let output = restore(&install, &path(name), false);
        let said = text(&output);
        assert!(!output.status.success(), "{name}: {said}");
        assert!(said.contains(expected), "{name}: {said}");
        assert_eq!(
            listing(install.data_dir.path()),
            untouched(backend),
            "{name} left files behind"
        );
        assert_eq!(listing(&install.data_dir.path().join("uploads")).len(), 0);
    }
    let restored = restore(&install, &archive, false);
    assert!(restored.status.success(), "{}", text(&restored));
}

async fn a_restore_shows_key_fingerprints_and_needs_force_when_they_differ(backend: Backend) {
    if !postgres_tools_present(backend, "a_restore_shows_key_fingerprints") {
        return;
    }
    let source = server_with_generated_keys(backend, &[]).await;
    source.create_user("kept@example.com", PASSWORD, "user");
    let folder = tempfile::tempdir().unwrap();
    let archive = back_up(&source, folder.path(), "plaza.tar.gz");
    let manifest = manifest_of(&archive);
    let totp = manifest["keyFingerprints"]["totp-key"]
        .as_str()
        .unwrap()
        .to_owned();

    // An empty install without keys takes the archive's: nothing differs.
    let install = fresh_install(backend).await;
    let restored = restore(&install, &archive, false);
    let said = text(&restored);
    assert!(restored.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "key totp-key: archive {totp}, this install none, in force after the restore {totp}"
        )),
        "{said}"
    );
    assert!(!said.contains("DIFFERS"), "{said}");

    // An install whose settings name another two-factor key.
    let other_key = "another two-factor key, at least 32 characters long";
    let install =
        Prepared::starting_from(backend, Schema::Empty, "", &[("PLAZA_TOTP_KEY", other_key)])
            .await
            .without("PLAZA_JWT_SECRET");
    let refused = restore(&install, &archive, false);
    let said = text(&refused);
    assert!(!refused.status.success(), "{said}");
    assert!(
        said.contains("key totp-key: archive")
            && said.contains("(its setting)")
            && said.contains("DIFFERS")
            && said.contains("--force"),
        "{said}"
    );
    assert_eq!(listing(install.data_dir.path()), untouched(backend));
    let forced = restore(&install, &archive, true);
    let said = text(&forced);
    assert!(forced.status.success(), "{said}");
    assert!(said.contains("DIFFERS"), "{said}");
    let server = install.serve();
    server.sign_in("kept@example.com", PASSWORD).await;
}

async fn a_restore_is_refused_while_another_plaza_uses_the_database() {
    if !postgres_tools_present(
        Backend::Postgres,
        "a_restore_is_refused_while_another_plaza",
    ) {
        return;
    }
    let server = server_with_generated_keys(Backend::Postgres, &[]).await;
    server.create_user("still@example.com", PASSWORD, "user");
    let folder = tempfile::tempdir().unwrap();
    let archive = back_up(&server, folder.path(), "plaza.tar.gz");
    let output = server.cli(&["restore", "--input", archive.to_str().unwrap(), "--force"]);
    let said = text(&output);
    assert!(!output.status.success(), "{said}");
    assert!(
        said.contains("another Plaza is connected to the database") && said.contains("\"plaza\""),
        "{said}"
    );
    // The schema was left alone: the server still serves.
    server.sign_in("still@example.com", PASSWORD).await;

    let install = server.stop();
    let restored = restore(&install, &archive, true);
    assert!(restored.status.success(), "{}", text(&restored));
}

/// With `storage_url` on S3 the command line opens an HTTPS-capable
/// client too: `plaza backup` and `plaza restore` work there (they once
/// panicked for want of a TLS crypto provider), the archive says the
/// files stay in the bucket, and the restored install serves them.
async fn an_install_on_s3_is_backed_up_and_restored(backend: Backend) {
    const TEST: &str = "an_install_on_s3_is_backed_up_and_restored";
    if !postgres_tools_present(backend, TEST) {
        return;
    }
    let Some(moto) = Moto::start() else {
        common::skip(TEST, "python3 -m moto.server is not installed");
        return;
    };
    let endpoint = format!("http://127.0.0.1:{}", moto.port);
    create_bucket(&endpoint);
    let env = s3_env(&endpoint, "10");
    let source = server_with_generated_keys(backend, &borrowed(&env)).await;
    let (_, cookie) = member(&source, "writer@example.com", "user").await;
    let file = upload(&source, &cookie).await;
    let bytes = served_bytes(&source, &file).await;

    let folder = tempfile::tempdir().unwrap();
    let archive = back_up(&source, folder.path(), "plaza.tar.gz");
    let manifest = manifest_of(&archive);
    assert_eq!(
        manifest["uploadStore"]["filesIncluded"], false,
        "{manifest}"
    );
    assert_eq!(manifest["counts"]["uploads"], 1, "{manifest}");
    drop(source);

    let install = Prepared::starting_from(backend, Schema::Empty, "", &borrowed(&env))
        .await
        .without("PLAZA_JWT_SECRET");
    let restored = restore(&install, &archive, false);
    assert!(restored.status.success(), "{}", text(&restored));
    let server = install.serve();
    server.sign_in("writer@example.com", PASSWORD).await;
    assert_eq!(served_bytes(&server, &file).await, bytes);
}

/// A backup killed mid-way leaves its working folder (a copy of the
/// database) behind: the next backup into the same folder removes it,
/// and leaves the folder of a backup whose process still runs.
async fn a_killed_backups_working_copy_is_removed_by_the_next(backend: Backend) {
    if !postgres_tools_present(
        backend,
        "a_killed_backups_working_copy_is_removed_by_the_next",
    ) {
        return;
    }
    let source = server_with_generated_keys(backend, &[]).await;
    let folder = tempfile::tempdir().unwrap();
    // No process has a pid this large (above Linux's pid_max).
    let abandoned = folder.path().join(".plaza-backup-999999999-Xy12ab");
    std::fs::create_dir(&abandoned).unwrap();
    std::fs::write(abandoned.join("plaza.db"), b"a copy of the database").unwrap();
    let running = folder
        .path()
        .join(format!(".plaza-backup-{}-Zz34cd", std::process::id()));
    std::fs::create_dir(&running).unwrap();
    back_up(&source, folder.path(), "plaza.tar.gz");
    assert!(!abandoned.exists(), "{:?}", listing(folder.path()));
    assert!(running.exists(), "a running backup's folder stays");
}

/// The marker a restore leaves when it is killed while putting files in
/// place, as `plaza restore` writes it.
const RESTORE_MARKER: &str = "restore-in-progress";

/// A restore that began and did not finish leaves the install marked: the
/// server (and every command but restore) refuses to start on it, saying
/// what happened and what to do, and a restore run to its end clears it.
async fn an_unfinished_restore_keeps_the_install_from_serving_until_restored_again(
    backend: Backend,
) {
    if !postgres_tools_present(backend, "an_unfinished_restore_keeps_the_install") {
        return;
    }
    let source = server_with_generated_keys(backend, &[]).await;
    source.create_user("kept@example.com", PASSWORD, "user");
    let folder = tempfile::tempdir().unwrap();
    let archive = back_up(&source, folder.path(), "plaza.tar.gz");
    drop(source);
    let install = fresh_install(backend).await;
    let marker = install.data_dir.path().join(RESTORE_MARKER);
    std::fs::write(
        &marker,
        "a restore of plaza.tar.gz (plaza restore, pid 4242) began at 2026-11-29T00:00:00Z\n",
    )
    .unwrap();

    let mut serve = install.command();
    serve.arg("serve");
    let (status, stderr) = refused_start_of(serve);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a restore of plaza.tar.gz (plaza restore, pid 4242)")
            && stderr.contains("did not finish")
            && stderr.contains("plaza restore --force")
            && stderr.contains(&marker.display().to_string()),
        "{stderr}"
    );
    let create = install.cli(&[
        "user",
        "create",
        "--email",
        "x@example.com",
        "--password",
        PASSWORD,
    ]);
    assert_eq!(create.status.code(), Some(2), "{}", text(&create));

    let restored = restore(&install, &archive, true);
    assert!(restored.status.success(), "{}", text(&restored));
    assert!(!marker.exists(), "a finished restore removes the marker");
    let server = install.serve();
    server.sign_in("kept@example.com", PASSWORD).await;
}

/// `plaza restore` stopped while `pg_restore` runs stops `pg_restore` too
/// (none goes on alone, unaudited), says so, and leaves the install marked
/// as not restored.
async fn a_stopped_restore_stops_pg_restore_and_leaves_the_install_marked() {
    use std::os::unix::fs::PermissionsExt;

    let backend = Backend::Postgres;
    if !postgres_tools_present(backend, "a_stopped_restore_stops_pg_restore") {
        return;
    }
    let source = server_with_generated_keys(backend, &[]).await;
    let folder = tempfile::tempdir().unwrap();
    let archive = back_up(&source, folder.path(), "plaza.tar.gz");
    drop(source);
    // A pg_restore that lists the dump and then runs until it is killed.
    let tools = tempfile::tempdir().unwrap();
    let started = tools.path().join("pg_restore.pid");
    let fake = tools.path().join("pg_restore");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --list ] && exit 0; done\n\
             echo $$ > {}\nexec sleep 600\n",
            started.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let install = fresh_install(backend).await;
    let path = format!(
        "{}:{}",
        tools.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let child = install
        .command()
        .env("PATH", path)
        .args(["restore", "--input", archive.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let pg_restore = loop {
        if let Ok(pid) = std::fs::read_to_string(&started)
            && let Ok(pid) = pid.trim().parse::<i32>()
        {
            break pid;
        }
        assert!(std::time::Instant::now() < deadline, "pg_restore never ran");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let signal = |pid: u32, name: &str| {
        std::process::Command::new("kill")
            .args([name, &pid.to_string()])
            .status()
            .is_ok_and(|status| status.success())
    };
    assert!(signal(child.id(), "-TERM"));
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("stopped (SIGTERM): the restore stopped")
            && stderr.contains("did not finish"),
        "{stderr}"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while signal(pg_restore as u32, "-0") {
        assert!(
            std::time::Instant::now() < deadline,
            "pg_restore ({pg_restore}) runs on after the restore stopped"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(install.data_dir.path().join(RESTORE_MARKER).exists());
    let mut serve = install.command();
    serve.arg("serve");
    let (status, stderr) = refused_start_of(serve);
    assert_eq!(status.code(), Some(2), "{stderr}");
}
