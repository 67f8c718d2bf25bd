//! `[agents]`: the platform's ceilings for agents and the timings of their flows.

use serde::{Deserialize, Serialize};

use super::error::{positive, ConfigError};

/// The platform's ceilings for agents, and the timings of their user-approved flows. An
/// owner's per-agent limit is clamped to its ceiling; an agent without one gets the ceiling.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentsConfig {
    pub max_api_calls_per_min: u32,
    pub max_token_exchange_per_min: u32,
    pub max_ciba_initiate_per_min: u32,
    pub max_device_code_per_min: u32,
    pub max_client_credentials_per_min: u32,
    /// Unexpired tokens one agent may hold.
    pub max_concurrent_tokens: u32,
    /// The longest `agent_token_max_ttl_sec` an owner may set.
    pub max_token_ttl_secs: u32,
    /// The interval CIBA and device-code polling starts with (each `slow_down` adds 5 s).
    pub poll_interval_secs: u32,
    pub ciba_expires_secs: u32,
    pub device_code_expires_secs: u32,
    /// How long an agent's activity feed keeps an entry.
    pub activity_retention_days: u32,
    /// Dynamic client registrations (RFC 7591) per client address per hour.
    pub registrations_per_ip_hourly: u32,
}

impl Default for AgentsConfig {
    fn default() -> Self {
        let p = tessera_actors::tenant::agents::AgentPolicy::default();
        AgentsConfig {
            max_api_calls_per_min: p.ceilings.api_calls_per_min,
            max_token_exchange_per_min: p.ceilings.token_exchange_per_min,
            max_ciba_initiate_per_min: p.ceilings.ciba_initiate_per_min,
            max_device_code_per_min: p.ceilings.device_code_per_min,
            max_client_credentials_per_min: p.ceilings.client_credentials_per_min,
            max_concurrent_tokens: p.max_concurrent_tokens,
            max_token_ttl_secs: p.max_token_ttl_secs,
            poll_interval_secs: p.poll_interval_secs,
            ciba_expires_secs: p.ciba_ttl_secs,
            device_code_expires_secs: p.device_code_ttl_secs,
            activity_retention_days: p.activity_retention_days,
            registrations_per_ip_hourly: p.registrations_per_ip_hourly,
        }
    }
}

impl AgentsConfig {
    pub fn policy(&self) -> tessera_actors::tenant::agents::AgentPolicy {
        tessera_actors::tenant::agents::AgentPolicy {
            ceilings: tessera_actors::tenant::agents::PerMinute {
                api_calls_per_min: self.max_api_calls_per_min,
                token_exchange_per_min: self.max_token_exchange_per_min,
                ciba_initiate_per_min: self.max_ciba_initiate_per_min,
                device_code_per_min: self.max_device_code_per_min,
                client_credentials_per_min: self.max_client_credentials_per_min,
            },
            max_concurrent_tokens: self.max_concurrent_tokens,
            max_token_ttl_secs: self.max_token_ttl_secs,
            poll_interval_secs: self.poll_interval_secs,
            ciba_ttl_secs: self.ciba_expires_secs,
            device_code_ttl_secs: self.device_code_expires_secs,
            activity_retention_days: self.activity_retention_days,
            registrations_per_ip_hourly: self.registrations_per_ip_hourly,
        }
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for (key, v) in [
            ("agents.max_api_calls_per_min", self.max_api_calls_per_min),
            (
                "agents.max_token_exchange_per_min",
                self.max_token_exchange_per_min,
            ),
            (
                "agents.max_ciba_initiate_per_min",
                self.max_ciba_initiate_per_min,
            ),
            (
                "agents.max_device_code_per_min",
                self.max_device_code_per_min,
            ),
            (
                "agents.max_client_credentials_per_min",
                self.max_client_credentials_per_min,
            ),
            ("agents.max_concurrent_tokens", self.max_concurrent_tokens),
            ("agents.poll_interval_secs", self.poll_interval_secs),
            (
                "agents.activity_retention_days",
                self.activity_retention_days,
            ),
            (
                "agents.registrations_per_ip_hourly",
                self.registrations_per_ip_hourly,
            ),
        ] {
            positive(key, u64::from(v))?;
        }
        if self.activity_retention_days > 3650 {
            return Err(ConfigError::Key {
                key: "agents.activity_retention_days",
                reason: "must be at most 3650".into(),
            });
        }
        for (key, v) in [
            ("agents.max_token_ttl_secs", self.max_token_ttl_secs),
            ("agents.ciba_expires_secs", self.ciba_expires_secs),
            (
                "agents.device_code_expires_secs",
                self.device_code_expires_secs,
            ),
        ] {
            if !(60..=86_400).contains(&v) {
                return Err(ConfigError::Key {
                    key,
                    reason: "must be between 60 and 86400".into(),
                });
            }
        }
        Ok(())
    }
}
