//! The `jwt` target's harness and oracle, shared with the seed replay of the integration tests
//! (`tests/it/fuzz_seeds.rs` includes this file by path). Self-contained: no item of the fuzz
//! crate.
//!
//! Access and step-up tokens through the server's verifier,
//! `tessera_actors::tenant::keys::TokenKeys::verify` / `verify_step_up`, with a tenant's real
//! keys: made by `KeyRing::load_or_create` and rotated once, so one current and one retired
//! (still published) key verify.
//!
//! Input: byte 0 picks the mode (`b % 3`) and the verifier (`(b / 3) % 2`: access, step-up).
//! - mode 0: the rest is the token, as text.
//! - mode 1: the rest is `header 0xFF claims 0xFF signature`; each part is base64url-encoded
//!   and the three joined with dots, so every input is a well-formed JWS and the header JSON
//!   parsers (the raw `alg`/forbidden-header check, then jsonwebtoken's) see the fuzzer's bytes.
//! - mode 2: as mode 1, but the token is signed with the tenant's key (the current one, or the
//!   retired one when the signature part starts with an odd byte), so the claims JSON is parsed
//!   and checked too.
//!
//! In the header and claims, `@kid` becomes the current key's id, `@old` the retired one's,
//! `@iss` and `@aud` the expected issuer and audience, `@now` the current Unix time and `@exp`
//! ten minutes from now: the seeds stay valid although the keys are new in every process.
//!
//! Fails on: a panic; any token accepted in modes 0 and 1 (nobody but this process holds the
//! keys, so a verified token there is a forgery); in mode 2, a token accepted although its
//! header is not `alg` ES256 with an accepted `typ` and a published `kid` and no key-carrying
//! or critical parameter, or although its claims name another issuer or audience or have
//! expired.

use std::path::Path;

use aws_lc_rs::{
    rand::SystemRandom,
    signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING},
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use tessera_actors::tenant::keys::{
    signing_key_aad, KeyRing, TokenKeys, ACCESS_TOKEN_TYP, STEP_UP_TOKEN_TYP,
};
use tessera_storage::{Durability, MasterKey, Store, StoreOptions, TenantId};
use time::OffsetDateTime;

const ISS: &str = "http://127.0.0.1:8080/v1/tenants/fuzz";
const AUD: &str = "fuzz";

/// What verification refuses on sight (keys/mod.rs `FORBIDDEN_HEADERS`).
const FORBIDDEN_HEADERS: &[&str] = &["jwk", "jku", "x5u", "x5c", "x5t", "x5t#S256", "crit"];

/// The verifier of one tenant, and the private keys to sign with.
pub struct Harness {
    keys: TokenKeys,
    current_kid: String,
    retired_kid: String,
    current: EcdsaKeyPair,
    retired: EcdsaKeyPair,
    rng: SystemRandom,
    /// Keeps the store's runtime (its flush task) alive.
    _runtime: tokio::runtime::Runtime,
}

