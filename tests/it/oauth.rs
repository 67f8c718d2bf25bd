//! The tenant's OpenID provider, driven by a real OpenID Connect client library
//! (`openidconnect`) in API mode: discovery, authorize with consent, code + PKCE, ID token
//! (signature, nonce, at_hash), the `iss` parameter, userinfo, refresh rotation, revocation
//! and introspection; and every refusal the flow must make.

use openidconnect::{
    core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata, CoreUserInfoClaims},
    AccessTokenHash, AuthType, AuthorizationCode, ClientId, ClientSecret, CsrfToken,
    IntrospectionUrl, IssuerUrl, Nonce, OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier,
    RedirectUrl, RefreshToken, Scope, TokenIntrospectionResponse, TokenResponse,
};
use serde_json::{json, Value};

use crate::support::http;
use crate::support::*;

const CALLBACK: &str = "https://rp.example/callback";
const API: &str = "https://api.acme.example/orders";

/// Registers a client on the dashboard; answers its id and secret (none for a public one).
fn register_client(
    srv: &TestServer,
    s: &Session,
    slug: &str,
    client_type: &str,
    scopes: &[&str],
) -> (String, Option<String>) {
    let (st, c) = srv.dash_json(
        "POST",
        &format!("/v1/auth/dashboard/tenants/{slug}/oauth-clients"),
        s,
        Some(&json!({
            "name": "Relying Party",
            "client_type": client_type,
            "redirect_uris": [CALLBACK],
            "allowed_scopes": scopes,
        })),
    );
    assert_eq!(st, 201, "{c}");
    (
        c["client_id"].as_str().expect("client_id").to_owned(),
        c["client_secret"].as_str().map(str::to_owned),
    )
}

/// A resource of the tenant with one approved `normal` scope `orders:read`.
fn resource_with_scope(srv: &TestServer, s: &Session, slug: &str) -> (String, String) {
    let out = srv.admin(
        &[
            "resource", "register", "--tenant", slug, "--name", "Orders", "--uri", API,
        ],
        "",
    );
    let resource = out.json()["id"].as_str().expect("resource id").to_owned();
    let (st, entry) = srv.dash_json(
        "POST",
        &format!("/v1/resources/{resource}/scopes"),
        s,
        Some(&json!({
            "scope_name": "orders:read",
            "sensitivity": "normal",
            "display_metadata": {"kind": "locale_text", "locale_text": {
                "en": "Read your orders", "pl": "Odczyt zamówień", "de": "Bestellungen lesen",
                "fr": "Lire vos commandes", "es": "Leer sus pedidos"}},
        })),
    );
    assert_eq!(st, 201, "{entry}");
    let id = entry["id"].as_str().expect("scope id").to_owned();
    let approved = srv.admin(&["scope", "approve", &resource, &id], "");
    assert!(approved.status.success(), "{}", approved.stderr);
    (resource, id)
}

/// The authorize request in API mode: the tenant's UI sends the user's token.
pub(crate) fn authorize(api: &UserApi, url: &str, bearer: Option<&str>, lang: &str) -> AuthAnswer {
    let mut req = api
        .client
        .get(url)
        .header("accept", "application/json")
        .header("accept-language", lang);
    if let Some(t) = bearer {
        req = req.bearer_auth(t);
    }
    AuthAnswer::read(req.send().expect("authorize answers"))
}

fn consent(
    api: &UserApi,
    bearer: &str,
    shown: &Value,
    decision: &str,
    granted: Option<Value>,
) -> AuthAnswer {
    let mut body = json!({
        "decision": decision,
        "resource_commitment": shown["resource_commitment"],
    });
    for k in [
        "client_id",
        "redirect_uri",
        "response_type",
        "scope",
        "state",
        "nonce",
        "code_challenge",
        "code_challenge_method",
        "resource",
    ] {
        if !shown[k].is_null() {
            body[k] = shown[k].clone();
        }
    }
    if let Some(g) = granted {
        body["granted_scopes"] = g;
    }
    api.send_as(
        None,
        "POST",
        &format!("/v1/tenants/{}/oauth/consent", api.slug),
        Some(bearer),
        Some(&body),
        None,
    )
}

/// The query parameters of a redirect.
fn query_of(redirect_to: &str) -> std::collections::HashMap<String, String> {
    let u = url::Url::parse(redirect_to).expect("a URL");
    u.query_pairs().into_owned().collect()
}

pub(crate) fn form(
    api: &UserApi,
    path: &str,
    basic: Option<(&str, &str)>,
    pairs: &[(&str, &str)],
) -> AuthAnswer {
    let mut req = api.client.post(api.url(path)).form(pairs);
    if let Some((id, secret)) = basic {
        req = req.basic_auth(id, Some(secret));
    }
    AuthAnswer::read(req.send().expect("answers"))
}

