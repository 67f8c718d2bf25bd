//! End-user tokens: discovery and the JWKS, refresh rotation and reuse detection (also across
//! SIGKILL), every way an access token is refused, sessions, logout, and signing-key rotation.

use std::{collections::BTreeSet, sync::Barrier, time::Duration};

use serde_json::{json, Value};
use time::{format_description::well_known::Rfc3339, OffsetDateTime};

use crate::support::{
    audit_events, b64url, eventually, jwt_part, start_with_mail, AuthAnswer, TestServer, UserApi,
    UserTokens, PASSWORD, USER_PASSWORD,
};

const NO_GRACE: (&str, &str) = ("TESSERA__TOKENS__REFRESH_REUSE_GRACE_SECS", "0");

/// The refusal of a bad access token on `/me`.
#[track_caller]
fn assert_invalid_token(api: &UserApi, token: &str, what: &str) {
    let r = api.me(token);
    assert_eq!(
        (r.status, r.code()),
        (401, "auth/invalid_token"),
        "{what}: {}",
        r.body
    );
    let challenge = r.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\""),
        "{what}: WWW-Authenticate is {challenge:?}"
    );
}

/// The id of the session `access` belongs to, as its own session list says.
#[track_caller]
fn current_session_id(api: &UserApi, access: &str) -> String {
    let r = api.sessions(access);
    let list = r.expect(200);
    let current: Vec<&Value> = list["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter(|s| s["current"] == true)
        .collect();
    assert_eq!(current.len(), 1, "exactly one current session: {list}");
    current[0]["id"].as_str().expect("id").to_owned()
}

fn session_ids(list: &Value) -> BTreeSet<String> {
    list["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|s| s["id"].as_str().expect("id").to_owned())
        .collect()
}

#[test]
fn discovery_and_the_jwks_are_public_and_per_tenant() {
    let srv = TestServer::start();
    let api = UserApi::signup(&srv, "Disco Co", "owner@example.com");
    let other = UserApi::signup(&srv, "Other Co", "other@example.com");
    let public = |path: &str| api.send_as(None, "GET", path, None, None, None);

    let r = public("/v1/tenants/disco-co/.well-known/openid-configuration");
    let conf = r.expect(200);
    assert_eq!(conf["issuer"], api.issuer());
    assert_eq!(conf["issuer"], format!("{}/v1/tenants/disco-co", srv.base));
    let jwks_uri = conf["jwks_uri"].as_str().expect("jwks_uri");
    let jwks = api.jwks();
    let fetched: Value = srv
        .client
        .get(jwks_uri)
        .send()
        .expect("jwks_uri answers")
        .json()
        .expect("JSON");
    assert_eq!(fetched, jwks, "jwks_uri {jwks_uri} is the published JWKS");

    let keys = jwks["keys"].as_array().expect("keys");
    assert!(!keys.is_empty());
    for k in keys {
        assert_eq!(k["kty"], "EC", "{k}");
        assert_eq!(k["crv"], "P-256", "{k}");
        assert_eq!(k["alg"], "ES256", "{k}");
        assert_eq!(k["use"], "sig", "{k}");
        assert!(k["kid"].as_str().is_some_and(|s| !s.is_empty()), "{k}");
        for c in ["x", "y"] {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(k[c].as_str().unwrap_or(""))
                .unwrap_or_default();
            assert_eq!(bytes.len(), 32, "{c} of {k}");
        }
        assert!(k.get("d").is_none(), "a private key is published: {k}");
    }
    // Each tenant signs with its own keys.
    let kids = |jwks: &Value| -> BTreeSet<String> {
        jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(kids(&jwks).is_disjoint(&kids(&other.jwks())));
    assert_eq!(
        public("/v1/tenants/other-co/.well-known/openid-configuration").body["issuer"],
        other.issuer()
    );

    assert_eq!(
        public("/v1/tenants/no-such-tenant/.well-known/openid-configuration").status,
        404
    );
    assert_eq!(
        public("/v1/tenants/no-such-tenant/.well-known/jwks.json").status,
        404
    );
}

#[test]
fn refresh_rotates_and_a_retry_within_the_grace_is_forgiven() {
    let (smtp, srv) = start_with_mail(&[]);
    let api = UserApi::signup(&srv, "Grace Co", "owner@example.com");
    let session = srv.login(&api.owner, PASSWORD);
    let t0 = api.verified_user(&smtp, "pia@example.com", USER_PASSWORD);

    let t1 = UserTokens::from_answer(&api.refresh(&t0.refresh));
    assert_ne!(t1.refresh, t0.refresh);
    assert_ne!(t1.access, t0.access);
    assert_eq!(t1.body["token_type"], "Bearer");
    assert_eq!(t1.sid(), t0.sid());
    api.me(&t1.access).expect(200);

    // A client that lost the answer retries with the previous token (well within 10 s).
    let retry = UserTokens::from_answer(&api.refresh(&t0.refresh));
    assert_eq!(retry.sid(), t0.sid(), "the same session");
    api.me(&retry.access).expect(200);
    api.me(&t1.access).expect(200);
    let next = UserTokens::from_answer(&api.refresh(&retry.refresh));
    assert_eq!(next.sid(), t0.sid());
    api.me(&next.access).expect(200);
    assert!(audit_events(&srv, &session, &api.slug, "auth.refresh.reused").is_empty());

    // Tokens that are no refresh tokens. (Not an access token: at over 512 characters it is
    // refused as a malformed request.)
    for garbage in [
        "this-is-not-a-refresh-token-at-all-0123456789",
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "garbage",
    ] {
        api.refresh(garbage)
            .expect_error(401, "auth/invalid_refresh_token");
    }
    // The refresh token of another tenant is unknown here.
    let other = UserApi::signup(&srv, "Elsewhere", "other@example.com");
    let theirs = other.verified_user(&smtp, "pia@example.com", USER_PASSWORD);
    api.refresh(&theirs.refresh)
        .expect_error(401, "auth/invalid_refresh_token");
    other.me(&theirs.access).expect(200);
}

#[test]
fn a_rotated_refresh_token_used_after_the_grace_ends_the_session() {
    let (smtp, srv) = start_with_mail(&[NO_GRACE]);
    let api = UserApi::signup(&srv, "Reuse Co", "owner@example.com");
    let session = srv.login(&api.owner, PASSWORD);
    let t0 = api.verified_user(&smtp, "quinn@example.com", USER_PASSWORD);
    let bystander = api.login_ok("quinn@example.com", USER_PASSWORD);

    let t1 = UserTokens::from_answer(&api.refresh(&t0.refresh));
    let t2 = UserTokens::from_answer(&api.refresh(&t1.refresh));
    api.refresh(&t0.refresh)
        .expect_error(401, "auth/refresh_token_reused");
    // The whole family is dead: its newest refresh token and its access tokens.
    let r = api.refresh(&t2.refresh);
    assert_eq!(r.status, 401, "{}", r.body);
    for t in [&t0, &t1, &t2] {
        assert_invalid_token(&api, &t.access, "an access token of the revoked session");
    }
    // The user's other session is untouched.
    api.me(&bystander.access).expect(200);
    let b1 = UserTokens::from_answer(&api.refresh(&bystander.refresh));
    api.me(&b1.access).expect(200);
    assert_eq!(
        audit_events(&srv, &session, &api.slug, "auth.refresh.reused").len(),
        1
    );
}

#[test]
fn concurrent_refreshes_of_one_token_rotate_once_and_the_reuse_ends_the_session() {
    let (smtp, srv) = start_with_mail(&[NO_GRACE]);
    let api = UserApi::signup(&srv, "Race Co", "owner@example.com");
    let t0 = api.verified_user(&smtp, "rosa@example.com", USER_PASSWORD);
    let barrier = Barrier::new(8);
    let answers: Vec<AuthAnswer> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    api.refresh(&t0.refresh)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // The actor takes them one by one: the first rotates; the second is a reuse (no grace
    // here), which ends the session; the six after it find no session.
    let mut codes: Vec<(u16, String)> = answers
        .iter()
        .map(|a| (a.status, a.code().to_owned()))
        .collect();
    codes.sort();
    let mut expected = vec![(200, "<none>".to_owned())];
    expected.extend(std::iter::repeat_n(
        (401, "auth/invalid_refresh_token".to_owned()),
        6,
    ));
    expected.push((401, "auth/refresh_token_reused".to_owned()));
    assert_eq!(codes, expected);
    let issued = UserTokens::from_answer(answers.iter().find(|a| a.status == 200).unwrap());
    // The reuse revoked the session: what the first refresh issued is dead too.
    api.refresh(&issued.refresh)
        .expect_error(401, "auth/invalid_refresh_token");
    api.me(&issued.access)
        .expect_error(401, "auth/invalid_token");
    // The server is still well.
    let fresh = api.login_ok("rosa@example.com", USER_PASSWORD);
    api.me(&fresh.access).expect(200);
}

#[test]
fn me_refuses_every_bad_token_with_its_code() {
    let (smtp, srv) = start_with_mail(&[]);
    let a = UserApi::signup(&srv, "Aye Co", "owner-a@example.com");
    let b = UserApi::signup(&srv, "Bee Co", "owner-b@example.com");
    let t = a.verified_user(&smtp, "sam@example.com", USER_PASSWORD);
    let victim = a.verified_user(&smtp, "tia@example.com", USER_PASSWORD);
    a.me(&t.access).expect(200);

    a.send("GET", "/v1/auth/me", None, None)
        .expect_error(401, "auth/missing_token");

    let parts: Vec<&str> = t.access.split('.').collect();
    assert_eq!(parts.len(), 3, "a JWS in compact form");
    let header = jwt_part(&t.access, 0);
    let claims = t.claims();
    let enc = |v: &Value| b64url(v.to_string().as_bytes());

    // alg "none", with and without the original signature.
    let none_header = json!({"alg": "none", "typ": "at+jwt", "kid": header["kid"]});
    let none = format!("{}.{}.", enc(&none_header), parts[1]);
    assert_invalid_token(&a, &none, "alg none");
    let none_signed = format!("{}.{}.{}", enc(&none_header), parts[1], parts[2]);
    assert_invalid_token(&a, &none_signed, "alg none with a signature");

    // A payload changed under the original signature: another user, a higher assurance.
    let mut forged = claims.clone();
    forged["sub"] = victim.claims()["sub"].clone();
    assert_ne!(forged["sub"], claims["sub"]);
    let tampered = format!("{}.{}.{}", parts[0], enc(&forged), parts[2]);
    assert_invalid_token(&a, &tampered, "another sub");
    let mut forged = claims.clone();
    forged["aal"] = json!("AAL2");
    forged["exp"] = json!(claims["exp"].as_i64().unwrap() + 86_400);
    let tampered = format!("{}.{}.{}", parts[0], enc(&forged), parts[2]);
    assert_invalid_token(&a, &tampered, "a raised aal and exp");

    // A damaged signature.
    let mut sig: Vec<u8> = parts[2].as_bytes().to_vec();
    let mid = sig.len() / 2;
    sig[mid] = if sig[mid] == b'A' { b'B' } else { b'A' };
    let damaged = format!(
        "{}.{}.{}",
        parts[0],
        parts[1],
        String::from_utf8(sig).unwrap()
    );
    assert_invalid_token(&a, &damaged, "a damaged signature");

    // HS256: with garbage, and keyed with the public key in every form a confused verifier
    // could take as an HMAC secret (algorithm confusion): the JWKS and the JWK as served, the
    // key as PEM (with and without its final newline), as SPKI DER, and as the raw point.
    let mut hs = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    hs.typ = Some("at+jwt".into());
    hs.kid = header["kid"].as_str().map(str::to_owned);
    let jwks = a.jwks();
    let jwk = jwks["keys"]
        .as_array()
        .and_then(|keys| keys.iter().find(|k| k["kid"] == header["kid"]))
        .expect("the signing key in the JWKS")
        .clone();
    let coordinate = |name: &str| {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(jwk[name].as_str().expect("a coordinate"))
            .expect("base64url")
    };
    let mut point = vec![0x04];
    point.extend(coordinate("x"));
    point.extend(coordinate("y"));
    assert_eq!(point.len(), 65, "an uncompressed P-256 point");
    // SubjectPublicKeyInfo: id-ecPublicKey, prime256v1, then the point as a BIT STRING.
    let mut der = hex::decode("3059301306072a8648ce3d020106082a8648ce3d030107034200").unwrap();
    der.extend(&point);
    let pem_body = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(&der)
    };
    let lines: Vec<&str> = pem_body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let pem = format!(
        "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----",
        lines.join("\n")
    );
    for (what, secret) in [
        ("HS256 with garbage", b"garbage".to_vec()),
        ("HS256 keyed with the JWKS", jwks.to_string().into_bytes()),
        ("HS256 keyed with the JWK", jwk.to_string().into_bytes()),
        ("HS256 keyed with the PEM", pem.clone().into_bytes()),
        (
            "HS256 keyed with the PEM and its newline",
            format!("{pem}\n").into_bytes(),
        ),
        ("HS256 keyed with the SPKI DER", der.clone()),
        ("HS256 keyed with the raw point", point.clone()),
    ] {
        let token = jsonwebtoken::encode(
            &hs,
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(&secret),
        )
        .unwrap();
        assert_invalid_token(&a, &token, what);
    }

    // Another tenant's token: good there, refused here.
    let theirs = b.verified_user(&smtp, "sam@example.com", USER_PASSWORD);
    b.me(&theirs.access).expect(200);
    assert_invalid_token(&a, &theirs.access, "a token of another tenant");
    assert_invalid_token(&b, &t.access, "a token of another tenant");

    // A token of a session that ended.
    let ended = a.login_ok("sam@example.com", USER_PASSWORD);
    a.logout(&ended.access, None).expect(204);
    assert_invalid_token(&a, &ended.access, "a revoked session");

    // Not JWTs at all.
    for garbage in ["not-a-jwt", "a.b.c", "...."] {
        assert_invalid_token(&a, garbage, garbage);
    }
    // An empty token is no token: the challenge names no error (RFC 6750 3.1).
    let empty = a.me("");
    assert_eq!(
        (empty.status, empty.code()),
        (401, "auth/missing_token"),
        "{}",
        empty.body
    );
    let challenge = empty.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.starts_with("Bearer") && !challenge.contains("error="),
        "an empty token: WWW-Authenticate is {challenge:?}"
    );
    // The real one still works: the refusals were about the tokens.
    a.me(&t.access).expect(200);
}

#[test]
fn an_expired_access_token_is_refused_and_the_refresh_token_still_works() {
    let (smtp, srv) = start_with_mail(&[("TESSERA__TOKENS__ACCESS_TTL_SECS", "1")]);
    let api = UserApi::signup(&srv, "Short Co", "owner@example.com");
    let t = api.verified_user(&smtp, "uma@example.com", USER_PASSWORD);
    let expires_in = t.body["expires_in"].as_u64().expect("expires_in");
    assert!(expires_in <= 1, "{expires_in}");
    let claims = t.claims();
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        1
    );
    // The expiry itself is under test, so the clock has to move (about 2 s).
    assert!(
        eventually(Duration::from_secs(10), || api.me(&t.access).status == 401),
        "an expired access token is still accepted"
    );
    assert_invalid_token(&api, &t.access, "an expired token");
    let renewed = UserTokens::from_answer(&api.refresh(&t.refresh));
    assert!(renewed.claims()["exp"].as_i64().unwrap() > claims["exp"].as_i64().unwrap());
    assert_eq!(renewed.sid(), t.sid());
}

