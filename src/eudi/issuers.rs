//! What the verifier fetches from issuers, and keeps: the key that signed a credential or a
//! status list by the trust anchor's key resolution (`x5c`, `jwks_uri`, `did:web`), and the
//! token status lists under the tenant's `on_status_unavailable` policy. Only HTTPS (or
//! loopback HTTP when the operator allows it) to public addresses; key documents and status
//! lists cached by URL.
//!
//! Its own file: the verifier's outbound side, apart from the checks of a presentation.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::{json, Value};
use tessera_actors::tenant::settings::{EudiConfig, KeyResolution, TrustAnchor};
use tessera_eudi::{
    jose::{Jws, PublicKey},
    status::{StatusList, StatusRef},
    x509::{self, Usage},
};

use super::{
    anchor_algs, anchor_roots, did_web_url, untrusted, CachedStatus, Refusal, WalletVerifier,
    DEFAULT_STATUS_TTL, MAX_ANSWER, MAX_CACHED,
};

impl WalletVerifier {
    /// Whether `url` may be fetched: HTTPS, or HTTP to a loopback host when the operator
    /// allowed it (local trials and tests).
    fn fetchable(&self, url: &str) -> Result<url::Url, Refusal> {
        let parsed = url::Url::parse(url).map_err(|_| untrusted(format!("not a URL: {url}")))?;
        let loopback = match parsed.host() {
            Some(url::Host::Domain(d)) => d == "localhost",
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        };
        // Addresses inside the operator's network are no issuer's (names are checked when
        // resolved, by `net::PublicOnly`).
        if let Some(ip) = crate::net::host_ip(&parsed) {
            if !crate::net::reachable(ip, Self::reach(&self.config)) {
                return Err(untrusted(format!("not a public address: {url}")));
            }
        }
        match parsed.scheme() {
            "https" => Ok(parsed),
            "http" if loopback && self.config.allow_loopback_http => Ok(parsed),
            _ => Err(untrusted(format!("only https URLs are fetched: {url}"))),
        }
    }