#[test]
fn a_relying_party_signs_users_in_with_an_oidc_library() {
    let (smtp, srv, api, s) = user_setup("Provider", &[]);
    srv.reauth(&s, PASSWORD);
    let (_resource, scope_id) = resource_with_scope(&srv, &s, &api.slug);
    let scopes = ["openid", "email", "offline_access", "orders:read"];
    let (client_id, secret) = register_client(&srv, &s, &api.slug, "confidential", &scopes);
    let secret = secret.expect("a confidential client has a secret");
    let user = api.verified_user(&smtp, "reader@example.com", "correct horse battery");
    let http = http();

    // Discovery, as the library reads it.
    let issuer = IssuerUrl::new(api.issuer()).expect("issuer");
    let metadata = CoreProviderMetadata::discover(&issuer, &http).expect("discovery");
    let oauth = format!("{}/oauth", api.issuer());
    let client = CoreClient::from_provider_metadata(
        metadata,
        ClientId::new(client_id.clone()),
        Some(ClientSecret::new(secret.clone())),
    )
    .set_redirect_uri(RedirectUrl::new(CALLBACK.into()).expect("redirect"))
    .set_introspection_url(IntrospectionUrl::new(format!("{oauth}/introspect")).expect("url"));

    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, csrf, nonce) = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scope(Scope::new("email".into()))
        .add_scope(Scope::new("offline_access".into()))
        .add_scope(Scope::new("orders:read".into()))
        .add_extra_param("resource", API)
        .set_pkce_challenge(challenge)
        .url();

    // Nobody signed in: the UI is told to sign the user in, then repeat the request.
    let login = authorize(&api, url.as_str(), None, "en");
    let body = login.expect(200);
    assert_eq!(body["login_required"], true, "{body}");
    assert!(body["authorize_url"]
        .as_str()
        .unwrap()
        .contains("code_challenge="));

    // Signed in: the consent screen's payload.
    let shown = authorize(&api, url.as_str(), Some(&user.access), "de-DE,de;q=0.9");
    let shown = shown.expect(200).clone();
    assert_eq!(shown["consent_required"], true, "{shown}");
    assert_eq!(shown["client"]["name"], "Relying Party");
    assert_eq!(shown["client"]["verification"], "unverified");
    assert!(shown["client"]["registered_seconds_ago"].as_i64().unwrap() >= 0);
    assert_eq!(
        shown["scopes"],
        json!(["openid", "email", "offline_access", "orders:read"])
    );
    assert_eq!(shown["new_scopes"], shown["scopes"]);
    assert_eq!(shown["unchanged_scopes"], json!([]));
    assert_eq!(shown["is_re_consent"], false);
    assert_eq!(shown["change_reason"], "first_consent");
    assert_eq!(
        shown["custom_scopes"],
        json!([{"scope": "orders:read", "display_name": "Bestellungen lesen"}])
    );
    assert_eq!(shown["resources"], json!([API]));
    assert_eq!(shown["new_resources"], json!([API]));
    assert_eq!(shown["resource"], API);
    assert_eq!(shown["state"], csrf.secret().as_str());
    assert_eq!(shown["nonce"], nonce.secret().as_str());
    assert_eq!(shown["code_challenge_method"], "S256");
    assert_eq!(shown["response_type"], "code");
    assert_eq!(shown["agent_scopes"], json!([]));

    // A decision for another request than the one shown is refused.
    let mut forged = shown.clone();
    forged["scope"] = json!("openid email");
    consent(&api, &user.access, &forged, "approve", None)
        .expect_error(400, "oauth/consent_mismatch");
    // Only the individually checkable scope may be left out.
    consent(
        &api,
        &user.access,
        &shown,
        "approve",
        Some(json!(["openid", "orders:read"])),
    )
    .expect_error(400, "validation/invalid_request");

    let decided = consent(&api, &user.access, &shown, "approve", None);
    let to = decided.expect(200)["redirect_to"]
        .as_str()
        .expect("redirect_to")
        .to_owned();
    assert!(to.starts_with(CALLBACK), "{to}");
    let q = query_of(&to);
    assert_eq!(q["state"], *csrf.secret());
    assert_eq!(q["iss"], api.issuer(), "RFC 9207 iss");

    let tokens = client
        .exchange_code(AuthorizationCode::new(q["code"].clone()))
        .expect("token endpoint")
        .set_pkce_verifier(verifier)
        .request(&http)
        .expect("the code exchange");
    let id_token = tokens.id_token().expect("an ID token");
    let id_verifier = client.id_token_verifier();
    let claims = id_token
        .claims(&id_verifier, &nonce)
        .expect("a valid ID token");
    assert_eq!(
        claims.subject().as_str(),
        user.claims()["sub"].as_str().unwrap()
    );
    assert_eq!(
        claims.email().map(|e| e.as_str()),
        Some("reader@example.com")
    );
    assert_eq!(claims.email_verified(), Some(true));
    assert!(claims.auth_time().is_some());
    let expected_hash = claims.access_token_hash().expect("at_hash");
    let actual = AccessTokenHash::from_token(
        tokens.access_token(),
        id_token.signing_alg().expect("alg"),
        id_token.signing_key(&id_verifier).expect("key"),
    )
    .expect("hash");
    assert_eq!(&actual, expected_hash);
    let at = jwt_part(tokens.access_token().secret(), 1);
    assert_eq!(at["client_id"], client_id.as_str());
    assert_eq!(at["aud"], API, "aud is the resource asked for");
    assert_eq!(at["scope"], "openid email offline_access orders:read");
    assert_eq!(jwt_part(tokens.access_token().secret(), 0)["typ"], "at+jwt");

    // The client's token is not the user's own: first-party routes refuse it.
    api.me(tokens.access_token().secret())
        .expect_error(401, "auth/invalid_token");

    let info: CoreUserInfoClaims = client
        .user_info(
            tokens.access_token().clone(),
            Some(claims.subject().clone()),
        )
        .expect("userinfo endpoint")
        .request(&http)
        .expect("userinfo");
    assert_eq!(info.email().map(|e| e.as_str()), Some("reader@example.com"));
    // A first-party token is not for userinfo.
    let r = api
        .client
        .get(format!("{oauth}/userinfo"))
        .bearer_auth(&user.access)
        .send()
        .unwrap();
    assert_eq!(r.status(), 401);

    // Consent is per resource: the same client asking without the resource is asked again
    // (everything is new there); once approved, the next request gets its code at once.
    let second = |nonce_fn: fn() -> Nonce| {
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, _, nonce) = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                nonce_fn,
            )
            .add_scope(Scope::new("email".into()))
            .set_pkce_challenge(challenge)
            .url();
        (url, verifier, nonce)
    };
    let (url2, _, _) = second(Nonce::new_random);
    let asked = authorize(&api, url2.as_str(), Some(&user.access), "en")
        .expect(200)
        .clone();
    assert_eq!(asked["consent_required"], true, "{asked}");
    assert_eq!(asked["is_re_consent"], true);
    assert_eq!(asked["new_scopes"], json!(["openid", "email"]));
    assert_eq!(asked["new_resources"], json!([]));
    consent(&api, &user.access, &asked, "approve", None).expect(200);
    let (url3, verifier2, nonce2) = second(Nonce::new_random);
    let again = authorize(&api, url3.as_str(), Some(&user.access), "en");
    let to2 = again.expect(200)["redirect_to"]
        .as_str()
        .expect("a code at once")
        .to_owned();
    let t2 = client
        .exchange_code(AuthorizationCode::new(query_of(&to2)["code"].clone()))
        .unwrap()
        .set_pkce_verifier(verifier2)
        .request(&http)
        .expect("second exchange");
    t2.id_token()
        .unwrap()
        .claims(&id_verifier, &nonce2)
        .expect("ID token");
    assert_eq!(
        jwt_part(t2.access_token().secret(), 1)["aud"],
        format!("{oauth}/userinfo"),
        "never the slug of first-party tokens"
    );

    // Refresh rotation: the new pair works, the old refresh token is reuse.
    let old_refresh = tokens.refresh_token().expect("a refresh token").clone();
    let refreshed = client
        .exchange_refresh_token(&old_refresh)
        .unwrap()
        .request(&http)
        .expect("refresh");
    assert_ne!(
        refreshed.refresh_token().unwrap().secret(),
        old_refresh.secret()
    );
    assert_eq!(
        jwt_part(refreshed.access_token().secret(), 1)["scope"],
        "openid email offline_access orders:read"
    );

    // Introspection (the library's request), then revocation, then introspection again.
    let live = client
        .introspect(refreshed.access_token())
        .request(&http)
        .expect("introspection");
    assert!(live.active());
    assert_eq!(
        live.client_id().map(|c| c.as_str()),
        Some(client_id.as_str())
    );
    // Deleting a catalog scope keeps it out of every later token.
    let (st, _) = srv.dash_json(
        "DELETE",
        &format!("/v1/resources/{_resource}/scopes/{scope_id}"),
        &s,
        None,
    );
    assert_eq!(st, 204);
    let after_delete = client
        .exchange_refresh_token(refreshed.refresh_token().unwrap())
        .unwrap()
        .request(&http)
        .expect("refresh after the scope was deleted");
    assert_eq!(
        jwt_part(after_delete.access_token().secret(), 1)["scope"],
        "openid email offline_access"
    );
    // (The library refuses to revoke over plain http, so the revocation is posted by hand.)
    let revoked = form(
        &api,
        &format!("/v1/tenants/{}/oauth/revoke", api.slug),
        Some((&client_id, &secret)),
        &[
            ("token", after_delete.access_token().secret()),
            ("token_type_hint", "access_token"),
        ],
    );
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    let dead = client
        .introspect(after_delete.access_token())
        .request(&http)
        .expect("introspection");
    assert!(!dead.active(), "a revoked grant's token is inactive");
    let refresh_dead = client
        .exchange_refresh_token(after_delete.refresh_token().unwrap())
        .unwrap()
        .request(&http);
    assert!(
        refresh_dead.is_err(),
        "the revoked grant's refresh token is dead"
    );
    let r = api
        .client
        .get(format!("{oauth}/userinfo"))
        .bearer_auth(after_delete.access_token().secret())
        .send()
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .contains("invalid_token"));

    // The user's consents, and withdrawing one ends the client's other grant too.
    let list = api.send_as(
        Some(&api.api_key),
        "GET",
        "/v1/users/me/consents",
        Some(&user.access),
        None,
        None,
    );
    let data = list.expect(200)["data"].clone();
    assert_eq!(data.as_array().unwrap().len(), 1, "{data}");
    assert_eq!(data[0]["client_id"], client_id.as_str());
    assert_eq!(data[0]["client_name"], "Relying Party");
    assert_eq!(data[0]["resources"], json!([API]));
    let second_refresh: RefreshToken = t2.refresh_token().unwrap().clone();
    let gone = api.send_as(
        Some(&api.api_key),
        "DELETE",
        &format!("/v1/users/me/consents/{client_id}"),
        Some(&user.access),
        None,
        None,
    );
    assert_eq!(gone.status, 204, "{}", gone.body);
    assert!(client
        .exchange_refresh_token(&second_refresh)
        .unwrap()
        .request(&http)
        .is_err());
    let empty = api.send_as(
        Some(&api.api_key),
        "GET",
        "/v1/users/me/consents",
        Some(&user.access),
        None,
        None,
    );
    assert_eq!(empty.expect(200)["data"], json!([]));
    api.send_as(
        Some(&api.api_key),
        "DELETE",
        &format!("/v1/users/me/consents/{client_id}"),
        Some(&user.access),
        None,
        None,
    )
    .expect_error(404, "resource/not_found");

    // The audit trail names consents, exchanges, revocation and withdrawal.
    let (st, audit) = srv.dash_json(
        "GET",
        &format!(
            "/v1/auth/dashboard/tenants/{}/audit-events?limit=100",
            api.slug
        ),
        &s,
        None,
    );
    assert_eq!(st, 200, "{audit}");
    let kinds: Vec<&str> = audit["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["event_type"].as_str().or(e["type"].as_str()))
        .collect();
    for k in [
        "oauth.consent.granted",
        "oauth.token.revoked",
        "oauth.consent.withdrawn",
    ] {
        assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
    }
}

