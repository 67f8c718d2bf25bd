//! SD-JWT VC presentations (RFC 9901 and the SD-JWT VC draft): the issuer-signed JWT with
//! `typ: dc+sd-jwt`, the Disclosures the holder chose to reveal, and the Key Binding JWT that
//! ties them to this verifier (`aud`), this transaction (`nonce`) and these exact bytes
//! (`sd_hash`).
//!
//! Only SHA-256 is accepted as `_sd_alg`. Disclosures are checked as RFC 9901 §7.1 asks: each
//! one well formed and referenced exactly once, no digest repeated, no claim name clashing.

use std::collections::{HashMap, HashSet};

use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use serde_json::{Map, Value};

use crate::jose::{Alg, Jws, PublicKey, SigningKey};
use crate::status::StatusRef;
use crate::{b64d, b64e, malformed, numeric_date, sha256, Error, Result};

/// The header `typ` of an SD-JWT VC.
pub const TYP: &str = "dc+sd-jwt";
/// The `typ` earlier SD-JWT VC drafts used; still accepted.
pub const LEGACY_TYP: &str = "vc+sd-jwt";
/// The header `typ` of a Key Binding JWT.
pub const KB_TYP: &str = "kb+jwt";
/// At most this many Disclosures in one presentation.
pub const MAX_DISCLOSURES: usize = 64;
/// Clock skew allowed on `exp`, `nbf` and a KB-JWT `iat` in the future (seconds).
pub const SKEW_SECS: i64 = 60;
/// Nesting depth beyond which a payload (with its Disclosures expanded) is refused.
const MAX_DEPTH: usize = 64;

/// A presentation `<issuer-jwt>~<disclosure>~...~<kb-jwt>` split and decoded, nothing trusted
/// yet.
#[derive(Clone, Debug)]
pub struct Presentation {
    /// The issuer-signed JWT.
    pub issuer_jwt: Jws,
    /// The Disclosures, as sent (base64url text).
    pub disclosures: Vec<String>,
    /// The Key Binding JWT, when the presentation ends with one.
    pub kb_jwt: Option<Jws>,
    /// The text up to and including the last `~`: what `sd_hash` covers.
    sd_jwt: String,
}

impl Presentation {
    /// Splits `text` at `~`: the issuer-signed JWT, then the Disclosures, then the KB-JWT (or
    /// nothing, when the text ends with `~`). At most 64 Disclosures; empty ones are refused.
    pub fn parse(text: &str) -> Result<Presentation> {
        let last = text
            .rfind('~')
            .ok_or_else(|| malformed("an SD-JWT has at least one '~'"))?;
        let (sd_jwt, kb) = text.split_at(last + 1);
        let mut parts = sd_jwt[..last].split('~');
        let issuer = parts.next().unwrap_or_default();
        let disclosures: Vec<String> = parts.map(str::to_string).collect();
        if disclosures.len() > MAX_DISCLOSURES {
            return Err(malformed(format!(
                "more than {MAX_DISCLOSURES} disclosures"
            )));
        }
        if disclosures.iter().any(String::is_empty) {
            return Err(malformed("an empty disclosure"));
        }
        let kb_jwt = if kb.is_empty() {
            None
        } else {
            Some(Jws::decode(kb)?)
        };
        Ok(Presentation {
            issuer_jwt: Jws::decode(issuer)?,
            disclosures,
            kb_jwt,
            sd_jwt: sd_jwt.to_string(),
        })
    }

    /// The issuer-signed JWT's payload before any check (to find `iss` and pick the key).
    pub fn unverified_claims(&self) -> Result<Map<String, Value>> {
        self.issuer_jwt.claims()
    }

    /// The issuer-signed JWT and the Disclosures, each followed by `~`: the `sd_hash` input.
    pub fn sd_jwt(&self) -> &str {
        &self.sd_jwt
    }
}

