//! Image uploads: every row of SPEC.md's upload error table, the type from
//! the bytes, bombs, polyglots, metadata stripped, variants, serving with
//! ranges, the sweep after a crash, an S3-compatible store, a store that
//! hangs, instances with different stores on one database, and clients
//! that hang up during processing.

use crate::common;

use std::io::Cursor;

use crate::common::{As, Backend, TestServer, member};
use image::{DynamicImage, ImageFormat};
use serde_json::{Value, json};

pub(crate) fn picture(width: u32, height: u32) -> DynamicImage {
    DynamicImage::ImageRgb8(image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([
            (x % 251) as u8,
            (y % 241) as u8,
            ((x * 7 + y * 3) % 239) as u8,
        ])
    }))
}

pub(crate) fn encoded(image: &DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut bytes = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut bytes), format)
        .expect("encode");
    bytes
}

/// A JPEG with an EXIF segment carrying GPS text right after its start.
fn jpeg_with_gps() -> Vec<u8> {
    let plain = encoded(&picture(120, 90), ImageFormat::Jpeg);
    let mut exif = b"Exif\x00\x00II*\x00\x08\x00\x00\x00\x01\x00\x25\x88\x04\x00\x01\x00\x00\x00\x1a\x00\x00\x00\x00\x00\x00\x00".to_vec();
    exif.extend_from_slice(b"GPS 52.5200N 13.4050E");
    let mut bytes = plain[..2].to_vec();
    bytes.extend_from_slice(&[0xFF, 0xE1]);
    bytes.extend_from_slice(&((exif.len() + 2) as u16).to_be_bytes());
    bytes.extend_from_slice(&exif);
    bytes.extend_from_slice(&plain[2..]);
    bytes
}

/// A multipart body with one file field.
fn form(field: &str, filename: &str, content_type: &str, bytes: &[u8]) -> (String, Vec<u8>) {
    let boundary = "plaza-test-boundary-7d1f";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{filename}\"\r\n\
         Content-Type: {content_type}\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

async fn send_form(
    server: &TestServer,
    path: &str,
    cookie: Option<&str>,
    (content_type, body): (String, Vec<u8>),
) -> (u16, Value) {
    let mut request = server
        .client
        .post(server.url(path))
        .header("content-type", content_type)
        .body(body);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

pub(crate) async fn upload(
    server: &TestServer,
    cookie: &str,
    name: &str,
    bytes: &[u8],
) -> (u16, Value) {
    send_form(
        server,
        "/api/upload/image",
        Some(cookie),
        form("file", name, "application/octet-stream", bytes),
    )
    .await
}

async fn fetch(server: &TestServer, url: &str) -> reqwest::Response {
    server.get(url).await
}

async fn every_row_of_the_upload_error_table(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "uploader@example.com", "user").await;
    let png = encoded(&picture(64, 64), ImageFormat::Png);

    let (status, body) = send_form(
        &server,
        "/api/upload/image",
        None,
        form("file", "a.png", "image/png", &png),
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(body["error"], "Authentication required");
    assert!(body["message"].is_string());

    let (status, body) = send_form(
        &server,
        "/api/upload/image",
        Some(&cookie),
        form("other", "a.png", "image/png", &png),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "No file provided");
    assert!(body["message"].is_string());
    let response = server
        .client
        .post(server.url("/api/upload/image"))
        .header("cookie", &cookie)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["error"], "No file provided");

    let html = format!(
        "<!DOCTYPE html><html><script>alert(1)</script>{}</html>",
        "x".repeat(2000)
    );
    let (status, body) = upload(&server, &cookie, "photo.png", html.as_bytes()).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "Invalid file type");
    assert_eq!(
        body["allowedTypes"],
        json!(["image/jpeg", "image/png", "image/webp", "image/gif"])
    );

    let huge = vec![0xFFu8; 5_242_881];
    let (status, body) = upload(&server, &cookie, "big.jpg", &huge).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "File too large");
    assert_eq!(body["maxSize"], 5_242_880);
    assert!(body["receivedSize"].as_u64() > Some(5_242_880), "{body}");

    let (status, body) = upload(
        &server,
        &cookie,
        "tiny.png",
        &encoded(&picture(2, 2), ImageFormat::Png),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "File too small");
    assert_eq!(body["minSize"], 1024);

    let (status, body) = upload(&server, &cookie, "fine.png", &png).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["message"], "File uploaded successfully");
    let file = &body["file"];
    assert_eq!(file["originalName"], "fine.png");
    assert_eq!(file["mimeType"], "image/png");
    assert_eq!(
        file["dimensions"],
        json!({"width": 64, "height": 64, "pixels": 4096})
    );
    assert!(
        file["publicUrl"]
            .as_str()
            .unwrap()
            .ends_with(file["url"].as_str().unwrap())
    );
    assert_eq!(body["metadata"]["processed"], true);
    assert_eq!(
        body["metadata"]["fileHash"].as_str().map(str::len),
        Some(64)
    );

    let (status, body) = send_form(
        &server,
        "/api/upload",
        Some(&cookie),
        form("file", "again.png", "image/png", &png),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["type"], "image/png");
    assert!(body["url"].as_str().unwrap().starts_with("/api/uploads/"));
    assert!(body["size"].as_i64() > Some(0));
}

