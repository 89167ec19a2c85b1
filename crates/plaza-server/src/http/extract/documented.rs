//! What each extractor can answer instead of letting its handler run, so the
//! OpenAPI document lists every status an operation can give. A route gets
//! its extractors' answers by using them ([`documented_routes!`]), and a new
//! extractor cannot be used in a documented route until it says what it
//! answers: the contract follows the types, not anyone's memory.

use axum::extract::{Extension, RawQuery, Request, State};
use axum::http::HeaderMap;
use axum::routing::MethodRouter;
use utoipa::openapi::path::{HttpMethod, Operation, PathItem, Paths};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::{ContentBuilder, Ref, RefOr};
use utoipa_axum::router::OpenApiRouter;

use crate::http::error::{ERROR_SHAPE_EXTENSION, Surface};

/// One status an extractor (or the middleware) can answer, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub description: &'static str,
}

impl Answer {
    pub const fn new(status: u16, description: &'static str) -> Self {
        Answer {
            status,
            description,
        }
    }
}

/// An extractor's possible refusals.
pub trait DocumentedExtractor {
    const ANSWERS: &'static [Answer];
}

/// A handler's extractors, as axum's `Handler<T, S>` names them: `((),)`
/// for no argument, `(M, T1, …, Tn)` otherwise (`M` marks how the last one
/// extracts).
pub trait DocumentedExtractors {
    fn answers() -> Vec<Answer>;
}

impl DocumentedExtractors for ((),) {
    fn answers() -> Vec<Answer> {
        Vec::new()
    }
}

macro_rules! documented_tuple {
    ($($extractor:ident),+) => {
        impl<M, $($extractor: DocumentedExtractor),+> DocumentedExtractors for (M, $($extractor,)+) {
            fn answers() -> Vec<Answer> {
                let mut answers = Vec::new();
                $(answers.extend_from_slice($extractor::ANSWERS);)+
                answers
            }
        }
    };
}

documented_tuple!(T1);
documented_tuple!(T1, T2);
documented_tuple!(T1, T2, T3);
documented_tuple!(T1, T2, T3, T4);
documented_tuple!(T1, T2, T3, T4, T5);
documented_tuple!(T1, T2, T3, T4, T5, T6);
documented_tuple!(T1, T2, T3, T4, T5, T6, T7);
documented_tuple!(T1, T2, T3, T4, T5, T6, T7, T8);

impl<S> DocumentedExtractor for State<S> {
    const ANSWERS: &'static [Answer] = &[];
}

impl DocumentedExtractor for HeaderMap {
    const ANSWERS: &'static [Answer] = &[];
}

impl<T> DocumentedExtractor for Extension<T> {
    const ANSWERS: &'static [Answer] = &[];
}

impl DocumentedExtractor for RawQuery {
    const ANSWERS: &'static [Answer] = &[];
}

/// A handler taking the whole request reads its body itself (JSON or a
/// form), so it can meet every body problem.
impl DocumentedExtractor for Request {
    const ANSWERS: &'static [Answer] = &[
        Answer::new(400, "Malformed body"),
        Answer::new(413, "Body larger than the limit"),
        Answer::new(415, "Unsupported content type"),
        Answer::new(422, "Well-formed body with missing or invalid fields"),
    ];
}

/// What the middleware in front of every route can answer.
const EVERY_OPERATION: &[Answer] = &[
    Answer::new(
        422,
        "A query parameter holding a NUL byte (`%00`), refused before the handler runs",
    ),
    Answer::new(408, "The request took longer than `request_timeout_secs`"),
    Answer::new(
        403,
        "The client's address is covered by an IP block of severity `all` (`IP_BLOCKED`; never on `/api/health` and `/api/version`)",
    ),
    Answer::new(
        500,
        "An unexpected failure (logged; nothing internal in the body)",
    ),
    Answer::new(
        503,
        "The database is unreachable, or a bounded resource is busy (`Retry-After`)",
    ),
];

/// What the middleware answers to writes: a cookie-authenticated write from
/// another origin is refused.
const EVERY_WRITE: &[Answer] = &[Answer::new(
    403,
    "A cookie-authenticated write from another origin",
)];

