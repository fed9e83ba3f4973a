//! What the server's tests share: a blocking HTTP client and request shorthands.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;

use ebpkg_registry::testing::TestRegistry;
use reqwest::blocking::{Client, Response};

pub fn http() -> Client {
    Client::builder().timeout(std::time::Duration::from_secs(60)).build().unwrap()
}

pub fn get(reg: &TestRegistry, path: &str) -> Response {
    http().get(format!("{}{path}", reg.url())).send().unwrap()
}

pub fn publish(reg: &TestRegistry, token: &str, body: &[u8]) -> Response {
    http()
        .put(format!("{}api/v1/packages/new", reg.url()))
        .header("Authorization", token)
        .body(body.to_vec())
        .send()
        .unwrap()
}

pub fn send(
    reg: &TestRegistry,
    method: reqwest::Method,
    path: &str,
    token: &str,
    json: Option<serde_json::Value>,
) -> Response {
    let mut request = http().request(method, format!("{}{path}", reg.url())).header("Authorization", token);
    if let Some(json) = json {
        request = request.json(&json);
    }
    request.send().unwrap()
}

/// A u32 LE length and the bytes.
pub fn frame(bytes: &[u8]) -> Vec<u8> {
    let mut out = (bytes.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(bytes);
    out
}

fn gzip(tar: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(tar).unwrap();
    gz.finish().unwrap()
}

/// A tar holding one file at `path` (written raw, so any path can be made).
fn tar_with(path: &str, contents: &[u8]) -> Vec<u8> {
    let mut header = [0u8; 512];
    header[..path.len()].copy_from_slice(path.as_bytes());
    header[100..108].copy_from_slice(b"0000644\0");
    header[108..116].copy_from_slice(b"0000000\0");
    header[116..124].copy_from_slice(b"0000000\0");
    header[124..136].copy_from_slice(format!("{:011o}\0", contents.len()).as_bytes());
    header[136..148].copy_from_slice(b"00000000000\0");
    header[156] = b'0';
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
    header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let mut tar = header.to_vec();
    tar.extend_from_slice(contents);
    tar.resize(tar.len().div_ceil(512) * 512 + 1024, 0);
    tar
}

/// Archives the server must refuse, each with a word of the refusal.
pub fn hostile_archives() -> Vec<(Vec<u8>, &'static str)> {
    let manifest = b"[package]\nname = \"my-pkg\"\nversion = \"4.0.0\"\n";
    vec![
        (b"not gzip at all".to_vec(), "refused"),
        (gzip(&tar_with("../../etc/cron.d/x", b"boom")), "refused"),
        (gzip(&tar_with("/etc/passwd", b"boom")), "refused"),
        (gzip(&tar_with("my-pkg-4.0.0/ebpkg.toml", b"[package]\nname = 3\n")), "refused"),
        (gzip(&tar_with("my-pkg-4.0.0/../ebpkg.toml", manifest)), "refused"),
        (gzip(&vec![0u8; 8 * 1024 * 1024]), "refused"),
    ]
}
