//! Who may do what: every authorization rule of Plaza in one place, one
//! function per rule, each answering [`Decision::Allowed`],
//! [`Decision::Forbidden`] or [`Decision::Hidden`] (the thing is not shown to
//! this actor at all, so the answer is "not found"). Controllers ask these
//! rules; they never compare roles themselves, so the general API and the
//! admin surfaces cannot drift apart.

use serde::{Deserialize, Serialize};

use crate::DomainError;
use crate::posts::{Post, Viewer};
use crate::replies::{Reply, ReplyStatus};
use crate::users::{Role, User, UserStatus};

/// Someone acting: a signed-in user, or the holder of an admin token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Actor {
    pub user_id: i64,
    pub role: Role,
}

/// The answer of a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    /// The actor may see the thing but not do this (403).
    Forbidden,
    /// The actor may not even know the thing exists (404).
    Hidden,
}

impl Decision {
    pub fn is_allowed(self) -> bool {
        self == Decision::Allowed
    }

    /// The decision as a result inside a unit of work: forbidden with
    /// `message`, or `what` not found.
    pub fn check(self, what: &'static str, message: &str) -> Result<(), DomainError> {
        match self {
            Decision::Allowed => Ok(()),
            Decision::Forbidden => Err(DomainError::Forbidden(message.to_owned())),
            Decision::Hidden => Err(DomainError::NotFound(what)),
        }
    }

    fn allowed_if(condition: bool) -> Decision {
        if condition {
            Decision::Allowed
        } else {
            Decision::Forbidden
        }
    }
}

impl Actor {
    fn is(self, user: &User) -> bool {
        self.user_id == user.id()
    }

    /// Outranks `target`: a higher role, or a super admin (who manages
    /// anyone, other super admins included).
    fn outranks(self, target: Role) -> bool {
        self.role == Role::SuperAdmin || self.role > target
    }
}

/// The admin permissions a token can carry (SPEC.md "Admin permission levels").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum AdminPermission {
    #[serde(rename = "admin:read")]
    Read,
    #[serde(rename = "admin:write")]
    Write,
    #[serde(rename = "admin:delete")]
    Delete,
    #[serde(rename = "admin:super")]
    Super,
}

impl AdminPermission {
    pub const ALL: [AdminPermission; 4] = [
        AdminPermission::Read,
        AdminPermission::Write,
        AdminPermission::Delete,
        AdminPermission::Super,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AdminPermission::Read => "admin:read",
            AdminPermission::Write => "admin:write",
            AdminPermission::Delete => "admin:delete",
            AdminPermission::Super => "admin:super",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|permission| permission.as_str() == name.trim())
    }

    /// The permission a request with the HTTP method `method` needs on the
    /// admin surfaces: reads need `admin:read`, deletions `admin:delete`,
    /// every other change `admin:write`.
    pub fn for_method(method: &str) -> Self {
        match method {
            "GET" | "HEAD" | "OPTIONS" => AdminPermission::Read,
            "DELETE" => AdminPermission::Delete,
            _ => AdminPermission::Write,
        }
    }

    /// The permissions a role may put in a token: admins everything but
    /// `admin:super`, super admins everything.
    pub fn allowed_for(role: Role) -> &'static [AdminPermission] {
        match role {
            Role::SuperAdmin => &Self::ALL,
            Role::Admin => &Self::ALL[..3],
            Role::User | Role::Moderator => &[],
        }
    }
}

/// Lists and searches of users include every user, not only active public
/// ones, and show emails: administrators.
pub fn see_every_user(actor: Option<Actor>) -> bool {
    actor.is_some_and(|actor| actor.role.is_admin())
}

/// Reading one user: themselves and administrators always; anyone else only
/// an active user with a public profile.
pub fn view_user(actor: Option<Actor>, target: &User) -> Decision {
    if actor.is_some_and(|actor| actor.is(target)) || see_every_user(actor) || target.is_public() {
        Decision::Allowed
    } else {
        Decision::Hidden
    }
}

/// Reading a user's profile as idling.app's `/api/profile/id/{id}` does:
/// as [`view_user`], except that a private profile of an active user is
/// known to exist (forbidden) rather than hidden; an inactive or banned
/// user stays hidden.
pub fn view_profile(actor: Option<Actor>, target: &User) -> Decision {
    match view_user(actor, target) {
        Decision::Hidden if target.is_active() => Decision::Forbidden,
        decision => decision,
    }
}

/// A user's email is shown to the user and to administrators.
pub fn see_email(actor: Option<Actor>, target: &User) -> bool {
    see_email_of(actor, target.id())
}

/// [`see_email`] for a user known by id alone (the actor of an audit
/// entry): so moderators see no one's email but their own.
pub fn see_email_of(actor: Option<Actor>, user_id: i64) -> bool {
    actor.is_some_and(|actor| actor.user_id == user_id) || see_every_user(actor)
}

/// Creating users while open sign-up is off: administrators.
pub fn create_user_without_signup(actor: Option<Actor>) -> Decision {
    Decision::allowed_if(see_every_user(actor))
}

/// Signing up in a registration mode that asks something of a sign-up
/// (an application, an invite) or refuses it (closed): administrators
/// creating accounts are asked nothing.
pub fn sign_up_unconditionally(actor: Option<Actor>) -> bool {
    see_every_user(actor)
}

