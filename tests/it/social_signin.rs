//! Social sign-in through the real binary against local providers that speak the real
//! protocols: an OpenID provider (discovery, JWKS, the authorization endpoint, a token
//! endpoint that checks the client secret, the redirect URI and the PKCE verifier, ES256 ID
//! tokens) and OAuth 2 providers shaped like GitHub's and Facebook's APIs.
//!
//! Covered: a new account from each trust level, the same identity again, automatic linking
//! on and off (`email_exists`), an unverified address never linking, a guest claimed in
//! place, `already_claimed` for two callbacks racing for one guest, the `never_trust` fresh
//! account, a replayed state, a callback in a browser without the flow's cookie, a wrong
//! nonce, an unknown signing key, an expired ID token, another issuer's `iss`, the user
//! saying no, and the exchange token's single use and tenant check.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
};

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde_json::{json, Value};

use crate::stub::{Route, StubRequest, StubResponse, StubServer};
use crate::support::*;

pub(crate) const APP: &str = "https://app.example/social/done";
const OIDC_CLIENT: &str = "oidc-client";
pub(crate) const OIDC_SECRET: &str = "oidc-secret-0123456789";
const REST_SECRET: &str = "rest-secret-0123456789";

/// Who the local provider says signs in next, and how it misbehaves.
#[derive(Clone)]
struct Person {
    sub: String,
    email: Option<String>,
    email_verified: bool,
}

/// How the token endpoint's next ID tokens are wrong (set with [`Stub::faults`]).
#[derive(Default)]
pub(crate) struct Faults {
    pub(crate) wrong_nonce: bool,
    pub(crate) unknown_key: bool,
    pub(crate) expired: bool,
    /// The header names ES256 while the `kid` is the provider's RSA key (with `rsa`).
    pub(crate) alg_mismatch: bool,
    /// `iss` names another issuer (`{base}/other`) than the one the discovery document says.
    pub(crate) wrong_issuer: bool,
}

struct Code {
    person: Person,
    nonce: Option<String>,
    redirect_uri: String,
    challenge: Option<String>,
    client_id: String,
}

struct StubState {
    base: String,
    key: Vec<u8>,
    other_key: Vec<u8>,
    jwk: Value,
    /// The `kid` of `key` (`jwk` names it).
    kid: String,
    next: Person,
    faults: Faults,
    codes: HashMap<String, Code>,
    tokens: HashMap<String, Person>,
    /// Apple's shape: the client secret is an ES256 JWT by this public key (`x`, `y`), team
    /// and key id.
    apple: Option<(String, String, String, String)>,
    /// ID tokens signed RS256 by this key (its `kid` is `r1`), as most providers sign them.
    rsa: Option<std::sync::Arc<aws_lc_rs::rsa::KeyPair>>,
}

/// A compact JWS over `claims`, signed RS256 by `key`, with `alg` and `kid` in its header.
fn rs256_jws(key: &aws_lc_rs::rsa::KeyPair, alg: &str, kid: &str, claims: &Value) -> String {
    let header = json!({"alg": alg, "typ": "JWT", "kid": kid});
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut sig = vec![0u8; key.public_modulus_len()];
    key.sign(
        &aws_lc_rs::signature::RSA_PKCS1_SHA256,
        &aws_lc_rs::rand::SystemRandom::new(),
        input.as_bytes(),
        &mut sig,
    )
    .unwrap();
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig))
}

/// A local provider: OpenID at `/`, GitHub-shaped at `/gh`, Facebook-shaped at `/fb`.
pub(crate) struct Stub {
    pub(crate) base: String,
    state: Arc<Mutex<StubState>>,
    _server: StubServer,
}

fn p256_pkcs8() -> (Vec<u8>, Vec<u8>) {
    use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der.as_ref()).unwrap();
    (der.as_ref().to_vec(), pair.public_key().as_ref().to_vec())
}

fn s256(v: &str) -> String {
    use aws_lc_rs::digest::{digest, SHA256};
    URL_SAFE_NO_PAD.encode(digest(&SHA256, v.as_bytes()).as_ref())
}

fn discovery(st: &mut StubState, _: &StubRequest) -> StubResponse {
    let base = &st.base;
    let body = json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "jwks_uri": format!("{base}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["ES256"],
        "code_challenge_methods_supported": ["S256"],
    });
    StubResponse::json(200, &body)
}

fn jwks(st: &mut StubState, _: &StubRequest) -> StubResponse {
    StubResponse::json(200, &json!({ "keys": [st.jwk.clone()] }))
}

/// The user consents at once: back to `redirect_uri` with a code.
fn authorize(st: &mut StubState, req: &StubRequest) -> StubResponse {
    let q = req.query_params();
    let code = format!("code-{}", st.codes.len());
    let person = st.next.clone();
    st.codes.insert(
        code.clone(),
        Code {
            person,
            nonce: q.get("nonce").cloned(),
            redirect_uri: q["redirect_uri"].clone(),
            challenge: q.get("code_challenge").cloned(),
            client_id: q["client_id"].clone(),
        },
    );
    let mut to = url::Url::parse(&q["redirect_uri"]).unwrap();
    to.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &q["state"]);
    StubResponse::found(to.as_str())
}

/// Whether `secret` is the client secret Apple expects: an ES256 JWT signed with the
/// tenant's key (`kid`), naming the team (`iss`), the client (`sub`) and Apple (`aud`).
fn apple_secret_ok(st: &StubState, secret: &str, client_id: &str) -> bool {
    let Some((x, y, team, kid)) = &st.apple else {
        return false;
    };
    let Ok(header) = jsonwebtoken::decode_header(secret) else {
        return false;
    };
    let Ok(key) = jsonwebtoken::DecodingKey::from_ec_components(x, y) else {
        return false;
    };
    let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    v.set_issuer(&[team]);
    v.set_audience(&[&st.base]);
    v.sub = Some(client_id.to_owned());
    header.kid.as_deref() == Some(kid.as_str())
        && jsonwebtoken::decode::<Value>(secret, &key, &v).is_ok()
}

/// Takes the code once, for its client, redirect URI and PKCE verifier.
fn take_code(st: &mut StubState, form: &BTreeMap<String, String>, secret: &str) -> Option<Code> {
    let code = st.codes.remove(form.get("code")?)?;
    let given = form.get("client_secret").map(String::as_str).unwrap_or("");
    let secret_ok = if st.apple.is_some() {
        apple_secret_ok(st, given, &code.client_id)
    } else {
        given == secret
    };
    let ok = form.get("client_id") == Some(&code.client_id)
        && secret_ok
        && form.get("redirect_uri") == Some(&code.redirect_uri)
        && code
            .challenge
            .as_ref()
            .is_none_or(|c| form.get("code_verifier").map(|v| s256(v)).as_ref() == Some(c));
    ok.then_some(code)
}

