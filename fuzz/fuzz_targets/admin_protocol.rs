//! A line of the admin socket protocol, written to the socket of a real server
//! (`tessera::run` in this process, which binds `<data_dir>/admin.sock`): the server reads
//! one line (at most 64 KiB), parses it as an `AdminRequest`, runs the command and answers
//! one JSON line. The whole input is written, then the write half is closed.
//!
//! Fails on: a panic anywhere in the server (libFuzzer's panic hook aborts); a request line
//! that is valid UTF-8 but gets no answer, or an answer that is not an `AdminResponse` (`ok`
//! with a result, or not `ok` with an error); an internal error.
//!
//! The server starts with one tenant, slug `fuzz-admin`, created through the socket, so the
//! seeds' commands find a tenant to act on. Fault drills are off (the shipped default): with
//! them on, `fault panic-tenant` would crash an actor on purpose.
#![no_main]

use std::{
    io::{Read, Write},
    os::unix::net::UnixStream,
    path::PathBuf,
    sync::OnceLock,
    time::Duration,
};

use libfuzzer_sys::fuzz_target;
use tessera::admin::protocol::AdminResponse;
use tessera_fuzz::{setup_failed, Server};

/// The server reads at most this much of a request (`MAX_REQUEST` in src/admin/server.rs).
const MAX_REQUEST: usize = 64 * 1024;

/// Inputs are cut here, well under a Unix socket's send buffer: the whole input is queued
/// before the server can answer and close, so a write never meets a closed socket (the
/// process does not ignore SIGPIPE: libFuzzer's `main` runs instead of Rust's).
const MAX_INPUT: usize = 96 * 1024;

struct Harness {
    _server: Server,
    socket: PathBuf,
}

/// One exchange: the bytes in, the answer (up to EOF) out.
fn exchange(socket: &PathBuf, line: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut s = UnixStream::connect(socket)?;
    s.set_read_timeout(Some(Duration::from_secs(45)))?;
    s.write_all(line)?;
    s.shutdown(std::net::Shutdown::Write)?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)?;
    Ok(answer)
}

impl Harness {
    fn start() -> Harness {
        let server = Server::start("admin_protocol");
        let socket = server.admin_socket();
        let create = serde_json::json!({
            "command": "tenant-create",
            "name": "Fuzz Admin",
            "slug": "fuzz-admin",
            "owner_email": "admin@fuzz.example.com",
            "owner_password": "fuzzing-owner-password-1",
        });
        let mut line = create.to_string().into_bytes();
        line.push(b'\n');
        let answer =
            exchange(&socket, &line).unwrap_or_else(|e| setup_failed(format!("admin socket: {e}")));
        match serde_json::from_slice::<AdminResponse>(&answer) {
            Ok(r) if r.ok => {}
            _ => setup_failed(format!(
                "tenant-create answered {:?}",
                String::from_utf8_lossy(&answer)
            )),
        }
        Harness {
            _server: server,
            socket,
        }
    }

    fn one(&self, data: &[u8]) {
        let data = &data[..data.len().min(MAX_INPUT)];
        // What the server's read_line gets: up to the first newline, within MAX_REQUEST.
        let read = &data[..data.len().min(MAX_REQUEST)];
        let line = match read.iter().position(|&b| b == b'\n') {
            Some(i) => &read[..=i],
            None => read,
        };
        let shown = || String::from_utf8_lossy(line).into_owned();
        let answer = match exchange(&self.socket, data) {
            Ok(a) => a,
            Err(e) => panic!("admin request {:?}: {e}", shown()),
        };
        if std::str::from_utf8(line).is_err() {
            // read_line refuses invalid UTF-8: the server drops the connection unanswered.
            return;
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
    }
}

static HARNESS: OnceLock<Harness> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    HARNESS.get_or_init(Harness::start).one(data);
});
