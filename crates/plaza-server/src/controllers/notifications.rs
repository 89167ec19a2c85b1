//! Notifications (DECISIONS.md "Notifications (round 5)"): the signed-in
//! member's list, newest first by an opaque keyset cursor, marking read,
//! the unread count, preferences per type and channel, the one-click
//! unsubscribe of notification mails and the page their body links to (no
//! session: the link's token names the member and types), and Web Push:
//! the VAPID key and the member's subscriptions. New notifications also
//! arrive on `GET /api/alerts/stream`.

use std::collections::BTreeMap;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use plaza_domain::between::Sight;
use plaza_domain::notifications::{
    self, Channels, Cursor, EmailChoice, Kind, MAX_MARKED, MAX_PAGE, Marked, NewSubscription,
    Notification, NotificationQuery, PreferenceChanges,
};
use plaza_domain::time::now_millis;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;

use crate::auth::CurrentUser;
use crate::controllers::params::{Problems, boolean};
use crate::controllers::reading::reading_of;
use crate::http::error::AppError;
use crate::http::error::schema::GeneralError;
use crate::http::extract::{AppJson, AppQuery, IdPath};
use crate::http::pages::{self, UnsubscribePage};
use crate::services::notifications::push::subscription_keys;
use crate::services::notifications::{NotificationItem, mail};
use crate::services::reader_relations::Reading;
use crate::state::AppState;

/// Notifications on a page when none is asked for.
const DEFAULT_PAGE: i64 = 50;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(list_notifications))
        .routes(crate::documented_routes!(mark_read))
        .routes(crate::documented_routes!(unread_count))
        .routes(crate::documented_routes!(
            get_preferences,
            change_preferences
        ))
        .routes(crate::documented_routes!(unsubscribe))
        .routes(crate::documented_routes!(
            unsubscribe_page,
            unsubscribe_from_page
        ))
        .routes(crate::documented_routes!(push_key))
        .routes(crate::documented_routes!(subscribe))
        .routes(crate::documented_routes!(unsubscribe_push))
}

/// A page of notifications.
#[derive(Serialize, ToSchema)]
pub struct NotificationList {
    /// Newest first.
    pub notifications: Vec<NotificationItem>,
    pub unread_count: i64,
    /// Give it as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NotificationListQuery {
    /// `true`: only unread notifications.
    #[param(value_type = Option<bool>)]
    pub unread: Option<String>,
    /// 1 to 100, default 50.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The `next_cursor` of the previous page (opaque).
    pub cursor: Option<String>,
}

/// The cursor after `cursor`: base64url of `updated_at.id`.
fn encode_cursor(cursor: Cursor) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(format!("{}.{}", cursor.updated_at, cursor.id))
}

fn decode_cursor(raw: &str) -> Result<Cursor, String> {
    let refused = || "must be a next_cursor of this list".to_owned();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(raw)
        .map_err(|_| refused())?;
    let text = String::from_utf8(bytes).map_err(|_| refused())?;
    let (updated_at, id) = text.split_once('.').ok_or_else(refused)?;
    Ok(Cursor {
        updated_at: updated_at.parse().map_err(|_| refused())?,
        id: id.parse().map_err(|_| refused())?,
    })
}

/// The signed-in member's notifications, newest first (a group of
/// reactions counts from its newest reaction), with the unread count.
/// Walking the cursors is one index range per page however many
/// notifications there are; a notification that grows meanwhile moves to
/// the top and is not met again.
#[utoipa::path(
    get,
    path = "/api/notifications",
    tag = "notifications",
    params(NotificationListQuery),
    responses(
        (status = 200, description = "A page of notifications", body = NotificationList),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 422, description = "`unread`, `limit` or `cursor` is invalid", body = GeneralError),
    )
)]
pub async fn list_notifications(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    AppQuery(query): AppQuery<NotificationListQuery>,
) -> Result<AppJson<NotificationList>, AppError> {
    let mut problems = Problems::default();
    let unread_only = boolean(&mut problems, "unread", query.unread.as_deref()).unwrap_or(false);
    let limit = match query.limit.as_deref() {
        None => DEFAULT_PAGE,
        Some(raw) => problems
            .check(
                "limit",
                raw.trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|limit| (1..=MAX_PAGE).contains(limit))
                    .ok_or_else(|| format!("must be a whole number from 1 to {MAX_PAGE}")),
            )
            .unwrap_or(DEFAULT_PAGE),
    };
    let after = query
        .cursor
        .as_deref()
        .and_then(|raw| problems.check("cursor", decode_cursor(raw)));
    problems.finish()?;
    let user_id = caller.user_id();
    let page = state
        .db
        .notification_page(NotificationQuery {
            user_id,
            unread_only,
            limit,
            after,
        })
        .await?;
    let unread_count = caller.session.unread_notifications;
    let reading = reading_of(&state, Some(&caller)).await?;
    let now = now_millis();
    let server = &state.settings.server;
    Ok(AppJson(NotificationList {
        notifications: page
            .notifications
            .iter()
            .filter(|notification| shown_to(reading.as_deref(), notification, now))
            .map(|notification| NotificationItem::new(notification, server))
            .collect(),
        unread_count,
        next_cursor: page.next.map(encode_cursor),
    }))
}

