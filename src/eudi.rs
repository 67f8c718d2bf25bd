//! The verifier's side of OpenID4VP 1.0 that runs off the tenant actors: the signed request
//! object with its DCQL query, and the checks of a wallet's encrypted answer (JWE, SD-JWT VC
//! and mdoc presentations, issuer keys by `x5c`, `jwks_uri` or `did:web`, token status lists
//! under the tenant's `on_status_unavailable` policy).
//!
//! One HTTP client with a timeout and no redirects serves the key and status fetches; each
//! answer is read up to 1 MiB. Issuer key sets and status lists are cached by URL.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::{json, Map, Value};
use tessera_actors::tenant::{
    eudi::{Eidas, EudiPurpose, Opening, TxView, WalletIdentity, WalletOutcome, AGE_THRESHOLD},
    settings::{rules::WALLET_ATTRIBUTES, EudiConfig, KeyResolution, TrustAnchor},
};
use tessera_eudi::{
    jose::{Alg, Enc, EncryptionKey, Jws, PublicKey},
    mdoc, sdjwt,
    status::{StatusList, StatusRef},
    x509::{self, Usage},
};

use crate::config::WalletConfig;

const MAX_ANSWER: usize = 1 << 20;
/// How old a key-binding JWT (or nothing else) may be, in seconds.
const KB_MAX_AGE: i64 = 300;
/// Status lists (and key documents) kept at most.
const MAX_CACHED: usize = 1024;
/// How long a status list is used without asking again when its token names no `ttl`.
const DEFAULT_STATUS_TTL: u64 = 300;

/// The PID's type in SD-JWT VC, current and legacy.
pub const PID_VCTS: [&str; 2] = ["urn:eudi:pid:1", "urn:eu.europa.ec.eudi:pid:1"];
/// The PID's mdoc doctype (and namespace).
pub const PID_DOCTYPE: &str = "eu.europa.ec.eudi.pid.1";
/// The proof-of-age attestation's mdoc doctype (and namespace).
pub const AV_DOCTYPE: &str = "eu.europa.ec.av.1";

/// Where a requested attribute sits: its SD-JWT VC paths (current PID first, then legacy) and
/// its mdoc element.
fn attribute_paths(name: &str) -> (Vec<Vec<&'static str>>, &'static str) {
    match name {
        "family_name" => (vec![vec!["family_name"]], "family_name"),
        "given_name" => (vec![vec!["given_name"]], "given_name"),
        "birth_date" => (vec![vec!["birthdate"], vec!["birth_date"]], "birth_date"),
        "birth_place" => (
            vec![vec!["place_of_birth"], vec!["birth_place"]],
            "birth_place",
        ),
        "nationality" => (
            vec![vec!["nationalities"], vec!["nationality"]],
            "nationality",
        ),
        "age_over_16" => (
            vec![vec!["age_equal_or_over", "16"], vec!["age_over_16"]],
            "age_over_16",
        ),
        "age_over_18" => (
            vec![vec!["age_equal_or_over", "18"], vec!["age_over_18"]],
            "age_over_18",
        ),
        "age_over_21" => (
            vec![vec!["age_equal_or_over", "21"], vec!["age_over_21"]],
            "age_over_21",
        ),
        "resident_country" => (
            vec![vec!["address", "country"], vec!["resident_country"]],
            "resident_country",
        ),
        "resident_city" => (
            vec![vec!["address", "locality"], vec!["resident_city"]],
            "resident_city",
        ),
        "email" => (vec![vec!["email"], vec!["email_address"]], "email_address"),
        "phone_number" => (
            vec![vec!["phone_number"], vec!["mobile_phone_number"]],
            "mobile_phone_number",
        ),
        _ => (Vec::new(), ""),
    }
}

/// Every attribute a presentation is read for (each has its places in [`attribute_paths`]):
/// what identifies a person, and what a tenant may ask for.
fn attributes() -> impl Iterator<Item = &'static str> {
    let requestable = WALLET_ATTRIBUTES.iter().copied();
    IDENTIFYING
        .into_iter()
        .chain(requestable.filter(|a| !IDENTIFYING.contains(a)))
}

/// What identifies a person at an issuer: the PID's mandatory attributes (the PID carries no
/// identifier every issuer sets).
const IDENTIFYING: [&str; 5] = [
    "family_name",
    "given_name",
    "birth_date",
    "birth_place",
    "nationality",
];

