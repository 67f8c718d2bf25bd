//! Unit tests of the signing keys: the ring's rotation and loading, the signer and the strict
//! verifier.

use std::path::Path;

use aws_lc_rs::{
    rand::SystemRandom,
    signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING, RSA_PKCS1_SHA256},
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use tessera_storage::{Durability, MasterKey, Store, StoreOptions, TenantId};
use time::OffsetDateTime;

use super::{
    records::{rsa_thumbprint, thumbprint},
    verifier::MAX_TOKEN_LEN,
    *,
};

const ISS: &str = "https://auth.example.test/t/acme";
const AUD: &str = "acme";

fn open(dir: &Path) -> Store {
    Store::open(&StoreOptions {
        path: dir.to_path_buf(),
        cache_capacity_bytes: 8 << 20,
        durability: Durability::Sync,
        max_unflushed_batches: tessera_storage::flusher::DEFAULT_MAX_UNFLUSHED,
    })
    .unwrap()
}

/// Opens `dir` again once the previous store's last handle (held by its flush task until
/// that task ends, on this runtime) lets go of sled's lock.
async fn reopen(dir: &Path) -> Store {
    for _ in 0..250 {
        let opened = Store::open(&StoreOptions {
            path: dir.to_path_buf(),
            cache_capacity_bytes: 8 << 20,
            durability: Durability::Sync,
            max_unflushed_batches: tessera_storage::flusher::DEFAULT_MAX_UNFLUSHED,
        });
        match opened {
            Ok(store) => return store,
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
        }
    }
    open(dir)
}

fn now_ts() -> i64 {
    OffsetDateTime::now_utc().unix_timestamp()
}

fn claims(tid: &str) -> AccessClaims {
    let now = now_ts();
    AccessClaims {
        iss: ISS.into(),
        sub: "user-1".into(),
        aud: AUD.into(),
        exp: now + 300,
        iat: now,
        jti: "jti-1".into(),
        sid: "sid-1".into(),
        tid: tid.into(),
        is_anonymous: false,
        aal: "AAL1".into(),
        acr: "aal1".into(),
        amr: vec!["pwd".into()],
        app_metadata: None,
        client_id: None,
        scope: None,
        org_id: None,
        org_role: None,
        org_permissions: None,
    }
}

fn b64json(v: &serde_json::Value) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
}

/// `header.payload.signature` signed by `pair` (ES256, fixed r||s).
fn es256(header: serde_json::Value, claims: &AccessClaims, pair: &EcdsaKeyPair) -> String {
    let msg = format!(
        "{}.{}",
        b64json(&header),
        b64json(&serde_json::to_value(claims).unwrap())
    );
    let sig = pair.sign(&SystemRandom::new(), msg.as_bytes()).unwrap();
    format!("{msg}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
}

/// `header.payload.signature` signed by the RSA key `pair` (RS256, PKCS#1 v1.5).
fn rs256(
    header: serde_json::Value,
    claims: &serde_json::Value,
    pair: &aws_lc_rs::rsa::KeyPair,
) -> String {
    let msg = format!("{}.{}", b64json(&header), b64json(claims));
    let mut sig = vec![0u8; pair.public_modulus_len()];
    pair.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        msg.as_bytes(),
        &mut sig,
    )
    .unwrap();
    format!("{msg}.{}", URL_SAFE_NO_PAD.encode(&sig))
}

/// The tenant's current private key, opened as the actor would.
fn current_pair(ring: &KeyRing, tenant: TenantId, master: &MasterKey) -> EcdsaKeyPair {
    let r = ring.records().iter().find(|r| r.is_current()).unwrap();
    let pkcs8 = master
        .open(&signing_key_aad(tenant, &r.kid), &r.sealed)
        .unwrap();
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8).unwrap()
}

fn attacker_pair() -> EcdsaKeyPair {
    let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
        .unwrap();
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref()).unwrap()
}

