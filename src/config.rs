//! Configuration: `config.toml`, then `TESSERA__SECTION__KEY` environment variables, then the
//! command line, each winning over the one before.
//!
//! Every section rejects unknown keys, so a typo is an error naming the key instead of a
//! setting silently ignored. [`Config::load`] validates the whole and is the only way in; the
//! result is passed explicitly (no global config).

use std::{
    net::{IpAddr, SocketAddr},
    path::{Path, PathBuf},
};

use figment::{
    providers::{Env, Format, Serialized, Toml},
    Figment,
};
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::social::{Protocol, Provider};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("config file {0} not found (pass --config FILE)")]
    Missing(PathBuf),
    #[error("{0}")]
    Invalid(String),
    #[error("invalid value for `{key}`: {reason}")]
    Key { key: &'static str, reason: String },
}

/// A secret from the config: shown as `<redacted>` in `Debug`.
#[derive(Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct SecretString(pub String);

impl std::fmt::Debug for SecretString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            f.write_str("\"\"")
        } else {
            f.write_str("<redacted>")
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerConfig,
    pub storage: StorageConfig,
    pub security: SecurityConfig,
    pub tokens: TokensConfig,
    pub mail: MailConfig,
    pub sms: SmsConfig,
    pub captcha: CaptchaConfig,
    pub log: LogConfig,
    pub dashboard: DashboardConfig,
    pub catalog: CatalogConfig,
    pub social: SocialConfig,
    pub agents: AgentsConfig,
    pub eudi: WalletConfig,
    pub webhooks: WebhooksConfig,
    pub sdk: SdkConfig,
    pub cluster: ClusterConfig,
    pub testing: TestingConfig,
}

/// Running on several nodes (`crate::cluster`): each tenant is served by the one node that
/// holds its lease in etcd. Off (the default, no `etcd_endpoints`): this node serves every
/// tenant in its store and never speaks to etcd.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// The etcd cluster's client URLs (`http://host:2379`). Empty: clustering is off.
    pub etcd_endpoints: Vec<String>,
    /// The URL other nodes and the front router reach this node at, named in the owner
    /// keys and in the `Tessera-Tenant-Owner` header of refusals. Empty: `http://<bound
    /// address>`, which needs a `server.listen` address other than 0.0.0.0 or `[::]`.
    pub advertise_url: String,
    /// The lease's time to live: how long after this node stops (or loses etcd) another node
    /// may take its tenants. At least 2.
    pub lease_ttl_secs: u64,
    /// Where the owner keys live: `{key_prefix}/tenants/{tenant id}/owner`.
    pub key_prefix: String,
    /// How long a call to etcd may take, connection included, in milliseconds.
    pub timeout_ms: u64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            etcd_endpoints: Vec::new(),
            advertise_url: String::new(),
            lease_ttl_secs: 10,
            key_prefix: "/tessera".into(),
            timeout_ms: 2_000,
        }
    }
}

impl ClusterConfig {
    /// Whether this node shares its tenants with others through etcd.
    pub fn enabled(&self) -> bool {
        !self.etcd_endpoints.is_empty()
    }

    fn validate(&self) -> Result<(), ConfigError> {
        for e in &self.etcd_endpoints {
            check_http_url("cluster.etcd_endpoints", e)?;
        }
        if !self.advertise_url.is_empty() {
            check_http_url("cluster.advertise_url", &self.advertise_url)?;
            if axum::http::HeaderValue::from_str(&self.advertise_url).is_err() {
                return Err(ConfigError::Key {
                    key: "cluster.advertise_url",
                    reason: "must be a URL that fits in a header".into(),
                });
            }
        }
        if !(2..=3600).contains(&self.lease_ttl_secs) {
            return Err(ConfigError::Key {
                key: "cluster.lease_ttl_secs",
                reason: "must be between 2 and 3600".into(),
            });
        }
        if !self.key_prefix.starts_with('/')
            || self.key_prefix.len() < 2
            || self.key_prefix.ends_with('/')
            || !self.key_prefix.is_ascii()
        {
            return Err(ConfigError::Key {
                key: "cluster.key_prefix",
                reason: "must start with '/', be ASCII and not end with '/'".into(),
            });
        }
        if !(100..=60_000).contains(&self.timeout_ms) {
            return Err(ConfigError::Key {
                key: "cluster.timeout_ms",
                reason: "must be between 100 and 60000".into(),
            });
        }
        Ok(())
    }
}

/// The SDK support policy document (spec 2.14) that `GET /v1/sdk-support-policy` serves.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SdkConfig {
    /// The operator's JSON file holding the document; relative paths are under the data
    /// directory. Read and checked once, when the config is loaded: a bad file stops the server.
    /// Absent: the route answers 404 `sdk_policy/not_configured`.
    pub policy_file: Option<PathBuf>,
    /// The document read from `policy_file` by [`Config::load`], already checked.
    #[serde(skip)]
    pub policy: Option<std::sync::Arc<crate::http::sdk_policy::SdkPolicy>>,
}