/// Whether a notification stays on its reader's page: one a member
/// caused is left out while the reader blocks or mutes them, or a `hide`
/// filter matches its text (DECISIONS.md "Between members"); the others
/// (moderation, broadcasts) always stay.
fn shown_to(reading: Option<&Reading>, notification: &Notification, now: i64) -> bool {
    let (Some(reading), Some(actor)) = (reading, notification.actor.as_ref()) else {
        return true;
    };
    let text = notification.text.as_deref().unwrap_or_default();
    !matches!(
        reading.relations.sight(Some(actor.id), &[text], now),
        Sight::Hidden(_)
    )
}

/// Which notifications to mark read: `ids`, or `all: true`.
#[derive(Deserialize, ToSchema)]
pub struct MarkReadBody {
    /// At most 100 notification ids; the caller's unread ones among them
    /// are marked.
    #[schema(value_type = Option<Vec<String>>, example = json!(["12", "13"]))]
    pub ids: Option<Vec<serde_json::Value>>,
    /// `true` marks every notification of the caller.
    pub all: Option<bool>,
}

/// A notification id given as a string or a number.
fn notification_id(value: &serde_json::Value) -> Option<i64> {
    match value {
        serde_json::Value::String(raw) if raw.bytes().all(|byte| byte.is_ascii_digit()) => {
            raw.parse().ok()
        }
        serde_json::Value::Number(number) => number.as_i64(),
        _ => None,
    }
    .filter(|id| *id > 0)
}

/// Mark notifications read: those of `ids` (ids that are not the caller's,
/// or read already, are passed over), or with `all: true` every one.
#[utoipa::path(
    post,
    path = "/api/notifications/read",
    tag = "notifications",
    request_body = MarkReadBody,
    responses(
        (status = 204, description = "Marked read"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 422, description = "Neither `ids` nor `all: true`, both, more than 100 ids, or an id that is not one", body = GeneralError),
    )
)]
pub async fn mark_read(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    AppJson(body): AppJson<MarkReadBody>,
) -> Result<StatusCode, AppError> {
    let marked = match (body.ids, body.all) {
        (None, Some(true)) => Marked::All,
        (Some(ids), None | Some(false)) => {
            if ids.len() > MAX_MARKED {
                return Err(AppError::invalid(
                    "ids",
                    format!("must name at most {MAX_MARKED} notifications"),
                ));
            }
            let parsed: Option<Vec<i64>> = ids.iter().map(notification_id).collect();
            Marked::Ids(parsed.ok_or_else(|| {
                AppError::invalid("ids", "must be notification ids (digits only)")
            })?)
        }
        (Some(_), Some(true)) => {
            return Err(AppError::invalid("all", "give either ids or all, not both"));
        }
        (None, _) => {
            return Err(AppError::invalid(
                "ids",
                "give the ids to mark read, or all: true",
            ));
        }
    };
    let user_id = caller.user_id();
    state
        .db
        .write(|tx| Box::pin(notifications::mark_read(tx, user_id, marked)))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The unread count.
#[derive(Serialize, ToSchema)]
pub struct UnreadCount {
    pub unread_count: i64,
}

/// How many of the signed-in member's notifications are unread (one row,
/// kept with every notification and every read, and read in the statement
/// that resolves the caller's session: this route costs no statement of
/// its own).
#[utoipa::path(
    get,
    path = "/api/notifications/unread-count",
    tag = "notifications",
    responses(
        (status = 200, description = "The unread count", body = UnreadCount),
        (status = 401, description = "Not signed in", body = GeneralError),
    )
)]
pub async fn unread_count(
    CurrentUser(caller): CurrentUser,
) -> Result<AppJson<UnreadCount>, AppError> {
    Ok(AppJson(UnreadCount {
        unread_count: caller.session.unread_notifications,
    }))
}