/// A signed-in user, a confidential client and a public one.
pub(crate) struct Flow {
    pub(crate) api: UserApi,
    pub(crate) user: UserTokens,
    pub(crate) confidential: (String, String),
    pub(crate) public: String,
}

fn flow(srv: &TestServer, smtp: &SmtpStub, api: UserApi, s: &Session) -> Flow {
    let user = api.verified_user(smtp, "neg@example.com", "correct horse battery");
    flow_for(srv, s, api, user)
}

/// A confidential client and a public one (`openid email`), registered by the owner `s`, and
/// `user` signed in.
pub(crate) fn flow_for(srv: &TestServer, s: &Session, api: UserApi, user: UserTokens) -> Flow {
    srv.reauth(s, PASSWORD);
    let (cid, secret) = register_client(srv, s, &api.slug, "confidential", &["openid", "email"]);
    let (pid, none) = register_client(srv, s, &api.slug, "public", &["openid", "email"]);
    assert!(none.is_none());
    Flow {
        api,
        user,
        confidential: (cid, secret.unwrap()),
        public: pid,
    }
}

impl Flow {
    pub(crate) fn url(&self, client_id: &str, extra: &[(&str, &str)]) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        q.append_pair("client_id", client_id);
        q.append_pair("redirect_uri", CALLBACK);
        let defaults = [
            ("response_type", "code"),
            ("scope", "openid email"),
            ("state", "st-1"),
            ("code_challenge", CHALLENGE),
            ("code_challenge_method", "S256"),
        ];
        for (k, v) in defaults {
            if !extra.iter().any(|(e, _)| *e == k) {
                q.append_pair(k, v);
            }
        }
        for (k, v) in extra {
            if !v.is_empty() {
                q.append_pair(k, v);
            }
        }
        format!("{}/oauth/authorize?{}", self.api.issuer(), q.finish())
    }

    /// A code for `client_id`, consenting when asked.
    pub(crate) fn code(&self, client_id: &str) -> String {
        let a = authorize(
            &self.api,
            &self.url(client_id, &[]),
            Some(&self.user.access),
            "en",
        );
        let body = a.expect(200).clone();
        let to = if body["consent_required"] == true {
            consent(&self.api, &self.user.access, &body, "approve", None).expect(200)["redirect_to"]
                .clone()
        } else {
            body["redirect_to"].clone()
        };
        query_of(to.as_str().expect("redirect_to"))["code"].clone()
    }

    pub(crate) fn exchange(&self, client: (&str, &str), code: &str, verifier: &str) -> AuthAnswer {
        form(
            &self.api,
            &format!("/v1/tenants/{}/oauth/token", self.api.slug),
            Some(client),
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", CALLBACK),
                ("code_verifier", verifier),
            ],
        )
    }
}

/// RFC 7636 appendix B.
pub(crate) const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

#[track_caller]
fn redirected_error(a: &AuthAnswer, error: &str, iss: &str) {
    let to = a.expect(200)["redirect_to"]
        .as_str()
        .unwrap_or_else(|| panic!("no redirect: {}", a.body));
    assert!(to.starts_with(CALLBACK), "{to}");
    let q = query_of(to);
    assert_eq!(q.get("error").map(String::as_str), Some(error), "{to}");
    assert_eq!(q.get("state").map(String::as_str), Some("st-1"), "{to}");
    assert_eq!(q.get("iss").map(String::as_str), Some(iss), "{to}");
    assert!(!q.contains_key("code"));
}

