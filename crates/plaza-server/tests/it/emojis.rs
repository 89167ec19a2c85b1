//! Emojis: the catalog per platform (a Windows 10 browser gets nothing newer
//! than Emoji 12.0; the version hint tells Windows 11 apart), filters and
//! paging, custom emoji uploads with their rules, the approval flow, and
//! usage tracking with the popular sort.

use std::io::Cursor;

use crate::common::{Backend, TestServer, call, member};
use image::{DynamicImage, ImageFormat};
use serde_json::{Value, json};

const WINDOWS_CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 \
     (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36";
const IPHONE_17: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) \
     AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1";

async fn list(server: &TestServer, query: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    list_as(server, query, headers, None).await
}

async fn list_as(
    server: &TestServer,
    query: &str,
    headers: &[(&str, &str)],
    cookie: Option<&str>,
) -> (u16, Value) {
    let mut request = server
        .client
        .get(server.url(&format!("/api/emojis{query}")));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

/// Every emoji of a list, page by page.
async fn every_emoji(server: &TestServer, headers: &[(&str, &str)]) -> Vec<Value> {
    let mut all = Vec::new();
    for page in 1.. {
        let (status, body) = list(server, &format!("?per_page=100&page={page}"), headers).await;
        assert_eq!(status, 200, "{body}");
        let emojis = body["emojis"].as_array().expect("emojis").clone();
        if emojis.is_empty() {
            assert_eq!(all.len() as i64, body["total_count"].as_i64().unwrap());
            return all;
        }
        all.extend(emojis);
    }
    unreachable!()
}

fn version(emoji: &Value) -> (u32, u32) {
    let text = emoji["version_min"].as_str().expect("version_min");
    let (major, minor) = text.split_once('.').expect("major.minor");
    (major.parse().unwrap(), minor.parse().unwrap())
}

async fn windows_10_gets_nothing_newer_than_it_draws(backend: Backend) {
    let server = TestServer::start(backend).await;
    let windows_10 = [("user-agent", WINDOWS_CHROME)];
    let listed = every_emoji(&server, &windows_10).await;
    assert!(listed.len() > 1000, "{}", listed.len());
    assert!(listed.iter().all(|emoji| version(emoji) <= (12, 0)));
    let (_, body) = list(&server, "", &windows_10).await;
    assert_eq!(body["os_info"]["os"], "windows");
    assert_eq!(body["os_info"]["version"], "10");
    assert_eq!(body["os_info"]["is_supported"], true);
    assert_eq!(
        body["os_info"]["emoji_support"]["max_emoji_version"],
        "12.0"
    );
    assert_eq!(body["per_page"], 50);
    assert_eq!(body["page"], 1);
    assert_eq!(body["emojis"].as_array().unwrap().len(), 50);
    let grinning = &body["emojis"][0];
    assert_eq!(grinning["unicode_char"], "😀");
    assert_eq!(grinning["unicode_codepoint"], "U+1F600");
    assert_eq!(grinning["emoji_id"], "1f600");
    assert_eq!(grinning["category"]["name"], "smileys_emotion");
    assert_eq!(grinning["is_custom"], false);
    assert!(
        grinning["aliases"]
            .as_array()
            .unwrap()
            .contains(&json!("grinning"))
    );

    // The same browser on Windows 11 says so only in the version hint.
    let windows_11 = [
        ("user-agent", WINDOWS_CHROME),
        ("sec-ch-ua-platform", "\"Windows\""),
        ("sec-ch-ua-platform-version", "\"15.0.0\""),
    ];
    let (_, eleven) = list(&server, "", &windows_11).await;
    assert_eq!(eleven["os_info"]["version"], "11");
    assert!(
        eleven["total_count"].as_i64() > body["total_count"].as_i64(),
        "Windows 11 draws more: {} against {}",
        eleven["total_count"],
        body["total_count"]
    );
    let newer = every_emoji(&server, &windows_11).await;
    assert!(newer.iter().any(|emoji| version(emoji) > (12, 0)));

    // Categories are counted for the platform.
    let counted: i64 = body["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|category| category["emoji_count"].as_i64().unwrap())
        .sum();
    assert_eq!(counted, body["total_count"].as_i64().unwrap());
    let (_, iphone) = list(&server, "", &[("user-agent", IPHONE_17)]).await;
    assert_eq!(iphone["os_info"]["os"], "ios");
    let (_, forced) = list(&server, "?os=ios", &windows_10).await;
    assert_eq!(forced["os_info"]["os"], "ios");
}

async fn filters_paging_and_their_errors(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (status, body) = list(&server, "?category=flags&per_page=100", &[]).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["emojis"]
            .as_array()
            .unwrap()
            .iter()
            .all(|emoji| emoji["category"]["name"] == "flags")
    );
    let (_, body) = list(&server, "?search=ROCKET", &[]).await;
    let names: Vec<&str> = body["emojis"]
        .as_array()
        .unwrap()
        .iter()
        .map(|emoji| emoji["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"rocket"), "{names:?}");
    let (_, first) = list(&server, "?per_page=3&page=1", &[]).await;
    let (_, second) = list(&server, "?per_page=3&page=2", &[]).await;
    assert_eq!(first["emojis"].as_array().unwrap().len(), 3);
    assert_ne!(first["emojis"][0]["id"], second["emojis"][0]["id"]);
    assert_eq!(first["total_count"], second["total_count"]);

    for (query, field) in [
        ("?per_page=0", "per_page"),
        ("?per_page=-5", "per_page"),
        ("?page=0", "page"),
        ("?page=x", "page"),
        ("?include_custom=maybe", "include_custom"),
        ("?os=beos", "os"),
        ("?sort=random", "sort"),
    ] {
        let (status, body) = list(&server, query, &[]).await;
        assert_eq!(status, 422, "{query}: {body}");
        assert_eq!(body["error"]["code"], "VALIDATION_ERROR", "{query}: {body}");
        assert_eq!(body["error"]["details"]["field"], field, "{query}: {body}");
    }
}

fn noise_png(size: u32) -> Vec<u8> {
    let image = DynamicImage::ImageRgba8(image::RgbaImage::from_fn(size, size, |x, y| {
        let n = x
            .wrapping_mul(2_654_435_761)
            .wrapping_add(y.wrapping_mul(40_503));
        image::Rgba([(n >> 3) as u8, (n >> 11) as u8, (n >> 19) as u8, 255])
    }));
    let mut bytes = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut bytes), ImageFormat::Png)
        .expect("encode");
    bytes
}

/// A multipart body: the file, then text fields.
fn emoji_form(file: &[u8], filename: &str, fields: &[(&str, &str)]) -> (String, Vec<u8>) {
    let boundary = "plaza-emoji-boundary-93c2";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n\
             Content-Type: image/png\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(file);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

async fn upload_emoji(
    server: &TestServer,
    cookie: Option<&str>,
    (content_type, body): (String, Vec<u8>),
) -> (u16, Value) {
    let mut request = server
        .client
        .post(server.url("/api/emojis/custom"))
        .header("content-type", content_type)
        .body(body);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn custom_emoji_rules(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "artist@example.com", "user").await;
    let png = noise_png(64);
    assert!(png.len() > 1024, "{}", png.len());

    let (status, body) = upload_emoji(
        &server,
        None,
        emoji_form(&png, "a.png", &[("name", "party")]),
    )
    .await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"], "Authentication required");

    let (status, body) = upload_emoji(
        &server,
        Some(&cookie),
        emoji_form(b"", "empty.png", &[("name", "empty")]),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "No file provided");

    let (status, body) = upload_emoji(
        &server,
        Some(&cookie),
        emoji_form(&noise_png(200), "big.png", &[("name", "big")]),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "Image too large");

    let (status, body) = upload_emoji(
        &server,
        Some(&cookie),
        emoji_form(&vec![0x89; 300 * 1024], "huge.png", &[("name", "huge")]),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "File too large");
    assert_eq!(body["maxSize"], 262_144);

    let webp = {
        let mut bytes = Vec::new();
        DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(
            40,
            40,
            image::Rgba([1, 2, 3, 255]),
        ))
        .write_to(&mut Cursor::new(&mut bytes), ImageFormat::WebP)
        .expect("webp");
        bytes.resize(2048, 0);
        bytes
    };
    let (status, body) = upload_emoji(
        &server,
        Some(&cookie),
        emoji_form(&webp, "a.png", &[("name", "webp")]),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "Invalid file type");
    assert_eq!(
        body["allowedTypes"],
        json!(["image/png", "image/jpeg", "image/gif"])
    );

    for (name, expected) in [
        (":party:", "colons"),
        ("Party", "a-z"),
        ("p", "a-z"),
        ("", "required"),
    ] {
        let (status, body) = upload_emoji(
            &server,
            Some(&cookie),
            emoji_form(&png, "a.png", &[("name", name)]),
        )
        .await;
        assert_eq!(status, 422, "{name}: {body}");
        assert!(
            body["message"].as_str().unwrap().contains(expected),
            "{name}: {body}"
        );
    }
    let (status, body) = upload_emoji(
        &server,
        Some(&cookie),
        emoji_form(&png, "a.png", &[("name", "fine"), ("category", "no_such")]),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("category"),
        "{body}"
    );

    let (status, body) = upload_emoji(
        &server,
        Some(&cookie),
        emoji_form(&png, "party.png", &[("name", "party_parrot")]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    let emoji = &body["emoji"];
    assert_eq!(emoji["name"], "party_parrot");
    assert_eq!(emoji["is_custom"], true);
    assert_eq!(emoji["is_approved"], false);
    assert_eq!(emoji["is_personal"], true);
    assert_eq!(emoji["category"]["name"], "custom");
    let image_url = emoji["custom_image_url"].as_str().expect("image url");
    let image = server.get(image_url).await;
    assert_eq!(image.status(), 200);
    assert_eq!(image.headers()["content-type"], "image/png");

    let (status, body) = upload_emoji(
        &server,
        Some(&cookie),
        emoji_form(&png, "again.png", &[("name", "party_parrot")]),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("already"),
        "{body}"
    );
    assert_eq!(body["details"][0]["field"], "name", "{body}");

    // Of every attempt, only the accepted emoji's image is stored.
    let (uploads, _) = server
        .domain()
        .await
        .upload_totals()
        .await
        .expect("upload totals");
    assert_eq!(uploads, 1);
}

async fn custom_emojis_are_personal_until_approved(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, owner) = member(&server, "owner@example.com", "user").await;
    let (_, other) = member(&server, "other@example.com", "user").await;
    let (_, moderator) = member(&server, "mod@example.com", "moderator").await;
    let (status, body) = upload_emoji(
        &server,
        Some(&owner),
        emoji_form(&noise_png(32), "blob.png", &[("name", "blob_wave")]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let id = body["emoji"]["id"].as_i64().unwrap();
    let emoji_id = body["emoji"]["emoji_id"].as_str().unwrap().to_owned();

    let customs = |body: &Value| -> Vec<String> {
        body["emojis"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|emoji| emoji["is_custom"] == true)
            .map(|emoji| emoji["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let query = "?include_custom=true&category=custom";
    let (_, mine) = list_as(&server, query, &[], Some(&owner)).await;
    assert_eq!(customs(&mine), ["blob_wave"]);
    let (_, theirs) = list_as(&server, query, &[], Some(&other)).await;
    assert!(customs(&theirs).is_empty(), "{theirs}");
    let (_, anonymous) = list(&server, query, &[]).await;
    assert!(customs(&anonymous).is_empty(), "{anonymous}");
    let (status, body) = call(
        &server,
        "POST",
        "/api/emojis/track",
        Some(&other),
        Some(json!({"emoji_id": emoji_id, "emoji_type": "custom"})),
    )
    .await;
    assert_eq!(status, 404, "a personal emoji of someone else: {body}");

    let (status, body) = call(
        &server,
        "GET",
        "/api/admin/emojis/pending",
        Some(&other),
        None,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = call(
        &server,
        "GET",
        "/api/admin/emojis/pending",
        Some(&moderator),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["emojis"][0]["id"], id);
    let path = format!("/api/admin/emojis/{id}/approve");
    let (status, body) = call(&server, "POST", &path, Some(&other), None).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = call(&server, "POST", &path, Some(&moderator), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["emoji"]["is_approved"], true);
    assert_eq!(body["emoji"]["is_personal"], false);
    let (status, _) = call(&server, "POST", &path, Some(&moderator), None).await;
    assert_eq!(status, 409);

    let (_, theirs) = list_as(&server, query, &[], Some(&other)).await;
    assert_eq!(customs(&theirs), ["blob_wave"]);
    let (_, anonymous) = list(&server, &format!("{query}&page=1"), &[]).await;
    assert_eq!(customs(&anonymous), ["blob_wave"]);
    let (_, pending) = call(
        &server,
        "GET",
        "/api/admin/emojis/pending",
        Some(&moderator),
        None,
    )
    .await;
    assert_eq!(pending["pagination"]["total"], 0);
    let audit = server
        .domain()
        .await
        .audit_entries(10)
        .await
        .expect("audit");
    assert!(audit.iter().any(|entry| entry.action == "emoji.approve"));

    // A second one is rejected: gone from its owner's list too.
    let (_, body) = upload_emoji(
        &server,
        Some(&owner),
        emoji_form(&noise_png(32), "nope.png", &[("name", "nope")]),
    )
    .await;
    let rejected = body["emoji"]["id"].as_i64().unwrap();
    let (status, _) = call(
        &server,
        "POST",
        &format!("/api/admin/emojis/{rejected}/reject"),
        Some(&moderator),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (_, mine) = list_as(&server, query, &[], Some(&owner)).await;
    assert_eq!(customs(&mine), ["blob_wave"]);
}

async fn usage_is_counted_and_sorts_by_popularity(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "fan@example.com", "user").await;
    for path in ["/api/emojis/usage", "/api/emojis/track"] {
        let (status, body) = call(
            &server,
            "POST",
            path,
            None,
            Some(json!({"emoji_id": "1f680", "emoji_type": "windows"})),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["success"], true);
    }
    let (_, body) = call(
        &server,
        "POST",
        "/api/emojis/track",
        Some(&cookie),
        Some(json!({"emoji_id": "1f680", "emoji_type": "mac"})),
    )
    .await;
    assert_eq!(body["message"], "Emoji usage tracked");

    let (status, body) = call(
        &server,
        "POST",
        "/api/emojis/usage",
        None,
        Some(json!({"emoji_id": "nope", "emoji_type": "windows"})),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = call(
        &server,
        "POST",
        "/api/emojis/usage",
        None,
        Some(json!({"emoji_id": "1f680", "emoji_type": "linux"})),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["details"]["field"], "emoji_type");
    let (status, _) = call(
        &server,
        "POST",
        "/api/emojis/usage",
        None,
        Some(json!({"emoji_type": "mac"})),
    )
    .await;
    assert_eq!(status, 422);

    // Signed in and asking for custom emojis: rendered for the caller
    // alone, never from the shared answers, so the count is exact at once.
    let (_, popular) = list_as(
        &server,
        "?sort=popular&per_page=1&include_custom=true",
        &[],
        Some(&cookie),
    )
    .await;
    let top = &popular["emojis"][0];
    assert_eq!(top["emoji_id"], "1f680", "{popular}");
    assert_eq!(top["usage_count"], 3);
}

on_both_databases!(
    windows_10_gets_nothing_newer_than_it_draws,
    filters_paging_and_their_errors,
    custom_emoji_rules,
    custom_emojis_are_personal_until_approved,
    usage_is_counted_and_sorts_by_popularity,
    approvals_are_someone_elses_once_and_names_stay_unique,
    a_custom_emoji_is_found_by_its_whole_name,
);

/// A custom emoji waiting for approval as `cookie`'s: its numeric id.
pub(crate) async fn pending_emoji(server: &TestServer, cookie: &str, name: &str) -> i64 {
    let (status, body) = upload_emoji(
        server,
        Some(cookie),
        emoji_form(&noise_png(32), "emoji.png", &[("name", name)]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["emoji"]["id"].as_i64().expect("emoji id")
}

/// Nobody approves their own custom emoji; two users' approved emojis never
/// share a name; and many approvals of one emoji at once give one 200 and
/// one audit entry.
async fn approvals_are_someone_elses_once_and_names_stay_unique(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, moderator) = member(&server, "mod@example.com", "moderator").await;
    let (_, admin) = member(&server, "admin@example.com", "admin").await;
    let (_, first) = member(&server, "first@example.com", "user").await;
    let (_, second) = member(&server, "second@example.com", "user").await;
    let approve = |id: i64| format!("/api/admin/emojis/{id}/approve");

    let own = pending_emoji(&server, &moderator, "own_party").await;
    let (status, body) = call(&server, "POST", &approve(own), Some(&moderator), None).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = call(&server, "POST", &approve(own), Some(&admin), None).await;
    assert_eq!(status, 200, "someone else approves it: {body}");

    let party = pending_emoji(&server, &first, "party").await;
    let twin = pending_emoji(&server, &second, "party").await;
    let (status, body) = call(&server, "POST", &approve(party), Some(&moderator), None).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(&server, "POST", &approve(twin), Some(&moderator), None).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        server
            .sql_count("SELECT COUNT(*) FROM emojis WHERE name = 'party' AND is_approved")
            .await,
        1
    );

    let raced = pending_emoji(&server, &first, "raced").await;
    let path = approve(raced);
    let answers = futures_util::future::join_all((0..8).map(|_| {
        let (server, path, cookie) = (&server, &path, &moderator);
        async move { call(server, "POST", path, Some(cookie), None).await.0 }
    }))
    .await;
    assert_eq!(
        answers.iter().filter(|status| **status == 200).count(),
        1,
        "{answers:?}"
    );
    assert!(
        answers.iter().all(|status| matches!(status, 200 | 409)),
        "{answers:?}"
    );
    let entries = server
        .domain()
        .await
        .audit_entries(100)
        .await
        .expect("audit");
    let approvals = entries
        .iter()
        .filter(|entry| {
            entry.action == "emoji.approve" && entry.target_id == Some(raced.to_string())
        })
        .count();
    assert_eq!(approvals, 1);
}

/// A search for a custom emoji's whole name, underscores and all, finds it,
/// as a search for any part of it does.
async fn a_custom_emoji_is_found_by_its_whole_name(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, owner) = member(&server, "owner@example.com", "user").await;
    pending_emoji(&server, &owner, "acc_test12").await;
    for search in ["acc", "test12", "acc_test12", "ACC_TEST12"] {
        let (status, body) = list_as(
            &server,
            &format!("?include_custom=true&search={search}"),
            &[],
            Some(&owner),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let names: Vec<&str> = body["emojis"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|emoji| emoji["name"].as_str())
            .collect();
        assert!(names.contains(&"acc_test12"), "{search}: {names:?}");
    }
}