/// A member's preferences, every type in both maps.
#[derive(Serialize, ToSchema)]
pub struct Preferences {
    /// Per type: `off`, `immediate` or `daily`.
    #[schema(example = json!({"reply": "daily", "reaction": "off", "moderation": "immediate"}))]
    pub email: BTreeMap<&'static str, &'static str>,
    /// Per type: whether it is pushed.
    #[schema(example = json!({"reply": true, "reaction": true}))]
    pub push: BTreeMap<&'static str, bool>,
}

impl Preferences {
    fn new(channels: &BTreeMap<Kind, Channels>) -> Self {
        Preferences {
            email: channels
                .iter()
                .map(|(kind, channels)| (kind.as_str(), channels.email.as_str()))
                .collect(),
            push: channels
                .iter()
                .map(|(kind, channels)| (kind.as_str(), channels.push))
                .collect(),
        }
    }
}

/// The signed-in member's notification preferences, defaults filled in:
/// email `daily` for reply and mention, `immediate` for moderation,
/// warning, appeal and registration, `off` for reaction and follow; push
/// on for every type.
#[utoipa::path(
    get,
    path = "/api/notifications/preferences",
    tag = "notifications",
    responses(
        (status = 200, description = "The preferences", body = Preferences),
        (status = 401, description = "Not signed in", body = GeneralError),
    )
)]
pub async fn get_preferences(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
) -> Result<AppJson<Preferences>, AppError> {
    let channels = state.db.notification_preferences(caller.user_id()).await?;
    Ok(AppJson(Preferences::new(&channels)))
}

/// Changes to preferences: only the types named change.
#[derive(Deserialize, ToSchema)]
pub struct PreferencesBody {
    /// Per type: `off`, `immediate` or `daily`.
    #[schema(value_type = Option<BTreeMap<String, String>>, example = json!({"reaction": "immediate"}))]
    pub email: Option<BTreeMap<String, serde_json::Value>>,
    /// Per type: whether it is pushed.
    #[schema(value_type = Option<BTreeMap<String, bool>>, example = json!({"reaction": false}))]
    pub push: Option<BTreeMap<String, serde_json::Value>>,
}

/// Change the signed-in member's preferences: only the types named in
/// `email` and `push` change. Answers every type's preferences after.
#[utoipa::path(
    put,
    path = "/api/notifications/preferences",
    tag = "notifications",
    request_body = PreferencesBody,
    responses(
        (status = 200, description = "The preferences after the change", body = Preferences),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 422, description = "An unknown type, or a value that is not one of its channel's", body = GeneralError),
    )
)]
pub async fn change_preferences(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    AppJson(body): AppJson<PreferencesBody>,
) -> Result<AppJson<Preferences>, AppError> {
    let mut problems = Problems::default();
    let mut changes = PreferenceChanges::default();
    let kind_of = |problems: &mut Problems, field: String, name: &str| {
        let kind = Kind::parse(name);
        if kind.is_none() {
            problems.add(field, "is not a notification type");
        }
        kind
    };
    for (name, value) in body.email.unwrap_or_default() {
        let field = format!("email.{name}");
        let choice = value.as_str().and_then(EmailChoice::parse);
        match (kind_of(&mut problems, field.clone(), &name), choice) {
            (Some(kind), Some(choice)) => changes.email.push((kind, choice)),
            (Some(_), None) => problems.add(field, "must be off, immediate or daily"),
            (None, _) => {}
        }
    }
    for (name, value) in body.push.unwrap_or_default() {
        let field = format!("push.{name}");
        match (
            kind_of(&mut problems, field.clone(), &name),
            value.as_bool(),
        ) {
            (Some(kind), Some(on)) => changes.push.push((kind, on)),
            (Some(_), None) => problems.add(field, "must be true or false"),
            (None, _) => {}
        }
    }
    problems.finish()?;
    let user_id = caller.user_id();
    let channels = state
        .db
        .write(|tx| {
            Box::pin(async move { notifications::change_preferences(tx, user_id, &changes).await })
        })
        .await?;
    Ok(AppJson(Preferences::new(&channels)))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UnsubscribeQuery {
    /// The token of the mail's `List-Unsubscribe` URL.
    pub token: Option<String>,
}

/// The answer of an unsubscribe.
#[derive(Serialize, ToSchema)]
pub struct Unsubscribed {
    pub success: bool,
    /// The types whose mail is off now.
    #[schema(example = json!(["reply"]))]
    pub types: Vec<&'static str>,
}

/// One-click unsubscribe (RFC 8058): the URL of a notification mail's
/// `List-Unsubscribe` header, POSTed by the mail client (body
/// `List-Unsubscribe=One-Click`, read or not), without a session. Turns
/// the mail of the types the token names off for the member it names; a
/// token works for that member and those types only.
#[utoipa::path(
    post,
    path = "/api/notifications/unsubscribe",
    tag = "notifications",
    params(UnsubscribeQuery),
    responses(
        (status = 200, description = "The mail of those types is off", body = Unsubscribed),
        (status = 422, description = "No token, or not the token of an unsubscribe link", body = GeneralError),
    )
)]
pub async fn unsubscribe(
    State(state): State<AppState>,
    AppQuery(query): AppQuery<UnsubscribeQuery>,
) -> Result<AppJson<Unsubscribed>, AppError> {
    let (user_id, kinds) = query
        .token
        .as_deref()
        .and_then(|token| state.notifier.mail.read_unsubscribe_token(token))
        .ok_or_else(|| AppError::invalid("token", "is not the token of an unsubscribe link"))?;
    let types = kinds.iter().map(|kind| kind.as_str()).collect();
    state
        .notifier
        .mail
        .unsubscribe(&state.db, user_id, kinds)
        .await?;
    Ok(AppJson(Unsubscribed {
        success: true,
        types,
    }))
}

