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

pub(crate) const CALLBACK: &str = "https://rp.example/callback";
const API: &str = "https://api.acme.example/orders";

/// Registers a client on the dashboard; answers its id and secret (none for a public one).
pub(crate) fn register_client(
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

pub(crate) fn consent(
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
        "organization",
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
pub(crate) fn query_of(redirect_to: &str) -> std::collections::HashMap<String, String> {
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

/// The `openidconnect` client of [`Library`]: discovered, with the introspection endpoint set.
type LibraryClient = CoreClient<
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
>;

/// A relying party on the `openidconnect` library: a confidential client allowed `openid email
/// offline_access orders:read`, the resource [`API`] that `orders:read` belongs to, and a user
/// with a confirmed address, signed in.
struct Library {
    _smtp: SmtpStub,
    srv: TestServer,
    s: Session,
    api: UserApi,
    resource: String,
    scope_id: String,
    client_id: String,
    secret: String,
    user: UserTokens,
    http: reqwest::blocking::Client,
    client: LibraryClient,
}

/// One authorize request of [`Library`]: its URL, state, nonce and PKCE verifier.
struct LibraryRequest {
    url: url::Url,
    csrf: CsrfToken,
    nonce: Nonce,
    verifier: PkceCodeVerifier,
}

/// The tenant "Provider" with the relying party of [`Library`], which discovered the provider.
fn library_setup() -> Library {
    let (smtp, srv, api, s) = user_setup("Provider", &[]);
    srv.reauth(&s, PASSWORD);
    let (resource, scope_id) = resource_with_scope(&srv, &s, &api.slug);
    let scopes = ["openid", "email", "offline_access", "orders:read"];
    let (client_id, secret) = register_client(&srv, &s, &api.slug, "confidential", &scopes);
    let secret = secret.expect("a confidential client has a secret");
    let user = api.verified_user(&smtp, "reader@example.com", "correct horse battery");
    let http = http();
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
    Library {
        _smtp: smtp,
        srv,
        s,
        api,
        resource,
        scope_id,
        client_id,
        secret,
        user,
        http,
        client,
    }
}

impl Library {
    /// A code-flow request with PKCE and a nonce for `openid email`; `for_the_api` adds
    /// `offline_access orders:read` and the resource [`API`].
    fn request(&self, for_the_api: bool) -> LibraryRequest {
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut b = self
            .client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("email".into()));
        if for_the_api {
            b = b
                .add_scope(Scope::new("offline_access".into()))
                .add_scope(Scope::new("orders:read".into()))
                .add_extra_param("resource", API);
        }
        let (url, csrf, nonce) = b.set_pkce_challenge(challenge).url();
        LibraryRequest {
            url,
            csrf,
            nonce,
            verifier,
        }
    }

    /// The answer to `req` with the user signed in, in `lang`: the consent screen's payload,
    /// or a redirect.
    fn shown(&self, req: &LibraryRequest, lang: &str) -> Value {
        authorize(&self.api, req.url.as_str(), Some(&self.user.access), lang)
            .expect(200)
            .clone()
    }

    /// The user approves `req` on the consent screen; answers where the client is sent.
    fn approved(&self, req: &LibraryRequest) -> String {
        let shown = self.shown(req, "en");
        assert_eq!(shown["consent_required"], true, "{shown}");
        consent(&self.api, &self.user.access, &shown, "approve", None).expect(200)["redirect_to"]
            .as_str()
            .expect("redirect_to")
            .to_owned()
    }

    /// The code in `to` exchanged with `req`'s verifier.
    fn exchange(&self, req: LibraryRequest, to: &str) -> openidconnect::core::CoreTokenResponse {
        self.client
            .exchange_code(AuthorizationCode::new(query_of(to)["code"].clone()))
            .expect("token endpoint")
            .set_pkce_verifier(req.verifier)
            .request(&self.http)
            .expect("the code exchange")
    }

    /// The first grant: the request for [`API`] approved and its code exchanged; answers the
    /// tokens and the request's nonce.
    fn first_grant(&self) -> (openidconnect::core::CoreTokenResponse, Nonce) {
        let req = self.request(true);
        let to = self.approved(&req);
        let nonce = req.nonce.clone();
        (self.exchange(req, &to), nonce)
    }

    /// A grant without the resource: approved when asked, then a code for a new request.
    fn grant_without_resource(&self) -> openidconnect::core::CoreTokenResponse {
        let req = self.request(false);
        self.approved(&req);
        let req = self.request(false);
        let to = self.shown(&req, "en")["redirect_to"]
            .as_str()
            .expect("a code at once")
            .to_owned();
        self.exchange(req, &to)
    }

    /// `/oauth/userinfo` with `token` as the bearer.
    fn userinfo(&self, token: &str) -> reqwest::blocking::Response {
        self.api
            .client
            .get(format!("{}/oauth/userinfo", self.api.issuer()))
            .bearer_auth(token)
            .send()
            .unwrap()
    }

    /// Revokes `access` (posted by hand: the library refuses to revoke over plain http).
    fn revoke(&self, access: &str) -> AuthAnswer {
        form(
            &self.api,
            &format!("/v1/tenants/{}/oauth/revoke", self.api.slug),
            Some((&self.client_id, &self.secret)),
            &[("token", access), ("token_type_hint", "access_token")],
        )
    }

    /// `/v1/users/me/consents` (`GET`) or `/v1/users/me/consents/{client_id}` (`DELETE`), as
    /// the user.
    fn consents(&self, method: &str) -> AuthAnswer {
        let path = match method {
            "GET" => "/v1/users/me/consents".to_owned(),
            _ => format!("/v1/users/me/consents/{}", self.client_id),
        };
        self.api.send_as(
            Some(&self.api.api_key),
            method,
            &path,
            Some(&self.user.access),
            None,
            None,
        )
    }
}

/// Nobody signed in: authorize tells the UI to sign the user in, then repeat the request.
#[test]
fn nobody_signed_in_the_ui_is_told_to_sign_the_user_in_and_repeat_the_request() {
    let l = library_setup();
    let req = l.request(true);
    let login = authorize(&l.api, req.url.as_str(), None, "en");
    let body = login.expect(200);
    assert_eq!(body["login_required"], true, "{body}");
    assert!(body["authorize_url"]
        .as_str()
        .unwrap()
        .contains("code_challenge="));
}

/// Signed in, the consent screen's payload names the client, each scope, the resource and the
/// request, in the reader's language.
#[test]
fn the_consent_screen_shows_the_client_its_scopes_the_resource_and_the_request() {
    let l = library_setup();
    let req = l.request(true);
    let shown = l.shown(&req, "de-DE,de;q=0.9");
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
    assert_eq!(shown["state"], req.csrf.secret().as_str());
    assert_eq!(shown["nonce"], req.nonce.secret().as_str());
    assert_eq!(shown["code_challenge_method"], "S256");
    assert_eq!(shown["response_type"], "code");
    assert_eq!(shown["agent_scopes"], json!([]));
}

/// A consent decision for another request than the one shown is refused.
#[test]
fn a_consent_decision_for_another_request_than_the_one_shown_is_refused() {
    let l = library_setup();
    let shown = l.shown(&l.request(true), "en");
    let mut forged = shown.clone();
    forged["scope"] = json!("openid email");
    consent(&l.api, &l.user.access, &forged, "approve", None)
        .expect_error(400, "oauth/consent_mismatch");
}

/// Of the scopes asked for, a consent may leave out only the individually checkable one.
#[test]
fn a_consent_may_leave_out_only_the_individually_checkable_scope() {
    let l = library_setup();
    let shown = l.shown(&l.request(true), "en");
    consent(
        &l.api,
        &l.user.access,
        &shown,
        "approve",
        Some(json!(["openid", "orders:read"])),
    )
    .expect_error(400, "validation/invalid_request");
}

/// An approved consent sends the client its code with the request's state and the issuer.
#[test]
fn an_approved_consent_sends_the_code_back_with_state_and_iss() {
    let l = library_setup();
    let req = l.request(true);
    let to = l.approved(&req);
    assert!(to.starts_with(CALLBACK), "{to}");
    let q = query_of(&to);
    assert_eq!(q["state"], *req.csrf.secret());
    assert_eq!(q["iss"], l.api.issuer(), "RFC 9207 iss");
}

/// The code exchange gives an ID token of the user, with its address and the access token's hash.
#[test]
fn the_code_exchange_gives_an_id_token_of_the_user_with_the_at_hash() {
    let l = library_setup();
    let (tokens, nonce) = l.first_grant();
    let id_token = tokens.id_token().expect("an ID token");
    let id_verifier = l.client.id_token_verifier();
    let claims = id_token
        .claims(&id_verifier, &nonce)
        .expect("a valid ID token");
    assert_eq!(
        claims.subject().as_str(),
        l.user.claims()["sub"].as_str().unwrap()
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
}

/// The access token is an `at+jwt` of the client, for the resource and the scopes asked for.
#[test]
fn the_access_token_is_an_at_jwt_for_the_resource_and_scopes_asked_for() {
    let l = library_setup();
    let (tokens, _) = l.first_grant();
    let at = jwt_part(tokens.access_token().secret(), 1);
    assert_eq!(at["client_id"], l.client_id.as_str());
    assert_eq!(at["aud"], API, "aud is the resource asked for");
    assert_eq!(at["scope"], "openid email offline_access orders:read");
    assert_eq!(jwt_part(tokens.access_token().secret(), 0)["typ"], "at+jwt");
}

/// The client's token reads userinfo and is refused by the user's own routes; the user's own
/// token is refused by userinfo.
#[test]
fn a_clients_token_is_for_userinfo_and_the_users_own_token_is_not() {
    let l = library_setup();
    let (tokens, nonce) = l.first_grant();
    l.api
        .me(tokens.access_token().secret())
        .expect_error(401, "auth/invalid_token");
    let claims = tokens
        .id_token()
        .expect("an ID token")
        .claims(&l.client.id_token_verifier(), &nonce)
        .expect("a valid ID token");
    let info: CoreUserInfoClaims = l
        .client
        .user_info(
            tokens.access_token().clone(),
            Some(claims.subject().clone()),
        )
        .expect("userinfo endpoint")
        .request(&l.http)
        .expect("userinfo");
    assert_eq!(info.email().map(|e| e.as_str()), Some("reader@example.com"));
    assert_eq!(l.userinfo(&l.user.access).status(), 401);
}

/// Consent is per resource: the same client asking without the resource is asked again, with
/// everything new there; once approved, the next such request gets its code at once, its
/// token for userinfo, never the tenant's first-party audience.
#[test]
fn consent_is_per_resource_so_a_request_without_it_is_asked_again() {
    let l = library_setup();
    l.first_grant();
    let asked = l.shown(&l.request(false), "en");
    assert_eq!(asked["consent_required"], true, "{asked}");
    assert_eq!(asked["is_re_consent"], true);
    assert_eq!(asked["new_scopes"], json!(["openid", "email"]));
    assert_eq!(asked["new_resources"], json!([]));
    consent(&l.api, &l.user.access, &asked, "approve", None).expect(200);
    let req = l.request(false);
    let to2 = l.shown(&req, "en")["redirect_to"]
        .as_str()
        .expect("a code at once")
        .to_owned();
    let nonce2 = req.nonce.clone();
    let t2 = l.exchange(req, &to2);
    t2.id_token()
        .unwrap()
        .claims(&l.client.id_token_verifier(), &nonce2)
        .expect("ID token");
    assert_eq!(
        jwt_part(t2.access_token().secret(), 1)["aud"],
        format!("{}/oauth/userinfo", l.api.issuer()),
        "never the slug of first-party tokens"
    );
}

/// A refresh answers a new refresh token and keeps the grant's scopes.
#[test]
fn a_refresh_rotates_the_refresh_token_and_keeps_the_scopes() {
    let l = library_setup();
    let (tokens, _) = l.first_grant();
    let old_refresh = tokens.refresh_token().expect("a refresh token").clone();
    let refreshed = l
        .client
        .exchange_refresh_token(&old_refresh)
        .unwrap()
        .request(&l.http)
        .expect("refresh");
    assert_ne!(
        refreshed.refresh_token().unwrap().secret(),
        old_refresh.secret()
    );
    assert_eq!(
        jwt_part(refreshed.access_token().secret(), 1)["scope"],
        "openid email offline_access orders:read"
    );
}

/// Introspection (the library's request) finds a refreshed access token active, for its client.
#[test]
fn introspection_finds_a_live_token_active_for_its_client() {
    let l = library_setup();
    let (tokens, _) = l.first_grant();
    let refreshed = l
        .client
        .exchange_refresh_token(tokens.refresh_token().expect("a refresh token"))
        .unwrap()
        .request(&l.http)
        .expect("refresh");
    let live = l
        .client
        .introspect(refreshed.access_token())
        .request(&l.http)
        .expect("introspection");
    assert!(live.active());
    assert_eq!(
        live.client_id().map(|c| c.as_str()),
        Some(l.client_id.as_str())
    );
}

/// Deleting a catalog scope keeps it out of every later token of a grant that had it.
#[test]
fn a_deleted_catalog_scope_is_left_out_of_later_tokens() {
    let l = library_setup();
    let (tokens, _) = l.first_grant();
    let (st, _) = l.srv.dash_json(
        "DELETE",
        &format!("/v1/resources/{}/scopes/{}", l.resource, l.scope_id),
        &l.s,
        None,
    );
    assert_eq!(st, 204);
    let after_delete = l
        .client
        .exchange_refresh_token(tokens.refresh_token().expect("a refresh token"))
        .unwrap()
        .request(&l.http)
        .expect("refresh after the scope was deleted");
    assert_eq!(
        jwt_part(after_delete.access_token().secret(), 1)["scope"],
        "openid email offline_access"
    );
}

/// Revoking an access token ends its grant: the token is inactive, its refresh token dead, and
/// userinfo refuses it with `invalid_token`.
#[test]
fn revoking_an_access_token_ends_its_grant() {
    let l = library_setup();
    let (tokens, _) = l.first_grant();
    let revoked = l.revoke(tokens.access_token().secret());
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    let dead = l
        .client
        .introspect(tokens.access_token())
        .request(&l.http)
        .expect("introspection");
    assert!(!dead.active(), "a revoked grant's token is inactive");
    let refresh_dead = l
        .client
        .exchange_refresh_token(tokens.refresh_token().unwrap())
        .unwrap()
        .request(&l.http);
    assert!(
        refresh_dead.is_err(),
        "the revoked grant's refresh token is dead"
    );
    let r = l.userinfo(tokens.access_token().secret());
    assert_eq!(r.status(), 401);
    assert!(r.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .contains("invalid_token"));
}

/// The user's consents list one entry per client, with its name and resources; withdrawing it
/// ends every grant of the client and leaves nothing to withdraw again.
#[test]
fn the_user_lists_a_clients_consent_and_withdrawing_it_ends_the_clients_grants() {
    let l = library_setup();
    l.first_grant();
    let t2 = l.grant_without_resource();
    let list = l.consents("GET");
    let data = list.expect(200)["data"].clone();
    assert_eq!(data.as_array().unwrap().len(), 1, "{data}");
    assert_eq!(data[0]["client_id"], l.client_id.as_str());
    assert_eq!(data[0]["client_name"], "Relying Party");
    assert_eq!(data[0]["resources"], json!([API]));
    let second_refresh: RefreshToken = t2.refresh_token().unwrap().clone();
    let gone = l.consents("DELETE");
    assert_eq!(gone.status, 204, "{}", gone.body);
    assert!(l
        .client
        .exchange_refresh_token(&second_refresh)
        .unwrap()
        .request(&l.http)
        .is_err());
    assert_eq!(l.consents("GET").expect(200)["data"], json!([]));
    l.consents("DELETE").expect_error(404, "resource/not_found");
}

/// The audit trail names the consent, the revocation and the withdrawal.
#[test]
fn the_audit_trail_names_consents_revocations_and_withdrawals() {
    let l = library_setup();
    let (tokens, _) = l.first_grant();
    assert_eq!(l.revoke(tokens.access_token().secret()).status, 200);
    assert_eq!(l.consents("DELETE").status, 204);
    let (st, audit) = l.srv.dash_json(
        "GET",
        &format!(
            "/v1/auth/dashboard/tenants/{}/audit-events?limit=100",
            l.api.slug
        ),
        &l.s,
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
pub(crate) const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

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

/// The tenant "Codes" (with `extra` environment), the clients and user of [`Flow`], and the
/// owner's session.
fn codes_setup(extra: &[(&str, &str)]) -> (SmtpStub, TestServer, Session, Flow) {
    let (smtp, srv, api, s) = user_setup("Codes", extra);
    let f = flow(&srv, &smtp, api, &s);
    (smtp, srv, s, f)
}

/// The tenant's token endpoint.
fn token_path(f: &Flow) -> String {
    format!("/v1/tenants/{}/oauth/token", f.api.slug)
}

/// The confidential client's id and secret.
fn conf(f: &Flow) -> (&str, &str) {
    (f.confidential.0.as_str(), f.confidential.1.as_str())
}

/// `token` introspected by the confidential client.
fn introspect_by(f: &Flow, client: (&str, &str), token: &str) -> AuthAnswer {
    form(
        &f.api,
        &format!("/v1/tenants/{}/oauth/introspect", f.api.slug),
        Some(client),
        &[("token", token)],
    )
}

/// A code of the public client (consented) exchanged with PKCE alone, no secret.
fn public_exchange(f: &Flow) -> AuthAnswer {
    let a = authorize(&f.api, &f.url(&f.public, &[]), Some(&f.user.access), "en")
        .expect(200)
        .clone();
    let to =
        consent(&f.api, &f.user.access, &a, "approve", None).expect(200)["redirect_to"].clone();
    let code = query_of(to.as_str().unwrap())["code"].clone();
    form(
        &f.api,
        &token_path(f),
        None,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
            ("client_id", &f.public),
        ],
    )
}

/// A client that does not authenticate as registered is `invalid_client`, and its attempt
/// leaves the code good: a wrong secret, a public client with a secret, a confidential client
/// without one.
#[test]
fn a_client_that_does_not_authenticate_as_registered_is_invalid_client() {
    let (_smtp, _srv, _s, f) = codes_setup(&[]);
    let conf = conf(&f);
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
        &token_path(&f),
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
    let no_secret = form(
        &f.api,
        &token_path(&f),
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
    f.exchange(conf, &code, VERIFIER).expect(200);
}

/// Another client's code is refused, and stays good for its own client.
#[test]
fn another_clients_code_is_refused_and_stays_good_for_its_own() {
    let (_smtp, _srv, _s, f) = codes_setup(&[]);
    let conf = conf(&f);
    let code = f.code(conf.0);
    let theirs = form(
        &f.api,
        &token_path(&f),
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
    f.exchange(conf, &code, VERIFIER).expect(200);
}

/// The password grant is refused as unsupported.
#[test]
fn the_password_grant_is_unsupported() {
    let (_smtp, srv, api, s) = user_setup("Codes", &[]);
    srv.reauth(&s, PASSWORD);
    let (cid, secret) = register_client(&srv, &s, &api.slug, "confidential", &["openid"]);
    let pw = form(
        &api,
        &format!("/v1/tenants/{}/oauth/token", api.slug),
        Some((&cid, &secret.unwrap())),
        &[
            ("grant_type", "password"),
            ("username", "a"),
            ("password", "b"),
        ],
    );
    assert_eq!(pw.body["error"], "unsupported_grant_type");
}

/// A code exchange answers live access and refresh tokens, marked not to be stored.
#[test]
fn a_code_exchange_answers_live_tokens_not_to_be_stored() {
    let (_smtp, _srv, _s, f) = codes_setup(&[]);
    let conf = conf(&f);
    let code = f.code(conf.0);
    let first = f.exchange(conf, &code, VERIFIER);
    let tokens = first.expect(200).clone();
    assert_eq!(first.header("cache-control").as_deref(), Some("no-store"));
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(introspect_by(&f, conf, access).expect(200)["active"], true);
    assert_eq!(introspect_by(&f, conf, refresh).expect(200)["active"], true);
}

/// A code used twice is refused, and what its first use issued is revoked.
#[test]
fn a_code_used_twice_revokes_what_its_first_use_issued() {
    let (_smtp, _srv, _s, f) = codes_setup(&[]);
    let conf = conf(&f);
    let code = f.code(conf.0);
    let tokens = f.exchange(conf, &code, VERIFIER).expect(200).clone();
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let access = tokens["access_token"].as_str().unwrap();
    let again = f.exchange(conf, &code, VERIFIER);
    assert_eq!(again.body["error"], "invalid_grant", "{}", again.body);
    assert_eq!(introspect_by(&f, conf, access).expect(200)["active"], false);
    assert_eq!(
        introspect_by(&f, conf, refresh).expect(200),
        &json!({"active": false})
    );
    let dead = form(
        &f.api,
        &token_path(&f),
        Some(conf),
        &[("grant_type", "refresh_token"), ("refresh_token", refresh)],
    );
    assert_eq!(dead.body["error"], "invalid_grant");
}

/// A wrong PKCE verifier is refused and burns the code: the right one no longer redeems it.
#[test]
fn a_wrong_verifier_burns_the_code() {
    let (_smtp, _srv, _s, f) = codes_setup(&[]);
    let conf = conf(&f);
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
}

/// A wrong redirect URI is refused and burns the code: the right one no longer redeems it.
#[test]
fn a_wrong_redirect_uri_burns_the_code() {
    let (_smtp, _srv, _s, f) = codes_setup(&[]);
    let conf = conf(&f);
    let code = f.code(conf.0);
    let moved = form(
        &f.api,
        &token_path(&f),
        Some(conf),
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", "https://rp.example/other"),
            ("code_verifier", VERIFIER),
        ],
    );
    assert_eq!(moved.body["error"], "invalid_grant");
    let retried = f.exchange(conf, &code, VERIFIER);
    assert_eq!(retried.body["error"], "invalid_grant", "{}", retried.body);
}

/// A code exchange without a PKCE verifier is a malformed request.
#[test]
fn a_missing_verifier_is_a_malformed_request() {
    let (_smtp, _srv, _s, f) = codes_setup(&[]);
    let conf = conf(&f);
    let code = f.code(conf.0);
    let bare = form(
        &f.api,
        &token_path(&f),
        Some(conf),
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CALLBACK),
        ],
    );
    assert_eq!(bare.body["error"], "invalid_request");
}

/// Another tenant's code is nothing to that tenant: neither its client nor this tenant's own
/// client at its token endpoint redeems it, and the same code is redeemed at home afterwards.
#[test]
fn another_tenant_neither_redeems_a_code_nor_knows_its_client() {
    let (_smtp, srv, _s, f) = codes_setup(&[]);
    let conf = conf(&f);
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
}

/// A code past its lifetime (2 s here) is refused.
#[test]
fn an_expired_code_is_refused() {
    let (_smtp, _srv, _s, f) =
        codes_setup(&[("TESSERA__TOKENS__AUTHORIZATION_CODE_TTL_SECS", "2")]);
    let conf = conf(&f);
    let code = f.code(conf.0);
    std::thread::sleep(std::time::Duration::from_millis(2200));
    assert_eq!(
        f.exchange(conf, &code, VERIFIER).body["error"],
        "invalid_grant"
    );
}

/// A public client exchanges its code with PKCE alone, and may not introspect, even its own
/// token.
#[test]
fn a_public_client_exchanges_with_pkce_alone_but_may_not_introspect() {
    let (_smtp, _srv, _s, f) = codes_setup(&[]);
    let public_tokens = public_exchange(&f).expect(200).clone();
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
}

/// A refresh token is good only for whom it was issued to: a public client's not for the
/// confidential client, a first-party one for no client, and a client's not as a first-party one.
#[test]
fn a_refresh_token_is_good_only_for_whom_it_was_issued_to() {
    let (_smtp, _srv, _s, f) = codes_setup(&[]);
    let public_tokens = public_exchange(&f).expect(200).clone();
    let stolen = form(
        &f.api,
        &token_path(&f),
        Some(conf(&f)),
        &[
            ("grant_type", "refresh_token"),
            (
                "refresh_token",
                public_tokens["refresh_token"].as_str().unwrap(),
            ),
        ],
    );
    assert_eq!(stolen.body["error"], "invalid_grant");
    let first_party = form(
        &f.api,
        &token_path(&f),
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
}

/// A re-keyed client's old secret gets no more tokens; the new one does.
#[test]
fn a_rotated_secret_replaces_the_old_one_at_once() {
    let (_smtp, srv, s, f) = codes_setup(&[]);
    let conf = conf(&f);
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
}

/// A deleted client's authorize requests are refused to the caller, it gets no more tokens,
/// and the tokens it had are inactive.
#[test]
fn a_deleted_client_gets_nothing_more_and_its_tokens_are_inactive() {
    let (_smtp, srv, s, f) = codes_setup(&[]);
    let public_tokens = public_exchange(&f).expect(200).clone();
    srv.reauth(&s, PASSWORD);
    let clients = format!("/v1/auth/dashboard/tenants/{}/oauth-clients", f.api.slug);
    let (st, _) = srv.dash_json("DELETE", &format!("{clients}/{}", f.public), &s, None);
    assert_eq!(st, 204);
    authorize(&f.api, &f.url(&f.public, &[]), Some(&f.user.access), "en")
        .expect_error(400, "oauth/invalid_client");
    let gone = form(
        &f.api,
        &token_path(&f),
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
    let dead = introspect_by(
        &f,
        conf(&f),
        public_tokens["access_token"].as_str().unwrap(),
    );
    assert_eq!(
        dead.expect(200)["active"],
        false,
        "a deleted client's tokens are inactive"
    );
}

/// The token endpoint takes a form body only: JSON is refused.
#[test]
fn the_token_endpoint_needs_a_form_body() {
    let (_smtp, _srv, api, _s) = user_setup("Codes", &[]);
    let json_body = api
        .client
        .post(api.url(&format!("/v1/tenants/{}/oauth/token", api.slug)))
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
