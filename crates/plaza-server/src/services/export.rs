//! A user's data export (DECISIONS.md "Accounts (round 4)"): a ZIP archive
//! written while it is sent. Rows are read a page at a time and files
//! copied from the store chunk by chunk into the answer's body through a
//! small pipe, whose fullness holds the writer back while the client reads
//! slowly; so an export holds about one page and one pipe of memory
//! whatever its size. A few exports run at once per instance
//! (`export_max_concurrent`), and one user holds at most one of them; each
//! ends when its client hangs up (the next write into the pipe fails), when
//! its client reads nothing for `export_idle_secs` (a write into the full
//! pipe waits that long), when the server stops, or after
//! `export_timeout_secs`. An export cut off ends its body with an error,
//! so the client sees a failed download, never a short archive.

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use async_zip::base::write::ZipFileWriter;
use async_zip::{Compression, ZipDateTimeBuilder, ZipEntryBuilder};
use axum::body::Body;
use futures_util::future::BoxFuture;
use futures_util::{AsyncWriteExt, StreamExt};
use plaza_domain::alerts::Reader;
use plaza_domain::engagement::ItemKind;
use plaza_domain::reactions::OwnReaction;
use plaza_domain::reports::ReportTarget;
use plaza_domain::time::{from_millis, now_millis, rfc3339};
use plaza_domain::uploads::Upload;
use plaza_domain::users::User;
use plaza_domain::{Database, DomainError};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncWrite, DuplexStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;
use tokio_util::compat::Compat;
use tokio_util::sync::CancellationToken;

use crate::services::storage::Storage;
use crate::settings::StorageSettings;

/// Bytes the pipe between the archive writer and the body holds, and the
/// most one body chunk carries.
const PIPE_BYTES: usize = 64 * 1024;
/// Rows read per statement.
const PAGE: i64 = 200;

/// The exports of this instance: their slots, the users who hold one, and
/// the signal that ends them when the server stops.
pub struct Exports {
    slots: Arc<Semaphore>,
    exporting: Arc<Mutex<HashSet<i64>>>,
    stop: CancellationToken,
    timeout: Duration,
    idle: Duration,
}

/// Why an export was not started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The caller has an export in progress on this instance already.
    Exporting,
    /// Every slot of the instance is taken.
    Full,
}

/// What one export holds until it ends: a slot of the instance and its
/// caller's place among those exporting.
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    _caller: Caller,
}

/// A caller's place among those exporting, given up when dropped.
struct Caller {
    user_id: i64,
    exporting: Arc<Mutex<HashSet<i64>>>,
}

impl Drop for Caller {
    fn drop(&mut self) {
        self.exporting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.user_id);
    }
}

impl Exports {
    pub fn new(settings: &StorageSettings) -> Exports {
        Exports {
            slots: Arc::new(Semaphore::new(settings.export_max_concurrent)),
            exporting: Arc::new(Mutex::new(HashSet::new())),
            stop: CancellationToken::new(),
            timeout: Duration::from_secs(settings.export_timeout_secs),
            idle: Duration::from_secs(settings.export_idle_secs),
        }
    }

    /// A slot for one export started by `caller_id`, held until it ends;
    /// refused while that caller has one in progress, or when every slot
    /// is taken.
    pub fn slot(&self, caller_id: i64) -> Result<Slot, Refusal> {
        let mut exporting = self
            .exporting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if exporting.contains(&caller_id) {
            return Err(Refusal::Exporting);
        }
        let permit = self
            .slots
            .clone()
            .try_acquire_owned()
            .map_err(|_| Refusal::Full)?;
        exporting.insert(caller_id);
        Ok(Slot {
            _permit: permit,
            _caller: Caller {
                user_id: caller_id,
                exporting: self.exporting.clone(),
            },
        })
    }