/// A store that cannot be reached (nothing listens on its port) is named:
/// 503 `File store unavailable` with `Retry-After`, and nothing recorded.
async fn a_store_that_does_not_answer_is_named_and_nothing_recorded(backend: Backend) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let server = TestServer::start_with(backend, &s3_at(&endpoint)).await;
    let (_, cookie) = member(&server, "uploader@example.com", "user").await;
    let (content_type, body) = form(
        "file",
        "a.png",
        "image/png",
        &encoded(&picture(64, 64), ImageFormat::Png),
    );
    let response = server
        .client
        .post(server.url("/api/upload/image"))
        .header("content-type", content_type)
        .header("cookie", &cookie)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(
        response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok()),
        Some("5")
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "File store unavailable", "{body}");
    assert!(
        !body["message"].as_str().unwrap().contains("127.0.0.1"),
        "no internals: {body}"
    );
    let stats = server.domain().await.upload_totals().await.expect("totals");
    assert_eq!(stats, (0, 0), "nothing recorded");
}

/// A store that answers with a refusal (here: its bucket does not exist)
/// is the server's fault: 500 `Upload failed`, and nothing recorded.
async fn a_store_that_refuses_a_write_answers_upload_failed(backend: Backend) {
    let Some(moto) = Moto::start() else {
        common::skip(
            "a_store_that_refuses_a_write_answers_upload_failed",
            "python3 -m moto.server is not installed",
        );
        return;
    };
    let endpoint = format!("http://127.0.0.1:{}", moto.port);
    let server = TestServer::start_with(backend, &s3_at(&endpoint)).await;
    let (_, cookie) = member(&server, "uploader@example.com", "user").await;
    let (status, body) = upload(
        &server,
        &cookie,
        "a.png",
        &encoded(&picture(64, 64), ImageFormat::Png),
    )
    .await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["error"], "Upload failed");
    let stats = server.domain().await.upload_totals().await.expect("totals");
    assert_eq!(stats, (0, 0), "nothing recorded");
}

/// The settings of an S3 store `plaza-test/uploads` at `endpoint`.
fn s3_at(endpoint: &str) -> [(&'static str, &str); 6] {
    [
        ("PLAZA_STORAGE_URL", "s3://plaza-test/uploads"),
        ("AWS_ENDPOINT_URL", endpoint),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_ALLOW_HTTP", "true"),
    ]
}

async fn the_type_comes_from_the_bytes_not_the_name(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "uploader@example.com", "user").await;
    let png = encoded(&picture(64, 64), ImageFormat::Png);
    let (status, body) = send_form(
        &server,
        "/api/upload/image",
        Some(&cookie),
        form("file", "cat.gif", "image/gif", &png),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["file"]["mimeType"], "image/png");
    assert!(body["file"]["filename"].as_str().unwrap().ends_with(".png"));

    let mut bomb = encoded(&picture(8, 8), ImageFormat::Png);
    bomb.resize(2048, 0);
    let bomb_png = {
        let mut bytes = encoded(&picture(8, 8), ImageFormat::Png);
        bytes[16..20].copy_from_slice(&60_000u32.to_be_bytes());
        bytes[20..24].copy_from_slice(&60_000u32.to_be_bytes());
        let crc = crc32(&bytes[12..29]);
        bytes[29..33].copy_from_slice(&crc.to_be_bytes());
        // Padding inside a private chunk keeps it over the 1 KB minimum.
        let end = bytes.len() - 12;
        let mut chunk = 1000u32.to_be_bytes().to_vec();
        chunk.extend_from_slice(b"prVt");
        chunk.extend_from_slice(&[0u8; 1000]);
        let crc = crc32(&chunk[4..]);
        chunk.extend_from_slice(&crc.to_be_bytes());
        bytes.splice(end..end, chunk);
        bytes
    };
    let (status, body) = upload(&server, &cookie, "bomb.png", &bomb_png).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "Image too large");
    assert_eq!(
        body["maxDimensions"],
        json!({"width": 4096, "height": 4096})
    );

    let mut polyglot = encoded(&picture(64, 64), ImageFormat::Jpeg);
    polyglot.extend_from_slice(b"PK\x03\x04<?php system($_GET['c']); ?>");
    let (status, body) = upload(&server, &cookie, "poly.jpg", &polyglot).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "Invalid file type");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("outside the image"),
        "{body}"
    );

    let mut animated = Vec::new();
    {
        let mut encoder = image::codecs::gif::GifEncoder::new(&mut animated);
        for shade in [0u8, 128, 255] {
            let frame = image::RgbaImage::from_fn(40, 40, |x, y| {
                image::Rgba([shade, x as u8, y as u8, 255])
            });
            encoder
                .encode_frame(image::Frame::new(frame))
                .expect("frame");
        }
    }
    let (status, body) = upload(&server, &cookie, "anim.gif", &animated).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("animated"),
        "{body}"
    );
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