/// The page a notification mail's "Turn these mails off" link opens: what
/// the link turns off and a button that does it. Opening it changes
/// nothing (mail scanners open links).
#[utoipa::path(
    get,
    path = "/unsubscribe",
    tag = "notifications",
    params(UnsubscribeQuery),
    responses(
        (status = 200, description = "HTML page with the button", content_type = "text/html", body = String),
        (
            status = 422,
            description = "Not the token of an unsubscribe link (an HTML page), or a query the server refuses before reading it (a NUL byte: JSON)",
            content((String = "text/html"), (GeneralError = "application/json"))
        ),
    )
)]
pub async fn unsubscribe_page(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
) -> Response {
    let token = page_token(query.as_deref());
    let read = token
        .as_deref()
        .and_then(|token| Some((token, state.notifier.mail.read_unsubscribe_token(token)?)));
    match read {
        Some((token, (_, kinds))) => pages::private(
            StatusCode::OK,
            pages::unsubscribe(
                &state.settings.server,
                UnsubscribePage::Confirm {
                    token,
                    about: &mail::about(&kinds),
                },
            ),
        ),
        None => broken_unsubscribe_link(&state),
    }
}

/// The unsubscribe page's button: turns the mails of the link's types off
/// for its member, as the one-click `POST /api/notifications/unsubscribe`
/// does, and says so.
#[utoipa::path(
    post,
    path = "/unsubscribe",
    tag = "notifications",
    params(UnsubscribeQuery),
    responses(
        (status = 200, description = "HTML page: the mails are off", content_type = "text/html", body = String),
        (
            status = 422,
            description = "Not the token of an unsubscribe link (an HTML page), or a query the server refuses before reading it (a NUL byte: JSON)",
            content((String = "text/html"), (GeneralError = "application/json"))
        ),
    )
)]
pub async fn unsubscribe_from_page(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
) -> Result<Response, AppError> {
    let Some((user_id, kinds)) = page_token(query.as_deref())
        .as_deref()
        .and_then(|token| state.notifier.mail.read_unsubscribe_token(token))
    else {
        return Ok(broken_unsubscribe_link(&state));
    };
    let about = mail::about(&kinds);
    state
        .notifier
        .mail
        .unsubscribe(&state.db, user_id, kinds)
        .await?;
    Ok(pages::private(
        StatusCode::OK,
        pages::unsubscribe(
            &state.settings.server,
            UnsubscribePage::Done { about: &about },
        ),
    ))
}

/// The `token` of an unsubscribe page's query; a page answers any query
/// with a page, so whatever else it holds is not read.
fn page_token(query: Option<&str>) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(name, _)| name == "token")
        .map(|(_, token)| token.into_owned())
}

