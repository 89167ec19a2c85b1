//! The OpenAPI document and the Swagger UI page.

use utoipa::openapi::path::{HttpMethod, OperationBuilder};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi as OpenApiDocument};
use utoipa::{Modify, OpenApi, ToSchema};

use crate::http::error::schema::{
    AdminError, AdminV1Error, GeneralError, ImageError, PlainError, UploadError,
};

/// Path of the machine-readable document.
pub const OPENAPI_PATH: &str = "/api/openapi";
/// Path of the interactive page.
pub const SWAGGER_PATH: &str = "/api/swagger";

/// The document's fixed parts; operations are added by each controller's
/// `routes()` as the router is built, so a route cannot be served undocumented.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Plaza API",
        description = "Back end of a community platform: identity, profiles, posts, replies, search, moderation, analytics and generated images. Errors come in the shape of the surface that answers; see the `*Error` schemas.",
    ),
    components(schemas(GeneralError, AdminV1Error, AdminError, UploadError, PlainError, ImageError)),
    modifiers(&SecuritySchemes),
    tags(
        (name = "system", description = "Health, version, metrics and this document"),
        (name = "auth", description = "Sign-in, sessions, linked accounts and admin tokens"),
        (name = "users", description = "Accounts and profiles"),
        (name = "posts", description = "Posts, their tags and reports"),
        (name = "replies", description = "Replies in threads: answering posts and replies, reading threads, reports on replies"),
        (name = "members", description = "Between members: follows and the feed, blocks, mutes and keyword filters"),
        (name = "moderation", description = "Site rules, the moderation actions affecting the caller, appeals, the public moderation log and reports on members"),
        (name = "search", description = "Full-text search over posts, replies and users"),
        (name = "images", description = "Generated avatars and share images"),
        (name = "link-preview", description = "Metadata of external pages"),
        (name = "alerts", description = "The signed-in user's alerts: broadcasts and moderation notes"),
        (name = "notifications", description = "The signed-in member's notifications, their preferences, mail unsubscribe and Web Push subscriptions"),
        (name = "analytics", description = "Interaction events from signed-in clients"),
        (name = "uploads", description = "Image uploads and the stored files"),
        (name = "emojis", description = "The emoji catalog per platform, custom emojis and usage counts"),
        (name = "feature-flags", description = "The feature flags, evaluated for the caller"),
        (name = "admin", description = "The unversioned admin surface, /api/admin: session or admin JWT of an administrator, `{error, details}` errors"),
        (name = "admin-v1", description = "The versioned admin surface, /api/v1/admin: Bearer admin JWT, permission by method, `{success, data}` envelopes, tiered rate limits"),
    )
)]
pub struct ApiDoc;

/// The raw bytes of a file, such as an image.
// The document's `type: string, format: binary`, which client generators
// type as a file; handlers answer the bytes themselves.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct Binary(pub Vec<u8>);

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut OpenApiDocument) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "admin_jwt",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some("Admin JWT from POST /api/auth/token"))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "session_cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                "plaza_session",
                "Session cookie set at sign-in",
            ))),
        );
    }
}

/// Completes the collected document with the version and the two routes the
/// Swagger UI router serves itself.
pub fn finish(mut document: OpenApiDocument) -> OpenApiDocument {
    document.info.version = env!("CARGO_PKG_VERSION").to_owned();
    // The document is a JSON object; its own schema is OpenAPI's.
    let json = ContentBuilder::new()
        .schema(Some(
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .additional_properties(Some(AdditionalProperties::FreeForm(true))),
        ))
        .build();
    document.paths.add_path_operation(
        OPENAPI_PATH,
        vec![HttpMethod::Get],
        OperationBuilder::new()
            .tag("system")
            .operation_id(Some("openapi"))
            .summary(Some("This OpenAPI 3.1 document"))
            .response(
                "200",
                ResponseBuilder::new()
                    .description("The OpenAPI document")
                    .content("application/json", json),
            ),
    );
    document.paths.add_path_operation(
        SWAGGER_PATH,
        vec![HttpMethod::Get],
        OperationBuilder::new()
            .tag("system")
            .operation_id(Some("swagger"))
            .summary(Some(
                "Interactive API reference (Swagger UI, assets bundled)",
            ))
            .response(
                "303",
                ResponseBuilder::new().description("Redirect to the page at /api/swagger/"),
            ),
    );
    document
}
