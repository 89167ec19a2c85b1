//! The connection level, over raw TCP: header-read and idle timeouts, the
//! connection cap, and answers that survive a client still sending.

use std::time::Duration;

use crate::common::{Backend, TestServer};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Generous bound for anything the server must do by itself: the tests
/// wait on the socket, and this only stops a test that would hang.
const OUTER: Duration = Duration::from_secs(20);

async fn connect(server: &TestServer) -> TcpStream {
    TcpStream::connect(server.base.trim_start_matches("http://"))
        .await
        .unwrap()
}

/// Reads until the server closes the connection; panics on a reset or
/// when the server keeps it open past [`OUTER`].
async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut all = Vec::new();
    tokio::time::timeout(OUTER, stream.read_to_end(&mut all))
        .await
        .expect("the server closes the connection")
        .expect("a clean close, not a reset");
    all
}

/// Reads one answer with a `content-length`: (head, body).
async fn read_answer(stream: &mut TcpStream) -> (String, Vec<u8>) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let read = tokio::time::timeout(OUTER, stream.read(&mut chunk))
            .await
            .expect("an answer")
            .unwrap();
        assert!(read > 0, "closed before the answer");
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map(|value| value.trim().parse().unwrap())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let read = stream.read(&mut chunk).await.unwrap();
        assert!(read > 0, "closed inside the body");
        buffer.extend_from_slice(&chunk[..read]);
    }
    (head, buffer[head_end..head_end + length].to_vec())
}

const HEALTH: &[u8] = b"GET /api/health HTTP/1.1\r\nHost: plaza\r\n\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_are_closed_after_the_header_read_timeout() {
    let server = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PLAZA_HEADER_READ_TIMEOUT_SECS", "1"),
            ("PLAZA_IDLE_TIMEOUT_SECS", "600"),
        ],
    )
    .await;
    // Headers started and never finished.
    let mut half_sent = connect(&server).await;
    half_sent
        .write_all(b"GET /api/health HTTP/1.1\r\nHost: plaza\r\nX-Slow: ")
        .await
        .unwrap();
    // Nothing sent at all: the HTTP version is not even known yet.
    let mut silent = connect(&server).await;
    read_until_closed(&mut half_sent).await;
    read_until_closed(&mut silent).await;
    // The server still serves.
    let mut fresh = connect(&server).await;
    fresh.write_all(HEALTH).await.unwrap();
    let (head, _) = read_answer(&mut fresh).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_keep_alive_connections_are_closed_after_the_idle_timeout() {
    let server = TestServer::start_with(
        Backend::Sqlite,
        &[
            ("PLAZA_HEADER_READ_TIMEOUT_SECS", "600"),
            ("PLAZA_IDLE_TIMEOUT_SECS", "2"),
        ],
    )
    .await;
    let mut stream = connect(&server).await;
    stream.write_all(HEALTH).await.unwrap();
    let (head, _) = read_answer(&mut stream).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(!head.contains("connection: close"), "{head}");
    // Kept alive, then closed once idle.
    assert!(read_until_closed(&mut stream).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_get_503_and_capacity_comes_back() {
    let server = TestServer::start_with(Backend::Sqlite, &[("PLAZA_MAX_CONNECTIONS", "4")]).await;
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut stream = connect(&server).await;
        stream.write_all(HEALTH).await.unwrap();
        let (head, _) = read_answer(&mut stream).await;
        assert!(head.starts_with("http/1.1 200"), "{head}");
        held.push(stream);
    }
    let mut fifth = connect(&server).await;
    fifth.write_all(HEALTH).await.unwrap();
    let answer = read_until_closed(&mut fifth).await;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let head = head.to_lowercase();
    assert!(head.starts_with("http/1.1 503"), "{text}");
    assert!(head.contains("connection: close"), "{head}");
    assert!(head.contains("retry-after: 1"), "{head}");
    let body: Value = serde_json::from_str(body).unwrap();
    assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE");

    // Closing the held connections frees their slots. The server notices
    // each close a moment later, so a new connection may still meet the
    // cap a few times before it is served.
    for mut stream in held {
        stream.shutdown().await.unwrap();
        read_until_closed(&mut stream).await;
    }
    let mut served = false;
    for _ in 0..200 {
        let mut stream = connect(&server).await;
        stream
            .write_all(b"GET /api/health HTTP/1.1\r\nHost: plaza\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let answer = read_until_closed(&mut stream).await;
        if answer.starts_with(b"HTTP/1.1 200") {
            served = true;
            break;
        }
        assert!(answer.starts_with(b"HTTP/1.1 503"));
    }
    assert!(served, "no connection was served after the others closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_chunked_body_gets_a_readable_413() {
    let server = TestServer::start(Backend::Sqlite).await;
    let mut stream = connect(&server).await;
    // Like many clients, this one sends its whole body (8 MiB, over the
    // 1 MiB limit) before it reads. Without a lingering close the server
    // drops the unread rest: the kernel resets the connection and the
    // client's writes fail (here after about 5.5 MiB) before it reads.
    stream
        .write_all(
            b"POST /api/users HTTP/1.1\r\nHost: plaza\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        )
        .await
        .unwrap();
    let chunk = vec![b'a'; 64 * 1024];
    for sent in 0..128 {
        let written: std::io::Result<()> = async {
            stream.write_all(b"10000\r\n").await?;
            stream.write_all(&chunk).await?;
            stream.write_all(b"\r\n").await
        }
        .await;
        if let Err(error) = written {
            panic!("the body was refused after {sent} chunks of 64 KiB: {error}");
        }
    }
    stream.write_all(b"0\r\n\r\n").await.unwrap();
    let answer = read_until_closed(&mut stream).await;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    let body: Value = serde_json::from_str(body).unwrap();
    assert_eq!(body["error"]["code"], "PAYLOAD_TOO_LARGE", "{body}");
}
