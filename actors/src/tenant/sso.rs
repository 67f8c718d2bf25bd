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
    /// Sign-ins begun, and unsolicited SAML responses checked, per client address.
    begins: RateWindow<IpAddr>,
    /// Home-realm discoveries per client address.
    discoveries: RateWindow<IpAddr>,
}

/// Home-realm discoveries a client address may ask a minute.
const DISCOVERIES_PER_MINUTE: u32 = 60;

impl Default for Sso {
    fn default() -> Self {
        Sso {
            begins: RateWindow::new(SOCIAL_BEGINS_PER_MINUTE, Duration::from_secs(60)),
            discoveries: RateWindow::new(DISCOVERIES_PER_MINUTE, Duration::from_secs(60)),
        }
    }
}

impl Sso {
    /// Counts one request of `ip`: a discovery, or the start of a sign-in (a flow begun, an
    /// unsolicited response to check); `RateLimited` past the window's count.
    fn admit(&mut self, ip: &IpAddr, discovery: bool) -> Result<(), crate::error::TenantError> {
        let window = if discovery {
            &mut self.discoveries
        } else {
            &mut self.begins
        };
        window
            .hit(
                &crate::throttle::throttle_ip(*ip),
                std::time::Instant::now(),
            )
            .map_err(|retry_after| crate::error::TenantError::RateLimited { retry_after })
    }
}
