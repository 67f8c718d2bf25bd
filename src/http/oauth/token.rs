//! The token endpoint (RFC 6749 3.2, OpenID Connect Core 3.1.3), revocation (RFC 7009),
//! introspection (RFC 7662) and userinfo (OpenID Connect Core 5.3).

use axum::{
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::Serialize;
use tessera_actors::{
    tenant::{
        agents::AgentGrant,
        keys::{AccessClaims, AgentClaims, KeyAlg},
        oauth::{OAuthAnswer, OAuthCmd, OAuthFailure, OAuthIssued, PresentedToken, TokenGrant},
        oauth_clients::ClientType,
    },
    CallError, TenantError, TenantHandle,
};
use tessera_storage::sha256;
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{
    agents::{self, AgentToken},
    form::{bearer_error, invalid_bearer, no_store, required, Caller, FormRequest},
    oauth, split_scopes, still_grantable, BearerUnauthorizedBody, OAuthError, OAuthErrorBody,
};
use crate::http::path_id::TenantSlug;
use crate::{
    app::AppState,
    http::{
        bearer::{bearer_header, issuer, missing_token, verify_any, BearerHeader},
        error::{ApiError, ErrorBody},
        extract::{tenant_by_slug, RequestCtx},
        responses::access_claims,
    },
};

fn unsupported_grant() -> OAuthError {
    OAuthError::new(
        "unsupported_grant_type",
        "grant_type must be authorization_code, refresh_token, client_credentials, urn:ietf:params:oauth:grant-type:token-exchange, urn:openid:params:grant-type:ciba or urn:ietf:params:oauth:grant-type:device_code",
    )
}

fn unauthorized_grant() -> OAuthError {
    OAuthError::new(
        "unauthorized_client",
        "this client may not use this grant type",
    )
}

/// The token endpoint's form (for the OpenAPI document; the handler reads the form itself,
/// refusing repeated parameters).
#[derive(Serialize, ToSchema)]
pub struct TokenForm {
    /// `authorization_code` or `refresh_token` (OAuth clients); `client_credentials`,
    /// `urn:ietf:params:oauth:grant-type:token-exchange`, `urn:openid:params:grant-type:ciba`
    /// or `urn:ietf:params:oauth:grant-type:device_code` (agents).
    pub grant_type: String,
    pub code: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_verifier: Option<String>,
    pub refresh_token: Option<String>,
    pub scope: Option<String>,
    /// RFC 8707: one of the tenant's registered resources (agents' grants).
    pub resource: Option<String>,
    /// Token exchange: the user's access token, and its type
    /// (`urn:ietf:params:oauth:token-type:access_token`).
    pub subject_token: Option<String>,
    pub subject_token_type: Option<String>,
    /// Token exchange: optionally the agent's own token, and its type.
    pub actor_token: Option<String>,
    pub actor_token_type: Option<String>,
    /// CIBA: what `bc-authorize` answered.
    pub auth_req_id: Option<String>,
    /// Device code: what `device_authorization` answered.
    pub device_code: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
}

/// A token endpoint answer: an OAuth client's pair, or an agent's token.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum TokenAnswer {
    Client(OAuthTokenResponse),
    Agent(agents::AgentTokenResponse),
}

/// The revocation and introspection form (for the OpenAPI document).
#[derive(Serialize, ToSchema)]
pub struct TokenHintForm {
    pub token: String,
    pub token_type_hint: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
}

/// A successful token response (RFC 6749 5.1).
#[derive(Serialize, ToSchema)]
pub struct OAuthTokenResponse {
    /// An ES256 JWT (`typ` `at+jwt`, RFC 9068) with `client_id` and `scope`; its `aud` is the
    /// `resource` asked for, else the userinfo endpoint.
    pub access_token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    pub expires_in: i64,
    /// Single-use: each refresh answers a new one.
    pub refresh_token: String,
    /// Space-separated.
    pub scope: String,
    /// With `openid` on a code exchange: the ES256 ID token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
}

