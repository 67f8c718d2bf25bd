//! Test doubles that the integration tests, the actors' unit tests and the benchmark programs
//! share: the software WebAuthn authenticator (`webauthn`), the test EU wallet and its issuers
//! (`wallet`), and the stub HTTP server standing in for outside services (`stub`). A crate of
//! its own so that none of them depends on the benchmark crate (or the benchmark on the tests)
//! for them.

pub mod stub;
pub mod wallet;
pub mod webauthn;

/// Any failure of the test wallet or its issuers, boxed (the benchmark programs' own error
/// type is the same, so their `?` takes it as it is).
pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, Error>;
