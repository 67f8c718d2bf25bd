//! Webhook delivery, off the actors: the worker asks each tenant's actor for the deliveries
//! due now (`WebhookCmd::Due`), POSTs them signed per Standard Webhooks with the public-only
//! client of [`crate::net`], and reports every attempt (`WebhookCmd::Outcome`); the actor
//! records it and schedules the next attempt. What is pending lives in the tenant's store,
//! so it survives any crash; the worker keeps only when each tenant should be asked next,
//! learnt from the actors' wake-ups (`Outbound::webhooks_due`, sent once the deliveries are
//! durable) and from their answers.
//!
//! Signing (Standard Webhooks): `webhook-id` is the event's id (the same for every attempt
//! and endpoint), `webhook-timestamp` the attempt's Unix time, and `webhook-signature` one
//! `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` per secret (the base64-decoded part
//! after `whsec_`), space-separated: during a rotation both secrets sign.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use base64::{engine::general_purpose::STANDARD, Engine};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use tessera_actors::{
    records::Role,
    tenant::{
        audit::AuditContext,
        webhooks::{AttemptOutcome, DueDelivery, WebhookAnswer, WebhookCmd},
    },
    DirectoryHandle, DirectoryMsg, TenantHandle, TenantMsg,
};
use tessera_storage::TenantId;
use time::OffsetDateTime;
use tokio::{
    sync::{mpsc::UnboundedReceiver, Semaphore},
    task::JoinSet,
};

use crate::{
    cluster::Cluster,
    config::WebhooksConfig,
    net::{self, Reach},
};

/// How long the worker waits before asking a tenant again after its actor did not answer.
const UNAVAILABLE_RETRY: time::Duration = time::Duration::seconds(30);
/// How long a tenant's owners (the mail of a disabled endpoint) are remembered.
const OWNERS_TTL: Duration = Duration::from_secs(60);