/// What the Key Binding JWT must show for this transaction.
#[derive(Clone, Copy, Debug)]
pub struct KbExpect<'a> {
    /// The verifier's identifier, to match `aud` exactly.
    pub aud: &'a str,
    /// The transaction's nonce, to match `nonce` exactly.
    pub nonce: &'a str,
    /// The current time (Unix seconds).
    pub now: i64,
    /// How old the KB-JWT's `iat` may be (seconds).
    pub max_age_secs: i64,
    /// The algorithms the holder may sign with.
    pub allowed: &'a [Alg],
}

/// A presentation that passed every check.
#[derive(Clone, Debug)]
pub struct Verified {
    /// The issuer (`iss`).
    pub iss: String,
    /// The credential type (`vct`).
    pub vct: String,
    /// The processed payload: all disclosed claims in place, `_sd`/`_sd_alg`/`...` removed.
    pub claims: Map<String, Value>,
    /// The holder's key from `cnf.jwk`, which signed the KB-JWT.
    pub holder: PublicKey,
    /// Where to check revocation, when the credential says.
    pub status: Option<StatusRef>,
    /// The credential's expiry (Unix seconds), when it has one.
    pub exp: Option<i64>,
    /// The issuer's signature algorithm.
    pub alg: Alg,
}

/// The base64url SHA-256 digest of a Disclosure (over its ASCII text, RFC 9901 §4.2.3).
pub fn digest(disclosure: &str) -> String {
    b64e(sha256(disclosure.as_bytes()))
}

/// Claims an SD-JWT VC never makes selectively disclosable.
pub const NEVER_DISCLOSED: [&str; 7] =
    ["iss", "nbf", "exp", "cnf", "vct", "vct#integrity", "status"];

/// A decoded Disclosure: `[salt, name, value]` for an object property, `[salt, value]` for an
/// array element.
struct Disclosure {
    name: Option<String>,
    value: Value,
}

fn decode_disclosure(text: &str) -> Result<Disclosure> {
    let array: Vec<Value> = serde_json::from_slice(&b64d(text)?)
        .map_err(|_| malformed("a disclosure is not a JSON array"))?;
    let salt_ok = array.first().is_some_and(Value::is_string);
    match (salt_ok, array.len()) {
        (true, 3) => {
            let mut it = array.into_iter().skip(1);
            let name = it.next().and_then(|n| n.as_str().map(str::to_string));
            let value = it.next().unwrap_or_default();
            match name {
                Some(n) if n == "_sd" || n == "..." => {
                    Err(malformed(format!("a disclosure of the reserved name {n}")))
                }
                // SD-JWT VC §3.2.2.2: these stay in the clear, so a holder cannot leave out
                // its credential's expiry or status by not disclosing them.
                Some(n) if NEVER_DISCLOSED.contains(&n.as_str()) => Err(malformed(format!(
                    "{n} must not be selectively disclosable"
                ))),
                Some(n) => Ok(Disclosure {
                    name: Some(n),
                    value,
                }),
                None => Err(malformed("a disclosure's claim name must be a string")),
            }
        }
        (true, 2) => Ok(Disclosure {
            name: None,
            value: array.into_iter().nth(1).unwrap_or_default(),
        }),
        _ => Err(malformed(
            "a disclosure is [salt, name, value] or [salt, value]",
        )),
    }
}

/// Replaces embedded digests with their disclosed values, recursively.
struct Processor {
    /// Disclosures by digest, taken out as they are used.
    pending: HashMap<String, Disclosure>,
    /// Every digest met so far in the payload and in disclosed values.
    seen: HashSet<String>,
}

impl Processor {
    fn see(&mut self, digest: &str) -> Result<Option<Disclosure>> {
        if !self.seen.insert(digest.to_string()) {
            return Err(Error::Digest(format!(
                "digest {digest} appears more than once"
            )));
        }
        Ok(self.pending.remove(digest))
    }

