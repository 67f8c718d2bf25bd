//! Agents: the registry on the dashboard (paid tiers, owners, a secret shown once), machine
//! tokens by client credentials through a real OAuth library, CIBA consent and polling, token
//! exchange on a user's behalf, revocation by the tenant and by the user, the activity feed,
//! rate limits clamped to the platform's ceilings, discovery and dynamic registration.

use std::time::Duration;

use openidconnect::{
    core::{
        CoreClient, CoreDeviceAuthorizationResponse, CoreErrorResponseType, CoreJsonWebKey,
        CoreRequestTokenError, CoreTokenType,
    },
    AuthType, ClientId, ClientSecret, DeviceAuthorizationUrl, EndpointNotSet, EndpointSet,
    IssuerUrl, JsonWebKey, JsonWebKeySet, JsonWebKeySetUrl, OAuth2TokenResponse, RequestTokenError,
    Scope, TokenResponse, TokenUrl,
};
use serde_json::{json, Value};

use crate::support::http;
use crate::support::*;

pub(crate) const POLL: (&str, &str) = ("TESSERA__AGENTS__POLL_INTERVAL_SECS", "1");
const CLIENT_CREDENTIALS: &str = "client_credentials";
pub(crate) const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
pub(crate) const CIBA: &str = "urn:openid:params:grant-type:ciba";
const DEVICE_CODE: &str = "urn:ietf:params:oauth:grant-type:device_code";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
const RESOURCE: &str = "https://api.example/";
const REVOKED_CHALLENGE: &str =
    r#"Bearer error="invalid_token", error_description="agent_revoked""#;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn agents_path(slug: &str) -> String {
    format!("/v1/auth/dashboard/tenants/{slug}/agents")
}

fn agent_path(slug: &str, id: &str) -> String {
    format!("{}/{id}", agents_path(slug))
}

/// Lifts the tenant to the pro tier with the admin CLI.
#[track_caller]
pub(crate) fn set_pro(srv: &TestServer, slug: &str) {
    let out = srv.admin(&["tenant", "set-tier", slug, "pro"], "");
    assert!(out.status.success(), "set-tier failed: {}", out.stderr);
}

/// [`user_setup`] with a 1 s poll interval and `extra`, the tenant on the pro tier and the
/// owner's session freshly re-authenticated.
fn pro_setup(tenant: &str, extra: &[(&str, &str)]) -> (SmtpStub, TestServer, UserApi, Session) {
    let mut env = vec![POLL];
    env.extend_from_slice(extra);
    let (smtp, srv, api, s) = user_setup(tenant, &env);
    set_pro(&srv, &api.slug);
    srv.reauth(&s, PASSWORD);
    (smtp, srv, api, s)
}

/// A registered agent: its registration answer and credentials.
pub(crate) struct Agent {
    pub(crate) id: String,
    pub(crate) client_id: String,
    secret: String,
    body: Value,
}

impl Agent {
    pub(crate) fn basic(&self) -> (&str, &str) {
        (&self.client_id, &self.secret)
    }
}

/// Registers an agent (the session must be freshly re-authenticated); asserts 201.
#[track_caller]
pub(crate) fn register_agent(srv: &TestServer, s: &Session, slug: &str, body: Value) -> Agent {
    let (st, answer) = srv.dash_json("POST", &agents_path(slug), s, Some(&body));
    assert_eq!(st, 201, "registering {body}: {answer}");
    Agent {
        id: answer["id"].as_str().expect("an agent id").to_owned(),
        client_id: answer["client_id"]
            .as_str()
            .expect("a client_id")
            .to_owned(),
        secret: answer["client_secret"]
            .as_str()
            .expect("a client_secret at registration")
            .to_owned(),
        body: answer,
    }
}

pub(crate) fn agent_json(name: &str, grant_types: &[&str], scopes: &[&str]) -> Value {
    json!({"name": name, "grant_types": grant_types, "scopes": scopes})
}

/// A form POST to `/v1/tenants/{slug}/oauth/{endpoint}` with HTTP Basic client credentials.
fn oauth_post(
    api: &UserApi,
    endpoint: &str,
    basic: Option<(&str, &str)>,
    form: &[(&str, &str)],
) -> AuthAnswer {
    let mut req = api
        .client
        .post(api.url(&format!("/v1/tenants/{}/oauth/{endpoint}", api.slug)))
        .form(form);
    if let Some((id, secret)) = basic {
        req = req.basic_auth(id, Some(secret));
    }
    AuthAnswer::read(req.send().expect("the OAuth endpoint answers"))
}

/// The token endpoint, the agent authenticating with HTTP Basic.
fn token(api: &UserApi, agent: &Agent, form: &[(&str, &str)]) -> AuthAnswer {
    oauth_post(api, "token", Some(agent.basic()), form)
}

fn client_credentials(api: &UserApi, agent: &Agent, scope: Option<&str>) -> AuthAnswer {
    let mut form = vec![("grant_type", CLIENT_CREDENTIALS)];
    if let Some(s) = scope {
        form.push(("scope", s));
    }
    token(api, agent, &form)
}

fn bc_authorize(
    api: &UserApi,
    agent: &Agent,
    login_hint: &str,
    scope: &str,
    binding_message: Option<&str>,
) -> AuthAnswer {
    bc_authorize_for(api, agent, (login_hint, scope, binding_message), None)
}

/// [`bc_authorize`] for the RFC 8707 `resource`, when given.
fn bc_authorize_for(
    api: &UserApi,
    agent: &Agent,
    (login_hint, scope, binding_message): (&str, &str, Option<&str>),
    resource: Option<&str>,
) -> AuthAnswer {
    let mut form = vec![("login_hint", login_hint), ("scope", scope)];
    if let Some(m) = binding_message {
        form.push(("binding_message", m));
    }
    if let Some(r) = resource {
        form.push(("resource", r));
    }
    oauth_post(api, "bc-authorize", Some(agent.basic()), &form)
}

/// Starts a CIBA request; asserts 200 and answers its `auth_req_id`.
#[track_caller]
fn ciba_request(
    api: &UserApi,
    agent: &Agent,
    login_hint: &str,
    scope: &str,
    binding: &str,
) -> String {
    let r = bc_authorize(api, agent, login_hint, scope, Some(binding));
    r.expect(200)["auth_req_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no auth_req_id in {}", r.body))
        .to_owned()
}

pub(crate) fn poll_ciba(api: &UserApi, agent: &Agent, auth_req_id: &str) -> AuthAnswer {
    token(
        api,
        agent,
        &[("grant_type", CIBA), ("auth_req_id", auth_req_id)],
    )
}

/// Token exchange of `subject` (a user's access token) by `agent`.
fn exchange(api: &UserApi, agent: &Agent, subject: &str, scope: Option<&str>) -> AuthAnswer {
    let mut form = vec![
        ("grant_type", TOKEN_EXCHANGE),
        ("subject_token", subject),
        ("subject_token_type", ACCESS_TOKEN_TYPE),
    ];
    if let Some(s) = scope {
        form.push(("scope", s));
    }
    token(api, agent, &form)
}

/// Asserts an RFC 6749 error answer (`{"error": ...}`) with its status.
#[track_caller]
pub(crate) fn expect_oauth_error(a: &AuthAnswer, status: u16, error: &str) {
    assert_eq!(
        (a.status, a.body["error"].as_str().unwrap_or("<none>")),
        (status, error),
        "unexpected answer: {}",
        a.body
    );
}

/// The `access_token` of a 200 token answer.
#[track_caller]
pub(crate) fn access_token(a: &AuthAnswer) -> String {
    a.expect(200)["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no access_token in {}", a.body))
        .to_owned()
}

/// Waits a little longer than a poll interval of `secs` seconds.
fn wait_interval(secs: u64) {
    std::thread::sleep(Duration::from_millis(secs * 1000 + 300));
}

fn user_get(api: &UserApi, bearer: &str, path: &str) -> AuthAnswer {
    api.send("GET", path, Some(bearer), None)
}

fn user_post(api: &UserApi, bearer: &str, path: &str) -> AuthAnswer {
    api.send("POST", path, Some(bearer), Some(&json!({})))
}

fn user_delete(api: &UserApi, bearer: &str, path: &str) -> AuthAnswer {
    api.send("DELETE", path, Some(bearer), None)
}

/// The user's pending agent requests.
#[track_caller]
fn pending_requests(api: &UserApi, bearer: &str) -> Vec<Value> {
    let r = user_get(api, bearer, "/v1/users/me/agent-requests");
    r.expect(200)["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data in {}", r.body))
        .clone()
}

/// Waits (up to 5 s) for the user's pending request with `binding_message`.
#[track_caller]
pub(crate) fn pending_request(api: &UserApi, bearer: &str, binding_message: &str) -> Value {
    let mut found = None;
    let seen = eventually(Duration::from_secs(5), || {
        found = pending_requests(api, bearer)
            .into_iter()
            .find(|r| r["binding_message"] == binding_message);
        found.is_some()
    });
    assert!(seen, "no pending request {binding_message:?}");
    found.expect("found")
}

pub(crate) fn decide(api: &UserApi, bearer: &str, request_id: &str, decision: &str) -> AuthAnswer {
    user_post(
        api,
        bearer,
        &format!("/v1/users/me/agent-requests/{request_id}/{decision}"),
    )
}

/// Has the user consent to `scope` for the agent: a CIBA request, approved (nothing polled).
#[track_caller]
fn consent_by_ciba(api: &UserApi, agent: &Agent, bearer: &str, email: &str, scope: &str) -> String {
    let binding = "consent for the test";
    let auth_req_id = ciba_request(api, agent, email, scope, binding);
    let request = pending_request(api, bearer, binding);
    let id = request["id"].as_str().expect("a request id");
    let r = decide(api, bearer, id, "approve");
    assert_eq!(r.expect(200)["status"], "approved", "{}", r.body);
    auth_req_id
}

/// Verifies an agent's access token as a resource server would: the tenant JWKS key named by
/// `kid`, ES256, the tenant's issuer, and the audience when given. Answers header and claims.
#[track_caller]
fn verify_agent_token(
    api: &UserApi,
    token: &str,
    audience: Option<&str>,
) -> (jsonwebtoken::Header, Value) {
    api.verify_jwt(token, "agent's access", Some(&api.issuer()), audience)
}

/// The space-separated scopes of a claim or answer, sorted.
fn scope_set(v: &Value) -> Vec<String> {
    let mut s: Vec<String> = v
        .as_str()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    s.sort();
    s
}

fn strings(items: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = items.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

/// A confidential OAuth client of the tenant (for introspection); answers id and secret.
#[track_caller]
fn confidential_client(srv: &TestServer, s: &Session, slug: &str) -> (String, String) {
    let (st, c) = srv.dash_json(
        "POST",
        &format!("/v1/auth/dashboard/tenants/{slug}/oauth-clients"),
        s,
        Some(&json!({
            "name": "Resource Server",
            "client_type": "confidential",
            "redirect_uris": ["https://rs.example/callback"],
            "allowed_scopes": ["openid"],
        })),
    );
    assert_eq!(st, 201, "{c}");
    (
        c["client_id"].as_str().expect("client_id").to_owned(),
        c["client_secret"]
            .as_str()
            .expect("client_secret")
            .to_owned(),
    )
}

pub(crate) fn introspect(api: &UserApi, client: (&str, &str), token: &str) -> AuthAnswer {
    oauth_post(api, "introspect", Some(client), &[("token", token)])
}

fn userinfo(api: &UserApi, token: &str) -> AuthAnswer {
    let r = api
        .client
        .get(api.url(&format!("/v1/tenants/{}/oauth/userinfo", api.slug)))
        .bearer_auth(token)
        .send()
        .expect("userinfo answers");
    AuthAnswer::read(r)
}

/// Mails of `kind` to `to` (any tenant header).
fn mails_of_kind(smtp: &SmtpStub, kind: &str, to: &str) -> Vec<ReceivedMail> {
    smtp.mails()
        .into_iter()
        .filter(|m| m.kind() == Some(kind) && m.is_to(to))
        .collect()
}

type AgentClient =
    CoreClient<EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// The OAuth library's client for an agent: its credentials and the tenant's token endpoint.
fn library_client(
    api: &UserApi,
    client_id: &str,
    secret: &str,
    jwks: JsonWebKeySet<CoreJsonWebKey>,
) -> AgentClient {
    CoreClient::new(
        ClientId::new(client_id.to_owned()),
        IssuerUrl::new(api.issuer()).expect("issuer URL"),
        jwks,
    )
    .set_client_secret(ClientSecret::new(secret.to_owned()))
    .set_token_uri(TokenUrl::new(format!("{}/oauth/token", api.issuer())).expect("token URL"))
}

/// The error code of a token request the library saw refused.
#[track_caller]
fn refusal<T: std::fmt::Debug, RE: std::error::Error + 'static>(
    r: Result<T, CoreRequestTokenError<RE>>,
) -> CoreErrorResponseType {
    match r {
        Err(RequestTokenError::ServerResponse(e)) => e.error().clone(),
        other => panic!("expected an OAuth error answer, got {other:?}"),
    }
}