fn oidc_token(st: &mut StubState, req: &StubRequest) -> StubResponse {
    // client_secret_basic (RFC 6749 2.3.1: each part form-encoded) as well as in the form.
    let mut form = req.form();
    if let Some(basic) = req
        .header("authorization")
        .and_then(|h| h.strip_prefix("Basic "))
    {
        use base64::engine::{general_purpose::STANDARD, Engine};
        let decoded = STANDARD.decode(basic).unwrap_or_default();
        let text = String::from_utf8(decoded).unwrap_or_default();
        if let Some((id, secret)) = text.split_once(':') {
            let dec = |v: &str| {
                form_urlencoded::parse(format!("v={v}").as_bytes())
                    .next()
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default()
            };
            form.insert("client_id".into(), dec(id));
            form.insert("client_secret".into(), dec(secret));
        }
    }
    let Some(code) = take_code(st, &form, OIDC_SECRET) else {
        return StubResponse::json(400, &json!({"error": "invalid_grant"}));
    };
    let now = unix_now() as i64;
    let exp = if st.faults.expired {
        now - 600
    } else {
        now + 300
    };
    let nonce = if st.faults.wrong_nonce {
        Some("not-the-nonce".to_owned())
    } else {
        code.nonce
    };
    let iss = if st.faults.wrong_issuer {
        format!("{}/other", st.base)
    } else {
        st.base.clone()
    };
    let claims = json!({
        "iss": iss,
        "aud": code.client_id,
        "sub": code.person.sub,
        "email": code.person.email,
        // Apple sends the flag as a string.
        "email_verified": if st.apple.is_some() {
            json!(code.person.email_verified.to_string())
        } else {
            json!(code.person.email_verified)
        },
        "nonce": nonce,
        "iat": now,
        "exp": exp,
    });
    let (key, kid) = if st.faults.unknown_key {
        (&st.other_key, "k-unknown")
    } else {
        (&st.key, st.kid.as_str())
    };
    let id_token = match &st.rsa {
        Some(rsa) => {
            let alg = if st.faults.alg_mismatch {
                "ES256"
            } else {
                "RS256"
            };
            rs256_jws(rsa, alg, "r1", &claims)
        }
        None => {
            let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
            h.kid = Some(kid.into());
            jsonwebtoken::encode(&h, &claims, &jsonwebtoken::EncodingKey::from_ec_der(key)).unwrap()
        }
    };
    let body = json!({"access_token": format!("oidc-access-{}", code.person.sub), "refresh_token": "oidc-refresh-kept", "expires_in": 3600, "token_type": "Bearer", "id_token": id_token});
    StubResponse::json(200, &body)
}

fn rest_token(st: &mut StubState, req: &StubRequest) -> StubResponse {
    let Some(code) = take_code(st, &req.form(), REST_SECRET) else {
        return StubResponse::json(400, &json!({"error": "bad_verification_code"}));
    };
    let token = format!("rest-token-{}", st.tokens.len());
    st.tokens.insert(token.clone(), code.person);
    StubResponse::json(200, &json!({"access_token": token, "token_type": "bearer"}))
}

/// The person the bearer token names, or `401`.
fn person_of(st: &StubState, req: &StubRequest) -> Result<Person, StubResponse> {
    req.bearer()
        .and_then(|token| st.tokens.get(token).cloned())
        .ok_or(StubResponse::new(401))
}

fn gh_user(st: &mut StubState, req: &StubRequest) -> StubResponse {
    match person_of(st, req) {
        Ok(p) => StubResponse::json(
            200,
            &json!({"id": p.sub.parse::<u64>().unwrap(), "login": "octo"}),
        ),
        Err(refused) => refused,
    }
}

fn gh_emails(st: &mut StubState, req: &StubRequest) -> StubResponse {
    match person_of(st, req) {
        Ok(p) => StubResponse::json(
            200,
            &json!([
                {"email": "secondary@example.com", "primary": false, "verified": true},
                {"email": p.email, "primary": true, "verified": p.email_verified},
            ]),
        ),
        Err(refused) => refused,
    }
}

fn dc_me(st: &mut StubState, req: &StubRequest) -> StubResponse {
    match person_of(st, req) {
        Ok(p) => StubResponse::json(
            200,
            &json!({
                "id": p.sub, "username": "dc", "email": p.email, "verified": p.email_verified,
            }),
        ),
        Err(refused) => refused,
    }
}

fn fb_me(st: &mut StubState, req: &StubRequest) -> StubResponse {
    match person_of(st, req) {
        Ok(p) => StubResponse::json(200, &json!({"id": p.sub, "email": p.email})),
        Err(refused) => refused,
    }
}

/// A route whose handler works on the provider's state.
fn route(
    method: &str,
    path: &str,
    state: &Arc<Mutex<StubState>>,
    handler: fn(&mut StubState, &StubRequest) -> StubResponse,
) -> Route {
    let state = state.clone();
    Route::new(method, path, move |req| {
        handler(&mut state.lock().unwrap(), req)
    })
}