    fn value(&mut self, value: Value, depth: usize) -> Result<Value> {
        if depth > MAX_DEPTH {
            return Err(malformed("payload nested too deeply"));
        }
        match value {
            Value::Object(o) => self.object(o, depth).map(Value::Object),
            Value::Array(a) => self.array(a, depth).map(Value::Array),
            other => Ok(other),
        }
    }

    fn object(
        &mut self,
        mut object: Map<String, Value>,
        depth: usize,
    ) -> Result<Map<String, Value>> {
        let digests = match object.remove("_sd") {
            None => Vec::new(),
            Some(Value::Array(list)) => list
                .into_iter()
                .map(|d| match d {
                    Value::String(s) => Ok(s),
                    _ => Err(malformed("_sd holds digest strings")),
                })
                .collect::<Result<Vec<_>>>()?,
            Some(_) => return Err(malformed("_sd must be an array")),
        };
        let mut out = Map::new();
        for (name, value) in object {
            out.insert(name, self.value(value, depth + 1)?);
        }
        for d in digests {
            let Some(disclosure) = self.see(&d)? else {
                continue; // undisclosed claim or decoy
            };
            let Some(name) = disclosure.name else {
                return Err(malformed("an array-element disclosure referenced from _sd"));
            };
            if out.contains_key(&name) {
                return Err(malformed(format!("disclosed claim {name} already exists")));
            }
            let value = self.value(disclosure.value, depth + 1)?;
            out.insert(name, value);
        }
        Ok(out)
    }

    fn array(&mut self, array: Vec<Value>, depth: usize) -> Result<Vec<Value>> {
        let mut out = Vec::with_capacity(array.len());
        for element in array {
            let digest = match &element {
                Value::Object(o) if o.contains_key("...") => {
                    if o.len() != 1 {
                        return Err(malformed("an array digest object has only the key ..."));
                    }
                    match o.get("...") {
                        Some(Value::String(d)) => Some(d.clone()),
                        _ => return Err(malformed("an array digest must be a string")),
                    }
                }
                _ => None,
            };
            match digest {
                None => out.push(self.value(element, depth + 1)?),
                Some(d) => match self.see(&d)? {
                    None => {} // undisclosed element or decoy: dropped
                    Some(Disclosure { name: None, value }) => {
                        out.push(self.value(value, depth + 1)?);
                    }
                    Some(Disclosure { name: Some(_), .. }) => {
                        return Err(malformed(
                            "an object-property disclosure referenced from an array",
                        ))
                    }
                },
            }
        }
        Ok(out)
    }
}

/// Checks `_sd_alg` and the Disclosures against the issuer-signed payload and answers the
/// processed payload (RFC 9901 §7.1 step 3 to 5).
fn process_disclosures(p: &Presentation) -> Result<Map<String, Value>> {
    let mut claims = p.issuer_jwt.claims()?;
    match claims.remove("_sd_alg") {
        None => {}
        Some(Value::String(a)) if a == "sha-256" => {}
        Some(other) => return Err(Error::Unsupported(format!("_sd_alg {other}"))),
    }
    let mut pending = HashMap::new();
    for text in &p.disclosures {
        let disclosure = decode_disclosure(text)?;
        if pending.insert(digest(text), disclosure).is_some() {
            return Err(Error::Digest("the same disclosure is sent twice".into()));
        }
    }
    let mut processor = Processor {
        pending,
        seen: HashSet::new(),
    };
    let claims = processor.object(claims, 0)?;
    if !processor.pending.is_empty() {
        return Err(Error::Digest(format!(
            "{} disclosure(s) not referenced by the credential",
            processor.pending.len()
        )));
    }
    Ok(claims)
}

