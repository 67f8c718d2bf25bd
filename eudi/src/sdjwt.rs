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
mod tests {
    use super::*;
    use serde_json::json;

    /// RFC 9901 §4.2.1 / §4.2.3: the `family_name` Disclosure and its digest.
    #[test]
    fn rfc9901_digest_vector() {
        let d = "WyJfMjZiYzRMVC1hYzZxMktJNmNCVzVlcyIsICJmYW1pbHlfbmFtZSIsICJNw7ZiaXVzIl0";
        assert_eq!(digest(d), "X9yH0Ajrdm1Oij4tWso9UzzKJvPoDxwmuEcO3XAdRC0");
        let decoded = decode_disclosure(d).unwrap();
        assert_eq!(decoded.name.as_deref(), Some("family_name"));
        assert_eq!(decoded.value, json!("Möbius"));
        // §4.2.2: the array-element Disclosure for "FR".
        let fr = decode_disclosure("WyJsa2x4RjVqTVlsR1RQVW92TU5JdkNBIiwgIkZSIl0").unwrap();
        assert_eq!((fr.name, fr.value), (None, json!("FR")));
    }

    /// RFC 9901 §5.2's SD-JWT+KB, tilde-separated (line breaks removed).
    const RFC_PRESENTATION: &str = concat!(
        "eyJhbGciOiAiRVMyNTYiLCAidHlwIjogImV4YW1wbGUrc2Qtand0In0.eyJfc2QiOiBb",
        "IkNyUWU3UzVrcUJBSHQtbk1ZWGdjNmJkdDJTSDVhVFkxc1VfTS1QZ2tqUEkiLCAiSnpZ",
        "akg0c3ZsaUgwUjNQeUVNZmVadTZKdDY5dTVxZWhabzdGN0VQWWxTRSIsICJQb3JGYnBL",
        "dVZ1Nnh5bUphZ3ZrRnNGWEFiUm9jMkpHbEFVQTJCQTRvN2NJIiwgIlRHZjRvTGJnd2Q1",
        "SlFhSHlLVlFaVTlVZEdFMHc1cnREc3JaemZVYW9tTG8iLCAiWFFfM2tQS3QxWHlYN0tB",
        "TmtxVlI2eVoyVmE1TnJQSXZQWWJ5TXZSS0JNTSIsICJYekZyendzY002R242Q0pEYzZ2",
        "Vks4QmtNbmZHOHZPU0tmcFBJWmRBZmRFIiwgImdiT3NJNEVkcTJ4Mkt3LXc1d1BFemFr",
        "b2I5aFYxY1JEMEFUTjNvUUw5Sk0iLCAianN1OXlWdWx3UVFsaEZsTV8zSmx6TWFTRnpn",
        "bGhRRzBEcGZheVF3TFVLNCJdLCAiaXNzIjogImh0dHBzOi8vaXNzdWVyLmV4YW1wbGUu",
        "Y29tIiwgImlhdCI6IDE2ODMwMDAwMDAsICJleHAiOiAxODgzMDAwMDAwLCAic3ViIjog",
        "InVzZXJfNDIiLCAibmF0aW9uYWxpdGllcyI6IFt7Ii4uLiI6ICJwRm5kamtaX1ZDem15",
        "VGE2VWpsWm8zZGgta284YUlLUWM5RGxHemhhVllvIn0sIHsiLi4uIjogIjdDZjZKa1B1",
        "ZHJ5M2xjYndIZ2VaOGtoQXYxVTFPU2xlclAwVmtCSnJXWjAifV0sICJfc2RfYWxnIjog",
        "InNoYS0yNTYiLCAiY25mIjogeyJqd2siOiB7Imt0eSI6ICJFQyIsICJjcnYiOiAiUC0y",
        "NTYiLCAieCI6ICJUQ0FFUjE5WnZ1M09IRjRqNFc0dmZTVm9ISVAxSUxpbERsczd2Q2VH",
        "ZW1jIiwgInkiOiAiWnhqaVdXYlpNUUdIVldLVlE0aGJTSWlyc1ZmdWVjQ0U2dDRqVDlG",
        "MkhaUSJ9fX0.MczwjBFGtzf-6WMT-hIvYbkb11NrV1WMO-jTijpMPNbswNzZ87wY2uHz",
        "-CXo6R04b7jYrpj9mNRAvVssXou1iw~WyJlbHVWNU9nM2dTTklJOEVZbnN4QV9BIiwgI",
        "mZhbWlseV9uYW1lIiwgIkRvZSJd~WyJBSngtMDk1VlBycFR0TjRRTU9xUk9BIiwgImFk",
        "ZHJlc3MiLCB7InN0cmVldF9hZGRyZXNzIjogIjEyMyBNYWluIFN0IiwgImxvY2FsaXR5",
        "IjogIkFueXRvd24iLCAicmVnaW9uIjogIkFueXN0YXRlIiwgImNvdW50cnkiOiAiVVMi",
        "fV0~WyIyR0xDNDJzS1F2ZUNmR2ZyeU5STjl3IiwgImdpdmVuX25hbWUiLCAiSm9obiJd",
        "~WyJsa2x4RjVqTVlsR1RQVW92TU5JdkNBIiwgIlVTIl0~eyJhbGciOiAiRVMyNTYiLCA",
        "idHlwIjogImtiK2p3dCJ9.eyJub25jZSI6ICIxMjM0NTY3ODkwIiwgImF1ZCI6ICJodH",
        "RwczovL3ZlcmlmaWVyLmV4YW1wbGUub3JnIiwgImlhdCI6IDE3NDg1MzcyNDQsICJzZF",
        "9oYXNoIjogIjBfQWYtMkItRWhMV1g1eWRoX3cyeHp3bU82aU02NkJfMlFDRWFuSTRmVV",
        "kifQ.T3SIus2OidNl41nmVkTZVCKKhOAX97aOldMyHFiYjHm261eLiJ1YiuONFiMN8Ql",
        "CmYzDlBLAdPvrXh52KaLgUQ"
    );