fn activity(srv: &TestServer, s: &Session, slug: &str, id: &str, query: &str) -> (u16, Value) {
    srv.dash_json(
        "GET",
        &format!("{}/activity{query}", agent_path(slug, id)),
        s,
        None,
    )
}

fn data(v: &Value) -> Vec<Value> {
    v["data"].as_array().cloned().unwrap_or_default()
}

fn encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

// ---------------------------------------------------------------------------------------------
// The registry
// ---------------------------------------------------------------------------------------------

fn full_agent() -> Value {
    json!({
        "name": "Order Bot",
        "description": "Reads and updates orders for the support team",
        "agent_class": "mcp-server",
        "logo_url": "https://bot.example/logo.png",
        "scopes": ["orders:read", "orders:write"],
        "grant_types": [CLIENT_CREDENTIALS, TOKEN_EXCHANGE],
        "redirect_uris": [],
        "agent_token_max_ttl_sec": 600,
        "agent_settings": {
            "rate_limits": {"client_credentials_per_min": 50},
            "max_concurrent_tokens": 10,
        },
    })
}

/// The tenant "Agent Registry" on the pro tier with the owner's fresh session ([`pro_setup`]),
/// and the agent of [`full_agent`] registered.
fn registry_with_order_bot() -> (SmtpStub, TestServer, UserApi, Session, Agent) {
    let (smtp, srv, api, s) = pro_setup("Agent Registry", &[]);
    let bot = register_agent(&srv, &s, &api.slug, full_agent());
    (smtp, srv, api, s, bot)
}

/// A tenant on the free tier (the default) registers no agents.
#[test]
fn the_free_tier_registers_no_agents() {
    let (_smtp, srv, api, s) = user_setup("Agent Registry", &[POLL]);
    srv.reauth(&s, PASSWORD);
    let (st, body) = srv.dash_json("POST", &agents_path(&api.slug), &s, Some(&full_agent()));
    assert_eq!(
        (st, error_code(&body)),
        (403, "agent/tier_unauthorized"),
        "{body}"
    );
}

/// Registering an agent needs a recent re-authentication.
#[test]
fn registering_an_agent_needs_a_recent_re_authentication() {
    let (_smtp, srv, api, _s) = pro_setup("Agent Registry", &[]);
    let stale = srv.login(&api.owner, PASSWORD);
    let (st, body) = srv.dash_json("POST", &agents_path(&api.slug), &stale, Some(&full_agent()));
    assert_eq!(
        (st, error_code(&body)),
        (401, "dashboard/reauth_required"),
        "{body}"
    );
}

/// An agent takes only machine grants: a user's code, password or refresh grant is refused.
#[test]
fn an_agent_takes_no_grant_type_of_a_user() {
    let (_smtp, srv, api, s) = pro_setup("Agent Registry", &[]);
    for grants in [
        json!(["authorization_code"]),
        json!([CLIENT_CREDENTIALS, "password"]),
        json!(["refresh_token"]),
    ] {
        let mut body = full_agent();
        body["grant_types"] = grants.clone();
        let (st, answer) = srv.dash_json("POST", &agents_path(&api.slug), &s, Some(&body));
        assert_eq!(
            (st, error_code(&answer)),
            (422, "agent/invalid_grant_type"),
            "{grants}: {answer}"
        );
    }
}

/// An agent whose grants redirect nobody registers no redirect URI.
#[test]
fn an_agent_without_a_redirecting_grant_registers_no_redirect_uri() {
    let (_smtp, srv, api, s) = pro_setup("Agent Registry", &[]);
    let mut body = full_agent();
    body["redirect_uris"] = json!(["https://bot.example/callback"]);
    let (st, answer) = srv.dash_json("POST", &agents_path(&api.slug), &s, Some(&body));
    assert_eq!(
        (st, error_code(&answer)),
        (422, "agent/invalid_field"),
        "{answer}"
    );
}

/// A scope in a reserved namespace is not an agent's.
#[test]
fn a_scope_in_a_reserved_namespace_is_not_an_agents() {
    let (_smtp, srv, api, s) = pro_setup("Agent Registry", &[]);
    let mut body = full_agent();
    body["scopes"] = json!(["openid", "mcp:tools"]);
    let (st, answer) = srv.dash_json("POST", &agents_path(&api.slug), &s, Some(&body));
    assert_eq!(
        (st, error_code(&answer)),
        (400, "validation/invalid_request"),
        "{answer}"
    );
}

/// A registration with a field agents do not have is refused.
#[test]
fn an_unknown_registration_field_is_refused() {
    let (_smtp, srv, api, s) = pro_setup("Agent Registry", &[]);
    let mut body = full_agent();
    body["favourite_colour"] = json!("blue");
    let (st, answer) = srv.dash_json("POST", &agents_path(&api.slug), &s, Some(&body));
    assert_eq!(
        (st, error_code(&answer)),
        (400, "validation/invalid_request"),
        "{answer}"
    );
}

/// A registration answers the secret, once, and every field as set with the limits in force.
#[test]
fn a_registration_answers_the_secret_once_and_every_field_as_set() {
    let (_smtp, _srv, _api, _s, bot) = registry_with_order_bot();
    let b = &bot.body;
    assert!(
        uuid::Uuid::parse_str(&bot.id).is_ok(),
        "id {} is not a UUID",
        bot.id
    );
    assert!(bot.client_id.starts_with("agt_"), "{}", bot.client_id);
    assert!(bot.secret.starts_with("tas_"), "{}", bot.secret);
    let prefix = b["secret_prefix"].as_str().expect("secret_prefix");
    assert!(
        bot.secret.starts_with(prefix) && prefix.len() < bot.secret.len(),
        "{prefix} vs {}",
        bot.secret
    );
    assert_eq!(b["name"], "Order Bot");
    assert_eq!(
        b["description"],
        "Reads and updates orders for the support team"
    );
    assert_eq!(b["agent_class"], "mcp-server");
    assert_eq!(b["logo_url"], "https://bot.example/logo.png");
    assert_eq!(b["scopes"], json!(["orders:read", "orders:write"]));
    assert_eq!(
        b["grant_types"],
        json!([CLIENT_CREDENTIALS, TOKEN_EXCHANGE])
    );
    assert_eq!(b["redirect_uris"], json!([]));
    assert_eq!(b["agent_token_max_ttl_sec"], 600);
    assert_eq!(
        b["agent_settings"]["rate_limits"]["client_credentials_per_min"],
        50
    );
    assert_eq!(b["agent_settings"]["max_concurrent_tokens"], 10);
    assert_eq!(
        json_keys(&b["effective_limits"]),
        name_set(&[
            "api_calls_per_min",
            "token_exchange_per_min",
            "ciba_initiate_per_min",
            "device_code_per_min",
            "client_credentials_per_min",
            "max_concurrent_tokens",
        ])
    );
    let effective = b["effective_limits"]["client_credentials_per_min"]
        .as_u64()
        .expect("an effective limit");
    assert!((1..=50).contains(&effective), "{b}");
    assert_eq!(b["agent_metadata_version"], 1);
    assert_eq!(b["revoked_at"], Value::Null);
    for k in ["created_at", "updated_at"] {
        assert!(b[k].is_string(), "{k} in {b}");
    }
}

/// A registration of a name and a grant alone takes the defaults: no scopes, no redirect URIs,
/// tokens of an hour.
#[test]
fn a_registration_of_a_name_and_a_grant_takes_the_defaults() {
    let (_smtp, srv, api, s) = pro_setup("Agent Registry", &[]);
    let helper = register_agent(
        &srv,
        &s,
        &api.slug,
        json!({"name": "Helper", "grant_types": [CLIENT_CREDENTIALS]}),
    );
    assert_eq!(helper.body["scopes"], json!([]));
    assert_eq!(helper.body["redirect_uris"], json!([]));
    assert_eq!(helper.body["agent_token_max_ttl_sec"], 3600);
    assert_eq!(helper.body["agent_metadata_version"], 1);
}

/// An agent reads back as registered, without its secret.
#[test]
fn an_agent_reads_back_without_its_secret() {
    let (_smtp, srv, api, s, bot) = registry_with_order_bot();
    let (st, one) = srv.dash_json("GET", &agent_path(&api.slug, &bot.id), &s, None);
    assert_eq!(st, 200, "{one}");
    assert!(one.get("client_secret").is_none(), "{one}");
    assert_eq!(one["client_id"], bot.client_id.as_str());
    assert_eq!(one["name"], "Order Bot");
}