/// Making an invite: administrators always; members (any other role) when
/// `invites_by_members` is on and their account was created at least
/// `min_age_millis` before `now`.
pub fn create_invite(
    actor: Actor,
    account_created_at: i64,
    invites_by_members: bool,
    min_age_millis: i64,
    now: i64,
) -> Decision {
    Decision::allowed_if(
        actor.role.is_admin()
            || (invites_by_members && now.saturating_sub(account_created_at) >= min_age_millis),
    )
}

/// Changing the site settings from the console: super administrators
/// (the versioned API asks a token holding `admin:super`).
pub fn change_site_settings(actor: Actor) -> Decision {
    Decision::allowed_if(actor.role == Role::SuperAdmin)
}

/// Deciding registrations and changing email-domain and IP blocks from
/// the console: administrators.
pub fn guard_front_door(actor: Actor) -> Decision {
    Decision::allowed_if(actor.role.is_admin())
}

/// Changing a user's profile or deleting them: the user themselves, or an
/// administrator who outranks them.
pub fn manage_user(actor: Actor, target: &User) -> Decision {
    if actor.is(target) {
        return Decision::Allowed;
    }
    if !actor.role.is_admin() {
        return match view_user(Some(actor), target) {
            Decision::Allowed => Decision::Forbidden,
            hidden => hidden,
        };
    }
    Decision::allowed_if(actor.outranks(target.role))
}

/// Exporting all of `target`'s data: the user themselves, or an
/// administrator holding `users:manage` (`holds_manage_users`; a super
/// admin holds it without a grant) who outranks them, as for
/// [`manage_user`]. Anyone else who may see the user is refused; to
/// whoever may not, the user does not exist.
pub fn export_user(actor: Actor, target: &User, holds_manage_users: bool) -> Decision {
    if actor.is(target) {
        return Decision::Allowed;
    }
    match administer(actor, holds_manage_users) {
        Decision::Allowed => manage_user(actor, target),
        _ => match view_user(Some(actor), target) {
            Decision::Allowed => Decision::Forbidden,
            hidden => hidden,
        },
    }
}

/// Giving `target` the role `role`: an administrator, on someone else they
/// manage, up to their own role; `super_admin` is never granted here.
pub fn grant_role(actor: Actor, target: &User, role: Role) -> Decision {
    if actor.is(target) || !actor.role.is_admin() || role == Role::SuperAdmin {
        return Decision::Forbidden;
    }
    match manage_user(actor, target) {
        Decision::Allowed => Decision::allowed_if(role <= actor.role),
        other => other,
    }
}

/// Changing `target`'s status (activating, deactivating): an administrator,
/// on someone else they manage.
pub fn change_status(actor: Actor, target: &User) -> Decision {
    if actor.is(target) || !actor.role.is_admin() {
        return Decision::Forbidden;
    }
    manage_user(actor, target)
}

/// Changing the fields only administrators keep on a user (notes, whether
/// the email is verified): as [`change_status`], so never on oneself.
pub fn edit_admin_fields(actor: Actor, target: &User) -> Decision {
    change_status(actor, target)
}

/// Banning or unbanning: as [`change_status`], and nobody bans a super
/// admin.
pub fn ban(actor: Actor, target: &User) -> Decision {
    if target.role == Role::SuperAdmin {
        return Decision::Forbidden;
    }
    change_status(actor, target)
}

/// `status` set on `target` by `actor`: banning follows [`ban`], other
/// statuses [`change_status`].
pub fn set_status(actor: Actor, target: &User, status: UserStatus) -> Decision {
    if status == UserStatus::Banned || target.status == UserStatus::Banned {
        ban(actor, target)
    } else {
        change_status(actor, target)
    }
}

/// What an actor sees of posts (the domain's [`Viewer`]).
pub fn post_viewer(actor: Option<Actor>) -> Viewer {
    Viewer::new(actor.map(|actor| (actor.user_id, actor.role)))
}

/// Reading a post: published, unhidden posts for anyone; authors also
/// their drafts and hidden posts; moderators everything.
pub fn view_post(actor: Option<Actor>, post: &Post) -> Decision {
    if post.visible_to(post_viewer(actor)) {
        Decision::Allowed
    } else {
        Decision::Hidden
    }
}

/// Changing or deleting a post: its author or a moderator.
pub fn edit_post(actor: Actor, post: &Post) -> Decision {
    match view_post(Some(actor), post) {
        Decision::Allowed => Decision::allowed_if(post.editable_by(post_viewer(Some(actor)))),
        other => other,
    }
}

/// Reacting to a post, or taking one's reaction back: a member who sees
/// it; to anyone else it does not exist. (Whether the post takes new
/// reactions at all, a draft, hidden or locked one taking none, is a rule
/// of its state, not of the actor: [`crate::reactions`].)
pub fn react_to_post(actor: Actor, post: &Post) -> Decision {
    view_post(Some(actor), post)
}

/// Approving, hiding, flagging a post: moderators and above.
pub fn moderate_post(actor: Actor) -> Decision {
    Decision::allowed_if(actor.role.is_moderator())
}

/// Opening the operator console: moderators and above.
pub fn use_console(actor: Actor) -> Decision {
    Decision::allowed_if(actor.role.is_moderator())
}

/// Deleting someone else's post, on every surface a session reaches (the
/// general `DELETE /api/posts/{id}` and the console's moderation queue):
/// the rule of [`moderate_post`], so a moderator (who acts as one only with
/// the `posts:moderate` grant) deletes where they may hide. A token taking
/// the same decision on the versioned admin surface also carries
/// `admin:delete`.
pub fn delete_others_post(actor: Actor) -> Decision {
    moderate_post(actor)
}