impl Stub {
    pub(crate) fn start() -> Stub {
        let (key, public) = p256_pkcs8();
        let (other_key, _) = p256_pkcs8();
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig", "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(&public[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&public[33..65]),
        });
        let state = Arc::new(Mutex::new(StubState {
            // Known once the server listens.
            base: String::new(),
            key,
            other_key,
            jwk,
            kid: "k1".into(),
            next: Person {
                sub: "0".into(),
                email: None,
                email_verified: false,
            },
            faults: Faults::default(),
            codes: HashMap::new(),
            tokens: HashMap::new(),
            apple: None,
            rsa: None,
        }));
        let server = StubServer::start(vec![
            route(
                "GET",
                "/.well-known/openid-configuration",
                &state,
                discovery,
            ),
            route("GET", "/jwks", &state, jwks),
            route("GET", "/authorize", &state, authorize),
            route("POST", "/token", &state, oidc_token),
            route("GET", "/gh/login/oauth/authorize", &state, authorize),
            route("POST", "/gh/login/oauth/access_token", &state, rest_token),
            route("GET", "/gh/api/user", &state, gh_user),
            route("GET", "/gh/api/user/emails", &state, gh_emails),
            route("GET", "/fb/dialog/oauth", &state, authorize),
            route("POST", "/fb/oauth/access_token", &state, rest_token),
            route("GET", "/fb/api/me", &state, fb_me),
            route("GET", "/dc/oauth2/authorize", &state, authorize),
            route("POST", "/dc/api/oauth2/token", &state, rest_token),
            route("GET", "/dc/api/users/@me", &state, dc_me),
        ]);
        let base = server.url().to_owned();
        state.lock().unwrap().base = base.clone();
        Stub {
            base,
            state,
            _server: server,
        }
    }

    /// Apple's shape: client secrets must be ES256 JWTs by `public` (uncompressed P-256).
    fn expect_apple(&self, public: &[u8], team: &str, kid: &str) {
        self.state.lock().unwrap().apple = Some((
            URL_SAFE_NO_PAD.encode(&public[1..33]),
            URL_SAFE_NO_PAD.encode(&public[33..65]),
            team.to_owned(),
            kid.to_owned(),
        ));
    }

    /// The provider signs its ID tokens RS256 from now on (a new RSA key, `kid` `r1`, the only
    /// one published).
    fn use_rsa(&self) {
        use aws_lc_rs::{rsa::KeySize, signature::KeyPair};
        let pair = aws_lc_rs::rsa::KeyPair::generate(KeySize::Rsa2048).unwrap();
        let public = aws_lc_rs::rsa::PublicKeyComponents::<Vec<u8>>::from(pair.public_key());
        let mut st = self.state.lock().unwrap();
        st.jwk = json!({
            "kty": "RSA", "kid": "r1", "use": "sig", "alg": "RS256",
            "n": URL_SAFE_NO_PAD.encode(&public.n),
            "e": URL_SAFE_NO_PAD.encode(&public.e),
        });
        st.rsa = Some(std::sync::Arc::new(pair));
    }

    /// The provider rotates its signing key: a new key, a new `kid`, the old one unpublished.
    fn rotate(&self) {
        let (key, public) = p256_pkcs8();
        let mut st = self.state.lock().unwrap();
        st.key = key;
        st.kid = "k2".into();
        st.jwk = json!({
            "kty": "EC", "crv": "P-256", "kid": "k2", "use": "sig", "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(&public[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&public[33..65]),
        });
    }

    pub(crate) fn next(&self, sub: &str, email: Option<&str>, verified: bool) {
        self.state.lock().unwrap().next = Person {
            sub: sub.into(),
            email: email.map(str::to_owned),
            email_verified: verified,
        };
    }

    /// The provider's ID tokens are wrong from now on as `f` says (`Faults::default()`: right).
    pub(crate) fn faults(&self, f: Faults) {
        self.state.lock().unwrap().faults = f;
    }

    /// The server's environment: Google and GitLab at the OpenID stub (GitLab's issuer is the
    /// same stub under another name would need a second stub; one issuer per provider), GitHub
    /// and Facebook at the REST shapes.
    pub(crate) fn env(&self, gitlab: &Stub) -> Vec<(String, String)> {
        let b = &self.base;
        vec![
            ("TESSERA__SOCIAL__GOOGLE__ISSUER".into(), b.clone()),
            // A rotated key is looked up at once (the default waits 10 s between fetches).
            ("TESSERA__SOCIAL__KEYS_REFETCH_SECS".into(), "0".into()),
            (
                "TESSERA__SOCIAL__GITLAB__ISSUER".into(),
                gitlab.base.clone(),
            ),
            (
                "TESSERA__SOCIAL__GITHUB__AUTHORIZATION_ENDPOINT".into(),
                format!("{b}/gh/login/oauth/authorize"),
            ),
            (
                "TESSERA__SOCIAL__GITHUB__TOKEN_ENDPOINT".into(),
                format!("{b}/gh/login/oauth/access_token"),
            ),
            (
                "TESSERA__SOCIAL__GITHUB__API_BASE_URL".into(),
                format!("{b}/gh/api"),
            ),
            (
                "TESSERA__SOCIAL__FACEBOOK__AUTHORIZATION_ENDPOINT".into(),
                format!("{b}/fb/dialog/oauth"),
            ),
            (
                "TESSERA__SOCIAL__FACEBOOK__TOKEN_ENDPOINT".into(),
                format!("{b}/fb/oauth/access_token"),
            ),
            (
                "TESSERA__SOCIAL__FACEBOOK__API_BASE_URL".into(),
                format!("{b}/fb/api"),
            ),
            (
                "TESSERA__SOCIAL__DISCORD__AUTHORIZATION_ENDPOINT".into(),
                format!("{b}/dc/oauth2/authorize"),
            ),
            (
                "TESSERA__SOCIAL__DISCORD__TOKEN_ENDPOINT".into(),
                format!("{b}/dc/api/oauth2/token"),
            ),
            (
                "TESSERA__SOCIAL__DISCORD__API_BASE_URL".into(),
                format!("{b}/dc/api"),
            ),
        ]
    }
}

/// Enables Google for the tenant `slug` with the local provider's client (the session
/// `s` re-authenticated: the secret is sent).
#[track_caller]
pub(crate) fn enable_google(srv: &TestServer, s: &Session, slug: &str) {
    let (st, v) = srv.dash_json(
        "PUT",
        &format!("/v1/auth/dashboard/tenants/{slug}/settings/social/google"),
        s,
        Some(&json!({"enabled": true, "client_id": OIDC_CLIENT, "client_secret": OIDC_SECRET})),
    );
    assert_eq!(st, 200, "{v}");
}

/// A browser: keeps cookies, follows no redirect.
pub(crate) struct Browser {
    client: reqwest::blocking::Client,
    jar: HashMap<String, String>,
}

impl Browser {
    pub(crate) fn new() -> Self {
        Browser {
            client: reqwest::blocking::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            jar: HashMap::new(),
        }
    }

    /// GET `url` (with `bearer`), keeping its cookies; answers the status and `Location`.
    pub(crate) fn get(&mut self, url: &str, bearer: Option<&str>) -> (u16, String, String) {
        let req = self.client.get(url);
        self.send(req, bearer)
    }

    /// POSTs `form` to `url`, as a provider's `form_post` page makes the browser do.
    fn post_form(&mut self, url: &str, form: &[(&str, &str)]) -> (u16, String, String) {
        let req = self.client.post(url).form(form);
        self.send(req, None)
    }

