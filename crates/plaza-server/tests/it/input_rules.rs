//! Rules every client input keeps, whatever route it takes: a NUL byte in a query parameter, a path
//! parameter or a body field is refused in the answering surface's shape;
//! date parameters are read in the years 1970–9999 without overflowing;
//! a permission's metadata and dependencies are bounded.

use std::io::Cursor;

use crate::common::{As, Backend, PASSWORD, TestServer, member};
use image::{ImageFormat, RgbaImage};
use serde_json::{Value, json};

on_both_databases!(
    a_nul_byte_in_any_input_is_refused_in_the_surfaces_shape,
    date_parameters_outside_1970_to_9999_are_422_and_the_last_day_is_read,
    permission_metadata_and_dependencies_are_bounded_and_deduplicated,
);

/// The error shape a refusal must come in (SPEC.md "Errors").
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// `{error: {code, message, details: {field, reason}}}`, with its status.
    General(u16),
    /// `{success: false, error: {code, field, …}}`, 422.
    AdminV1,
    /// `{error: string, details: [{path, …}]}`, 400.
    Admin,
    /// `{error: string, message, details: [{field, reason}]}`, 422.
    Upload,
    /// `{error: string, details: string}`, 422.
    Plain,
    /// `{error: string, status: 400}`, 400.
    Image,
}

/// Asserts that `body`, answered with `status`, refuses `field` in `shape`.
fn assert_refused(label: &str, shape: Shape, field: &str, status: u16, body: &Value) {
    let context = format!("{label}: {status} {body}");
    match shape {
        Shape::General(expected) => {
            assert_eq!(status, expected, "{context}");
            assert_eq!(body["error"]["details"]["field"], field, "{context}");
        }
        Shape::AdminV1 => {
            assert_eq!(status, 422, "{context}");
            assert_eq!(body["success"], false, "{context}");
            assert_eq!(body["error"]["code"], "VALIDATION_ERROR", "{context}");
            assert_eq!(body["error"]["field"], field, "{context}");
        }
        Shape::Admin => {
            assert_eq!(status, 400, "{context}");
            assert!(body["error"].is_string(), "{context}");
            let path: Vec<&str> = field.split('.').collect();
            assert_eq!(body["details"][0]["path"], json!(path), "{context}");
        }
        Shape::Upload => {
            assert_eq!(status, 422, "{context}");
            assert!(body["error"].is_string(), "{context}");
            assert_eq!(body["details"][0]["field"], field, "{context}");
        }
        Shape::Plain => {
            assert_eq!(status, 422, "{context}");
            assert!(body["error"].is_string(), "{context}");
            assert!(
                body["details"].as_str().unwrap_or_default().contains(field),
                "{context}"
            );
        }
        Shape::Image => {
            assert_eq!(status, 400, "{context}");
            assert_eq!(body["status"], 400, "{context}");
            assert!(
                body["error"].as_str().unwrap_or_default().contains(field),
                "{context}"
            );
        }
    }
}