#[tokio::test]
async fn sign_then_verify_round_trips_and_the_header_is_rfc9068() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let ts = store.tenant(TenantId::new());
    let master = MasterKey::generate();
    let (ring, keys) = KeyRing::load_or_create(&ts, &master, OffsetDateTime::now_utc()).unwrap();
    assert_eq!(ring.records().len(), 1);
    assert_eq!(keys.current_kid(), ring.records()[0].kid);

    let c = claims(&ts.tenant_id().to_string());
    let token = keys.sign(&c).unwrap();
    let header = jsonwebtoken::decode_header(&token).unwrap();
    assert_eq!(header.alg, Algorithm::ES256);
    assert_eq!(header.typ.as_deref(), Some("at+jwt"));
    assert_eq!(header.kid.as_deref(), Some(keys.current_kid()));
    assert_eq!(keys.verify(&token, ISS, AUD, now_ts()).unwrap(), c);

    // The JWKS publishes the key under its RFC 7638 thumbprint.
    let jwk = &keys.jwks()["keys"][0];
    assert_eq!(jwk["kty"], "EC");
    assert_eq!(jwk["crv"], "P-256");
    assert_eq!(jwk["alg"], "ES256");
    assert_eq!(jwk["use"], "sig");
    assert_eq!(jwk["kid"], keys.current_kid());
    let (x, y) = (jwk["x"].as_str().unwrap(), jwk["y"].as_str().unwrap());
    assert_eq!(thumbprint(x, y), keys.current_kid());
    assert_eq!(keys.jwks()["keys"].as_array().unwrap().len(), 1);
    // A JWKS consumer can rebuild the verification key from the published members.
    let from_jwks = DecodingKey::from_ec_components(x, y).unwrap();
    let mut v = Validation::new(Algorithm::ES256);
    v.set_audience(&[AUD]);
    assert!(jsonwebtoken::decode::<AccessClaims>(&token, &from_jwks, &v).is_ok());

    // application/at+jwt and any case are accepted.
    let pair = current_pair(&ring, ts.tenant_id(), &master);
    for typ in ["application/at+jwt", "AT+JWT"] {
        let t = es256(
            serde_json::json!({"alg": "ES256", "typ": typ, "kid": keys.current_kid()}),
            &c,
            &pair,
        );
        assert_eq!(keys.verify(&t, ISS, AUD, now_ts()).unwrap(), c);
    }
}