/// The claims of an ID token (OpenID Connect Core 2).
#[derive(Serialize)]
struct IdClaims {
    iss: String,
    sub: String,
    aud: String,
    exp: i64,
    iat: i64,
    auth_time: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    nonce: Option<String>,
    acr: String,
    amr: Vec<String>,
    azp: String,
    at_hash: String,
    /// The sign-in session (for RP-initiated logout).
    #[serde(skip_serializing_if = "Option::is_none")]
    sid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    email_verified: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    phone_number: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    phone_number_verified: Option<bool>,
    /// The organization the authorization named, and the user's role in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    org_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    org_role: Option<String>,
}

/// The left half of the access token's SHA-256, base64url (OpenID Connect Core 3.1.3.6).
fn at_hash(access_token: &str) -> String {
    URL_SAFE_NO_PAD.encode(&sha256(access_token.as_bytes())[..16])
}

/// The claims about the user that `scopes` release (in ID tokens and at userinfo).
struct UserClaims {
    email: Option<String>,
    email_verified: Option<bool>,
    phone_number: Option<String>,
    phone_number_verified: Option<bool>,
}

fn user_claims(user: &tessera_actors::tenant::messages::User, scopes: &[String]) -> UserClaims {
    let has = |s: &str| scopes.iter().any(|x| x == s);
    let email = has("email").then(|| user.email.clone()).flatten();
    let phone = has("phone").then(|| user.phone.clone()).flatten();
    UserClaims {
        email_verified: email.as_ref().map(|_| user.email_verified),
        email,
        phone_number_verified: phone.as_ref().map(|_| user.phone_verified),
        phone_number: phone,
    }
}

/// Signs the access token (and the ID token when due) of what the actor issued.
async fn sign(
    state: &AppState,
    tenant: &TenantHandle,
    issued: OAuthIssued,
) -> Result<OAuthTokenResponse, OAuthError> {
    let oauth_grant = &issued.oauth;
    let resource = oauth_grant.resource.as_deref();
    let scopes = still_grantable(state, tenant, resource, issued.scopes.clone()).await?;
    let keys = tenant.keys().await.map_err(OAuthError::from)?;
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let mut claims: AccessClaims = access_claims(state, tenant, &issued.grant, now);
    claims.client_id = Some(oauth_grant.client_id.clone());
    claims.scope = Some(scopes.join(" "));
    claims.app_metadata = None;
    // The audience is the resource asked for, else the userinfo endpoint: never the slug,
    // which first-party tokens carry, so no app takes a client's token for its user's own.
    claims.aud = match &oauth_grant.resource {
        Some(r) => r.clone(),
        None => format!("{}/oauth/userinfo", claims.iss),
    };
    let access_token = keys
        .sign(&claims)
        .map_err(|e| OAuthError::from(ApiError::internal(e)))?;
    let id_token = if issued.id_token {
        let u = user_claims(&issued.grant.user, &scopes);
        let id = IdClaims {
            iss: claims.iss.clone(),
            sub: claims.sub.clone(),
            aud: oauth_grant.client_id.clone(),
            exp: claims.exp,
            iat: now,
            auth_time: oauth_grant.auth_time.unix_timestamp(),
            nonce: issued.nonce.clone(),
            acr: claims.acr.clone(),
            amr: claims.amr.clone(),
            azp: oauth_grant.client_id.clone(),
            at_hash: at_hash(&access_token),
            sid: oauth_grant.sign_in_session.map(|s| s.to_string()),
            email: u.email,
            email_verified: u.email_verified,
            phone_number: u.phone_number,
            phone_number_verified: u.phone_number_verified,
            org_id: claims.org_id.clone(),
            org_role: claims.org_role.clone(),
        };
        // The client's registered algorithm (a client gone since is refused elsewhere).
        let alg = tenant
            .oauth_clients()
            .await
            .map_err(OAuthError::from)?
            .get(&oauth_grant.client_id)
            .map_or(KeyAlg::ES256, |c| c.id_token_alg());
        Some(
            keys.sign_id_token(&id, alg)
                .map_err(|e| OAuthError::from(ApiError::internal(e)))?,
        )
    } else {
        None
    };
    Ok(OAuthTokenResponse {
        access_token,
        token_type: "Bearer",
        expires_in: (claims.exp - now).max(0),
        refresh_token: issued.grant.refresh_token,
        scope: scopes.join(" "),
        id_token,
    })
}