/// The agents are listed in pages, oldest first, a cursor leading to the next, without secrets.
#[test]
fn agents_are_listed_in_pages_oldest_first_without_secrets() {
    let (_smtp, srv, api, s, bot) = registry_with_order_bot();
    let base = agents_path(&api.slug);
    let helper = register_agent(
        &srv,
        &s,
        &api.slug,
        json!({"name": "Helper", "grant_types": [CLIENT_CREDENTIALS]}),
    );
    let third = register_agent(
        &srv,
        &s,
        &api.slug,
        agent_json("Third", &[CIBA], &["openid"]),
    );
    let (st, page1) = srv.dash_json("GET", &format!("{base}?limit=2"), &s, None);
    assert_eq!(st, 200, "{page1}");
    let ids = |page: &Value| -> Vec<String> {
        data(page)
            .iter()
            .map(|a| a["id"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(ids(&page1), vec![bot.id.clone(), helper.id.clone()]);
    assert_eq!(page1["pagination"]["has_more"], true, "{page1}");
    assert!(!page1.to_string().contains(&bot.secret), "{page1}");
    assert!(data(&page1)
        .iter()
        .all(|a| a.get("client_secret").is_none()));
    let cursor = page1["pagination"]["next_cursor"]
        .as_str()
        .expect("a next_cursor");
    let (st, page2) = srv.dash_json(
        "GET",
        &format!("{base}?limit=2&cursor={}", encode(cursor)),
        &s,
        None,
    );
    assert_eq!(st, 200, "{page2}");
    assert_eq!(ids(&page2), vec![third.id.clone()]);
    assert_eq!(page2["pagination"]["has_more"], false);
    assert_eq!(page2["pagination"]["next_cursor"], Value::Null);
}

/// A page of more than a hundred agents is refused.
#[test]
fn a_page_of_more_than_a_hundred_agents_is_refused() {
    let (_smtp, srv, api, s) = pro_setup("Agent Registry", &[]);
    let (st, body) = srv.dash_json(
        "GET",
        &format!("{}?limit=101", agents_path(&api.slug)),
        &s,
        None,
    );
    assert_eq!(
        (st, error_code(&body)),
        (400, "validation/invalid_request"),
        "{body}"
    );
}

/// A change bumps the agent's metadata version and leaves untouched fields as they were.
#[test]
fn a_change_bumps_the_metadata_version_and_keeps_untouched_fields() {
    let (_smtp, srv, api, s, bot) = registry_with_order_bot();
    let (st, changed) = srv.dash_json(
        "PATCH",
        &agent_path(&api.slug, &bot.id),
        &s,
        Some(&json!({"name": "Order Bot 2", "scopes": ["orders:read"]})),
    );
    assert_eq!(st, 200, "{changed}");
    assert_eq!(changed["name"], "Order Bot 2");
    assert_eq!(changed["scopes"], json!(["orders:read"]));
    assert_eq!(changed["agent_metadata_version"], 2);
    assert_eq!(
        changed["agent_class"], "mcp-server",
        "untouched fields stay"
    );
}

/// A new secret refuses the old one at once, works itself, and is never read back.
#[test]
fn a_new_secret_refuses_the_old_one_at_once() {
    let (_smtp, srv, api, s, bot) = registry_with_order_bot();
    client_credentials(&api, &bot, Some("orders:read")).expect(200);
    let (st, rotated) = srv.dash_json(
        "POST",
        &format!("{}/rotate-secret", agent_path(&api.slug, &bot.id)),
        &s,
        None,
    );
    assert_eq!(st, 200, "{rotated}");
    let new_secret = rotated["client_secret"]
        .as_str()
        .expect("a new client_secret")
        .to_owned();
    assert_ne!(new_secret, bot.secret);
    assert!(new_secret.starts_with("tas_"));
    assert!(rotated["secret_rotated_at"].is_string(), "{rotated}");
    let old = client_credentials(&api, &bot, Some("orders:read"));
    expect_oauth_error(&old, 401, "invalid_client");
    let rekeyed = Agent {
        secret: new_secret.clone(),
        id: bot.id.clone(),
        client_id: bot.client_id.clone(),
        body: rotated.clone(),
    };
    client_credentials(&api, &rekeyed, Some("orders:read")).expect(200);
    let (_, one) = srv.dash_json("GET", &agent_path(&api.slug, &bot.id), &s, None);
    assert!(!one.to_string().contains(&new_secret), "{one}");
}

/// An id that is no agent's is not found.
#[test]
fn an_unknown_agent_id_is_not_found() {
    let (_smtp, srv, api, s) = pro_setup("Agent Registry", &[]);
    let (st, body) = srv.dash_json(
        "GET",
        &agent_path(&api.slug, &uuid::Uuid::new_v4().to_string()),
        &s,
        None,
    );
    assert_eq!(
        (st, error_code(&body)),
        (404, "resource/not_found"),
        "{body}"
    );
}

/// Another tenant's owner finds this tenant's agent neither under their tenant nor under this.
#[test]
fn another_tenants_owner_does_not_see_the_agents() {
    let (_smtp, srv, api, _s, bot) = registry_with_order_bot();
    let other = UserApi::signup(&srv, "Elsewhere", "boss@example.com");
    let boss = srv.login(&other.owner, PASSWORD);
    let (st, body) = srv.dash_json("GET", &agent_path(&other.slug, &bot.id), &boss, None);
    assert_eq!(
        (st, error_code(&body)),
        (404, "resource/not_found"),
        "{body}"
    );
    let (st, list) = srv.dash_json("GET", &agents_path(&other.slug), &boss, None);
    assert_eq!(st, 200, "{list}");
    assert_eq!(list["data"], json!([]));
    let (st, _) = srv.dash_json("GET", &agent_path(&api.slug, &bot.id), &boss, None);
    assert_eq!(st, 404);
}

/// A viewer reads the agents; registering, changing, re-keying and deleting are the owners'.
#[test]
fn a_viewer_reads_agents_but_only_owners_change_them() {
    let (smtp, srv, api, s, bot) = registry_with_order_bot();
    let base = agents_path(&api.slug);
    srv.add_viewer(&smtp, &s, &api.slug);
    let viewer = srv.login("viewer@example.com", PASSWORD);
    srv.reauth(&viewer, PASSWORD);
    let (st, _) = srv.dash_json("GET", &agent_path(&api.slug, &bot.id), &viewer, None);
    assert_eq!(st, 200);
    let (st, _) = srv.dash_json("GET", &base, &viewer, None);
    assert_eq!(st, 200);
    let one_path = agent_path(&api.slug, &bot.id);
    for (method, path, body) in [
        ("POST", base.clone(), Some(full_agent())),
        ("PATCH", one_path.clone(), Some(json!({"name": "x"}))),
        ("POST", format!("{one_path}/rotate-secret"), None),
        ("DELETE", one_path.clone(), None),
    ] {
        let (st, answer) = srv.dash_json(method, &path, &viewer, body.as_ref());
        assert_eq!(st, 403, "{method} {path}: {answer}");
    }
}

// ---------------------------------------------------------------------------------------------
// Client credentials through the OAuth library
// ---------------------------------------------------------------------------------------------

#[test]
fn an_oauth_library_gets_client_credentials_tokens_signed_by_the_tenant() {
    let (_smtp, srv, api, s) = pro_setup("Machine Tokens", &[]);
    let mut body = agent_json(
        "Nightly Sync",
        &[CLIENT_CREDENTIALS],
        &["orders:read", "orders:write"],
    );
    body["agent_token_max_ttl_sec"] = json!(600);
    let agent = register_agent(&srv, &s, &api.slug, body);
    // A token is bound only to a resource the tenant has registered (RFC 8707), and carries
    // a resource scope only while the catalog approves it for that resource.
    let out = srv.admin(
        &[
            "resource", "register", "--tenant", &api.slug, "--name", "API", "--uri", RESOURCE,
        ],
        "",
    );
    assert!(out.status.success(), "{}", out.stderr);
    let resource_id = out.json()["id"].as_str().expect("resource id").to_owned();
    let (st, entry) = srv.dash_json(
        "POST",
        &format!("/v1/resources/{resource_id}/scopes"),
        &s,
        Some(&json!({
            "scope_name": "orders:read",
            "sensitivity": "normal",
            "display_metadata": {"kind": "locale_text", "locale_text": {
                "en": "Read your orders", "pl": "Odczyt zamówień", "de": "Bestellungen lesen",
                "fr": "Lire vos commandes", "es": "Leer sus pedidos"}},
        })),
    );
    assert_eq!(st, 201, "{entry}");
    let entry_id = entry["id"].as_str().expect("scope id");
    let out = srv.admin(&["scope", "approve", &resource_id, entry_id], "");
    assert!(out.status.success(), "{}", out.stderr);
    let exchanger = register_agent(
        &srv,
        &s,
        &api.slug,
        agent_json("Exchanger", &[TOKEN_EXCHANGE], &["orders:read"]),
    );
    let http = http();
    let iss = api.issuer();
    let jwks_url = JsonWebKeySetUrl::new(format!("{iss}/.well-known/jwks.json")).expect("JWKS URL");
    let jwks: JsonWebKeySet<CoreJsonWebKey> =
        JsonWebKeySet::fetch(&jwks_url, &http).expect("the library reads the tenant JWKS");
    let client = library_client(&api, &agent.client_id, &agent.secret, jwks.clone());

    // Every scope of the agent by default; HTTP Basic (the library's default).
    let tokens = client
        .exchange_client_credentials()
        .request(&http)
        .expect("the client credentials grant");
    assert_eq!(*tokens.token_type(), CoreTokenType::Bearer);
    assert!(tokens.refresh_token().is_none(), "no refresh token");
    assert!(tokens.id_token().is_none(), "no ID token");
    let expires_in = tokens.expires_in().expect("expires_in").as_secs();
    assert!((1..=600).contains(&expires_in), "expires_in {expires_in}");
    let mut granted: Vec<String> = tokens
        .scopes()
        .expect("scope in the answer")
        .iter()
        .map(|s| s.to_string())
        .collect();
    granted.sort();
    assert_eq!(granted, strings(&["orders:read", "orders:write"]));

    let at = tokens.access_token().secret();
    let (header, claims) = verify_agent_token(&api, at, Some(&format!("{iss}/oauth/userinfo")));
    assert_eq!(header.typ.as_deref(), Some("at+jwt"));
    let kid = header.kid.clone().expect("kid");
    assert!(
        jwks.keys()
            .iter()
            .any(|k| k.key_id().map(|id| id.as_str()) == Some(kid.as_str())),
        "kid {kid} is not in the JWKS the library read"
    );
    assert_eq!(claims["iss"], iss.as_str());
    assert_eq!(claims["sub"], agent.client_id.as_str());
    assert_eq!(claims["client_id"], agent.client_id.as_str());
    assert_eq!(claims["tid"], api.tenant_id.as_str());
    assert_eq!(
        scope_set(&claims["scope"]),
        strings(&["orders:read", "orders:write"])
    );
    assert!(
        claims["jti"].as_str().is_some_and(|j| !j.is_empty()),
        "{claims}"
    );
    let lifetime = claims["exp"].as_i64().expect("exp") - claims["iat"].as_i64().expect("iat");
    assert!(
        (1..=600).contains(&lifetime),
        "exp - iat = {lifetime} past agent_token_max_ttl_sec"
    );
    assert!(
        claims.get("act").is_none(),
        "a machine token acts for nobody"
    );

    // A subset, for a resource, authenticating in the body.
    let narrow = client
        .clone()
        .set_auth_type(AuthType::RequestBody)
        .exchange_client_credentials()
        .add_scope(Scope::new("orders:read".into()))
        .add_extra_param("resource", RESOURCE)
        .request(&http)
        .expect("a narrower token");
    let (_, narrow_claims) =
        verify_agent_token(&api, narrow.access_token().secret(), Some(RESOURCE));
    assert_eq!(narrow_claims["aud"], RESOURCE);
    assert_eq!(narrow_claims["scope"], "orders:read");
    assert_ne!(narrow_claims["jti"], claims["jti"]);
    // orders:write is not in the resource's catalog: a token for the resource leaves it out.
    let both = token(
        &api,
        &agent,
        &[
            ("grant_type", CLIENT_CREDENTIALS),
            ("scope", "orders:read orders:write"),
            ("resource", RESOURCE),
        ],
    );
    assert_eq!(both.expect(200)["scope"], "orders:read", "{}", both.body);
    // A resource the tenant never registered is no audience.
    let unknown = token(
        &api,
        &agent,
        &[
            ("grant_type", CLIENT_CREDENTIALS),
            ("resource", "https://elsewhere.example/"),
        ],
    );
    expect_oauth_error(&unknown, 400, "invalid_target");

    // Refusals, as the library sees them.
    assert_eq!(
        refusal(
            client
                .exchange_client_credentials()
                .add_scope(Scope::new("orders:delete".into()))
                .request(&http)
        ),
        CoreErrorResponseType::InvalidScope
    );
    let not_registered =
        library_client(&api, &exchanger.client_id, &exchanger.secret, jwks.clone());
    assert_eq!(
        refusal(not_registered.exchange_client_credentials().request(&http)),
        CoreErrorResponseType::UnauthorizedClient
    );
    let wrong = library_client(&api, &agent.client_id, "tas_not-the-secret", jwks);
    assert_eq!(
        refusal(wrong.exchange_client_credentials().request(&http)),
        CoreErrorResponseType::InvalidClient
    );
    // The same refusals on the wire: statuses.
    let bad_scope = client_credentials(&api, &agent, Some("orders:delete"));
    expect_oauth_error(&bad_scope, 400, "invalid_scope");
    let unauthorized = client_credentials(&api, &exchanger, None);
    expect_oauth_error(&unauthorized, 400, "unauthorized_client");
    let impostor = Agent {
        id: agent.id.clone(),
        client_id: agent.client_id.clone(),
        secret: "tas_not-the-secret".into(),
        body: Value::Null,
    };
    expect_oauth_error(
        &client_credentials(&api, &impostor, None),
        401,
        "invalid_client",
    );
}

// ---------------------------------------------------------------------------------------------
// CIBA and token exchange
// ---------------------------------------------------------------------------------------------

#[test]
fn ciba_consent_then_polling_and_token_exchange_act_for_the_user() {
    let (smtp, srv, api, s) = pro_setup("Backchannel", &[]);
    let agent = register_agent(
        &srv,
        &s,
        &api.slug,
        agent_json(
            "Shopping Assistant",
            &[CIBA, TOKEN_EXCHANGE],
            &["openid", "orders:read", "orders:write"],
        ),
    );
    let email = "ciba@example.com";
    let user = api.verified_user(&smtp, email, USER_PASSWORD);
    let user_id = user.claims()["sub"].as_str().expect("sub").to_owned();
    let other = api.verified_user(&smtp, "bystander@example.com", USER_PASSWORD);
    let scope = "openid orders:read";

    // A poll sooner than the interval after the request: slow down.
    let early = bc_authorize(&api, &agent, email, scope, Some("too eager"));
    let early = early.expect(200).clone();
    assert_eq!(
        json_keys(&early),
        name_set(&["auth_req_id", "expires_in", "interval"])
    );
    assert_eq!(early["expires_in"], 300);
    assert_eq!(early["interval"], 1, "the configured poll interval");
    let early_id = early["auth_req_id"].as_str().expect("auth_req_id");
    expect_oauth_error(&poll_ciba(&api, &agent, early_id), 400, "slow_down");

    // An unknown address gets the same answer (no enumeration).
    let nobody = bc_authorize(&api, &agent, "nobody@example.com", scope, None);
    let nobody = nobody.expect(200);
    assert_eq!(
        json_keys(nobody),
        name_set(&["auth_req_id", "expires_in", "interval"])
    );
    assert!(nobody["auth_req_id"].is_string());
    assert_eq!(nobody["expires_in"], 300);

    let approved = ciba_request(&api, &agent, email, scope, "order #42");
    let denied = ciba_request(&api, &agent, email, scope, "refund #7");

    // The user is told by mail, with a link to the hosted page.
    let mail = smtp.wait_for(&api.slug, "agent_request", email, 3);
    assert!(
        mail.token_after(&api.link("agent-request")).is_some(),
        "no agent-request link in {}",
        mail.text
    );
    // Those were asked for after the unknown address's: once the postman is idle, nothing
    // went to it.
    assert_none_mailed_since(&smtp, &srv, &["nobody@example.com"]);

    // ...and sees the requests.
    let req = pending_request(&api, &user.access, "order #42");
    assert_eq!(pending_requests(&api, &user.access).len(), 3);
    assert_eq!(req["agent_client_id"], agent.client_id.as_str());
    assert_eq!(req["agent_name"], "Shopping Assistant");
    assert_eq!(req["scopes"], json!(["openid", "orders:read"]));
    for k in ["id", "created_at", "expires_at"] {
        assert!(req[k].is_string(), "{k} in {req}");
    }
    let approved_req = req["id"].as_str().expect("id").to_owned();
    let denied_req = pending_request(&api, &user.access, "refund #7")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let early_req = pending_request(&api, &user.access, "too eager")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert!(pending_requests(&api, &other.access).is_empty());

    // Pending until the user decides.
    wait_interval(1);
    expect_oauth_error(
        &poll_ciba(&api, &agent, &approved),
        400,
        "authorization_pending",
    );
    expect_oauth_error(
        &poll_ciba(&api, &agent, &denied),
        400,
        "authorization_pending",
    );

    // Another user cannot decide it; a decision is final.
    decide(&api, &other.access, &early_req, "approve").expect_error(404, "resource/not_found");
    let ok = decide(&api, &user.access, &approved_req, "approve");
    assert_eq!(
        ok.expect(200),
        &json!({"id": approved_req, "status": "approved"})
    );
    let no = decide(&api, &user.access, &denied_req, "deny");
    assert_eq!(
        no.expect(200),
        &json!({"id": denied_req, "status": "denied"})
    );
    decide(&api, &user.access, &approved_req, "approve").expect_error(404, "resource/not_found");
    decide(&api, &user.access, &approved_req, "deny").expect_error(404, "resource/not_found");
    decide(
        &api,
        &user.access,
        &uuid::Uuid::new_v4().to_string(),
        "approve",
    )
    .expect_error(404, "resource/not_found");
    let left: Vec<Value> = pending_requests(&api, &user.access);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["id"], early_req.as_str());

    // The token, once.
    wait_interval(1);
    let granted = poll_ciba(&api, &agent, &approved);
    let body = granted.expect(200).clone();
    assert_eq!(
        json_keys(&body),
        name_set(&["access_token", "token_type", "expires_in", "scope"])
    );
    assert_eq!(body["token_type"], "Bearer");
    let expires_in = body["expires_in"].as_u64().expect("expires_in");
    assert!((1..=900).contains(&expires_in), "{body}");
    assert_eq!(
        scope_set(&body["scope"]),
        strings(&["openid", "orders:read"])
    );
    let (_, claims) = verify_agent_token(&api, &access_token(&granted), None);
    assert_eq!(claims["sub"], user_id.as_str());
    assert_eq!(claims["act"]["sub"], agent.client_id.as_str());
    assert_eq!(claims["client_id"], agent.client_id.as_str());
    expect_oauth_error(&poll_ciba(&api, &agent, &denied), 400, "access_denied");
    wait_interval(1);
    expect_oauth_error(&poll_ciba(&api, &agent, &approved), 400, "invalid_grant");

    // Token exchange: the user's own token for one acting for the user, within the consent.
    let swapped = exchange(&api, &agent, &user.access, Some("orders:read"));
    let body = swapped.expect(200).clone();
    assert_eq!(
        json_keys(&body),
        name_set(&[
            "access_token",
            "issued_token_type",
            "token_type",
            "expires_in",
            "scope"
        ])
    );
    assert_eq!(body["issued_token_type"], ACCESS_TOKEN_TYPE);
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["scope"], "orders:read");
    let expires_in = body["expires_in"].as_u64().expect("expires_in");
    assert!((1..=900).contains(&expires_in), "{body}");
    let (_, claims) = verify_agent_token(&api, &access_token(&swapped), None);
    assert_eq!(claims["sub"], user_id.as_str());
    assert_eq!(claims["act"]["sub"], agent.client_id.as_str());
    assert_eq!(claims["client_id"], agent.client_id.as_str());
    let lifetime = claims["exp"].as_i64().expect("exp") - claims["iat"].as_i64().expect("iat");
    assert!((1..=900).contains(&lifetime), "exp - iat = {lifetime}");

    // A scope the agent holds but the user never consented to.
    expect_oauth_error(
        &exchange(&api, &agent, &user.access, Some("orders:write")),
        400,
        "invalid_scope",
    );
    // A user who consented to nothing; a token that is no token.
    expect_oauth_error(
        &exchange(&api, &agent, &other.access, Some("orders:read")),
        400,
        "invalid_grant",
    );
    expect_oauth_error(
        &exchange(&api, &agent, "not-a-token", Some("orders:read")),
        400,
        "invalid_grant",
    );
    // The subject token type is required.
    let untyped = token(
        &api,
        &agent,
        &[
            ("grant_type", TOKEN_EXCHANGE),
            ("subject_token", &user.access),
            ("scope", "orders:read"),
        ],
    );
    assert_eq!(untyped.status, 400, "{}", untyped.body);
}

// ---------------------------------------------------------------------------------------------
// Revocation by the tenant
// ---------------------------------------------------------------------------------------------

#[test]
fn a_revoked_agent_loses_its_tokens_and_owners_hear_of_it_once() {
    let (smtp, srv, api, s) = pro_setup("Revocation", &[]);
    let agent = register_agent(
        &srv,
        &s,
        &api.slug,
        agent_json(
            "Doomed Bot",
            &[CLIENT_CREDENTIALS, CIBA, TOKEN_EXCHANGE],
            &["openid", "orders:read"],
        ),
    );
    let email = "holder@example.com";
    let user = api.verified_user(&smtp, email, USER_PASSWORD);
    let user_id = user.claims()["sub"].as_str().expect("sub").to_owned();
    consent_by_ciba(&api, &agent, &user.access, email, "openid orders:read");
    let machine = access_token(&client_credentials(&api, &agent, Some("orders:read")));
    let on_behalf = access_token(&exchange(
        &api,
        &agent,
        &user.access,
        Some("openid orders:read"),
    ));
    let (rs_id, rs_secret) = confidential_client(&srv, &s, &api.slug);
    let rs = (rs_id.as_str(), rs_secret.as_str());

    // Live: introspection and userinfo answer.
    let live = introspect(&api, rs, &machine);
    let live = live.expect(200);
    assert_eq!(live["active"], true, "{live}");
    assert_eq!(live["client_id"], agent.client_id.as_str());
    assert_eq!(live["sub"], agent.client_id.as_str());
    assert_eq!(live["token_type"], "Bearer");
    assert_eq!(live["scope"], "orders:read");
    assert_eq!(live["jti"], jwt_part(&machine, 1)["jti"]);
    let live = introspect(&api, rs, &on_behalf);
    let live = live.expect(200);
    assert_eq!(live["active"], true, "{live}");
    assert_eq!(live["sub"], user_id.as_str());
    assert_eq!(live["act"]["sub"], agent.client_id.as_str());
    let info = userinfo(&api, &on_behalf);
    assert_eq!(info.expect(200)["sub"], user_id.as_str());

    // The owner revokes it.
    let path = agent_path(&api.slug, &agent.id);
    let (st, revoked) = srv.dash_json("DELETE", &path, &s, None);
    assert_eq!(st, 200, "{revoked}");
    assert_eq!(
        json_keys(&revoked),
        name_set(&["id", "name", "revoked_at", "agent_metadata_version"])
    );
    assert_eq!(revoked["id"], agent.id.as_str());
    assert_eq!(revoked["name"], "Doomed Bot");
    let revoked_at = revoked["revoked_at"]
        .as_str()
        .expect("revoked_at")
        .to_owned();
    assert!(revoked["agent_metadata_version"].is_u64(), "{revoked}");

    // Its tokens are dead everywhere.
    assert_eq!(
        introspect(&api, rs, &machine).expect(200),
        &json!({"active": false})
    );
    assert_eq!(
        introspect(&api, rs, &on_behalf).expect(200),
        &json!({"active": false})
    );
    let refused = userinfo(&api, &on_behalf);
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert_eq!(
        refused.header("www-authenticate").as_deref(),
        Some(REVOKED_CHALLENGE)
    );
    expect_oauth_error(
        &client_credentials(&api, &agent, Some("orders:read")),
        401,
        "invalid_client",
    );

    // The owner is told once, the audit log has it once, even when revoked twice.
    let told = eventually(Duration::from_secs(10), || {
        !mails_of_kind(&smtp, "agent_revoked", &api.owner).is_empty()
    });
    assert!(told, "no agent_revoked mail to {}", api.owner);
    let (st, again) = srv.dash_json("DELETE", &path, &s, None);
    assert_eq!(st, 200, "{again}");
    assert_eq!(again["revoked_at"], revoked_at.as_str());
    assert_eq!(again["id"], agent.id.as_str());
    // Once everything asked so far went out, still one mail.
    mail_caught_up(&smtp, &srv, &api);
    assert_eq!(mails_of_kind(&smtp, "agent_revoked", &api.owner).len(), 1);
    let events = audit_events(&srv, &s, &api.slug, "agent.revoked");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "agent.revoked");
    assert_eq!(events[0]["metadata"]["severity"], "HIGH", "{}", events[0]);

    // No more changes.
    srv.reauth(&s, PASSWORD);
    let (st, body) = srv.dash_json("PATCH", &path, &s, Some(&json!({"name": "Back"})));
    assert_eq!(
        (st, error_code(&body)),
        (409, "agent/already_revoked"),
        "{body}"
    );
    let (st, body) = srv.dash_json("POST", &format!("{path}/rotate-secret"), &s, None);
    assert_eq!(
        (st, error_code(&body)),
        (409, "agent/already_revoked"),
        "{body}"
    );
    // The agent's state is answered before anything about the request.
    let (st, body) = srv.dash_json("PATCH", &path, &s, Some(&json!({"name": ""})));
    assert_eq!(
        (st, error_code(&body)),
        (409, "agent/already_revoked"),
        "{body}"
    );

    // Listed only on request.
    let base = agents_path(&api.slug);
    let (st, list) = srv.dash_json("GET", &base, &s, None);
    assert_eq!(st, 200, "{list}");
    assert!(
        data(&list).iter().all(|a| a["id"] != agent.id.as_str()),
        "{list}"
    );
    let (st, list) = srv.dash_json("GET", &format!("{base}?include_revoked=true"), &s, None);
    assert_eq!(st, 200, "{list}");
    let listed = data(&list)
        .into_iter()
        .find(|a| a["id"] == agent.id.as_str())
        .unwrap_or_else(|| panic!("the revoked agent is not in {list}"));
    assert_eq!(listed["revoked_at"], revoked_at.as_str());
}