/// Approving or rejecting custom emojis: moderators and above.
pub fn moderate_emojis(actor: Actor) -> Decision {
    Decision::allowed_if(actor.role.is_moderator())
}

/// Approving a custom emoji owned by `owner_id`: moderators and above, and
/// never their own (a review is someone else's judgement).
pub fn approve_emoji(actor: Actor, owner_id: Option<i64>) -> Decision {
    if owner_id == Some(actor.user_id) {
        return Decision::Forbidden;
    }
    moderate_emojis(actor)
}

/// Sending a broadcast to users, or withdrawing one: administrators.
pub fn send_broadcast(actor: Actor) -> Decision {
    Decision::allowed_if(actor.role.is_admin())
}

/// Dismissing the alerts of `user_id`: that user themself only.
pub fn dismiss_alerts_of(actor: Actor, user_id: i64) -> Decision {
    Decision::allowed_if(actor.user_id == user_id)
}

/// Reporting a post: anyone who sees it, except its author.
pub fn report_post(actor: Actor, post: &Post) -> Decision {
    match view_post(Some(actor), post) {
        Decision::Allowed => Decision::allowed_if(post.author_id != actor.user_id),
        other => other,
    }
}

/// Reading a reply: whoever may read its post, as the reply's status
/// allows ([`Reply::visible_to`]: held replies for their author and
/// moderators, a deleted one while visible replies are below it).
pub fn view_reply(actor: Option<Actor>, post: &Post, reply: &Reply) -> Decision {
    match view_post(actor, post) {
        Decision::Allowed if reply.visible_to(post_viewer(actor)) => Decision::Allowed,
        Decision::Allowed => Decision::Hidden,
        other => other,
    }
}

/// A rule on a reply that is there to be changed: a placeholder left by a
/// deletion is only read, so to anything else it is not found.
fn act_on_reply(actor: Actor, post: &Post, reply: &Reply, allowed: bool) -> Decision {
    match view_reply(Some(actor), post, reply) {
        Decision::Allowed if reply.status == ReplyStatus::Deleted => Decision::Hidden,
        Decision::Allowed => Decision::allowed_if(allowed),
        other => other,
    }
}

/// Changing a reply's content: its author only.
pub fn edit_reply(actor: Actor, post: &Post, reply: &Reply) -> Decision {
    act_on_reply(actor, post, reply, reply.author_id() == Some(actor.user_id))
}

/// Deleting a reply: its author, or whoever may delete someone else's
/// post ([`delete_others_post`]).
pub fn delete_reply(actor: Actor, post: &Post, reply: &Reply) -> Decision {
    let allowed =
        reply.author_id() == Some(actor.user_id) || delete_others_post(actor).is_allowed();
    act_on_reply(actor, post, reply, allowed)
}

/// Reporting a reply: anyone who sees it, except its author.
pub fn report_reply(actor: Actor, post: &Post, reply: &Reply) -> Decision {
    act_on_reply(actor, post, reply, reply.author_id() != Some(actor.user_id))
}

/// Reacting to a reply, or taking one's reaction back: whoever sees it
/// ([`view_reply`]); a placeholder left by a deletion takes none (not
/// found).
pub fn react_to_reply(actor: Actor, post: &Post, reply: &Reply) -> Decision {
    act_on_reply(actor, post, reply, true)
}

/// Approving, hiding, flagging or deleting replies as a moderator, and
/// locking threads: the rule of [`moderate_post`].
pub fn moderate_reply(actor: Actor) -> Decision {
    moderate_post(actor)
}

/// Warning or silencing a member: moderators and above, on someone else
/// of a lower role (a super admin on anyone but themself).
pub fn discipline(actor: Actor, target: &User) -> Decision {
    if actor.is(target) || !actor.role.is_moderator() {
        return Decision::Forbidden;
    }
    Decision::allowed_if(actor.outranks(target.role))
}

/// Appealing a moderation action: the member it affected; to anyone else
/// it does not exist.
pub fn appeal_action(actor: Actor, affected: Option<i64>) -> Decision {
    if affected == Some(actor.user_id) {
        Decision::Allowed
    } else {
        Decision::Hidden
    }
}

/// Deciding an appeal: a moderator or above other than who took the
/// action appealed (`taken_by`).
pub fn decide_appeal(actor: Actor, taken_by: Option<i64>) -> Decision {
    Decision::allowed_if(actor.role.is_moderator() && taken_by != Some(actor.user_id))
}

/// The unversioned admin surface: an administrator or higher who holds
/// the route's capability (`holds_capability`: granted to them or their
/// role, and active, [`crate::grants`]); a super admin holds every
/// capability without a grant.
pub fn administer(actor: Actor, holds_capability: bool) -> Decision {
    Decision::allowed_if(
        actor.role == Role::SuperAdmin || (actor.role.is_admin() && holds_capability),
    )
}

/// Webhooks (their list, deliveries and redelivery in the console): a
/// super admin, as the API's `admin:super`.
pub fn manage_webhooks(actor: Actor) -> Decision {
    Decision::allowed_if(actor.role == Role::SuperAdmin)
}