/// The token endpoint: for OAuth clients `authorization_code` (with the PKCE verifier) and
/// `refresh_token`; for agents `client_credentials`, token exchange (RFC 8693), CIBA and the
/// device code (RFC 8628), polled.
#[utoipa::path(post, path = "/v1/tenants/{slug}/oauth/token", tag = "oauth",
    params(TenantSlug),
    request_body(content = TokenForm, content_type = "application/x-www-form-urlencoded",
        description = "`grant_type` `authorization_code` (`code`, `redirect_uri`, `code_verifier`) or `refresh_token` (`refresh_token`, optional narrower `scope`); an agent's `client_credentials` (`scope`, `resource`), token exchange (`subject_token`, `subject_token_type`, optional `actor_token`, `scope`, `resource`), CIBA (`auth_req_id`) or device code (`device_code`). Client authentication by HTTP Basic, `client_secret` in the body, or a public client's `client_id`"),
    responses(
        (status = 200, description = "An OAuth client's tokens, or an agent's token (no refresh token; `issued_token_type` after a token exchange)", body = TokenAnswer),
        (status = 400, description = "`invalid_request`, `invalid_grant`, `invalid_scope`, `invalid_target` (a resource the tenant has not registered; at token exchange, also one the user's consent to the agent does not cover), `unauthorized_client`, `unsupported_grant_type`; polling: `authorization_pending`, `slow_down`, `access_denied`, `expired_token`", body = OAuthErrorBody),
        (status = 401, description = "`invalid_client`, with `WWW-Authenticate: Basic`; a revoked agent's `actor_token`: `invalid_token` with `error_description=\"agent_revoked\"`", body = OAuthErrorBody),
        (status = 429, description = "`rate_limited`: an agent over one of its limits, with `Retry-After`", body = OAuthErrorBody),
    ))]
pub async fn token(
    State(state): State<AppState>,
    RequestCtx(ctx): RequestCtx,
    request: FormRequest,
) -> Result<Response, OAuthError> {
    let (tenant, p, caller) = request.caller().await?;
    let grant_type = required(&p, "grant_type")?;
    let client = match caller {
        Caller::Agent(agent) => {
            if let Some(g) = AgentGrant::parse(grant_type) {
                if !agent.allows(g) {
                    return Err(unauthorized_grant());
                }
                return agents::grant(&state, &tenant, agent, g, &p, ctx).await;
            }
            return Err(match grant_type {
                "authorization_code" | "refresh_token" => unauthorized_grant(),
                _ => unsupported_grant(),
            });
        }
        Caller::Client(client) => client,
    };
    let grant = match grant_type {
        "authorization_code" => TokenGrant::AuthorizationCode {
            code: required(&p, "code")?.to_owned(),
            redirect_uri: required(&p, "redirect_uri")?.to_owned(),
            code_verifier: required(&p, "code_verifier")?.to_owned(),
        },
        "refresh_token" => TokenGrant::RefreshToken {
            refresh_token: required(&p, "refresh_token")?.to_owned(),
            scopes: p.get("scope").map(split_scopes),
        },
        g if AgentGrant::parse(g).is_some() => return Err(unauthorized_grant()),
        _ => return Err(unsupported_grant()),
    };
    let issued = match oauth(&tenant, ctx, OAuthCmd::Token { client, grant }).await? {
        OAuthAnswer::Issued(i) => *i,
        _ => return Err(ApiError::internal("an unexpected answer to a token request").into()),
    };
    Ok(no_store(
        Json(TokenAnswer::Client(sign(&state, &tenant, issued).await?)).into_response(),
    ))
}

/// What a presented token is, read without the actor: a verified access token of the tenant,
/// or something to try as a refresh token.
async fn presented(
    state: &AppState,
    tenant: &TenantHandle,
    token: &str,
) -> Result<(PresentedToken, Option<AccessClaims>), OAuthError> {
    if token.split('.').count() == 3 {
        let keys = tenant.keys().await.map_err(OAuthError::from)?;
        return Ok(match verify_any(state, tenant, &keys, token) {
            Ok((claims, bearer)) => (
                PresentedToken::Access {
                    bearer,
                    client_id: claims.client_id.clone(),
                },
                Some(claims),
            ),
            Err(_) => (PresentedToken::Unknown, None),
        });
    }
    Ok((PresentedToken::Refresh(token.to_owned()), None))
}