/// The `webhook-signature` value of one secret: `v1,` and the base64 HMAC-SHA256 of
/// `{id}.{timestamp}.{body}`, keyed by the base64-decoded part after `whsec_`. `None` for a
/// secret that is not one.
pub fn signature(secret: &str, id: &str, timestamp: i64, body: &str) -> Option<String> {
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
        .ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
    Some(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

/// The whole `webhook-signature` header: one signature per secret, space-separated.
pub fn signature_header(secrets: &[String], id: &str, timestamp: i64, body: &str) -> String {
    secrets
        .iter()
        .filter_map(|s| signature(s, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why an endpoint URL is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrlRefusal {
    /// Not an absolute http(s) URL with a host, or it carries credentials or a fragment.
    Malformed,
    /// `http://` without `allow_private_targets`.
    NotHttps,
    /// A loopback name or an address that is not public ([`net::is_public`]) without
    /// `allow_private_targets`.
    PrivateTarget,
}

/// Checks an endpoint URL as written: an absolute `https://` URL with a host and no
/// credentials or fragment; `http://`, loopback names and non-public address literals only
/// with `allow_private`. (Names are checked again when resolved, by [`net::PublicOnly`].)
pub fn check_url(raw: &str, allow_private: bool) -> Result<url::Url, UrlRefusal> {
    let url = url::Url::parse(raw).map_err(|_| UrlRefusal::Malformed)?;
    if !matches!(url.scheme(), "https" | "http")
        || url.host().is_none()
        || !url.username().is_empty()
        || url.password().is_some()
        || url.fragment().is_some()
    {
        return Err(UrlRefusal::Malformed);
    }
    if allow_private {
        return Ok(url);
    }
    if url.scheme() != "https" {
        return Err(UrlRefusal::NotHttps);
    }
    if net::is_loopback_host(&url) || net::host_ip(&url).is_some_and(|ip| !net::is_public(ip)) {
        return Err(UrlRefusal::PrivateTarget);
    }
    Ok(url)
}

/// Whether a host name resolves only to addresses outside the public internet (checked when
/// an endpoint is saved, to refuse it with a clear answer; a name that does not resolve now
/// is accepted, and checked at every connection).
pub async fn resolves_only_to_private(url: &url::Url) -> bool {
    let Some(url::Host::Domain(host)) = url.host() else {
        return false;
    };
    let port = url.port_or_known_default().unwrap_or(443);
    let lookup = tokio::net::lookup_host((host.to_owned(), port));
    match tokio::time::timeout(Duration::from_secs(3), lookup).await {
        Ok(Ok(addrs)) => {
            let addrs: Vec<_> = addrs.collect();
            !addrs.is_empty() && addrs.iter().all(|a| !net::is_public(a.ip()))
        }
        _ => false,
    }
}

/// What the worker shares with its tasks.
struct Shared {
    directory: DirectoryHandle,
    /// A cluster member delivers only for the tenants it serves.
    cluster: Cluster,
    http: reqwest::Client,
    allow_private: bool,
    permits: Semaphore,
    owners: Mutex<HashMap<TenantId, (Instant, Vec<String>)>>,
}

/// The worker: runs until the wake-up channel closes (every tenant actor and the directory
/// are gone) or the task is aborted.
pub async fn run(
    directory: DirectoryHandle,
    cluster: Cluster,
    config: WebhooksConfig,
    mut wake: UnboundedReceiver<(TenantId, OffsetDateTime)>,
) {
    let reach = if config.allow_private_targets {
        Reach::Any
    } else {
        Reach::Public
    };
    let http = match net::client(reach, Duration::from_millis(config.timeout_ms)) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "the webhook client cannot be built; webhooks stay queued");
            return;
        }
    };
    let shared = Arc::new(Shared {
        directory,
        cluster,
        http,
        allow_private: config.allow_private_targets,
        permits: Semaphore::new(config.concurrency),
        owners: Mutex::new(HashMap::new()),
    });
    let mut due: HashMap<TenantId, OffsetDateTime> = HashMap::new();
    let mut busy: HashSet<TenantId> = HashSet::new();
    let mut passes: JoinSet<(TenantId, Option<OffsetDateTime>)> = JoinSet::new();
    let mut pass_of: HashMap<tokio::task::Id, TenantId> = HashMap::new();
    let mut open = true;
    loop {
        let now = OffsetDateTime::now_utc();
        let ready: Vec<TenantId> = due
            .iter()
            .filter(|(t, at)| **at <= now && !busy.contains(*t))
            .map(|(t, _)| *t)
            .collect();
        for tenant in ready {
            due.remove(&tenant);
            busy.insert(tenant);
            let shared = shared.clone();
            let task = passes.spawn(async move { (tenant, pass(shared, tenant).await) });
            pass_of.insert(task.id(), tenant);
        }
        if !open && passes.is_empty() {
            return;
        }
        let sleep = due
            .iter()
            .filter(|(t, _)| !busy.contains(*t))
            .map(|(_, at)| *at - now)
            .min()
            .map(|d| Duration::try_from(d).unwrap_or(Duration::ZERO))
            .unwrap_or(Duration::from_secs(3600));
        tokio::select! {
            msg = wake.recv(), if open => match msg {
                Some((tenant, at)) => merge(&mut due, tenant, at),
                None => open = false,
            },
            Some(done) = passes.join_next_with_id(), if !passes.is_empty() => match done {
                Ok((task, (tenant, next))) => {
                    pass_of.remove(&task);
                    busy.remove(&tenant);
                    if let Some(next) = next {
                        merge(&mut due, tenant, next);
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "a webhook pass failed");
                    if let Some(tenant) = pass_of.remove(&e.id()) {
                        busy.remove(&tenant);
                        merge(&mut due, tenant, now + UNAVAILABLE_RETRY);
                    }
                }
            },
            _ = tokio::time::sleep(sleep) => {}
        }
    }
}

/// Keeps the earlier of two due times for a tenant.
fn merge(due: &mut HashMap<TenantId, OffsetDateTime>, tenant: TenantId, at: OffsetDateTime) {
    due.entry(tenant)
        .and_modify(|t| {
            if at < *t {
                *t = at;
            }
        })
        .or_insert(at);
}

/// One tenant's turn: asks for what is due and attempts it until nothing is; answers when to
/// ask again.
async fn pass(shared: Arc<Shared>, tenant: TenantId) -> Option<OffsetDateTime> {
    // A deleted tenant has nothing left to deliver.
    let handle = shared.directory.tenant_by_id(tenant)?;
    // Another node serves it (from its own copy of the deliveries): ask again later, when
    // the tenant may have moved here.
    if shared.cluster.admit(tenant).is_err() {
        return Some(OffsetDateTime::now_utc() + UNAVAILABLE_RETRY);
    }
    loop {
        let answer = handle
            .call(|reply| TenantMsg::Webhooks {
                cmd: WebhookCmd::Due,
                ctx: AuditContext::default(),
                reply,
            })
            .await;
        let batch = match answer {
            Ok(WebhookAnswer::Due(batch)) => batch,
            Ok(_) => {
                tracing::error!(tenant = %tenant, "unexpected answer to a webhook due request");
                return Some(OffsetDateTime::now_utc() + UNAVAILABLE_RETRY);
            }
            Err(e) => {
                tracing::warn!(tenant = %tenant, error = %e, "cannot ask a tenant for due webhooks");
                return Some(OffsetDateTime::now_utc() + UNAVAILABLE_RETRY);
            }
        };
        if batch.deliveries.is_empty() {
            return batch.next;
        }
        let mut attempts = JoinSet::new();
        for d in batch.deliveries {
            attempts.spawn(attempt_and_report(shared.clone(), handle.clone(), d));
        }
        while let Some(done) = attempts.join_next().await {
            if let Err(e) = done {
                tracing::error!(tenant = %tenant, error = %e, "a webhook attempt failed");
            }
        }
    }
}

/// Makes one attempt and reports it to the tenant's actor.
async fn attempt_and_report(shared: Arc<Shared>, tenant: TenantHandle, d: DueDelivery) {
    let attempt = {
        let Ok(_permit) = shared.permits.acquire().await else {
            return;
        };
        shared.attempt(&d).await
    };
    let delivered = attempt.error.is_none();
    let owners = if delivered {
        Vec::new()
    } else {
        shared.owners(&tenant).await
    };
    let outcome = AttemptOutcome {
        endpoint: d.endpoint,
        event: d.event,
        attempt: d.attempt,
        at: attempt.at,
        latency_ms: attempt.latency_ms,
        status: attempt.status,
        error: attempt.error,
        owners,
    };
    let reported = tenant
        .call(|reply| TenantMsg::Webhooks {
            cmd: WebhookCmd::Outcome(outcome.clone()),
            ctx: AuditContext::default(),
            reply,
        })
        .await;
    if let Err(e) = reported {
        // The lease runs out and the delivery is attempted again: at least once.
        tracing::warn!(tenant = %tenant.id, endpoint = %d.endpoint, error = %e, "cannot record a webhook attempt");
    }
}

/// How one attempt went.
struct Attempt {
    at: OffsetDateTime,
    latency_ms: u64,
    status: Option<u16>,
    /// `None`: delivered (a 2xx answer).
    error: Option<String>,
}

impl Shared {
    async fn attempt(&self, d: &DueDelivery) -> Attempt {
        let at = OffsetDateTime::now_utc();
        let started = Instant::now();
        let done = |status: Option<u16>, error: Option<String>| Attempt {
            at,
            latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            status,
            error,
        };
        // Checked again: the operator may have turned `allow_private_targets` off since.
        let url = match check_url(&d.url, self.allow_private) {
            Ok(u) => u,
            Err(UrlRefusal::Malformed) => return done(None, Some("invalid_url".into())),
            Err(_) => return done(None, Some("address_not_allowed".into())),
        };
        let id = d.event.to_string();
        let timestamp = at.unix_timestamp();
        let sent = self
            .http
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("webhook-id", &id)
            .header("webhook-timestamp", timestamp.to_string())
            .header(
                "webhook-signature",
                signature_header(&d.secrets, &id, timestamp, &d.body),
            )
            .body(d.body.clone())
            .send()
            .await;
        match sent {
            Ok(resp) => {
                let status = resp.status().as_u16();
                if resp.status().is_success() {
                    done(Some(status), None)
                } else {
                    done(Some(status), Some(format!("http_{status}")))
                }
            }
            Err(e) => done(None, Some(classify(&e).into())),
        }
    }

    /// The tenant's owners' addresses (remembered for a minute).
    async fn owners(&self, tenant: &TenantHandle) -> Vec<String> {
        if let Ok(cache) = self.owners.lock() {
            if let Some((at, owners)) = cache.get(&tenant.id) {
                if at.elapsed() < OWNERS_TTL {
                    return owners.clone();
                }
            }
        }
        let id = tenant.id;
        let found = self
            .directory
            .request(|reply| DirectoryMsg::ListMembers { tenant: id, reply })
            .await;
        let owners: Vec<String> = match found {
            Ok(list) => list
                .members
                .into_iter()
                .filter(|m| m.role == Role::Owner)
                .map(|m| m.email)
                .collect(),
            Err(e) => {
                tracing::warn!(tenant = %tenant.id, error = %e, "cannot list a tenant's owners");
                return Vec::new();
            }
        };
        if let Ok(mut cache) = self.owners.lock() {
            cache.insert(tenant.id, (Instant::now(), owners.clone()));
        }
        owners
    }
}

/// A failed request's reason for the delivery log, without the library's words (which may
/// name addresses).
fn classify(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        return "timeout";
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.to_string().contains("has no public address") {
            return "address_not_allowed";
        }
        source = s.source();
    }
    if e.is_connect() {
        "connection_failed"
    } else {
        "request_failed"
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// The test vector of the Standard Webhooks specification (and its reference libraries).
    #[test]
    fn signs_the_standard_webhooks_test_vector() {
        let sig = signature(
            "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
            "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
            1_649_367_553,
            r#"{"email":"test@example.com","username":"test_user"}"#,
        );
        assert_eq!(
            sig.as_deref(),
            Some("v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=")
        );
    }

    #[test]
    fn two_secrets_make_two_space_separated_signatures() {
        let a = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD".to_owned();
        let b = format!("whsec_{}", STANDARD.encode([7u8; 32]));
        let h = signature_header(&[a.clone(), b.clone()], "id", 1, "{}");
        let parts: Vec<&str> = h.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert_eq!(Some(parts[0].to_owned()), signature(&a, "id", 1, "{}"));
        assert_eq!(Some(parts[1].to_owned()), signature(&b, "id", 1, "{}"));
        assert_eq!(signature("whsec_not base64!", "id", 1, "{}"), None);
    }

    #[test]
    fn endpoint_urls_are_https_to_public_hosts_unless_private_targets_are_allowed() {
        assert!(check_url("https://hooks.example.com/tessera", false).is_ok());
        for (url, refusal) in [
            ("http://hooks.example.com/", UrlRefusal::NotHttps),
            ("https://localhost/x", UrlRefusal::PrivateTarget),
            ("https://127.0.0.1/x", UrlRefusal::PrivateTarget),
            ("https://10.0.0.8/x", UrlRefusal::PrivateTarget),
            ("https://169.254.169.254/latest", UrlRefusal::PrivateTarget),
            ("https://[::1]/x", UrlRefusal::PrivateTarget),
            ("https://[fd00::1]/x", UrlRefusal::PrivateTarget),
            ("https://[64:ff9b::7f00:1]/x", UrlRefusal::PrivateTarget),
            ("https://[2002:a00:1::]/x", UrlRefusal::PrivateTarget),
            ("https://240.0.0.1/x", UrlRefusal::PrivateTarget),
            ("https://user:pw@hooks.example.com/", UrlRefusal::Malformed),
            ("https://hooks.example.com/#frag", UrlRefusal::Malformed),
            ("ftp://hooks.example.com/", UrlRefusal::Malformed),
            ("not a url", UrlRefusal::Malformed),
        ] {
            assert_eq!(check_url(url, false).err(), Some(refusal), "{url}");
        }
        assert!(check_url("http://127.0.0.1:9000/hook", true).is_ok());
        assert!(check_url("http://10.0.0.8/hook", true).is_ok());
        assert_eq!(
            check_url("http://u:p@127.0.0.1/", true).err(),
            Some(UrlRefusal::Malformed)
        );
    }
}