impl SdkConfig {
    /// Reads and checks the document `policy_file` names, if any; `data_dir` resolves a
    /// relative path.
    fn load_policy(
        &self,
        data_dir: &Path,
    ) -> Result<Option<std::sync::Arc<crate::http::sdk_policy::SdkPolicy>>, ConfigError> {
        let Some(file) = &self.policy_file else {
            return Ok(None);
        };
        let error = |reason: String| ConfigError::Key {
            key: "sdk.policy_file",
            reason,
        };
        if file.as_os_str().is_empty() {
            return Err(error(
                "must not be empty (leave it out to serve no policy)".into(),
            ));
        }
        let path = if file.is_absolute() {
            file.clone()
        } else {
            data_dir.join(file)
        };
        crate::http::sdk_policy::SdkPolicy::load(&path)
            .map(|p| Some(std::sync::Arc::new(p)))
            .map_err(error)
    }
}

/// How tenants' webhook endpoints are reached and retried.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebhooksConfig {
    /// Let endpoints use `http://` URLs and addresses that are not public: private, loopback,
    /// link-local or another special-use range (an operator's own network, local trials,
    /// tests). Off: `https://` to public addresses only (`net::is_public`), checked when an
    /// endpoint is saved and again at each connection.
    pub allow_private_targets: bool,
    /// Multiplies every wait of the retry schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
    /// 10 h). 1 in production; tests shrink it.
    pub retry_scale: f64,
    /// An endpoint whose every attempt has failed for this long is disabled, and its owners
    /// are mailed.
    pub disable_after_secs: u64,
    /// How long events and the delivery log are kept.
    pub retention_days: u32,
    /// How long one attempt may take, connection included, in milliseconds.
    pub timeout_ms: u64,
    /// Attempts under way at once, across tenants.
    pub concurrency: usize,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        WebhooksConfig {
            allow_private_targets: false,
            retry_scale: 1.0,
            disable_after_secs: 5 * 86_400,
            retention_days: 30,
            timeout_ms: 10_000,
            concurrency: 16,
        }
    }
}

impl WebhooksConfig {
    pub fn policy(&self) -> tessera_actors::tenant::webhooks::WebhookPolicy {
        tessera_actors::tenant::webhooks::WebhookPolicy {
            retry_scale: self.retry_scale,
            disable_after: time::Duration::seconds(
                i64::try_from(self.disable_after_secs).unwrap_or(i64::MAX),
            ),
            retention: time::Duration::days(i64::from(self.retention_days)),
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if !(self.retry_scale.is_finite() && self.retry_scale > 0.0 && self.retry_scale <= 100.0) {
            return Err(ConfigError::Key {
                key: "webhooks.retry_scale",
                reason: "must be greater than 0 and at most 100".into(),
            });
        }
        if !(1..=10 * 365 * 86_400).contains(&self.disable_after_secs) {
            return Err(ConfigError::Key {
                key: "webhooks.disable_after_secs",
                reason: "must be between 1 and 315360000".into(),
            });
        }
        if !(1..=3650).contains(&self.retention_days) {
            return Err(ConfigError::Key {
                key: "webhooks.retention_days",
                reason: "must be between 1 and 3650".into(),
            });
        }
        if !(100..=60_000).contains(&self.timeout_ms) {
            return Err(ConfigError::Key {
                key: "webhooks.timeout_ms",
                reason: "must be between 100 and 60000".into(),
            });
        }
        if !(1..=1024).contains(&self.concurrency) {
            return Err(ConfigError::Key {
                key: "webhooks.concurrency",
                reason: "must be between 1 and 1024".into(),
            });
        }
        Ok(())
    }
}

/// How the wallet verifier reaches issuers' keys and status lists.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WalletConfig {
    /// How long one fetch (an issuer's key set or DID document, a status list) may take, in
    /// milliseconds.
    pub timeout_ms: u64,
    /// How long a fetched key set or DID document is used before it is fetched again.
    pub keys_cache_secs: u64,
    /// The largest status list accepted, in bytes once inflated.
    pub status_list_max_bytes: usize,
    /// Fetch `http://` URLs on loopback hosts (local trials of issuers and status lists).
    /// Everything else is HTTPS only.
    pub allow_loopback_http: bool,
    /// How long a wallet has to answer a request (the request object's `exp`).
    pub request_ttl_secs: u32,
}

impl Default for WalletConfig {
    fn default() -> Self {
        WalletConfig {
            timeout_ms: 5_000,
            keys_cache_secs: 600,
            status_list_max_bytes: 4 << 20,
            allow_loopback_http: false,
            request_ttl_secs: 300,
        }
    }
}