/// Revokes a token of the calling client (RFC 7009): a refresh token, or an access token, ends
/// its grant. Tokens that are unknown, expired or another client's are answered 200 alike.
#[utoipa::path(post, path = "/v1/tenants/{slug}/oauth/revoke", tag = "oauth",
    params(TenantSlug),
    request_body(content = TokenHintForm, content_type = "application/x-www-form-urlencoded",
        description = "`token`, optional `token_type_hint`; client authentication as at the token endpoint"),
    responses(
        (status = 200, description = "Revoked, or nothing to revoke"),
        (status = 400, description = "`invalid_request`", body = OAuthErrorBody),
        (status = 401, description = "`invalid_client`", body = OAuthErrorBody),
    ))]
pub async fn revoke(
    State(state): State<AppState>,
    RequestCtx(ctx): RequestCtx,
    request: FormRequest,
) -> Result<Response, OAuthError> {
    let (tenant, p, caller) = request.caller().await?;
    let raw = required(&p, "token")?;
    match caller {
        Caller::Client(client) => {
            let (token, _) = presented(&state, &tenant, raw).await?;
            oauth(&tenant, ctx, OAuthCmd::Revoke { client, token }).await?;
        }
        // An agent revokes only its own tokens; anything else is answered 200 alike.
        Caller::Agent(agent) => {
            let keys = tenant.keys().await?;
            if let AgentToken::Live(claims, _) =
                agents::agent_token(&state, &tenant, &keys, raw).await?
            {
                if claims.client_id == agent.client_id {
                    agents::revoke_own(&tenant, ctx, &claims).await?;
                }
            }
        }
    }
    Ok(no_store(StatusCode::OK.into_response()))
}

/// An introspection answer (RFC 7662 2.2): `active`, and for an active token the members
/// that apply to it. An access token has them all but `act` (an agent's token on a user's
/// behalf has `act`, no `acr` or `amr`); a refresh token has `scope`, `client_id`, `exp`,
/// `sub`, `iss` and, when its grant names a resource, `aud`, but no `token_type`.
#[derive(Serialize, ToSchema)]
pub struct IntrospectionResponse {
    pub active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// `Bearer` for an access token; absent for a refresh token (RFC 7662's `token_type` is
    /// the type of an access token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aud: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amr: Option<Vec<String>>,
    /// An agent's token on a user's behalf: the agent (RFC 8693 `act`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub act: Option<serde_json::Value>,
}

impl IntrospectionResponse {
    fn of_agent(c: AgentClaims) -> Self {
        IntrospectionResponse {
            active: true,
            scope: Some(c.scope),
            client_id: Some(c.client_id),
            token_type: Some("Bearer"),
            exp: Some(c.exp),
            iat: Some(c.iat),
            sub: Some(c.sub),
            aud: Some(c.aud),
            iss: Some(c.iss),
            jti: Some(c.jti),
            act: c.act.map(|a| serde_json::json!({ "sub": a.sub })),
            ..IntrospectionResponse::inactive()
        }
    }

    fn inactive() -> Self {
        IntrospectionResponse {
            active: false,
            scope: None,
            client_id: None,
            token_type: None,
            exp: None,
            iat: None,
            sub: None,
            aud: None,
            iss: None,
            jti: None,
            acr: None,
            amr: None,
            act: None,
        }
    }
}

/// Whether a token is active, for resource servers (RFC 7662): confidential clients only.
/// An access token of any client of the tenant (or of its own app) is described; a refresh
/// token only to the client holding it. Revoked, expired and unknown tokens are
/// `{"active": false}`, and so is an agent's token acting for a user once the user's consent
/// to the agent no longer covers its audience (`aud`) and scopes.
#[utoipa::path(post, path = "/v1/tenants/{slug}/oauth/introspect", tag = "oauth",
    params(TenantSlug),
    request_body(content = TokenHintForm, content_type = "application/x-www-form-urlencoded",
        description = "`token`, optional `token_type_hint`; a confidential client's authentication"),
    responses(
        (status = 200, description = "The token's state", body = IntrospectionResponse),
        (status = 400, description = "`invalid_request`; `unauthorized_client` (a public client)", body = OAuthErrorBody),
        (status = 401, description = "`invalid_client`", body = OAuthErrorBody),
    ))]