// ---------------------------------------------------------------------------------------------
// Revocation and restoration by the user
// ---------------------------------------------------------------------------------------------

#[test]
fn users_withdraw_and_restore_an_agent_but_not_past_the_tenant() {
    let (smtp, srv, api, s) = pro_setup("Withdrawal", &[]);
    let agent = register_agent(
        &srv,
        &s,
        &api.slug,
        agent_json(
            "Travel Agent",
            &[CIBA, TOKEN_EXCHANGE],
            &["openid", "orders:read"],
        ),
    );
    let email = "traveller@example.com";
    let user = api.verified_user(&smtp, email, USER_PASSWORD);
    consent_by_ciba(&api, &agent, &user.access, email, "openid orders:read");
    exchange(&api, &agent, &user.access, Some("orders:read")).expect(200);

    // The agent that acted for the user is listed.
    let my_agent = |bearer: &str| -> Value {
        let r = user_get(&api, bearer, "/v1/users/me/agents");
        data(r.expect(200))
            .into_iter()
            .find(|a| a["agent_client_id"] == agent.client_id.as_str())
            .unwrap_or_else(|| panic!("the agent is not in {}", r.body))
    };
    let mine = my_agent(&user.access);
    assert_eq!(mine["agent_name"], "Travel Agent");
    assert!(
        mine["action_count"].as_u64().is_some_and(|n| n >= 1),
        "{mine}"
    );
    assert!(mine["last_action_at"].is_string(), "{mine}");
    assert!(mine.get("revoked_at").is_none_or(Value::is_null), "{mine}");
    // The user's data export lists it too.
    let step_up = api.post_as(
        "/v1/auth/step-up/password",
        Some(&user.access),
        &json!({ "password": USER_PASSWORD }),
    );
    let step_up = step_up.expect(200)["step_up_token"]
        .as_str()
        .expect("a step-up token")
        .to_owned();
    let export = api.send_with(
        "GET",
        "/v1/users/me/export",
        Some(&user.access),
        None,
        &[(STEP_UP_HEADER, step_up.as_str())],
    );
    let exported = export.expect(200)["agents"].clone();
    assert_eq!(
        exported[0]["agent_client_id"],
        agent.client_id.as_str(),
        "{exported}"
    );
    assert_eq!(exported[0]["agent_name"], "Travel Agent", "{exported}");

    // A request waiting when the user withdraws.
    ciba_request(
        &api,
        &agent,
        email,
        "openid orders:read",
        "before withdrawal",
    );
    let waiting = pending_request(&api, &user.access, "before withdrawal");

    // Withdrawn (idempotent); unknown agents are not found.
    let me_path = format!("/v1/users/me/agents/{}", agent.client_id);
    let gone = user_delete(&api, &user.access, &me_path);
    let body = gone.expect(200).clone();
    assert_eq!(body["agent_client_id"], agent.client_id.as_str());
    assert_eq!(body["reason"], "gdpr_art_7_withdrawal");
    let revoked_at = body["revoked_at"].as_str().expect("revoked_at").to_owned();
    let again = user_delete(&api, &user.access, &me_path);
    assert_eq!(again.expect(200)["revoked_at"], revoked_at.as_str());
    let unknown = user_delete(&api, &user.access, "/v1/users/me/agents/agt_unknown");
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert_eq!(my_agent(&user.access)["revoked_at"], revoked_at.as_str());

    // Token exchange refuses; a new CIBA request is answered as for anyone, but reaches
    // nobody (not listed, not mailed); the one waiting cannot be approved.
    expect_oauth_error(
        &exchange(&api, &agent, &user.access, Some("orders:read")),
        400,
        "invalid_grant",
    );
    // The consent's request and the waiting one were mailed.
    let mailed = || mails_of_kind(&smtp, "agent_request", email).len();
    assert!(eventually(Duration::from_secs(10), || mailed() >= 2));
    let mails_before = mailed();
    ciba_request(
        &api,
        &agent,
        email,
        "openid orders:read",
        "after withdrawal",
    );
    assert!(
        pending_requests(&api, &user.access)
            .iter()
            .all(|r| r["binding_message"] != "after withdrawal"),
        "a request after the withdrawal is listed"
    );
    mail_caught_up(&smtp, &srv, &api);
    assert_eq!(mailed(), mails_before, "a request was mailed");
    decide(
        &api,
        &user.access,
        waiting["id"].as_str().expect("id"),
        "approve",
    )
    .expect_error(409, "agent/revoked_by_user");

    // Restored, once.
    let restore_path = format!("{me_path}/restore");
    let back = user_post(&api, &user.access, &restore_path);
    let body = back.expect(200).clone();
    assert_eq!(body["agent_client_id"], agent.client_id.as_str());
    assert_eq!(body["newly_restored"], true, "{body}");
    assert!(body["restored_at"].is_string(), "{body}");
    assert!(
        body.get("still_blocked_by").is_none_or(Value::is_null),
        "{body}"
    );
    let twice = user_post(&api, &user.access, &restore_path);
    assert_eq!(twice.expect(200)["newly_restored"], false, "{}", twice.body);

    // The tenant's revocation outranks the user's restoration.
    let (st, revoked) = srv.dash_json("DELETE", &agent_path(&api.slug, &agent.id), &s, None);
    assert_eq!(st, 200, "{revoked}");
    let blocked = user_post(&api, &user.access, &restore_path);
    assert_eq!(
        blocked.expect(200)["still_blocked_by"],
        "tenant",
        "{}",
        blocked.body
    );
    assert!(
        my_agent(&user.access)["agent_revoked_at"].is_string(),
        "the tenant's revocation is shown"
    );
}