    /// Ends every export in progress (at shutdown).
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// The body of `user`'s export, read from `source` and written by a task
    /// of its own that holds `slot` until it ends.
    pub fn body(&self, source: Source, user: User, slot: Slot) -> Body {
        let (pipe_in, pipe_out) = tokio::io::duplex(PIPE_BYTES);
        let pipe_in = IdleLimit::new(pipe_in, self.idle);
        let (finished, ended) = tokio::sync::oneshot::channel();
        let (stop, timeout) = (self.stop.clone(), self.timeout);
        tokio::spawn(async move {
            let user_id = user.id();
            let outcome = tokio::select! {
                written = write_archive(&source, &user, pipe_in) => written,
                () = stop.cancelled() => Err("the server is stopping".to_owned()),
                () = tokio::time::sleep(timeout) => {
                    Err("it took longer than export_timeout_secs".to_owned())
                }
            };
            match &outcome {
                Ok(()) => tracing::info!(user_id, "data export sent"),
                Err(error) => tracing::info!(user_id, %error, "data export cut off"),
            }
            // Free before the body ends: a client that read the whole archive
            // may start its next export at once.
            drop(slot);
            let _ = finished.send(outcome.is_ok());
        });
        // The pipe ends when the writer is done or gone; only a writer that
        // finished ends the body cleanly.
        let ending = futures_util::stream::once(async move {
            match ended.await {
                Ok(true) => None,
                _ => Some(Err(std::io::Error::other("the export was cut off"))),
            }
        })
        .filter_map(std::future::ready);
        Body::from_stream(
            tokio_util::io::ReaderStream::with_capacity(pipe_out, PIPE_BYTES).chain(ending),
        )
    }
}

/// The writing end of the pipe, failing a write that has waited `idle` for
/// room: the body is not read, so the client reads nothing.
struct IdleLimit {
    pipe: DuplexStream,
    idle: Duration,
    /// Armed while a write waits for room.
    waiting: Option<Pin<Box<Sleep>>>,
}

impl IdleLimit {
    fn new(pipe: DuplexStream, idle: Duration) -> Self {
        IdleLimit {
            pipe,
            idle,
            waiting: None,
        }
    }

    /// `poll` on the pipe, or an error once it has been pending for `idle`.
    fn limit<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: impl FnOnce(Pin<&mut DuplexStream>, &mut Context<'_>) -> Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        if let Poll::Ready(done) = poll(Pin::new(&mut self.pipe), cx) {
            self.waiting = None;
            return Poll::Ready(done);
        }
        let idle = self.idle;
        let waiting = self
            .waiting
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
        ready!(waiting.as_mut().poll(cx));
        self.waiting = None;
        Poll::Ready(Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("the client read nothing for {} s", idle.as_secs()),
        )))
    }
}

impl AsyncWrite for IdleLimit {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.get_mut()
            .limit(cx, |pipe, cx| pipe.poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.get_mut().limit(cx, |pipe, cx| pipe.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.get_mut().limit(cx, |pipe, cx| pipe.poll_shutdown(cx))
    }
}

/// The archive's file name: `plaza-export-<username>-<date>.zip`
/// (usernames hold only `a-z 0-9 _ - .`).
pub fn file_name(user: &User) -> String {
    let today = from_millis(now_millis()).date();
    format!(
        "plaza-export-{}-{:04}{:02}{:02}.zip",
        user.row.username,
        today.year(),
        u8::from(today.month()),
        today.day()
    )
}

/// Where an export reads from: the database and the upload store.
pub struct Source {
    pub db: Database,
    pub storage: Storage,
}

type Archive = ZipFileWriter<Compat<IdleLimit>>;

/// Why writing stopped, for the log.
type Failure = String;

async fn write_archive(source: &Source, user: &User, pipe: IdleLimit) -> Result<(), Failure> {
    let mut zip = ZipFileWriter::with_tokio(pipe);
    write_profile(source, user, &mut zip).await?;
    write_posts(&source.db, user, &mut zip).await?;
    write_replies(&source.db, user, &mut zip).await?;
    write_reactions(&source.db, user, &mut zip).await?;
    write_reports(&source.db, user, &mut zip).await?;
    write_alerts(&source.db, user, &mut zip).await?;
    write_events(&source.db, user, &mut zip).await?;
    write_sessions(&source.db, user, &mut zip).await?;
    write_uploads(source, user, &mut zip).await?;
    let mut pipe = zip.close().await.map_err(zip_failure)?.into_inner();
    tokio::io::AsyncWriteExt::shutdown(&mut pipe)
        .await
        .map_err(|error| error.to_string())
}

fn zip_failure(error: async_zip::error::ZipError) -> Failure {
    format!("writing the archive: {error}")
}

fn database_failure(error: DomainError) -> Failure {
    format!("reading the database: {error}")
}

/// An entry named `name`, modified at `millis`.
fn entry(name: &str, compression: Compression, millis: i64) -> ZipEntryBuilder {
    let at = from_millis(millis);
    let date = ZipDateTimeBuilder::new()
        .year(at.year())
        .month(u32::from(u8::from(at.month())))
        .day(u32::from(at.day()))
        .hour(u32::from(at.hour()))
        .minute(u32::from(at.minute()))
        .second(u32::from(at.second()))
        .build();
    ZipEntryBuilder::new(name.to_owned().into(), compression)
        .last_modification_date(date)
        .unix_permissions(0o644)
}

/// A JSON array written into an entry one item at a time.
struct JsonArray<'a> {
    entry: async_zip::base::write::EntryStreamWriter<'a, Compat<IdleLimit>>,
    empty: bool,
}