    fn send(
        &mut self,
        req: reqwest::blocking::RequestBuilder,
        bearer: Option<&str>,
    ) -> (u16, String, String) {
        let mut req = req.header("x-forwarded-for", "192.0.2.77");
        let cookies: Vec<String> = self.jar.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if !cookies.is_empty() {
            req = req.header("cookie", cookies.join("; "));
        }
        if let Some(b) = bearer {
            req = req.bearer_auth(b);
        }
        let r = req.send().unwrap();
        for v in r.headers().get_all("set-cookie") {
            let v = v.to_str().unwrap();
            let (name, value) = v.split(';').next().unwrap().split_once('=').unwrap();
            if v.contains("Max-Age=0") {
                self.jar.remove(name);
            } else {
                self.jar.insert(name.into(), value.into());
            }
        }
        let status = r.status().as_u16();
        let location = r
            .headers()
            .get("location")
            .map(|l| l.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (status, location, r.text().unwrap_or_default())
    }
}

/// The query parameter `name` of `url`.
pub(crate) fn param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Begins a sign-in with `provider` to the tenant of `api` in `b` (sent back to [`APP`]):
/// the provider's authorization URL.
fn begin(
    srv: &TestServer,
    api: &UserApi,
    b: &mut Browser,
    provider: &str,
    bearer: Option<&str>,
) -> String {
    let mut u = url::Url::parse(&srv.url(&format!("/oauth/{provider}/authorize"))).unwrap();
    u.query_pairs_mut()
        .append_pair("tenant_id", &api.tenant_id)
        .append_pair("redirect_uri", APP);
    let (st, to, body) = b.get(u.as_str(), bearer);
    assert_eq!(st, 302, "{body}");
    to
}

/// The provider's side: the callback URL it sends the browser to.
fn at_provider(b: &mut Browser, at: &str) -> String {
    let (st, callback, body) = b.get(at, None);
    assert_eq!(st, 302, "{body}");
    callback
}

/// A whole sign-in with `provider` to the tenant of `api`, in a fresh browser: where the app is
/// sent back to.
pub(crate) fn sign_in(
    srv: &TestServer,
    api: &UserApi,
    provider: &str,
    bearer: Option<&str>,
) -> String {
    let mut b = Browser::new();
    let at = begin(srv, api, &mut b, provider, bearer);
    let callback = at_provider(&mut b, &at);
    let (st, back, body) = b.get(&callback, None);
    assert_eq!(st, 302, "{body}");
    assert!(back.starts_with(APP), "{back}");
    back
}

struct World {
    _smtp: SmtpStub,
    srv: TestServer,
    api: UserApi,
    owner: Session,
    oidc: Stub,
    gitlab: Stub,
}

impl World {
    fn start() -> World {
        let oidc = Stub::start();
        let gitlab = Stub::start();
        let env = oidc.env(&gitlab);
        let (smtp, srv) = start_with_mail(&env_refs(&env));
        let api = UserApi::signup(&srv, "Social Sign", "owner@example.com");
        let owner = srv.login("owner@example.com", PASSWORD);
        srv.reauth(&owner, PASSWORD);
        let r = srv.dash(
            "PUT",
            &format!("/v1/auth/dashboard/tenants/{}/settings/urls", api.slug),
            &owner,
            Some(&json!({"site_url": APP, "redirect_urls": []})),
        );
        assert_eq!(r.status(), 200);
        for (p, secret) in [
            ("google", OIDC_SECRET),
            ("gitlab", OIDC_SECRET),
            ("github", REST_SECRET),
            ("facebook", REST_SECRET),
            ("discord", REST_SECRET),
        ] {
            let (st, v) = srv.dash_json(
                "PUT",
                &format!(
                    "/v1/auth/dashboard/tenants/{}/settings/social/{p}",
                    api.slug
                ),
                &owner,
                Some(&json!({"enabled": true, "client_id": OIDC_CLIENT, "client_secret": secret})),
            );
            assert_eq!(st, 200, "{p}: {v}");
        }
        World {
            _smtp: smtp,
            srv,
            api,
            owner,
            oidc,
            gitlab,
        }
    }

    /// Begins a sign-in in `b`: the provider's authorization URL.
    fn begin(&self, b: &mut Browser, provider: &str, bearer: Option<&str>) -> String {
        begin(&self.srv, &self.api, b, provider, bearer)
    }

    /// The provider's side: the callback URL it sends the browser to.
    fn at_provider(&self, b: &mut Browser, at: &str) -> String {
        at_provider(b, at)
    }

    /// A whole sign-in in a fresh browser: where the app is sent back to.
    fn sign_in(&self, provider: &str, bearer: Option<&str>) -> String {
        sign_in(&self.srv, &self.api, provider, bearer)
    }

    fn session(&self, provider: &str, token: &str) -> AuthAnswer {
        self.api.post(
            &format!("/v1/auth/social/{provider}/session"),
            &json!({"access_token": token, "tenant_slug": self.api.slug}),
        )
    }

    /// A sign-in that must succeed: the exchange traded for tokens.
    fn signed_in(&self, provider: &str, bearer: Option<&str>) -> UserTokens {
        let back = self.sign_in(provider, bearer);
        let token = param(&back, "access_token").unwrap_or_else(|| panic!("no token in {back}"));
        let r = self.session(provider, &token);
        r.expect(200);
        UserTokens::from_answer(&r)
    }

    /// A new guest, from an address of its own.
    fn guest(&self) -> UserTokens {
        let r = self.api.send_as(
            Some(&self.api.api_key),
            "POST",
            "/v1/auth/anonymous",
            None,
            None,
            Some(&fresh_client_ip()),
        );
        let body = r.expect(201);
        UserTokens {
            access: body["access_token"].as_str().unwrap().to_owned(),
            refresh: body["refresh_token"].as_str().unwrap().to_owned(),
            body: body.clone(),
        }
    }

