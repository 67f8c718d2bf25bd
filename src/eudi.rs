//! The verifier's side of OpenID4VP 1.0 that runs off the tenant actors: the signed request
//! object with its DCQL query, and the checks of a wallet's encrypted answer (JWE, SD-JWT VC
//! and mdoc presentations, issuer keys by `x5c`, `jwks_uri` or `did:web`, token status lists
//! under the tenant's `on_status_unavailable` policy).
//!
//! One HTTP client with a timeout and no redirects serves the key and status fetches; each
//! answer is read up to 1 MiB. Issuer key sets and status lists are cached by URL.
//!
//! This module checks a wallet's answer; what a transaction asks of a wallet is
//! `eudi/request.rs`'s, what the PID holds `eudi/pid.rs`'s, and what the verifier fetches
//! from issuers `eudi/issuers.rs`'s.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::{Map, Value};
use tessera_actors::tenant::{
    eudi::{Eidas, EudiPurpose, Opening, WalletIdentity, WalletOutcome, AGE_THRESHOLD},
    settings::{EudiConfig, KeyResolution, TrustAnchor},
};
use tessera_eudi::{
    jose::{Alg, Enc, EncryptionKey, PublicKey},
    mdoc, sdjwt,
    status::{StatusList, StatusRef},
    x509::{self, Usage},
};

use crate::config::WalletConfig;

mod issuers;
mod pid;
mod request;

use pid::{attribute_paths, attributes, IDENTIFYING};
pub use pid::{AV_DOCTYPE, PID_DOCTYPE, PID_VCTS};
pub use request::{dcql_query, request_object, TxUrls};

const MAX_ANSWER: usize = 1 << 20;
/// How old a key-binding JWT (or nothing else) may be, in seconds.
const KB_MAX_AGE: i64 = 300;
/// Status lists (and key documents) kept at most.
const MAX_CACHED: usize = 1024;
/// How long a status list is used without asking again when its token names no `ttl`.
const DEFAULT_STATUS_TTL: u64 = 300;

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