#[tokio::test]
async fn forged_and_invalid_tokens_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let ts = store.tenant(TenantId::new());
    let master = MasterKey::generate();
    let (ring, keys) = KeyRing::load_or_create(&ts, &master, OffsetDateTime::now_utc()).unwrap();
    let kid = keys.current_kid().to_owned();
    let c = claims(&ts.tenant_id().to_string());
    let payload = b64json(&serde_json::to_value(&c).unwrap());
    let verify = |t: &str| keys.verify(t, ISS, AUD, now_ts());

    // alg: none, with and without a signature segment.
    let none = b64json(&serde_json::json!({"alg": "none", "typ": "at+jwt", "kid": kid}));
    assert_eq!(
        verify(&format!("{none}.{payload}.")),
        Err(TokenError::Algorithm)
    );
    assert_eq!(
        verify(&format!("{none}.{payload}.AAAA")),
        Err(TokenError::Algorithm)
    );
    let none_upper = b64json(&serde_json::json!({"alg": "NONE", "typ": "at+jwt", "kid": kid}));
    assert_eq!(
        verify(&format!("{none_upper}.{payload}.")),
        Err(TokenError::Algorithm)
    );
    // No alg at all.
    let no_alg = b64json(&serde_json::json!({"typ": "at+jwt", "kid": kid}));
    assert_eq!(
        verify(&format!("{no_alg}.{payload}.AAAA")),
        Err(TokenError::Algorithm)
    );

    // HS256 keyed with the public key (the classic algorithm-confusion forgery), using the
    // JWKS x member and the raw uncompressed point as the HMAC secret.
    let jwk = &keys.jwks()["keys"][0];
    let point = {
        let mut p = vec![0x04];
        p.extend(URL_SAFE_NO_PAD.decode(jwk["x"].as_str().unwrap()).unwrap());
        p.extend(URL_SAFE_NO_PAD.decode(jwk["y"].as_str().unwrap()).unwrap());
        p
    };
    let hs_header = b64json(&serde_json::json!({"alg": "HS256", "typ": "at+jwt", "kid": kid}));
    let msg = format!("{hs_header}.{payload}");
    for secret in [point.clone(), serde_json::to_vec(jwk).unwrap()] {
        let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, &secret);
        let tag = aws_lc_rs::hmac::sign(&key, msg.as_bytes());
        let forged = format!("{msg}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()));
        assert_eq!(verify(&forged), Err(TokenError::Algorithm));
    }
    // Other algorithms, even of the EC family.
    for alg in ["ES384", "RS256", "PS256", "EdDSA", "es256"] {
        let h = b64json(&serde_json::json!({"alg": alg, "typ": "at+jwt", "kid": kid}));
        assert_eq!(
            verify(&format!("{h}.{payload}.AAAA")),
            Err(TokenError::Algorithm)
        );
    }

    // An attacker's key embedded (jwk) or pointed at (jku, x5u), with our kid or theirs.
    let evil = attacker_pair();
    let evil_point = evil.public_key().as_ref().to_vec();
    let evil_jwk = serde_json::json!({
        "kty": "EC", "crv": "P-256",
        "x": URL_SAFE_NO_PAD.encode(&evil_point[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&evil_point[33..65]),
    });
    for extra in [
        ("jwk", evil_jwk.clone()),
        ("jku", serde_json::json!("https://evil.test/jwks.json")),
        ("x5u", serde_json::json!("https://evil.test/cert.pem")),
        ("x5c", serde_json::json!(["MIIB"])),
        ("crit", serde_json::json!(["exp"])),
    ] {
        for k in [kid.as_str(), "evil"] {
            let mut h = serde_json::json!({"alg": "ES256", "typ": "at+jwt", "kid": k});
            h[extra.0] = extra.1.clone();
            assert_eq!(
                verify(&es256(h, &c, &evil)),
                Err(TokenError::Header),
                "{}",
                extra.0
            );
        }
    }
    // Without those headers, an attacker's signature under our kid fails the signature check.
    let h = serde_json::json!({"alg": "ES256", "typ": "at+jwt", "kid": kid});
    assert_eq!(verify(&es256(h, &c, &evil)), Err(TokenError::Signature));

    // Our own key, but the wrong or missing typ.
    let ours = current_pair(&ring, ts.tenant_id(), &master);
    for typ in [Some("JWT"), Some("at+jwt2"), Some("jwt"), None] {
        let mut h = serde_json::json!({"alg": "ES256", "kid": kid});
        if let Some(t) = typ {
            h["typ"] = t.into();
        }
        assert_eq!(verify(&es256(h, &c, &ours)), Err(TokenError::Type));
    }
    // Unknown or missing kid.
    let h = serde_json::json!({"alg": "ES256", "typ": "at+jwt", "kid": "nope"});
    assert_eq!(verify(&es256(h, &c, &ours)), Err(TokenError::UnknownKey));
    let h = serde_json::json!({"alg": "ES256", "typ": "at+jwt"});
    assert_eq!(verify(&es256(h, &c, &ours)), Err(TokenError::UnknownKey));

    // Expired (by the system clock and by `now`), wrong issuer, wrong audience.
    let mut expired = c.clone();
    expired.exp = now_ts() - 10;
    assert_eq!(
        verify(&keys.sign(&expired).unwrap()),
        Err(TokenError::Expired)
    );
    let fresh = keys.sign(&c).unwrap();
    assert_eq!(
        keys.verify(&fresh, ISS, AUD, c.exp),
        Err(TokenError::Expired)
    );
    assert!(keys.verify(&fresh, ISS, AUD, c.exp - 1).is_ok());
    assert_eq!(
        keys.verify(&fresh, "https://other", AUD, now_ts()),
        Err(TokenError::Claims)
    );
    assert_eq!(
        keys.verify(&fresh, ISS, "other", now_ts()),
        Err(TokenError::Claims)
    );

    // A missing claim, even correctly signed.
    let mut partial = serde_json::to_value(&c).unwrap();
    partial.as_object_mut().unwrap().remove("sid");
    let msg = format!(
        "{}.{}",
        b64json(&serde_json::json!({"alg": "ES256", "typ": "at+jwt", "kid": kid})),
        b64json(&partial)
    );
    let sig = ours.sign(&SystemRandom::new(), msg.as_bytes()).unwrap();
    let t = format!("{msg}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()));
    assert_eq!(verify(&t), Err(TokenError::Claims));

    // A tampered payload under a valid signature.
    let mut parts: Vec<String> = fresh.split('.').map(str::to_owned).collect();
    let mut admin = c.clone();
    admin.sub = "admin".into();
    parts[1] = b64json(&serde_json::to_value(&admin).unwrap());
    assert_eq!(verify(&parts.join(".")), Err(TokenError::Signature));

    // Garbage.
    for t in [
        "",
        "a.b",
        "a.b.c.d",
        "!!!.b.c",
        &"a".repeat(MAX_TOKEN_LEN + 1),
    ] {
        assert_eq!(verify(t), Err(TokenError::Malformed), "{t:.20}");
    }

    // Empty keys neither sign nor verify.
    let empty = TokenKeys::empty();
    assert!(matches!(empty.sign(&c), Err(TokenError::Sign(_))));
    assert_eq!(
        empty.verify(&fresh, ISS, AUD, now_ts()),
        Err(TokenError::UnknownKey)
    );
    assert_eq!(empty.current_kid(), "");
    assert_eq!(empty.jwks(), &serde_json::json!({"keys": []}));
}

#[tokio::test]
async fn another_tenants_keys_do_not_verify() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let master = MasterKey::generate();
    let now = OffsetDateTime::now_utc();
    let a = store.tenant(TenantId::new());
    let b = store.tenant(TenantId::new());
    let (_, keys_a) = KeyRing::load_or_create(&a, &master, now).unwrap();
    let (ring_b, keys_b) = KeyRing::load_or_create(&b, &master, now).unwrap();
    assert_ne!(keys_a.current_kid(), keys_b.current_kid());
    let c = claims(&b.tenant_id().to_string());
    let token_b = keys_b.sign(&c).unwrap();
    assert_eq!(
        keys_a.verify(&token_b, ISS, AUD, now_ts()),
        Err(TokenError::UnknownKey)
    );
    // B's key under A's kid: the signature does not verify.
    let pair_b = current_pair(&ring_b, b.tenant_id(), &master);
    let h = serde_json::json!({"alg": "ES256", "typ": "at+jwt", "kid": keys_a.current_kid()});
    assert_eq!(
        keys_a.verify(&es256(h, &c, &pair_b), ISS, AUD, now_ts()),
        Err(TokenError::Signature)
    );
    // A sealed key does not open under another tenant's associated data.
    let r = &ring_b.records()[0];
    assert!(master
        .open(&signing_key_aad(a.tenant_id(), &r.kid), &r.sealed)
        .is_err());
    // Debug never shows the sealed key.
    let dbg = format!("{r:?} {keys_b:?}");
    assert!(!dbg.contains("sealed") && !dbg.contains("Sealed"), "{dbg}");
}