    fn auto_link(&self, on: bool) {
        patch_security(
            &self.srv,
            &self.owner,
            &self.api.slug,
            json!({"automatic_account_linking_enabled": on}),
        );
    }
}

#[test]
fn openid_sign_in_creates_links_and_exchanges_once() {
    let w = World::start();
    w.oidc.next("g-1", Some("Ada@Example.com"), true);
    let mut b = Browser::new();
    let at = w.begin(&mut b, "google", None);
    assert!(
        at.starts_with(&format!("{}/authorize?", w.oidc.base)),
        "{at}"
    );
    for p in [
        "state",
        "nonce",
        "code_challenge",
        "redirect_uri",
        "client_id",
        "scope",
    ] {
        assert!(param(&at, p).is_some(), "{p} missing from {at}");
    }
    assert_eq!(param(&at, "code_challenge_method").as_deref(), Some("S256"));
    assert_eq!(param(&at, "scope").as_deref(), Some("openid email profile"));
    assert_eq!(
        param(&at, "redirect_uri").unwrap(),
        w.srv.url("/oauth/google/callback")
    );
    let callback = w.at_provider(&mut b, &at);
    let (st, back, _) = b.get(&callback, None);
    assert_eq!(st, 302);
    let token = param(&back, "access_token").expect("an exchange token");
    let header = jwt_part(&token, 0);
    assert_eq!(header["typ"], "exchange+jwt");
    assert_eq!(header["alg"], "ES256");

    // The state is single-use: the same callback again is refused.
    let (st, _, body) = b.get(&callback, None);
    assert_eq!(st, 400, "{body}");
    assert!(body.contains("social/invalid_state"), "{body}");

    // Another tenant's API key: 404; then this tenant's: the tokens, once.
    let other = UserApi::signup(&w.srv, "Other Social", "other@example.com");
    let r = other.post(
        "/v1/auth/social/google/session",
        &json!({"access_token": token, "tenant_slug": null}),
    );
    r.expect_error(404, "resource/not_found");
    w.session("github", &token)
        .expect_error(401, "auth/invalid_token");
    let r = w.session("google", &token);
    let tokens = UserTokens::from_answer(&r);
    let (_, claims) = w.api.verify_access(&tokens.access);
    assert_eq!(claims["amr"], json!(["fed"]));
    assert_eq!(claims["aal"], "AAL1");
    assert_eq!(r.body["user"]["email"], "ada@example.com");
    assert_eq!(r.body["user"]["email_verified"], true);
    w.session("google", &token)
        .expect_error(401, "auth/invalid_token");

    // The same provider account again: the same user.
    let again = w.signed_in("google", None);
    assert_eq!(again.claims()["sub"], claims["sub"]);

    // A browser without the flow's cookie is sent back with an error, and nothing is made.
    w.oidc.next("g-stolen", Some("mallory@example.com"), true);
    let mut begun = Browser::new();
    let at = w.begin(&mut begun, "google", None);
    let callback = w.at_provider(&mut begun, &at);
    let (st, back, _) = Browser::new().get(&callback, None);
    assert_eq!(st, 302);
    assert_eq!(
        param(&back, "error").as_deref(),
        Some("invalid_state"),
        "{back}"
    );
    assert!(param(&back, "access_token").is_none());

    // The provider's refusals and bad ID tokens end in `provider_error`.
    for faults in [
        Faults {
            wrong_nonce: true,
            ..Faults::default()
        },
        Faults {
            unknown_key: true,
            ..Faults::default()
        },
        Faults {
            expired: true,
            ..Faults::default()
        },
        Faults {
            wrong_issuer: true,
            ..Faults::default()
        },
    ] {
        w.oidc.faults(faults);
        w.oidc.next("g-bad", Some("bad@example.com"), true);
        let back = w.sign_in("google", None);
        assert_eq!(
            param(&back, "error").as_deref(),
            Some("provider_error"),
            "{back}"
        );
    }
    w.oidc.faults(Faults::default());
    // The provider rotates its key: the key set is fetched again for the new `kid`.
    w.oidc.rotate();
    w.oidc.next("g-1", Some("Ada@Example.com"), true);
    let rotated = w.signed_in("google", None);
    assert_eq!(rotated.claims()["sub"], claims["sub"]);
    // The user says no at the provider.
    let mut b = Browser::new();
    let at = w.begin(&mut b, "google", None);
    let cb = format!(
        "{}?error=access_denied&state={}",
        w.srv.url("/oauth/google/callback"),
        param(&at, "state").unwrap()
    );
    let (_, back, _) = b.get(&cb, None);
    assert_eq!(param(&back, "error").as_deref(), Some("access_denied"));
    // None of them made an account.
    let (st, users) = w.srv.dash_json(
        "GET",
        &format!(
            "/v1/auth/dashboard/tenants/{}/users?email=bad%40example.com",
            w.api.slug
        ),
        &w.owner,
        None,
    );
    assert_eq!(st, 200, "{users}");
    assert_eq!(users["data"], json!([]), "{users}");

    // Bad requests to authorize are answered, not redirected.
    let bad =
        |q: &str| Browser::new().get(&w.srv.url(&format!("/oauth/google/authorize?{q}")), None);
    let (st, _, body) = bad(&format!(
        "tenant_id={}&redirect_uri=https%3A%2F%2Fevil.example%2F",
        w.api.tenant_id
    ));
    assert_eq!(st, 400, "{body}");
    assert!(body.contains("redirect_uri"), "{body}");
    let (st, _, body) = bad(&format!("tenant_id={}&redirect_uri={}", uuid_like(), APP));
    assert_eq!(st, 404, "{body}");
    let mut u = url::Url::parse(&w.srv.url("/oauth/slack/authorize")).unwrap();
    u.query_pairs_mut()
        .append_pair("tenant_id", &w.api.tenant_id)
        .append_pair("redirect_uri", APP);
    let (st, _, body) = Browser::new().get(u.as_str(), None);
    assert_eq!(st, 400, "{body}");
    assert!(
        body.contains("account_linking/provider_not_configured"),
        "{body}"
    );
}

fn uuid_like() -> &'static str {
    "00000000-0000-7000-8000-000000000000"
}