impl WalletConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        positive("eudi.timeout_ms", self.timeout_ms)?;
        if !(1..=3600).contains(&self.request_ttl_secs) {
            return Err(ConfigError::Key {
                key: "eudi.request_ttl_secs",
                reason: "must be between 1 and 3600".into(),
            });
        }
        if !(1024..=(64 << 20)).contains(&self.status_list_max_bytes) {
            return Err(ConfigError::Key {
                key: "eudi.status_list_max_bytes",
                reason: "must be between 1024 and 67108864".into(),
            });
        }
        Ok(())
    }
}

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
            max_api_calls_per_min: p.api_calls_per_min,
            max_token_exchange_per_min: p.token_exchange_per_min,
            max_ciba_initiate_per_min: p.ciba_initiate_per_min,
            max_device_code_per_min: p.device_code_per_min,
            max_client_credentials_per_min: p.client_credentials_per_min,
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
            api_calls_per_min: self.max_api_calls_per_min,
            token_exchange_per_min: self.max_token_exchange_per_min,
            ciba_initiate_per_min: self.max_ciba_initiate_per_min,
            device_code_per_min: self.max_device_code_per_min,
            client_credentials_per_min: self.max_client_credentials_per_min,
            max_concurrent_tokens: self.max_concurrent_tokens,
            max_token_ttl_secs: self.max_token_ttl_secs,
            poll_interval_secs: self.poll_interval_secs,
            ciba_ttl_secs: self.ciba_expires_secs,
            device_code_ttl_secs: self.device_code_expires_secs,
            activity_retention_days: self.activity_retention_days,
            registrations_per_ip_hourly: self.registrations_per_ip_hourly,
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
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

/// Where the social sign-in providers are reached. Every endpoint left empty is the
/// provider's own; set one to point at a self-managed GitLab, or at a local stand-in.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SocialConfig {
    /// How long one request to a provider (discovery, keys, token, profile) may take, in
    /// milliseconds.
    pub timeout_ms: u64,
    /// A provider's key set is fetched again for an ID token that names a key not in it, at
    /// most once in this many seconds (0: every time).
    pub keys_refetch_secs: u64,
    pub google: ProviderEndpoints,
    pub apple: ProviderEndpoints,
    pub microsoft: ProviderEndpoints,
    pub gitlab: ProviderEndpoints,
    pub linkedin: ProviderEndpoints,
    pub slack: ProviderEndpoints,
    pub github: ProviderEndpoints,
    pub discord: ProviderEndpoints,
    pub facebook: ProviderEndpoints,
    pub x: ProviderEndpoints,
}

impl Default for SocialConfig {
    fn default() -> Self {
        SocialConfig {
            timeout_ms: 10_000,
            keys_refetch_secs: 10,
            google: ProviderEndpoints::default(),
            apple: ProviderEndpoints::default(),
            microsoft: ProviderEndpoints::default(),
            gitlab: ProviderEndpoints::default(),
            linkedin: ProviderEndpoints::default(),
            slack: ProviderEndpoints::default(),
            github: ProviderEndpoints::default(),
            discord: ProviderEndpoints::default(),
            facebook: ProviderEndpoints::default(),
            x: ProviderEndpoints::default(),
        }
    }
}

impl SocialConfig {
    /// The endpoints configured for `provider` (empty fields: the provider's own).
    pub fn endpoints(&self, provider: Provider) -> &ProviderEndpoints {
        match provider {
            Provider::Google => &self.google,
            Provider::Apple => &self.apple,
            Provider::Microsoft => &self.microsoft,
            Provider::Gitlab => &self.gitlab,
            Provider::Linkedin => &self.linkedin,
            Provider::Slack => &self.slack,
            Provider::Github => &self.github,
            Provider::Discord => &self.discord,
            Provider::Facebook => &self.facebook,
            Provider::X => &self.x,
        }
    }