    /// RFC 9901 Appendix A.5: the issuer key of the examples.
    fn rfc_issuer_key() -> PublicKey {
        PublicKey::from_jwk(&json!({
            "kty": "EC", "crv": "P-256",
            "x": "b28d4MwZMjw8-00CG4xfnn9SLMVMM19SlqZpVb_uNtQ",
            "y": "Xv5zWwuoaTgdS6hV43yI6gBwTnjukmFQQnJ_kCxzqk8"
        }))
        .unwrap()
    }

    /// RFC 9901 §5: the example is typed `example+sd-jwt` and has no `vct`, so `verify`
    /// refuses it as an SD-JWT VC; every other step is checked here against the RFC: the
    /// issuer signature, the Disclosures giving §5.2's processed payload, and the KB-JWT.
    #[test]
    fn rfc9901_section5_example() {
        let p = Presentation::parse(RFC_PRESENTATION).unwrap();
        assert_eq!(p.disclosures.len(), 4);
        p.issuer_jwt
            .verify(&rfc_issuer_key(), &[Alg::Es256])
            .unwrap();
        let claims = process_disclosures(&p).unwrap();
        assert_eq!(
            Value::Object(claims.clone()),
            json!({
                "iss": "https://issuer.example.com",
                "iat": 1683000000,
                "exp": 1883000000,
                "sub": "user_42",
                "nationalities": ["US"],
                "cnf": {"jwk": {
                    "kty": "EC", "crv": "P-256",
                    "x": "TCAER19Zvu3OHF4j4W4vfSVoHIP1ILilDls7vCeGemc",
                    "y": "ZxjiWWbZMQGHVWKVQ4hbSIirsVfuecCE6t4jT9F2HZQ"
                }},
                "family_name": "Doe",
                "address": {
                    "street_address": "123 Main St", "locality": "Anytown",
                    "region": "Anystate", "country": "US"
                },
                "given_name": "John"
            })
        );
        let holder = PublicKey::from_jwk(&claims["cnf"]["jwk"]).unwrap();
        let kb = KbExpect {
            aud: "https://verifier.example.org",
            nonce: "1234567890",
            now: 1748537244,
            max_age_secs: 300,
            allowed: &[Alg::Es256],
        };
        check_kb(&p, &holder, &kb).unwrap();
        assert!(matches!(
            check_kb(&p, &holder, &KbExpect { nonce: "x", ..kb }),
            Err(Error::Binding(_))
        ));
        assert!(matches!(
            verify(&p, &rfc_issuer_key(), &[Alg::Es256], &kb, 1748537244),
            Err(Error::Unsupported(_))
        ));
        // The array-element digest of "US" (§5.1) is the first `...` of `nationalities`.
        assert_eq!(
            digest("WyJsa2x4RjVqTVlsR1RQVW92TU5JdkNBIiwgIlVTIl0"),
            "pFndjkZ_VCzmyTa6UjlZo3dh-ko8aIKQc9DlGzhaVYo"
        );
    }

