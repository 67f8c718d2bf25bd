//! Unit tests of the providers' table: trust, names, default scopes, Apple's key check.

use super::*;

#[test]
fn two_always_six_provider_two_never() {
    let count = |t: EmailTrust| {
        Provider::ALL
            .iter()
            .filter(|p| p.email_trust() == t)
            .count()
    };
    assert_eq!(count(EmailTrust::AlwaysVerified), 2);
    assert_eq!(count(EmailTrust::ProviderVerified), 6);
    assert_eq!(count(EmailTrust::NeverTrust), 2);
}

#[test]
fn names_round_trip_and_match_serde() {
    for p in Provider::ALL {
        assert_eq!(Provider::parse(p.as_str()), Some(p));
        assert_eq!(
            serde_json::to_value(p).ok(),
            Some(serde_json::Value::String(p.as_str().to_owned()))
        );
    }
    assert_eq!(Provider::parse("Google"), None);
    assert_eq!(Provider::parse("twitter"), None);
}

#[test]
fn default_scopes_carry_the_required_one() {
    for p in Provider::ALL {
        if let Some(s) = p.required_scope() {
            assert!(p.default_scopes().contains(&s), "{p:?}");
        }
    }
}

/// A key of `alg` made here, as PKCS#8 PEM.
fn pem_of(alg: &'static aws_lc_rs::signature::EcdsaSigningAlgorithm) -> String {
    use base64::{engine::general_purpose::STANDARD, Engine};
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let der = aws_lc_rs::signature::EcdsaKeyPair::generate_pkcs8(alg, &rng)
        .map(|d| d.as_ref().to_vec())
        .unwrap_or_default();
    format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        STANDARD.encode(der)
    )
}

#[test]
fn an_apple_key_must_be_a_p256_pkcs8_key() {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, ECDSA_P384_SHA384_FIXED_SIGNING};
    assert!(apple_key_signs(&pem_of(&ECDSA_P256_SHA256_FIXED_SIGNING)));
    assert!(!apple_key_signs(&pem_of(&ECDSA_P384_SHA384_FIXED_SIGNING)));
    assert!(!apple_key_signs("not a key"));
    assert!(!apple_key_signs(
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
    ));
}