/// The attributes a sign-in asks for: the tenant's, and what identifies the person.
fn login_attributes(config: &EudiConfig) -> Vec<String> {
    let mut out: Vec<String> = IDENTIFYING.iter().map(|s| (*s).to_owned()).collect();
    for a in &config.requested_attributes {
        if !out.contains(a) {
            out.push(a.clone());
        }
    }
    out
}

fn formats_accepted(config: &EudiConfig) -> (bool, bool) {
    let any = |f: &str| {
        config
            .trust_anchors
            .iter()
            .any(|a| a.allowed_formats.iter().any(|x| x == f))
    };
    (any("dc+sd-jwt"), any("mso_mdoc"))
}

/// The DCQL query (OpenID4VP 1.0 §6) of a transaction: the PID in the formats some trust
/// anchor accepts (sign-in), or a proof of age (age verification).
pub fn dcql_query(purpose: EudiPurpose, config: &EudiConfig) -> Value {
    let (sd_jwt, mso) = formats_accepted(config);
    let mut credentials = Vec::new();
    let mut options = Vec::new();
    match purpose {
        EudiPurpose::Login => {
            let attrs = login_attributes(config);
            if sd_jwt {
                let claims: Vec<Value> = attrs
                    .iter()
                    .filter_map(|a| attribute_paths(a).0.into_iter().next())
                    .map(|p| json!({ "path": p }))
                    .collect();
                credentials.push(json!({
                    "id": "pid_sd_jwt",
                    "format": "dc+sd-jwt",
                    "meta": { "vct_values": PID_VCTS },
                    "claims": claims,
                }));
                options.push(json!(["pid_sd_jwt"]));
            }
            if mso {
                let claims: Vec<Value> = attrs
                    .iter()
                    .map(|a| attribute_paths(a).1)
                    .filter(|e| !e.is_empty())
                    .map(|e| json!({ "path": [PID_DOCTYPE, e], "intent_to_retain": false }))
                    .collect();
                credentials.push(json!({
                    "id": "pid_mdoc",
                    "format": "mso_mdoc",
                    "meta": { "doctype_value": PID_DOCTYPE },
                    "claims": claims,
                }));
                options.push(json!(["pid_mdoc"]));
            }
        }
        EudiPurpose::Age => {
            let over = format!("{AGE_THRESHOLD}");
            if mso {
                credentials.push(json!({
                    "id": "av_mdoc",
                    "format": "mso_mdoc",
                    "meta": { "doctype_value": AV_DOCTYPE },
                    "claims": [{ "path": [AV_DOCTYPE, format!("age_over_{over}")] }],
                }));
                options.push(json!(["av_mdoc"]));
                credentials.push(json!({
                    "id": "pid_age_mdoc",
                    "format": "mso_mdoc",
                    "meta": { "doctype_value": PID_DOCTYPE },
                    "claims": [
                        { "id": "over", "path": [PID_DOCTYPE, format!("age_over_{over}")] },
                        { "id": "born", "path": [PID_DOCTYPE, "birth_date"] },
                    ],
                    "claim_sets": [["over"], ["born"]],
                }));
                options.push(json!(["pid_age_mdoc"]));
            }
            if sd_jwt {
                credentials.push(json!({
                    "id": "pid_age_sd_jwt",
                    "format": "dc+sd-jwt",
                    "meta": { "vct_values": PID_VCTS },
                    "claims": [
                        { "id": "over", "path": ["age_equal_or_over", over] },
                        { "id": "born", "path": ["birthdate"] },
                    ],
                    "claim_sets": [["over"], ["born"]],
                }));
                options.push(json!(["pid_age_sd_jwt"]));
            }
        }
    }
    json!({
        "credentials": credentials,
        "credential_sets": [{ "options": options }],
    })
}

/// The absolute URLs of a transaction.
pub struct TxUrls {
    pub request_uri: String,
    pub response_uri: String,
    pub wallet_url: String,
    pub page_url: String,
}

impl TxUrls {
    pub fn of(tx: &TxView, base: &str, accounts: &str) -> TxUrls {
        let request_uri = format!("{base}/v1/auth/eudi/request/{}", tx.request_id);
        let wallet_url = format!(
            "openid4vp://?client_id={}&request_uri={}&request_uri_method=post",
            urlencode(&tx.verifier.client_id),
            urlencode(&request_uri)
        );
        TxUrls {
            response_uri: format!("{base}/v1/auth/eudi/response"),
            page_url: format!("{accounts}/eudi/{}", tx.request_id),
            request_uri,
            wallet_url,
        }
    }
}

