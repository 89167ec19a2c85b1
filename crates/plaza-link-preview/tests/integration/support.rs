//! Shared test support: the fixture corpus and a loopback HTTP server
//! shaped for link-preview tests (fixtures, redirects, compression, slow and
//! silent answers). The server speaks just enough HTTP/1.1: one request per
//! connection, then close.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One fixture page and its expected result.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub name: String,
    pub html: Vec<u8>,
    pub title: String,
    pub description: String,
    /// Expected image with `{origin}` standing for the serving origin and
    /// `{scheme}` for its scheme.
    pub image: Option<String>,
    pub content_type: String,
}

impl Fixture {
    pub fn expected_image(&self, origin: &str) -> Option<String> {
        let scheme = origin.split(':').next().unwrap_or_default();
        self.image
            .as_ref()
            .map(|i| i.replace("{origin}", origin).replace("{scheme}", scheme))
    }
}

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pages")
}

pub fn load_fixtures() -> Vec<Fixture> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(fixtures_dir())
        .expect("fixtures dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
        .collect();
    entries.sort();
    for path in entries {
        let json: serde_json::Value = serde_json::from_slice(
            &std::fs::read(path.with_extension("json")).expect("expected .json"),
        )
        .expect("json");
        let text = |k: &str| json[k].as_str().unwrap_or_default().to_owned();
        out.push(Fixture {
            name: path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            html: std::fs::read(&path).expect("html"),
            title: text("title"),
            description: text("description"),
            image: json["image"].as_str().map(str::to_owned),
            content_type: text("content_type"),
        });
    }
    out
}

/// A running fixture server on 127.0.0.1; stops when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    pub async fn start() -> TestServer {
        Self::start_on("127.0.0.1:0").await
    }

    /// A server on a chosen loopback address (any of 127.0.0.0/8 binds on
    /// Linux), for tests that need two distinguishable hosts.
    pub async fn start_on(bind: &str) -> TestServer {
        let listener = TcpListener::bind(bind).await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let fixtures = load_fixtures();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let fixtures = fixtures.clone();
                tokio::spawn(async move {
                    let _ = handle(stream, &fixtures, addr).await;
                });
            }
        });
        TestServer { addr, task }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port())
    }
}

struct Request {
    path: String,
    query: String,
    headers: Vec<(String, String)>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn param(&self, name: &str) -> Option<String> {
        url::form_urlencoded::parse(self.query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() > 64 * 1024 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let mut lines = head.split("\r\n");
    let target = lines.next()?.split(' ').nth(1)?.to_owned();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let headers = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Some(Request {
        path: path.to_owned(),
        query: query.to_owned(),
        headers,
    })
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}

fn compress(encoding: &str, body: &[u8]) -> Vec<u8> {
    match encoding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(body).expect("gzip");
            e.finish().expect("gzip")
        }
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(body).expect("deflate");
            e.finish().expect("deflate")
        }
        "br" => {
            let mut out = Vec::new();
            let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
            w.write_all(body).expect("br");
            drop(w);
            out
        }
        _ => body.to_vec(),
    }
}

async fn handle(
    mut stream: TcpStream,
    fixtures: &[Fixture],
    local: SocketAddr,
) -> std::io::Result<()> {
    let Some(req) = read_request(&mut stream).await else {
        return Ok(());
    };
    let html = ("Content-Type", "text/html; charset=utf-8".to_owned());
    let path = req.path.clone();
    if let Some(name) = path
        .strip_prefix("/pages/")
        .and_then(|p| p.strip_suffix(".html"))
    {
        let Some(f) = fixtures.iter().find(|f| f.name == name) else {
            return respond(&mut stream, "404 Not Found", &[], b"").await;
        };
        let mut headers = vec![("Content-Type", f.content_type.clone())];
        let body = match req.param("enc") {
            Some(enc) => {
                headers.push(("Content-Encoding", enc.clone()));
                compress(&enc, &f.html)
            }
            None => f.html.clone(),
        };
        return respond(&mut stream, "200 OK", &headers, &body).await;
    }
    if path == "/redirect" {
        let to = req.param("to").unwrap_or_default();
        let headers = [
            ("Location", to),
            ("Set-Cookie", "session=secret; Path=/".to_owned()),
        ];
        return respond(&mut stream, "302 Found", &headers, b"").await;
    }
    if let Some(n) = path.strip_prefix("/chain/") {
        let n: u32 = n.parse().unwrap_or(0);
        if n == 0 {
            let body = b"<title>End of chain</title>";
            return respond(&mut stream, "200 OK", &[html], body).await;
        }
        let headers = [("Location", format!("/chain/{}", n - 1))];
        return respond(&mut stream, "301 Moved Permanently", &headers, b"").await;
    }
    if path == "/whoami" {
        let body = format!("<title>{}</title>", local.ip());
        return respond(&mut stream, "200 OK", &[html], body.as_bytes()).await;
    }
    if path == "/echo-headers" {
        let ua = req.header("user-agent").unwrap_or("none").to_owned();
        let cookie = req.header("cookie").unwrap_or("none").to_owned();
        let body =
            format!("<title>{ua}</title><meta name=description content=\"cookie: {cookie}\">");
        return respond(&mut stream, "200 OK", &[html], body.as_bytes()).await;
    }
    if let Some(code) = path.strip_prefix("/status/") {
        let status = match code {
            "404" => "404 Not Found",
            "500" => "500 Internal Server Error",
            _ => "418 I'm a teapot",
        };
        return respond(&mut stream, status, &[html], b"<title>error page</title>").await;
    }
    if path == "/image.png" {
        return respond(
            &mut stream,
            "200 OK",
            &[("Content-Type", "image/png".to_owned())],
            b"\x89PNG\r\n\x1a\n",
        )
        .await;
    }
    if path == "/files/report.pdf" {
        return respond(
            &mut stream,
            "200 OK",
            &[("Content-Type", "application/pdf".to_owned())],
            b"%PDF-1.7",
        )
        .await;
    }
    if path == "/never" {
        // Read the request, then never answer.
        std::future::pending::<()>().await;
    }
    if path == "/drip" {
        stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n<html><head>")
            .await?;
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            stream.write_all(b" ").await?;
        }
    }
    if path == "/head-then-stall" {
        stream
            .write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n<html><head>\
                  <meta property=og:title content=Streamed><meta property=og:description content=Stopped>\
                  <meta property=og:image content=/s.png></head><body>",
            )
            .await?;
        std::future::pending::<()>().await;
    }
    if path == "/beyond-limit" {
        // Nearly 3 MiB of head-less text, then metadata that must not be read.
        let mut body = vec![b'x'; 3 * 1024 * 1024];
        body.extend_from_slice(b"<title>Beyond the limit</title>");
        return respond(&mut stream, "200 OK", &[html], &body).await;
    }
    respond(&mut stream, "404 Not Found", &[], b"").await
}