pub async fn introspect(
    State(state): State<AppState>,
    RequestCtx(actx): RequestCtx,
    request: FormRequest,
) -> Result<Response, OAuthError> {
    let (tenant, p, caller) = request.caller().await?;
    let raw = required(&p, "token")?;
    // Resource servers introspect: confidential clients (and agents, their own tokens only).
    if let Caller::Client(c) = &caller {
        if c.profile.client_type != ClientType::Confidential {
            return Err(OAuthError::from(TenantError::OAuth(
                OAuthFailure::UnauthorizedClient,
            )));
        }
    }
    // A user's or an OAuth client's token first (its check is cached); only what is none of
    // those is tried as an agent's.
    let (token, claims) = presented(&state, &tenant, raw).await?;
    if matches!(token, PresentedToken::Unknown) {
        let keys = tenant.keys().await?;
        let foreign =
            |c: &AgentClaims| matches!(&caller, Caller::Agent(a) if a.client_id != c.client_id);
        return Ok(no_store(
            match agents::agent_token(&state, &tenant, &keys, raw).await? {
                AgentToken::Revoked(c) | AgentToken::Denied(c) => {
                    if !foreign(&c) {
                        agents::introspected(&tenant, actx, &c, false).await?;
                    }
                    Json(IntrospectionResponse::inactive()).into_response()
                }
                AgentToken::Live(c, _) if !foreign(&c) => {
                    if agents::introspected(&tenant, actx, &c, true).await? {
                        Json(IntrospectionResponse::of_agent(c)).into_response()
                    } else {
                        Json(IntrospectionResponse::inactive()).into_response()
                    }
                }
                _ => Json(IntrospectionResponse::inactive()).into_response(),
            },
        ));
    }
    let client = match caller {
        Caller::Client(c) => c,
        // An agent introspects its own tokens only.
        Caller::Agent(_) => {
            return Ok(no_store(
                Json(IntrospectionResponse::inactive()).into_response(),
            ))
        }
    };
    // Introspection writes nothing: no audit context.
    let ctx = tessera_actors::tenant::audit::AuditContext::default();
    let answer = oauth(&tenant, ctx, OAuthCmd::Introspect { client, token }).await?;
    let OAuthAnswer::Introspected { active, refresh } = answer else {
        return Err(ApiError::internal("an unexpected answer to introspection").into());
    };
    let body = match (active, claims, refresh) {
        (true, Some(c), _) => IntrospectionResponse {
            active: true,
            scope: c.scope,
            client_id: c.client_id,
            token_type: Some("Bearer"),
            exp: Some(c.exp),
            iat: Some(c.iat),
            sub: Some(c.sub),
            aud: Some(c.aud),
            iss: Some(c.iss),
            jti: Some(c.jti),
            acr: Some(c.acr),
            amr: Some(c.amr),
            act: None,
        },
        (true, None, Some((_, user, grant, expires_at))) => IntrospectionResponse {
            active: true,
            scope: Some(grant.scopes.join(" ")),
            client_id: Some(grant.client_id),
            // RFC 7662's `token_type` is an access token's type: a refresh token has none.
            token_type: None,
            exp: Some(expires_at.unix_timestamp()),
            sub: Some(user.to_string()),
            iss: Some(issuer(&state, &tenant.slug)),
            aud: grant.resource,
            ..IntrospectionResponse::inactive()
        },
        _ => IntrospectionResponse::inactive(),
    };
    Ok(no_store(Json(body).into_response()))
}

/// The claims userinfo answers.
#[derive(Serialize, ToSchema)]
pub struct UserInfoResponse {
    pub sub: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email_verified: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phone_number: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phone_number_verified: Option<bool>,
}