// ---------------------------------------------------------------------------------------------
// Activity
// ---------------------------------------------------------------------------------------------

#[test]
fn the_activity_feed_lists_each_grant_newest_first() {
    let (_smtp, srv, api, s) = pro_setup("Activity", &[]);
    let agent = register_agent(
        &srv,
        &s,
        &api.slug,
        agent_json("Busy Bot", &[CLIENT_CREDENTIALS], &["orders:read"]),
    );
    let jtis: Vec<String> = (0..3)
        .map(|_| {
            let at = access_token(&client_credentials(&api, &agent, Some("orders:read")));
            jwt_part(&at, 1)["jti"].as_str().expect("a jti").to_owned()
        })
        .collect();
    expect_oauth_error(
        &client_credentials(&api, &agent, Some("orders:write")),
        400,
        "invalid_scope",
    );

    let issued_query = "?action_type=token.issued";
    let mut issued = Vec::new();
    let complete = eventually(Duration::from_secs(5), || {
        let (st, feed) = activity(&srv, &s, &api.slug, &agent.id, issued_query);
        issued = data(&feed);
        st == 200 && issued.len() >= 3
    });
    assert!(complete, "three token.issued entries: {issued:?}");
    assert_eq!(issued.len(), 3, "{issued:?}");
    let newest_first: Vec<String> = jtis.iter().rev().cloned().collect();
    let listed: Vec<String> = issued
        .iter()
        .map(|e| e["jti"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(listed, newest_first);
    for e in &issued {
        assert_eq!(e["action"], "token.issued", "{e}");
        assert_eq!(e["method_or_event"], CLIENT_CREDENTIALS, "{e}");
        assert_eq!(e["ip_hash_prefix"].as_str().map(str::len), Some(12), "{e}");
        assert!(e["id"].is_string() && e["created_at"].is_string(), "{e}");
        assert!(e.get("actor_user_id").is_none_or(Value::is_null), "{e}");
    }

    // The refusal is there too.
    let (st, refused) = activity(&srv, &s, &api.slug, &agent.id, "?action_type=token.refused");
    assert_eq!(st, 200, "{refused}");
    let refused = data(&refused);
    assert!(!refused.is_empty(), "no token.refused entry");
    assert!(refused
        .iter()
        .all(|e| e["action"] == "token.refused" && e["method_or_event"] == CLIENT_CREDENTIALS));

    // Pages of one.
    let (st, all) = activity(&srv, &s, &api.slug, &agent.id, "");
    assert_eq!(st, 200, "{all}");
    let all = data(&all);
    assert!(all.len() >= 4, "{all:?}");
    let (st, first) = activity(&srv, &s, &api.slug, &agent.id, "?limit=1");
    assert_eq!(st, 200, "{first}");
    assert_eq!(data(&first), vec![all[0].clone()]);
    assert_eq!(first["pagination"]["has_more"], true);
    let cursor = first["pagination"]["next_cursor"]
        .as_str()
        .expect("a next_cursor");
    let (st, second) = activity(
        &srv,
        &s,
        &api.slug,
        &agent.id,
        &format!("?limit=1&cursor={}", encode(cursor)),
    );
    assert_eq!(st, 200, "{second}");
    assert_eq!(data(&second), vec![all[1].clone()]);

    let (st, body) = activity(&srv, &s, &api.slug, &agent.id, "?limit=201");
    assert_eq!(
        (st, error_code(&body)),
        (400, "validation/invalid_request"),
        "{body}"
    );
    let (st, body) = activity(&srv, &s, &api.slug, &agent.id, "?limit=200");
    assert_eq!(st, 200, "{body}");
}

// ---------------------------------------------------------------------------------------------
// Rate limits
// ---------------------------------------------------------------------------------------------

/// Waits for the next UTC minute when fewer than `margin` seconds of this one are left, so a
/// burst of requests falls in one minute.
fn early_in_a_minute(margin: f64) {
    let into = unix_now() % 60.0;
    if into > 60.0 - margin {
        std::thread::sleep(Duration::from_secs_f64(60.0 - into + 0.2));
    }
}

#[track_caller]
fn expect_rate_limited(a: &AuthAnswer) {
    assert_eq!(a.status, 429, "{}", a.body);
    assert_eq!(a.body["error"], "rate_limited", "{}", a.body);
    let retry = a
        .header("retry-after")
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no Retry-After seconds: {:?}", a.headers));
    assert!((1..=3600).contains(&retry), "Retry-After {retry}");
}

#[test]
fn agent_limits_are_clamped_to_the_platform_ceilings() {
    let (_smtp, srv, api, s) = pro_setup(
        "Limits",
        &[
            ("TESSERA__AGENTS__MAX_CLIENT_CREDENTIALS_PER_MIN", "3"),
            ("TESSERA__AGENTS__MAX_TOKEN_EXCHANGE_PER_MIN", "7"),
            ("TESSERA__AGENTS__MAX_CONCURRENT_TOKENS", "50"),
        ],
    );
    let mut body = agent_json("Greedy", &[CLIENT_CREDENTIALS], &["orders:read"]);
    body["agent_settings"] = json!({"rate_limits": {"client_credentials_per_min": 100}});
    let greedy = register_agent(&srv, &s, &api.slug, body);
    let limits = &greedy.body["effective_limits"];
    assert_eq!(limits["client_credentials_per_min"], 3, "clamped: {limits}");
    assert_eq!(
        limits["token_exchange_per_min"], 7,
        "the ceiling when unset: {limits}"
    );
    assert_eq!(
        greedy.body["agent_settings"]["rate_limits"]["client_credentials_per_min"], 100,
        "the setting is kept as set"
    );
    let mut body = agent_json("Modest", &[CLIENT_CREDENTIALS], &["orders:read"]);
    body["agent_settings"] = json!({
        "rate_limits": {"token_exchange_per_min": 5},
        "max_concurrent_tokens": 2,
    });
    let modest = register_agent(&srv, &s, &api.slug, body);
    let limits = &modest.body["effective_limits"];
    assert_eq!(
        limits["token_exchange_per_min"], 5,
        "under the ceiling: {limits}"
    );
    assert_eq!(limits["max_concurrent_tokens"], 2, "{limits}");

    // Three a minute, then 429s; one audit event for the minute.
    early_in_a_minute(8.0);
    for n in 1..=3 {
        let r = client_credentials(&api, &greedy, None);
        assert_eq!(r.status, 200, "grant {n}: {}", r.body);
    }
    expect_rate_limited(&client_credentials(&api, &greedy, None));
    expect_rate_limited(&client_credentials(&api, &greedy, None));
    let of_scope = |scope: &str| -> Vec<Value> {
        audit_events(&srv, &s, &api.slug, "agent.rate_limited")
            .into_iter()
            .filter(|e| e["metadata"]["scope"] == scope)
            .collect()
    };
    let recorded = eventually(Duration::from_secs(5), || {
        !of_scope("client_credentials_per_min").is_empty()
    });
    assert!(recorded, "no agent.rate_limited event");
    let events = of_scope("client_credentials_per_min");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["metadata"]["limit"], 3, "{}", events[0]);

    // Two live tokens at most.
    client_credentials(&api, &modest, None).expect(200);
    client_credentials(&api, &modest, None).expect(200);
    expect_rate_limited(&client_credentials(&api, &modest, None));
    let recorded = eventually(Duration::from_secs(5), || {
        !of_scope("max_concurrent_tokens").is_empty()
    });
    assert!(
        recorded,
        "no agent.rate_limited event for max_concurrent_tokens"
    );
    assert_eq!(of_scope("max_concurrent_tokens")[0]["metadata"]["limit"], 2);
}

// ---------------------------------------------------------------------------------------------
// Discovery and dynamic registration
// ---------------------------------------------------------------------------------------------

#[test]
fn discovery_lists_agent_grants_and_dynamic_registration_is_opt_in() {
    let (_smtp, srv, api, s) = pro_setup("Discovery", &[]);
    let iss = api.issuer();
    let documents = || -> (Value, Value) {
        let tenant_path = api.send_as(
            None,
            "GET",
            &format!(
                "/v1/tenants/{}/.well-known/oauth-authorization-server",
                api.slug
            ),
            None,
            None,
            None,
        );
        let rfc8414 = api.send_as(
            None,
            "GET",
            &format!(
                "/.well-known/oauth-authorization-server/v1/tenants/{}",
                api.slug
            ),
            None,
            None,
            None,
        );
        (tenant_path.expect(200).clone(), rfc8414.expect(200).clone())
    };
    let (doc, other) = documents();
    assert_eq!(doc, other, "both paths answer the same metadata");
    assert_eq!(doc["issuer"], iss.as_str());
    assert_eq!(doc["token_endpoint"], format!("{iss}/oauth/token"));
    assert_eq!(
        doc["device_authorization_endpoint"],
        format!("{iss}/oauth/device_authorization")
    );
    assert_eq!(
        doc["backchannel_authentication_endpoint"],
        format!("{iss}/oauth/bc-authorize")
    );
    let grants: Vec<&str> = doc["grant_types_supported"]
        .as_array()
        .expect("grant_types_supported")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for g in [CLIENT_CREDENTIALS, TOKEN_EXCHANGE, CIBA, DEVICE_CODE] {
        assert!(grants.contains(&g), "{g} missing from {grants:?}");
    }
    assert!(doc.get("registration_endpoint").is_none(), "{doc}");

    let register_path = format!("/v1/tenants/{}/oauth/register", api.slug);
    let register = |body: &Value| {
        api.send_as(
            None,
            "POST",
            &register_path,
            None,
            Some(body),
            Some(&fresh_client_ip()),
        )
    };
    let public = json!({
        "client_name": "CLI Tool",
        "redirect_uris": ["https://tool.example/callback"],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code"],
        "response_types": ["code"],
    });
    register(&public).expect_error(404, "resource/not_found");

    // Turned on by the owner.
    let settings = format!("/v1/auth/dashboard/tenants/{}/settings/agents", api.slug);
    let (st, current) = srv.dash_json("GET", &settings, &s, None);
    assert_eq!(st, 200, "{current}");
    assert_eq!(current["dynamic_client_registration"], false);
    let (st, on) = srv.dash_json(
        "PATCH",
        &settings,
        &s,
        Some(&json!({"dynamic_client_registration": true})),
    );
    assert_eq!(st, 200, "{on}");
    assert_eq!(on["dynamic_client_registration"], true);
    let (doc, other) = documents();
    assert_eq!(
        doc["registration_endpoint"],
        format!("{iss}/oauth/register")
    );
    assert_eq!(other["registration_endpoint"], doc["registration_endpoint"]);

    let made = register(&public);
    let c = made.expect(201).clone();
    assert!(
        c["client_id"].as_str().is_some_and(|id| !id.is_empty()),
        "{c}"
    );
    assert!(
        c["client_id_issued_at"].is_i64() || c["client_id_issued_at"].is_u64(),
        "{c}"
    );
    assert_eq!(c["client_name"], "CLI Tool");
    assert_eq!(c["redirect_uris"], json!(["https://tool.example/callback"]));
    assert_eq!(c["token_endpoint_auth_method"], "none");
    assert!(
        c["grant_types"].is_array() && c["response_types"].is_array(),
        "{c}"
    );
    assert!(
        c.get("client_secret").is_none(),
        "a public client has no secret: {c}"
    );

    let mut confidential = public.clone();
    confidential["token_endpoint_auth_method"] = json!("client_secret_basic");
    let refused = register(&confidential);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        refused.body["error"], "invalid_client_metadata",
        "{}",
        refused.body
    );
    let mut bad_uri = public.clone();
    bad_uri["redirect_uris"] = json!(["javascript:alert(1)"]);
    let refused = register(&bad_uri);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        refused.body["error"], "invalid_redirect_uri",
        "{}",
        refused.body
    );

    // Off again: gone from discovery, and 404.
    let (st, off) = srv.dash_json(
        "PATCH",
        &settings,
        &s,
        Some(&json!({"dynamic_client_registration": false})),
    );
    assert_eq!(st, 200, "{off}");
    let (doc, _) = documents();
    assert!(doc.get("registration_endpoint").is_none(), "{doc}");
    register(&public).expect_error(404, "resource/not_found");
}

