//! Access and step-up tokens through the server's verifier; the harness, the input format and
//! the checks are in `tessera_fuzz::jwt` (shared with the seed replay of the integration
//! tests).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tessera_fuzz::{jwt::Harness, setup_failed, state_dir};

static HARNESS: OnceLock<Harness> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    HARNESS
        .get_or_init(|| Harness::start(&state_dir("jwt")).unwrap_or_else(|e| setup_failed(e)))
        .one(data);
});