    async fn fetch(&self, url: &str, accept: &str) -> Result<Vec<u8>, String> {
        let mut resp = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, accept)
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("{url}: {}", resp.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| format!("{url}: {e}"))? {
            if body.len() + chunk.len() > MAX_ANSWER {
                return Err(format!("{url}: answer too large"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// A JSON document fetched at most once per `keys_cache_secs`.
    async fn cached_json(&self, url: &str) -> Result<Arc<Value>, Refusal> {
        let max_age = Duration::from_secs(self.config.keys_cache_secs);
        if let Ok(cache) = self.jwks.lock() {
            if let Some((at, doc)) = cache.get(url) {
                if at.elapsed() < max_age {
                    return Ok(doc.clone());
                }
            }
        }
        self.fetchable(url)?;
        let body = self
            .fetch(url, "application/json")
            .await
            .map_err(untrusted)?;
        let doc: Value =
            serde_json::from_slice(&body).map_err(|e| untrusted(format!("{url}: {e}")))?;
        let doc = Arc::new(doc);
        if let Ok(mut cache) = self.jwks.lock() {
            cache.insert(url.to_owned(), (Instant::now(), doc.clone()));
        }
        Ok(doc)
    }

    /// The key that signed `jws` by the anchor's key resolution, and the algorithm allowed.
    /// The key that signed `jws` by the anchor's key resolution. With `iss` (a credential,
    /// not a status list), an `x5c` leaf must name the issuer (SD-JWT VC §3.5: its host as a
    /// DNS name, or the whole URL as a URI).
    pub(super) async fn anchor_key(
        &self,
        anchor: &TrustAnchor,
        jws: &Jws,
        iss: Option<&str>,
        now: i64,
    ) -> Result<PublicKey, Refusal> {
        let kid = jws.header_str("kid");
        match &anchor.key_resolution {
            KeyResolution::X5c { x5c_roots } => {
                let chain = jws
                    .x5c()
                    .map_err(Refusal::invalid)?
                    .ok_or_else(|| untrusted("no x5c in the header"))?;
                let roots = anchor_roots(x5c_roots)?;
                let key =
                    x509::verify_chain(&chain, &roots, now, Usage::Issuer).map_err(untrusted)?;
                if let Some(iss) = iss {
                    let (dns, uris) = x509::san_names(&chain[0]).map_err(untrusted)?;
                    let host = url::Url::parse(iss)
                        .ok()
                        .and_then(|u| u.host_str().map(str::to_ascii_lowercase));
                    let named =
                        uris.iter().any(|u| u == iss) || host.is_some_and(|h| dns.contains(&h));
                    if !named {
                        return Err(untrusted(format!(
                            "the issuer's certificate does not name {iss}"
                        )));
                    }
                }
                Ok(key)
            }
            KeyResolution::JwksUri { jwks_uri } => {
                let doc = self.cached_json(jwks_uri).await?;
                let keys = doc
                    .get("keys")
                    .and_then(Value::as_array)
                    .ok_or_else(|| untrusted("the JWKS has no keys"))?;
                pick_key(keys.iter(), kid, |k| k.get("kid").and_then(Value::as_str))
            }
            KeyResolution::DidWeb { did } => {
                let url = did_web_url(did).ok_or_else(|| untrusted("not a did:web"))?;
                let doc = self.cached_json(&url).await?;
                if doc.get("id").and_then(Value::as_str) != Some(did.as_str()) {
                    return Err(untrusted("the DID document is not the anchor's DID's"));
                }
                // Only methods the DID lets assert (when it says which) sign credentials.
                let assertion: Option<Vec<String>> = doc
                    .get("assertionMethod")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|m| m.as_str().or_else(|| m.get("id")?.as_str()))
                            .map(|id| id.strip_prefix(did.as_str()).unwrap_or(id).to_owned())
                            .collect()
                    });
                let methods = doc
                    .get("verificationMethod")
                    .and_then(Value::as_array)
                    .ok_or_else(|| untrusted("the DID document has no verificationMethod"))?;
                // A `kid` names a method by its full id or its fragment.
                let kid = kid.map(|k| k.strip_prefix(did.as_str()).unwrap_or(k));
                let keys: Vec<Value> = methods
                    .iter()
                    .filter_map(|m| {
                        let id = m.get("id").and_then(Value::as_str)?;
                        let id = id.strip_prefix(did.as_str()).unwrap_or(id);
                        if assertion
                            .as_ref()
                            .is_some_and(|a| !a.iter().any(|x| x == id))
                        {
                            return None;
                        }
                        let mut jwk = m.get("publicKeyJwk")?.clone();
                        jwk.as_object_mut()?.insert("kid".into(), json!(id));
                        Some(jwk)
                    })
                    .collect();
                pick_key(keys.iter(), kid, |k| k.get("kid").and_then(Value::as_str))
            }
        }
    }

    /// Checks the status of a credential under the tenant's policy.
    pub(super) async fn check_status(
        &self,
        anchor: &TrustAnchor,
        status: &StatusRef,
        config: &EudiConfig,
        now: i64,
    ) -> Result<(), Refusal> {
        let staleness = Duration::from_secs(u64::from(config.max_status_staleness_seconds));
        let key = status_key(anchor, &status.uri);
        let cached = self
            .status
            .lock()
            .ok()
            .and_then(|c| c.get(&key).map(|s| (s.at.elapsed(), s.list.clone())))
            .filter(|(_, list)| list.exp.is_none_or(|e| e > now));
        // A list is used again for its `ttl`, but never longer than the tenant lets a status
        // be old.
        let fresh = cached.as_ref().and_then(|(age, list)| {
            let ttl = Duration::from_secs(list.ttl.unwrap_or(DEFAULT_STATUS_TTL));
            (*age < ttl.min(staleness)).then(|| list.clone())
        });
        let list = match fresh {
            Some(list) => Some(list),
            None => match self.fetch_status(anchor, &status.uri, &key, now).await {
                Ok(list) => Some(list),
                Err(e) => {
                    tracing::warn!(reason = %e.detail, "a status list could not be had");
                    match config.on_status_unavailable.as_str() {
                        "accept_unverified" => None,
                        "accept_with_cache" => match cached {
                            Some((age, list)) if age <= staleness => Some(list),
                            _ => return Err(Refusal::new("eudi/status_unavailable", e.detail)),
                        },
                        _ => return Err(Refusal::new("eudi/status_unavailable", e.detail)),
                    }
                }
            },
        };
        if let Some(list) = list {
            match list.get(status.idx) {
                Ok(0) => {}
                Ok(v) => {
                    return Err(Refusal::new(
                        "eudi/credential_revoked",
                        format!("status {v} at {}", status.idx),
                    ))
                }
                Err(e) => return Err(Refusal::invalid(e)),
            }
        }
        Ok(())
    }

    async fn fetch_status(
        &self,
        anchor: &TrustAnchor,
        uri: &str,
        cache_key: &str,
        now: i64,
    ) -> Result<Arc<StatusList>, Refusal> {
        self.fetchable(uri)?;
        let unavailable = |e: String| Refusal::new("eudi/status_unavailable", e);
        let body = self
            .fetch(uri, "application/statuslist+jwt")
            .await
            .map_err(unavailable)?;
        let text = std::str::from_utf8(&body)
            .map_err(|_| unavailable(format!("{uri}: not text")))?
            .trim();
        let jws = Jws::decode(text).map_err(|e| unavailable(format!("{uri}: {e}")))?;
        let key = self.anchor_key(anchor, &jws, None, now).await?;
        jws.verify(&key, &anchor_algs(anchor))
            .map_err(|e| unavailable(format!("{uri}: {e}")))?;
        let list = StatusList::from_token(&jws, uri, now, self.config.status_list_max_bytes)
            .map_err(|e| unavailable(format!("{uri}: {e}")))?;
        let list = Arc::new(list);
        if let Ok(mut cache) = self.status.lock() {
            // Only trusted issuers' lists get here; still, the oldest goes past a bound.
            if cache.len() >= MAX_CACHED && !cache.contains_key(cache_key) {
                let oldest = cache
                    .iter()
                    .min_by_key(|(_, s)| s.at)
                    .map(|(k, _)| k.clone());
                if let Some(k) = oldest {
                    cache.remove(&k);
                }
            }
            cache.insert(
                cache_key.to_owned(),
                CachedStatus {
                    at: Instant::now(),
                    list: list.clone(),
                },
            );
        }
        Ok(list)
    }
}

/// The cache key of a status list: its URI and the keys it was checked against (another
/// tenant's anchor for the same URI checks it again).
fn status_key(anchor: &TrustAnchor, uri: &str) -> String {
    let keys = serde_json::to_string(&anchor.key_resolution).unwrap_or_default();
    format!("{uri}\n{keys}")
}

/// The key named `kid` among `keys` (JWKs), or the only one when there is no `kid`.
fn pick_key<'a>(
    keys: impl Iterator<Item = &'a Value> + Clone,
    kid: Option<&str>,
    kid_of: impl Fn(&Value) -> Option<&str>,
) -> Result<PublicKey, Refusal> {
    let found = match kid {
        Some(kid) => keys.clone().find(|k| kid_of(k) == Some(kid)),
        None => {
            let mut all = keys.clone();
            match (all.next(), all.next()) {
                (Some(only), None) => Some(only),
                _ => None,
            }
        }
    };
    let jwk = found.ok_or_else(|| untrusted("no issuer key matches the kid"))?;
    PublicKey::from_jwk(jwk).map_err(untrusted)
}