#[test]
fn trust_decides_linking_claims_and_fresh_accounts() {
    let w = World::start();
    let smtp = &w._smtp;
    let ada = w.api.verified_user(smtp, "ada@example.com", PASSWORD);
    let ada_id = ada.claims()["sub"].clone();

    // Automatic linking off: a trusted, verified address of an existing account is refused.
    w.oidc.next("g-ada", Some("ada@example.com"), true);
    let back = w.sign_in("google", None);
    assert_eq!(
        param(&back, "error").as_deref(),
        Some("email_exists"),
        "{back}"
    );
    // On: linked, and the same user signs in.
    w.auto_link(true);
    let linked = w.signed_in("google", None);
    assert_eq!(linked.claims()["sub"], ada_id);
    // A provider_verified provider that did not verify the address never links.
    w.gitlab.next("gl-ada", Some("ada@example.com"), false);
    let back = w.sign_in("gitlab", None);
    assert_eq!(
        param(&back, "error").as_deref(),
        Some("email_exists"),
        "{back}"
    );
    // GitHub: the primary address, verified by GitHub, links.
    w.oidc.next("4242", Some("ada@example.com"), true);
    let gh = w.signed_in("github", None);
    assert_eq!(gh.claims()["sub"], ada_id);
    // Facebook (never_trust) never links, whatever it says.
    w.oidc.next("fb-ada", Some("ada@example.com"), true);
    let back = w.sign_in("facebook", None);
    assert_eq!(
        param(&back, "error").as_deref(),
        Some("email_exists"),
        "{back}"
    );

    // Discord (provider_verified): its `verified` flag is the address's.
    w.oidc.next("dc-1", Some("discord@example.com"), true);
    let dc = w.signed_in("discord", None);
    assert_eq!(w.api.me(&dc.access).expect(200)["email_verified"], true);
    w.oidc.next("dc-2", Some("discord2@example.com"), false);
    let dc2 = w.signed_in("discord", None);
    assert_eq!(w.api.me(&dc2.access).expect(200)["email_verified"], false);

    // The tenant's MFA applies: a user with TOTP gets the challenge, not tokens.
    let mfa = w.api.verified_user(smtp, "mfa@example.com", USER_PASSWORD);
    w.api.enable_mfa(&mfa.access);
    w.oidc.next("g-mfa", Some("mfa@example.com"), true);
    let back = w.sign_in("google", None);
    let r = w.session("google", &param(&back, "access_token").unwrap());
    let body = r.expect(200);
    assert_eq!(body["mfa_required"], true, "{body}");
    assert!(body.get("access_token").is_none(), "{body}");

    // A new GitLab account with an unverified address: created, the address unverified.
    w.gitlab.next("gl-new", Some("new@example.com"), false);
    let back = w.sign_in("gitlab", None);
    let r = w.session("gitlab", &param(&back, "access_token").unwrap());
    assert_eq!(r.expect(200)["user"]["email_verified"], false);

    // A guest claimed in place by a trusted provider: the same user id, no longer a guest.
    crate::support::enable_guests(&w.srv, &w.owner, &w.api.slug);
    let guest = w.guest();
    let guest_id = guest.claims()["sub"].clone();
    w.oidc.next("g-guest", Some("guest@example.com"), true);
    let claimed = w.signed_in("google", Some(&guest.access));
    assert_eq!(claimed.claims()["sub"], guest_id);
    let me = w.api.me(&claimed.access);
    assert_eq!(me.expect(200)["is_anonymous"], false);
    assert_eq!(me.body["email"], "guest@example.com");

    // A never_trust provider leaves the guest alone and makes a fresh account.
    let guest2 = w.guest();
    w.oidc.next("fb-guest", Some("fbguest@example.com"), true);
    let fresh = w.signed_in("facebook", Some(&guest2.access));
    assert_ne!(fresh.claims()["sub"], guest2.claims()["sub"]);
    assert_eq!(w.api.me(&guest2.access).expect(200)["is_anonymous"], true);
    // Its address is not kept: an unverified claim holds no address for anyone.
    let me = w.api.me(&fresh.access);
    assert_eq!(me.expect(200)["email_verified"], false);
    assert!(me.body["email"].is_null(), "{}", me.body);

    // Two callbacks racing to claim one guest: one wins, the other is `already_claimed`.
    let guest3 = w.guest();
    let mut flows = Vec::new();
    for (sub, email) in [
        ("g-race-1", "race1@example.com"),
        ("g-race-2", "race2@example.com"),
    ] {
        w.oidc.next(sub, Some(email), true);
        let mut b = Browser::new();
        let at = w.begin(&mut b, "google", Some(&guest3.access));
        let callback = w.at_provider(&mut b, &at);
        flows.push((b, callback));
    }
    let barrier = std::sync::Barrier::new(2);
    let outcomes: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = flows
            .iter_mut()
            .map(|(b, callback)| {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    b.get(callback, None).1
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let won = outcomes
        .iter()
        .filter(|o| param(o, "access_token").is_some())
        .count();
    let lost = outcomes
        .iter()
        .filter(|o| param(o, "error").as_deref() == Some("already_claimed"))
        .count();
    assert_eq!((won, lost), (1, 1), "{outcomes:?}");

    // Ada has a Google account linked: another Google account with her address is refused.
    w.oidc.next("g-ada-2", Some("ada@example.com"), true);
    let back = w.sign_in("google", None);
    assert_eq!(
        param(&back, "error").as_deref(),
        Some("already_linked"),
        "{back}"
    );
    // Google saying outright that an address is unverified is believed.
    w.oidc
        .next("g-unverified", Some("unverified@example.com"), false);
    let un = w.signed_in("google", None);
    let me = w.api.me(&un.access);
    assert_eq!(me.expect(200)["email_verified"], false);
    assert!(me.body["email"].is_null(), "{}", me.body);
    // An allowlist admits only verified addresses it lists.
    let r = w.srv.dash(
        "PUT",
        &format!(
            "/v1/auth/dashboard/tenants/{}/settings/email-domains",
            w.api.slug
        ),
        &w.owner,
        Some(&json!({"allowlist": ["example.com"], "blocklist": []})),
    );
    assert_eq!(r.status(), 200);
    w.oidc.next("fb-allow", Some("claims@example.com"), true);
    let back = w.sign_in("facebook", None);
    assert_eq!(
        param(&back, "error").as_deref(),
        Some("email_not_allowed"),
        "{back}"
    );
    w.oidc
        .next("g-other-domain", Some("someone@other.org"), true);
    let back = w.sign_in("google", None);
    assert_eq!(
        param(&back, "error").as_deref(),
        Some("email_not_allowed"),
        "{back}"
    );
    w.oidc.next("g-listed", Some("listed@example.com"), true);
    w.signed_in("google", None);

    // Audit: the sign-ins and the refusals, with their reasons.
    let refused = audit_events(&w.srv, &w.owner, &w.api.slug, "auth.social.link_refused");
    assert!(refused.iter().any(
        |e| e["metadata"]["reason"] == "email_exists" && e["metadata"]["provider"] == "gitlab"
    ));
    assert!(refused
        .iter()
        .any(|e| e["metadata"]["reason"] == "already_claimed"));
    let linked = audit_events(&w.srv, &w.owner, &w.api.slug, "auth.social.linked");
    assert_eq!(linked.len(), 3, "{linked:?}");
}

/// The confirmation page's button: its link (relative).
fn button_of(page: &str) -> String {
    let needle = "class=\"button\" href=\"";
    let at = page
        .find(needle)
        .unwrap_or_else(|| panic!("no button in {page}"));
    let rest = &page[at + needle.len()..];
    rest[..rest.find('"').unwrap()]
        .replace("&amp;", "&")
        .replace("&#38;", "&")
}

/// Opens a link ticket's URL in `b` and confirms: the provider's authorization URL.
fn confirm(srv: &TestServer, b: &mut Browser, url: &str) -> String {
    let (st, _, page) = b.get(url, None);
    assert_eq!(st, 200, "{page}");
    let (st, at, body) = b.get(&srv.url(&button_of(&page)), None);
    assert_eq!(st, 302, "{body}");
    at
}

/// Follows the link ticket's `url` (a link request's `authorize_url`) in a fresh browser: the
/// confirmation page, the provider, the callback. Answers where the app is sent back to.
pub(crate) fn link_in_browser(srv: &TestServer, url: &str) -> String {
    let mut b = Browser::new();
    let at = confirm(srv, &mut b, url);
    let callback = at_provider(&mut b, &at);
    b.get(&callback, None).1
}

/// `user` links Google (the step-up, the link request, the confirmation page, the provider):
/// where the app is sent back to.
fn link_through(w: &World, user: &UserTokens) -> String {
    let r = w.api.link_gate(
        "google",
        &user.access,
        Some(&password_step_up(&w.api, user, PASSWORD)),
    );
    let url = r.expect(200)["authorize_url"].as_str().unwrap().to_owned();
    link_in_browser(&w.srv, &url)
}

#[test]
fn a_signed_in_user_links_lists_and_unlinks_providers() {
    let w = World::start();
    let smtp = &w._smtp;
    patch_security(
        &w.srv,
        &w.owner,
        &w.api.slug,
        json!({"explicit_account_linking_enabled": true}),
    );
    let ada = w.api.verified_user(smtp, "ada@example.com", PASSWORD);
    let ada_id = ada.claims()["sub"].clone();

    // The gate, then a URL that runs the provider's sign-in and links to Ada.
    w.api
        .link_gate("google", &ada.access, None)
        .expect_error(401, "account_linking/mfa_required");
    let token = password_step_up(&w.api, &ada, PASSWORD);
    w.api
        .link_gate("slack", &ada.access, Some(&token))
        .expect_error(400, "account_linking/provider_not_configured");
    let r = w.api.link_gate(
        "google",
        &ada.access,
        Some(&password_step_up(&w.api, &ada, PASSWORD)),
    );
    let url = r.expect(200)["authorize_url"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with(&w.srv.url("/oauth/google/authorize?")),
        "{url}"
    );
    // The tenant keeps Google's tokens (the secret stays: same client id).
    let (st, v) = w.srv.dash_json(
        "PUT",
        &format!(
            "/v1/auth/dashboard/tenants/{}/settings/social/google",
            w.api.slug
        ),
        &w.owner,
        Some(&json!({"enabled": true, "client_id": OIDC_CLIENT, "store_provider_tokens": true})),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["store_provider_tokens"], true);
    assert_eq!(v["client_secret_set"], true);
    // A Google account with another address: linked all the same (the user proved both).
    w.oidc
        .next("g-ada-linked", Some("ada.other@example.com"), false);
    let mut b = Browser::new();
    // The link first shows which account it links to; nothing is used until confirmed.
    let (st, _, page) = b.get(&url, None);
    assert_eq!(st, 200, "{page}");
    assert!(page.contains("a***@example.com"), "{page}");
    assert!(page.contains("Continue to Google"), "{page}");
    let go = w.srv.url(&button_of(&page));
    let forged = go.replace("csrf=", "csrf=forged");
    let (st, _, body) = b.get(&forged, None);
    assert_eq!(st, 403, "{body}");
    let (st, _, body) = Browser::new().get(&go, None);
    assert_eq!(st, 403, "another browser's CSRF value: {body}");
    let (st, at, body) = b.get(&go, None);
    assert_eq!(st, 302, "{body}");
    let callback = w.at_provider(&mut b, &at);
    let (_, back, _) = b.get(&callback, None);
    assert_eq!(param(&back, "linked").as_deref(), Some("google"), "{back}");
    assert!(back.starts_with(APP), "{back}");
    // Its tokens are the user's to read, past the step-up gate.
    let tokens_path = "/v1/users/me/identities/google/tokens";
    w.api
        .send("GET", tokens_path, Some(&ada.access), None)
        .expect_error(401, "account_linking/mfa_required");
    let t = password_step_up(&w.api, &ada, PASSWORD);
    let r = w.api.send_with(
        "GET",
        tokens_path,
        Some(&ada.access),
        None,
        &[("x-step-up-token", &t)],
    );
    assert_eq!(r.expect(200)["access_token"], "oidc-access-g-ada-linked");
    assert_eq!(r.body["refresh_token"], "oidc-refresh-kept");
    assert!(r.body["expires_at"].is_string(), "{}", r.body);
    assert_eq!(r.header("cache-control").as_deref(), Some("no-store"));
    // The ticket was used: the same URL again is refused, and so is its form.
    let (st, _, body) = Browser::new().get(&url, None);
    assert_eq!(st, 400, "{body}");
    assert!(body.contains("social/invalid_link_ticket"), "{body}");
    let (st, _, body) = b.get(&go, None);
    assert_eq!(st, 400, "{body}");
    assert!(body.contains("social/invalid_link_ticket"), "{body}");

    // Listed; and that Google account now signs in as Ada.
    let list = w
        .api
        .send("GET", "/v1/users/me/identities", Some(&ada.access), None);
    let data = list.expect(200)["data"].as_array().unwrap().clone();
    assert_eq!(data.len(), 1, "{data:?}");
    assert_eq!(data[0]["provider"], "google");
    assert_eq!(data[0]["subject"], "g-ada-linked");
    let signed = w.signed_in("google", None);
    assert_eq!(signed.claims()["sub"], ada_id);
    // With the setting off, the next sign-in drops the kept tokens.
    let (st, _) = w.srv.dash_json(
        "PUT",
        &format!(
            "/v1/auth/dashboard/tenants/{}/settings/social/google",
            w.api.slug
        ),
        &w.owner,
        Some(&json!({"enabled": true, "client_id": OIDC_CLIENT})),
    );
    assert_eq!(st, 200);
    w.signed_in("google", None);
    let t = password_step_up(&w.api, &ada, PASSWORD);
    w.api
        .send_with(
            "GET",
            tokens_path,
            Some(&ada.access),
            None,
            &[("x-step-up-token", &t)],
        )
        .expect_error(404, "resource/not_found");

    // Another user cannot take it: provider_in_use. Nor can Ada link a second Google account.
    let bob = w.api.verified_user(smtp, "bob@example.com", PASSWORD);
    let back = link_through(&w, &bob);
    assert_eq!(
        param(&back, "error").as_deref(),
        Some("provider_in_use"),
        "{back}"
    );
    w.oidc
        .next("g-ada-second", Some("ada.second@example.com"), true);
    let back = link_through(&w, &ada);
    assert_eq!(
        param(&back, "error").as_deref(),
        Some("already_linked"),
        "{back}"
    );

    // Unlinking is gated, and then removes it: the Google account no longer signs in as Ada.
    let path = "/v1/users/me/identities/google";
    let r = w.api.send("DELETE", path, Some(&ada.access), None);
    r.expect_error(401, "account_linking/mfa_required");
    let t = password_step_up(&w.api, &ada, PASSWORD);
    let r = w.api.send_with(
        "DELETE",
        path,
        Some(&ada.access),
        None,
        &[("x-step-up-token", &t)],
    );
    assert_eq!(r.status, 204, "{}", r.body);
    let t = password_step_up(&w.api, &ada, PASSWORD);
    let r = w.api.send_with(
        "DELETE",
        path,
        Some(&ada.access),
        None,
        &[("x-step-up-token", &t)],
    );
    r.expect_error(404, "resource/not_found");
    w.oidc
        .next("g-ada-linked", Some("ada.other@example.com"), true);
    let again = w.signed_in("google", None);
    assert_ne!(again.claims()["sub"], ada_id);

    // An account made by Google (no password, no passkey) while the tenant signs in by no
    // mailed code or link: Google is its only way in, and stays linked.
    patch_security(
        &w.srv,
        &w.owner,
        &w.api.slug,
        json!({"magic_link_enabled": false, "email_otp_enabled": false}),
    );
    let fresh = again;
    let email = "ada.other@example.com";
    w.api
        .post_as(
            "/v1/auth/step-up/email-otp/initiate",
            Some(&fresh.access),
            &json!({}),
        )
        .expect(202);
    let mail = smtp.wait_for(&w.api.slug, "step_up_email_otp", email, 1);
    let code = six_digit_code(&mail.text).unwrap_or_else(|| panic!("no code in {}", mail.text));
    let r = w.api.post_as(
        "/v1/auth/step-up/email-otp/verify",
        Some(&fresh.access),
        &json!({ "otp": code }),
    );
    let t = r.expect(200)["step_up_token"].as_str().unwrap().to_owned();
    let r = w.api.send_with(
        "DELETE",
        path,
        Some(&fresh.access),
        None,
        &[("x-step-up-token", &t)],
    );
    r.expect_error(409, "account_linking/last_method");
    let list = w
        .api
        .send("GET", "/v1/users/me/identities", Some(&fresh.access), None);
    assert_eq!(list.expect(200)["data"].as_array().unwrap().len(), 1);

    let linked = audit_events(&w.srv, &w.owner, &w.api.slug, "auth.social.linked");
    assert!(linked.iter().any(|e| e["metadata"]["method"] == "explicit"));
    let unlinked = audit_events(&w.srv, &w.owner, &w.api.slug, "auth.social.unlinked");
    assert_eq!(unlinked.len(), 1);
}

#[test]
fn apple_answers_by_form_post_and_takes_a_client_secret_signed_with_the_tenants_key() {
    use base64::engine::general_purpose::STANDARD;
    let apple = Stub::start();
    let (der, public) = p256_pkcs8();
    apple.expect_apple(&public, "TEAM012345", "KEY0123456");
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        STANDARD.encode(&der)
    );
    let env = [("TESSERA__SOCIAL__APPLE__ISSUER", apple.base.as_str())];
    let (_smtp, srv) = start_with_mail(&env);
    let api = UserApi::signup(&srv, "Apple Co", "owner@example.com");
    let owner = srv.login("owner@example.com", PASSWORD);
    srv.reauth(&owner, PASSWORD);
    let r = srv.dash(
        "PUT",
        &format!("/v1/auth/dashboard/tenants/{}/settings/urls", api.slug),
        &owner,
        Some(&json!({"site_url": APP, "redirect_urls": []})),
    );
    assert_eq!(r.status(), 200);
    let (st, v) = srv.dash_json(
        "PUT",
        &format!(
            "/v1/auth/dashboard/tenants/{}/settings/social/apple",
            api.slug
        ),
        &owner,
        Some(&json!({"enabled": true, "client_id": "com.example.web",
            "apple": {"team_id": "TEAM012345", "key_id": "KEY0123456", "private_key": pem}})),
    );
    assert_eq!(st, 200, "{v}");

    apple.next("001234.abcdef", Some("x1y2@privaterelay.appleid.com"), true);
    let mut b = Browser::new();
    let mut u = url::Url::parse(&srv.url("/oauth/apple/authorize")).unwrap();
    u.query_pairs_mut()
        .append_pair("tenant_id", &api.tenant_id)
        .append_pair("redirect_uri", APP);
    let (st, at, body) = b.get(u.as_str(), None);
    assert_eq!(st, 302, "{body}");
    assert_eq!(param(&at, "response_mode").as_deref(), Some("form_post"));
    assert_eq!(param(&at, "scope").as_deref(), Some("name email"));
    // Apple posts the answer to the callback (its `user` field carries the name once).
    let (_, callback, _) = b.get(&at, None);
    let (path, _) = callback.split_once('?').unwrap();
    let code = param(&callback, "code").unwrap();
    let state = param(&callback, "state").unwrap();
    let (st, back, body) = b.post_form(
        path,
        &[
            ("code", &code),
            ("state", &state),
            ("user", r#"{"name":{"firstName":"Ada","lastName":"L"}}"#),
        ],
    );
    assert_eq!(st, 302, "{body}");
    let token = param(&back, "access_token").unwrap_or_else(|| panic!("{back}"));
    let r = api.post(
        "/v1/auth/social/apple/session",
        &json!({"access_token": token, "tenant_slug": api.slug}),
    );
    let user = &r.expect(200)["user"];
    assert_eq!(user["email"], "x1y2@privaterelay.appleid.com");
    assert_eq!(user["email_verified"], true);

    // A client secret signed with another key is refused by Apple: provider_error.
    apple.expect_apple(&p256_pkcs8().1, "TEAM012345", "KEY0123456");
    let (_, at, _) = b.get(u.as_str(), None);
    let (_, callback, _) = b.get(&at, None);
    let (path, _) = callback.split_once('?').unwrap();
    let (_, back, _) = b.post_form(
        path,
        &[
            ("code", &param(&callback, "code").unwrap()),
            ("state", &param(&callback, "state").unwrap()),
        ],
    );
    assert_eq!(
        param(&back, "error").as_deref(),
        Some("provider_error"),
        "{back}"
    );
}

/// Most providers sign ID tokens RS256: such a token signs in. A token whose header names
/// another algorithm than its key's type (ES256 over the RSA key's `kid`) is refused, and makes
/// no account.
#[test]
fn an_rs256_id_token_signs_in_and_a_header_alg_against_the_key_type_is_refused() {
    let w = World::start();
    w.oidc.use_rsa();
    w.oidc.next("g-rsa", Some("rsa@example.com"), true);
    let signed = w.signed_in("google", None);
    assert_eq!(signed.body["user"]["email"], "rsa@example.com");

    w.oidc.faults(Faults {
        alg_mismatch: true,
        ..Faults::default()
    });
    w.oidc
        .next("g-mismatch", Some("mismatch@example.com"), true);
    let back = w.sign_in("google", None);
    assert_eq!(
        param(&back, "error").as_deref(),
        Some("provider_error"),
        "{back}"
    );
    assert!(param(&back, "access_token").is_none(), "{back}");
    let (st, users) = w.srv.dash_json(
        "GET",
        &format!(
            "/v1/auth/dashboard/tenants/{}/users?email=mismatch%40example.com",
            w.api.slug
        ),
        &w.owner,
        None,
    );
    assert_eq!(st, 200, "{users}");
    assert_eq!(users["data"], json!([]), "{users}");
}
