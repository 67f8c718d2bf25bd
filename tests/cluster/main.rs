//! The `cluster` feature's tests against the real `tessera` binary built with it: a test
//! program of its own, so that the feature's build links only these tests and the shared
//! support module, not the whole integration suite.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// The support module serves every integration test; these use a part of it.
#![allow(dead_code)]

#[path = "../it/support.rs"]
mod support;

mod nodes;

use tessera_testkit::stub;