impl<'a> JsonArray<'a> {
    async fn open(zip: &'a mut Archive, name: &str) -> Result<JsonArray<'a>, Failure> {
        let mut entry = zip
            .write_entry_stream(entry(name, Compression::Deflate, now_millis()))
            .await
            .map_err(zip_failure)?;
        entry.write_all(b"[").await.map_err(write_failure)?;
        Ok(JsonArray { entry, empty: true })
    }

    async fn push(&mut self, item: &impl Serialize) -> Result<(), Failure> {
        let mut line = if self.empty {
            b"\n".to_vec()
        } else {
            b",\n".to_vec()
        };
        serde_json::to_writer(&mut line, item).map_err(|error| error.to_string())?;
        self.empty = false;
        self.entry.write_all(&line).await.map_err(write_failure)
    }

    async fn close(mut self) -> Result<(), Failure> {
        self.entry
            .write_all(b"\n]\n")
            .await
            .map_err(write_failure)?;
        self.entry.close().await.map_err(zip_failure)
    }
}

fn write_failure(error: std::io::Error) -> Failure {
    format!("sending the archive: {error}")
}

async fn write_profile(source: &Source, user: &User, zip: &mut Archive) -> Result<(), Failure> {
    let row = &user.row;
    let accounts = source
        .db
        .accounts_of_user(user.id())
        .await
        .map_err(database_failure)?;
    let profile = json!({
        "exportedAt": rfc3339(now_millis()),
        "user": {
            "id": row.id.to_string(),
            "username": row.username,
            "name": row.name,
            "email": row.email,
            "emailVerified": row.email_verified_at.map(rfc3339),
            "image": row.image,
            "bio": row.bio,
            "location": row.location,
            "profilePublic": row.profile_public.0,
            "role": user.role.as_str(),
            "status": user.status.as_str(),
            "createdAt": rfc3339(row.created_at),
            "updatedAt": rfc3339(row.updated_at),
            "lastLogin": row.last_login_at.map(rfc3339),
            "loginCount": row.login_count,
        },
        "linkedAccounts": accounts.iter().map(|account| json!({
            "provider": account.provider,
            "email": account.email,
            "linkedAt": rfc3339(account.created_at),
            "lastUsedAt": account.last_used_at.map(rfc3339),
        })).collect::<Vec<Value>>(),
    });
    let mut text = serde_json::to_vec_pretty(&profile).map_err(|error| error.to_string())?;
    text.push(b'\n');
    let mut entry = zip
        .write_entry_stream(entry("profile.json", Compression::Deflate, now_millis()))
        .await
        .map_err(zip_failure)?;
    entry.write_all(&text).await.map_err(write_failure)?;
    entry.close().await.map_err(zip_failure)
}

/// The rows of one query, read a page of [`PAGE`] at a time in the order
/// of their cursor: `fetch` reads the page after a cursor (the default
/// cursor for the first page), `cursor` is the cursor after a row, and a
/// page shorter than [`PAGE`] is the last.
struct Pages<'a, R, C> {
    fetch: Fetch<'a, R, C>,
    cursor: fn(&R) -> C,
    /// Where the next page starts; `None` once the last one was read.
    after: Option<C>,
}

/// Reads the page after a cursor.
type Fetch<'a, R, C> = Box<dyn Fn(C) -> BoxFuture<'a, Result<Vec<R>, DomainError>> + Send + 'a>;

impl<'a, R, C: Default> Pages<'a, R, C> {
    fn new<Reading>(fetch: impl Fn(C) -> Reading + Send + 'a, cursor: fn(&R) -> C) -> Self
    where
        Reading: Future<Output = Result<Vec<R>, DomainError>> + Send + 'a,
    {
        Pages {
            fetch: Box::new(move |after| Box::pin(fetch(after))),
            cursor,
            after: Some(C::default()),
        }
    }

    /// The next page, or `None` after the last.
    async fn next(&mut self) -> Result<Option<Vec<R>>, Failure> {
        let Some(after) = self.after.take() else {
            return Ok(None);
        };
        let page = (self.fetch)(after).await.map_err(database_failure)?;
        self.after = match page.last() {
            Some(last) if page.len() as i64 == PAGE => Some((self.cursor)(last)),
            _ => None,
        };
        Ok(Some(page))
    }
}

impl JsonArray<'_> {
    /// Pushes `item` of every row of `pages`.
    async fn push_rows<R, C: Default>(
        &mut self,
        mut pages: Pages<'_, R, C>,
        item: impl Fn(&R) -> Value,
    ) -> Result<(), Failure> {
        while let Some(page) = pages.next().await? {
            for row in &page {
                self.push(&item(row)).await?;
            }
        }
        Ok(())
    }
}