async fn stored_files_lose_their_metadata_and_come_in_every_size(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "uploader@example.com", "user").await;
    let (status, body) = upload(&server, &cookie, "gps.jpg", &jpeg_with_gps()).await;
    assert_eq!(status, 200, "{body}");
    let response = fetch(&server, body["file"]["url"].as_str().unwrap()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "image/jpeg");
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    assert!(
        response.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("immutable")
    );
    let stored = response.bytes().await.expect("body");
    assert!(!stored.windows(4).any(|w| w == b"Exif"), "EXIF removed");
    assert!(!stored.windows(3).any(|w| w == b"GPS"), "GPS removed");
    use sha2::Digest;
    let hash: String = sha2::Sha256::digest(&stored)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        body["metadata"]["fileHash"], hash,
        "the hash of the stored original"
    );

    let photo = encoded(&picture(3000, 2000), ImageFormat::Jpeg);
    let (status, body) = upload(&server, &cookie, "photo.jpg", &photo).await;
    assert_eq!(status, 200, "{body}");
    let variants = &body["file"]["variants"];
    for (name, width, height, mime) in [
        ("thumbnail", 150, 150, "image/jpeg"),
        ("medium", 800, 533, "image/jpeg"),
        ("large", 1620, 1080, "image/jpeg"),
        ("thumbnail-webp", 150, 150, "image/webp"),
        ("medium-webp", 800, 533, "image/webp"),
    ] {
        let variant = &variants[name];
        assert_eq!(
            (variant["width"].as_u64(), variant["height"].as_u64()),
            (Some(width), Some(height)),
            "{name}"
        );
        assert_eq!(variant["mimeType"], mime, "{name}");
        let response = fetch(&server, variant["url"].as_str().unwrap()).await;
        assert_eq!(response.headers()["content-type"], mime, "{name}");
        let bytes = response.bytes().await.expect("body");
        let decoded = image::load_from_memory(&bytes).expect("a stored variant decodes");
        assert_eq!(
            (decoded.width(), decoded.height()),
            (width as u32, height as u32),
            "{name}"
        );
    }

    assert!(
        variants.get("large-webp").is_none(),
        "no lossless WebP of the large size"
    );
    let url = body["file"]["url"].as_str().unwrap().to_owned();
    let size = body["file"]["size"].as_u64().unwrap();
    let response = server
        .client
        .get(server.url(&url))
        .header("range", "bytes=10-19")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 206);
    assert_eq!(
        response.headers()["content-range"],
        format!("bytes 10-19/{size}").as_str()
    );
    assert_eq!(response.bytes().await.unwrap().len(), 10);
    let response = server
        .client
        .get(server.url(&url))
        .header("range", format!("bytes={}-", size + 10))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 416);
    for missing in [
        "/api/uploads/0123456789abcdef0123456789abcdef.jpg",
        "/api/uploads/..%2Fplaza.db",
        "/api/uploads/x.html",
    ] {
        let response = fetch(&server, missing).await;
        assert_eq!(response.status(), 404, "{missing}");
        let body: Value = response.json().await.expect("JSON");
        assert_eq!(body["error"], "Not found");
    }
}

async fn cleanup_removes_what_a_crash_left_behind(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (_, cookie) = member(&server, "uploader@example.com", "user").await;
    server.create_user("admin@example.com", common::PASSWORD, "admin");
    let token = server.mint("admin@example.com", "admin:write");
    let (status, kept) = upload(
        &server,
        &cookie,
        "kept.png",
        &encoded(&picture(64, 64), ImageFormat::Png),
    )
    .await;
    assert_eq!(status, 200, "{kept}");
    let (status, lost) = upload(
        &server,
        &cookie,
        "lost.png",
        &encoded(&picture(64, 64), ImageFormat::Png),
    )
    .await;
    assert_eq!(status, 200, "{lost}");
    let folder = server.data_dir.path().join("uploads");
    // A crash after the files, before the record: files nobody names, old.
    let orphan = folder.join("ffffffffffffffffffffffffffffffff.png");
    std::fs::write(&orphan, b"orphan").unwrap();
    let fresh = folder.join("eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee.png");
    std::fs::write(&fresh, b"in flight").unwrap();
    let touched = std::process::Command::new("touch")
        .args(["-d", "3 hours ago"])
        .arg(&orphan)
        .status()
        .unwrap();
    assert!(touched.success());
    // The store lost an original: its record (and its variants) go too.
    std::fs::remove_file(folder.join(lost["file"]["filename"].as_str().unwrap())).unwrap();

    let response = server
        .send(
            As::Token(&token),
            "POST",
            "/api/v1/admin/system/maintenance",
            Some(&json!({"action": "cleanup_uploads"})),
        )
        .await;
    assert_eq!(response.status(), 200);
    let report: Value = response.json().await.unwrap();
    let report = &report["data"]["uploads"];
    assert_eq!(report["filesRemoved"], 1, "{report}");
    assert_eq!(report["recordsRemoved"], 1, "{report}");
    assert!(!orphan.exists());
    assert!(
        fresh.exists(),
        "younger than an hour: perhaps an upload in flight"
    );
    let response = fetch(&server, kept["file"]["url"].as_str().unwrap()).await;
    assert_eq!(response.status(), 200, "the recorded upload stays");
    let thumbnail = lost["file"]["variants"]["thumbnail"]["url"]
        .as_str()
        .unwrap();
    assert_eq!(fetch(&server, thumbnail).await.status(), 404);
    assert_eq!(server.domain().await.upload_totals().await.unwrap().0, 1);
}