/// Admin tokens and the admin surfaces while the setting
/// `admin_totp_required` is on: an administrator needs a second factor
/// (TOTP turned on, and for a session, a sign-in that passed it) to mint a
/// token or to use either admin surface, by session or token. Roles below
/// administrator are left to each surface's own rule (a moderator
/// reviewing custom emojis).
pub fn use_admin_credentials(role: Role, second_factor: bool, totp_required: bool) -> Decision {
    Decision::allowed_if(!totp_required || !role.is_admin() || second_factor)
}

/// The role a session acts with on every route: its user's, except that
/// while `admin_totp_required` is on an administrator whose session passed
/// no second factor acts as a member ([`use_admin_credentials`]), and a
/// moderator acts as one only while holding `posts:moderate`
/// (`holds_moderation`; the role's one power is that grant's). So no
/// route, whatever its own rule, lends either a power they do not hold.
pub fn acting_role(
    role: Role,
    second_factor: bool,
    totp_required: bool,
    holds_moderation: bool,
) -> Role {
    let held_back = !use_admin_credentials(role, second_factor, totp_required).is_allowed()
        || (role == Role::Moderator && !holds_moderation);
    if held_back { Role::User } else { role }
}

/// A user's own security settings (whether two-factor sign-in is on):
/// shown to that user only.
pub fn see_security_settings(actor: Option<Actor>, target: &User) -> bool {
    actor.is_some_and(|actor| actor.is(target))
}

/// What a personal access token may be used for (DECISIONS.md "Tokens for
/// members and bots, and webhooks (round 5)").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenScope {
    /// The general surface's reads (GET routes), notifications aside.
    Read,
    /// Content writes: posts, replies, reactions, reports, follows,
    /// blocks and mutes, uploads.
    Write,
    /// Every notification route, reads included.
    Notifications,
}

impl TokenScope {
    pub const ALL: [TokenScope; 3] = [
        TokenScope::Read,
        TokenScope::Write,
        TokenScope::Notifications,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TokenScope::Read => "read",
            TokenScope::Write => "write",
            TokenScope::Notifications => "notifications",
        }
    }

    pub fn parse(name: &str) -> Option<TokenScope> {
        Self::ALL.into_iter().find(|scope| scope.as_str() == name)
    }
}