/// Checks the Key Binding JWT: `typ`, algorithm, signature by `holder`, `aud`, `nonce`, `iat`
/// window and `sd_hash` over the presentation.
fn check_kb(p: &Presentation, holder: &PublicKey, kb: &KbExpect<'_>) -> Result<()> {
    let jwt = p
        .kb_jwt
        .as_ref()
        .ok_or_else(|| Error::Binding("a key-binding JWT is required".into()))?;
    if jwt.header_str("typ") != Some(KB_TYP) {
        return Err(Error::Unsupported(format!(
            "key-binding JWT typ {}",
            jwt.header_str("typ").unwrap_or("-")
        )));
    }
    jwt.verify(holder, kb.allowed)?;
    let claims = jwt.claims()?;
    let text = |name: &str| claims.get(name).and_then(Value::as_str);
    if text("aud") != Some(kb.aud) {
        return Err(Error::Binding("key-binding JWT aud".into()));
    }
    if text("nonce") != Some(kb.nonce) {
        return Err(Error::Binding("key-binding JWT nonce".into()));
    }
    let iat = numeric_date(&claims, "iat")?.ok_or_else(|| malformed("key-binding JWT iat"))?;
    if iat < kb.now.saturating_sub(kb.max_age_secs) || iat > kb.now.saturating_add(SKEW_SECS) {
        return Err(Error::Validity(format!(
            "key-binding JWT iat {iat} outside the accepted window"
        )));
    }
    if text("sd_hash") != Some(digest(&p.sd_jwt).as_str()) {
        return Err(Error::Binding(
            "sd_hash does not match the presentation".into(),
        ));
    }
    Ok(())
}

/// Checks, in this order: issuer signature with `issuer_key` and alg in `allowed_algs`; header
/// typ `dc+sd-jwt` (or legacy `vc+sd-jwt`); `_sd_alg` absent or sha-256; every Disclosure well
/// formed and referenced exactly once (recursively), no digest repeated, no claim name clash;
/// `exp` > now and `nbf` <= now when present (60 s skew); `iss` and `vct` present; `cnf.jwk` a
/// valid public key; the key-binding JWT (`typ: kb+jwt`, alg in `kb.allowed`, signed by the
/// `cnf` key, `aud`, `nonce`, `iat` within [now - max_age_secs, now + 60], `sd_hash`).
pub fn verify(
    p: &Presentation,
    issuer_key: &PublicKey,
    allowed_algs: &[Alg],
    kb: &KbExpect<'_>,
    now: i64,
) -> Result<Verified> {
    p.issuer_jwt.verify(issuer_key, allowed_algs)?;
    let alg = p.issuer_jwt.alg()?;
    match p.issuer_jwt.header_str("typ") {
        Some(TYP) | Some(LEGACY_TYP) => {}
        other => {
            return Err(Error::Unsupported(format!(
                "SD-JWT VC typ {}",
                other.unwrap_or("-")
            )))
        }
    }
    let claims = process_disclosures(p)?;
    let exp = numeric_date(&claims, "exp")?;
    if let Some(exp) = exp {
        if exp.saturating_add(SKEW_SECS) <= now {
            return Err(Error::Validity(format!("credential expired at {exp}")));
        }
    }
    if let Some(nbf) = numeric_date(&claims, "nbf")? {
        if nbf.saturating_sub(SKEW_SECS) > now {
            return Err(Error::Validity(format!(
                "credential not valid before {nbf}"
            )));
        }
    }
    let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_string);
    let vct = text("vct").ok_or_else(|| malformed("vct"))?;
    let iss = text("iss").ok_or_else(|| malformed("iss"))?;
    let jwk = claims
        .get("cnf")
        .and_then(|c| c.get("jwk"))
        .ok_or_else(|| malformed("cnf.jwk"))?;
    let holder = PublicKey::from_jwk(jwk)?;
    check_kb(p, &holder, kb)?;
    let status = claims
        .get("status")
        .map(StatusRef::from_claim)
        .transpose()?
        .flatten();
    Ok(Verified {
        iss,
        vct,
        claims,
        holder,
        status,
        exp,
        alg,
    })
}

fn salt() -> Result<String> {
    let mut bytes = [0u8; 16];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| Error::Unsupported("randomness".into()))?;
    Ok(b64e(bytes))
}