#[test]
fn authorize_refuses_what_it_must_and_never_redirects_to_an_unregistered_uri() {
    let (smtp, srv, api, s) = user_setup("Refusals", &[]);
    let f = flow(&srv, &smtp, api, &s);
    let (cid, _) = (&f.confidential.0, &f.confidential.1);
    let iss = f.api.issuer();
    let bearer = Some(f.user.access.as_str());

    // The client or the redirect URI is wrong: shown, never redirected.
    let evil = f
        .url(cid, &[])
        .replace("rp.example%2Fcallback", "evil.example%2Fcallback");
    let r = authorize(&f.api, &evil, bearer, "en");
    r.expect_error(400, "oauth/invalid_redirect_uri");
    assert!(r.header("location").is_none());
    authorize(&f.api, &f.url("tc_nope", &[]), bearer, "en")
        .expect_error(400, "oauth/invalid_client");
    let no_redirect = f.url(cid, &[]).replace(
        &format!("redirect_uri={}", "https%3A%2F%2Frp.example%2Fcallback"),
        "",
    );
    authorize(&f.api, &no_redirect, bearer, "en").expect_error(400, "oauth/invalid_redirect_uri");
    // A repeated parameter.
    let twice = format!("{}&scope=openid", f.url(cid, &[]));
    authorize(&f.api, &twice, bearer, "en").expect_error(400, "oauth/invalid_request");
    // Another tenant's client is unknown here.
    let other = UserApi::signup(&srv, "Elsewhere", "else@example.com");
    let there = f.url(cid, &[]).replace(&f.api.slug, &other.slug);
    authorize(&f.api, &there, None, "en").expect_error(400, "oauth/invalid_client");

    // Everything else goes back to the client with error, state and iss.
    redirected_error(
        &authorize(
            &f.api,
            &f.url(cid, &[("response_type", "token")]),
            bearer,
            "en",
        ),
        "unsupported_response_type",
        &iss,
    );
    redirected_error(
        &authorize(&f.api, &f.url(cid, &[("code_challenge", "")]), bearer, "en"),
        "invalid_request",
        &iss,
    );
    redirected_error(
        &authorize(
            &f.api,
            &f.url(cid, &[("code_challenge_method", "plain")]),
            bearer,
            "en",
        ),
        "invalid_request",
        &iss,
    );
    redirected_error(
        &authorize(
            &f.api,
            &f.url(cid, &[("code_challenge_method", "")]),
            bearer,
            "en",
        ),
        "invalid_request",
        &iss,
    );
    redirected_error(
        &authorize(
            &f.api,
            &f.url(cid, &[("scope", "openid phone")]),
            bearer,
            "en",
        ),
        "invalid_scope",
        &iss,
    );
    redirected_error(
        &authorize(
            &f.api,
            &f.url(cid, &[("resource", "https://unknown.example/")]),
            bearer,
            "en",
        ),
        "invalid_target",
        &iss,
    );
    redirected_error(
        &authorize(
            &f.api,
            &f.url(cid, &[("prompt", "none login")]),
            bearer,
            "en",
        ),
        "invalid_request",
        &iss,
    );
    redirected_error(
        &authorize(&f.api, &f.url(cid, &[("prompt", "none")]), None, "en"),
        "login_required",
        &iss,
    );
    // Signed in but no consent yet, and prompt=none forbids asking.
    redirected_error(
        &authorize(&f.api, &f.url(cid, &[("prompt", "none")]), bearer, "en"),
        "consent_required",
        &iss,
    );

    // The user denies.
    let shown = authorize(&f.api, &f.url(cid, &[]), bearer, "en")
        .expect(200)
        .clone();
    assert_eq!(shown["consent_required"], true);
    redirected_error(
        &consent(&f.api, &f.user.access, &shown, "deny", None),
        "access_denied",
        &iss,
    );
    // A consent decision needs the user.
    consent(&f.api, "not-a-token", &shown, "approve", None).expect_error(401, "auth/invalid_token");

    // prompt=login asks for a sign-in even with a session, and the repeat drops it.
    let relog = authorize(&f.api, &f.url(cid, &[("prompt", "login")]), bearer, "en");
    let repeat = relog.expect(200)["authorize_url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!repeat.contains("prompt"), "{repeat}");
    // max_age=0 on a session older than a second asks for a sign-in too.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let aged = authorize(&f.api, &f.url(cid, &[("max_age", "0")]), bearer, "en");
    assert_eq!(aged.expect(200)["login_required"], true, "{}", aged.body);
}

#[test]
fn the_token_endpoint_holds_codes_to_their_client_verifier_and_single_use() {
    let (smtp, srv, api, s) = user_setup(
        "Codes",
        &[("TESSERA__TOKENS__AUTHORIZATION_CODE_TTL_SECS", "2")],
    );
    let f = flow(&srv, &smtp, api, &s);
    let conf = (f.confidential.0.as_str(), f.confidential.1.as_str());
    let token_path = format!("/v1/tenants/{}/oauth/token", f.api.slug);

    // Wrong secret, unknown client, a public client presenting a secret: 401 invalid_client.
    let code = f.code(conf.0);
    let wrong = f.exchange((conf.0, "tcs_wrong"), &code, VERIFIER);
    assert_eq!(
        (wrong.status, wrong.body["error"].as_str()),
        (401, Some("invalid_client")),
        "{}",
        wrong.body
    );
    assert!(wrong
        .header("www-authenticate")
        .unwrap()
        .starts_with("Basic"));
    let public_with_secret = form(
        &f.api,
        &token_path,
        None,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
            ("client_id", &f.public),
            ("client_secret", "anything"),
        ],
    );
    assert_eq!(
        public_with_secret.status, 401,
        "{}",
        public_with_secret.body
    );
    // The confidential client without its secret is not a public client.
    let no_secret = form(
        &f.api,
        &token_path,
        None,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
            ("client_id", conf.0),
        ],
    );
    assert_eq!(no_secret.body["error"], "invalid_client");
    // Another client's code: refused, and the code stays good for its own client.
    let theirs = form(
        &f.api,
        &token_path,
        None,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
            ("client_id", &f.public),
        ],
    );
    assert_eq!(
        (theirs.status, theirs.body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    // The password grant and unknown grants are refused.
    let pw = form(
        &f.api,
        &token_path,
        Some(conf),
        &[
            ("grant_type", "password"),
            ("username", "a"),
            ("password", "b"),
        ],
    );
    assert_eq!(pw.body["error"], "unsupported_grant_type");

    let first = f.exchange(conf, &code, VERIFIER);
    let tokens = first.expect(200).clone();
    assert_eq!(first.header("cache-control").as_deref(), Some("no-store"));
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let introspect = |token: &str| {
        form(
            &f.api,
            &format!("/v1/tenants/{}/oauth/introspect", f.api.slug),
            Some(conf),
            &[("token", token)],
        )
    };
    assert_eq!(introspect(&access).expect(200)["active"], true);
    assert_eq!(introspect(&refresh).expect(200)["active"], true);

    // A second use of the code: refused, and what the first one issued is revoked.
    let again = f.exchange(conf, &code, VERIFIER);
    assert_eq!(again.body["error"], "invalid_grant", "{}", again.body);
    assert_eq!(introspect(&access).expect(200)["active"], false);
    assert_eq!(introspect(&refresh).expect(200), &json!({"active": false}));
    let dead = form(
        &f.api,
        &token_path,
        Some(conf),
        &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
    );
    assert_eq!(dead.body["error"], "invalid_grant");

    // PKCE: a wrong verifier burns the code; so does a wrong redirect URI.
    let code = f.code(conf.0);
    let other_verifier = "a".repeat(43);
    assert_eq!(
        f.exchange(conf, &code, &other_verifier).body["error"],
        "invalid_grant"
    );
    assert_eq!(
        f.exchange(conf, &code, VERIFIER).body["error"],
        "invalid_grant"
    );
    let code = f.code(conf.0);
    let moved = form(
        &f.api,
        &token_path,
        Some(conf),
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", "https://rp.example/other"),
            ("code_verifier", VERIFIER),
        ],
    );
    assert_eq!(moved.body["error"], "invalid_grant");
    // Burnt: the right redirect URI and verifier no longer redeem it.
    let retried = f.exchange(conf, &code, VERIFIER);
    assert_eq!(retried.body["error"], "invalid_grant", "{}", retried.body);
    // A missing verifier is a malformed request.
    let code = f.code(conf.0);
    let bare = form(
        &f.api,
        &token_path,
        Some(conf),
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CALLBACK),
        ],
    );
    assert_eq!(bare.body["error"], "invalid_request");

    // Another tenant's code is nothing to that tenant: neither to its clients nor to this
    // tenant's own client at its token endpoint. The control: the same code, at its own
    // tenant, is redeemed afterwards, so the refusals were about the tenant alone.
    let code = f.code(conf.0);
    let other = UserApi::signup(&srv, "Other Codes", "other@example.com");
    let s2 = srv.login(&other.owner, PASSWORD);
    srv.reauth(&s2, PASSWORD);
    let (oid, osecret) = register_client(&srv, &s2, &other.slug, "confidential", &["openid"]);
    let osecret = osecret.unwrap();
    let cross = form(
        &other,
        &format!("/v1/tenants/{}/oauth/token", other.slug),
        Some((&oid, &osecret)),
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
        ],
    );
    assert_eq!(cross.body["error"], "invalid_grant", "{}", cross.body);
    let own_client_there = form(
        &other,
        &format!("/v1/tenants/{}/oauth/token", other.slug),
        Some(conf),
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
        ],
    );
    // This tenant's client is unknown there.
    assert_eq!(
        (
            own_client_there.status,
            own_client_there.body["error"].as_str()
        ),
        (401, Some("invalid_client")),
        "{}",
        own_client_there.body
    );
    let control = f.exchange(conf, &code, VERIFIER);
    assert!(control.body["access_token"].is_string(), "{}", control.body);

    // An expired code (the TTL is 2 s here).
    let code = f.code(conf.0);
    std::thread::sleep(std::time::Duration::from_millis(2200));
    assert_eq!(
        f.exchange(conf, &code, VERIFIER).body["error"],
        "invalid_grant"
    );

    // A public client exchanges with PKCE alone; it may not introspect.
    let a = authorize(&f.api, &f.url(&f.public, &[]), Some(&f.user.access), "en")
        .expect(200)
        .clone();
    let to =
        consent(&f.api, &f.user.access, &a, "approve", None).expect(200)["redirect_to"].clone();
    let code = query_of(to.as_str().unwrap())["code"].clone();
    let ok = form(
        &f.api,
        &token_path,
        None,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
            ("client_id", &f.public),
        ],
    );
    let public_tokens = ok.expect(200).clone();
    let no = form(
        &f.api,
        &format!("/v1/tenants/{}/oauth/introspect", f.api.slug),
        None,
        &[
            ("token", public_tokens["access_token"].as_str().unwrap()),
            ("client_id", &f.public),
        ],
    );
    assert_eq!(no.body["error"], "unauthorized_client", "{}", no.body);
    // A public client's refresh token is bound to it: the confidential client cannot use it.
    let stolen = form(
        &f.api,
        &token_path,
        Some(conf),
        &[
            ("grant_type", "refresh_token"),
            (
                "refresh_token",
                public_tokens["refresh_token"].as_str().unwrap(),
            ),
        ],
    );
    assert_eq!(stolen.body["error"], "invalid_grant");
    // Nor is a first-party refresh token an OAuth one, or the other way round.
    let first_party = form(
        &f.api,
        &token_path,
        None,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &f.user.refresh),
            ("client_id", &f.public),
        ],
    );
    assert_eq!(first_party.body["error"], "invalid_grant");
    f.api
        .refresh(public_tokens["refresh_token"].as_str().unwrap())
        .expect_error(401, "auth/invalid_refresh_token");
    // A re-keyed client's old secret, and a deleted client, get no more tokens; a deleted
    // client's authorize requests are refused to the caller.
    srv.reauth(&s, PASSWORD);
    let clients = format!("/v1/auth/dashboard/tenants/{}/oauth-clients", f.api.slug);
    let (st, rotated) = srv.dash_json(
        "POST",
        &format!("{clients}/{}/rotate-secret", conf.0),
        &s,
        None,
    );
    assert_eq!(st, 200, "{rotated}");
    let code = f.code(conf.0);
    assert_eq!(
        f.exchange(conf, &code, VERIFIER).body["error"],
        "invalid_client"
    );
    let new_secret = rotated["client_secret"].as_str().unwrap();
    let code = f.code(conf.0);
    f.exchange((conf.0, new_secret), &code, VERIFIER)
        .expect(200);
    let (st, _) = srv.dash_json("DELETE", &format!("{clients}/{}", f.public), &s, None);
    assert_eq!(st, 204);
    authorize(&f.api, &f.url(&f.public, &[]), Some(&f.user.access), "en")
        .expect_error(400, "oauth/invalid_client");
    let gone = form(
        &f.api,
        &token_path,
        None,
        &[
            ("grant_type", "refresh_token"),
            (
                "refresh_token",
                public_tokens["refresh_token"].as_str().unwrap(),
            ),
            ("client_id", &f.public),
        ],
    );
    assert_eq!(gone.body["error"], "invalid_client");
    let dead = form(
        &f.api,
        &format!("/v1/tenants/{}/oauth/introspect", f.api.slug),
        Some((conf.0, new_secret)),
        &[("token", public_tokens["access_token"].as_str().unwrap())],
    );
    assert_eq!(
        dead.expect(200)["active"],
        false,
        "a deleted client's tokens are inactive"
    );
    // A form body is required.
    let json_body = f
        .api
        .client
        .post(f.api.url(&token_path))
        .json(&json!({"grant_type": "refresh_token"}))
        .send()
        .unwrap();
    assert_eq!(json_body.status(), 400);
}