async fn uploads_are_rate_limited_in_the_upload_shape(backend: Backend) {
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_RATE_LIMITS_ENABLED", "true"),
            ("PLAZA_RATE_LIMIT_AUTHENTICATED", "2/hour"),
        ],
    )
    .await;
    let (_, cookie) = member(&server, "uploader@example.com", "user").await;
    let png = encoded(&picture(64, 64), ImageFormat::Png);
    let mut statuses = Vec::new();
    let mut last = Value::Null;
    for _ in 0..3 {
        let (status, body) = upload(&server, &cookie, "a.png", &png).await;
        statuses.push(status);
        last = body;
    }
    assert_eq!(statuses, [200, 200, 429], "{last}");
    assert_eq!(last["error"], "Rate limit exceeded");
    assert!(last["message"].is_string());
}

/// The same pipeline against an S3-compatible server (moto, started here
/// on loopback): files go to the bucket and come back through Plaza.
async fn an_s3_compatible_store_round_trips(backend: Backend) {
    let Some(moto) = Moto::start() else {
        common::skip(
            "an_s3_compatible_store_round_trips",
            "python3 -m moto.server is not installed",
        );
        return;
    };
    let endpoint = format!("http://127.0.0.1:{}", moto.port);
    let created = std::process::Command::new("python3")
        .args(["-c", &format!("import urllib.request as r; r.urlopen(r.Request('{endpoint}/plaza-test', method='PUT'))")])
        .status()
        .unwrap();
    assert!(created.success(), "bucket created");
    let server = TestServer::start_with(
        backend,
        &[
            ("PLAZA_STORAGE_URL", "s3://plaza-test/uploads"),
            ("AWS_ENDPOINT_URL", endpoint.as_str()),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_ALLOW_HTTP", "true"),
        ],
    )
    .await;
    let (_, cookie) = member(&server, "uploader@example.com", "user").await;
    let png = encoded(&picture(64, 64), ImageFormat::Png);
    let (status, body) = upload(&server, &cookie, "s3.png", &png).await;
    assert_eq!(status, 200, "{body}");
    let filename = body["file"]["filename"].as_str().unwrap();
    let listing = reqwest::get(format!("{endpoint}/plaza-test?list-type=2&prefix=uploads/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        listing.contains(&format!("uploads/{filename}")),
        "{listing}"
    );
    let response = fetch(&server, body["file"]["url"].as_str().unwrap()).await;
    assert_eq!(response.status(), 200);
    let stored = response.bytes().await.unwrap();
    assert_eq!(image::load_from_memory(&stored).unwrap().width(), 64);
    assert!(
        !server
            .data_dir
            .path()
            .join("uploads")
            .join(filename)
            .exists(),
        "not on the local disk"
    );
    // With the store gone, a read says so (503, not a failed upload).
    drop(moto);
    let response = fetch(&server, body["file"]["url"].as_str().unwrap()).await;
    assert_eq!(response.status(), 503);
    assert!(response.headers().contains_key("retry-after"));
    let said: Value = response.json().await.unwrap();
    assert_eq!(said["error"], "File store unavailable", "{said}");
    assert!(
        said.to_string()
            .contains("the upload store does not answer"),
        "{said}"
    );
}

/// A moto S3 server on a free loopback port, stopped when dropped.
pub(crate) struct Moto {
    child: std::process::Child,
    pub(crate) port: u16,
}

impl Moto {
    pub(crate) fn start() -> Option<Moto> {
        let installed = std::process::Command::new("python3")
            .args(["-c", "import moto.server"])
            .status()
            .ok()?
            .success();
        if !installed {
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let child = std::process::Command::new("python3")
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()?;
        let moto = Moto { child, port };
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(moto);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends a whole upload of `bytes` over a connection of its own and hands
/// the connection back unread: dropping it hangs up.
async fn send_upload_raw(server: &TestServer, cookie: &str, bytes: &[u8]) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let (content_type, body) = form("file", "big.jpg", "image/jpeg", bytes);
    let address = server.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    let head = format!(
        "POST /api/upload/image HTTP/1.1\r\nHost: {address}\r\nCookie: {cookie}\r\n\
         Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("send");
    stream.write_all(&body).await.expect("send");
    stream.flush().await.expect("send");
    stream
}

/// A 4096 × 4096 JPEG: the largest accepted, seconds of processing.
fn largest_jpeg() -> Vec<u8> {
    let bytes = encoded(&picture(4096, 4096), ImageFormat::Jpeg);
    assert!(bytes.len() <= 5_242_880, "{} bytes", bytes.len());
    bytes
}

/// The position of the first log line holding every one of `needles`,
/// colour codes left out.
fn log_line(logs: &str, needles: &[&str]) -> Option<usize> {
    logs.lines()
        .map(without_colours)
        .position(|line| needles.iter().all(|needle| line.contains(needle)))
}

/// `line` without its ANSI colour sequences (`ESC [ … m`).
fn without_colours(line: &str) -> String {
    let mut plain = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for code in chars.by_ref() {
                if code == 'm' {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_up_upload_keeps_its_slot_until_its_processing_ends() {
    let server = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PLAZA_UPLOAD_MAX_CONCURRENT", "1"),
            (
                "RUST_LOG",
                "info,sqlx=warn,plaza_server::services::uploads=debug,plaza_server::http::middleware=debug",
            ),
        ],
    )
    .await;
    let (_, cookie) = member(&server, "uploader@example.com", "user").await;
    let connection = send_upload_raw(&server, &cookie, &largest_jpeg()).await;
    server.wait_for_log("upload processing started");
    drop(connection);
    let (status, body) = upload(
        &server,
        &cookie,
        "small.png",
        &encoded(&picture(64, 64), ImageFormat::Png),
    )
    .await;
    let status = if status == 503 {
        // The slot was still taken when the wait for it ran out: it is so
        // until the hung-up upload's processing ends, and free after.
        server.wait_for_log("upload processing ended");
        let (status, body) = upload(
            &server,
            &cookie,
            "small.png",
            &encoded(&picture(64, 64), ImageFormat::Png),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        status
    } else {
        status
    };
    assert_eq!(status, 200, "{body}");
    server.wait_for_log_count("upload processing ended", 2);
    // The access line is written as the answer leaves, which may come after
    // the processing line the wait above saw.
    server.wait_for_log("answered method=POST path=\"/api/upload/image\" status=200");
    let logs = server.logs();
    let small_answered = log_line(&logs, &["answered", "/api/upload/image", "status=200"])
        .expect("the small upload was answered");
    let hung_up_ended = log_line(&logs, &["upload processing ended", "width=4096"])
        .expect("the hung-up upload's processing ended");
    assert!(
        hung_up_ended < small_answered,
        "the small upload was processed while the hung-up one still ran:\n{logs}"
    );
}

/// The peak resident memory of process `pid` (`VmHWM`), in KiB.
fn peak_memory_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_up_uploads_stay_within_the_memory_of_connected_ones() {
    let server = TestServer::start_with(
        Backend::Sqlite,
        &[(
            "RUST_LOG",
            "info,sqlx=warn,plaza_server::services::uploads=debug",
        )],
    )
    .await;
    let (_, cookie) = member(&server, "uploader@example.com", "user").await;
    let jpeg = largest_jpeg();
    let idle = peak_memory_kib(server.pid());
    let (status, body) = upload(&server, &cookie, "one.jpg", &jpeg).await;
    assert_eq!(status, 200, "{body}");
    let one = peak_memory_kib(server.pid());
    let (first, second) = tokio::join!(
        upload(&server, &cookie, "a.jpg", &jpeg),
        upload(&server, &cookie, "b.jpg", &jpeg)
    );
    assert_eq!((first.0, second.0), (200, 200), "{first:?} {second:?}");
    let connected = peak_memory_kib(server.pid());

    let mut connections = Vec::new();
    for _ in 0..8 {
        connections.push(send_upload_raw(&server, &cookie, &jpeg).await);
    }
    drop(connections);
    // Waits for the slots: behind whatever processing the hung-up
    // uploads started.
    let (status, body) = upload(
        &server,
        &cookie,
        "small.png",
        &encoded(&picture(64, 64), ImageFormat::Png),
    )
    .await;
    assert!(matches!(status, 200 | 503), "{status} {body}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while server.log_count("upload processing started")
        != server.log_count("upload processing ended")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "processing never ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let hung_up = peak_memory_kib(server.pid());
    let per_upload = one.saturating_sub(idle);
    assert!(
        hung_up <= connected + per_upload,
        "hung-up uploads peaked at {hung_up} KiB; two connected ones at {connected} KiB, \
         one at {per_upload} KiB over idle"
    );
}

/// Plaza's S3 settings for the store at `endpoint`, every call limited to
/// `timeout_secs`.
pub(crate) fn s3_env(endpoint: &str, timeout_secs: &'static str) -> Vec<(&'static str, String)> {
    vec![
        ("PLAZA_STORAGE_URL", "s3://plaza-test/uploads".to_owned()),
        ("PLAZA_STORAGE_TIMEOUT_SECS", timeout_secs.to_owned()),
        ("AWS_ENDPOINT_URL", endpoint.to_owned()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("AWS_ACCESS_KEY_ID", "test".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "test".to_owned()),
        ("AWS_ALLOW_HTTP", "true".to_owned()),
    ]
}

pub(crate) fn borrowed<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter()
        .map(|(key, value)| (*key, value.as_str()))
        .collect()
}

async fn a_hung_store_fails_the_upload_in_time_and_keeps_no_record(backend: Backend) {
    // Accepts connections and reads whatever comes, never answering.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut stream, &mut tokio::io::sink()).await;
            });
        }
    });
    let env = s3_env(&endpoint, "2");
    let server = TestServer::start_with(backend, &borrowed(&env)).await;
    let (_, cookie) = member(&server, "uploader@example.com", "user").await;
    let started = std::time::Instant::now();
    let (status, body) = upload(
        &server,
        &cookie,
        "a.png",
        &encoded(&picture(64, 64), ImageFormat::Png),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(status, 503, "a store that does not answer is named: {body}");
    assert_eq!(body["error"], "File store unavailable");
    assert!(
        took < std::time::Duration::from_secs(6),
        "a 2 s store timeout answered after {took:?}"
    );
    let stats = server.domain().await.upload_totals().await.expect("totals");
    assert_eq!(stats, (0, 0), "nothing recorded");
}

/// Keys under `uploads/` in moto's bucket, asked directly.
async fn bucket_keys(endpoint: &str) -> Vec<String> {
    let listing = reqwest::get(format!("{endpoint}/plaza-test?list-type=2&prefix=uploads/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    listing
        .split("<Key>")
        .skip(1)
        .filter_map(|rest| rest.split("</Key>").next())
        .map(str::to_owned)
        .collect()
}

/// A store that does what it is asked but whose answers never come back
/// (a proxy to moto that drops them): every write is committed after
/// Plaza has given up on it.
async fn a_write_committed_after_the_upload_gave_up_is_deleted(backend: Backend) {
    let Some(moto) = Moto::start() else {
        common::skip(
            "a_write_committed_after_the_upload_gave_up_is_deleted",
            "python3 -m moto.server is not installed",
        );
        return;
    };
    let moto_endpoint = format!("http://127.0.0.1:{}", moto.port);
    create_bucket(&moto_endpoint);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let moto_port = moto.port;
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(upstream) = tokio::net::TcpStream::connect(("127.0.0.1", moto_port)).await
                else {
                    return;
                };
                let (mut client_read, _client_write) = client.into_split();
                let (mut upstream_read, mut upstream_write) = upstream.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut upstream_read, &mut tokio::io::sink()).await;
                });
                let _ = tokio::io::copy(&mut client_read, &mut upstream_write).await;
            });
        }
    });
    let env = s3_env(&endpoint, "2");
    let server = TestServer::start_with(backend, &borrowed(&env)).await;
    let (_, cookie) = member(&server, "uploader@example.com", "user").await;
    let (status, body) = upload(
        &server,
        &cookie,
        "a.png",
        &encoded(&picture(64, 64), ImageFormat::Png),
    )
    .await;
    assert_eq!(status, 503, "a store that does not answer is named: {body}");
    assert_eq!(body["error"], "File store unavailable");
    assert_eq!(server.domain().await.upload_totals().await.unwrap(), (0, 0));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let keys = bucket_keys(&moto_endpoint).await;
        if keys.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "files of the failed upload stayed: {keys:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

