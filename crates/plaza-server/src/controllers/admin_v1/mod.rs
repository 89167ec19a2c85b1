//! The versioned admin surface, `/api/v1/admin` (SPEC.md "Versioned admin
//! surface"): its routes and the rules they share, in one place.
//!
//! - **Authentication**: every handler takes [`crate::auth::AdminToken`]: a
//!   Bearer admin JWT of an active admin, holding the permission of the
//!   request's method category (`admin:read` for GET, `admin:write` for
//!   POST/PUT/PATCH, `admin:delete` for DELETE; `admin:super` covers all).
//! - **Errors**: `{success: false, error: {code, message, …}}`, declared for
//!   the group in `app::api_router` (`on_surface(Surface::AdminV1, …)`).
//! - **Rate limit**: per admin, tier `general` or `super`, declared in
//!   `app::api_router` with `Limit::AdminV1`; the system actions
//!   ([`system_routes`]) are their own group in tier `system`
//!   (`Limit::SystemAction`). Every answer carries `X-Admin-Tier` and the
//!   `X-RateLimit-*` headers.
//! - **Answers**: lists in [`envelope::ListEnvelope`], single objects in
//!   [`envelope::Envelope`].
//! - **Lists**: their paging and sort are read by [`listing::ListQuery`];
//!   each list reads its own filters.
//! - **Changes**: read their target inside their unit of work, ask
//!   `plaza_domain::policy` there, and commit with their audit entry.
//! - **Locks**: mutating operations on a user, post or reply take its edit lock
//!   (`plaza_domain::locks`); another admin's write meanwhile is 423
//!   `RESOURCE_LOCKED`.

pub mod analytics;
pub mod audit_logs;
pub mod broadcasts;
pub mod email_domain_blocks;
pub mod envelope;
pub mod feature_flags;
pub mod ip_blocks;
pub mod listing;
pub mod moderation;
pub mod posts;
pub mod registrations;
pub mod replies;
pub mod reports;
pub mod site_settings;
pub mod system;
pub mod users;
pub mod webhooks;
pub mod word_filters;

use analytics::{__path_platform_analytics, platform_analytics};
use audit_logs::{__path_list_audit_logs, list_audit_logs};
use broadcasts::{
    __path_cancel_broadcast, __path_create_broadcast, __path_list_broadcasts, cancel_broadcast,
    create_broadcast, list_broadcasts,
};
use email_domain_blocks::{
    __path_create_email_domain_block, __path_delete_email_domain_block,
    __path_list_email_domain_blocks, create_email_domain_block, delete_email_domain_block,
    list_email_domain_blocks,
};
use feature_flags::{
    __path_delete_feature_flag, __path_list_feature_flags, __path_put_feature_flag,
    delete_feature_flag, list_feature_flags, put_feature_flag,
};
use ip_blocks::{
    __path_create_ip_block, __path_delete_ip_block, __path_list_ip_blocks, create_ip_block,
    delete_ip_block, list_ip_blocks,
};
use moderation::{
    __path_decide_appeal, __path_list_appeals, __path_list_warnings, __path_put_rules,
    __path_silence_user, __path_unsilence_user, __path_warn_user, decide_appeal, list_appeals,
    list_warnings, put_rules, silence_user, unsilence_user, warn_user,
};
use posts::{__path_list_admin_posts, __path_moderate_post, list_admin_posts, moderate_post};
use registrations::{
    __path_decide_registration, __path_list_registrations, decide_registration, list_registrations,
};
use replies::{
    __path_list_admin_replies, __path_moderate_reply, list_admin_replies, moderate_reply,
};
use reports::{
    __path_moderation_report, __path_user_activity_report, moderation_report, user_activity_report,
};
use site_settings::{
    __path_get_site_settings, __path_put_site_settings, get_site_settings, put_site_settings,
};
use system::{__path_run_maintenance, run_maintenance};
use users::{
    __path_ban_admin_user, __path_bulk_update_users, __path_get_admin_user,
    __path_list_admin_users, __path_update_admin_user, ban_admin_user, bulk_update_users,
    get_admin_user, list_admin_users, update_admin_user,
};
use word_filters::{
    __path_create_word_filter, __path_delete_word_filter, __path_list_word_filters,
    create_word_filter, delete_word_filter, list_word_filters,
};

use webhooks::{
    __path_create_webhook, __path_delete_webhook, __path_get_webhook, __path_list_deliveries,
    __path_list_webhooks, __path_redeliver, __path_update_webhook, create_webhook, delete_webhook,
    get_webhook, list_deliveries, list_webhooks, redeliver, update_webhook,
};

use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::documented_routes!(list_audit_logs))
        .routes(crate::documented_routes!(list_admin_users))
        .routes(crate::documented_routes!(get_admin_user, update_admin_user))
        .routes(crate::documented_routes!(ban_admin_user))
        .routes(crate::documented_routes!(bulk_update_users))
        .routes(crate::documented_routes!(list_feature_flags))
        .routes(crate::documented_routes!(
            put_feature_flag,
            delete_feature_flag
        ))
        .routes(crate::documented_routes!(
            get_site_settings,
            put_site_settings
        ))
        .routes(crate::documented_routes!(list_registrations))
        .routes(crate::documented_routes!(decide_registration))
        .routes(crate::documented_routes!(
            list_email_domain_blocks,
            create_email_domain_block
        ))
        .routes(crate::documented_routes!(delete_email_domain_block))
        .routes(crate::documented_routes!(list_ip_blocks, create_ip_block))
        .routes(crate::documented_routes!(delete_ip_block))
        .routes(crate::documented_routes!(user_activity_report))
        .routes(crate::documented_routes!(moderation_report))
        .routes(crate::documented_routes!(list_admin_posts))
        .routes(crate::documented_routes!(moderate_post))
        .routes(crate::documented_routes!(list_admin_replies))
        .routes(crate::documented_routes!(moderate_reply))
        .routes(crate::documented_routes!(create_broadcast))
        .routes(crate::documented_routes!(list_broadcasts))
        .routes(crate::documented_routes!(cancel_broadcast))
        .routes(crate::documented_routes!(platform_analytics))
        .routes(crate::documented_routes!(list_webhooks, create_webhook))
        .routes(crate::documented_routes!(
            get_webhook,
            update_webhook,
            delete_webhook
        ))
        .routes(crate::documented_routes!(list_deliveries))
        .routes(crate::documented_routes!(redeliver))
        .routes(crate::documented_routes!(put_rules))
        .routes(crate::documented_routes!(warn_user, list_warnings))
        .routes(crate::documented_routes!(silence_user, unsilence_user))
        .routes(crate::documented_routes!(list_appeals))
        .routes(crate::documented_routes!(decide_appeal))
        .routes(crate::documented_routes!(
            list_word_filters,
            create_word_filter
        ))
        .routes(crate::documented_routes!(delete_word_filter))
}

/// The system actions, in a rate tier of their own (`system`).
pub fn system_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::documented_routes!(run_maintenance))
}