// ---------------------------------------------------------------------------------------------
// Device authorization
// ---------------------------------------------------------------------------------------------

#[test]
fn device_authorization_answers_a_user_code_and_polls_pending() {
    let (_smtp, srv, api, s) = pro_setup("Devices", &[]);
    let agent = register_agent(
        &srv,
        &s,
        &api.slug,
        agent_json("Smart TV", &[DEVICE_CODE], &["openid", "orders:read"]),
    );
    let r = oauth_post(
        &api,
        "device_authorization",
        Some(agent.basic()),
        &[("scope", "openid orders:read")],
    );
    let d = r.expect(200).clone();
    let user_code = d["user_code"].as_str().expect("user_code");
    let letters = "BCDFGHJKLMNPQRSTVWXZ";
    assert_eq!(user_code.len(), 9, "{user_code}");
    assert!(
        user_code.char_indices().all(|(i, c)| if i == 4 {
            c == '-'
        } else {
            letters.contains(c)
        }),
        "{user_code}"
    );
    let uri = format!("{}/oauth/{}/device", api.base, api.slug);
    assert_eq!(d["verification_uri"], uri.as_str());
    let complete = d["verification_uri_complete"]
        .as_str()
        .expect("verification_uri_complete");
    assert!(
        complete.starts_with(&format!("{uri}?"))
            && complete.contains(&format!("user_code={user_code}")),
        "{complete}"
    );
    assert_eq!(d["expires_in"], 600);
    assert_eq!(d["interval"], 1);
    let device_code = d["device_code"].as_str().expect("device_code");

    wait_interval(1);
    let pending = token(
        &api,
        &agent,
        &[("grant_type", DEVICE_CODE), ("device_code", device_code)],
    );
    expect_oauth_error(&pending, 400, "authorization_pending");
}

// ---------------------------------------------------------------------------------------------
// The hosted pages: the device page and the mailed CIBA link
// ---------------------------------------------------------------------------------------------

/// A user connects a device on the hosted device page, as a browser without script speaks to
/// it: the complete verification URI, the sign-in form (password), the agent and what it
/// asks, approve; the agent's poll then gets a token on the user's behalf. A wrong code, a
/// post without the CSRF value and a denial behave.
#[test]
fn a_user_approves_a_device_on_the_hosted_device_page() {
    use crate::oauth_browser::Browser;
    let (smtp, srv, api, s) = pro_setup("Device Page", &[]);
    let agent = register_agent(
        &srv,
        &s,
        &api.slug,
        agent_json("Living Room TV", &[DEVICE_CODE], &["openid", "email"]),
    );
    let user = api.verified_user(&smtp, "viewer@example.com", USER_PASSWORD);
    let user_id = user.claims()["sub"].as_str().expect("sub").to_owned();

    // The device asks through the OAuth library (RFC 8628).
    let http = http();
    let iss = api.issuer();
    let jwks_url = JsonWebKeySetUrl::new(format!("{iss}/.well-known/jwks.json")).expect("JWKS URL");
    let jwks: JsonWebKeySet<CoreJsonWebKey> =
        JsonWebKeySet::fetch(&jwks_url, &http).expect("the library reads the tenant JWKS");
    let device = library_client(&api, &agent.client_id, &agent.secret, jwks)
        .set_device_authorization_url(
            DeviceAuthorizationUrl::new(format!("{iss}/oauth/device_authorization"))
                .expect("device authorization URL"),
        );
    let details: CoreDeviceAuthorizationResponse = device
        .exchange_device_code()
        .request(&http)
        .expect("the library starts the device flow");
    let device_code = details.device_code().secret().to_owned();
    let user_code = details.user_code().secret().to_owned();
    let complete = details
        .verification_uri_complete()
        .expect("verification_uri_complete")
        .secret()
        .to_owned();
    let page_url = details.verification_uri().to_string();
    assert_eq!(details.interval(), Duration::from_secs(1));

    let mut b = Browser::new();
    // Not signed in: the sign-in form, which keeps the code.
    let page = b.get(&complete);
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Connect a device"), "{}", page.body);
    assert_eq!(page.hidden("user_code", 0), user_code);
    let csrf = page.hidden("csrf", 0);
    // A post without the page's CSRF value is refused before anything is used.
    let forged = b.post(
        &page_url,
        &[
            ("step", "password"),
            ("user_code", &user_code),
            ("email", "viewer@example.com"),
            ("password", USER_PASSWORD),
        ],
    );
    assert_eq!(forged.status, 403, "{}", forged.body);
    let wrong = b.post(
        &page_url,
        &[
            ("csrf", &csrf),
            ("step", "password"),
            ("user_code", &user_code),
            ("email", "viewer@example.com"),
            ("password", "not the password at all"),
        ],
    );
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    assert!(b.signin_cookie().is_none());
    let signed = b.post(
        &page_url,
        &[
            ("csrf", &csrf),
            ("step", "password"),
            ("user_code", &user_code),
            ("email", "viewer@example.com"),
            ("password", USER_PASSWORD),
        ],
    );
    let back = signed.redirect(303);
    assert!(back.ends_with(&format!("?user_code={user_code}")), "{back}");
    assert!(b.signin_cookie().is_some(), "the sign-in cookie is set");

    // A code nobody was given: the code form again, with its error.
    let unknown = b.get(&format!("{page_url}?user_code=BBBB-BBBB"));
    assert_eq!(unknown.status, 400, "{}", unknown.body);
    assert!(
        unknown.body.contains("not right or has expired"),
        "{}",
        unknown.body
    );

    // The code the device shows: the agent, what it asks, the buttons.
    let confirm = b.get(&format!("{}{back}", srv.url("")));
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    assert!(confirm.body.contains("Living Room TV"), "{}", confirm.body);
    assert!(confirm.body.contains(&user_code), "{}", confirm.body);
    let csrf = confirm.hidden("csrf", 0);
    // Polled before the decision: pending.
    wait_interval(1);
    let pending = token(
        &api,
        &agent,
        &[("grant_type", DEVICE_CODE), ("device_code", &device_code)],
    );
    expect_oauth_error(&pending, 400, "authorization_pending");
    let done = b.post(
        &page_url,
        &[
            ("csrf", &csrf),
            ("step", "decide"),
            ("user_code", &user_code),
            ("decision", "approve"),
        ],
    );
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(done.body.contains("Approved"), "{}", done.body);
    // The code is used: a second decision finds nothing.
    let again = b.post(
        &page_url,
        &[
            ("csrf", &csrf),
            ("step", "decide"),
            ("user_code", &user_code),
            ("decision", "deny"),
        ],
    );
    // The code form again, saying the code is not right or has expired.
    assert_eq!(again.status, 400, "{}", again.body);
    assert!(
        again.body.contains("not right or has expired"),
        "{}",
        again.body
    );
    assert!(!again.body.contains("Approved"), "{}", again.body);

    // The library polls (respecting the interval) and gets the token.
    let issued = device
        .exchange_device_access_token(&details)
        .request(&http, std::thread::sleep, Some(Duration::from_secs(20)))
        .expect("the library's poll gets the token");
    let claims = jwt_part(issued.access_token().secret(), 1);
    assert_eq!(claims["sub"], user_id.as_str());
    assert_eq!(claims["act"]["sub"], agent.client_id.as_str());
    assert!(issued.expires_in().expect("expires_in") <= Duration::from_secs(900));
    // Once only.
    wait_interval(1);
    let replay = token(
        &api,
        &agent,
        &[("grant_type", DEVICE_CODE), ("device_code", &device_code)],
    );
    expect_oauth_error(&replay, 400, "invalid_grant");

    // A denial: the next poll is access_denied.
    let started = oauth_post(&api, "device_authorization", Some(agent.basic()), &[]);
    let body = started.expect(200).clone();
    let device_code = body["device_code"]
        .as_str()
        .expect("device_code")
        .to_owned();
    let user_code = body["user_code"].as_str().expect("user_code").to_owned();
    let confirm = b.get(&format!(
        "{page_url}?user_code={}",
        user_code.to_lowercase()
    ));
    assert_eq!(confirm.status, 200, "typed in lower case: {}", confirm.body);
    let csrf = confirm.hidden("csrf", 0);
    let denied = b.post(
        &page_url,
        &[
            ("csrf", &csrf),
            ("step", "decide"),
            ("user_code", &user_code),
            ("decision", "deny"),
        ],
    );
    assert!(denied.body.contains("Denied"), "{}", denied.body);
    wait_interval(1);
    let refused = token(
        &api,
        &agent,
        &[("grant_type", DEVICE_CODE), ("device_code", &device_code)],
    );
    expect_oauth_error(&refused, 400, "access_denied");
}