/// The scope each operation outside the admin surfaces needs of a
/// personal access token, by method and route template; `None`: no token
/// may call it (sign-in and sessions, token management, account changes,
/// analytics collection, the metrics scrape). An operation missing here
/// is refused to tokens too; a test fails for any documented operation
/// without a row.
pub const TOKEN_SCOPES: &[(&str, &str, Option<TokenScope>)] = {
    use TokenScope::{Notifications, Read, Write};
    &[
        ("GET", "/api/alerts", Some(Read)),
        ("POST", "/api/appeals", None),
        ("POST", "/api/alerts/dismiss", None),
        ("GET", "/api/alerts/stream", Some(Read)),
        ("POST", "/api/analytics/collect", None),
        ("POST", "/api/analytics/collect/batch", None),
        ("GET", "/api/auth/accounts", None),
        ("DELETE", "/api/auth/accounts/{providerId}", None),
        ("GET", "/api/auth/callback/{provider}", None),
        ("POST", "/api/auth/callback/{provider}", None),
        ("GET", "/api/auth/csrf", None),
        ("PUT", "/api/auth/password", None),
        ("POST", "/api/auth/password/forgot", None),
        ("POST", "/api/auth/password/reset", None),
        ("GET", "/api/auth/providers", None),
        ("GET", "/api/auth/session", None),
        ("POST", "/api/auth/session", None),
        ("GET", "/api/auth/sessions", None),
        ("DELETE", "/api/auth/sessions/{id}", None),
        ("GET", "/api/auth/signin", None),
        ("POST", "/api/auth/signin", None),
        ("GET", "/api/auth/signin/{provider}", None),
        ("POST", "/api/auth/signin/{provider}", None),
        ("GET", "/api/auth/signout", None),
        ("POST", "/api/auth/signout", None),
        ("DELETE", "/api/auth/token", None),
        ("POST", "/api/auth/token", None),
        ("POST", "/api/auth/totp/disable", None),
        ("POST", "/api/auth/totp/enable", None),
        ("POST", "/api/auth/totp/setup", None),
        ("GET", "/api/auth/verify-email", None),
        ("POST", "/api/auth/verify-email", None),
        ("POST", "/api/auth/verify-email/resend", None),
        ("GET", "/api/avatar-image", Some(Read)),
        ("GET", "/api/emojis", Some(Read)),
        ("POST", "/api/emojis/custom", Some(Write)),
        ("POST", "/api/emojis/track", None),
        ("POST", "/api/emojis/usage", None),
        ("GET", "/api/feature-flags", Some(Read)),
        ("GET", "/api/feed", Some(Read)),
        ("GET", "/api/health", Some(Read)),
        ("GET", "/api/link-preview", Some(Read)),
        ("POST", "/api/me/appeals", None),
        ("GET", "/api/me/blocks", Some(Read)),
        ("GET", "/api/me/filters", Some(Read)),
        ("POST", "/api/me/filters", None),
        ("DELETE", "/api/me/filters/{id}", None),
        ("GET", "/api/me/moderation-actions", Some(Read)),
        ("GET", "/api/me/mutes", Some(Read)),
        ("GET", "/api/me/tokens", None),
        ("POST", "/api/me/tokens", None),
        ("DELETE", "/api/me/tokens/{id}", None),
        ("GET", "/api/metrics", None),
        ("GET", "/api/modlog", Some(Read)),
        ("GET", "/api/notifications", Some(Notifications)),
        ("GET", "/api/notifications/preferences", Some(Notifications)),
        ("PUT", "/api/notifications/preferences", Some(Notifications)),
        ("GET", "/api/notifications/push/key", Some(Notifications)),
        (
            "POST",
            "/api/notifications/push/subscriptions",
            Some(Notifications),
        ),
        (
            "DELETE",
            "/api/notifications/push/subscriptions/{id}",
            Some(Notifications),
        ),
        ("POST", "/api/notifications/read", Some(Notifications)),
        (
            "GET",
            "/api/notifications/unread-count",
            Some(Notifications),
        ),
        (
            "POST",
            "/api/notifications/unsubscribe",
            Some(Notifications),
        ),
        ("GET", "/api/invites", Some(Read)),
        ("POST", "/api/invites", Some(Write)),
        ("DELETE", "/api/invites/{code}", Some(Write)),
        ("GET", "/api/og-image", Some(Read)),
        ("GET", "/api/posts", Some(Read)),
        ("POST", "/api/posts", Some(Write)),
        ("GET", "/api/posts/{id}", Some(Read)),
        ("PUT", "/api/posts/{id}", Some(Write)),
        ("DELETE", "/api/posts/{id}", Some(Write)),
        ("GET", "/api/posts/{id}/reactions/{emoji}", Some(Read)),
        ("PUT", "/api/posts/{id}/reactions/{emoji}", Some(Write)),
        ("DELETE", "/api/posts/{id}/reactions/{emoji}", Some(Write)),
        ("GET", "/api/posts/{id}/replies", Some(Read)),
        ("POST", "/api/posts/{id}/replies", Some(Write)),
        ("POST", "/api/posts/{id}/report", Some(Write)),
        ("GET", "/api/profile/id/{id}", Some(Read)),
        ("GET", "/api/replies/{id}", Some(Read)),
        ("PUT", "/api/replies/{id}", Some(Write)),
        ("DELETE", "/api/replies/{id}", Some(Write)),
        ("GET", "/api/replies/{id}/reactions/{emoji}", Some(Read)),
        ("PUT", "/api/replies/{id}/reactions/{emoji}", Some(Write)),
        ("DELETE", "/api/replies/{id}/reactions/{emoji}", Some(Write)),
        ("POST", "/api/replies/{id}/report", Some(Write)),
        ("GET", "/api/rules", Some(Read)),
        ("GET", "/api/search", Some(Read)),
        ("GET", "/api/search/posts", Some(Read)),
        ("GET", "/api/search/users", Some(Read)),
        ("POST", "/api/upload", Some(Write)),
        ("POST", "/api/upload/image", Some(Write)),
        ("GET", "/api/uploads/{key}", Some(Read)),
        ("GET", "/api/users", Some(Read)),
        ("POST", "/api/users", None),
        ("GET", "/api/users/{id}", Some(Read)),
        ("PUT", "/api/users/{id}", None),
        ("DELETE", "/api/users/{id}", None),
        ("PUT", "/api/users/{id}/block", Some(Write)),
        ("DELETE", "/api/users/{id}/block", Some(Write)),
        ("GET", "/api/users/{id}/export", None),
        ("PUT", "/api/users/{id}/follow", Some(Write)),
        ("DELETE", "/api/users/{id}/follow", Some(Write)),
        ("GET", "/api/users/{id}/followers", Some(Read)),
        ("GET", "/api/users/{id}/following", Some(Read)),
        ("PUT", "/api/users/{id}/mute", Some(Write)),
        ("DELETE", "/api/users/{id}/mute", Some(Write)),
        ("GET", "/api/users/{id}/profile", Some(Read)),
        ("POST", "/api/users/{id}/report", Some(Write)),
        ("GET", "/api/version", Some(Read)),
        ("GET", "/appeal", None),
        ("POST", "/appeal", None),
        ("GET", "/forgot-password", None),
        ("GET", "/og-image-viewer", Some(Read)),
        ("GET", "/reset-password", None),
        ("GET", "/unsubscribe", None),
        ("POST", "/unsubscribe", None),
    ]
};

/// The scope a token needs for `method` on the route template `path`
/// ([`TOKEN_SCOPES`]; `HEAD` is a `GET`); `None` when no token may call it.
pub fn token_scope(method: &str, path: &str) -> Option<TokenScope> {
    let method = if method == "HEAD" { "GET" } else { method };
    TOKEN_SCOPES
        .iter()
        .find(|(listed, template, _)| *listed == method && *template == path)
        .and_then(|(_, _, scope)| *scope)
}