#[test]
fn sessions_are_listed_and_deleting_one_ends_it_at_once() {
    let (smtp, srv) = start_with_mail(&[]);
    let api = UserApi::signup(&srv, "Sess Co", "owner@example.com");
    let s1 = api.verified_user(&smtp, "vera@example.com", USER_PASSWORD);
    let s2 = api.login_ok("vera@example.com", USER_PASSWORD);
    let s3 = api.login_ok("vera@example.com", USER_PASSWORD);
    let other = api.verified_user(&smtp, "walt@example.com", USER_PASSWORD);

    let r = api.sessions(&s1.access);
    let list = r.expect(200).clone();
    assert_eq!(
        list["pagination"],
        json!({"next_cursor": null, "has_more": false})
    );
    let items = list["data"].as_array().unwrap();
    assert_eq!(items.len(), 3, "{list}");
    let now = OffsetDateTime::now_utc();
    for s in items {
        for k in ["created_at", "last_active_at", "expires_at"] {
            assert!(
                s[k].as_str()
                    .is_some_and(|v| OffsetDateTime::parse(v, &Rfc3339).is_ok()),
                "{k} of {s}"
            );
        }
        let expires = OffsetDateTime::parse(s["expires_at"].as_str().unwrap(), &Rfc3339).unwrap();
        assert!(expires > now, "{s}");
        // The level of a password session: the contract leaves the form open (1 or "AAL1").
        assert!(s["aal"] == json!(1) || s["aal"] == "AAL1", "{s}");
        assert_eq!(s["amr"], json!(["pwd"]), "{s}");
        assert!(s["current"].is_boolean(), "{s}");
    }
    let id1 = current_session_id(&api, &s1.access);
    let id2 = current_session_id(&api, &s2.access);
    let id3 = current_session_id(&api, &s3.access);
    assert_eq!(
        session_ids(&list),
        [id1.clone(), id2.clone(), id3.clone()]
            .into_iter()
            .collect::<BTreeSet<_>>()
    );
    // No other user's sessions in the list.
    let other_id = current_session_id(&api, &other.access);
    assert!(!session_ids(&list).contains(&other_id));

    api.delete_session(&s1.access, &id2).expect(204);
    assert_invalid_token(&api, &s2.access, "a deleted session");
    assert_eq!(api.refresh(&s2.refresh).status, 401);
    let list = api.sessions(&s1.access);
    assert_eq!(
        session_ids(list.expect(200)),
        [id1.clone(), id3.clone()]
            .into_iter()
            .collect::<BTreeSet<_>>()
    );
    api.me(&s3.access).expect(200);

    // Another user's session, or one that does not exist: 404, and nothing ends.
    api.delete_session(&s1.access, &other_id).expect(404);
    api.me(&other.access).expect(200);
    api.delete_session(&s1.access, &uuid::Uuid::new_v4().to_string())
        .expect(404);
    api.send("GET", "/v1/auth/sessions", None, None)
        .expect_error(401, "auth/missing_token");
    // Deleting the current session ends it too.
    api.delete_session(&s3.access, &id3).expect(204);
    assert_invalid_token(&api, &s3.access, "the deleted current session");
    api.me(&s1.access).expect(200);
}

