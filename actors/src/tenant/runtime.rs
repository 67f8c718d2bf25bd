//! What a tenant actor is given by the platform and what it publishes back: token lifetimes,
//! the mail and SMS outbound, calendar offsets and caps ([`TenantRuntime`]), and the cells
//! request handlers read without a hop ([`TenantCells`]).

use std::{sync::Arc, time::Duration};

use arc_swap::ArcSwap;

use super::{agents, keys, oauth_clients, settings, webhooks};
use crate::outbound::Outbound;

/// Token lifetimes, from the platform configuration.
#[derive(Clone, Copy, Debug)]
pub struct TokenPolicy {
    pub access_ttl: Duration,
    /// A session's absolute lifetime: no rotation extends it.
    pub refresh_ttl: Duration,
    /// How long a just-rotated refresh token still answers (the current token) instead of
    /// counting as reuse.
    pub reuse_grace: Duration,
    /// How long an OAuth authorization code can be exchanged.
    pub code_ttl: Duration,
}

/// What every tenant actor takes from the platform.
#[derive(Clone)]
pub struct TenantRuntime {
    pub tokens: TokenPolicy,
    /// Links in mail point under this URL.
    pub accounts_url: String,
    pub outbound: Arc<dyn Outbound>,
    /// Added to the clock when calendar deadlines (the MFA grace period) are checked; zero
    /// except in fault drills.
    pub clock_offset: time::Duration,
    /// The platform's SMS country allowlist (ISO 3166-1 alpha-2), for tenants without their
    /// own.
    pub sms_countries: Arc<Vec<String>>,
    /// The highest monthly text message cap per tier on the platform's account.
    pub sms_platform_caps: PlatformSmsCaps,
    /// The ceilings and timings of agents.
    pub agents: agents::AgentPolicy,
    /// How long a wallet has to answer a request.
    pub eudi_request_ttl: time::Duration,
    /// The retry schedule's scale, when a failing webhook endpoint is disabled, and how long
    /// the delivery log is kept.
    pub webhooks: webhooks::WebhookPolicy,
    /// Failed sign-ins one client address (IPv6: /64) may make per 15 minutes over every
    /// account (`security.login_failures_per_address`).
    pub login_failures_per_address: u32,
}

/// The highest `sms_otp_monthly_cap` that counts, per tier, while a tenant's messages go
/// through the platform's account (the operator pays for them).
#[derive(Clone, Copy, Debug)]
pub struct PlatformSmsCaps {
    pub free: u32,
    pub pro: u32,
    pub enterprise: u32,
}

impl PlatformSmsCaps {
    pub fn for_tier(&self, tier: crate::records::Tier) -> u32 {
        match tier {
            crate::records::Tier::Free => self.free,
            crate::records::Tier::Pro => self.pro,
            crate::records::Tier::Enterprise => self.enterprise,
        }
    }
}

/// What a tenant actor publishes for request handlers, each read without a mailbox hop. Only
/// the actor writes them: at start, and whenever what they hold changes.
#[derive(Clone)]
pub struct TenantCells {
    /// The public half of the signing keys (and the signer): every token check reads them.
    pub keys: Arc<ArcSwap<keys::TokenKeys>>,
    /// What the HTTP edge checks before a request reaches the actor (the browser origins).
    pub edge: Arc<ArcSwap<settings::EdgePolicy>>,
    /// The OAuth clients, for the authorization server's routes to check a request's client
    /// and its credentials without a hop.
    pub oauth_clients: Arc<ArcSwap<oauth_clients::PublishedClients>>,
    /// The agents and the denylist of their tokens, for the token endpoint to authenticate
    /// agents and for every agent token's revocation check.
    pub agents: Arc<ArcSwap<agents::PublishedAgents>>,
}

impl TenantCells {
    /// Empty cells, for an actor that has not started yet: no keys, no origin list.
    pub fn empty() -> Self {
        TenantCells {
            keys: Arc::new(ArcSwap::from_pointee(keys::TokenKeys::empty())),
            edge: Arc::new(ArcSwap::from_pointee(settings::EdgePolicy::default())),
            oauth_clients: Arc::new(ArcSwap::from_pointee(
                oauth_clients::PublishedClients::default(),
            )),
            agents: Arc::new(ArcSwap::from_pointee(agents::PublishedAgents::default())),
        }
    }
}