/// The CIBA request's mailed link opens a page that shows the agent and the binding message
/// and decides nothing on GET; its approve button (with the page's CSRF value) lets the
/// agent's next poll get the token.
#[test]
fn the_mailed_link_of_a_ciba_request_approves_it() {
    use crate::oauth_browser::Browser;
    let (smtp, srv, api, s) = pro_setup("Mailed Approval", &[]);
    let agent = register_agent(
        &srv,
        &s,
        &api.slug,
        agent_json("Travel Planner", &[CIBA], &["openid", "email"]),
    );
    api.verified_user(&smtp, "traveller@example.com", USER_PASSWORD);
    let auth_req_id = ciba_request(
        &api,
        &agent,
        "traveller@example.com",
        "openid email",
        "Trip 7C2",
    );
    let token_of_link = smtp.wait_for_link("traveller@example.com", "/agent-request", 1);
    let link = srv.url(&format!("/agent-request?token={token_of_link}"));
    let mut b = Browser::new();
    let page = b.get(&link);
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Travel Planner"), "{}", page.body);
    assert!(page.body.contains("Trip 7C2"), "{}", page.body);
    // Opening the link decided nothing.
    wait_interval(1);
    expect_oauth_error(
        &poll_ciba(&api, &agent, &auth_req_id),
        400,
        "authorization_pending",
    );
    let forged = b.post(&link, &[("decision", "approve")]);
    assert_eq!(forged.status, 403, "{}", forged.body);
    let csrf = page.hidden("csrf", 0);
    let done = b.post(&link, &[("csrf", &csrf), ("decision", "approve")]);
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(done.body.contains("Approved"), "{}", done.body);
    // The link is spent: the page says so, and offers no decision.
    let spent = b.get(&link);
    assert_eq!(spent.status, 410, "{}", spent.body);
    assert!(spent.body.contains("no longer works"), "{}", spent.body);
    assert!(!spent.body.contains("decision"), "{}", spent.body);
    wait_interval(1);
    let issued = poll_ciba(&api, &agent, &auth_req_id);
    let claims = jwt_part(&access_token(&issued), 1);
    assert_eq!(claims["act"]["sub"], agent.client_id.as_str());
    assert_eq!(claims["scope"], "openid email");
}

/// Dynamic registration is limited per client address (`agents.registrations_per_ip_hourly`);
/// another address still registers; the client is unverified (never first party or
/// attested) in the owners' registry.
#[test]
fn dynamic_registrations_are_limited_per_client_address() {
    let (_smtp, srv, api, s) = pro_setup(
        "Registration Limit",
        &[("TESSERA__AGENTS__REGISTRATIONS_PER_IP_HOURLY", "2")],
    );
    let settings = format!("/v1/auth/dashboard/tenants/{}/settings/agents", api.slug);
    let (st, on) = srv.dash_json(
        "PATCH",
        &settings,
        &s,
        Some(&json!({"dynamic_client_registration": true})),
    );
    assert_eq!(st, 200, "{on}");
    let path = format!("/v1/tenants/{}/oauth/register", api.slug);
    let body = json!({"client_name": "MCP Client", "redirect_uris": ["http://127.0.0.1:7777/cb"]});
    let ip = fresh_client_ip();
    let register = |from: &str| api.send_as(None, "POST", &path, None, Some(&body), Some(from));
    let first = register(&ip);
    let id = first.expect(201)["client_id"]
        .as_str()
        .expect("client_id")
        .to_owned();
    register(&ip).expect(201);
    let third = register(&ip);
    assert_eq!(third.status, 429, "{}", third.body);
    assert!(third.header("retry-after").is_some());
    register(&fresh_client_ip()).expect(201);
    let (st, c) = srv.dash_json(
        "GET",
        &format!("/v1/auth/dashboard/tenants/{}/oauth-clients/{id}", api.slug),
        &s,
        None,
    );
    assert_eq!(st, 200, "{c}");
    assert_eq!(c["verification"], "unverified");
    assert_eq!(c["client_type"], "public");
}

/// Only owners see what agents did for users: a viewer's feed leaves out the user's
/// approval. An agent introspects its own tokens and no other's; a public client introspects
/// nothing.
#[test]
fn owners_alone_see_users_actions_and_agents_introspect_only_their_own_tokens() {
    let (smtp, srv, api, s) = pro_setup("Feed Privacy", &[]);
    let agent = register_agent(
        &srv,
        &s,
        &api.slug,
        agent_json("Mail Sorter", &[CIBA, CLIENT_CREDENTIALS], &["openid"]),
    );
    let other = register_agent(
        &srv,
        &s,
        &api.slug,
        agent_json("Other Bot", &[CLIENT_CREDENTIALS], &["openid"]),
    );
    let user = api.verified_user(&smtp, "sorted@example.com", USER_PASSWORD);
    consent_by_ciba(&api, &agent, &user.access, "sorted@example.com", "openid");

    srv.add_viewer(&smtp, &s, &api.slug);
    let viewer = srv.login("viewer@example.com", PASSWORD);
    let query = "?action_type=request.approved";
    let (st, owners) = activity(&srv, &s, &api.slug, &agent.id, query);
    assert_eq!(st, 200, "{owners}");
    let approved = data(&owners);
    assert_eq!(approved.len(), 1, "{owners}");
    assert_eq!(approved[0]["actor_user_email"], "sorted@example.com");
    assert_eq!(approved[0]["actor_user_id"], user.claims()["sub"]);
    let (st, viewers) = activity(&srv, &viewer, &api.slug, &agent.id, query);
    assert_eq!(st, 200, "{viewers}");
    assert_eq!(data(&viewers), Vec::<Value>::new(), "{viewers}");
    // The agent's own requests (no user) are the viewer's to see.
    let (st, viewers) = activity(&srv, &viewer, &api.slug, &agent.id, "");
    assert_eq!(st, 200, "{viewers}");
    assert!(
        data(&viewers)
            .iter()
            .all(|e| e.get("actor_user_id").is_none()),
        "{viewers}"
    );

    let own = access_token(&client_credentials(&api, &agent, None));
    let r = introspect(&api, agent.basic(), &own);
    assert_eq!(r.expect(200)["active"], true, "{}", r.body);
    assert_eq!(r.body["client_id"], agent.client_id.as_str());
    let r = introspect(&api, other.basic(), &own);
    assert_eq!(r.expect(200), &json!({"active": false}));
    // A public client is no resource server.
    let (st, spa) = srv.dash_json(
        "POST",
        &format!("/v1/auth/dashboard/tenants/{}/oauth-clients", api.slug),
        &s,
        Some(&json!({"name": "SPA", "client_type": "public",
                     "redirect_uris": ["https://spa.example/cb"]})),
    );
    assert_eq!(st, 201, "{spa}");
    let spa_id = spa["client_id"].as_str().expect("client_id");
    let r = oauth_post(
        &api,
        "introspect",
        None,
        &[("token", &own), ("client_id", spa_id)],
    );
    expect_oauth_error(&r, 400, "unauthorized_client");
    // An agent's own token, revoked by the agent (RFC 7009), is dead at once.
    let r = oauth_post(&api, "revoke", Some(agent.basic()), &[("token", &own)]);
    assert_eq!(r.status, 200, "{}", r.body);
    let r = introspect(&api, agent.basic(), &own);
    assert_eq!(r.expect(200), &json!({"active": false}));
}

// ---------------------------------------------------------------------------------------------
// Consent per resource (RFC 8707)
// ---------------------------------------------------------------------------------------------

pub(crate) const CALENDAR: &str = "https://calendar.example";
const MAILBOX: &str = "https://mail.example";

/// Registers the resource `uri` for the tenant with the admin CLI and has the operator approve
/// its catalog scope `scope`.
#[track_caller]
pub(crate) fn catalog_resource(
    srv: &TestServer,
    s: &Session,
    slug: &str,
    name: &str,
    uri: &str,
    scope: &str,
) {
    let out = srv.admin(
        &[
            "resource", "register", "--tenant", slug, "--name", name, "--uri", uri,
        ],
        "",
    );
    assert!(out.status.success(), "{}", out.stderr);
    let resource_id = out.json()["id"].as_str().expect("resource id").to_owned();
    let (st, entry) = srv.dash_json(
        "POST",
        &format!("/v1/resources/{resource_id}/scopes"),
        s,
        Some(&json!({
            "scope_name": scope,
            "sensitivity": "normal",
            "display_metadata": {"kind": "locale_text", "locale_text": {
                "en": "Read", "pl": "Odczyt", "de": "Lesen", "fr": "Lire", "es": "Leer"}},
        })),
    );
    assert_eq!(st, 201, "{entry}");
    let entry_id = entry["id"].as_str().expect("scope id");
    let out = srv.admin(&["scope", "approve", &resource_id, entry_id], "");
    assert!(out.status.success(), "{}", out.stderr);
}

/// A tenant with two resources whose catalogs each approve `read`, and an agent registered
/// for CIBA, the device code and token exchange with `openid` and `read`.
fn two_resources(tenant: &str) -> (SmtpStub, TestServer, UserApi, Session, Agent) {
    let (smtp, srv, api, s) = pro_setup(tenant, &[]);
    catalog_resource(&srv, &s, &api.slug, "Calendar", CALENDAR, "read");
    catalog_resource(&srv, &s, &api.slug, "Mail", MAILBOX, "read");
    let agent = register_agent(
        &srv,
        &s,
        &api.slug,
        agent_json(
            "Planner",
            &[CIBA, DEVICE_CODE, TOKEN_EXCHANGE],
            &["openid", "read"],
        ),
    );
    (smtp, srv, api, s, agent)
}

/// Starts a CIBA request for `resource`; asserts 200 and answers its `auth_req_id`.
#[track_caller]
pub(crate) fn ciba_for(
    api: &UserApi,
    agent: &Agent,
    login_hint: &str,
    scope: &str,
    resource: &str,
    binding: &str,
) -> String {
    let r = oauth_post(
        api,
        "bc-authorize",
        Some(agent.basic()),
        &[
            ("login_hint", login_hint),
            ("scope", scope),
            ("resource", resource),
            ("binding_message", binding),
        ],
    );
    r.expect(200)["auth_req_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no auth_req_id in {}", r.body))
        .to_owned()
}

/// Token exchange of the user's `subject` token by `agent` for `resource` (if any).
pub(crate) fn exchange_for(
    api: &UserApi,
    agent: &Agent,
    subject: &str,
    scope: Option<&str>,
    resource: Option<&str>,
) -> AuthAnswer {
    let mut form = vec![
        ("grant_type", TOKEN_EXCHANGE),
        ("subject_token", subject),
        ("subject_token_type", ACCESS_TOKEN_TYPE),
    ];
    if let Some(s) = scope {
        form.push(("scope", s));
    }
    if let Some(r) = resource {
        form.push(("resource", r));
    }
    token(api, agent, &form)
}

