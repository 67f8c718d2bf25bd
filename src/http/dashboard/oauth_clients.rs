//! The tenant's OAuth clients: the relying parties its authorization server answers.
//! Listed and read by any member; registered, changed, deleted and re-keyed by owners (a
//! secret is made or shown only after a re-authentication within 5 minutes). A secret is in
//! the answer that made it, and nowhere else.
//!
//! Redirect URIs are compared byte for byte at authorization, so they are kept as given,
//! after these checks: an absolute URI without a fragment or user info, at most 2,048
//! characters, and `https`, or `http` on a loopback host (`127.0.0.1`, `[::1]`,
//! `localhost`) for native apps (RFC 8252 7.3), or a private-use scheme with a dot in it
//! (`com.example.app:/callback`, RFC 8252 7.1).

use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::Response,
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::KeysMsg;
use tessera_actors::OAuthClientError;
use tessera_actors::{
    tenant::audit::AuditContext,
    tenant::keys::{generate_rsa_pkcs8, KeyAlg},
    tenant::oauth_clients::{
        ClientType, IssuedClient, NewOAuthClient, OAuthClientAnswer, OAuthClientCmd,
        OAuthClientPatch, OAuthClientProfile, OAuthClientRecord, TokenAuthMethod,
    },
    TenantHandle, TenantMsg,
};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{created, TenantCaller};
use crate::app::AppState;
use crate::http::error_responses::ReauthRequired;
use crate::http::{
    error::{len_between, ApiError, ErrorBody, FieldErrors},
    extract::ApiJson,
    fields::{check_description, check_logo, dedup, nullable, redirect_uri_ok, scope_ok},
    path_id::{not_found_as, TenantSlug},
};

/// Redirect URIs (and post-logout redirect URIs) a client may list.
const MAX_REDIRECT_URIS: usize = 20;
/// Scopes a client may be allowed.
const MAX_SCOPES: usize = 50;

/// A client as the dashboard shows it: never its secret.
#[derive(Serialize, ToSchema)]
pub struct OAuthClientResponse {
    pub client_id: String,
    pub name: String,
    pub description: Option<String>,
    pub logo_url: Option<String>,
    /// `public` or `confidential`.
    pub client_type: String,
    /// How the client authenticates at the token, revocation and introspection endpoints:
    /// `none` (public clients); `client_secret_basic` or `client_secret_post` (a confidential
    /// client registered with that method takes only it); or null, a confidential client
    /// registered without a method, which takes either of the two.
    pub token_endpoint_auth_method: Option<String>,
    pub redirect_uris: Vec<String>,
    pub post_logout_redirect_uris: Vec<String>,
    pub allowed_scopes: Vec<String>,
    pub first_party: bool,
    /// What the consent screen says of it: `first_party`, `attested` (by the operator) or
    /// `unverified`.
    pub verification: String,
    #[serde(with = "time::serde::rfc3339::option")]
    pub attested_at: Option<OffsetDateTime>,
    /// The secret's first 12 characters (confidential clients).
    pub secret_prefix: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub secret_rotated_at: Option<OffsetDateTime>,
    /// `RS256` or `ES256`: the algorithm of its ID tokens (clients registered before RS256
    /// was offered have `ES256`).
    pub id_token_signed_response_alg: String,
}

