//! Unit tests of the authorization server's pure parts: PKCE, verifiers, the commitment.

use uuid::Uuid;

use super::*;

#[test]
fn s256_matches_rfc7636_appendix_b() {
    assert_eq!(
        s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    );
}

#[test]
fn verifiers_are_shaped_as_rfc7636_says() {
    assert!(verifier_ok(&"a".repeat(43)));
    assert!(verifier_ok(&"A-._~9".repeat(22)[..128]));
    assert!(!verifier_ok(&"a".repeat(42)));
    assert!(!verifier_ok(&"a".repeat(129)));
    assert!(!verifier_ok(&format!("{}+", "a".repeat(43))));
}

#[test]
fn the_commitment_covers_every_field() {
    let base = AuthzRequest {
        client_id: "c".into(),
        redirect_uri: "https://a/cb".into(),
        scopes: vec!["openid".into()],
        resource: None,
        code_challenge: "x".into(),
        state: None,
        nonce: None,
        organization: None,
    };
    let user = Uuid::now_v7();
    let mut variants = vec![base.clone()];
    let mut v = base.clone();
    v.scopes.push("email".into());
    variants.push(v);
    let mut v = base.clone();
    v.resource = Some("https://api".into());
    variants.push(v);
    let mut v = base.clone();
    v.state = Some(String::new());
    variants.push(v);
    let mut v = base.clone();
    v.nonce = Some("n".into());
    variants.push(v);
    let mut v = base.clone();
    v.redirect_uri = "https://a/cb2".into();
    variants.push(v);
    let mut v = base.clone();
    v.organization = Some(Uuid::nil());
    variants.push(v);
    let mut seen = std::collections::HashSet::new();
    for v in &variants {
        assert!(seen.insert(v.canonical(user)));
    }
    assert!(seen.insert(base.canonical(Uuid::now_v7())));
}