#[test]
fn logout_ends_one_session_or_every_session_of_the_user() {
    let (smtp, srv) = start_with_mail(&[]);
    let api = UserApi::signup(&srv, "Bye Co", "owner@example.com");
    let session = srv.login(&api.owner, PASSWORD);
    let a = api.verified_user(&smtp, "xena@example.com", USER_PASSWORD);
    let b = api.login_ok("xena@example.com", USER_PASSWORD);
    let c = api.login_ok("xena@example.com", USER_PASSWORD);
    let someone_else = api.verified_user(&smtp, "yuri@example.com", USER_PASSWORD);

    api.send("POST", "/v1/auth/logout", None, None)
        .expect_error(401, "auth/missing_token");

    // Local (the default): only this session.
    api.logout(&a.access, None).expect(204);
    assert_invalid_token(&api, &a.access, "after logout");
    assert_eq!(api.refresh(&a.refresh).status, 401);
    api.me(&b.access).expect(200);
    api.me(&c.access).expect(200);

    // Global: every session of the user, and nobody else's.
    api.logout(&b.access, Some(&json!({"scope": "global"})))
        .expect(204);
    for t in [&b, &c] {
        assert_invalid_token(&api, &t.access, "after a global logout");
        assert_eq!(api.refresh(&t.refresh).status, 401);
    }
    api.me(&someone_else.access).expect(200);

    // Logging in again works; an explicit local logout ends just that.
    let d = api.login_ok("xena@example.com", USER_PASSWORD);
    let e = api.login_ok("xena@example.com", USER_PASSWORD);
    api.logout(&d.access, Some(&json!({"scope": "local"})))
        .expect(204);
    assert_invalid_token(&api, &d.access, "after a local logout");
    api.me(&e.access).expect(200);
    assert!(audit_events(&srv, &session, &api.slug, "auth.logout").len() >= 3);
}