impl From<OAuthClientRecord> for OAuthClientResponse {
    fn from(c: OAuthClientRecord) -> Self {
        OAuthClientResponse {
            verification: c.verification().to_owned(),
            id_token_signed_response_alg: c.id_token_alg().as_str().to_owned(),
            client_id: c.client_id,
            name: c.profile.name,
            description: c.profile.description,
            logo_url: c.profile.logo_url,
            client_type: c.profile.client_type.as_str().to_owned(),
            token_endpoint_auth_method: c
                .profile
                .token_endpoint_auth_method
                .map(|m| m.as_str().to_owned()),
            redirect_uris: c.profile.redirect_uris,
            post_logout_redirect_uris: c.profile.post_logout_redirect_uris,
            allowed_scopes: c.profile.allowed_scopes,
            first_party: c.profile.first_party,
            attested_at: c.attested_at,
            secret_prefix: c.secret_prefix,
            created_at: c.created_at,
            updated_at: c.updated_at,
            secret_rotated_at: c.secret_rotated_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct OAuthClientList {
    /// Oldest first.
    pub data: Vec<OAuthClientResponse>,
}

/// A client with its secret: the answer of a registration and of a secret rotation.
#[derive(Serialize, ToSchema)]
pub struct IssuedOAuthClientResponse {
    #[serde(flatten)]
    pub client: OAuthClientResponse,
    /// `tcs_...` (confidential clients): shown once; keep it on the client's server.
    pub client_secret: Option<String>,
}

impl From<IssuedClient> for IssuedOAuthClientResponse {
    fn from(i: IssuedClient) -> Self {
        IssuedOAuthClientResponse {
            client: i.record.into(),
            client_secret: i.client_secret,
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateOAuthClientRequest {
    /// 1-64 characters, shown on the consent screen.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 64, required = true)]
    pub name: String,
    /// At most 500 characters.
    pub description: Option<String>,
    /// An https URL of at most 2,048 characters.
    pub logo_url: Option<String>,
    /// `public` (browser and native apps: PKCE only) or `confidential` (a server holding a
    /// secret). Agents have their own endpoint (`client_type: "agent"` is 400
    /// `oauth_client/use_agents_endpoint`).
    #[serde(default)]
    #[schema(required = true)]
    pub client_type: String,
    /// `none` (public clients; their default), or for a confidential client
    /// `client_secret_basic` or `client_secret_post`: the one method it will take. Left out
    /// (or null), a confidential client takes either secret method, and its answer's
    /// `token_endpoint_auth_method` is null.
    pub token_endpoint_auth_method: Option<String>,
    /// 1-20 exact redirect URIs (see the rules above).
    #[serde(default)]
    #[schema(min_items = 1, max_items = 20, required = true)]
    pub redirect_uris: Vec<String>,
    /// At most 20, same rules.
    #[serde(default)]
    #[schema(max_items = 20)]
    pub post_logout_redirect_uris: Vec<String>,
    /// At most 50: `openid`, `profile`, `email`, `phone`, `address`, `offline_access`, or a
    /// resource scope name (`^[a-z][a-z0-9_.:-]{0,63}$`). Default `["openid"]`.
    pub allowed_scopes: Option<Vec<String>>,
    /// The tenant's own app (default false).
    #[serde(default)]
    pub first_party: bool,
    /// The algorithm of its ID tokens: `RS256` (the default, OpenID Connect's) or `ES256`.
    /// Access tokens are ES256 whatever it says.
    #[schema(value_type = Option<String>, pattern = "^(RS256|ES256)$")]
    pub id_token_signed_response_alg: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateOAuthClientRequest {
    #[schema(min_length = 1, max_length = 64)]
    pub name: Option<String>,
    /// Null clears it.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, nullable)]
    pub description: Option<Option<String>>,
    /// Null clears it.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, nullable)]
    pub logo_url: Option<Option<String>>,
    #[schema(min_items = 1, max_items = 20)]
    pub redirect_uris: Option<Vec<String>>,
    #[schema(max_items = 20)]
    pub post_logout_redirect_uris: Option<Vec<String>>,
    #[schema(max_items = 50)]
    pub allowed_scopes: Option<Vec<String>>,
    pub first_party: Option<bool>,
    /// `RS256` or `ES256`.
    #[schema(value_type = Option<String>, pattern = "^(RS256|ES256)$")]
    pub id_token_signed_response_alg: Option<String>,
}

fn check_uris(e: &mut FieldErrors, field: &str, uris: &[String], min: usize) {
    e.check(
        field,
        (min..=MAX_REDIRECT_URIS).contains(&uris.len()),
        format!("must hold {min}-{MAX_REDIRECT_URIS} URIs"),
    );
    for (i, u) in uris.iter().enumerate() {
        e.check(
            &format!("{field}[{i}]"),
            redirect_uri_ok(u),
            "must be an absolute URI without fragment: https, http on 127.0.0.1, [::1] or localhost, or a private-use scheme with a dot (com.example.app:/callback)",
        );
    }
}

fn check_scopes(e: &mut FieldErrors, scopes: &[String]) {
    e.check(
        "allowed_scopes",
        scopes.len() <= MAX_SCOPES,
        "at most 50 scopes",
    );
    for (i, s) in scopes.iter().enumerate() {
        e.check(
            &format!("allowed_scopes[{i}]"),
            scope_ok(s),
            "must be openid, profile, email, phone, address, offline_access or match ^[a-z][a-z0-9_.:-]{0,63}$",
        );
    }
}

/// One registry command on the tenant's actor; an unknown client is 404 `resource/not_found`.
/// The algorithm a registration names for its ID tokens: RS256 (OpenID Connect's default)
/// when it names none; `None` when it names something else.
pub(crate) fn id_token_alg(named: Option<&str>) -> Option<KeyAlg> {
    named.map_or(Some(KeyAlg::RS256), KeyAlg::parse)
}

/// Makes sure the tenant can sign ID tokens with `alg`: its first RS256 key is generated here,
/// off the actor (tens of milliseconds), and handed to it; a no-op when it has one.
pub(crate) async fn ensure_id_token_key(
    tenant: &TenantHandle,
    alg: KeyAlg,
) -> Result<(), ApiError> {
    if alg != KeyAlg::RS256 || tenant.keys().await?.has_rsa() {
        return Ok(());
    }
    let pkcs8 = tokio::task::spawn_blocking(generate_rsa_pkcs8)
        .await
        .map_err(ApiError::internal)??;
    tenant
        .call(|reply| KeysMsg::AddIdTokenKey {
            pkcs8: pkcs8.clone(),
            reply,
        })
        .await?;
    Ok(())
}

pub(crate) async fn registry(
    tenant: &TenantHandle,
    ctx: &AuditContext,
    cmd: OAuthClientCmd,
) -> Result<OAuthClientAnswer, ApiError> {
    tenant
        .call(|reply| TenantMsg::OAuthClients {
            cmd: cmd.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await
        .map_err(|e| not_found_as("OAuth client", e))
}

pub(crate) fn one(answer: OAuthClientAnswer) -> Result<OAuthClientRecord, ApiError> {
    match answer {
        OAuthClientAnswer::One(c) => Ok(c),
        OAuthClientAnswer::Issued(i) => Ok(i.record),
        _ => Err(ApiError::internal("unexpected registry answer")),
    }
}

fn issued(answer: OAuthClientAnswer) -> Result<IssuedClient, ApiError> {
    match answer {
        OAuthClientAnswer::Issued(i) => Ok(i),
        _ => Err(ApiError::internal("unexpected registry answer")),
    }
}

/// The tenant's OAuth clients (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/oauth-clients", tag = "oauth clients",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "The clients, never their secrets", body = OAuthClientList),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    caller: TenantCaller,
) -> Result<Json<OAuthClientList>, ApiError> {
    let (_, tenant) = caller.member(&state)?;
    match registry(&tenant, &caller.auth.ctx, OAuthClientCmd::List).await? {
        OAuthClientAnswer::List(clients) => Ok(Json(OAuthClientList {
            data: clients.into_iter().map(Into::into).collect(),
        })),
        _ => Err(ApiError::internal("unexpected registry answer")),
    }
}

/// Registers a client (owner, re-authenticated in the last 5 minutes). A confidential
/// client's secret is in this answer only. At most 100 clients a tenant.
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/oauth-clients", tag = "oauth clients",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = CreateOAuthClientRequest,
    responses(
        (status = 201, description = "The client, with its secret if confidential (shown once)", body = IssuedOAuthClientResponse),
        (status = 400, description = "`validation/invalid_request` naming each bad field; `oauth_client/use_agents_endpoint` for `client_type: \"agent\"`", body = ErrorBody),
        ReauthRequired,
        (status = 403, description = "`dashboard/forbidden` (not an owner), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`oauth_client/limit_reached`", body = ErrorBody),
    ))]
pub async fn create(
    State(state): State<AppState>,
    caller: TenantCaller,
    ApiJson(req): ApiJson<CreateOAuthClientRequest>,
) -> Result<Response, ApiError> {
    let (_, tenant) = caller.owner(&state)?;
    if req.client_type == "agent" {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "oauth_client/use_agents_endpoint",
            "agents are registered at /v1/auth/dashboard/tenants/{caller.slug}/agents",
        ));
    }
    let mut e = FieldErrors::new();
    let name = req.name.trim().to_owned();
    e.check("name", len_between(&name, 1, 64), "must be 1-64 characters");
    check_description(&mut e, req.description.as_deref());
    check_logo(&mut e, req.logo_url.as_deref());
    let client_type = match req.client_type.as_str() {
        "public" => Some(ClientType::Public),
        "confidential" => Some(ClientType::Confidential),
        _ => None,
    };
    e.check(
        "client_type",
        client_type.is_some(),
        "must be public or confidential",
    );
    let client_type = client_type.unwrap_or(ClientType::Public);
    // Named or not (`None`: a confidential client takes either secret method, a public
    // one `none`); `Some(None)`: a name that is no method.
    let method = req
        .token_endpoint_auth_method
        .as_deref()
        .map(TokenAuthMethod::parse);
    let method_fits = match method {
        None => true,
        Some(Some(TokenAuthMethod::None)) => client_type == ClientType::Public,
        Some(Some(_)) => client_type == ClientType::Confidential,
        Some(None) => false,
    };
    e.check(
        "token_endpoint_auth_method",
        method_fits,
        "must be none for a public client, client_secret_basic or client_secret_post for a confidential one",
    );
    check_uris(&mut e, "redirect_uris", &req.redirect_uris, 1);
    check_uris(
        &mut e,
        "post_logout_redirect_uris",
        &req.post_logout_redirect_uris,
        0,
    );
    let scopes = req.allowed_scopes.unwrap_or_else(|| vec!["openid".into()]);
    check_scopes(&mut e, &scopes);
    let alg = id_token_alg(req.id_token_signed_response_alg.as_deref());
    e.check(
        "id_token_signed_response_alg",
        alg.is_some(),
        "must be RS256 or ES256",
    );
    e.finish()?;
    caller.auth.require_recent_reauth()?;
    let alg = alg.unwrap_or(KeyAlg::RS256);
    ensure_id_token_key(&tenant, alg).await?;
    let new = NewOAuthClient {
        profile: OAuthClientProfile {
            name,
            description: req.description,
            logo_url: req.logo_url,
            client_type,
            token_endpoint_auth_method: match client_type {
                ClientType::Public => Some(TokenAuthMethod::None),
                ClientType::Confidential => method.flatten(),
            },
            redirect_uris: dedup(req.redirect_uris),
            post_logout_redirect_uris: dedup(req.post_logout_redirect_uris),
            allowed_scopes: dedup(scopes),
            first_party: req.first_party,
        },
        id_token_signed_response_alg: alg,
    };
    let client = issued(registry(&tenant, &caller.auth.ctx, OAuthClientCmd::Create(new)).await?)?;
    Ok(created(IssuedOAuthClientResponse::from(client)))
}

/// One client (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/oauth-clients/{client_id}", tag = "oauth clients",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("client_id" = String, Path, description = "The client's id"),
    ),
    responses(
        (status = 200, description = "The client", body = OAuthClientResponse),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 404, description = "No such client of this tenant, or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn show(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, client_id)): Path<(String, String)>,
) -> Result<Json<OAuthClientResponse>, ApiError> {
    let (_, tenant) = caller.member(&state)?;
    let c = one(registry(&tenant, &caller.auth.ctx, OAuthClientCmd::Get(client_id)).await?)?;
    Ok(Json(c.into()))
}

/// Changes a client (owner). The type and the token endpoint authentication cannot change:
/// register a new client instead.
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/oauth-clients/{client_id}", tag = "oauth clients",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("client_id" = String, Path, description = "The client's id"),
    ),
    request_body = UpdateOAuthClientRequest,
    responses(
        (status = 200, description = "The client as changed", body = OAuthClientResponse),
        (status = 400, description = "`validation/invalid_request` naming each bad field", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` (not an owner), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "No such client of this tenant, or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn update(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, client_id)): Path<(String, String)>,
    ApiJson(req): ApiJson<UpdateOAuthClientRequest>,
) -> Result<Json<OAuthClientResponse>, ApiError> {
    let (_, tenant) = caller.owner(&state)?;
    let mut e = FieldErrors::new();
    let name = req.name.map(|n| n.trim().to_owned());
    if let Some(n) = &name {
        e.check("name", len_between(n, 1, 64), "must be 1-64 characters");
    }
    check_description(&mut e, req.description.as_ref().and_then(Option::as_deref));
    check_logo(&mut e, req.logo_url.as_ref().and_then(Option::as_deref));
    if let Some(u) = &req.redirect_uris {
        check_uris(&mut e, "redirect_uris", u, 1);
    }
    if let Some(u) = &req.post_logout_redirect_uris {
        check_uris(&mut e, "post_logout_redirect_uris", u, 0);
    }
    if let Some(s) = &req.allowed_scopes {
        check_scopes(&mut e, s);
    }
    let alg = req
        .id_token_signed_response_alg
        .as_deref()
        .map(|a| KeyAlg::parse(a).ok_or(a));
    e.check(
        "id_token_signed_response_alg",
        !matches!(alg, Some(Err(_))),
        "must be RS256 or ES256",
    );
    e.finish()?;
    let alg = alg.and_then(Result::ok);
    if let Some(a) = alg {
        ensure_id_token_key(&tenant, a).await?;
    }
    let patch = OAuthClientPatch {
        name,
        description: req.description,
        logo_url: req.logo_url,
        redirect_uris: req.redirect_uris.map(dedup),
        post_logout_redirect_uris: req.post_logout_redirect_uris.map(dedup),
        allowed_scopes: req.allowed_scopes.map(dedup),
        first_party: req.first_party,
        id_token_signed_response_alg: alg,
    };
    let c = one(registry(
        &tenant,
        &caller.auth.ctx,
        OAuthClientCmd::Update(client_id, patch),
    )
    .await?)?;
    Ok(Json(c.into()))
}

/// Deletes a client (owner): its id and secret stop working at once.
#[utoipa::path(delete, path = "/v1/auth/dashboard/tenants/{slug}/oauth-clients/{client_id}", tag = "oauth clients",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("client_id" = String, Path, description = "The client's id"),
    ),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` (not an owner), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "No such client of this tenant, or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, client_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let (_, tenant) = caller.owner(&state)?;
    registry(&tenant, &caller.auth.ctx, OAuthClientCmd::Delete(client_id)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A new secret for a confidential client (owner, re-authenticated in the last 5 minutes);
/// the old one stops working at once. The secret is in this answer only.
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/oauth-clients/{client_id}/rotate-secret", tag = "oauth clients",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("client_id" = String, Path, description = "The client's id"),
    ),
    responses(
        (status = 200, description = "The client with its new secret (shown once)", body = IssuedOAuthClientResponse),
        ReauthRequired,
        (status = 403, description = "`dashboard/forbidden` (not an owner), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "No such client of this tenant, or not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`oauth_client/public_client`: a public client has no secret", body = ErrorBody),
    ))]
pub async fn rotate_secret(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, client_id)): Path<(String, String)>,
) -> Result<Json<IssuedOAuthClientResponse>, ApiError> {
    let (_, tenant) = caller.owner(&state)?;
    caller.auth.require_recent_reauth()?;
    let rotated = issued(
        registry(
            &tenant,
            &caller.auth.ctx,
            OAuthClientCmd::RotateSecret(client_id),
        )
        .await?,
    )?;
    Ok(Json(rotated.into()))
}

/// How the OAuth client registry's refusals answer.
impl From<OAuthClientError> for ApiError {
    fn from(e: OAuthClientError) -> Self {
        match e {
            OAuthClientError::Limit => ApiError::new(
                StatusCode::CONFLICT,
                "oauth_client/limit_reached",
                "a tenant may register at most 100 OAuth clients; delete one first",
            ),
            OAuthClientError::Public => ApiError::new(
                StatusCode::CONFLICT,
                "oauth_client/public_client",
                "a public client has no secret to rotate",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_follow_rfc_8252_and_oauth_2_1() {
        for ok in [
            "https://app.example.com/callback",
            "https://app.example.com/cb?x=1",
            "http://127.0.0.1:8123/callback",
            "http://[::1]/cb",
            "http://localhost:3000/cb",
            "com.example.app:/oauth2redirect",
        ] {
            assert!(redirect_uri_ok(ok), "{ok}");
        }
        for bad in [
            "http://app.example.com/callback",
            "https://app.example.com/cb#frag",
            "https://user:pw@app.example.com/cb",
            "/relative",
            "myapp:/cb",
            "javascript:alert(1)",
            "",
        ] {
            assert!(!redirect_uri_ok(bad), "{bad}");
        }
        assert!(!redirect_uri_ok(&format!(
            "https://a.example/{}",
            "x".repeat(2048)
        )));
    }

    #[test]
    fn scopes_are_protocol_names_or_catalog_shaped() {
        for ok in [
            "openid",
            "offline_access",
            "orders:read",
            "a",
            "billing.v2-x_y",
        ] {
            assert!(scope_ok(ok), "{ok}");
        }
        for bad in ["", "Orders", "9lives", "has space", "ü", &"a".repeat(65)] {
            assert!(!scope_ok(bad), "{bad}");
        }
    }
}