#[tokio::test]
async fn rotation_keeps_the_old_key_verifying_until_its_tokens_expire() {
    let dir = tempfile::tempdir().unwrap();
    let tenant = TenantId::new();
    let master = MasterKey::generate();
    let t0 = OffsetDateTime::now_utc();
    let ttl = std::time::Duration::from_secs(900);
    let (old_kid, new_kid, old_token, c) = {
        let store = open(dir.path());
        let ts = store.tenant(tenant);
        let (mut ring, keys) = KeyRing::load_or_create(&ts, &master, t0).unwrap();
        // Loading again does not create another key.
        let (again, keys_again) = KeyRing::load_or_create(&ts, &master, t0).unwrap();
        assert_eq!(again.records(), ring.records());
        assert_eq!(keys_again.current_kid(), keys.current_kid());

        let c = claims(&tenant.to_string());
        let old_token = keys.sign(&c).unwrap();
        let old_kid = keys.current_kid().to_owned();

        let (rotated, keys2) = ring.rotate(&ts, &master, t0, ttl, None).unwrap();
        assert_eq!(rotated.previous_kid.as_deref(), Some(old_kid.as_str()));
        assert_eq!(rotated.kid, keys2.current_kid());
        assert_ne!(rotated.kid, old_kid);
        let until = t0 + time::Duration::seconds(900 + 60);
        assert_eq!(rotated.previous_published_until, Some(until));
        let json = serde_json::to_value(&rotated).unwrap();
        assert!(json["previous_published_until"]
            .as_str()
            .unwrap()
            .contains('T'));

        // The new key signs; the old token still verifies; both are published, new first.
        let new_token = keys2.sign(&c).unwrap();
        assert_eq!(
            jsonwebtoken::decode_header(&new_token)
                .unwrap()
                .kid
                .as_deref(),
            Some(rotated.kid.as_str())
        );
        assert_eq!(keys2.verify(&new_token, ISS, AUD, now_ts()).unwrap(), c);
        assert_eq!(keys2.verify(&old_token, ISS, AUD, now_ts()).unwrap(), c);
        let kids: Vec<&str> = keys2.jwks()["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap())
            .collect();
        assert_eq!(kids, vec![rotated.kid.as_str(), old_kid.as_str()]);
        // The old keys never verify the new token's kid (no cross-over).
        assert_eq!(
            keys.verify(&new_token, ISS, AUD, now_ts()),
            Err(TokenError::UnknownKey)
        );
        ts.ticket().wait().await.unwrap();
        (old_kid, rotated.kid, old_token, c)
    };

    // Reopened: the same kids, the new one current, the old one still published.
    let store = reopen(dir.path()).await;
    let ts = store.tenant(tenant);
    let (ring, keys) = KeyRing::load_or_create(&ts, &master, t0).unwrap();
    assert_eq!(keys.current_kid(), new_kid);
    let mut kids: Vec<&str> = ring.records().iter().map(|r| r.kid.as_str()).collect();
    kids.sort_unstable();
    let mut expected = vec![old_kid.as_str(), new_kid.as_str()];
    expected.sort_unstable();
    assert_eq!(kids, expected);
    assert_eq!(keys.verify(&old_token, ISS, AUD, now_ts()).unwrap(), c);

    // Past publish_until the retired key is deleted on load.
    let later = t0 + time::Duration::seconds(900 + 61);
    let (ring, keys) = KeyRing::load_or_create(&ts, &master, later).unwrap();
    assert_eq!(ring.records().len(), 1);
    assert_eq!(keys.current_kid(), new_kid);
    assert_eq!(keys.jwks()["keys"].as_array().unwrap().len(), 1);
    assert_eq!(ts.scan::<SigningKeyRecord>(b"").count(), 1);
    assert_eq!(
        keys.verify(&old_token, ISS, AUD, now_ts()),
        Err(TokenError::UnknownKey)
    );
}

#[tokio::test]
async fn rotation_drops_expired_keys_and_more_than_one_current_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let ts = store.tenant(TenantId::new());
    let master = MasterKey::generate();
    let t0 = OffsetDateTime::now_utc();
    let ttl = std::time::Duration::from_secs(60);
    let (mut ring, _) = KeyRing::load_or_create(&ts, &master, t0).unwrap();
    let first = ring.records()[0].kid.clone();
    ring.rotate(&ts, &master, t0, ttl, None).unwrap();
    assert_eq!(ring.records().len(), 2);
    // Rotating again after the first key's publication ends drops it in the same batch.
    let t1 = t0 + time::Duration::seconds(200);
    let (rotated, keys) = ring.rotate(&ts, &master, t1, ttl, None).unwrap();
    assert_eq!(ring.records().len(), 2);
    assert!(ring.records().iter().all(|r| r.kid != first));
    assert_eq!(ts.scan::<SigningKeyRecord>(b"").count(), 2);
    assert_eq!(keys.jwks()["keys"].as_array().unwrap().len(), 2);
    assert_eq!(keys.current_kid(), rotated.kid);

    // Two current keys is corrupt data: refused rather than guessed.
    let mut batch = ts.batch();
    let mut bad = ring
        .records()
        .iter()
        .find(|r| !r.is_current())
        .unwrap()
        .clone();
    bad.retired_at = None;
    bad.publish_until = None;
    batch.put(bad.kid.as_bytes(), &bad).unwrap();
    ts.apply(batch).unwrap();
    assert!(KeyRing::load_or_create(&ts, &master, t1).is_err());
}