fn urlencode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The signed request object (RFC 9101, `typ oauth-authz-req+jwt`) of a transaction: its
/// `x5c` is the verifier's chain without the root, its client id the `x509_hash:` of the leaf.
pub fn request_object(
    tx: &TxView,
    response_uri: &str,
    wallet_nonce: Option<&str>,
    now: i64,
) -> Result<String, String> {
    use base64::{engine::general_purpose::STANDARD, Engine};
    let v = &tx.verifier;
    let mut header = Map::new();
    header.insert("typ".into(), json!("oauth-authz-req+jwt"));
    header.insert(
        "x5c".into(),
        Value::Array(v.chain.iter().map(|c| json!(STANDARD.encode(c))).collect()),
    );
    let algs = json!(["ES256", "EdDSA"]);
    let mut claims = json!({
        "iss": v.client_id,
        "aud": "https://self-issued.me/v2",
        "client_id": v.client_id,
        "response_type": "vp_token",
        "response_mode": "direct_post.jwt",
        "response_uri": response_uri,
        "nonce": tx.nonce,
        "state": tx.oid_state,
        "dcql_query": dcql_query(tx.purpose, &tx.config),
        "client_metadata": {
            "jwks": { "keys": [tx.enc_jwk] },
            "encrypted_response_enc_values_supported": ["A128GCM", "A256GCM"],
            "vp_formats_supported": {
                "dc+sd-jwt": { "sd-jwt_alg_values": algs, "kb-jwt_alg_values": algs },
                "mso_mdoc": { "issuerauth_alg_values": [-7, -8], "deviceauth_alg_values": [-7, -8] },
            },
        },
        "iat": now,
        "exp": tx.expires_at.unix_timestamp(),
    });
    if let Some(o) = claims.as_object_mut() {
        if let Some(n) = wallet_nonce {
            o.insert("wallet_nonce".into(), json!(n));
        }
        if let Some(p) = &tx.purpose_text {
            o.insert("purpose".into(), json!(p));
        }
    }
    let payload = serde_json::to_vec(&claims).map_err(|e| e.to_string())?;
    v.key
        .sign_compact(header, &payload)
        .map_err(|e| e.to_string())
}

/// Why a wallet's answer was refused: an error code of the API and the reason for the log.
#[derive(Debug)]
pub struct Refusal {
    pub code: &'static str,
    pub detail: String,
}

impl Refusal {
    fn new(code: &'static str, detail: impl Into<String>) -> Refusal {
        Refusal {
            code,
            detail: detail.into(),
        }
    }

    fn invalid(e: impl std::fmt::Display) -> Refusal {
        Refusal::new("eudi/invalid_presentation", e.to_string())
    }
}

fn untrusted(e: impl std::fmt::Display) -> Refusal {
    Refusal::new("eudi/untrusted_issuer", e.to_string())
}

/// One cached status list, with when it was fetched.
struct CachedStatus {
    at: Instant,
    list: Arc<StatusList>,
}

/// Checks wallet answers; keeps the issuer keys and status lists it fetched.
pub struct WalletVerifier {
    http: reqwest::Client,
    config: WalletConfig,
    jwks: Mutex<HashMap<String, (Instant, Arc<Value>)>>,
    status: Mutex<HashMap<String, CachedStatus>>,
}

/// A presentation checked, before it is turned into an outcome.
struct Checked {
    anchor: TrustAnchor,
    /// Claims by attribute name (SD-JWT paths or mdoc elements already resolved).
    claims: Map<String, Value>,
    /// A level of assurance the credential states (`low`, `substantial`, `high`), if any.
    level: Option<String>,
}

impl WalletVerifier {
    pub fn new(config: WalletConfig) -> Result<Self, String> {
        let http = crate::net::client(
            Self::reach(&config),
            Duration::from_millis(config.timeout_ms),
        )
        .map_err(|e| format!("wallet client: {e}"))?;
        Ok(WalletVerifier {
            http,
            config,
            jwks: Mutex::new(HashMap::new()),
            status: Mutex::new(HashMap::new()),
        })
    }