/// Adds to each operation of `methods` in `paths` the answers of the
/// handler's extractors and of the middleware, in the general error shape
/// until the route's group declares its surface ([`adopt_surface`]),
/// keeping any the handler documents itself.
pub fn add_extractor_answers<H, T, S>(
    paths: &mut Paths,
    methods: &[HttpMethod],
    _handler: &H,
    _router: &MethodRouter<S>,
) where
    H: axum::handler::Handler<T, S>,
    T: DocumentedExtractors,
{
    let extractors = T::answers();
    for item in paths.paths.values_mut() {
        for method in methods {
            let is_write = matches!(
                method,
                HttpMethod::Post | HttpMethod::Put | HttpMethod::Patch | HttpMethod::Delete
            );
            if let Some(operation) = operation_mut(item, method) {
                let middleware =
                    EVERY_OPERATION
                        .iter()
                        .chain(if is_write { EVERY_WRITE } else { &[] });
                for answer in extractors.iter().chain(middleware) {
                    document_answer(operation, *answer);
                }
            }
        }
    }
}

/// Documents a limited route's 429 on each of its operations, in the
/// general error shape until the route's group declares its surface
/// ([`adopt_surface`]), and the headers every answer of the route carries:
/// `X-RateLimit-*`, and `X-Admin-Tier` when `admin_tiers` names the tiers
/// the route answers in. They are optional in the document: with rate
/// limits turned off (`rate_limits_enabled = false`) no answer has them.
pub fn document_rate_limit(item: &mut PathItem, admin_tiers: Option<&str>) {
    let surface = Surface::General;
    let header = |description: &str| {
        utoipa::openapi::HeaderBuilder::new()
            .schema(utoipa::openapi::schema::Object::with_type(
                utoipa::openapi::schema::Type::Integer,
            ))
            .description(Some(description))
            .build()
    };
    let tier = admin_tiers.map(|tiers| {
        utoipa::openapi::HeaderBuilder::new()
            .schema(utoipa::openapi::schema::Object::with_type(
                utoipa::openapi::schema::Type::String,
            ))
            .description(Some(format!(
                "The rate-limit tier that counted this request: {tiers}"
            )))
            .build()
    });
    let counters = [
        ("X-RateLimit-Limit", header("Requests allowed per period")),
        ("X-RateLimit-Remaining", header("Requests left now")),
        (
            "X-RateLimit-Reset",
            header("Unix time (seconds) when the full quota is back"),
        ),
    ];
    let body = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name(surface.error_schema_name())))
        .build();
    let refused = ResponseBuilder::new()
        .description("A rate limit was reached (`RATE_LIMITED`); every answer of this route carries the `X-RateLimit-*` headers")
        .content("application/json", body)
        .header("Retry-After", header("Seconds until a request would be allowed"))
        .header("X-RateLimit-Limit", header("Requests allowed per period"))
        .header("X-RateLimit-Remaining", header("Requests left now"))
        .header("X-RateLimit-Reset", header("Unix time (seconds) when the full quota is back"))
        .build();
    for method in ALL_METHODS {
        if let Some(operation) = operation_mut(item, &method) {
            operation
                .responses
                .responses
                .entry("429".to_owned())
                .or_insert_with(|| refused.clone().into());
            for answer in operation.responses.responses.values_mut() {
                let RefOr::T(answer) = answer else { continue };
                for (name, header) in &counters {
                    answer
                        .headers
                        .entry((*name).to_owned())
                        .or_insert_with(|| header.clone());
                }
                if let Some(tier) = &tier {
                    answer
                        .headers
                        .entry("X-Admin-Tier".to_owned())
                        .or_insert_with(|| tier.clone());
                }
            }
        }
    }
}

fn document_answer(operation: &mut Operation, answer: Answer) {
    let status = answer.status.to_string();
    if operation.responses.responses.contains_key(&status) {
        return;
    }
    let body = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name(
            Surface::General.error_schema_name(),
        )))
        .build();
    operation.responses.responses.insert(
        status,
        ResponseBuilder::new()
            .description(answer.description)
            .content("application/json", body)
            .build()
            .into(),
    );
}