pub(crate) fn create_bucket(endpoint: &str) {
    let created = std::process::Command::new("python3")
        .args(["-c", &format!("import urllib.request as r; r.urlopen(r.Request('{endpoint}/plaza-test', method='PUT'))")])
        .status()
        .unwrap();
    assert!(created.success(), "bucket created");
}

async fn cleanup_uploads(server: &TestServer, token: &str) -> Value {
    let response = server
        .send(
            As::Token(token),
            "POST",
            "/api/v1/admin/system/maintenance",
            Some(&json!({"action": "cleanup_uploads"})),
        )
        .await;
    assert_eq!(response.status(), 200);
    let report: Value = response.json().await.unwrap();
    report["data"]["uploads"].clone()
}

/// Two instances on one database, each with a store of its own (two local
/// folders): the sweep of one never removes the other's records.
async fn an_instance_with_another_store_sweeps_nothing_of_the_others() {
    let backend = Backend::Postgres;
    let first = TestServer::start(backend).await;
    let second = TestServer::start_with(
        backend,
        &[("PLAZA_DATABASE_URL", first.database_url.as_str())],
    )
    .await;
    let (_, cookie) = member(&first, "uploader@example.com", "user").await;
    first.create_user("admin@example.com", common::PASSWORD, "admin");
    let token = first.mint("admin@example.com", "admin:write");
    let png = encoded(&picture(64, 64), ImageFormat::Png);
    let (status, kept) = upload(&first, &cookie, "kept.png", &png).await;
    assert_eq!(status, 200, "{kept}");
    let (status, older) = upload(&first, &cookie, "older.png", &png).await;
    assert_eq!(status, 200, "{older}");
    // A record made before stores were named: its store is unknown.
    first
        .sql(&format!(
            "UPDATE uploads SET store = NULL WHERE storage_key = '{}'",
            older["file"]["filename"].as_str().unwrap()
        ))
        .await;

    let report = cleanup_uploads(&second, &token).await;
    assert_eq!(report["recordsRemoved"], 0, "{report}");
    assert_eq!(first.domain().await.upload_totals().await.unwrap().0, 2);
    for upload in [&kept, &older] {
        let url = upload["file"]["url"].as_str().unwrap();
        assert_eq!(fetch(&first, url).await.status(), 200, "{url}");
    }
    let report = cleanup_uploads(&first, &token).await;
    assert_eq!(report["recordsRemoved"], 0, "{report}");
}

