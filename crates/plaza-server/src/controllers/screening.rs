//! Every operation of the OpenAPI document and how it treats a signed-in
//! caller's blocks, mutes and keyword filters (DECISIONS.md "Between
//! members"): it lists members' content and applies them, it acts on
//! another member's content or profile and a block refuses it, or neither
//! applies, and why. `tests/it/between_members.rs` reads the served
//! document and fails when an operation is missing here (or listed here
//! and not served), and shows, for each operation that lists content, a
//! blocked author's content absent.

/// How an operation treats the caller's relations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Treatment {
    /// Lists members' content: the caller's blocks, mutes and `hide`
    /// filters leave items out (or, in a thread, show placeholders), and
    /// `warn` filters mark them. How, in words.
    Lists(&'static str),
    /// Acts on another member's content or profile: refused with 403
    /// `BLOCKED` while a block stands between the two, either way.
    Refuses(&'static str),
    /// Neither applies; why.
    Exempt(&'static str),
}

const LISTS_POSTS: &str = "the authors the caller blocks or mutes are left out of the page and \
    the total; posts a hide filter matches are left out of the page, warn filters add `filtered`";
const THREAD: &str = "a reply by an author the caller blocks or mutes, or one a hide filter \
    matches, keeps its place as a placeholder (`status` blocked, muted or filtered); warn filters \
    do not mark replies";
const FEED: &str = "as the post list: blocked and muted authors left out, hide filters leave \
    posts out of the page, warn filters add `filtered`";
const SEARCH: &str = "posts and replies by authors the caller blocks or mutes, and results a \
    hide filter matches, are left out of the page found; warn filters add `filtered`";
const FOLLOW: &str = "following a member";
const REPLY: &str = "answering the post's author or the parent reply's author";
const REACT: &str = "reacting to the item's author";

const ADMIN: &str = "the admin surfaces show moderators and administrators everything, as \
    their duty needs";
const NO_CONTENT: &str = "answers no member's posts or replies";
const OWN_ACCOUNT: &str = "the caller's own account, sign-in, sessions or data";
const OWN_ALERTS: &str = "the caller's own alerts: broadcasts and moderators' notes";
const NOTIFIED: &str = "notifications are screened when written: none is written from a member \
    the recipient blocks or mutes, or who blocks them (the one rule of notifications); a block or \
    mute marks those written before it read";
const NOTIFICATIONS: &str = "notifications a member the caller blocks or mutes caused, or whose \
    text a hide filter matches, are left out of the page";
const MODLOG: &str = "moderation actions (kind, target, reason), not members' posts or \
    replies; a moderation decision is public whoever it concerns";
const OWN_EVENTS: &str = "the caller's own analytics events";
const OWN_CONTENT: &str = "writes or removes the caller's own post or reply (a moderator's \
    duty is not a member's interaction)";
const RELATIONS: &str = "the relations themselves: the caller's own, or a member's follows, \
    whose public face is shown as on every reply";
const MEMBERS: &str = "shows members, not their content; a blocker finds whom they block to \
    unblock them";
const ONE_ITEM: &str = "one item asked for by id, as a link leads to it: relations keep items \
    out of lists, not out of reach";
const REPORT: &str = "a report reaches the moderators whoever its author is; a block must not \
    keep harm from being reported";
const TAKE_BACK: &str = "taking one's own reaction back is always possible";
const REACTORS: &str = "lists who reacted (members), not content";

/// Every operation of the document: (method, path, treatment).
pub const OPERATIONS: &[(&str, &str, Treatment)] = &[
    ("GET", "/api/admin/analytics", Treatment::Exempt(ADMIN)),
    ("GET", "/api/admin/emojis/pending", Treatment::Exempt(ADMIN)),
    (
        "POST",
        "/api/admin/emojis/{id}/approve",
        Treatment::Exempt(ADMIN),
    ),
    (
        "POST",
        "/api/admin/emojis/{id}/reject",
        Treatment::Exempt(ADMIN),
    ),
    ("GET", "/api/admin/permissions", Treatment::Exempt(ADMIN)),
    ("POST", "/api/admin/permissions", Treatment::Exempt(ADMIN)),
    (
        "PATCH",
        "/api/admin/permissions/{id}",
        Treatment::Exempt(ADMIN),
    ),
    ("GET", "/api/admin/roles", Treatment::Exempt(ADMIN)),
    (
        "PUT",
        "/api/admin/roles/{role}/permissions",
        Treatment::Exempt(ADMIN),
    ),
    ("GET", "/api/admin/stats", Treatment::Exempt(ADMIN)),
    (
        "PUT",
        "/api/admin/subscriptions/{id}",
        Treatment::Exempt(ADMIN),
    ),
    ("GET", "/api/admin/users", Treatment::Exempt(ADMIN)),
    (
        "POST",
        "/api/admin/users/{id}/ban",
        Treatment::Exempt(ADMIN),
    ),
    (
        "POST",
        "/api/admin/users/{id}/subscriptions",
        Treatment::Exempt(ADMIN),
    ),
    (
        "POST",
        "/api/admin/users/{id}/unban",
        Treatment::Exempt(ADMIN),
    ),
    ("GET", "/api/alerts", Treatment::Exempt(OWN_ALERTS)),
    ("POST", "/api/alerts/dismiss", Treatment::Exempt(OWN_ALERTS)),
    ("GET", "/api/alerts/stream", Treatment::Exempt(OWN_ALERTS)),
    ("GET", "/api/notifications", Treatment::Lists(NOTIFICATIONS)),
    (
        "POST",
        "/api/notifications/read",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "GET",
        "/api/notifications/unread-count",
        Treatment::Exempt(NOTIFIED),
    ),
    (
        "GET",
        "/api/notifications/preferences",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "PUT",
        "/api/notifications/preferences",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "POST",
        "/api/notifications/unsubscribe",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "GET",
        "/api/notifications/push/key",
        Treatment::Exempt(NO_CONTENT),
    ),
    (
        "POST",
        "/api/notifications/push/subscriptions",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "DELETE",
        "/api/notifications/push/subscriptions/{id}",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "POST",
        "/api/analytics/collect",
        Treatment::Exempt(OWN_EVENTS),
    ),
    (
        "POST",
        "/api/analytics/collect/batch",
        Treatment::Exempt(OWN_EVENTS),
    ),
    ("GET", "/api/auth/accounts", Treatment::Exempt(OWN_ACCOUNT)),
    (
        "DELETE",
        "/api/auth/accounts/{providerId}",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "GET",
        "/api/auth/callback/{provider}",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "POST",
        "/api/auth/callback/{provider}",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    ("GET", "/api/auth/csrf", Treatment::Exempt(OWN_ACCOUNT)),
    ("PUT", "/api/auth/password", Treatment::Exempt(OWN_ACCOUNT)),
    (
        "POST",
        "/api/auth/password/forgot",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "POST",
        "/api/auth/password/reset",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    ("GET", "/api/auth/providers", Treatment::Exempt(OWN_ACCOUNT)),
    ("GET", "/api/auth/session", Treatment::Exempt(OWN_ACCOUNT)),
    ("POST", "/api/auth/session", Treatment::Exempt(OWN_ACCOUNT)),
    ("GET", "/api/auth/sessions", Treatment::Exempt(OWN_ACCOUNT)),
    (
        "DELETE",
        "/api/auth/sessions/{id}",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    ("GET", "/api/auth/signin", Treatment::Exempt(OWN_ACCOUNT)),
    ("POST", "/api/auth/signin", Treatment::Exempt(OWN_ACCOUNT)),
    (
        "GET",
        "/api/auth/signin/{provider}",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "POST",
        "/api/auth/signin/{provider}",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    ("GET", "/api/auth/signout", Treatment::Exempt(OWN_ACCOUNT)),
    ("POST", "/api/auth/signout", Treatment::Exempt(OWN_ACCOUNT)),
    ("DELETE", "/api/auth/token", Treatment::Exempt(OWN_ACCOUNT)),
    ("POST", "/api/auth/token", Treatment::Exempt(OWN_ACCOUNT)),
    (
        "POST",
        "/api/auth/totp/disable",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "POST",
        "/api/auth/totp/enable",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "POST",
        "/api/auth/totp/setup",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "GET",
        "/api/auth/verify-email",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "POST",
        "/api/auth/verify-email",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "POST",
        "/api/auth/verify-email/resend",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    ("GET", "/api/avatar-image", Treatment::Exempt(NO_CONTENT)),
    ("GET", "/api/emojis", Treatment::Exempt(NO_CONTENT)),
    ("POST", "/api/emojis/custom", Treatment::Exempt(NO_CONTENT)),
    ("POST", "/api/emojis/track", Treatment::Exempt(NO_CONTENT)),
    ("POST", "/api/emojis/usage", Treatment::Exempt(NO_CONTENT)),
    ("GET", "/api/feature-flags", Treatment::Exempt(NO_CONTENT)),
    ("GET", "/api/feed", Treatment::Lists(FEED)),
    ("GET", "/api/health", Treatment::Exempt(NO_CONTENT)),
    ("GET", "/api/link-preview", Treatment::Exempt(NO_CONTENT)),
    ("GET", "/api/me/blocks", Treatment::Exempt(RELATIONS)),
    ("GET", "/api/me/filters", Treatment::Exempt(RELATIONS)),
    ("POST", "/api/me/filters", Treatment::Exempt(RELATIONS)),
    (
        "DELETE",
        "/api/me/filters/{id}",
        Treatment::Exempt(RELATIONS),
    ),
    ("GET", "/api/me/mutes", Treatment::Exempt(RELATIONS)),
    ("GET", "/api/metrics", Treatment::Exempt(NO_CONTENT)),
    ("GET", "/api/og-image", Treatment::Exempt(NO_CONTENT)),
    ("GET", "/api/openapi", Treatment::Exempt(NO_CONTENT)),
    ("GET", "/api/posts", Treatment::Lists(LISTS_POSTS)),
    ("POST", "/api/posts", Treatment::Exempt(OWN_CONTENT)),
    ("DELETE", "/api/posts/{id}", Treatment::Exempt(OWN_CONTENT)),
    ("GET", "/api/posts/{id}", Treatment::Exempt(ONE_ITEM)),
    ("PUT", "/api/posts/{id}", Treatment::Exempt(OWN_CONTENT)),
    (
        "DELETE",
        "/api/posts/{id}/reactions/{emoji}",
        Treatment::Exempt(TAKE_BACK),
    ),
    (
        "GET",
        "/api/posts/{id}/reactions/{emoji}",
        Treatment::Exempt(REACTORS),
    ),
    (
        "PUT",
        "/api/posts/{id}/reactions/{emoji}",
        Treatment::Refuses(REACT),
    ),
    ("GET", "/api/posts/{id}/replies", Treatment::Lists(THREAD)),
    ("POST", "/api/posts/{id}/replies", Treatment::Refuses(REPLY)),
    ("POST", "/api/posts/{id}/report", Treatment::Exempt(REPORT)),
    ("GET", "/api/profile/id/{id}", Treatment::Exempt(MEMBERS)),
    (
        "DELETE",
        "/api/replies/{id}",
        Treatment::Exempt(OWN_CONTENT),
    ),
    ("GET", "/api/replies/{id}", Treatment::Exempt(ONE_ITEM)),
    ("PUT", "/api/replies/{id}", Treatment::Exempt(OWN_CONTENT)),
    (
        "DELETE",
        "/api/replies/{id}/reactions/{emoji}",
        Treatment::Exempt(TAKE_BACK),
    ),
    (
        "GET",
        "/api/replies/{id}/reactions/{emoji}",
        Treatment::Exempt(REACTORS),
    ),
    (
        "PUT",
        "/api/replies/{id}/reactions/{emoji}",
        Treatment::Refuses(REACT),
    ),
    (
        "POST",
        "/api/replies/{id}/report",
        Treatment::Exempt(REPORT),
    ),
    ("GET", "/api/search", Treatment::Lists(SEARCH)),
    ("GET", "/api/search/posts", Treatment::Lists(SEARCH)),
    ("GET", "/api/search/users", Treatment::Exempt(MEMBERS)),
    ("GET", "/api/swagger", Treatment::Exempt(NO_CONTENT)),
    ("POST", "/api/upload", Treatment::Exempt(NO_CONTENT)),
    ("POST", "/api/upload/image", Treatment::Exempt(NO_CONTENT)),
    ("GET", "/api/uploads/{key}", Treatment::Exempt(NO_CONTENT)),
    ("GET", "/api/users", Treatment::Exempt(MEMBERS)),
    ("POST", "/api/users", Treatment::Exempt(OWN_ACCOUNT)),
    ("DELETE", "/api/users/{id}", Treatment::Exempt(OWN_ACCOUNT)),
    ("GET", "/api/users/{id}", Treatment::Exempt(MEMBERS)),
    ("PUT", "/api/users/{id}", Treatment::Exempt(OWN_ACCOUNT)),
    (
        "DELETE",
        "/api/users/{id}/block",
        Treatment::Exempt(RELATIONS),
    ),
    ("PUT", "/api/users/{id}/block", Treatment::Exempt(RELATIONS)),
    (
        "GET",
        "/api/users/{id}/export",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    (
        "DELETE",
        "/api/users/{id}/follow",
        Treatment::Exempt(RELATIONS),
    ),
    ("PUT", "/api/users/{id}/follow", Treatment::Refuses(FOLLOW)),
    (
        "GET",
        "/api/users/{id}/followers",
        Treatment::Exempt(RELATIONS),
    ),
    (
        "GET",
        "/api/users/{id}/following",
        Treatment::Exempt(RELATIONS),
    ),
    (
        "DELETE",
        "/api/users/{id}/mute",
        Treatment::Exempt(RELATIONS),
    ),
    ("PUT", "/api/users/{id}/mute", Treatment::Exempt(RELATIONS)),
    ("GET", "/api/users/{id}/profile", Treatment::Exempt(MEMBERS)),
    ("GET", "/api/v1/admin/analytics", Treatment::Exempt(ADMIN)),
    ("GET", "/api/v1/admin/audit-logs", Treatment::Exempt(ADMIN)),
    (
        "GET",
        "/api/v1/admin/feature-flags",
        Treatment::Exempt(ADMIN),
    ),
    (
        "DELETE",
        "/api/v1/admin/feature-flags/{flagName}",
        Treatment::Exempt(ADMIN),
    ),
    (
        "PUT",
        "/api/v1/admin/feature-flags/{flagName}",
        Treatment::Exempt(ADMIN),
    ),
    (
        "POST",
        "/api/v1/admin/notifications/broadcast",
        Treatment::Exempt(ADMIN),
    ),
    (
        "GET",
        "/api/v1/admin/notifications/broadcasts",
        Treatment::Exempt(ADMIN),
    ),
    (
        "DELETE",
        "/api/v1/admin/notifications/broadcasts/{id}",
        Treatment::Exempt(ADMIN),
    ),
    ("GET", "/api/v1/admin/posts", Treatment::Exempt(ADMIN)),
    (
        "POST",
        "/api/v1/admin/posts/{postId}/moderate",
        Treatment::Exempt(ADMIN),
    ),
    ("GET", "/api/v1/admin/replies", Treatment::Exempt(ADMIN)),
    (
        "POST",
        "/api/v1/admin/replies/{replyId}/moderate",
        Treatment::Exempt(ADMIN),
    ),
    (
        "GET",
        "/api/v1/admin/reports/moderation",
        Treatment::Exempt(ADMIN),
    ),
    (
        "GET",
        "/api/v1/admin/reports/user-activity",
        Treatment::Exempt(ADMIN),
    ),
    (
        "POST",
        "/api/v1/admin/system/maintenance",
        Treatment::Exempt(ADMIN),
    ),
    ("GET", "/api/v1/admin/users", Treatment::Exempt(ADMIN)),
    (
        "POST",
        "/api/v1/admin/users/bulk-update",
        Treatment::Exempt(ADMIN),
    ),
    (
        "GET",
        "/api/v1/admin/users/{userId}",
        Treatment::Exempt(ADMIN),
    ),
    (
        "PUT",
        "/api/v1/admin/users/{userId}",
        Treatment::Exempt(ADMIN),
    ),
    (
        "POST",
        "/api/v1/admin/users/{userId}/ban",
        Treatment::Exempt(ADMIN),
    ),
    (
        "GET",
        "/api/v1/admin/word-filters",
        Treatment::Exempt(ADMIN),
    ),
    (
        "POST",
        "/api/v1/admin/word-filters",
        Treatment::Exempt(ADMIN),
    ),
    (
        "DELETE",
        "/api/v1/admin/word-filters/{id}",
        Treatment::Exempt(ADMIN),
    ),
    (
        "DELETE",
        "/api/invites/{code}",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    ("GET", "/api/invites", Treatment::Exempt(OWN_ACCOUNT)),
    ("POST", "/api/invites", Treatment::Exempt(OWN_ACCOUNT)),
    (
        "DELETE",
        "/api/me/tokens/{id}",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    ("GET", "/api/me/tokens", Treatment::Exempt(OWN_ACCOUNT)),
    ("POST", "/api/me/tokens", Treatment::Exempt(OWN_ACCOUNT)),
    (
        "GET",
        "/api/me/moderation-actions",
        Treatment::Exempt(OWN_ACCOUNT),
    ),
    ("POST", "/api/appeals", Treatment::Exempt(OWN_ACCOUNT)),
    ("POST", "/api/me/appeals", Treatment::Exempt(OWN_ACCOUNT)),
    (
        "DELETE",
        "/api/v1/admin/email-domain-blocks/{id}",
        Treatment::Exempt(ADMIN),
    ),
    (
        "DELETE",
        "/api/v1/admin/ip-blocks/{id}",
        Treatment::Exempt(ADMIN),
    ),
    (
        "DELETE",
        "/api/v1/admin/users/{userId}/silence",
        Treatment::Exempt(ADMIN),
    ),
    (
        "DELETE",
        "/api/v1/admin/webhooks/{id}",
        Treatment::Exempt(ADMIN),
    ),
    ("GET", "/api/v1/admin/appeals", Treatment::Exempt(ADMIN)),
    (
        "GET",
        "/api/v1/admin/email-domain-blocks",
        Treatment::Exempt(ADMIN),
    ),
    ("GET", "/api/v1/admin/ip-blocks", Treatment::Exempt(ADMIN)),
    (
        "GET",
        "/api/v1/admin/registrations",
        Treatment::Exempt(ADMIN),
    ),
    (
        "GET",
        "/api/v1/admin/site-settings",
        Treatment::Exempt(ADMIN),
    ),
    (
        "GET",
        "/api/v1/admin/users/{userId}/warnings",
        Treatment::Exempt(ADMIN),
    ),
    ("GET", "/api/v1/admin/webhooks", Treatment::Exempt(ADMIN)),
    (
        "GET",
        "/api/v1/admin/webhooks/{id}",
        Treatment::Exempt(ADMIN),
    ),
    (
        "GET",
        "/api/v1/admin/webhooks/{id}/deliveries",
        Treatment::Exempt(ADMIN),
    ),
    (
        "PATCH",
        "/api/v1/admin/webhooks/{id}",
        Treatment::Exempt(ADMIN),
    ),
    (
        "POST",
        "/api/v1/admin/appeals/{appealId}",
        Treatment::Exempt(ADMIN),
    ),
    (
        "POST",
        "/api/v1/admin/email-domain-blocks",
        Treatment::Exempt(ADMIN),
    ),
    ("POST", "/api/v1/admin/ip-blocks", Treatment::Exempt(ADMIN)),
    (
        "POST",
        "/api/v1/admin/registrations/{userId}",
        Treatment::Exempt(ADMIN),
    ),
    (
        "POST",
        "/api/v1/admin/users/{userId}/silence",
        Treatment::Exempt(ADMIN),
    ),
    (
        "POST",
        "/api/v1/admin/users/{userId}/warnings",
        Treatment::Exempt(ADMIN),
    ),
    ("POST", "/api/v1/admin/webhooks", Treatment::Exempt(ADMIN)),
    (
        "POST",
        "/api/v1/admin/webhooks/{id}/deliveries/{deliveryId}/redeliver",
        Treatment::Exempt(ADMIN),
    ),
    ("PUT", "/api/v1/admin/rules", Treatment::Exempt(ADMIN)),
    (
        "PUT",
        "/api/v1/admin/site-settings",
        Treatment::Exempt(ADMIN),
    ),
    ("GET", "/api/modlog", Treatment::Exempt(MODLOG)),
    ("GET", "/api/rules", Treatment::Exempt(NO_CONTENT)),
    ("POST", "/api/users/{id}/report", Treatment::Exempt(REPORT)),
    ("GET", "/api/version", Treatment::Exempt(NO_CONTENT)),
    ("GET", "/appeal", Treatment::Exempt(OWN_ACCOUNT)),
    ("POST", "/appeal", Treatment::Exempt(OWN_ACCOUNT)),
    ("GET", "/forgot-password", Treatment::Exempt(OWN_ACCOUNT)),
    ("GET", "/og-image-viewer", Treatment::Exempt(NO_CONTENT)),
    ("GET", "/reset-password", Treatment::Exempt(OWN_ACCOUNT)),
    ("GET", "/unsubscribe", Treatment::Exempt(OWN_ACCOUNT)),
    ("POST", "/unsubscribe", Treatment::Exempt(OWN_ACCOUNT)),
];