fn id_claims(exp: i64) -> serde_json::Value {
    serde_json::json!({"iss": ISS, "sub": "user-1", "aud": "tc_client", "exp": exp,
            "iat": exp - 60, "sid": "s-1"})
}

fn rsa_jwk(keys: &TokenKeys) -> serde_json::Value {
    keys.jwks()["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kty"] == "RSA" && k["kid"] == keys.current_kid_of(KeyAlg::RS256).unwrap())
        .cloned()
        .unwrap()
}

#[tokio::test]
async fn an_rs256_key_signs_id_tokens_is_published_and_rotates_with_the_es256_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let ts = store.tenant(TenantId::new());
    let master = MasterKey::generate();
    let now = OffsetDateTime::now_utc();
    let (mut ring, keys) = KeyRing::load_or_create(&ts, &master, now).unwrap();
    // None until a client needs one.
    assert!(!keys.has_rsa());
    assert!(keys
        .sign_id_token(&id_claims(now_ts() + 60), KeyAlg::RS256)
        .is_err());

    let pkcs8 = generate_rsa_pkcs8().unwrap();
    let (keys, wrote) = ring.add_rsa(&ts, &master, &pkcs8, now).unwrap();
    assert!(wrote && keys.has_rsa());
    let rsa_kid = keys.current_kid_of(KeyAlg::RS256).unwrap().to_owned();
    // A second one is not added.
    let other = generate_rsa_pkcs8().unwrap();
    let (same, wrote) = ring.add_rsa(&ts, &master, &other, now).unwrap();
    assert!(!wrote);
    assert_eq!(same.current_kid_of(KeyAlg::RS256), Some(rsa_kid.as_str()));

    // Published under its RFC 7638 thumbprint, beside the ES256 key (first).
    let jwk = rsa_jwk(&keys);
    assert_eq!(
        (&jwk["alg"], &jwk["use"]),
        (&serde_json::json!("RS256"), &serde_json::json!("sig"))
    );
    let (n, e) = (jwk["n"].as_str().unwrap(), jwk["e"].as_str().unwrap());
    assert_eq!(rsa_thumbprint(n, e), rsa_kid);
    assert_eq!(keys.jwks()["keys"][0]["kty"], "EC");
    assert_eq!(keys.jwks()["keys"].as_array().unwrap().len(), 2);

    // An RS256 ID token a JWKS consumer verifies, and that comes back as a logout hint.
    let token = keys
        .sign_id_token(&id_claims(now_ts() + 60), KeyAlg::RS256)
        .unwrap();
    let header = jsonwebtoken::decode_header(&token).unwrap();
    assert_eq!(header.alg, Algorithm::RS256);
    assert_eq!(header.typ.as_deref(), Some("JWT"));
    assert_eq!(header.kid.as_deref(), Some(rsa_kid.as_str()));
    let from_jwks = DecodingKey::from_rsa_components(n, e).unwrap();
    let mut v = Validation::new(Algorithm::RS256);
    v.set_audience(&["tc_client"]);
    assert!(jsonwebtoken::decode::<serde_json::Value>(&token, &from_jwks, &v).is_ok());
    assert_eq!(
        keys.verify_id_token_hint(&token, ISS).unwrap().sub,
        "user-1"
    );
    // ES256 ID tokens still come back too.
    let es = keys
        .sign_id_token(&id_claims(now_ts() + 60), KeyAlg::ES256)
        .unwrap();
    assert_eq!(
        jsonwebtoken::decode_header(&es).unwrap().alg,
        Algorithm::ES256
    );
    assert!(keys.verify_id_token_hint(&es, ISS).is_ok());

    // RS256 never passes where an access token is expected, even under a published kid.
    let rsa = aws_lc_rs::rsa::KeyPair::from_pkcs8(&pkcs8).unwrap();
    let c = claims(&ts.tenant_id().to_string());
    let forged = rs256(
        serde_json::json!({"alg": "RS256", "typ": "at+jwt", "kid": rsa_kid}),
        &serde_json::to_value(&c).unwrap(),
        &rsa,
    );
    assert!(matches!(
        keys.verify(&forged, ISS, AUD, now_ts()),
        Err(TokenError::Algorithm)
    ));
    // An RS256 header naming the ES256 key is refused as a hint.
    let es_kid = keys.current_kid().to_owned();
    let confused = rs256(
        serde_json::json!({"alg": "RS256", "typ": "JWT", "kid": es_kid}),
        &id_claims(now_ts() + 60),
        &rsa,
    );
    assert!(matches!(
        keys.verify_id_token_hint(&confused, ISS),
        Err(TokenError::UnknownKey)
    ));

    // A restart reads it back.
    let (_, reloaded) = KeyRing::load_or_create(&ts, &master, now).unwrap();
    assert_eq!(
        reloaded.current_kid_of(KeyAlg::RS256),
        Some(rsa_kid.as_str())
    );

    // A rotation without new RSA material keeps the RS256 key; with it, both kinds turn
    // and the old RS256 key stays published, so its ID tokens still come back as hints.
    let ttl = std::time::Duration::from_secs(900);
    let (rotated, kept) = ring.rotate(&ts, &master, now, ttl, None).unwrap();
    assert_eq!(rotated.rsa_kid, None);
    assert_eq!(kept.current_kid_of(KeyAlg::RS256), Some(rsa_kid.as_str()));
    let fresh = generate_rsa_pkcs8().unwrap();
    let (rotated, turned) = ring.rotate(&ts, &master, now, ttl, Some(&fresh)).unwrap();
    let new_rsa = rotated.rsa_kid.clone().unwrap();
    assert_ne!(new_rsa, rsa_kid);
    assert_eq!(rotated.previous_rsa_kid.as_deref(), Some(rsa_kid.as_str()));
    assert_eq!(turned.current_kid_of(KeyAlg::RS256), Some(new_rsa.as_str()));
    assert!(turned.verify_id_token_hint(&token, ISS).is_ok());
    let kids: Vec<&str> = turned.jwks()["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["kty"] == "RSA")
        .map(|k| k["kid"].as_str().unwrap())
        .collect();
    assert_eq!(kids.len(), 2, "{kids:?}");
    assert!(kids.contains(&rsa_kid.as_str()) && kids.contains(&new_rsa.as_str()));
    // Exactly one current key of each kind after it all.
    let currents = |alg: KeyAlg| {
        ring.records()
            .iter()
            .filter(|r| r.is_current() && r.alg == alg)
            .count()
    };
    assert_eq!((currents(KeyAlg::ES256), currents(KeyAlg::RS256)), (1, 1));
}