/// Declares that the routes of `routes` answer errors in `surface`'s
/// shape: the one place a route group names its surface. Each operation
/// of the group is marked with its error schema (the OpenAPI extension
/// [`ERROR_SHAPE_EXTENSION`]), from which
/// [`SurfaceMap`](crate::http::error::SurfaceMap) tells the
/// middleware the surface of a matched route, so no layer wraps the
/// group's routes (a layer cost every request of a group an allocation
/// and a boxed call: 12% of the instructions of `GET /api/version`,
/// measured with `bench/instructions.sh`). The group's error answers,
/// documented in the general shape by `documented_routes!` and `limited`,
/// take the surface's schema and statuses.
pub fn on_surface<S>(surface: Surface, mut routes: OpenApiRouter<S>) -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    for item in routes.get_openapi_mut().paths.paths.values_mut() {
        adopt_surface(item, surface);
        mark_error_shape(item, surface);
    }
    routes
}

/// Marks each operation of `item` with the schema of `surface`'s error
/// body (see [`crate::http::error::SurfaceMap`]).
pub fn mark_error_shape(item: &mut PathItem, surface: Surface) {
    for method in ALL_METHODS {
        if let Some(operation) = operation_mut(item, &method) {
            operation
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    ERROR_SHAPE_EXTENSION.to_owned(),
                    surface.error_schema_name().into(),
                );
        }
    }
}

/// Moves the general-shape error answers of `item`'s operations (those
/// [`add_extractor_answers`] and [`document_rate_limit`] wrote) into
/// `surface`'s schema and statuses; answers a handler documents in its own
/// surface's schema are kept as they are.
pub fn adopt_surface(item: &mut PathItem, surface: Surface) {
    if surface == Surface::General {
        return;
    }
    let general = Ref::from_schema_name(Surface::General.error_schema_name()).ref_location;
    let own = Ref::from_schema_name(surface.error_schema_name());
    for method in ALL_METHODS {
        let Some(operation) = operation_mut(item, &method) else {
            continue;
        };
        let responses = std::mem::take(&mut operation.responses.responses);
        for (status, mut response) in responses {
            let mut adopted = false;
            if let RefOr::T(response) = &mut response {
                for content in response.content.values_mut() {
                    if let Some(RefOr::Ref(schema)) = &content.schema
                        && schema.ref_location == general
                    {
                        content.schema = Some(RefOr::Ref(own.clone()));
                        adopted = true;
                    }
                }
            }
            let status = match status.parse::<u16>() {
                Ok(code) if adopted => surface.status_for(code).to_string(),
                _ => status,
            };
            operation
                .responses
                .responses
                .entry(status)
                .or_insert(response);
        }
    }
}

const ALL_METHODS: [HttpMethod; 5] = [
    HttpMethod::Get,
    HttpMethod::Post,
    HttpMethod::Put,
    HttpMethod::Patch,
    HttpMethod::Delete,
];

fn operation_mut<'a>(item: &'a mut PathItem, method: &HttpMethod) -> Option<&'a mut Operation> {
    match method {
        HttpMethod::Get => item.get.as_mut(),
        HttpMethod::Post => item.post.as_mut(),
        HttpMethod::Put => item.put.as_mut(),
        HttpMethod::Delete => item.delete.as_mut(),
        HttpMethod::Patch => item.patch.as_mut(),
        HttpMethod::Options => item.options.as_mut(),
        HttpMethod::Head => item.head.as_mut(),
        HttpMethod::Trace => item.trace.as_mut(),
    }
}

/// `utoipa_axum::routes!` for handlers in scope, each operation completed
/// with the answers of its extractors and of the middleware
/// ([`add_extractor_answers`]).
#[macro_export]
macro_rules! documented_routes {
    ($($handler:ident),+ $(,)?) => {{
        let (schemas, mut paths, router) = utoipa_axum::routes!($($handler),+);
        $(
            utoipa_axum::paste! {
                $crate::http::extract::documented::add_extractor_answers(
                    &mut paths,
                    &<[<__path_ $handler>] as utoipa::Path>::methods(),
                    &$handler,
                    &router,
                );
            }
        )+
        (schemas, paths, router)
    }};
}