/// The unsubscribe page of a link whose token Plaza did not sign.
fn broken_unsubscribe_link(state: &AppState) -> Response {
    pages::private(
        StatusCode::UNPROCESSABLE_ENTITY,
        pages::unsubscribe(&state.settings.server, UnsubscribePage::Broken),
    )
}

/// The VAPID public key.
#[derive(Serialize, ToSchema)]
pub struct PushKey {
    /// The uncompressed P-256 point (65 bytes), base64url without padding:
    /// the `applicationServerKey` of `pushManager.subscribe`.
    #[schema(
        example = "BEl62iUYgUivxIkv69yViEuiBIa-Ib9-SkvMeAtA3LFgDzkrxZJjSgSnfckjBJuBkr3qBUYIHBQFLXYp5Nksh8U"
    )]
    pub public_key: String,
}

/// The VAPID public key browsers subscribe with; no sign-in needed.
#[utoipa::path(
    get,
    path = "/api/notifications/push/key",
    tag = "notifications",
    responses(
        (status = 200, description = "The key", body = PushKey),
    )
)]
pub async fn push_key(State(state): State<AppState>) -> AppJson<PushKey> {
    AppJson(PushKey {
        public_key: state.notifier.public_key().to_owned(),
    })
}

/// A browser's keys for a subscription.
#[derive(Deserialize, ToSchema)]
pub struct SubscriptionKeys {
    /// The browser's P-256 public key, base64url.
    pub p256dh: String,
    /// The browser's 16-byte authentication secret, base64url.
    pub auth: String,
}

/// A browser's push subscription (`PushSubscription.toJSON()`).
#[derive(Deserialize, ToSchema)]
pub struct SubscriptionBody {
    /// The push service's URL: `https` on a public address.
    #[schema(example = "https://push.example.net/send/abc")]
    pub endpoint: String,
    pub keys: SubscriptionKeys,
}

/// A new subscription.
#[derive(Serialize, ToSchema)]
pub struct SubscriptionCreated {
    #[schema(example = "5")]
    pub id: String,
}

/// Subscribe the browser to the signed-in member's pushes. An endpoint
/// subscribed before (by anyone) is taken over; a member keeps at most 20
/// subscriptions, a new one replacing their oldest.
#[utoipa::path(
    post,
    path = "/api/notifications/push/subscriptions",
    tag = "notifications",
    request_body = SubscriptionBody,
    responses(
        (status = 201, description = "Subscribed", body = SubscriptionCreated),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 422, description = "The endpoint is not https on a public address, or a key is not one", body = GeneralError),
    )
)]
pub async fn subscribe(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    AppJson(body): AppJson<SubscriptionBody>,
) -> Result<Response, AppError> {
    let mut problems = Problems::default();
    if let Err((field, problem)) = subscription_keys(&body.keys.p256dh, &body.keys.auth) {
        problems.add(field, problem);
    }
    if let Err(problem) = state.notifier.push.check_endpoint(&body.endpoint).await {
        problems.add("endpoint", problem);
    }
    problems.finish()?;
    let new = NewSubscription {
        user_id: caller.user_id(),
        endpoint: body.endpoint,
        p256dh: body.keys.p256dh,
        auth: body.keys.auth,
    };
    let id = state
        .db
        .write(|tx| Box::pin(async move { notifications::subscribe(tx, &new).await }))
        .await?;
    Ok((
        StatusCode::CREATED,
        AppJson(SubscriptionCreated { id: id.to_string() }),
    )
        .into_response())
}

/// Delete one of the signed-in member's subscriptions (and the pushes
/// waiting for it).
#[utoipa::path(
    delete,
    path = "/api/notifications/push/subscriptions/{id}",
    tag = "notifications",
    params(("id" = String, Path, description = "Subscription id (digits)", example = "5")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Not signed in", body = GeneralError),
        (status = 404, description = "No such subscription of the caller", body = GeneralError),
    )
)]
pub async fn unsubscribe_push(
    State(state): State<AppState>,
    CurrentUser(caller): CurrentUser,
    IdPath(id): IdPath,
) -> Result<StatusCode, AppError> {
    let user_id = caller.user_id();
    state
        .db
        .write(|tx| Box::pin(notifications::unsubscribe(tx, user_id, id)))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
