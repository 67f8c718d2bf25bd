//! A line of the admin socket protocol, written to the socket of a real server
//! (`tessera::run` in this process, which binds `<data_dir>/admin.sock`). The exchange and the
//! checks are in `tessera_fuzz::admin` (shared with the seed replay of the integration tests).
//!
//! Fails on: a panic anywhere in the server (libFuzzer's panic hook aborts); a request line
//! that is valid UTF-8 but gets no answer, or an answer that is not an `AdminResponse` (`ok`
//! with a result, or not `ok` with an error); an internal error.
//!
//! The server starts with one tenant, slug `fuzz-admin`, created through the socket, so the
//! seeds' commands find a tenant to act on. Fault drills are off (the shipped default): with
//! them on, `fault panic-tenant` would crash an actor on purpose.
#![no_main]

use std::{path::PathBuf, sync::OnceLock};

use libfuzzer_sys::fuzz_target;
use tessera_fuzz::{admin, setup_failed, Server};

struct Harness {
    _server: Server,
    socket: PathBuf,
}

impl Harness {
    fn start() -> Harness {
        let server = Server::start("admin_protocol");
        let socket = server.admin_socket();
        if let Err(e) = admin::create_seed_tenant(&socket) {
            setup_failed(e);
        }
        Harness {
            _server: server,
            socket,
        }
    }
}

static HARNESS: OnceLock<Harness> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let h = HARNESS.get_or_init(Harness::start);
    admin::one(&h.socket, data);
});
