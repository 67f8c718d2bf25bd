//! The `admin_protocol` target's exchange and oracle, shared with the seed replay of the
//! integration tests (`tests/it/fuzz_seeds.rs` includes this file by path). Self-contained: no
//! item of the fuzz crate.
//!
//! An input is written whole to the admin socket of a running server (which reads one line,
//! at most 64 KiB, parses it as an `AdminRequest`, runs the command and answers one JSON
//! line), then the write half is closed.
//!
//! Fails on: a request line that is valid UTF-8 but gets no answer, or an answer that is not an
//! `AdminResponse` (`ok` with a result, or not `ok` with an error); an internal error.

use std::{
    io::{Read, Write},
    os::unix::net::UnixStream,
    path::Path,
    time::Duration,
};

use tessera::admin::protocol::AdminResponse;

/// The server reads at most this much of a request (`MAX_REQUEST` in src/admin/server.rs).
pub const MAX_REQUEST: usize = 64 * 1024;

/// Inputs are cut here, well under a Unix socket's send buffer: the whole input is queued
/// before the server can answer and close, so a write never meets a closed socket (the
/// fuzzing process does not ignore SIGPIPE: libFuzzer's `main` runs instead of Rust's).
pub const MAX_INPUT: usize = 96 * 1024;

/// The tenant the seeds act on, created through the socket before any input.
pub const SEED_TENANT: &str = "fuzz-admin";

/// One exchange: the bytes in, the answer (up to EOF) out.
pub fn exchange(socket: &Path, line: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut s = UnixStream::connect(socket)?;
    s.set_read_timeout(Some(Duration::from_secs(45)))?;
    s.write_all(line)?;
    s.shutdown(std::net::Shutdown::Write)?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)?;
    Ok(answer)
}

/// Creates the tenant [`SEED_TENANT`] through the socket; `Err` says why it could not.
pub fn create_seed_tenant(socket: &Path) -> Result<(), String> {
    let create = serde_json::json!({
        "command": "tenant-create",
        "name": "Fuzz Admin",
        "slug": SEED_TENANT,
        "owner_email": "admin@fuzz.example.com",
        "owner_password": "fuzzing-owner-password-1",
    });
    let mut line = create.to_string().into_bytes();
    line.push(b'\n');
    let answer = exchange(socket, &line).map_err(|e| format!("admin socket: {e}"))?;
    match serde_json::from_slice::<AdminResponse>(&answer) {
        Ok(r) if r.ok => Ok(()),
        _ => Err(format!(
            "tenant-create answered {:?}",
            String::from_utf8_lossy(&answer)
        )),
    }
}

/// Sends one input and checks the answer, panicking on a finding. Answers the server's
/// response, or `None` when the request line is not UTF-8 (the server drops the connection
/// unanswered).
pub fn one(socket: &Path, data: &[u8]) -> Option<AdminResponse> {
    let data = &data[..data.len().min(MAX_INPUT)];
    // What the server's read_line gets: up to the first newline, within MAX_REQUEST.
    let read = &data[..data.len().min(MAX_REQUEST)];
    let line = match read.iter().position(|&b| b == b'\n') {
        Some(i) => &read[..=i],
        None => read,
    };
    let shown = || String::from_utf8_lossy(line).into_owned();
    let answer = match exchange(socket, data) {
        Ok(a) => a,
        Err(e) => panic!("admin request {:?}: {e}", shown()),
    };
    if std::str::from_utf8(line).is_err() {
        return None;
    }
    let text = String::from_utf8_lossy(&answer);
    let Some(first) = text.strip_suffix('\n') else {
        panic!(
            "admin request {:?}: the answer is not one line: {text:?}",
            shown()
        );
    };
    assert!(
        !first.contains('\n'),
        "admin request {:?}: more than one answer line: {text:?}",
        shown()
    );
    let r: AdminResponse = match serde_json::from_str(first) {
        Ok(r) => r,
        Err(e) => panic!(
            "admin request {:?}: unreadable answer ({e}): {text:?}",
            shown()
        ),
    };
    match (&r.ok, &r.result, &r.error) {
        (true, Some(_), None) => {}
        (false, None, Some(e)) => assert!(
            e.code != "service/internal_error",
            "admin request {:?}: internal error: {text}",
            shown()
        ),
        _ => panic!("admin request {:?}: inconsistent answer: {text}", shown()),
    }
    Some(r)
}