/// A user approves an agent's CIBA request for `read` at the calendar resource: the consent is
/// kept for the calendar alone. Token exchange then gets a calendar token, and refuses the
/// mail resource (which has a `read` scope of its own) and a token naming no resource with
/// `invalid_target`. The user's consents list the calendar.
#[test]
fn a_consent_to_an_agent_holds_only_for_the_resource_it_was_asked_for() {
    let (smtp, srv, api, s, agent) = two_resources("Resource Bound");
    let email = "bound@example.com";
    let user = api.verified_user(&smtp, email, USER_PASSWORD);
    let user_id = user.claims()["sub"].as_str().expect("sub").to_owned();

    let auth_req_id = ciba_for(
        &api,
        &agent,
        email,
        "openid read",
        CALENDAR,
        "calendar sync",
    );
    let request = pending_request(&api, &user.access, "calendar sync");
    let id = request["id"].as_str().expect("a request id");
    let r = decide(&api, &user.access, id, "approve");
    assert_eq!(r.expect(200)["status"], "approved", "{}", r.body);

    // The approval's token is the calendar's.
    wait_interval(1);
    let polled = poll_ciba(&api, &agent, &auth_req_id);
    let (_, claims) = verify_agent_token(&api, &access_token(&polled), Some(CALENDAR));
    assert_eq!(scope_set(&claims["scope"]), strings(&["openid", "read"]));

    // The consent names its resource.
    let list = user_get(&api, &user.access, "/v1/users/me/consents");
    let consents = data(list.expect(200));
    let consent = consents
        .iter()
        .find(|c| c["client_id"] == agent.client_id.as_str())
        .unwrap_or_else(|| panic!("no consent to the agent in {}", list.body));
    assert_eq!(consent["resources"], json!([CALENDAR]), "{consent}");
    assert_eq!(consent["scopes"], json!(["openid", "read"]), "{consent}");

    // The other resource's `read` was never consented to.
    expect_oauth_error(
        &exchange_for(&api, &agent, &user.access, Some("read"), Some(MAILBOX)),
        400,
        "invalid_target",
    );
    expect_oauth_error(
        &exchange_for(&api, &agent, &user.access, None, Some(MAILBOX)),
        400,
        "invalid_target",
    );
    // Nor anything for no resource.
    expect_oauth_error(
        &exchange_for(&api, &agent, &user.access, Some("read"), None),
        400,
        "invalid_target",
    );
    // The calendar's: granted, for the calendar.
    let swapped = exchange_for(&api, &agent, &user.access, Some("read"), Some(CALENDAR));
    let (_, claims) = verify_agent_token(&api, &access_token(&swapped), Some(CALENDAR));
    assert_eq!(claims["scope"], "read");
    assert_eq!(claims["sub"], user_id.as_str());
    assert_eq!(claims["act"]["sub"], agent.client_id.as_str());
    // A scope the agent holds that the user never approved there is still `invalid_scope`.
    let narrow = register_agent(
        &srv,
        &s,
        &api.slug,
        agent_json("Narrow", &[CIBA, TOKEN_EXCHANGE], &["openid", "read"]),
    );
    let _ = ciba_for(&api, &narrow, email, "openid", CALENDAR, "narrow");
    let narrow_req = pending_request(&api, &user.access, "narrow");
    let r = decide(
        &api,
        &user.access,
        narrow_req["id"].as_str().expect("id"),
        "approve",
    );
    r.expect(200);
    expect_oauth_error(
        &exchange_for(&api, &narrow, &user.access, Some("read"), Some(CALENDAR)),
        400,
        "invalid_scope",
    );
}

/// Where a user decides, the resource a request is for is shown: the requests list, the
/// mailed CIBA link's page and the device page.
#[test]
fn the_requests_list_and_both_pages_show_the_resource_a_request_is_for() {
    use crate::oauth_browser::Browser;
    let (smtp, _srv, api, _s, agent) = two_resources("Resource Shown");
    let email = "shown@example.com";
    let user = api.verified_user(&smtp, email, USER_PASSWORD);

    // The mailed link's page.
    ciba_for(
        &api,
        &agent,
        email,
        "openid read",
        CALENDAR,
        "with a resource",
    );
    let link_token = smtp.wait_for_link(email, "/agent-request", 1);
    let page = Browser::new().get(&api.url(&format!("/agent-request?token={link_token}")));
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("with a resource"), "{}", page.body);
    assert!(
        page.body
            .contains(&format!("These permissions are for {CALENDAR} only.")),
        "{}",
        page.body
    );

    // The list: the resource, and `null` for a request naming none.
    ciba_request(&api, &agent, email, "openid", "without one");
    let with = pending_request(&api, &user.access, "with a resource");
    assert_eq!(with["resource"], CALENDAR, "{with}");
    let without = pending_request(&api, &user.access, "without one");
    assert!(without["resource"].is_null(), "{without}");

    // The device page, signed in.
    let started = oauth_post(
        &api,
        "device_authorization",
        Some(agent.basic()),
        &[("scope", "openid read"), ("resource", MAILBOX)],
    );
    let body = started.expect(200).clone();
    let complete = body["verification_uri_complete"]
        .as_str()
        .expect("verification_uri_complete")
        .to_owned();
    let page_url = body["verification_uri"]
        .as_str()
        .expect("verification_uri")
        .to_owned();
    let user_code = body["user_code"].as_str().expect("user_code").to_owned();
    let mut b = Browser::new();
    let form = b.get(&complete);
    assert_eq!(form.status, 200, "{}", form.body);
    let csrf = form.hidden("csrf", 0);
    let signed = b.post(
        &page_url,
        &[
            ("csrf", &csrf),
            ("step", "password"),
            ("user_code", &user_code),
            ("email", email),
            ("password", USER_PASSWORD),
        ],
    );
    let back = signed.redirect(303);
    let confirm = b.get(&api.url(&back));
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    assert!(confirm.body.contains("Planner"), "{}", confirm.body);
    assert!(
        confirm
            .body
            .contains(&format!("These permissions are for {MAILBOX} only.")),
        "{}",
        confirm.body
    );
}

/// A token acting for a user is active at introspection (and taken at userinfo) only while the
/// user's consent covers its resource: once the user withdraws the consent, the calendar
/// tokens the approval and an exchange gave are inactive, and an approval not yet polled
/// gives nothing.
#[test]
fn an_agent_token_for_a_resource_the_consent_no_longer_covers_is_inactive() {
    let (smtp, srv, api, s, agent) = two_resources("Resource Introspection");
    let (rs_id, rs_secret) = confidential_client(&srv, &s, &api.slug);
    let rs = (rs_id.as_str(), rs_secret.as_str());
    let email = "introspected@example.com";
    let user = api.verified_user(&smtp, email, USER_PASSWORD);

    let auth_req_id = ciba_for(&api, &agent, email, "openid read", CALENDAR, "calendar");
    let request = pending_request(&api, &user.access, "calendar");
    decide(
        &api,
        &user.access,
        request["id"].as_str().expect("id"),
        "approve",
    )
    .expect(200);
    wait_interval(1);
    let polled = access_token(&poll_ciba(&api, &agent, &auth_req_id));
    let swapped = access_token(&exchange_for(
        &api,
        &agent,
        &user.access,
        Some("openid read"),
        Some(CALENDAR),
    ));
    for t in [&polled, &swapped] {
        let r = introspect(&api, rs, t);
        let body = r.expect(200);
        assert_eq!(body["active"], true, "{body}");
        assert_eq!(body["aud"], CALENDAR, "{body}");
        assert_eq!(body["act"]["sub"], agent.client_id.as_str(), "{body}");
    }
    userinfo(&api, &polled).expect(200);
    // Approved, not yet polled when the consent goes.
    let waiting = ciba_for(&api, &agent, email, "openid read", CALENDAR, "not polled");
    let request = pending_request(&api, &user.access, "not polled");
    decide(
        &api,
        &user.access,
        request["id"].as_str().expect("id"),
        "approve",
    )
    .expect(200);

    // The user withdraws the consent: the resource is no longer covered.
    let gone = user_delete(
        &api,
        &user.access,
        &format!("/v1/users/me/consents/{}", agent.client_id),
    );
    assert_eq!(gone.status, 204, "{}", gone.body);
    for t in [&polled, &swapped] {
        let r = introspect(&api, rs, t);
        assert_eq!(r.expect(200), &json!({"active": false}));
        let r = introspect(&api, agent.basic(), t);
        assert_eq!(r.expect(200), &json!({"active": false}));
    }
    assert_eq!(userinfo(&api, &polled).status, 401);
    // Nor is a new one granted, by a poll or an exchange.
    wait_interval(1);
    expect_oauth_error(&poll_ciba(&api, &agent, &waiting), 400, "access_denied");
    expect_oauth_error(
        &exchange_for(&api, &agent, &user.access, Some("read"), Some(CALENDAR)),
        400,
        "invalid_grant",
    );
}

/// An account whose e-mail address is not confirmed (here: an admin marked it so) may not
/// approve an agent's request, through the API (403 `auth/email_unconfirmed`) or the mailed
/// link's page (a 403 page); it may still deny, and the request waits meanwhile.
#[test]
fn an_account_whose_address_is_not_confirmed_cannot_approve_an_agent() {
    use crate::oauth_browser::Browser;
    let (smtp, srv, api, s, agent) = two_resources("Unconfirmed Approver");
    let email = "unconfirmed@example.com";
    let user = api.verified_user(&smtp, email, USER_PASSWORD);
    let uid = user.claims()["sub"].as_str().expect("sub").to_owned();
    let r = srv.dash(
        "PATCH",
        &format!("/v1/auth/dashboard/tenants/{}/users/{uid}", api.slug),
        &s,
        Some(&json!({"email_verified": false})),
    );
    assert_eq!(r.status().as_u16(), 200);

    // The API.
    let by_api = ciba_for(&api, &agent, email, "openid read", CALENDAR, "by the API");
    let request = pending_request(&api, &user.access, "by the API");
    let id = request["id"].as_str().expect("id").to_owned();
    let refused = decide(&api, &user.access, &id, "approve");
    refused.expect_error(403, "auth/email_unconfirmed");
    assert_eq!(
        refused.body["error"]["details"]["credential"], "agent_consents",
        "{}",
        refused.body
    );
    wait_interval(1);
    expect_oauth_error(
        &poll_ciba(&api, &agent, &by_api),
        400,
        "authorization_pending",
    );
    let consents = user_get(&api, &user.access, "/v1/users/me/consents");
    assert_eq!(consents.expect(200)["data"], json!([]), "{}", consents.body);
    let denied = decide(&api, &user.access, &id, "deny");
    assert_eq!(denied.expect(200)["status"], "denied", "{}", denied.body);

    // The mailed link's page.
    let by_page = ciba_for(&api, &agent, email, "openid read", CALENDAR, "by the page");
    let link_token = smtp.wait_for_link(email, "/agent-request", 2);
    let link = api.url(&format!("/agent-request?token={link_token}"));
    let mut b = Browser::new();
    let page = b.get(&link);
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("by the page"), "{}", page.body);
    let csrf = page.hidden("csrf", 0);
    let done = b.post(&link, &[("csrf", &csrf), ("decision", "approve")]);
    assert_eq!(done.status, 403, "{}", done.body);
    assert!(
        done.body.contains("Confirm your e-mail address first"),
        "{}",
        done.body
    );
    assert!(
        done.body.contains("<html"),
        "a page, not JSON: {}",
        done.body
    );
    wait_interval(1);
    expect_oauth_error(
        &poll_ciba(&api, &agent, &by_page),
        400,
        "authorization_pending",
    );
}

/// A CIBA request for a resource (RFC 8707): the token the approval gives is bound to that
/// resource, and a resource the tenant never registered is refused at the request.
#[test]
fn a_ciba_request_for_a_registered_resource_gives_a_token_bound_to_it() {
    let (smtp, srv, api, s) = pro_setup("Backchannel Resource", &[POLL]);
    let out = srv.admin(
        &[
            "resource", "register", "--tenant", &api.slug, "--name", "API", "--uri", RESOURCE,
        ],
        "",
    );
    assert!(out.status.success(), "{}", out.stderr);
    let agent = register_agent(
        &srv,
        &s,
        &api.slug,
        agent_json("Resource Bot", &[CIBA], &["openid"]),
    );
    let email = "res@example.com";
    let user = api.verified_user(&smtp, email, USER_PASSWORD);

    let unknown = bc_authorize_for(
        &api,
        &agent,
        (email, "openid", Some("elsewhere")),
        Some("https://not-registered.example/"),
    );
    expect_oauth_error(&unknown, 400, "invalid_target");

    let r = bc_authorize_for(
        &api,
        &agent,
        (email, "openid", Some("for the API")),
        Some(RESOURCE),
    );
    let auth_req_id = r.expect(200)["auth_req_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no auth_req_id in {}", r.body))
        .to_owned();
    let request = pending_request(&api, &user.access, "for the API");
    let id = request["id"].as_str().expect("a request id");
    decide(&api, &user.access, id, "approve").expect(200);
    wait_interval(1);
    let issued = poll_ciba(&api, &agent, &auth_req_id);
    let token = access_token(&issued);
    let (_, claims) = verify_agent_token(&api, &token, Some(RESOURCE));
    assert_eq!(claims["aud"], RESOURCE, "{claims}");
    assert_eq!(claims["act"]["sub"], agent.client_id.as_str());
}