/// The entry `name`: a JSON array of `item` of every row of `pages`.
async fn write_array<R, C: Default>(
    zip: &mut Archive,
    name: &str,
    pages: Pages<'_, R, C>,
    item: impl Fn(&R) -> Value,
) -> Result<(), Failure> {
    let mut array = JsonArray::open(zip, name).await?;
    array.push_rows(pages, item).await?;
    array.close().await
}

/// `posts.json`: every post of the user (drafts and hidden ones too),
/// oldest first.
async fn write_posts(db: &Database, user: &User, zip: &mut Archive) -> Result<(), Failure> {
    let id = user.id();
    let posts = Pages::new(
        move |after| db.posts_of_author(id, after, PAGE),
        |post| Some((post.created_at, post.id)),
    );
    write_array(zip, "posts.json", posts, |post| {
        json!({
            "id": post.id.to_string(),
            "title": post.title,
            "content": post.content,
            "tags": post.tags,
            "published": post.published,
            "status": post.status().as_str(),
            "createdAt": rfc3339(post.created_at),
            "updatedAt": rfc3339(post.updated_at),
        })
    })
    .await
}

/// `reactions.json`: every reaction of the user, on posts then on
/// replies, each oldest first.
async fn write_reactions(db: &Database, user: &User, zip: &mut Archive) -> Result<(), Failure> {
    let id = user.id();
    let mut array = JsonArray::open(zip, "reactions.json").await?;
    for kind in [ItemKind::Post, ItemKind::Reply] {
        let reactions = Pages::new(
            move |after: Option<OwnReaction>| async move {
                db.reactions_of_user(kind, id, after.as_ref(), PAGE).await
            },
            |reaction| Some(reaction.clone()),
        );
        array
            .push_rows(reactions, |reaction| {
                json!({
                    "postId": reaction.post_id.to_string(),
                    "replyId": reaction.reply_id.map(|id| id.to_string()),
                    "emoji": reaction.emoji,
                    "createdAt": rfc3339(reaction.created_at),
                })
            })
            .await?;
    }
    array.close().await
}

/// `replies.json`: every reply of the user (held ones too), oldest first.
async fn write_replies(db: &Database, user: &User, zip: &mut Archive) -> Result<(), Failure> {
    let id = user.id();
    let replies = Pages::new(
        move |after| db.replies_of_author(id, after, PAGE),
        |reply| reply.id,
    );
    write_array(zip, "replies.json", replies, |reply| {
        json!({
            "id": reply.id.to_string(),
            "postId": reply.post_id.to_string(),
            "parentId": reply.parent_id.map(|id| id.to_string()),
            "content": reply.content,
            "status": reply.status.as_str(),
            "createdAt": rfc3339(reply.created_at),
            "updatedAt": rfc3339(reply.updated_at),
            "editedAt": reply.edited_at.map(rfc3339),
        })
    })
    .await
}

/// `reports.json`: the reports the user filed, on posts, then on replies,
/// then on members.
async fn write_reports(db: &Database, user: &User, zip: &mut Archive) -> Result<(), Failure> {
    let id = user.id();
    let mut array = JsonArray::open(zip, "reports.json").await?;
    for target in [ReportTarget::Post, ReportTarget::Reply, ReportTarget::User] {
        let target_field = match target {
            ReportTarget::Post => "postId",
            ReportTarget::Reply => "replyId",
            ReportTarget::User => "userId",
        };
        let reports = Pages::new(
            move |after| db.reports_by(target, id, after, PAGE),
            |report| report.id,
        );
        array
            .push_rows(reports, |report| {
                // Who resolved it is another user's: left out.
                let mut item = json!({
                    "id": report.id.to_string(),
                    "reason": report.reason,
                    "category": report.category.as_str(),
                    "createdAt": rfc3339(report.created_at),
                    "resolvedAt": report.resolved_at.map(rfc3339),
                });
                item[target_field] = json!(report.target_id.to_string());
                item
            })
            .await?;
    }
    array.close().await
}

