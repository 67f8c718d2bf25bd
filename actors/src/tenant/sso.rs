//! Single sign-on: an organization's own identity provider signs its people in, by SAML 2.0
//! or OpenID Connect. The tenant's admins set up each organization's connections; a sign-in
//! starts at the connection (or at the address's domain, by home-realm discovery), leaves for
//! the provider with a flow stored under its `state` and bound to the browser, and comes
//! back to the edge, which checks the provider's answer (the SAML response's signature and
//! conditions, the OpenID ID token) off the actor. The actor then decides who the user is
//! (`finish.rs`, under the credential inventory's linking rules), makes them a member with
//! the role their groups give, and hands the app's back end a single-use exchange code for
//! a session that works in the organization (`amr` `fed`, the connection on the session).
//!
//! A SAML assertion is used once: its ID is kept on disk until it would have expired, so a
//! replay is refused after a restart too.
//!
//! Its parts: `records.rs`, `error.rs`, `connections.rs` (what admins do), `flow.rs` (the way
//! out and back), `finish.rs` (the user, the membership, the exchange), `discover.rs`
//! (home-realm discovery and the single-sign-on-only gate) and `msg.rs` (`SsoCmd`, its
//! answers and its dispatch).

pub mod connections;
pub mod discover;
mod error;
pub mod finish;
pub mod flow;
pub mod msg;
pub mod records;
mod upkeep;

use std::{net::IpAddr, time::Duration};

pub use error::{SsoError, SsoRefusal};

use crate::{tenant::limits::SOCIAL_BEGINS_PER_MINUTE, throttle::RateWindow};

/// The single sign-on flow: what it keeps in memory only, the sign-ins begun per client
/// address (held to the social sign-in's rate).
pub struct Sso {
    begins: RateWindow<IpAddr>,
}

impl Default for Sso {
    fn default() -> Self {
        Sso {
            begins: RateWindow::new(SOCIAL_BEGINS_PER_MINUTE, Duration::from_secs(60)),
        }
    }
}