impl Harness {
    /// A tenant's keys in a new store under `dir`, checked by [`Harness::self_test`]; `Err`
    /// says why the harness could not start (not a finding).
    pub fn start(dir: &Path) -> Result<Harness, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("tokio runtime: {e}"))?;
        let _entered = runtime.enter();
        let store = Store::open(&StoreOptions {
            path: dir.join("db"),
            cache_capacity_bytes: 8 << 20,
            durability: Durability::Relaxed,
            max_unflushed_batches: tessera_storage::flusher::DEFAULT_MAX_UNFLUSHED,
        })
        .map_err(|e| format!("store: {e}"))?;
        let tenant = TenantId::new();
        let ts = store.tenant(tenant);
        let master = MasterKey::generate();
        let now = OffsetDateTime::now_utc();
        let (mut ring, first) =
            KeyRing::load_or_create(&ts, &master, now).map_err(|e| format!("keys: {e}"))?;
        let retired_kid = first.current_kid().to_owned();
        let (_, keys) = ring
            .rotate(&ts, &master, now, std::time::Duration::from_secs(900), None)
            .map_err(|e| format!("rotation: {e}"))?;
        let current_kid = keys.current_kid().to_owned();
        let pair = |kid: &str| -> Result<EcdsaKeyPair, String> {
            let record = ring
                .records()
                .iter()
                .find(|r| r.kid == kid)
                .ok_or_else(|| format!("no record for {kid}"))?;
            let pkcs8 = master
                .open(&signing_key_aad(tenant, kid), &record.sealed)
                .map_err(|e| format!("open {kid}: {e}"))?;
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8)
                .map_err(|e| format!("key {kid}: {e}"))
        };
        let current = pair(&current_kid)?;
        let retired = pair(&retired_kid)?;
        if keys.jwks()["keys"].as_array().map(Vec::len) != Some(2) {
            return Err(format!("expected two published keys: {}", keys.jwks()));
        }
        let h = Harness {
            keys,
            current_kid,
            retired_kid,
            current,
            retired,
            rng: SystemRandom::new(),
            _runtime: runtime,
        };
        h.self_test()?;
        Ok(h)
    }

    /// The acceptance checks below only mean something if a token can be accepted: a
    /// well-formed token signed here, with either key, as access and as step-up token, must
    /// verify. Otherwise the harness is broken (and says so instead of fuzzing).
    fn self_test(&self) -> Result<(), String> {
        let access = br#"{"iss":"@iss","sub":"u","aud":"@aud","exp":@exp,"iat":@now,"jti":"j","sid":"s","tid":"t","is_anonymous":false,"aal":"AAL1","acr":"aal1","amr":["pwd"]}"#;
        let step_up = br#"{"iss":"@iss","sub":"u","aud":"@aud","exp":@exp,"iat":@now,"jti":"j","sid":"s","tid":"t","aal":2,"acr":"aal2","amr":["pwd"]}"#;
        let cases: [(u8, &[u8], &[u8], u8); 4] = [
            (
                2,
                br#"{"alg":"ES256","typ":"at+jwt","kid":"@kid"}"#,
                access,
                0,
            ),
            (
                2,
                br#"{"alg":"ES256","typ":"AT+JWT","kid":"@old"}"#,
                access,
                1,
            ),
            (
                5,
                br#"{"alg":"ES256","typ":"step-up+jwt","kid":"@kid"}"#,
                step_up,
                0,
            ),
            (
                5,
                br#"{"alg":"ES256","typ":"step-up+jwt","kid":"@old"}"#,
                step_up,
                1,
            ),
        ];
        for (selector, header, claims, key) in cases {
            let mut input = vec![selector];
            input.extend_from_slice(header);
            input.push(0xff);
            input.extend_from_slice(claims);
            input.extend_from_slice(&[0xff, key]);
            if !self.one(&input) {
                return Err(format!(
                    "a token signed here was refused: {}",
                    String::from_utf8_lossy(&input)
                ));
            }
        }
        Ok(())
    }

    fn substitute(&self, part: &[u8], now: i64) -> Vec<u8> {
        let text = String::from_utf8_lossy(part)
            .replace("@kid", &self.current_kid)
            .replace("@old", &self.retired_kid)
            .replace("@iss", ISS)
            .replace("@aud", AUD)
            .replace("@now", &now.to_string())
            .replace("@exp", &(now + 600).to_string());
        text.into_bytes()
    }

    /// Verifies the token `data` describes and checks an acceptance (panics on a finding);
    /// returns whether the token was accepted.
    pub fn one(&self, data: &[u8]) -> bool {
        let Some((&selector, rest)) = data.split_first() else {
            return false;
        };
        let mode = selector % 3;
        let step_up = (selector / 3) % 2 == 1;
        let now = OffsetDateTime::now_utc().unix_timestamp();
        let (token, header) = if mode == 0 {
            (String::from_utf8_lossy(rest).into_owned(), Vec::new())
        } else {
            let mut parts = rest.splitn(3, |&b| b == 0xff);
            let header = self.substitute(parts.next().unwrap_or_default(), now);
            let claims = self.substitute(parts.next().unwrap_or_default(), now);
            let sig = parts.next().unwrap_or_default();
            let signing_input = format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(&header),
                URL_SAFE_NO_PAD.encode(&claims)
            );
            let signature = if mode == 2 {
                let key = match sig.first() {
                    Some(b) if b % 2 == 1 => &self.retired,
                    _ => &self.current,
                };
                match key.sign(&self.rng, signing_input.as_bytes()) {
                    Ok(s) => s.as_ref().to_vec(),
                    Err(e) => panic!("signing failed: {e}"),
                }
            } else {
                sig.to_vec()
            };
            (
                format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature)),
                header,
            )
        };

        // (iss, aud, exp) of an accepted token.
        let accepted = if step_up {
            self.keys
                .verify_step_up(&token, ISS, AUD, now)
                .ok()
                .map(|c| (c.iss, c.aud, c.exp))
        } else {
            self.keys
                .verify(&token, ISS, AUD, now)
                .ok()
                .map(|c| (c.iss, c.aud, c.exp))
        };
        let Some((iss, aud, exp)) = accepted else {
            return false;
        };
        assert!(
            mode == 2,
            "accepted a token this process did not sign: {token:?}"
        );
        let typs: &[&str] = if step_up {
            &[STEP_UP_TOKEN_TYP]
        } else {
            &[ACCESS_TOKEN_TYP, "application/at+jwt"]
        };
        let h: serde_json::Value = match serde_json::from_slice(&header) {
            Ok(h) => h,
            Err(e) => panic!("accepted a token whose header is not JSON ({e}): {token:?}"),
        };
        assert!(
            h["alg"] == "ES256",
            "accepted a token whose alg is not ES256: {h}"
        );
        assert!(
            h["typ"]
                .as_str()
                .is_some_and(|t| typs.iter().any(|ok| t.eq_ignore_ascii_case(ok))),
            "accepted a token with typ {} as {}: {h}",
            h["typ"],
            if step_up { "step-up" } else { "access" }
        );
        assert!(
            h["kid"] == self.current_kid.as_str() || h["kid"] == self.retired_kid.as_str(),
            "accepted a token whose kid is not published: {h}"
        );
        for f in FORBIDDEN_HEADERS {
            assert!(h.get(*f).is_none(), "accepted a token with header {f}: {h}");
        }
        assert!(
            iss == ISS && aud == AUD,
            "accepted a token for issuer {iss:?}, audience {aud:?}: {token:?}"
        );
        assert!(
            exp > now,
            "accepted an expired token (exp {exp}, now {now})"
        );
        true
    }
}