/// `alerts.json`: every alert delivered to the user (their own and the
/// broadcasts for them), dismissed or not, in the order of delivery.
async fn write_alerts(db: &Database, user: &User, zip: &mut Archive) -> Result<(), Failure> {
    let reader = Reader {
        user_id: user.id(),
        role: user.role,
        created_at: user.row.created_at,
    };
    let alerts = Pages::new(
        move |after| db.delivered_alerts_of(reader, after, PAGE),
        |alert| Some((alert.delivered_at, alert.id)),
    );
    write_array(zip, "alerts.json", alerts, |alert| {
        json!({
            "id": alert.id.to_string(),
            "source": alert.source,
            "type": alert.alert_type,
            "title": alert.title,
            "message": alert.message,
            "deliveredAt": rfc3339(alert.delivered_at),
            "dismissedAt": alert.dismissed_at.map(rfc3339),
        })
    })
    .await
}

/// `analytics.json`: the user's analytics events; data that is not JSON
/// is kept as its text.
async fn write_events(db: &Database, user: &User, zip: &mut Archive) -> Result<(), Failure> {
    let id = user.id();
    let events = Pages::new(
        move |after| db.events_of_user(id, after, PAGE),
        |event| event.id,
    );
    write_array(zip, "analytics.json", events, |event| {
        let data: Value = serde_json::from_str(&event.event_data)
            .unwrap_or(Value::String(event.event_data.clone()));
        json!({
            "eventId": event.event_id,
            "eventType": event.event_type,
            "eventData": data,
            "path": event.path,
            "sessionId": event.session_key,
            "durationMs": event.duration_ms,
            "clickX": event.click_x,
            "clickY": event.click_y,
            "deviceType": event.device_type,
            "country": event.country,
            "isVpn": event.is_vpn.0,
            "timestamp": rfc3339(event.occurred_at),
            "receivedAt": rfc3339(event.received_at),
        })
    })
    .await
}

/// `sessions.json`: the user's stored sessions, without their tokens.
async fn write_sessions(db: &Database, user: &User, zip: &mut Archive) -> Result<(), Failure> {
    let id = user.id();
    let sessions = Pages::new(
        move |after| db.stored_sessions_of_user(id, after, PAGE),
        |session| session.id,
    );
    write_array(zip, "sessions.json", sessions, |session| {
        json!({
            "id": session.id.to_string(),
            "createdAt": rfc3339(session.created_at),
            "lastSeenAt": rfc3339(session.last_seen_at),
            "expiresAt": rfc3339(session.expires_at),
            "ipAddress": session.ip_address,
            "userAgent": session.user_agent,
        })
    })
    .await
}

/// Every upload's stored original under `uploads/`, copied chunk by chunk,
/// then `uploads.json` describing them (a file the store lost is left out
/// and its record says so).
async fn write_uploads(source: &Source, user: &User, zip: &mut Archive) -> Result<(), Failure> {
    let (db, storage, id) = (&source.db, &source.storage, user.id());
    let uploads = || {
        Pages::new(
            move |after| db.uploads_of_user(id, after, PAGE),
            |upload: &Upload| Some((upload.created_at, upload.id)),
        )
    };
    let mut missing = HashSet::new();
    let mut last_copied = None;
    let mut pages = uploads();
    while let Some(page) = pages.next().await? {
        for upload in &page {
            last_copied = Some((upload.created_at, upload.id));
            let key = &upload.storage_key;
            let Some(mut chunks) = storage
                .read_chunks(key)
                .await
                .map_err(|error| format!("reading {key}: {error}"))?
            else {
                tracing::warn!(%key, "an upload's file is missing from the store; left out of an export");
                missing.insert(upload.id);
                continue;
            };
            let name = format!("uploads/{key}");
            let mut entry = zip
                .write_entry_stream(entry(&name, Compression::Stored, upload.created_at))
                .await
                .map_err(zip_failure)?;
            while let Some(chunk) = chunks
                .next()
                .await
                .map_err(|error| format!("reading {key}: {error}"))?
            {
                entry.write_all(&chunk).await.map_err(write_failure)?;
            }
            entry.close().await.map_err(zip_failure)?;
        }
    }
    let mut array = JsonArray::open(zip, "uploads.json").await?;
    let mut pages = uploads();
    while let Some(page) = pages.next().await? {
        for upload in &page {
            // Uploads made since the files were copied wait for the next export.
            if Some((upload.created_at, upload.id)) > last_copied {
                break;
            }
            let file =
                (!missing.contains(&upload.id)).then(|| format!("uploads/{}", upload.storage_key));
            array
                .push(&json!({
                    "file": file,
                    "originalName": upload.original_name,
                    "mimeType": upload.mime_type,
                    "size": upload.size,
                    "width": upload.width,
                    "height": upload.height,
                    "sha256": upload.file_hash,
                    "uploadedAt": rfc3339(upload.created_at),
                }))
                .await?;
        }
    }
    array.close().await
}