/// Issues an SD-JWT VC: header `typ: dc+sd-jwt`, then the `extra_header` members (x5c or kid;
/// they win over `typ`); payload = `claims` where each top-level claim named in `disclosable`
/// is replaced by a digest in `_sd` (random 16-byte salt), `_sd_alg: sha-256`,
/// `cnf: {jwk: holder.to_jwk()}`. Answers `<jwt>~<d1>~...~`. A name in `disclosable` that is
/// not among `claims` is an error.
pub fn issue(
    issuer: &SigningKey,
    extra_header: Map<String, Value>,
    mut claims: Map<String, Value>,
    disclosable: &[&str],
    holder: &PublicKey,
) -> Result<String> {
    if claims.contains_key("_sd") || claims.contains_key("_sd_alg") {
        return Err(malformed("claims must not carry _sd or _sd_alg"));
    }
    let mut disclosures = Vec::with_capacity(disclosable.len());
    let mut digests = Vec::with_capacity(disclosable.len());
    for &name in disclosable {
        if name == "_sd" || name == "..." || name == "cnf" {
            return Err(malformed(format!("{name} cannot be selectively disclosed")));
        }
        let value = claims
            .remove(name)
            .ok_or_else(|| malformed(format!("no claim {name} to make disclosable")))?;
        let array = Value::Array(vec![Value::from(salt()?), Value::from(name), value]);
        let text = b64e(serde_json::to_vec(&array).map_err(|_| malformed("disclosure"))?);
        digests.push(digest(&text));
        disclosures.push(text);
    }
    digests.sort();
    if !digests.is_empty() {
        claims.insert(
            "_sd".into(),
            Value::Array(digests.into_iter().map(Value::from).collect()),
        );
    }
    claims.insert("_sd_alg".into(), Value::from("sha-256"));
    let mut cnf = Map::new();
    cnf.insert("jwk".into(), holder.to_jwk());
    claims.insert("cnf".into(), Value::Object(cnf));
    let mut header = Map::new();
    header.insert("typ".into(), Value::from(TYP));
    header.extend(extra_header);
    let payload = serde_json::to_vec(&claims).map_err(|_| malformed("claims"))?;
    let mut out = issuer.sign_compact(header, &payload)?;
    out.push('~');
    for d in disclosures {
        out.push_str(&d);
        out.push('~');
    }
    Ok(out)
}

/// Keeps only the disclosures whose claim name is in `disclose` (names without a Disclosure,
/// such as always-visible claims, are ignored), appends a KB-JWT signed by `holder` with
/// `aud`, `nonce`, `iat` and the correct `sd_hash`.
pub fn present(
    issued: &str,
    disclose: &[&str],
    holder: &SigningKey,
    aud: &str,
    nonce: &str,
    iat: i64,
) -> Result<String> {
    let parsed = Presentation::parse(issued)?;
    if parsed.kb_jwt.is_some() {
        return Err(malformed("an issued SD-JWT carries no key-binding JWT"));
    }
    let jwt = issued.split('~').next().unwrap_or_default();
    let mut sd_jwt = format!("{jwt}~");
    for text in &parsed.disclosures {
        let d = decode_disclosure(text)?;
        if d.name.as_deref().is_some_and(|n| disclose.contains(&n)) {
            sd_jwt.push_str(text);
            sd_jwt.push('~');
        }
    }
    let mut header = Map::new();
    header.insert("typ".into(), Value::from(KB_TYP));
    let mut claims = Map::new();
    claims.insert("iat".into(), Value::from(iat));
    claims.insert("aud".into(), Value::from(aud));
    claims.insert("nonce".into(), Value::from(nonce));
    claims.insert("sd_hash".into(), Value::from(digest(&sd_jwt)));
    let payload = serde_json::to_vec(&claims).map_err(|_| malformed("key-binding claims"))?;
    let kb = holder.sign_compact(header, &payload)?;
    Ok(sd_jwt + &kb)
}

#[cfg(test)]
mod tests;
