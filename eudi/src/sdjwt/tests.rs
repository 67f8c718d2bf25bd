//! Unit tests of SD-JWT VC presentations.

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