#[test]
fn rotating_the_signing_key_keeps_old_tokens_and_signs_new_ones_with_the_new_key() {
    let (smtp, srv) = start_with_mail(&[]);
    let api = UserApi::signup(&srv, "Keys Co", "owner@example.com");
    let other = UserApi::signup(&srv, "Other Co", "other@example.com");
    let before = api.verified_user(&smtp, "zack@example.com", USER_PASSWORD);
    let (h0, _) = api.verify_access(&before.access);
    let kid0 = h0.kid.unwrap();

    let out = srv.admin(&["keys", "rotate", &api.slug], "").json();
    let kid1 = out["kid"].as_str().expect("kid").to_owned();
    assert_ne!(kid1, kid0);
    assert_eq!(out["previous_kid"], kid0.as_str());
    let until = OffsetDateTime::parse(
        out["previous_published_until"]
            .as_str()
            .expect("previous_published_until"),
        &Rfc3339,
    )
    .expect("an RFC 3339 time");
    assert!(until > OffsetDateTime::now_utc(), "{out}");

    let kids: BTreeSet<String> = api.jwks()["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap().to_owned())
        .collect();
    assert!(kids.contains(&kid0) && kids.contains(&kid1), "{kids:?}");

    // Tokens from before still work, and still verify through the JWKS.
    api.me(&before.access).expect(200);
    api.verify_access(&before.access);
    // New ones use the new key.
    let after = api.login_ok("zack@example.com", USER_PASSWORD);
    let (h1, _) = api.verify_access(&after.access);
    assert_eq!(h1.kid.as_deref(), Some(kid1.as_str()));
    api.me(&after.access).expect(200);
    let refreshed = UserTokens::from_answer(&api.refresh(&before.refresh));
    let (h2, _) = api.verify_access(&refreshed.access);
    assert_eq!(h2.kid.as_deref(), Some(kid1.as_str()));

    // Another tenant's keys are its own.
    let other_kids = other.jwks().to_string();
    assert!(!other_kids.contains(&kid0) && !other_kids.contains(&kid1));
    let out = srv.admin(&["keys", "rotate", "no-such-tenant"], "");
    assert!(!out.status.success(), "{}", out.stdout);
}

#[test]
fn an_acknowledged_refresh_survives_sigkill() {
    let (smtp, mut srv) = start_with_mail(&[NO_GRACE]);
    let mut api = UserApi::signup(&srv, "Crash Co", "owner@example.com");
    let t0 = api.verified_user(&smtp, "ada@example.com", USER_PASSWORD);
    let t1 = UserTokens::from_answer(&api.refresh(&t0.refresh));

    srv.kill();
    srv.restart();
    api.rebase(&srv);

    let t2 = UserTokens::from_answer(&api.refresh(&t1.refresh));
    api.me(&t2.access).expect(200);
    api.refresh(&t0.refresh)
        .expect_error(401, "auth/refresh_token_reused");
    assert_eq!(api.refresh(&t2.refresh).status, 401);
}
