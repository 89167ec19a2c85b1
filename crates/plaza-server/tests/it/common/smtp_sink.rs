//! A local SMTP server for tests: it takes every mail on a loopback port
//! (plain SMTP, no authentication) and keeps it, and it reads back the
//! links Plaza's mails carry.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One mail as the sink received it.
#[derive(Debug, Clone)]
pub struct SunkMail {
    pub recipients: Vec<String>,
    /// The message as sent (headers and MIME parts).
    pub data: String,
}

impl SunkMail {
    /// The message's parts decoded and joined (see [`decoded_text`]).
    pub fn text(&self) -> String {
        decoded_text(&self.data)
    }
}

/// The running sink; it stops when dropped.
pub struct SmtpSink {
    pub port: u16,
    mails: Arc<Mutex<Vec<SunkMail>>>,
    task: tokio::task::JoinHandle<()>,
}

impl SmtpSink {
    /// Listens on a free loopback port.
    pub async fn start() -> Self {
        Self::start_on(0).await
    }

    /// Listens on `port` (one a test kept free while "the server was down").
    pub async fn start_on(port: u16) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind the SMTP sink");
        let port = listener.local_addr().expect("the sink's address").port();
        let mails = Arc::new(Mutex::new(Vec::new()));
        let kept = mails.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(converse(stream, kept.clone()));
            }
        });
        SmtpSink { port, mails, task }
    }

    /// `smtp_url` for this sink.
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    pub fn mails(&self) -> Vec<SunkMail> {
        self.mails.lock().expect("the sink's mails").clone()
    }

    /// Waits (30 s at most) until `count` mails have arrived, and answers them.
    pub async fn wait_for(&self, count: usize) -> Vec<SunkMail> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let mails = self.mails();
            if mails.len() >= count {
                return mails;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the sink got {} mails, not {count}: {mails:?}",
                mails.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One SMTP session: every command is accepted, every mail kept.
async fn converse(stream: TcpStream, mails: Arc<Mutex<Vec<SunkMail>>>) {
    let (reader, mut writer) = stream.into_split();
    let mut lines = BufReader::new(reader).lines();
    if writer.write_all(b"220 sink ESMTP\r\n").await.is_err() {
        return;
    }
    let mut recipients = Vec::new();
    while let Ok(Some(line)) = lines.next_line().await {
        let verb = line
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        let reply: &[u8] = match verb.as_str() {
            "EHLO" | "HELO" => b"250-sink\r\n250 8BITMIME\r\n",
            "MAIL" | "RSET" | "NOOP" => {
                if verb != "NOOP" {
                    recipients.clear();
                }
                b"250 OK\r\n"
            }
            "RCPT" => {
                let address = line
                    .split_once(':')
                    .map(|(_, rest)| rest.trim().trim_matches(|c| c == '<' || c == '>'))
                    .unwrap_or_default();
                recipients.push(address.to_owned());
                b"250 OK\r\n"
            }
            "DATA" => {
                if writer.write_all(b"354 go on\r\n").await.is_err() {
                    return;
                }
                let mut data = Vec::new();
                while let Ok(Some(line)) = lines.next_line().await {
                    if line == "." {
                        break;
                    }
                    data.push(line.strip_prefix('.').unwrap_or(&line).to_owned());
                }
                mails.lock().expect("the sink's mails").push(SunkMail {
                    recipients: std::mem::take(&mut recipients),
                    data: data.join("\r\n"),
                });
                b"250 queued\r\n"
            }
            "QUIT" => {
                let _ = writer.write_all(b"221 bye\r\n").await;
                return;
            }
            _ => b"502 not here\r\n",
        };
        if writer.write_all(reply).await.is_err() {
            return;
        }
    }
}

/// The parts of a MIME message, each decoded from its transfer encoding
/// (quoted-printable or base64), joined by newlines: what a reader sees.
pub fn decoded_text(message: &str) -> String {
    let lines: Vec<&str> = message.lines().collect();
    let mut decoded = String::new();
    let mut index = 0;
    while index < lines.len() {
        // A block of headers, then its body up to the next boundary.
        let mut encoding = String::new();
        while index < lines.len() && !lines[index].is_empty() {
            let line = lines[index].to_ascii_lowercase();
            if let Some(value) = line.strip_prefix("content-transfer-encoding:") {
                encoding = value.trim().to_owned();
            }
            index += 1;
        }
        let mut body = Vec::new();
        index += 1;
        while index < lines.len() && !lines[index].starts_with("--") {
            body.push(lines[index]);
            index += 1;
        }
        index += 1;
        decoded.push_str(&decode_part(&encoding, &body));
        decoded.push('\n');
    }
    decoded
}

fn decode_part(encoding: &str, body: &[&str]) -> String {
    match encoding {
        "base64" => {
            let joined: String = body.concat();
            base64::engine::general_purpose::STANDARD
                .decode(joined.trim())
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .unwrap_or_default()
        }
        "quoted-printable" => {
            let mut text = String::new();
            for line in body {
                match line.strip_suffix('=') {
                    Some(soft) => text.push_str(soft),
                    None => {
                        text.push_str(line);
                        text.push('\n');
                    }
                }
            }
            let bytes = text.as_bytes();
            let mut out = Vec::with_capacity(bytes.len());
            let mut at = 0;
            while at < bytes.len() {
                let hex = bytes
                    .get(at + 1..at + 3)
                    .and_then(|pair| std::str::from_utf8(pair).ok())
                    .and_then(|pair| u8::from_str_radix(pair, 16).ok());
                match (bytes[at], hex) {
                    (b'=', Some(byte)) => {
                        out.push(byte);
                        at += 3;
                    }
                    (byte, _) => {
                        out.push(byte);
                        at += 1;
                    }
                }
            }
            String::from_utf8_lossy(&out).into_owned()
        }
        _ => body.join("\n"),
    }
}

/// The token of the first link to `path` (such as
/// `/api/auth/verify-email`) in `text`.
pub fn token_in(text: &str, path: &str) -> String {
    let marker = format!("{path}?token=");
    let start = text
        .find(&marker)
        .unwrap_or_else(|| panic!("no link to {path} in:\n{text}"))
        + marker.len();
    text[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect()
}