/// Starts `plaza` with `env` and answers its exit and what it wrote to
/// stderr; fails when it is still running after 30 s (it started).
fn refused_start(env: &[(String, String)]) -> (std::process::ExitStatus, String) {
    refused_start_of(common::plaza_command(env))
}

/// [`refused_start`] of `command`.
pub(crate) fn refused_start_of(
    mut command: std::process::Command,
) -> (std::process::ExitStatus, String) {
    use std::io::Read;
    let mut child = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn plaza");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for plaza") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("plaza started");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    (status, stderr)
}

async fn an_instance_with_another_store_refuses_to_start() {
    let backend = Backend::Postgres;
    let first = TestServer::start(backend).await;
    let (_, cookie) = member(&first, "uploader@example.com", "user").await;
    let (status, body) = upload(
        &first,
        &cookie,
        "a.png",
        &encoded(&picture(64, 64), ImageFormat::Png),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let other_dir = tempfile::tempdir().unwrap();
    let other_data_dir = other_dir.path().display().to_string();
    let env: Vec<(String, String)> = [
        ("PLAZA_DATABASE_URL", first.database_url.as_str()),
        ("PLAZA_DATA_DIR", other_data_dir.as_str()),
        ("PLAZA_BIND", "127.0.0.1:0"),
        ("PLAZA_JWT_SECRET", common::TEST_JWT_SECRET),
        ("PLAZA_LOG_FORMAT", "text"),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value.to_owned()))
    .collect();
    let (exit, stderr) = refused_start(&env);
    assert!(!exit.success(), "{stderr}");
    let last = stderr.trim().lines().last().unwrap_or_default();
    assert!(
        last.contains("storage_url") && last.contains("storage_moved"),
        "one line naming the settings: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    // Told that the files moved, it starts, and the records name its store.
    let moved = TestServer::start_with(
        backend,
        &[
            ("PLAZA_DATABASE_URL", first.database_url.as_str()),
            ("PLAZA_STORAGE_MOVED", "true"),
        ],
    )
    .await;
    let store = format!(
        "file://{}",
        std::fs::canonicalize(moved.data_dir.path().join("uploads"))
            .unwrap()
            .display()
    );
    let named = moved
        .sql_count(&format!(
            "SELECT COUNT(*) FROM uploads WHERE store = '{store}'"
        ))
        .await;
    assert_eq!(named, 1);
}

on_both_databases!(
    stored_files_no_record_names_are_swept_by_themselves_once_old,
    a_hung_store_fails_the_upload_in_time_and_keeps_no_record,
    a_write_committed_after_the_upload_gave_up_is_deleted,
    every_row_of_the_upload_error_table,
    a_store_that_does_not_answer_is_named_and_nothing_recorded,
    a_store_that_refuses_a_write_answers_upload_failed,
    the_type_comes_from_the_bytes_not_the_name,
    stored_files_lose_their_metadata_and_come_in_every_size,
    cleanup_removes_what_a_crash_left_behind,
    uploads_are_rate_limited_in_the_upload_shape,
    an_s3_compatible_store_round_trips,
);

on_postgres!(
    an_instance_with_another_store_sweeps_nothing_of_the_others,
    an_instance_with_another_store_refuses_to_start,
    the_same_bucket_behind_another_endpoint_is_another_store,
);

/// Two S3 servers (moto) each with a bucket `plaza-test`: an instance
/// whose `storage_url` is the same name as the records' but whose
/// endpoint is the other server's refuses to start, so it never sweeps
/// records it cannot see the files of; records named before endpoints
/// were part of a store's name are taken over only by an instance whose
/// store holds their files.
async fn the_same_bucket_behind_another_endpoint_is_another_store() {
    const TEST: &str = "the_same_bucket_behind_another_endpoint_is_another_store";
    let (Some(moto), Some(other)) = (Moto::start(), Moto::start()) else {
        common::skip(TEST, "python3 -m moto.server is not installed");
        return;
    };
    let endpoint = format!("http://127.0.0.1:{}", moto.port);
    let other_endpoint = format!("http://127.0.0.1:{}", other.port);
    create_bucket(&endpoint);
    create_bucket(&other_endpoint);
    let env = s3_env(&endpoint, "10");
    let mut first = TestServer::start_with(Backend::Postgres, &borrowed(&env)).await;
    let (_, cookie) = member(&first, "uploader@example.com", "user").await;
    first.create_user("admin@example.com", common::PASSWORD, "admin");
    let token = first.mint("admin@example.com", "admin:write");
    let png = encoded(&picture(64, 64), ImageFormat::Png);
    let (status, kept) = upload(&first, &cookie, "kept.png", &png).await;
    assert_eq!(status, 200, "{kept}");
    let url = kept["file"]["url"].as_str().unwrap().to_owned();
    assert_eq!(
        first
            .domain()
            .await
            .other_upload_store("")
            .await
            .unwrap()
            .as_deref(),
        Some(format!("s3://plaza-test/uploads?endpoint={endpoint}").as_str())
    );

    let other_dir = tempfile::tempdir().unwrap();
    let mut elsewhere = first.command();
    elsewhere
        .env("AWS_ENDPOINT_URL", &other_endpoint)
        .env("PLAZA_DATA_DIR", other_dir.path());
    let (exit, stderr) = refused_start_of(elsewhere);
    assert!(!exit.success(), "{stderr}");
    assert!(stderr.contains(&other_endpoint), "{stderr}");

    // Records of an earlier version name the store without its endpoint.
    first
        .sql("UPDATE uploads SET store = 's3://plaza-test/uploads'")
        .await;
    let mut elsewhere = first.command();
    elsewhere
        .env("AWS_ENDPOINT_URL", &other_endpoint)
        .env("PLAZA_DATA_DIR", other_dir.path());
    let (exit, stderr) = refused_start_of(elsewhere);
    assert!(!exit.success(), "{stderr}");
    assert!(stderr.contains("AWS_ENDPOINT_URL"), "{stderr}");
    first.restart_with(&[]);
    assert_eq!(
        first
            .domain()
            .await
            .other_upload_store("")
            .await
            .unwrap()
            .as_deref(),
        Some(format!("s3://plaza-test/uploads?endpoint={endpoint}").as_str())
    );
    let report = cleanup_uploads(&first, &token).await;
    assert_eq!(report["recordsRemoved"], 0, "{report}");
    assert_eq!(fetch(&first, &url).await.status(), 200);
}

/// Sets the modification time of `path` to `ago` before now.
fn backdate(path: &std::path::Path, ago: &str) {
    let touched = std::process::Command::new("touch")
        .arg("-d")
        .arg(ago)
        .arg(path)
        .status()
        .unwrap();
    assert!(touched.success(), "touch -d {ago} {}", path.display());
}

/// The cluster job removes stored files that no upload record names once
/// they are older than an hour; a young stray file (an upload may be
/// between its files and its record) and a recorded file stay.
async fn stored_files_no_record_names_are_swept_by_themselves_once_old(backend: Backend) {
    let server = TestServer::start_with(backend, &[("PLAZA_ORPHAN_FILE_SWEEP_SECS", "1")]).await;
    let (_, cookie) = member(&server, "uploader@example.com", "user").await;
    let (status, body) = upload(
        &server,
        &cookie,
        "kept.png",
        &encoded(&picture(64, 64), ImageFormat::Png),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let folder = server.data_dir.path().join("uploads");
    let recorded = folder.join(body["file"]["filename"].as_str().unwrap());
    backdate(&recorded, "2 hours ago");
    let old_stray = folder.join("stray-old.png");
    let young_stray = folder.join("stray-young.png");
    std::fs::write(&old_stray, b"left behind").unwrap();
    std::fs::write(&young_stray, b"being uploaded").unwrap();
    backdate(&old_stray, "2 hours ago");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while old_stray.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the old stray file stayed:\n{}",
            server.logs()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(young_stray.exists(), "a young file is kept");
    assert!(recorded.exists(), "a recorded file is kept");
    // The sweep logs what it removed once the removal is done.
    server.wait_for_log("removed stored files no upload record names");
}