    /// OpenID providers take an `issuer` alone, the others the three endpoints alone; each
    /// one set must be an http(s) URL.
    fn validate(&self) -> Result<(), ConfigError> {
        positive("social.timeout_ms", self.timeout_ms)?;
        for p in Provider::ALL {
            let e = self.endpoints(p);
            let oidc = p.protocol() == Protocol::Oidc;
            for (field, value, allowed) in [
                ("issuer", &e.issuer, oidc),
                ("authorization_endpoint", &e.authorization_endpoint, !oidc),
                ("token_endpoint", &e.token_endpoint, !oidc),
                ("api_base_url", &e.api_base_url, !oidc),
            ] {
                if value.is_empty() {
                    continue;
                }
                let key = format!("social.{}.{field}", p.as_str());
                if !allowed {
                    let takes = if oidc {
                        "issuer (an OpenID provider is found by discovery)"
                    } else {
                        "authorization_endpoint, token_endpoint and api_base_url"
                    };
                    return Err(ConfigError::Invalid(format!(
                        "invalid key `{key}`: {} takes only {takes}",
                        p.as_str()
                    )));
                }
                let ok = reqwest::Url::parse(value).is_ok_and(|u| {
                    (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some()
                });
                if !ok {
                    return Err(ConfigError::Invalid(format!(
                        "invalid value for `{key}`: {value:?} is not an http(s) URL"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// One provider's endpoints; empty: the provider's own.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderEndpoints {
    /// OpenID providers: the issuer, whose discovery document is
    /// `{issuer}/.well-known/openid-configuration`. For Microsoft, `{tenant}` in it stands for
    /// the tenant's directory setting.
    pub issuer: String,
    /// OAuth 2 providers (GitHub, Discord, Facebook, X): where the browser is sent.
    pub authorization_endpoint: String,
    /// OAuth 2 providers: where the code is exchanged.
    pub token_endpoint: String,
    /// OAuth 2 providers: the REST API the profile is read from.
    pub api_base_url: String,
}

/// The resource scope catalog's caps (spec 2.13).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CatalogConfig {
    /// Scopes one resource may hold; past it, 400 `resource_scope_catalog/resource_cap_exceeded`.
    pub max_scopes_per_resource: usize,
    /// Scopes all of a tenant's resources may hold together; past it, 400
    /// `resource_scope_catalog/tenant_aggregate_cap_exceeded`.
    pub max_scopes_per_tenant: usize,
}

impl Default for CatalogConfig {
    fn default() -> Self {
        CatalogConfig {
            max_scopes_per_resource: 50,
            max_scopes_per_tenant: 500,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DashboardConfig {
    /// A dashboard session without a request for this long ends, in seconds.
    pub idle_timeout_secs: u64,
    /// A dashboard session ends this long after login, in seconds.
    pub absolute_timeout_secs: u64,
}

impl Default for DashboardConfig {
    fn default() -> Self {
        DashboardConfig {
            idle_timeout_secs: 30 * 60,
            absolute_timeout_secs: 12 * 3600,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Address the HTTP listener binds.
    pub listen: String,
    /// Public base URL of the API; empty means `http://<the bound address>`.
    pub base_url: String,
    /// Public URL of the browser-facing OAuth routes; empty means the base URL.
    pub accounts_url: String,
    /// CIDRs (or single addresses) of proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<String>,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Whole-request timeout, in seconds.
    pub request_timeout_secs: u64,
    /// How long a handler waits for an actor before answering 503, in milliseconds.
    pub actor_timeout_ms: u64,
    /// Open connections accepted at once; more wait in the kernel's backlog.
    pub max_connections: usize,
    /// Open connections one peer address (IPv6: one /64) may hold; one more is answered 503
    /// and closed. Counts peers: behind a reverse proxy every connection is the proxy's, so set
    /// it to `max_connections` there (and let the proxy limit its clients). 0: no cap.
    pub max_connections_per_ip: usize,
    /// A new connection must have sent its first request's head within this many seconds of
    /// being accepted, or it is closed.
    pub header_read_timeout_secs: u64,
    /// A connection with no request under way is closed this many seconds after its last
    /// answer (a next request's head must be complete by then).
    pub keep_alive_timeout_secs: u64,
    /// How long shutdown waits for in-flight requests, in seconds.
    pub shutdown_grace_secs: u64,
    /// A tenant's actor with no request for this long is stopped and its memory freed; the
    /// next request starts it again. 0: never.
    pub tenant_idle_secs: u64,
    /// A second listener that serves `GET /metrics` (and nothing else); when set, the main
    /// listener no longer serves it. Empty: `/metrics` is on the main listener.
    pub metrics_listen: String,
    /// Where the rate limits are explained: the `X-Service-Docs` header of every 429. Empty:
    /// `<base_url>/v1/openapi.json`, whose 429 answers state each route's limits.
    pub docs_url: String,
    /// Browser origins (`scheme://host[:port]`) of dashboard front ends served elsewhere than
    /// this server: only they get CORS answers (with credentials) on dashboard routes. Empty:
    /// the dashboard API is same-origin only.
    pub dashboard_origins: Vec<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: "127.0.0.1:8080".into(),
            base_url: String::new(),
            accounts_url: String::new(),
            trusted_proxies: Vec::new(),
            max_body_bytes: 64 * 1024,
            request_timeout_secs: 30,
            actor_timeout_ms: 5000,
            max_connections: 10_000,
            max_connections_per_ip: 256,
            header_read_timeout_secs: 10,
            keep_alive_timeout_secs: 60,
            shutdown_grace_secs: 20,
            tenant_idle_secs: 3600,
            metrics_listen: String::new(),
            docs_url: String::new(),
            dashboard_origins: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    /// Where sled, the admin socket and (by default) the master key live.
    pub data_dir: PathBuf,
    /// sled's page cache, in MiB.
    pub cache_capacity_mb: u64,
    /// Whether an acknowledged write waits for the fdatasync of its flush (group commit). Off,
    /// it still waits for sled's flush: a process kill loses nothing acknowledged, a power loss
    /// may. Only benchmarks turn this off.
    pub sync_writes: bool,
    /// The most batches applied and not yet flushed; past it a writer waits for the flush
    /// under way (pacing: sled 0.34 applies no backpressure of its own).
    pub max_unflushed_batches: u64,
    /// A storage call (read, scan step, apply, flush, fdatasync, paced wait) running longer
    /// than this marks the server not ready and stops the process with exit code 75, for its
    /// supervisor to restart it. 0 turns the watchdog off.
    pub watchdog_secs: u64,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            data_dir: PathBuf::from("data"),
            cache_capacity_mb: 256,
            sync_writes: true,
            max_unflushed_batches: tessera_storage::flusher::DEFAULT_MAX_UNFLUSHED,
            watchdog_secs: 30,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecurityConfig {
    /// The master key file; relative paths are under the data directory. Created 0600 on first
    /// start when absent.
    pub master_key_file: PathBuf,
    /// Use a master key file that group or others may read or write, with a warning at start,
    /// instead of refusing to start. For a key deliberately shared with a group (a backup
    /// agent's, say); anyone who can read the file can open every sealed secret.
    pub allow_insecure_master_key_file_mode: bool,
    pub argon2_m_cost_kib: u32,
    pub argon2_t_cost: u32,
    pub argon2_p_cost: u32,
    /// Checks of existing passwords (logins, step-ups, re-authentications) that may wait for a
    /// hashing thread; past it, 503. Threads take these before any new password's hash.
    pub hashing_queue_max: usize,
    /// Hashes of new passwords (sign-ups, registrations, resets, changes, invitations) that
    /// may wait for a hashing thread; past it, 503. Separate from `hashing_queue_max`, so a
    /// flood of sign-ups cannot refuse logins.
    pub hashing_new_queue_max: usize,
    /// Threads hashing passwords; 0: one per core.
    pub hashing_threads: usize,
    /// Onboarding sign-ups (`POST /v1/onboarding/signup`) per client address (IPv6: per /64)
    /// per hour, counted before any hashing; past it, 429 `auth/rate_limited`.
    pub onboarding_per_ip_hourly: u32,
    /// Failed sign-ins (passwords and sign-in codes, end users' and the dashboard's) one
    /// client address (IPv6: per /64) may make over all accounts per 15 minutes; past it,
    /// attempts from a device without a device token are refused (429
    /// `auth/too_many_attempts`), or asked for a CAPTCHA (429 `auth/captcha_required`) when
    /// `[captcha]` is configured. High, because an office, a school or a carrier's NAT puts
    /// many people behind one address; one person's typos are counted per (address, account).
    pub login_failures_per_address: u32,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        SecurityConfig {
            master_key_file: PathBuf::from("master.key"),
            allow_insecure_master_key_file_mode: false,
            argon2_m_cost_kib: 19456,
            argon2_t_cost: 2,
            argon2_p_cost: 1,
            hashing_queue_max: 128,
            hashing_new_queue_max: 32,
            hashing_threads: 0,
            onboarding_per_ip_hourly: 5,
            login_failures_per_address: tessera_actors::login_guard::DEFAULT_FAILURES_PER_ADDRESS,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TokensConfig {
    pub access_ttl_secs: u64,
    pub refresh_ttl_secs: u64,
    pub refresh_reuse_grace_secs: u64,
    /// How long an OAuth authorization code can be exchanged (RFC 6749 4.1.2: short).
    pub authorization_code_ttl_secs: u64,
    /// `urn:<vendor>:<service>`: step-up challenges name the assurance levels
    /// `<prefix>:aal1` and `<prefix>:aal2` (RFC 9470 `acr_values`).
    pub acr_urn_prefix: String,
    /// Access tokens whose signature was already checked, remembered (by SHA-256) until they
    /// expire so a repeat skips the ES256 verification. 0: no cache.
    pub verified_cache_entries: u64,
}

impl Default for TokensConfig {
    fn default() -> Self {
        TokensConfig {
            access_ttl_secs: 900,
            refresh_ttl_secs: 30 * 24 * 3600,
            refresh_reuse_grace_secs: 10,
            authorization_code_ttl_secs: 60,
            acr_urn_prefix: "urn:tessera:auth".into(),
            verified_cache_entries: 65_536,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MailTransport {
    File,
    Smtp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmtpTls {
    None,
    Starttls,
    Tls,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MailConfig {
    pub transport: MailTransport,
    pub from: String,
    /// Where the file transport writes messages; relative paths are under the data directory.
    pub outbox_dir: PathBuf,
    pub smtp: SmtpConfig,
}

impl Default for MailConfig {
    fn default() -> Self {
        MailConfig {
            transport: MailTransport::File,
            from: "Tessera <no-reply@localhost>".into(),
            outbox_dir: PathBuf::from("outbox"),
            smtp: SmtpConfig::default(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SmtpConfig {
    pub host: String,
    pub port: u16,
    pub tls: SmtpTls,
    pub username: String,
    pub password: SecretString,
}

impl Default for SmtpConfig {
    fn default() -> Self {
        SmtpConfig {
            host: "localhost".into(),
            port: 587,
            tls: SmtpTls::Starttls,
            username: String::new(),
            password: SecretString::default(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmsTransport {
    Outbox,
    Http,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SmsConfig {
    pub transport: SmsTransport,
    /// Where the outbox transport writes messages; relative paths are under the data directory.
    pub outbox_dir: PathBuf,
    /// The Messages REST API's base URL (the platform's and tenants' own accounts).
    pub base_url: String,
    /// The platform account, used with `transport = "http"`.
    pub account_sid: String,
    pub auth_token: SecretString,
    /// Sends through this messaging service when set, else from `from`.
    pub messaging_service_sid: String,
    pub from: String,
    /// Countries (ISO 3166-1 alpha-2) that tenants without their own list may text.
    pub allowed_countries: Vec<String>,
    /// How long one request to the provider may take, in milliseconds.
    pub timeout_ms: u64,
    /// The highest `sms_otp_monthly_cap` a tenant of each tier may have while its messages go
    /// through the platform's account (a tenant's own account allows the full 0-100,000).
    pub platform_monthly_cap_max: SmsTierCaps,
}

/// One ceiling per tier, 0-100,000 each.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SmsTierCaps {
    pub free: u32,
    pub pro: u32,
    pub enterprise: u32,
}

impl Default for SmsTierCaps {
    fn default() -> Self {
        SmsTierCaps {
            free: 1_000,
            pro: 10_000,
            enterprise: 100_000,
        }
    }
}

/// The EEA, Switzerland and the United Kingdom.
pub const DEFAULT_SMS_COUNTRIES: [&str; 33] = [
    "AT", "BE", "BG", "CH", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GB", "GR", "HR", "HU",
    "IE", "IS", "IT", "LI", "LT", "LU", "LV", "MT", "NL", "NO", "PL", "PT", "RO", "SE", "SI", "SK",
    "AX",
];

impl Default for SmsConfig {
    fn default() -> Self {
        SmsConfig {
            transport: SmsTransport::Outbox,
            outbox_dir: PathBuf::from("sms_outbox"),
            base_url: "https://api.twilio.com".into(),
            account_sid: String::new(),
            auth_token: SecretString::default(),
            messaging_service_sid: String::new(),
            from: String::new(),
            allowed_countries: DEFAULT_SMS_COUNTRIES.map(String::from).to_vec(),
            timeout_ms: 10_000,
            platform_monthly_cap_max: SmsTierCaps::default(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaptchaProvider {
    None,
    Turnstile,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CaptchaConfig {
    pub provider: CaptchaProvider,
    pub secret: SecretString,
    pub verify_url: String,
    /// How long to wait for the verifier, in milliseconds.
    pub timeout_ms: u64,
    /// The widget's public site key. With it, the hosted sign-in page shows the widget when a
    /// sign-in must solve a CAPTCHA (`auth/captcha_required`); without it, that page says to
    /// sign in from a known device or later.
    pub site_key: String,
    /// The widget's script, loaded only by a page that shows the widget (its origin is then
    /// allowed by that page's CSP for scripts and frames).
    pub widget_script_url: String,
}

impl Default for CaptchaConfig {
    fn default() -> Self {
        CaptchaConfig {
            provider: CaptchaProvider::None,
            secret: SecretString::default(),
            verify_url: "https://challenges.cloudflare.com/turnstile/v0/siteverify".into(),
            timeout_ms: 5000,
            site_key: String::new(),
            widget_script_url: "https://challenges.cloudflare.com/turnstile/v0/api.js".into(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    pub format: LogFormat,
    /// A tracing filter: `info`, `tessera=debug,info`, ...
    pub level: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            format: LogFormat::Text,
            level: "info".into(),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TestingConfig {
    /// Enables `tessera admin fault panic-tenant`, which crashes a tenant actor on purpose to
    /// drill the restart path. Never on in production.
    pub fault_injection: bool,
    /// Seconds added to the clock tenant actors check calendar deadlines against (the MFA
    /// grace period, codes and links), and dashboard sessions are created, touched and expired
    /// by, to drill what happens after one passes. Only with `fault_injection`.
    pub clock_offset_secs: i64,
}

/// Command-line values that win over the file and the environment.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub listen: Option<String>,
    pub data_dir: Option<PathBuf>,
}

impl Config {
    /// Reads `path` (which must exist), the environment and `overrides`, and validates.
    pub fn load(path: &Path, overrides: &Overrides) -> Result<Config, ConfigError> {
        if !path.is_file() {
            return Err(ConfigError::Missing(path.to_path_buf()));
        }
        Self::from_figment(
            Figment::from(Serialized::defaults(Config::default())).merge(Toml::file(path)),
            overrides,
        )
    }

    /// Like [`Config::load`] from a TOML string (tests, `check-config` of stdin).
    pub fn from_toml_str(toml: &str, overrides: &Overrides) -> Result<Config, ConfigError> {
        Self::from_figment(
            Figment::from(Serialized::defaults(Config::default())).merge(Toml::string(toml)),
            overrides,
        )
    }

    fn from_figment(figment: Figment, overrides: &Overrides) -> Result<Config, ConfigError> {
        let mut figment = figment.merge(Env::prefixed("TESSERA__").split("__"));
        if let Some(listen) = &overrides.listen {
            figment = figment.merge(("server.listen", listen));
        }
        if let Some(dir) = &overrides.data_dir {
            figment = figment.merge(("storage.data_dir", dir));
        }
        let mut config: Config = figment
            .extract()
            .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        config.validate()?;
        config.sdk.policy = config.sdk.load_policy(&config.storage.data_dir)?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        self.listen_addr()?;
        self.metrics_addr()?;
        for (key, url) in [
            ("server.base_url", &self.server.base_url),
            ("server.accounts_url", &self.server.accounts_url),
            ("server.docs_url", &self.server.docs_url),
        ] {
            if !url.is_empty() {
                check_http_url(key, url)?;
            }
        }
        self.trusted_proxies()?;
        for origin in &self.server.dashboard_origins {
            if crate::http::cors::normalize_origin(origin).is_none() {
                return Err(ConfigError::Key {
                    key: "server.dashboard_origins",
                    reason: format!("{origin:?} is not an origin (scheme://host[:port], no path)"),
                });
            }
        }
        positive("server.max_body_bytes", self.server.max_body_bytes as u64)?;
        positive(
            "server.request_timeout_secs",
            self.server.request_timeout_secs,
        )?;
        positive("server.actor_timeout_ms", self.server.actor_timeout_ms)?;
        positive("server.max_connections", self.server.max_connections as u64)?;
        positive(
            "server.header_read_timeout_secs",
            self.server.header_read_timeout_secs,
        )?;
        if self.server.keep_alive_timeout_secs < self.server.header_read_timeout_secs {
            return Err(ConfigError::Key {
                key: "server.keep_alive_timeout_secs",
                reason: "must be at least server.header_read_timeout_secs".into(),
            });
        }
        positive("storage.cache_capacity_mb", self.storage.cache_capacity_mb)?;
        if self
            .storage
            .cache_capacity_mb
            .checked_mul(1024 * 1024)
            .is_none()
        {
            return Err(ConfigError::Key {
                key: "storage.cache_capacity_mb",
                reason: "is too large".into(),
            });
        }
        positive(
            "storage.max_unflushed_batches",
            self.storage.max_unflushed_batches,
        )?;
        if self.storage.max_unflushed_batches > 100_000 {
            return Err(ConfigError::Key {
                key: "storage.max_unflushed_batches",
                reason: "must be at most 100000".into(),
            });
        }
        if self.storage.watchdog_secs > 86_400 {
            return Err(ConfigError::Key {
                key: "storage.watchdog_secs",
                reason: "must be at most 86400 (0 turns the watchdog off)".into(),
            });
        }
        positive("captcha.timeout_ms", self.captcha.timeout_ms)?;
        if self.storage.data_dir.as_os_str().is_empty() {
            return Err(ConfigError::Key {
                key: "storage.data_dir",
                reason: "must not be empty".into(),
            });
        }
        argon2::Params::new(
            self.security.argon2_m_cost_kib,
            self.security.argon2_t_cost,
            self.security.argon2_p_cost,
            None,
        )
        .map_err(|e| ConfigError::Key {
            key: "security.argon2_m_cost_kib",
            reason: format!(
                "argon2 refuses m={}, t={}, p={}: {e}",
                self.security.argon2_m_cost_kib,
                self.security.argon2_t_cost,
                self.security.argon2_p_cost
            ),
        })?;
        if self.security.hashing_threads > 1024 {
            return Err(ConfigError::Key {
                key: "security.hashing_threads",
                reason: "must be 0 (one per core) to 1024".into(),
            });
        }
        positive(
            "security.onboarding_per_ip_hourly",
            u64::from(self.security.onboarding_per_ip_hourly),
        )?;
        positive(
            "security.login_failures_per_address",
            u64::from(self.security.login_failures_per_address),
        )?;
        positive("tokens.access_ttl_secs", self.tokens.access_ttl_secs)?;
        positive(
            "dashboard.idle_timeout_secs",
            self.dashboard.idle_timeout_secs,
        )?;
        positive(
            "dashboard.absolute_timeout_secs",
            self.dashboard.absolute_timeout_secs,
        )?;
        positive("tokens.refresh_ttl_secs", self.tokens.refresh_ttl_secs)?;
        self.social.validate()?;
        self.agents.validate()?;
        self.eudi.validate()?;
        self.webhooks.validate()?;
        self.cluster.validate()?;
        positive(
            "tokens.authorization_code_ttl_secs",
            self.tokens.authorization_code_ttl_secs,
        )?;
        if self.tokens.authorization_code_ttl_secs > 600 {
            return Err(ConfigError::Key {
                key: "tokens.authorization_code_ttl_secs",
                reason: "must be at most 600 (RFC 6749 4.1.2: codes are short-lived)".into(),
            });
        }
        positive(
            "catalog.max_scopes_per_resource",
            self.catalog.max_scopes_per_resource as u64,
        )?;
        positive(
            "catalog.max_scopes_per_tenant",
            self.catalog.max_scopes_per_tenant as u64,
        )?;
        if self.captcha.provider == CaptchaProvider::Turnstile {
            if self.captcha.secret.0.is_empty() {
                return Err(ConfigError::Key {
                    key: "captcha.secret",
                    reason: "is required when captcha.provider = \"turnstile\"".into(),
                });
            }
            check_http_url("captcha.verify_url", &self.captcha.verify_url)?;
            check_http_url("captcha.widget_script_url", &self.captcha.widget_script_url)?;
            if self.captcha.site_key.len() > 256
                || !self
                    .captcha
                    .site_key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
            {
                return Err(ConfigError::Key {
                    key: "captcha.site_key",
                    reason: "must be at most 256 letters, digits, '-' or '_'".into(),
                });
            }
        }
        if self.mail.transport == MailTransport::Smtp && self.mail.smtp.host.is_empty() {
            return Err(ConfigError::Key {
                key: "mail.smtp.host",
                reason: "is required when mail.transport = \"smtp\"".into(),
            });
        }
        check_http_url("sms.base_url", &self.sms.base_url)?;
        if self.sms.transport == SmsTransport::Http {
            let missing = [
                ("sms.account_sid", self.sms.account_sid.is_empty()),
                ("sms.auth_token", self.sms.auth_token.0.is_empty()),
                (
                    "sms.messaging_service_sid",
                    self.sms.messaging_service_sid.is_empty() && self.sms.from.is_empty(),
                ),
            ];
            if let Some((key, _)) = missing.into_iter().find(|(_, m)| *m) {
                return Err(ConfigError::Key {
                    key,
                    reason: "is required when sms.transport = \"http\" (or set sms.from instead of sms.messaging_service_sid)".into(),
                });
            }
        }
        if let Some(c) = self
            .sms
            .allowed_countries
            .iter()
            .find(|c| !(c.len() == 2 && c.bytes().all(|b| b.is_ascii_uppercase())))
        {
            return Err(ConfigError::Key {
                key: "sms.allowed_countries",
                reason: format!("{c:?} is not a two-letter uppercase ISO 3166-1 alpha-2 code"),
            });
        }
        positive("sms.timeout_ms", self.sms.timeout_ms)?;
        let caps = &self.sms.platform_monthly_cap_max;
        for (key, cap) in [
            ("sms.platform_monthly_cap_max.free", caps.free),
            ("sms.platform_monthly_cap_max.pro", caps.pro),
            ("sms.platform_monthly_cap_max.enterprise", caps.enterprise),
        ] {
            if cap > 100_000 {
                return Err(ConfigError::Key {
                    key,
                    reason: "must be 0-100000 (the largest sms_otp_monthly_cap)".into(),
                });
            }
        }
        if !is_urn_prefix(&self.tokens.acr_urn_prefix) {
            return Err(ConfigError::Key {
                key: "tokens.acr_urn_prefix",
                reason: "must be urn:<vendor>:<service>, each segment letters, digits or '-'"
                    .into(),
            });
        }
        if self.testing.clock_offset_secs != 0 && !self.testing.fault_injection {
            return Err(ConfigError::Key {
                key: "testing.clock_offset_secs",
                reason: "is only allowed with testing.fault_injection = true".into(),
            });
        }
        if self.testing.clock_offset_secs.unsigned_abs() > 10 * 365 * 86_400 {
            return Err(ConfigError::Key {
                key: "testing.clock_offset_secs",
                reason: "must be within ten years".into(),
            });
        }
        tracing_subscriber::EnvFilter::try_new(&self.log.level).map_err(|e| ConfigError::Key {
            key: "log.level",
            reason: e.to_string(),
        })?;
        Ok(())
    }

    pub fn listen_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.server.listen.parse().map_err(|_| ConfigError::Key {
            key: "server.listen",
            reason: format!(
                "{:?} is not an address such as 127.0.0.1:8080",
                self.server.listen
            ),
        })
    }

    /// The management listener's address, if `server.metrics_listen` is set.
    pub fn metrics_addr(&self) -> Result<Option<SocketAddr>, ConfigError> {
        if self.server.metrics_listen.is_empty() {
            return Ok(None);
        }
        self.server
            .metrics_listen
            .parse()
            .map(Some)
            .map_err(|_| ConfigError::Key {
                key: "server.metrics_listen",
                reason: format!(
                    "{:?} is not an address such as 127.0.0.1:9090",
                    self.server.metrics_listen
                ),
            })
    }

    pub fn trusted_proxies(&self) -> Result<Vec<IpNet>, ConfigError> {
        self.server
            .trusted_proxies
            .iter()
            .map(|s| {
                s.parse::<IpNet>()
                    .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| ConfigError::Key {
                        key: "server.trusted_proxies",
                        reason: format!("{s:?} is not a CIDR or an IP address"),
                    })
            })
            .collect()
    }

    /// A path from the config, under the data directory when relative.
    pub fn data_path(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.storage.data_dir.join(p)
        }
    }

    pub fn master_key_path(&self) -> PathBuf {
        self.data_path(&self.security.master_key_file)
    }

    pub fn admin_socket_path(&self) -> PathBuf {
        self.storage.data_dir.join("admin.sock")
    }
}

fn positive(key: &'static str, v: u64) -> Result<(), ConfigError> {
    if v == 0 {
        Err(ConfigError::Key {
            key,
            reason: "must be greater than 0".into(),
        })
    } else {
        Ok(())
    }
}

/// `urn:<vendor>:<service>`: two non-empty segments of ASCII letters, digits and `-`.
fn is_urn_prefix(s: &str) -> bool {
    let mut parts = s.split(':');
    let ok = |p: Option<&str>| {
        p.is_some_and(|p| {
            !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
    };
    parts.next() == Some("urn") && ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}

fn check_http_url(key: &'static str, url: &str) -> Result<(), ConfigError> {
    match reqwest::Url::parse(url) {
        Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some() => Ok(()),
        _ => Err(ConfigError::Key {
            key,
            reason: format!("{url:?} is not an http(s) URL"),
        }),
    }
}

#[cfg(test)]
mod tests;