async fn userinfo_of(state: &AppState, slug: &str, headers: &HeaderMap) -> Response {
    let tenant = match tenant_by_slug(state, slug) {
        Ok(t) => t,
        Err(e) => return e.into_response(),
    };
    let token = match bearer_header(headers) {
        BearerHeader::Token(t) => t,
        // No credentials at all: RFC 6750 3.1's bare challenge, no error code.
        BearerHeader::Absent => return missing_token().into_response(),
        BearerHeader::Malformed => return invalid_bearer(),
    };
    let Ok(keys) = tenant.keys().await else {
        return ApiError::unavailable().into_response();
    };
    let Ok((claims, bearer)) = verify_any(state, &tenant, &keys, token) else {
        return match agents::agent_token(state, &tenant, &keys, token).await {
            Ok(AgentToken::Live(c, _)) => match agents::userinfo(&tenant, c.clone()).await {
                Ok(Some(user)) => user_info(&user, &split_scopes(&c.scope)),
                Ok(None) => invalid_bearer(),
                Err(resp) => resp,
            },
            Ok(AgentToken::Revoked(_)) => agents::agent_revoked(),
            Ok(AgentToken::Denied(_)) => invalid_bearer(),
            Ok(AgentToken::NotAgent) => invalid_bearer(),
            Err(e) => e.into_response(),
        };
    };
    let Some(client_id) = claims.client_id.clone() else {
        return invalid_bearer();
    };
    let scopes = split_scopes(claims.scope.as_deref().unwrap_or(""));
    if !scopes.iter().any(|s| s == "openid") {
        return bearer_error(
            StatusCode::FORBIDDEN,
            "insufficient_scope",
            "the access token was not granted the openid scope",
        );
    }
    let cmd = OAuthCmd::UserInfo { bearer, client_id };
    let ctx = tessera_actors::tenant::audit::AuditContext::default();
    let user = match oauth(&tenant, ctx, cmd).await {
        Ok(OAuthAnswer::User(u)) => u,
        Err(CallError::Failed(TenantError::InvalidSession)) => return invalid_bearer(),
        Ok(_) => return ApiError::internal("an unexpected answer to userinfo").into_response(),
        Err(e) => return ApiError::from(e).into_response(),
    };
    user_info(&user, &scopes)
}

/// The userinfo answer about `user` for `scopes`.
fn user_info(user: &tessera_actors::tenant::messages::User, scopes: &[String]) -> Response {
    let u = user_claims(user, scopes);
    no_store(
        Json(UserInfoResponse {
            sub: user.id.to_string(),
            email: u.email,
            email_verified: u.email_verified,
            phone_number: u.phone_number,
            phone_number_verified: u.phone_number_verified,
        })
        .into_response(),
    )
}

/// The signed-in user's claims, by the access token's scopes (`email`, `phone`).
#[utoipa::path(get, path = "/v1/tenants/{slug}/oauth/userinfo", tag = "oauth",
    params(TenantSlug),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The claims", body = UserInfoResponse),
        (status = 401, description = "`invalid_token` (RFC 6750), also for a revoked grant or a first-party token; with no access token at all, the bare challenge `WWW-Authenticate: Bearer` (no error code) and the service's `auth/missing_token` body", body = BearerUnauthorizedBody),
        (status = 403, description = "`insufficient_scope`: the token lacks `openid`", body = OAuthErrorBody),
        (status = 404, description = "`resource/not_found`: no such tenant", body = ErrorBody),
    ))]
pub async fn userinfo_get(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    headers: HeaderMap,
) -> Response {
    userinfo_of(&state, &slug, &headers).await
}

/// As `GET`, for clients that post.
#[utoipa::path(post, path = "/v1/tenants/{slug}/oauth/userinfo", tag = "oauth",
    params(TenantSlug),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The claims", body = UserInfoResponse),
        (status = 401, description = "`invalid_token`; with no access token at all, `WWW-Authenticate: Bearer` with no error code (`auth/missing_token`)", body = BearerUnauthorizedBody),
        (status = 403, description = "`insufficient_scope`", body = OAuthErrorBody),
        (status = 404, description = "`resource/not_found`: no such tenant", body = ErrorBody),
    ))]
pub async fn userinfo_post(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    headers: HeaderMap,
) -> Response {
    userinfo_of(&state, &slug, &headers).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_hash_is_the_left_half_of_sha256() {
        // OpenID Connect Core A.3's example access token and at_hash (RS256 / SHA-256).
        assert_eq!(
            at_hash("jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y"),
            "77QmUPtjPfzWtF2AnpK9RQ"
        );
    }
}