#[test]
fn rp_initiated_logout_ends_the_sign_in_session_and_returns_to_a_registered_uri() {
    let (smtp, srv, api, s) = user_setup("Logout", &[]);
    srv.reauth(&s, PASSWORD);
    let (st, c) = srv.dash_json(
        "POST",
        &format!("/v1/auth/dashboard/tenants/{}/oauth-clients", api.slug),
        &s,
        Some(&json!({
            "name": "Signs Out",
            "client_type": "public",
            "redirect_uris": [CALLBACK],
            "post_logout_redirect_uris": ["https://rp.example/bye"],
            "allowed_scopes": ["openid"],
        })),
    );
    assert_eq!(st, 201, "{c}");
    let client_id = c["client_id"].as_str().unwrap().to_owned();
    let user = api.verified_user(&smtp, "out@example.com", "correct horse battery");
    let f = Flow {
        api: api.clone(),
        user: user.clone(),
        confidential: (String::new(), String::new()),
        public: client_id.clone(),
    };
    let url = f.url(&client_id, &[("scope", "openid")]);
    let shown = authorize(&api, &url, Some(&user.access), "en")
        .expect(200)
        .clone();
    let to =
        consent(&api, &user.access, &shown, "approve", None).expect(200)["redirect_to"].clone();
    let code = query_of(to.as_str().unwrap())["code"].clone();
    let token_path = format!("/v1/tenants/{}/oauth/token", api.slug);
    let tokens = form(
        &api,
        &token_path,
        None,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
            ("client_id", &client_id),
        ],
    );
    let id_token = tokens.expect(200)["id_token"].as_str().unwrap().to_owned();
    assert_eq!(
        jwt_part(&id_token, 1)["sid"],
        user.sid().as_str(),
        "sid is the sign-in session"
    );
    let disco = api.send_as(
        None,
        "GET",
        &format!("/v1/tenants/{}/.well-known/openid-configuration", api.slug),
        None,
        None,
        None,
    );
    let end = disco.expect(200)["end_session_endpoint"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(end, format!("{}/oauth/end_session", api.issuer()));

    let http = http();
    let get = |q: &[(&str, &str)]| {
        let mut u = url::Url::parse(&end).unwrap();
        u.query_pairs_mut().extend_pairs(q);
        AuthAnswer::read(http.get(u).send().unwrap())
    };
    get(&[]).expect_error(400, "oauth/invalid_request");
    get(&[("id_token_hint", &user.access)]).expect_error(400, "oauth/invalid_request");
    get(&[
        ("id_token_hint", &id_token),
        ("post_logout_redirect_uri", "https://evil.example/"),
    ])
    .expect_error(400, "oauth/invalid_post_logout_redirect_uri");
    get(&[("id_token_hint", &id_token), ("client_id", "tc_other")])
        .expect_error(400, "oauth/invalid_client");
    // Nothing was ended by the refusals.
    api.me(&user.access).expect(200);

    let out = get(&[
        ("id_token_hint", &id_token),
        ("post_logout_redirect_uri", "https://rp.example/bye"),
        ("state", "bye-1"),
    ]);
    assert_eq!(out.status, 302, "{}", out.body);
    assert_eq!(
        out.header("location").as_deref(),
        Some("https://rp.example/bye?state=bye-1")
    );
    api.me(&user.access).expect_error(401, "auth/invalid_token");
    // Again: nothing left to end, the same answer.
    assert_eq!(
        get(&[("id_token_hint", &id_token)]).expect(200)["signed_out"],
        true
    );
}

/// A confidential client registered with `method` (`openid email`): its id and secret.
fn register_with_method(
    srv: &TestServer,
    s: &Session,
    slug: &str,
    method: &str,
) -> (String, String) {
    let (st, c) = srv.dash_json(
        "POST",
        &format!("/v1/auth/dashboard/tenants/{slug}/oauth-clients"),
        s,
        Some(&json!({
            "name": format!("Only {method}"),
            "client_type": "confidential",
            "token_endpoint_auth_method": method,
            "redirect_uris": [CALLBACK],
            "allowed_scopes": ["openid", "email"],
        })),
    );
    assert_eq!(st, 201, "{c}");
    assert_eq!(c["token_endpoint_auth_method"], method);
    (
        c["client_id"].as_str().expect("client_id").to_owned(),
        c["client_secret"]
            .as_str()
            .expect("client_secret")
            .to_owned(),
    )
}

/// The form of a code exchange (the flow's redirect URI and verifier).
fn code_exchange(code: &str) -> [(&str, &str); 4] {
    [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", CALLBACK),
        ("code_verifier", VERIFIER),
    ]
}

/// A form post authenticated by `client_secret_post`: the id and secret in the body.
fn in_body(api: &UserApi, path: &str, client: (&str, &str), pairs: &[(&str, &str)]) -> AuthAnswer {
    let mut all = pairs.to_vec();
    all.extend([("client_id", client.0), ("client_secret", client.1)]);
    form(api, path, None, &all)
}

