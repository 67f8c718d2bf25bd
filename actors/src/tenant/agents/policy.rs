//! Agents' policy: the four grants, what the per-minute limits count, the limits an owner
//! sets and the platform's ceilings (`[agents]` in the configuration). Plain values the
//! records, the counters and the configuration share, with no state.

use serde::{Deserialize, Serialize};

/// The four grants an agent may be registered for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentGrant {
    ClientCredentials,
    TokenExchange,
    Ciba,
    DeviceCode,
}

impl AgentGrant {
    pub const ALL: [AgentGrant; 4] = [
        AgentGrant::ClientCredentials,
        AgentGrant::TokenExchange,
        AgentGrant::Ciba,
        AgentGrant::DeviceCode,
    ];

    /// The `grant_type` value of the token endpoint.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentGrant::ClientCredentials => "client_credentials",
            AgentGrant::TokenExchange => "urn:ietf:params:oauth:grant-type:token-exchange",
            AgentGrant::Ciba => "urn:openid:params:grant-type:ciba",
            AgentGrant::DeviceCode => "urn:ietf:params:oauth:grant-type:device_code",
        }
    }

    pub fn parse(s: &str) -> Option<AgentGrant> {
        AgentGrant::ALL.into_iter().find(|g| g.as_str() == s)
    }

    /// The per-minute limit that counts this grant's token requests.
    pub(super) fn limit(self) -> AgentLimit {
        match self {
            AgentGrant::ClientCredentials => AgentLimit::ClientCredentials,
            AgentGrant::TokenExchange => AgentLimit::TokenExchange,
            AgentGrant::Ciba => AgentLimit::CibaInitiate,
            AgentGrant::DeviceCode => AgentLimit::DeviceCode,
        }
    }
}

/// What an agent's per-minute limits count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AgentLimit {
    /// Uses of its tokens at the tenant's endpoints (userinfo).
    ApiCalls,
    TokenExchange,
    CibaInitiate,
    DeviceCode,
    ClientCredentials,
}

impl AgentLimit {
    pub fn name(self) -> &'static str {
        match self {
            AgentLimit::ApiCalls => "api_calls_per_min",
            AgentLimit::TokenExchange => "token_exchange_per_min",
            AgentLimit::CibaInitiate => "ciba_initiate_per_min",
            AgentLimit::DeviceCode => "device_code_per_min",
            AgentLimit::ClientCredentials => "client_credentials_per_min",
        }
    }
}

/// One value for each per-minute limit, named as the API and the configuration name them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PerMinute<T> {
    pub api_calls_per_min: T,
    pub token_exchange_per_min: T,
    pub ciba_initiate_per_min: T,
    pub device_code_per_min: T,
    pub client_credentials_per_min: T,
}

impl<T: Copy> PerMinute<T> {
    pub fn get(&self, limit: AgentLimit) -> T {
        match limit {
            AgentLimit::ApiCalls => self.api_calls_per_min,
            AgentLimit::TokenExchange => self.token_exchange_per_min,
            AgentLimit::CibaInitiate => self.ciba_initiate_per_min,
            AgentLimit::DeviceCode => self.device_code_per_min,
            AgentLimit::ClientCredentials => self.client_credentials_per_min,
        }
    }

    /// Each limit's value from `f`.
    pub fn from_fn(f: impl Fn(AgentLimit) -> T) -> Self {
        PerMinute {
            api_calls_per_min: f(AgentLimit::ApiCalls),
            token_exchange_per_min: f(AgentLimit::TokenExchange),
            ciba_initiate_per_min: f(AgentLimit::CibaInitiate),
            device_code_per_min: f(AgentLimit::DeviceCode),
            client_credentials_per_min: f(AgentLimit::ClientCredentials),
        }
    }
}

/// The per-minute limits an owner set; `None`: the platform's ceiling.
pub type AgentRateLimits = PerMinute<Option<u32>>;

/// The platform's ceilings and timings for agents (`[agents]` in the configuration).
#[derive(Clone, Copy, Debug)]
pub struct AgentPolicy {
    /// The highest per-minute limits an owner may set, and those of an agent that sets none.
    pub ceilings: PerMinute<u32>,
    pub max_concurrent_tokens: u32,
    /// The longest `agent_token_max_ttl_sec` an owner may set.
    pub max_token_ttl_secs: u32,
    /// The polling interval CIBA and device flows start with.
    pub poll_interval_secs: u32,
    pub ciba_ttl_secs: u32,
    pub device_code_ttl_secs: u32,
    pub activity_retention_days: u32,
    /// RFC 7591 registrations per client address per hour.
    pub registrations_per_ip_hourly: u32,
}

impl Default for AgentPolicy {
    fn default() -> Self {
        AgentPolicy {
            ceilings: PerMinute {
                api_calls_per_min: 6000,
                token_exchange_per_min: 600,
                ciba_initiate_per_min: 60,
                device_code_per_min: 60,
                client_credentials_per_min: 600,
            },
            max_concurrent_tokens: 1000,
            max_token_ttl_secs: 86_400,
            poll_interval_secs: 5,
            ciba_ttl_secs: 300,
            device_code_ttl_secs: 600,
            activity_retention_days: 90,
            registrations_per_ip_hourly: 10,
        }
    }
}

/// An agent's limits in force: each its owner's value clamped to the platform's ceiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct EffectiveLimits {
    #[serde(flatten)]
    pub per_minute: PerMinute<u32>,
    pub max_concurrent_tokens: u32,
}