/// A personal access token holding `scopes` calling `method` on the route
/// template `path`: allowed when it holds the operation's scope.
pub fn use_token(scopes: &[TokenScope], method: &str, path: &str) -> Decision {
    Decision::allowed_if(token_scope(method, path).is_some_and(|needed| scopes.contains(&needed)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Flag;
    use crate::users::UserRow;

    const ROLES: [Role; 4] = [Role::User, Role::Moderator, Role::Admin, Role::SuperAdmin];

    fn user(id: i64, role: Role) -> User {
        User {
            row: UserRow {
                id,
                email: format!("u{id}@example.com"),
                email_verified_at: None,
                username: format!("u{id}"),
                name: None,
                image: None,
                bio: String::new(),
                location: String::new(),
                profile_public: Flag(true),
                password_hash: None,
                role: role.as_str().to_owned(),
                status: "active".to_owned(),
                admin_notes: None,
                login_count: 0,
                last_login_at: None,
                created_at: 0,
                updated_at: 0,
                totp_enabled_at: None,
                is_bot: Flag(false),
            },
            role,
            status: UserStatus::Active,
        }
    }

    fn actor(role: Role) -> Actor {
        Actor { user_id: 1, role }
    }

    /// One letter per decision: A(llowed), F(orbidden), H(idden).
    fn letter(decision: Decision) -> char {
        match decision {
            Decision::Allowed => 'A',
            Decision::Forbidden => 'F',
            Decision::Hidden => 'H',
        }
    }

    /// For each actor role (rows: user, moderator, admin, super_admin), the
    /// decision on a target of each role (columns, same order), then on
    /// themselves (last column).
    fn table(rule: impl Fn(Actor, &User) -> Decision) -> Vec<String> {
        ROLES
            .iter()
            .map(|role| {
                let me = actor(*role);
                let mut row: String = ROLES
                    .iter()
                    .map(|target| letter(rule(me, &user(2, *target))))
                    .collect();
                row.push(letter(rule(me, &user(1, *role))));
                row
            })
            .collect()
    }

    #[test]
    fn moderators_open_the_console_and_delete_on_every_surface() {
        let decide = |rule: fn(Actor) -> Decision| {
            [Role::User, Role::Moderator, Role::Admin, Role::SuperAdmin]
                .map(|role| rule(Actor { user_id: 1, role }).is_allowed())
        };
        assert_eq!(decide(use_console), [false, true, true, true]);
        assert_eq!(decide(delete_others_post), [false, true, true, true]);
    }

    #[test]
    fn the_front_door_by_role() {
        let decide = |rule: fn(Actor) -> Decision| {
            [Role::User, Role::Moderator, Role::Admin, Role::SuperAdmin]
                .map(|role| rule(Actor { user_id: 1, role }).is_allowed())
        };
        assert_eq!(decide(change_site_settings), [false, false, false, true]);
        assert_eq!(decide(guard_front_door), [false, false, true, true]);
        let week = 7;
        // (role, invites by members, account age) -> may invite
        for (role, by_members, age, allowed) in [
            (Role::User, false, 30, false),
            (Role::User, true, 6, false),
            (Role::User, true, 7, true),
            (Role::Moderator, true, 8, true),
            (Role::Moderator, false, 8, false),
            (Role::Admin, false, 0, true),
            (Role::SuperAdmin, false, 0, true),
        ] {
            assert_eq!(
                create_invite(actor(role), 100 - age, by_members, week, 100).is_allowed(),
                allowed,
                "{role:?} {by_members} {age}"
            );
        }
        assert!(!sign_up_unconditionally(None));
        assert!(!sign_up_unconditionally(Some(actor(Role::Moderator))));
        assert!(sign_up_unconditionally(Some(actor(Role::Admin))));
    }

    #[test]
    fn admin_token_permissions_by_method_and_role() {
        for (method, needed) in [
            ("GET", AdminPermission::Read),
            ("HEAD", AdminPermission::Read),
            ("OPTIONS", AdminPermission::Read),
            ("POST", AdminPermission::Write),
            ("PUT", AdminPermission::Write),
            ("PATCH", AdminPermission::Write),
            ("DELETE", AdminPermission::Delete),
        ] {
            assert_eq!(AdminPermission::for_method(method), needed, "{method}");
        }
        let allowed = |role| AdminPermission::allowed_for(role).to_vec();
        assert_eq!(allowed(Role::User), []);
        assert_eq!(allowed(Role::Moderator), []);
        assert_eq!(
            allowed(Role::Admin),
            [
                AdminPermission::Read,
                AdminPermission::Write,
                AdminPermission::Delete
            ]
        );
        assert_eq!(allowed(Role::SuperAdmin), AdminPermission::ALL);
    }

    #[test]
    fn exports_are_for_the_user_and_the_administrators_who_manage_users() {
        let holding = |actor, target: &User| export_user(actor, target, true);
        let lacking = |actor, target: &User| export_user(actor, target, false);
        assert_eq!(table(holding), ["FFFFA", "FFFFA", "AAFFA", "AAAAA"]);
        assert_eq!(table(lacking), ["FFFFA", "FFFFA", "FFFFA", "AAAAA"]);
        let mut private = user(2, Role::User);
        private.row.profile_public = crate::Flag(false);
        assert_eq!(
            export_user(actor(Role::User), &private, false),
            Decision::Hidden
        );
        assert_eq!(
            export_user(actor(Role::Admin), &private, true),
            Decision::Allowed
        );
    }

    #[test]
    fn every_role_against_every_user_rule() {
        assert_eq!(table(manage_user), ["FFFFA", "FFFFA", "AAFFA", "AAAAA"]);
        assert_eq!(table(change_status), ["FFFFF", "FFFFF", "AAFFF", "AAAAF"]);
        assert_eq!(
            table(edit_admin_fields),
            ["FFFFF", "FFFFF", "AAFFF", "AAAAF"]
        );
        assert_eq!(table(ban), ["FFFFF", "FFFFF", "AAFFF", "AAAFF"]);
        assert_eq!(table(discipline), ["FFFFF", "AFFFF", "AAFFF", "AAAAF"]);
        for role in ROLES {
            let me = actor(role);
            assert_eq!(
                decide_appeal(me, Some(2)).is_allowed(),
                role.is_moderator(),
                "{role:?} decides another moderator's action"
            );
            assert_eq!(
                decide_appeal(me, Some(1)),
                Decision::Forbidden,
                "never their own"
            );
            assert_eq!(appeal_action(me, Some(1)), Decision::Allowed);
            assert_eq!(appeal_action(me, Some(2)), Decision::Hidden);
        }
        assert_eq!(
            table(|actor, target| grant_role(actor, target, Role::Moderator)),
            ["FFFFF", "FFFFF", "AAFFF", "AAAAF"]
        );
        assert_eq!(
            table(|actor, target| grant_role(actor, target, Role::Admin)),
            ["FFFFF", "FFFFF", "AAFFF", "AAAAF"]
        );
        assert_eq!(
            table(|actor, target| grant_role(actor, target, Role::SuperAdmin)),
            ["FFFFF", "FFFFF", "FFFFF", "FFFFF"]
        );
        assert_eq!(
            table(|actor, target| view_user(Some(actor), target)),
            ["AAAAA"; 4]
        );
        assert_eq!(
            table(|actor, target| view_profile(Some(actor), target)),
            ["AAAAA"; 4]
        );
    }

    #[test]
    fn hidden_users_are_not_found_to_those_who_cannot_see_them() {
        let mut private = user(2, Role::User);
        private.row.profile_public = Flag(false);
        for role in ROLES {
            let expected = if role.is_admin() {
                Decision::Allowed
            } else {
                Decision::Hidden
            };
            assert_eq!(view_user(Some(actor(role)), &private), expected, "{role:?}");
            assert_eq!(see_email(Some(actor(role)), &private), role.is_admin());
            let managed = if role.is_admin() {
                Decision::Allowed
            } else {
                Decision::Hidden
            };
            assert_eq!(manage_user(actor(role), &private), managed, "{role:?}");
        }
        assert_eq!(view_user(None, &private), Decision::Hidden);
        assert_eq!(view_user(None, &user(2, Role::User)), Decision::Allowed);
        // A private profile is forbidden rather than hidden, as idling.app
        // answers it; a banned user stays hidden.
        let mut banned = user(2, Role::User);
        banned.status = UserStatus::Banned;
        for role in ROLES {
            let (private_expected, banned_expected) = if role.is_admin() {
                (Decision::Allowed, Decision::Allowed)
            } else {
                (Decision::Forbidden, Decision::Hidden)
            };
            assert_eq!(
                view_profile(Some(actor(role)), &private),
                private_expected,
                "{role:?}"
            );
            assert_eq!(
                view_profile(Some(actor(role)), &banned),
                banned_expected,
                "{role:?}"
            );
        }
        assert_eq!(view_profile(None, &private), Decision::Forbidden);
        assert_eq!(view_profile(None, &banned), Decision::Hidden);
        assert_eq!(view_profile(None, &user(2, Role::User)), Decision::Allowed);
        assert!(!see_email(None, &user(2, Role::User)));
        assert_eq!(create_user_without_signup(None), Decision::Forbidden);
        for role in ROLES {
            let someone = Some(Actor { user_id: 7, role });
            assert_eq!(see_email_of(someone, 8), role.is_admin(), "{role:?}");
            assert!(see_email_of(someone, 7), "{role:?}: their own");
        }
        assert!(!see_email_of(None, 8));
    }

    #[test]
    fn emojis_are_approved_by_moderators_and_never_their_own() {
        let rows: Vec<String> = ROLES
            .iter()
            .map(|role| {
                [Some(2), None, Some(1)]
                    .into_iter()
                    .map(|owner| letter(approve_emoji(actor(*role), owner)))
                    .collect()
            })
            .collect();
        assert_eq!(rows, ["FFF", "AAF", "AAF", "AAF"]);
    }

    #[test]
    fn every_role_against_every_post_rule() {
        let post = |author_id: i64, published: bool| Post {
            id: 9,
            author_id,
            title: "Title".to_owned(),
            content: "Content".to_owned(),
            tags: Vec::new(),
            published,
            moderation: crate::posts::Moderation::None,
            report_count: 0,
            reply_count: 0,
            locked: false,
            created_at: 0,
            updated_at: 0,
            held: false,
            review_reason: None,
        };
        for role in ROLES {
            let me = actor(role);
            let moderator = role.is_moderator();
            let others_draft = post(2, false);
            let own_draft = post(1, false);
            let others_public = post(2, true);
            assert_eq!(
                edit_post(me, &others_public).is_allowed(),
                delete_others_post(me).is_allowed(),
                "one delete rule for {role:?} on the general route and the console"
            );
            let expect = |allowed: bool, hidden: bool| match (allowed, hidden) {
                (true, _) => Decision::Allowed,
                (false, true) => Decision::Hidden,
                (false, false) => Decision::Forbidden,
            };
            assert_eq!(view_post(Some(me), &others_draft), expect(moderator, true));
            assert_eq!(view_post(Some(me), &own_draft), Decision::Allowed);
            assert_eq!(
                edit_post(me, &others_public),
                expect(moderator, false),
                "{role:?}"
            );
            assert_eq!(
                edit_post(me, &others_draft),
                expect(moderator, true),
                "{role:?}"
            );
            assert_eq!(edit_post(me, &own_draft), Decision::Allowed);
            assert_eq!(report_post(me, &others_public), Decision::Allowed);
            assert_eq!(react_to_post(me, &others_public), Decision::Allowed);
            assert_eq!(react_to_post(me, &own_draft), Decision::Allowed);
            assert_eq!(
                react_to_post(me, &others_draft),
                expect(moderator, true),
                "{role:?}"
            );
            assert_eq!(report_post(me, &post(1, true)), Decision::Forbidden);
            assert_eq!(moderate_post(me), expect(moderator, false));
            assert_eq!(send_broadcast(me), expect(role.is_admin(), false));
            assert_eq!(dismiss_alerts_of(me, 1), Decision::Allowed);
            assert_eq!(dismiss_alerts_of(me, 2), Decision::Forbidden);
        }
        assert_eq!(view_post(None, &post(2, true)), Decision::Allowed);
        assert_eq!(view_post(None, &post(2, false)), Decision::Hidden);
    }

    #[test]
    fn every_role_against_every_reply_rule() {
        use crate::replies::ReplyAuthor;
        let post = |published: bool| Post {
            id: 9,
            author_id: 3,
            title: "Title".to_owned(),
            content: "Content".to_owned(),
            tags: Vec::new(),
            published,
            moderation: crate::posts::Moderation::None,
            report_count: 0,
            reply_count: 1,
            locked: false,
            created_at: 0,
            updated_at: 0,
            held: false,
            review_reason: None,
        };
        let reply = |author_id: Option<i64>, status: ReplyStatus, reply_count: i64| Reply {
            id: 5,
            post_id: 9,
            parent_id: None,
            author: author_id.map(|id| ReplyAuthor {
                id,
                username: format!("u{id}"),
                name: None,
                image: None,
                is_bot: false,
            }),
            content: "Hello".to_owned(),
            status,
            depth: 0,
            path: "0".to_owned(),
            reply_count,
            report_count: 0,
            created_at: 0,
            updated_at: 0,
            edited_at: None,
            review_reason: None,
        };
        let public = post(true);
        // Rows: user, moderator, admin, super_admin; columns: view, edit,
        // delete, report, react, each on someone else's reply, one's own, someone
        // else's hidden one, and a placeholder with replies below.
        let rows: Vec<String> = ROLES
            .iter()
            .map(|role| {
                let me = actor(*role);
                let others = reply(Some(2), ReplyStatus::Published, 0);
                let own = reply(Some(1), ReplyStatus::Published, 0);
                let hidden = reply(Some(2), ReplyStatus::Hidden, 0);
                let placeholder = reply(None, ReplyStatus::Deleted, 2);
                [&others, &own, &hidden, &placeholder]
                    .into_iter()
                    .map(|item| {
                        [
                            view_reply(Some(me), &public, item),
                            edit_reply(me, &public, item),
                            delete_reply(me, &public, item),
                            report_reply(me, &public, item),
                            react_to_reply(me, &public, item),
                        ]
                        .map(letter)
                        .into_iter()
                        .collect::<String>()
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        assert_eq!(
            rows,
            [
                "AFFAA AAAFA HHHHH AHHHH",
                "AFAAA AAAFA AFAAA AHHHH",
                "AFAAA AAAFA AFAAA AHHHH",
                "AFAAA AAAFA AFAAA AHHHH",
            ]
        );
        let draft = post(false);
        let others = reply(Some(2), ReplyStatus::Published, 0);
        assert_eq!(view_reply(None, &draft, &others), Decision::Hidden);
        assert_eq!(view_reply(None, &public, &others), Decision::Allowed);
        assert_eq!(
            view_reply(None, &public, &reply(None, ReplyStatus::Deleted, 0)),
            Decision::Hidden
        );
        assert_eq!(moderate_reply(actor(Role::User)), Decision::Forbidden);
        assert_eq!(moderate_reply(actor(Role::Moderator)), Decision::Allowed);
    }

    #[test]
    fn administrators_need_totp_only_while_it_is_required() {
        for role in ROLES {
            for has_totp in [false, true] {
                assert!(use_admin_credentials(role, has_totp, false).is_allowed());
                let required = use_admin_credentials(role, has_totp, true);
                assert_eq!(
                    required.is_allowed(),
                    has_totp || !role.is_admin(),
                    "{role:?} with TOTP {has_totp}"
                );
            }
        }
        assert_eq!(
            use_admin_credentials(Role::SuperAdmin, false, true),
            Decision::Forbidden
        );
        for role in ROLES {
            assert_eq!(acting_role(role, false, false, true), role);
            assert_eq!(acting_role(role, true, true, true), role);
            let held_back = acting_role(role, false, true, true);
            if role.is_admin() {
                assert_eq!(held_back, Role::User, "{role:?} acts as a member");
            } else {
                assert_eq!(held_back, role, "{role:?} keeps its role");
            }
        }
    }

    #[test]
    fn a_moderator_moderates_only_with_the_grant() {
        for role in ROLES {
            let without = acting_role(role, true, false, false);
            if role == Role::Moderator {
                assert_eq!(without, Role::User, "a moderator without posts:moderate");
            } else {
                assert_eq!(without, role, "{role:?} does not need it to keep its role");
            }
        }
    }

    #[test]
    fn security_settings_are_shown_to_their_user_only() {
        let target = user(1, Role::User);
        assert!(see_security_settings(Some(actor(Role::User)), &target));
        let admin = Actor {
            user_id: 2,
            role: Role::SuperAdmin,
        };
        assert!(!see_security_settings(Some(admin), &target));
        assert!(!see_security_settings(None, &target));
    }
}