#[test]
fn a_confidential_client_takes_either_secret_method_unless_it_registered_one() {
    let (smtp, srv, api, s) = user_setup("Client Methods", &[]);
    let f = flow(&srv, &smtp, api, &s);
    let (id, secret) = (f.confidential.0.as_str(), f.confidential.1.as_str());
    let slug = f.api.slug.clone();
    let token_path = format!("/v1/tenants/{slug}/oauth/token");
    let introspect_path = format!("/v1/tenants/{slug}/oauth/introspect");
    let revoke_path = format!("/v1/tenants/{slug}/oauth/revoke");

    // Registered without a method: the registry says null, and discovery lists both.
    let (st, shown) = srv.dash_json(
        "GET",
        &format!("/v1/auth/dashboard/tenants/{slug}/oauth-clients/{id}"),
        &s,
        None,
    );
    assert_eq!(st, 200, "{shown}");
    assert_eq!(shown["token_endpoint_auth_method"], Value::Null);
    let disco = f
        .api
        .send_as(
            None,
            "GET",
            &format!("/v1/tenants/{slug}/.well-known/openid-configuration"),
            None,
            None,
            None,
        )
        .expect(200)
        .clone();
    for m in ["client_secret_basic", "client_secret_post"] {
        assert!(
            disco["token_endpoint_auth_methods_supported"]
                .as_array()
                .unwrap()
                .contains(&json!(m)),
            "{disco}"
        );
    }

    // The library sending the secret in the body (`client_secret_post`), as openid-client's
    // quick start does.
    let http = http();
    let metadata =
        CoreProviderMetadata::discover(&IssuerUrl::new(f.api.issuer()).expect("issuer"), &http)
            .expect("discovery");
    let client = CoreClient::from_provider_metadata(
        metadata,
        ClientId::new(id.to_owned()),
        Some(ClientSecret::new(secret.to_owned())),
    )
    .set_redirect_uri(RedirectUrl::new(CALLBACK.into()).expect("redirect"))
    .set_auth_type(AuthType::RequestBody);
    let code = f.code(id);
    let posted = client
        .exchange_code(AuthorizationCode::new(code))
        .expect("token endpoint")
        .set_pkce_verifier(PkceCodeVerifier::new(VERIFIER.into()))
        .request(&http)
        .expect("a code exchange with client_secret_post");
    assert!(posted.id_token().is_some());
    // And HTTP Basic (`client_secret_basic`).
    let code = f.code(id);
    let basic = f
        .exchange((id, secret), &code, VERIFIER)
        .expect(200)
        .clone();
    // Introspection and revocation take either too.
    let access = posted.access_token().secret().clone();
    let live = in_body(
        &f.api,
        &introspect_path,
        (id, secret),
        &[("token", &access)],
    );
    assert_eq!(live.expect(200)["active"], true);
    let by_basic = form(
        &f.api,
        &introspect_path,
        Some((id, secret)),
        &[("token", &access)],
    );
    assert_eq!(by_basic.expect(200)["active"], true);
    in_body(&f.api, &revoke_path, (id, secret), &[("token", &access)]).expect(200);
    let dead = form(
        &f.api,
        &introspect_path,
        Some((id, secret)),
        &[("token", &access)],
    );
    assert_eq!(
        dead.expect(200)["active"],
        false,
        "revoked by client_secret_post"
    );
    let refresh = basic["refresh_token"].as_str().unwrap();
    let revoked = form(
        &f.api,
        &revoke_path,
        Some((id, secret)),
        &[("token", refresh)],
    );
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    let dead = in_body(
        &f.api,
        &introspect_path,
        (id, secret),
        &[("token", refresh)],
    );
    assert_eq!(dead.expect(200)["active"], false);
    // A wrong secret is refused whichever way it comes.
    let code = f.code(id);
    let wrong = in_body(
        &f.api,
        &token_path,
        (id, "tcs_wrong"),
        &code_exchange(&code),
    );
    assert_eq!(wrong.status, 401, "{}", wrong.body);

    // Registered with one method: that one only, at every endpoint.
    let refused = |a: &AuthAnswer| {
        assert_eq!(
            (a.status, a.body["error"].as_str()),
            (401, Some("invalid_client")),
            "{}",
            a.body
        );
        assert!(a.header("www-authenticate").unwrap().starts_with("Basic"));
    };
    let (bid, bsecret) = register_with_method(&srv, &s, &slug, "client_secret_basic");
    let code = f.code(&bid);
    refused(&in_body(
        &f.api,
        &token_path,
        (&bid, &bsecret),
        &code_exchange(&code),
    ));
    let tokens = form(
        &f.api,
        &token_path,
        Some((&bid, &bsecret)),
        &code_exchange(&code),
    );
    let access = tokens.expect(200)["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    refused(&in_body(
        &f.api,
        &introspect_path,
        (&bid, &bsecret),
        &[("token", &access)],
    ));
    refused(&in_body(
        &f.api,
        &revoke_path,
        (&bid, &bsecret),
        &[("token", &access)],
    ));
    let live = form(
        &f.api,
        &introspect_path,
        Some((&bid, &bsecret)),
        &[("token", &access)],
    );
    assert_eq!(live.expect(200)["active"], true);

    let (pid, psecret) = register_with_method(&srv, &s, &slug, "client_secret_post");
    let code = f.code(&pid);
    refused(&form(
        &f.api,
        &token_path,
        Some((&pid, &psecret)),
        &code_exchange(&code),
    ));
    let tokens = in_body(&f.api, &token_path, (&pid, &psecret), &code_exchange(&code));
    let access = tokens.expect(200)["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    refused(&form(
        &f.api,
        &introspect_path,
        Some((&pid, &psecret)),
        &[("token", &access)],
    ));
    refused(&form(
        &f.api,
        &revoke_path,
        Some((&pid, &psecret)),
        &[("token", &access)],
    ));
    let live = in_body(
        &f.api,
        &introspect_path,
        (&pid, &psecret),
        &[("token", &access)],
    );
    assert_eq!(live.expect(200)["active"], true);
}

#[test]
fn userinfo_challenges_and_introspection_answer_as_their_rfcs_say() {
    let (smtp, srv, api, s) = user_setup("Challenges", &[]);
    let f = flow(&srv, &smtp, api, &s);
    let conf = (f.confidential.0.as_str(), f.confidential.1.as_str());
    let code = f.code(conf.0);
    let tokens = f.exchange(conf, &code, VERIFIER).expect(200).clone();
    let access = tokens["access_token"].as_str().unwrap();
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let userinfo = format!("{}/oauth/userinfo", f.api.issuer());

    // No credentials: 401 with the bare challenge, no error code (RFC 6750 3.1); another
    // scheme is no bearer credential either.
    for (method, auth) in [
        ("GET", None),
        ("POST", None),
        ("GET", Some("Basic dXNlcjpwYXNz")),
    ] {
        let mut req = f.api.client.request(method.parse().unwrap(), &userinfo);
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let r = req.send().unwrap();
        assert_eq!(r.status(), 401, "{method} {auth:?}");
        let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
        assert!(challenge.starts_with("Bearer"), "{challenge}");
        assert!(!challenge.contains("error="), "{challenge}");
    }
    // A bad token: invalid_token.
    for bad in ["not-a-token", "a.b.c", refresh] {
        let r = f.api.client.get(&userinfo).bearer_auth(bad).send().unwrap();
        assert_eq!(r.status(), 401);
        let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    }
    let ok = f
        .api
        .client
        .get(&userinfo)
        .bearer_auth(access)
        .send()
        .unwrap();
    assert_eq!(ok.status(), 200);

    // Introspection: an access token is a Bearer token; a refresh token has no token_type
    // (RFC 7662's is an access token's), and the members that apply to it.
    let introspect = |token: &str| {
        form(
            &f.api,
            &format!("/v1/tenants/{}/oauth/introspect", f.api.slug),
            Some(conf),
            &[("token", token)],
        )
        .expect(200)
        .clone()
    };
    let at = introspect(access);
    assert_eq!(at["active"], true, "{at}");
    assert_eq!(at["token_type"], "Bearer", "{at}");
    let rt = introspect(refresh);
    assert_eq!(rt["active"], true, "{rt}");
    assert!(!rt.as_object().unwrap().contains_key("token_type"), "{rt}");
    assert_eq!(rt["client_id"], conf.0, "{rt}");
    assert_eq!(rt["scope"], "openid email", "{rt}");
    assert_eq!(rt["sub"], at["sub"], "{rt}");
    assert_eq!(rt["iss"], f.api.issuer(), "{rt}");
    assert!(
        rt["exp"].as_i64().unwrap() > at["exp"].as_i64().unwrap(),
        "{rt}"
    );
}