    /// The addresses the verifier may fetch from: public ones, and loopback ones when the
    /// operator allowed loopback fetches.
    fn reach(config: &WalletConfig) -> crate::net::Reach {
        if config.allow_loopback_http {
            crate::net::Reach::PublicAndLoopback
        } else {
            crate::net::Reach::Public
        }
    }

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
    async fn anchor_key(
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
    async fn check_status(
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

    /// Decrypts and checks a wallet's `direct_post.jwt` answer for the transaction `open`:
    /// its `state`, every presentation in `vp_token`, and what they say.
    pub async fn check_response(
        &self,
        open: &Opening,
        response: &str,
        response_uri: &str,
        now: i64,
    ) -> Result<WalletOutcome, Refusal> {
        let tx = &open.tx;
        let key = EncryptionKey::from_bytes(&open.enc_key).map_err(Refusal::invalid)?;
        let (_, plain) = key
            .decrypt(response, &[Enc::A128Gcm, Enc::A256Gcm])
            .map_err(|e| Refusal::new("eudi/invalid_response", e.to_string()))?;
        let payload: Value = serde_json::from_slice(&plain)
            .map_err(|_| Refusal::new("eudi/invalid_response", "not JSON"))?;
        let state = payload.get("state").and_then(Value::as_str).unwrap_or("");
        if !tessera_storage::ct_eq(state.as_bytes(), tx.oid_state.as_bytes()) {
            return Err(Refusal::new("eudi/invalid_response", "state mismatch"));
        }
        let vp_token = payload
            .get("vp_token")
            .and_then(Value::as_object)
            .ok_or_else(|| Refusal::new("eudi/invalid_response", "no vp_token object"))?;
        let client_id = tx.verifier.client_id.as_str();
        let thumbprint = PublicKey::from_jwk(&tx.enc_jwk)
            .map_err(Refusal::invalid)?
            .thumbprint();
        let transcript =
            mdoc::session_transcript(client_id, &tx.nonce, Some(&thumbprint), response_uri);
        let mut checked = Vec::new();
        for (id, values) in vp_token {
            let values = values.as_array().ok_or_else(|| {
                Refusal::new("eudi/invalid_response", "vp_token values are arrays")
            })?;
            if values.len() > 4 {
                return Err(Refusal::new(
                    "eudi/invalid_response",
                    "too many presentations",
                ));
            }
            for v in values {
                let text = v.as_str().ok_or_else(|| {
                    Refusal::new("eudi/invalid_response", "a presentation is a string")
                })?;
                let c = match id.as_str() {
                    "pid_sd_jwt" | "pid_age_sd_jwt" => {
                        self.check_sd_jwt(&open.config, text, client_id, &tx.nonce, now)
                            .await?
                    }
                    "pid_mdoc" | "pid_age_mdoc" | "av_mdoc" => {
                        let doctype = if id == "av_mdoc" {
                            AV_DOCTYPE
                        } else {
                            PID_DOCTYPE
                        };
                        self.check_mdoc(&open.config, text, doctype, &transcript, now)
                            .await?
                    }
                    other => {
                        return Err(Refusal::new(
                            "eudi/invalid_response",
                            format!("unknown credential query {other}"),
                        ))
                    }
                };
                checked.push(c);
            }
        }
        let first = checked
            .into_iter()
            .next()
            .ok_or_else(|| Refusal::new("eudi/invalid_response", "no presentation"))?;
        Ok(match tx.purpose {
            EudiPurpose::Login => WalletOutcome::Login(Box::new(identity_of(first, &open.config)?)),
            EudiPurpose::Age => {
                let states = &open.age.supported_member_states;
                let state_ok = states.is_empty()
                    || first
                        .anchor
                        .member_state
                        .as_ref()
                        .is_some_and(|m| states.iter().any(|s| s.eq_ignore_ascii_case(m)));
                WalletOutcome::Age(state_ok.then(|| age_over(&first.claims, now)).flatten())
            }
        })
    }

    async fn check_sd_jwt(
        &self,
        config: &EudiConfig,
        text: &str,
        client_id: &str,
        nonce: &str,
        now: i64,
    ) -> Result<Checked, Refusal> {
        let p = sdjwt::Presentation::parse(text).map_err(Refusal::invalid)?;
        let unverified = p.unverified_claims().map_err(Refusal::invalid)?;
        let iss = unverified.get("iss").and_then(Value::as_str).unwrap_or("");
        let anchor = config
            .trust_anchors
            .iter()
            .find(|a| a.issuer == iss && a.allowed_formats.iter().any(|f| f == "dc+sd-jwt"))
            .ok_or_else(|| untrusted(format!("no trust anchor for issuer {iss}")))?;
        let key = self
            .anchor_key(anchor, &p.issuer_jwt, Some(iss), now)
            .await?;
        let algs = anchor_algs(anchor);
        let verified = sdjwt::verify(
            &p,
            &key,
            &algs,
            &sdjwt::KbExpect {
                aud: client_id,
                nonce,
                now,
                max_age_secs: KB_MAX_AGE,
                allowed: &[Alg::Es256, Alg::EdDsa],
            },
            now,
        )
        .map_err(|e| match e {
            tessera_eudi::Error::Binding(_) => Refusal::new("eudi/binding_mismatch", e.to_string()),
            tessera_eudi::Error::Validity(_) => {
                Refusal::new("eudi/credential_expired", e.to_string())
            }
            other => Refusal::invalid(other),
        })?;
        if !PID_VCTS.contains(&verified.vct.as_str()) {
            return Err(Refusal::invalid(format!(
                "vct {} is not accepted",
                verified.vct
            )));
        }
        if let Some(status) = &verified.status {
            self.check_status(anchor, status, config, now).await?;
        }
        let mut claims = Map::new();
        for name in attributes() {
            let (paths, _) = attribute_paths(name);
            if let Some(v) = paths.iter().find_map(|p| lookup(&verified.claims, p)) {
                claims.insert(name.to_owned(), v.clone());
            }
        }
        let level = verified
            .claims
            .get("assurance_level")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok(Checked {
            anchor: anchor.clone(),
            claims,
            level,
        })
    }

    async fn check_mdoc(
        &self,
        config: &EudiConfig,
        text: &str,
        doctype: &str,
        transcript: &[u8],
        now: i64,
    ) -> Result<Checked, Refusal> {
        let mut matched: Option<TrustAnchor> = None;
        let mut trust = |chain: &[Vec<u8>], alg: Alg| -> tessera_eudi::Result<PublicKey> {
            let mut last = tessera_eudi::Error::Untrusted("no trust anchor takes mdoc".into());
            for anchor in config.trust_anchors.iter().filter(|a| {
                a.allowed_formats.iter().any(|f| f == "mso_mdoc") && anchor_algs(a).contains(&alg)
            }) {
                let KeyResolution::X5c { x5c_roots } = &anchor.key_resolution else {
                    continue;
                };
                let Ok(roots) = anchor_roots(x5c_roots) else {
                    continue;
                };
                match x509::verify_chain(chain, &roots, now, Usage::MdocDocumentSigner) {
                    Ok(key) => {
                        matched = Some(anchor.clone());
                        return Ok(key);
                    }
                    Err(e) => last = e,
                }
            }
            Err(last)
        };
        let docs = mdoc::verify(text, transcript, now, &mut trust).map_err(|e| match e {
            tessera_eudi::Error::Untrusted(_) => untrusted(e),
            tessera_eudi::Error::Binding(_) => Refusal::new("eudi/binding_mismatch", e.to_string()),
            tessera_eudi::Error::Validity(_) => {
                Refusal::new("eudi/credential_expired", e.to_string())
            }
            other => Refusal::invalid(other),
        })?;
        // One document, of the type asked for: so the anchor that verified it is the one
        // `matched` names (the closure runs once per document).
        let anchor = matched.ok_or_else(|| untrusted("no trust anchor matched"))?;
        let mut docs = docs.into_iter();
        let doc = match (docs.next(), docs.next()) {
            (Some(d), None) if d.doctype == doctype => d,
            _ => {
                return Err(Refusal::invalid(format!(
                    "one {doctype} document is asked for"
                )))
            }
        };
        if let Some(status) = mdoc_status(&doc) {
            self.check_status(&anchor, &status, config, now).await?;
        }
        let elements = doc.namespaces.get(doctype).cloned().unwrap_or_default();
        let mut claims = Map::new();
        for name in attributes() {
            let (_, element) = attribute_paths(name);
            if let Some(v) = elements.get(element) {
                claims.insert(name.to_owned(), v.clone());
            }
        }
        Ok(Checked {
            anchor,
            claims,
            level: None,
        })
    }
}

fn mdoc_status(doc: &mdoc::Document) -> Option<StatusRef> {
    doc.status.clone()
}

/// The value at `path` in a processed SD-JWT payload.
fn lookup<'a>(claims: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut v = claims.get(*first)?;
    for p in rest {
        v = v.get(*p)?;
    }
    Some(v)
}

/// The cache key of a status list: its URI and the keys it was checked against (another
/// tenant's anchor for the same URI checks it again).
fn status_key(anchor: &TrustAnchor, uri: &str) -> String {
    let keys = serde_json::to_string(&anchor.key_resolution).unwrap_or_default();
    format!("{uri}\n{keys}")
}

/// A trust anchor's roots, as configured (base64 DER or PEM).
fn anchor_roots(roots: &[String]) -> Result<Vec<Vec<u8>>, Refusal> {
    roots
        .iter()
        .map(|r| x509::root_from_config(r).map_err(untrusted))
        .collect()
}

fn anchor_algs(anchor: &TrustAnchor) -> Vec<Alg> {
    anchor
        .allowed_algs
        .iter()
        .filter_map(|a| Alg::from_name(a).ok())
        .collect()
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

/// Where a `did:web` DID's document is (W3C did:web §3.2): the domain (a `%3A` port decoded),
/// then `/.well-known/did.json` or the path segments and `/did.json`. Loopback hosts are
/// reached over HTTP when allowed by the fetch rule.
pub fn did_web_url(did: &str) -> Option<String> {
    let rest = did.strip_prefix("did:web:")?;
    let mut parts = rest.split(':');
    let host = parts.next()?.replace("%3A", ":").replace("%3a", ":");
    if host.is_empty() || host.contains('/') {
        return None;
    }
    let path: Vec<&str> = parts.collect();
    // Loopback hosts are reached over HTTP (and only when the operator allows loopback
    // fetches at all); everything else over HTTPS.
    let name = match host.rsplit_once(':') {
        Some((h, port)) if !h.is_empty() && port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host.as_str(),
    };
    let loopback = match url::Host::parse(name) {
        Ok(url::Host::Domain(d)) => d == "localhost",
        Ok(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Ok(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Err(_) => return None,
    };
    let scheme = if loopback { "http" } else { "https" };
    Some(if path.is_empty() {
        format!("{scheme}://{host}/.well-known/did.json")
    } else {
        format!("{scheme}://{host}/{}/did.json", path.join("/"))
    })
}

/// Whether the holder is at least [`AGE_THRESHOLD`]: the attested flag, else from the date of
/// birth; `None` when neither was disclosed.
fn age_over(claims: &Map<String, Value>, now: i64) -> Option<bool> {
    if let Some(b) = claims.get("age_over_18").and_then(Value::as_bool) {
        return Some(b);
    }
    let born = claims.get("birth_date").and_then(Value::as_str)?;
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let born = time::Date::parse(born.get(..10)?, &format).ok()?;
    let today = time::OffsetDateTime::from_unix_timestamp(now).ok()?.date();
    let mut age = today.year() - born.year();
    if (today.month() as u8, today.day()) < (born.month() as u8, born.day()) {
        age -= 1;
    }
    Some(age >= i32::from(AGE_THRESHOLD))
}

/// The identity of a checked PID: its anchor, what identifies the person, the requested
/// attributes, the level.
fn identity_of(c: Checked, config: &EudiConfig) -> Result<WalletIdentity, Refusal> {
    let mut parts = Vec::new();
    for name in IDENTIFYING {
        let v = c
            .claims
            .get(name)
            .ok_or_else(|| Refusal::invalid(format!("{name} was not disclosed")))?;
        parts.push(match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    }
    let identifier = parts.join("\u{1f}");
    // A level the credential states lowers the anchor's cap; without one the cap holds.
    let cap = Eidas::parse(&c.anchor.max_assurance_level).unwrap_or(Eidas::High);
    let level = c
        .level
        .as_deref()
        .and_then(Eidas::parse)
        .map_or(cap, |l| l.min(cap));
    let email = c
        .claims
        .get("email")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let claims: Map<String, Value> = c
        .claims
        .into_iter()
        .filter(|(k, _)| config.requested_attributes.contains(k))
        .collect();
    Ok(WalletIdentity {
        issuer: c.anchor.issuer,
        identifier,
        claims,
        level,
        email,
    })
}

#[cfg(test)]
mod tests;