/// How a row's NUL travels.
enum Carrier {
    /// In the path or query of a request without a body.
    Uri(&'static str, String),
    /// In a JSON body (`"\0"` in a Rust string is written `\u0000`).
    Json(&'static str, String, Value),
    /// In a multipart text field of a custom emoji upload.
    EmojiForm(&'static str),
    /// In a URL-encoded form body.
    Form(String, String),
}

/// One request of the table: the session cookie or admin token it is sent
/// with, what carries its NUL, the shape of the refusal and the field named.
type Row<'a> = (
    Option<&'a str>,
    Option<&'a str>,
    Carrier,
    Shape,
    &'static str,
);

async fn answer(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A PNG the custom emoji rules accept (noise, so it is over 1 KB).
fn emoji_png() -> Vec<u8> {
    let image = RgbaImage::from_fn(64, 64, |x, y| {
        let n = x
            .wrapping_mul(2_654_435_761)
            .wrapping_add(y.wrapping_mul(40_503));
        image::Rgba([(n >> 3) as u8, (n >> 11) as u8, (n >> 19) as u8, 255])
    });
    let mut bytes = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut bytes), ImageFormat::Png)
        .expect("encode");
    bytes
}

/// A custom emoji upload whose `category` holds a NUL byte.
fn emoji_form_with_nul_category() -> (String, Vec<u8>) {
    let boundary = "plaza-input-rules-boundary";
    let mut body = Vec::new();
    for (name, value) in [("name", "party_nul"), ("category", "fun\0ny")] {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"p.png\"\r\n\
             Content-Type: image/png\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(&emoji_png());
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Every route that reads text a client sends, a path parameter, and each other carrier
/// of text (forms, multipart, the analytics body, the image and plain
/// surfaces), each with a NUL byte: refused naming the field, in the
/// surface's shape, never a 500. On PostgreSQL most of these reached a
/// query and failed there.
async fn a_nul_byte_in_any_input_is_refused_in_the_surfaces_shape(backend: Backend) {
    let server = TestServer::start_in_process(backend).await;
    let (_, user) = member(&server, "user@example.com", "user").await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let reader = server.mint("root@example.com", "admin:read");
    let writer = server.mint("root@example.com", "admin:write");
    let (csrf_cookie, csrf_token) = server.csrf().await;
    let now = plaza_domain::time::rfc3339(plaza_domain::time::now_millis());
    let uri = |path: &str| Carrier::Uri("GET", path.to_owned());
    #[rustfmt::skip]
    let rows: Vec<Row> = vec![
        (None, None, uri("/api/emojis?search=a%00b"), Shape::General(422), "search"),
        (None, None, uri("/api/emojis?category=people%00"), Shape::General(422), "category"),
        (None, None, Carrier::Json("POST", "/api/emojis/usage".into(), json!({"emoji_id": "1f\u{0}680", "emoji_type": "windows"})), Shape::General(422), "emoji_id"),
        (Some(&user), None, Carrier::EmojiForm("/api/emojis/custom"), Shape::Upload, "category"),
        (None, Some(&reader), uri("/api/v1/admin/audit-logs?action=user.%00ban"), Shape::AdminV1, "action"),
        (Some(&admin), None, uri("/api/admin/users?search=%00"), Shape::Admin, "search"),
        (Some(&admin), None, uri("/api/admin/permissions?search=users%00"), Shape::Admin, "search"),
        (Some(&admin), None, uri("/api/admin/permissions?category=%00"), Shape::Admin, "category"),
        // A parameter's name holds the NUL.
        (None, None, uri("/api/posts?tag%00=x"), Shape::General(422), "tag\\0"),
        // Path parameters that are names.
        (None, Some(&writer), Carrier::Json("PUT", "/api/v1/admin/feature-flags/new%00flag".into(), json!({"enabled": true})), Shape::AdminV1, "flagName"),
        (None, None, uri("/api/uploads/a%00.png"), Shape::Upload, "key"),
        // Other bodies and surfaces.
        (Some(&user), None, Carrier::Json("POST", "/api/posts".into(), json!({"title": "t", "content": "c", "tags": ["ok", "a\u{0}"]})), Shape::General(422), "tags.1"),
        (Some(&user), None, Carrier::Json("POST", "/api/analytics/collect".into(), json!({"event_type": "page_view", "event_data": {"path": "/", "note": "x\u{0}"}, "timestamp": now})), Shape::General(400), "event_data.note"),
        (Some(&csrf_cookie), None, Carrier::Form("/api/auth/signin".into(), format!("email=a%00b%40example.com&password=x&csrfToken={csrf_token}")), Shape::General(422), "email"),
        (None, None, uri("/api/avatar-image?seed=%00"), Shape::Image, "seed"),
        (None, None, uri("/api/link-preview?url=%2F%00"), Shape::Plain, "url"),
    ];
    for (cookie, token, carrier, shape, field) in rows {
        let (label, request) = match carrier {
            Carrier::Uri(method, path) => (
                format!("{method} {path}"),
                server
                    .client
                    .request(method.parse().unwrap(), server.url(&path)),
            ),
            Carrier::Json(method, path, body) => (
                format!("{method} {path} {body}"),
                server
                    .client
                    .request(method.parse().unwrap(), server.url(&path))
                    .json(&body),
            ),
            Carrier::EmojiForm(path) => {
                let (content_type, body) = emoji_form_with_nul_category();
                (
                    format!("POST {path} (multipart)"),
                    server
                        .client
                        .post(server.url(path))
                        .header("content-type", content_type)
                        .body(body),
                )
            }
            Carrier::Form(path, body) => (
                format!("POST {path} {body}"),
                server
                    .client
                    .post(server.url(&path))
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(body),
            ),
        };
        let request = match (cookie, token) {
            (Some(cookie), _) => request.header("cookie", cookie),
            (None, Some(token)) => request.bearer_auth(token),
            (None, None) => request,
        };
        let (status, body) = answer(request.send().await.expect("request")).await;
        assert_ne!(status, 500, "{label}: {body}");
        assert_refused(&label, shape, field, status, &body);
    }
    // The same texts without a NUL pass (the rule refuses nothing else).
    let (status, body) = answer(
        server
            .send(As::Anonymous, "GET", "/api/emojis?search=a%2500b", None)
            .await,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = answer(
        server
            .send(
                As::Session(&user),
                "POST",
                "/api/posts",
                Some(&json!({"title": "t", "content": "a\\u0000 is not a NUL"})),
            )
            .await,
    )
    .await;
    assert_eq!(status, 201, "{body}");
}

/// `endDate=9999-12-31` (whose end of day is past the last representable
/// date) is read on every date parameter, and years outside 1970–9999 are
/// 422 naming the parameter; never a 500.
async fn date_parameters_outside_1970_to_9999_are_422_and_the_last_day_is_read(backend: Backend) {
    let server = TestServer::start_in_process(backend).await;
    server.create_user("root@example.com", PASSWORD, "super_admin");
    let token = server.mint("root@example.com", "admin:read");
    for path in [
        "/api/v1/admin/audit-logs",
        "/api/v1/admin/reports/user-activity",
        "/api/v1/admin/reports/moderation",
    ] {
        let last_day = format!("{path}?startDate=9999-12-30&endDate=9999-12-31");
        let (status, body) =
            answer(server.send(As::Token(&token), "GET", &last_day, None).await).await;
        assert_eq!(status, 200, "{last_day}: {body}");
        for (query, field) in [
            ("startDate=1969-12-31", "startDate"),
            ("startDate=0001-01-01T00:00:00Z", "startDate"),
            ("endDate=1969-12-31", "endDate"),
            ("startDate=2026-01-01&endDate=0000-01-01", "endDate"),
            ("endDate=10000-01-01", "endDate"),
        ] {
            let url = format!("{path}?{query}");
            let (status, body) =
                answer(server.send(As::Token(&token), "GET", &url, None).await).await;
            assert_refused(&url, Shape::AdminV1, field, status, &body);
        }
    }
    let (status, body) = answer(
        server
            .send(
                As::Token(&token),
                "GET",
                "/api/v1/admin/audit-logs?startDate=1970-01-01&endDate=9999-12-31",
                None,
            )
            .await,
    )
    .await;
    assert_eq!((status, &body["success"]), (200, &json!(true)), "{body}");
}

/// `POST /api/admin/permissions`: metadata at most 4096 bytes and 4 levels
/// deep, at most 32 distinct dependencies of at most 100 characters each,
/// a name given twice kept once; a refusal names the field in the
/// unversioned admin shape.
async fn permission_metadata_and_dependencies_are_bounded_and_deduplicated(backend: Backend) {
    let server = TestServer::start_in_process(backend).await;
    let (_, root) = member(&server, "root@example.com", "super_admin").await;
    let create = |name: &str, extra: Value| {
        let mut body = json!({"name": name, "display_name": "A test", "category": "tests"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let post = |body: Value| {
        let root = root.clone();
        let server = &server;
        async move {
            answer(
                server
                    .send(
                        As::Session(&root),
                        "POST",
                        "/api/admin/permissions",
                        Some(&body),
                    )
                    .await,
            )
            .await
        }
    };
    let deep = json!({"a": {"b": {"c": {"d": {}}}}});
    let large = json!({"note": "x".repeat(4096)});
    let many: Vec<String> = (0..33).map(|n| format!("missing.{n}")).collect();
    let long_name = "d".repeat(101);
    let refused = [
        (json!({"metadata": deep}), "metadata"),
        (json!({"metadata": large}), "metadata"),
        (json!({"dependencies": many}), "dependencies"),
        (
            json!({"dependencies": ["users:manage", long_name]}),
            "dependencies.1",
        ),
    ];
    for (extra, field) in refused {
        let label = format!("{field}: {extra}")
            .chars()
            .take(200)
            .collect::<String>();
        let (status, body) = post(create("bounded.refused", extra)).await;
        assert_refused(&label, Shape::Admin, field, status, &body);
    }
    let at_the_bounds = json!({
        "metadata": {"a": {"b": {"c": {}}}, "note": "x".repeat(4000)},
        "dependencies": ["users:manage", "users:manage", "posts:moderate"],
    });
    let (status, body) = post(create("bounded.accepted", at_the_bounds)).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["permission"]["dependencies"],
        json!(["users:manage", "posts:moderate"]),
        "a name given twice is kept once"
    );
    let duplicated: Vec<&str> = std::iter::repeat_n("users:manage", 40).collect();
    let (status, body) = post(create(
        "bounded.duplicates",
        json!({"dependencies": duplicated}),
    ))
    .await;
    assert_eq!(
        status, 201,
        "40 copies of one name are one dependency: {body}"
    );
    assert_eq!(body["permission"]["dependencies"], json!(["users:manage"]));
    let listed = server
        .get_json_as("/api/admin/permissions?search=bounded", &root)
        .await;
    assert_eq!(listed["pagination"]["total"], 2, "{listed}");
}