#[test]
fn consent_is_per_resource_and_a_withdrawn_consent_voids_its_codes() {
    let (smtp, mut srv, mut api, s) = user_setup("Per Resource", &[]);
    srv.reauth(&s, PASSWORD);
    let (_orders, _) = resource_with_scope(&srv, &s, &api.slug);
    // A second resource with a scope of the same name.
    const BILLING: &str = "https://api.acme.example/billing";
    let out = srv.admin(
        &[
            "resource", "register", "--tenant", &api.slug, "--name", "Billing", "--uri", BILLING,
        ],
        "",
    );
    let billing = out.json()["id"].as_str().unwrap().to_owned();
    let (st, entry) = srv.dash_json(
        "POST",
        &format!("/v1/resources/{billing}/scopes"),
        &s,
        Some(
            &json!({"scope_name": "orders:read", "sensitivity": "normal",
            "display_metadata": {"kind": "i18n_key", "i18n_key": "consent.scopes.orders_read"}}),
        ),
    );
    assert_eq!(st, 201, "{entry}");
    let approved = srv.admin(
        &["scope", "approve", &billing, entry["id"].as_str().unwrap()],
        "",
    );
    assert!(approved.status.success());
    let (cid, secret) = register_client(
        &srv,
        &s,
        &api.slug,
        "confidential",
        &["openid", "orders:read"],
    );
    let secret = secret.unwrap();
    let user = api.verified_user(&smtp, "per@example.com", "correct horse battery");
    let f = Flow {
        api: api.clone(),
        user: user.clone(),
        confidential: (cid.clone(), secret.clone()),
        public: String::new(),
    };
    let iss = api.issuer();

    // A resource scope needs its resource.
    redirected_error(
        &authorize(
            &api,
            &f.url(&cid, &[("scope", "openid orders:read")]),
            Some(&user.access),
            "en",
        ),
        "invalid_scope",
        &iss,
    );
    // Granted for the orders API...
    let for_orders = f.url(&cid, &[("scope", "openid orders:read"), ("resource", API)]);
    let shown = authorize(&api, &for_orders, Some(&user.access), "en")
        .expect(200)
        .clone();
    assert_eq!(shown["consent_required"], true);
    consent(&api, &user.access, &shown, "approve", None).expect(200);
    let again = authorize(&api, &for_orders, Some(&user.access), "en");
    assert!(
        again.expect(200)["redirect_to"].is_string(),
        "{}",
        again.body
    );
    // ...is not granted for billing: asked again, everything new there.
    let for_billing = f.url(
        &cid,
        &[("scope", "openid orders:read"), ("resource", BILLING)],
    );
    let asked = authorize(&api, &for_billing, Some(&user.access), "en")
        .expect(200)
        .clone();
    assert_eq!(asked["consent_required"], true, "{asked}");
    assert_eq!(asked["is_re_consent"], true);
    assert_eq!(asked["new_scopes"], json!(["openid", "orders:read"]));
    assert_eq!(asked["new_resources"], json!([BILLING]));
    assert_eq!(asked["change_reason"], "new_scopes");
    assert_eq!(
        asked["custom_scopes"],
        json!([{"scope": "orders:read", "display_name": "consent.scopes.orders_read"}])
    );

    // A code issued on consent, then the consent withdrawn: the code is void.
    let to =
        authorize(&api, &for_orders, Some(&user.access), "en").expect(200)["redirect_to"].clone();
    let code = query_of(to.as_str().unwrap())["code"].clone();
    let gone = api.send_as(
        Some(&api.api_key),
        "DELETE",
        &format!("/v1/users/me/consents/{cid}"),
        Some(&user.access),
        None,
        None,
    );
    assert_eq!(gone.status, 204);
    let r = f.exchange((&cid, &secret), &code, VERIFIER);
    assert_eq!(r.body["error"], "invalid_grant", "{}", r.body);

    // The catalog outlives a restart (each tenant's resources are indexed at start).
    let old_base = api.base.clone();
    srv.restart();
    api.rebase(&srv);
    let user = api.login_ok("per@example.com", "correct horse battery");
    let url = for_orders.replace(&old_base, &api.base);
    let asked = authorize(&api, &url, Some(&user.access), "en")
        .expect(200)
        .clone();
    assert_eq!(asked["consent_required"], true, "{asked}");
    assert_eq!(asked["resources"], json!([API]));
}