    const AUD: &str = "x509_san_dns:verifier.example";
    const NONCE: &str = "n-0S6_WzA2Mj";
    const NOW: i64 = 1_800_000_000;

    fn expect() -> KbExpect<'static> {
        KbExpect {
            aud: AUD,
            nonce: NONCE,
            now: NOW,
            max_age_secs: 300,
            allowed: &[Alg::Es256, Alg::EdDsa],
        }
    }

    fn claims() -> Map<String, Value> {
        json!({
            "iss": "https://pid.issuer.example",
            "vct": "urn:eudi:pid:1",
            "iat": NOW - 1000,
            "exp": NOW + 86400,
            "age_over_18": true,
            "given_name": "Erika",
            "family_name": "Mustermann",
            "status": {"status_list": {"idx": 42, "uri": "https://status.example/1"}}
        })
        .as_object()
        .unwrap()
        .clone()
    }

    struct Setup {
        issuer: SigningKey,
        holder: SigningKey,
        issued: String,
    }

    fn setup(alg: Alg, claims: Map<String, Value>) -> Setup {
        let issuer = SigningKey::generate(alg).unwrap();
        let holder = SigningKey::generate(Alg::Es256).unwrap();
        let mut header = Map::new();
        header.insert("kid".into(), json!("issuer-1"));
        let issued = issue(
            &issuer,
            header,
            claims,
            &["age_over_18", "given_name", "family_name"],
            &holder.public_key(),
        )
        .unwrap();
        Setup {
            issuer,
            holder,
            issued,
        }
    }

    fn check(s: &Setup, presentation: &str) -> Result<Verified> {
        let p = Presentation::parse(presentation)?;
        verify(
            &p,
            &s.issuer.public_key(),
            &[Alg::Es256, Alg::EdDsa],
            &expect(),
            NOW,
        )
    }

    fn present_default(s: &Setup) -> String {
        present(&s.issued, &["age_over_18"], &s.holder, AUD, NONCE, NOW - 5).unwrap()
    }

    /// SD-JWT VC keeps `status`, `exp` and the like in the clear: a disclosure of one (an
    /// issuer that made it selectively disclosable, so a holder could leave it out) is refused.
    #[test]
    fn status_and_expiry_are_never_selectively_disclosable() {
        let disclosure = |name: &str| b64e(serde_json::to_vec(&json!(["salt", name, 1])).unwrap());
        for name in NEVER_DISCLOSED {
            assert!(
                matches!(
                    decode_disclosure(&disclosure(name)),
                    Err(Error::Malformed(_))
                ),
                "{name}"
            );
        }
        assert!(decode_disclosure(&disclosure("given_name")).is_ok());
    }

    #[test]
    fn round_trip_es256_and_eddsa() {
        for alg in [Alg::Es256, Alg::EdDsa] {
            let s = setup(alg, claims());
            let issued = Presentation::parse(&s.issued).unwrap();
            assert_eq!(issued.disclosures.len(), 3);
            assert!(issued.kb_jwt.is_none());
            assert_eq!(issued.issuer_jwt.header_str("typ"), Some(TYP));
            assert_eq!(issued.issuer_jwt.header_str("kid"), Some("issuer-1"));
            let raw = issued.unverified_claims().unwrap();
            assert!(raw.get("age_over_18").is_none());
            assert_eq!(raw["_sd"].as_array().unwrap().len(), 3);

            let text = present_default(&s);
            let v = check(&s, &text).unwrap();
            assert_eq!(v.iss, "https://pid.issuer.example");
            assert_eq!(v.vct, "urn:eudi:pid:1");
            assert_eq!(v.alg, alg);
            assert_eq!(v.exp, Some(NOW + 86400));
            assert_eq!(v.holder, s.holder.public_key());
            assert_eq!(
                v.status,
                Some(StatusRef {
                    uri: "https://status.example/1".into(),
                    idx: 42
                })
            );
            assert_eq!(v.claims["age_over_18"], json!(true));
            for hidden in ["given_name", "family_name", "_sd", "_sd_alg"] {
                assert!(!v.claims.contains_key(hidden), "{hidden}");
            }

            let all = present(
                &s.issued,
                &["age_over_18", "given_name", "family_name", "iss"],
                &s.holder,
                AUD,
                NONCE,
                NOW,
            )
            .unwrap();
            let v = check(&s, &all).unwrap();
            assert_eq!(v.claims["given_name"], json!("Erika"));
            assert_eq!(v.claims["family_name"], json!("Mustermann"));

            let none = present(&s.issued, &[], &s.holder, AUD, NONCE, NOW).unwrap();
            let v = check(&s, &none).unwrap();
            assert!(!v.claims.contains_key("age_over_18"));
        }
    }

    #[test]
    fn legacy_typ_is_accepted_other_typ_refused() {
        let mut s = setup(Alg::Es256, claims());
        for (typ, ok) in [
            ("vc+sd-jwt", true),
            ("JWT", false),
            ("kb+jwt", false),
            ("example+sd-jwt", false),
        ] {
            let mut header = Map::new();
            header.insert("typ".into(), json!(typ));
            s.issued = issue(
                &s.issuer,
                header,
                claims(),
                &["age_over_18"],
                &s.holder.public_key(),
            )
            .unwrap();
            let r = check(&s, &present_default(&s));
            if ok {
                r.unwrap();
            } else {
                assert!(matches!(r, Err(Error::Unsupported(_))), "{typ}");
            }
        }
    }

    /// Replaces the Disclosures of a presentation and re-signs the KB-JWT over the new text, so
    /// that only the Disclosure checks can fail.
    fn with_disclosures(s: &Setup, disclosures: &[String]) -> String {
        let jwt = s.issued.split('~').next().unwrap();
        let mut sd_jwt = format!("{jwt}~");
        for d in disclosures {
            sd_jwt.push_str(d);
            sd_jwt.push('~');
        }
        let mut header = Map::new();
        header.insert("typ".into(), json!(KB_TYP));
        let payload = json!({"iat": NOW, "aud": AUD, "nonce": NONCE, "sd_hash": digest(&sd_jwt)});
        sd_jwt
            + &s.holder
                .sign_compact(header, payload.to_string().as_bytes())
                .unwrap()
    }

    fn issued_disclosures(s: &Setup) -> Vec<String> {
        Presentation::parse(&s.issued).unwrap().disclosures
    }

    #[test]
    fn refuses_tampered_duplicate_and_unreferenced_disclosures() {
        let s = setup(Alg::Es256, claims());
        let ds = issued_disclosures(&s);
        assert!(check(&s, &with_disclosures(&s, &ds)).is_ok());

        // Tampered: same salt and name, another value.
        let mut arr: Vec<Value> = serde_json::from_slice(&b64d(&ds[0]).unwrap()).unwrap();
        arr[2] = json!("forged");
        let forged = b64e(serde_json::to_vec(&arr).unwrap());
        assert!(matches!(
            check(&s, &with_disclosures(&s, &[forged])),
            Err(Error::Digest(_))
        ));

        // Duplicate.
        assert!(matches!(
            check(&s, &with_disclosures(&s, &[ds[0].clone(), ds[0].clone()])),
            Err(Error::Digest(_))
        ));

        // Unreferenced: a well-formed disclosure the issuer never signed.
        let stray = b64e(json!(["c2FsdHNhbHRzYWx0", "age_over_21", true]).to_string());
        assert!(matches!(
            check(&s, &with_disclosures(&s, &[stray])),
            Err(Error::Digest(_))
        ));

        // Malformed ones.
        for bad in [
            b64e("not json"),
            b64e(json!(["salt"]).to_string()),
            b64e(json!([1, "x", 2]).to_string()),
            b64e(json!(["salt", 7, 2]).to_string()),
            b64e(json!(["salt", "_sd", []]).to_string()),
            b64e(json!(["salt", "...", "d"]).to_string()),
            "!!".to_string(),
        ] {
            assert!(
                matches!(
                    check(&s, &with_disclosures(&s, std::slice::from_ref(&bad))),
                    Err(Error::Malformed(_))
                ),
                "{bad}"
            );
        }
    }

    /// Signs `payload` as an SD-JWT VC issuer would, then presents `disclosures` with a valid
    /// KB-JWT.
    fn custom(s: &Setup, payload: Value, disclosures: &[String]) -> Result<Verified> {
        let mut header = Map::new();
        header.insert("typ".into(), json!(TYP));
        let jwt = s
            .issuer
            .sign_compact(header, payload.to_string().as_bytes())
            .unwrap();
        let issued = Setup {
            issuer: SigningKey::from_pkcs8(&s.issuer.to_pkcs8().unwrap()).unwrap(),
            holder: SigningKey::from_pkcs8(&s.holder.to_pkcs8().unwrap()).unwrap(),
            issued: format!("{jwt}~"),
        };
        check(&issued, &with_disclosures(&issued, disclosures))
    }

    #[test]
    fn processes_nested_and_array_disclosures() {
        let s = setup(Alg::Es256, claims());
        let jwk = s.holder.public_key().to_jwk();
        let street = b64e(json!(["s1", "street", "Heidestraße 17"]).to_string());
        let city = b64e(json!(["s2", "city", "Köln"]).to_string());
        let address = b64e(
            json!(["s3", "address", {"_sd": [digest(&street), digest(&city)], "country": "DE"}])
                .to_string(),
        );
        let de = b64e(json!(["s4", "DE"]).to_string());
        let fr = b64e(json!(["s5", "FR"]).to_string());
        let payload = json!({
            "iss": "https://i.example", "vct": "urn:x", "cnf": {"jwk": jwk},
            "_sd_alg": "sha-256",
            "_sd": [digest(&address), "decoy-digest-never-disclosed"],
            "nationalities": [{"...": digest(&de)}, {"...": digest(&fr)}, "AT"],
        });
        let v = custom(
            &s,
            payload.clone(),
            &[street.clone(), address.clone(), de.clone()],
        )
        .unwrap();
        assert_eq!(
            Value::Object(v.claims.clone()),
            json!({
                "iss": "https://i.example", "vct": "urn:x", "cnf": {"jwk": s.holder.public_key().to_jwk()},
                "address": {"street": "Heidestraße 17", "country": "DE"},
                "nationalities": ["DE", "AT"],
            })
        );
        // A nested disclosure without its parent is unreferenced.
        assert!(matches!(
            custom(&s, payload.clone(), std::slice::from_ref(&street)),
            Err(Error::Digest(_))
        ));
        // An array disclosure referenced from `_sd`, or a property disclosure from an array.
        let mut wrong = payload.clone();
        wrong["_sd"] = json!([digest(&fr)]);
        wrong["nationalities"] = json!(["AT"]);
        assert!(matches!(
            custom(&s, wrong, std::slice::from_ref(&fr)),
            Err(Error::Malformed(_))
        ));
        let mut wrong = payload.clone();
        wrong["nationalities"] = json!([{"...": digest(&address)}]);
        wrong["_sd"] = json!([]);
        assert!(matches!(
            custom(&s, wrong, std::slice::from_ref(&address)),
            Err(Error::Malformed(_))
        ));
        // The same digest twice in the payload.
        let mut twice = payload.clone();
        twice["nationalities"] = json!([{"...": digest(&de)}, {"...": digest(&de)}]);
        assert!(matches!(
            custom(&s, twice, std::slice::from_ref(&de)),
            Err(Error::Digest(_))
        ));
        // A disclosed name that clashes with a plain claim.
        let clash = b64e(json!(["s6", "iss", "https://evil.example"]).to_string());
        let mut p = payload.clone();
        p["_sd"] = json!([digest(&clash)]);
        assert!(matches!(custom(&s, p, &[clash]), Err(Error::Malformed(_))));
        // `_sd_alg` other than sha-256.
        let mut p = payload.clone();
        p["_sd_alg"] = json!("sha-512");
        assert!(matches!(custom(&s, p, &[]), Err(Error::Unsupported(_))));
        // A digest object with other keys.
        let mut p = payload.clone();
        p["nationalities"] = json!([{"...": digest(&de), "x": 1}]);
        assert!(matches!(custom(&s, p, &[]), Err(Error::Malformed(_))));
        // vct, iss and cnf are required.
        for name in ["vct", "iss", "cnf"] {
            let mut p = payload.clone();
            p.as_object_mut().unwrap().remove(name);
            assert!(
                matches!(custom(&s, p, &[]), Err(Error::Malformed(_))),
                "{name}"
            );
        }
        let mut p = payload.clone();
        p["cnf"] = json!({"jwk": {"kty": "RSA", "n": "x", "e": "AQAB"}});
        assert!(custom(&s, p, &[]).is_err());
    }

    #[test]
    fn refuses_wrong_nonce_aud_and_stale_iat() {
        let s = setup(Alg::EdDsa, claims());
        let p = |aud: &str, nonce: &str, iat: i64| {
            present(&s.issued, &["age_over_18"], &s.holder, aud, nonce, iat).unwrap()
        };
        assert!(matches!(
            check(&s, &p(AUD, "other", NOW)),
            Err(Error::Binding(_))
        ));
        assert!(matches!(
            check(&s, &p("https://evil.example", NONCE, NOW)),
            Err(Error::Binding(_))
        ));
        assert!(matches!(
            check(&s, &p(AUD, NONCE, NOW - 301)),
            Err(Error::Validity(_))
        ));
        assert!(matches!(
            check(&s, &p(AUD, NONCE, NOW + 61)),
            Err(Error::Validity(_))
        ));
        assert!(check(&s, &p(AUD, NONCE, NOW - 300)).is_ok());
        assert!(check(&s, &p(AUD, NONCE, NOW + 60)).is_ok());
    }

    #[test]
    fn refuses_wrong_sd_hash_missing_kb_and_foreign_kb() {
        let s = setup(Alg::Es256, claims());
        let full = present(
            &s.issued,
            &["age_over_18", "given_name"],
            &s.holder,
            AUD,
            NONCE,
            NOW,
        )
        .unwrap();
        // A disclosure dropped after the KB-JWT was signed.
        let parts: Vec<&str> = full.split('~').collect();
        let dropped = format!("{}~{}~{}", parts[0], parts[1], parts[3]);
        assert!(matches!(check(&s, &dropped), Err(Error::Binding(_))));
        // No KB-JWT.
        let bare = full.rsplit_once('~').unwrap().0.to_string() + "~";
        assert!(matches!(check(&s, &bare), Err(Error::Binding(_))));
        // KB-JWT by another key.
        let other = SigningKey::generate(Alg::Es256).unwrap();
        let foreign = present(&s.issued, &["age_over_18"], &other, AUD, NONCE, NOW).unwrap();
        assert!(matches!(check(&s, &foreign), Err(Error::Signature(_))));
        // KB-JWT with the wrong typ, or an algorithm not allowed.
        let mut header = Map::new();
        header.insert("typ".into(), json!("JWT"));
        let sd_jwt = format!("{}~", s.issued.split('~').next().unwrap());
        let payload = json!({"iat": NOW, "aud": AUD, "nonce": NONCE, "sd_hash": digest(&sd_jwt)});
        let kb = s
            .holder
            .sign_compact(header, payload.to_string().as_bytes())
            .unwrap();
        assert!(matches!(
            check(&s, &(sd_jwt.clone() + &kb)),
            Err(Error::Unsupported(_))
        ));
        let ok = present(&s.issued, &[], &s.holder, AUD, NONCE, NOW).unwrap();
        let p = Presentation::parse(&ok).unwrap();
        let only_eddsa = KbExpect {
            allowed: &[Alg::EdDsa],
            ..expect()
        };
        assert!(matches!(
            verify(&p, &s.issuer.public_key(), &[Alg::Es256], &only_eddsa, NOW),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn refuses_expired_not_yet_valid_wrong_key_and_alg() {
        let mut c = claims();
        c.insert("exp".into(), json!(NOW - 61));
        let s = setup(Alg::Es256, c);
        assert!(matches!(
            check(&s, &present_default(&s)),
            Err(Error::Validity(_))
        ));
        let mut c = claims();
        c.insert("exp".into(), json!(NOW - 59));
        let s = setup(Alg::Es256, c);
        assert!(check(&s, &present_default(&s)).is_ok(), "within the skew");
        let mut c = claims();
        c.insert("nbf".into(), json!(NOW + 61));
        let s = setup(Alg::Es256, c);
        assert!(matches!(
            check(&s, &present_default(&s)),
            Err(Error::Validity(_))
        ));

        let s = setup(Alg::Es256, claims());
        let text = present_default(&s);
        let p = Presentation::parse(&text).unwrap();
        let other = SigningKey::generate(Alg::Es256).unwrap();
        assert!(matches!(
            verify(&p, &other.public_key(), &[Alg::Es256], &expect(), NOW),
            Err(Error::Signature(_))
        ));
        assert!(matches!(
            verify(&p, &s.issuer.public_key(), &[Alg::EdDsa], &expect(), NOW),
            Err(Error::Unsupported(_))
        ));
        let ed = SigningKey::generate(Alg::EdDsa).unwrap();
        assert!(verify(
            &p,
            &ed.public_key(),
            &[Alg::Es256, Alg::EdDsa],
            &expect(),
            NOW
        )
        .is_err());
    }

    #[test]
    fn parse_limits_and_shapes() {
        let s = setup(Alg::Es256, claims());
        let jwt = s.issued.split('~').next().unwrap();
        assert!(Presentation::parse(jwt).is_err(), "no tilde");
        assert!(
            Presentation::parse(&format!("{jwt}~~")).is_err(),
            "empty disclosure"
        );
        let many = format!("{jwt}~{}", "WyJhIiwgMV0~".repeat(MAX_DISCLOSURES + 1));
        assert!(matches!(
            Presentation::parse(&many),
            Err(Error::Malformed(_))
        ));
        let ok = format!("{jwt}~{}", "WyJhIiwgMV0~".repeat(MAX_DISCLOSURES));
        assert_eq!(
            Presentation::parse(&ok).unwrap().disclosures.len(),
            MAX_DISCLOSURES
        );
        let text = present_default(&s);
        let p = Presentation::parse(&text).unwrap();
        assert!(p.kb_jwt.is_some());
        assert_eq!(p.sd_jwt(), &text[..=text.rfind('~').unwrap()]);
        assert!(
            present(&text, &[], &s.holder, AUD, NONCE, NOW).is_err(),
            "already presented"
        );
        let mut c = claims();
        c.remove("given_name");
        assert!(issue(
            &s.issuer,
            Map::new(),
            c,
            &["given_name"],
            &s.holder.public_key()
        )
        .is_err());
    }

    #[test]
    fn refuses_deep_nesting() {
        let s = setup(Alg::Es256, claims());
        let mut deep = json!(1);
        for _ in 0..(MAX_DEPTH + 2) {
            deep = json!({ "a": deep });
        }
        let payload = json!({
            "iss": "https://i.example", "vct": "urn:x",
            "cnf": {"jwk": s.holder.public_key().to_jwk()}, "deep": deep
        });
        assert!(matches!(custom(&s, payload, &[]), Err(Error::Malformed(_))));
    }
}