/// An account holding an address it never confirmed gives no client its consent (a denial is
/// taken); a consent given by an account whose address then becomes unconfirmed goes when the
/// address's owner proves it, so her next authorization asks her instead of redirecting.
#[test]
fn consent_needs_a_confirmed_address_and_goes_when_the_owner_recovers_it() {
    let (smtp, srv, api, s) = user_setup("Consent Co", &[]);
    let f = flow(&srv, &smtp, api, &s);
    // A guest claims an address it cannot confirm; its bearer stays valid.
    let squatter = crate::recovery::squatter(&srv, &s, &f.api);
    let asked = authorize(&f.api, &f.url(&f.public, &[]), Some(&squatter), "en");
    let shown = asked.expect(200).clone();
    assert_eq!(shown["consent_required"], true, "{shown}");
    consent(&f.api, &squatter, &shown, "approve", None).expect_error(403, "auth/email_unconfirmed");
    let denied = consent(&f.api, &squatter, &shown, "deny", None);
    let to = denied.expect(200)["redirect_to"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(query_of(&to)["error"], "access_denied", "{to}");

    // A confirmed user consents (the next authorization redirects at once)...
    f.code(&f.public);
    let again = authorize(&f.api, &f.url(&f.public, &[]), Some(&f.user.access), "en");
    assert!(
        again.expect(200)["redirect_to"].is_string(),
        "{}",
        again.body
    );
    // ...then an admin moves the account to another address, unconfirmed, whose owner
    // proves it with a reset link.
    let victim = "owner-of-it@example.com";
    let id = f.user.claims()["sub"].as_str().unwrap().to_owned();
    let (st, body) = srv.dash_json(
        "PATCH",
        &format!("/v1/auth/dashboard/tenants/{}/users/{id}", f.api.slug),
        &s,
        Some(&json!({ "email": victim })),
    );
    assert_eq!(st, 200, "{body}");
    f.api
        .post("/v1/auth/forgot-password", &json!({ "email": victim }))
        .expect(202);
    let mail = smtp.wait_for(&f.api.slug, "password_reset", victim, 1);
    let token = mail.token().expect("a reset token");
    f.api
        .post(
            "/v1/auth/reset-password",
            &json!({ "token": token, "password": NEW_USER_PASSWORD }),
        )
        .expect(200);
    let owner = f.api.login_ok(victim, NEW_USER_PASSWORD);
    assert_eq!(owner.claims()["sub"], id.as_str());
    let asked = authorize(&f.api, &f.url(&f.public, &[]), Some(&owner.access), "en");
    let shown = asked.expect(200);
    assert_eq!(shown["consent_required"], true, "{shown}");
    assert!(shown["redirect_to"].is_null(), "{shown}");
}

/// The header and verified claims of an ID token, checked against the tenant's JWKS by the
/// key its `kid` names (RS256 from `n` and `e`, ES256 from `x` and `y`).
fn id_token_checked(
    api: &UserApi,
    id_token: &str,
    client_id: &str,
) -> (jsonwebtoken::Header, Value) {
    let header = jsonwebtoken::decode_header(id_token).expect("a JWT header");
    let jwks = api.jwks();
    let jwk = jwks["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .find(|k| Some(k["kid"].as_str().unwrap_or("")) == header.kid.as_deref())
        .unwrap_or_else(|| panic!("no key {:?} in {jwks}", header.kid))
        .clone();
    let (key, alg) = match jwk["kty"].as_str() {
        Some("RSA") => (
            jsonwebtoken::DecodingKey::from_rsa_components(
                jwk["n"].as_str().unwrap(),
                jwk["e"].as_str().unwrap(),
            )
            .unwrap(),
            jsonwebtoken::Algorithm::RS256,
        ),
        _ => (
            jsonwebtoken::DecodingKey::from_ec_components(
                jwk["x"].as_str().unwrap(),
                jwk["y"].as_str().unwrap(),
            )
            .unwrap(),
            jsonwebtoken::Algorithm::ES256,
        ),
    };
    assert_eq!(jwk["alg"], json!(format!("{alg:?}")), "{jwk}");
    let mut v = jsonwebtoken::Validation::new(alg);
    v.set_audience(&[client_id]);
    v.set_issuer(&[api.issuer()]);
    let claims = jsonwebtoken::decode::<Value>(id_token, &key, &v)
        .unwrap_or_else(|e| panic!("{e}: {id_token}"))
        .claims;
    (header, claims)
}

/// OpenID Connect's mandatory RS256: discovery offers it, a client registered without an
/// algorithm (on the dashboard or by RFC 7591) gets RS256 ID tokens from the tenant's RSA key
/// (made when the first such client registered, published in the JWKS), one that registers
/// ES256 keeps ES256; access tokens stay ES256; a key rotation turns both keys and keeps the
/// old ones published.
#[test]
fn id_tokens_are_rs256_unless_the_client_registered_es256_and_both_keys_rotate() {
    let (smtp, srv, api, s) = user_setup("Algs", &[]);
    let discovery = AuthAnswer::read(
        srv.client
            .get(format!("{}/.well-known/openid-configuration", api.issuer()))
            .send()
            .unwrap(),
    );
    assert_eq!(
        discovery.expect(200)["id_token_signing_alg_values_supported"],
        json!(["RS256", "ES256"])
    );
    let kinds = |api: &UserApi| -> Vec<String> {
        api.jwks()["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kty"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(kinds(&api), ["EC"], "no RSA key before a client needs one");

    // Bad values are refused and make nothing.
    srv.reauth(&s, PASSWORD);
    let clients = format!("/v1/auth/dashboard/tenants/{}/oauth-clients", api.slug);
    let (st, body) = srv.dash_json(
        "POST",
        &clients,
        &s,
        Some(&json!({"name": "HS", "client_type": "confidential",
            "redirect_uris": [CALLBACK], "id_token_signed_response_alg": "HS256"})),
    );
    assert_eq!(st, 400, "{body}");
    assert!(
        body["error"]["details"]["fields"]["id_token_signed_response_alg"].is_string(),
        "{body}"
    );
    assert_eq!(kinds(&api), ["EC"]);

    // The default: RS256.
    let f = flow(&srv, &smtp, api, &s);
    let (st, c) = srv.dash_json("GET", &format!("{clients}/{}", f.confidential.0), &s, None);
    assert_eq!(st, 200, "{c}");
    assert_eq!(c["id_token_signed_response_alg"], "RS256");
    assert_eq!(kinds(&f.api), ["EC", "RSA"]);
    let conf = (f.confidential.0.as_str(), f.confidential.1.as_str());
    let tokens = f.exchange(conf, &f.code(conf.0), VERIFIER);
    let tokens = tokens.expect(200).clone();
    let first_id = tokens["id_token"].as_str().unwrap().to_owned();
    let (header, claims) = id_token_checked(&f.api, &first_id, conf.0);
    assert_eq!(header.alg, jsonwebtoken::Algorithm::RS256);
    assert_eq!(claims["sub"], f.user.claims()["sub"]);
    let access = jsonwebtoken::decode_header(tokens["access_token"].as_str().unwrap()).unwrap();
    assert_eq!(
        access.alg,
        jsonwebtoken::Algorithm::ES256,
        "access tokens stay ES256"
    );

    // A client that asks for ES256 keeps it; a change to RS256 takes effect at once.
    let (st, es) = srv.dash_json(
        "POST",
        &clients,
        &s,
        Some(&json!({"name": "EC only", "client_type": "confidential",
            "redirect_uris": [CALLBACK], "allowed_scopes": ["openid", "email"],
            "id_token_signed_response_alg": "ES256"})),
    );
    assert_eq!(st, 201, "{es}");
    assert_eq!(es["id_token_signed_response_alg"], "ES256");
    let es_client = (
        es["client_id"].as_str().unwrap().to_owned(),
        es["client_secret"].as_str().unwrap().to_owned(),
    );
    let es_pair = (es_client.0.as_str(), es_client.1.as_str());
    let t = f.exchange(es_pair, &f.code(es_pair.0), VERIFIER);
    let (header, _) = id_token_checked(
        &f.api,
        t.expect(200)["id_token"].as_str().unwrap(),
        es_pair.0,
    );
    assert_eq!(header.alg, jsonwebtoken::Algorithm::ES256);
    let (st, changed) = srv.dash_json(
        "PATCH",
        &format!("{clients}/{}", es_pair.0),
        &s,
        Some(&json!({"id_token_signed_response_alg": "RS256"})),
    );
    assert_eq!(st, 200, "{changed}");
    let t = f.exchange(es_pair, &f.code(es_pair.0), VERIFIER);
    let (header, _) = id_token_checked(
        &f.api,
        t.expect(200)["id_token"].as_str().unwrap(),
        es_pair.0,
    );
    assert_eq!(header.alg, jsonwebtoken::Algorithm::RS256);

    // A rotation turns both keys; the old ones stay published, so the first ID token still
    // verifies, and new ones name the new RSA key.
    let out = srv.admin(&["keys", "rotate", &f.api.slug], "");
    assert!(out.status.success(), "{}", out.stderr);
    let rotated = out.json();
    let old_rsa = jsonwebtoken::decode_header(&first_id).unwrap().kid.unwrap();
    assert_eq!(rotated["previous_rsa_kid"], old_rsa.as_str(), "{rotated}");
    let new_rsa = rotated["rsa_kid"]
        .as_str()
        .expect("a new RSA key")
        .to_owned();
    assert_ne!(new_rsa, old_rsa);
    let mut published = kinds(&f.api);
    published.sort();
    assert_eq!(published, ["EC", "EC", "RSA", "RSA"]);
    id_token_checked(&f.api, &first_id, conf.0);
    let t = f.exchange(conf, &f.code(conf.0), VERIFIER);
    let (header, _) = id_token_checked(&f.api, t.expect(200)["id_token"].as_str().unwrap(), conf.0);
    assert_eq!(header.kid.as_deref(), Some(new_rsa.as_str()));

    // RFC 7591 registration: RS256 unless the client names ES256; anything else is refused.
    let settings = format!("/v1/auth/dashboard/tenants/{}/settings/agents", f.api.slug);
    let (st, on) = srv.dash_json(
        "PATCH",
        &settings,
        &s,
        Some(&json!({"dynamic_client_registration": true})),
    );
    assert_eq!(st, 200, "{on}");
    let register = |body: Value| {
        AuthAnswer::read(
            srv.client
                .post(format!("{}/oauth/register", f.api.issuer()))
                .json(&body)
                .send()
                .unwrap(),
        )
    };
    let made = register(json!({"redirect_uris": [CALLBACK]}));
    assert_eq!(made.expect(201)["id_token_signed_response_alg"], "RS256");
    let made =
        register(json!({"redirect_uris": [CALLBACK], "id_token_signed_response_alg": "ES256"}));
    assert_eq!(made.expect(201)["id_token_signed_response_alg"], "ES256");
    let refused =
        register(json!({"redirect_uris": [CALLBACK], "id_token_signed_response_alg": "none"}));
    assert_eq!(
        (refused.status, refused.body["error"].as_str()),
        (400, Some("invalid_client_metadata")),
        "{}",
        refused.body
    );
}
