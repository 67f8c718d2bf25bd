//! Agents at the authorization server: their four grants at the token endpoint (client
//! credentials, RFC 8693 token exchange, CIBA poll mode, the RFC 8628 device code), the CIBA
//! and device authorization endpoints, and the revocation check every agent token passes
//! wherever it is shown.
//!
//! An agent token is verified here, off the actor: its signature and issuer, then whether its
//! agent is still registered and not revoked, and whether its `jti` is denylisted, both from
//! what the tenant's actor publishes. A revoked agent's token is answered 401 with
//! `WWW-Authenticate: Bearer error="invalid_token", error_description="agent_revoked"`.

use std::sync::Arc;

use axum::{
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::Serialize;
use tessera_actors::{
    tenant::{
        agents::{
            AgentAnswer, AgentCmd, AgentGrant, AgentIssued, AgentRecord, OnBehalf, PollRefusal,
            RequestFlow, RequestStarted,
        },
        audit::AuditContext,
        keys::{ActorClaim, AgentClaims, TokenKeys},
    },
    CallError, TenantError, TenantHandle, TenantMsg,
};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{
    form::{bearer_error, invalid_bearer, no_store, required, FormRequest},
    split_scopes, still_grantable, tenant_catalog, OAuthError, OAuthErrorBody, Params,
};
use crate::{
    app::{App, AppState},
    http::{
        bearer::{issuer, verify_any},
        error::{is_email, ApiError},
        extract::RequestCtx,
        path_id::{not_found_as, TenantSlug},
    },
};

/// A character a binding message may not hold: a control character, or an invisible or
/// bidirectional one that would make the message read differently on the two sides.
fn unshowable(c: char) -> bool {
    crate::http::catalog::invisible(c)
}

/// RFC 8693's token type of an access token.
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// The longest CIBA `binding_message`.
const MAX_BINDING_MESSAGE: usize = 64;

/// What a token is, read as an agent's.
pub enum AgentToken {
    /// Not an agent token of this tenant (maybe a user's, maybe nothing).
    NotAgent,
    /// Its agent is revoked.
    Revoked(AgentClaims),
    /// Denylisted on its own (the agent revoked it, RFC 7009); the agent lives on.
    Denied(AgentClaims),
    Live(AgentClaims, Arc<AgentRecord>),
}

/// Reads `token` as an agent token of `tenant`.
pub async fn agent_token(
    app: &App,
    tenant: &TenantHandle,
    keys: &TokenKeys,
    token: &str,
) -> Result<AgentToken, OAuthError> {
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let Ok(claims) = keys.verify_agent(token, &issuer(app, &tenant.slug), now) else {
        return Ok(AgentToken::NotAgent);
    };
    if claims.tid != tenant.id.to_string() {
        return Ok(AgentToken::NotAgent);
    }
    let published = tenant.agents().await?;
    let Some(agent) = published.get(&claims.client_id).cloned() else {
        return Ok(AgentToken::NotAgent);
    };
    if agent.revoked_at.is_some() {
        return Ok(AgentToken::Revoked(claims));
    }
    if published.is_denied(&claims.jti) {
        return Ok(AgentToken::Denied(claims));
    }
    Ok(AgentToken::Live(claims, agent))
}

/// 401 `invalid_token` with `error_description="agent_revoked"` (spec 5 rule 6).
pub fn agent_revoked() -> Response {
    no_store(bearer_error(
        StatusCode::UNAUTHORIZED,
        "invalid_token",
        "agent_revoked",
    ))
}

/// A token issued to an agent (RFC 6749 5.1; RFC 8693 2.2.1 adds `issued_token_type`).
#[derive(Serialize, ToSchema)]
pub struct AgentTokenResponse {
    /// An ES256 JWT (`typ` at+jwt): `sub` the agent's client id, or the user it acts for with
    /// `act.sub` the agent's client id.
    pub access_token: String,
    /// Token exchange only: `urn:ietf:params:oauth:token-type:access_token`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issued_token_type: Option<&'static str>,
    /// Always `Bearer`.
    pub token_type: &'static str,
    pub expires_in: i64,
    /// Space-separated.
    pub scope: String,
}

fn sign(
    app: &App,
    tenant: &TenantHandle,
    keys: &TokenKeys,
    issued: AgentIssued,
    exchange: bool,
) -> Result<Response, OAuthError> {
    let iss = issuer(app, &tenant.slug);
    let claims = AgentClaims {
        aud: issued
            .resource
            .clone()
            .unwrap_or_else(|| format!("{iss}/oauth/userinfo")),
        sub: issued
            .user
            .map_or_else(|| issued.client_id.clone(), |u| u.to_string()),
        act: issued.user.map(|_| ActorClaim {
            sub: issued.client_id.clone(),
        }),
        iss,
        exp: issued.exp,
        iat: issued.iat,
        jti: issued.jti.to_string(),
        tid: tenant.id.to_string(),
        client_id: issued.client_id,
        scope: issued.scopes.join(" "),
    };
    let access_token = keys
        .sign_agent(&claims)
        .map_err(|e| OAuthError::from(ApiError::internal(e)))?;
    // The token endpoint's `TokenAnswer::Agent`, which is this body alone (untagged).
    Ok(no_store(
        Json(AgentTokenResponse {
            access_token,
            issued_token_type: exchange.then_some(ACCESS_TOKEN_TYPE),
            token_type: "Bearer",
            expires_in: (issued.exp - issued.iat).max(0),
            scope: claims.scope,
        })
        .into_response(),
    ))
}

/// One agent command (the hosted pages and the user's routes send theirs through it too).
pub(crate) async fn call(
    tenant: &TenantHandle,
    ctx: AuditContext,
    cmd: AgentCmd,
) -> Result<AgentAnswer, CallError<TenantError>> {
    tenant
        .call(|reply| TenantMsg::Agents {
            cmd: cmd.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await
}

/// [`call`] for the service's routes: an unknown agent (or request) is 404
/// `resource/not_found` naming `what`.
pub(crate) async fn call_api(
    tenant: &TenantHandle,
    ctx: &AuditContext,
    cmd: AgentCmd,
    what: &str,
) -> Result<AgentAnswer, ApiError> {
    call(tenant, ctx.clone(), cmd)
        .await
        .map_err(|e| not_found_as(what, e))
}

/// The RFC 8707 `resource`: one of the tenant's registered resources (else `invalid_target`).
async fn resource_of(
    state: &AppState,
    tenant: &TenantHandle,
    p: &Params,
) -> Result<Option<String>, OAuthError> {
    let Some(r) = p.get("resource") else {
        return Ok(None);
    };
    let catalog = tenant_catalog(state, tenant).await?;
    if catalog.iter().any(|t| t.resource.uri == r) {
        Ok(Some(r.to_owned()))
    } else {
        Err(OAuthError::new(
            "invalid_target",
            "resource must be the URI of one of the tenant's registered resources",
        ))
    }
}

/// One of the agent grants at the token endpoint, for `agent` (authenticated).
pub async fn grant(
    state: &AppState,
    tenant: &TenantHandle,
    agent: Arc<AgentRecord>,
    grant: AgentGrant,
    p: &Params,
    ctx: AuditContext,
) -> Result<Response, OAuthError> {
    let keys = tenant.keys().await?;
    let cmd = match grant {
        AgentGrant::ClientCredentials => AgentCmd::ClientCredentials {
            scopes: p.get("scope").map(split_scopes),
            resource: resource_of(state, tenant, p).await?,
            agent,
        },
        AgentGrant::TokenExchange => {
            if required(p, "subject_token_type")? != ACCESS_TOKEN_TYPE {
                return Err(OAuthError::invalid_request(format!(
                    "subject_token_type must be {ACCESS_TOKEN_TYPE}"
                )));
            }
            if let Some(actor) = p.get("actor_token") {
                if p.get("actor_token_type") != Some(ACCESS_TOKEN_TYPE) {
                    return Err(OAuthError::invalid_request(format!(
                        "actor_token_type must be {ACCESS_TOKEN_TYPE}"
                    )));
                }
                match agent_token(state, tenant, &keys, actor).await? {
                    AgentToken::Revoked(_) => return Ok(agent_revoked()),
                    AgentToken::Live(c, _) if c.client_id == agent.client_id => {}
                    _ => {
                        return Err(OAuthError::new(
                            "invalid_grant",
                            "actor_token must be a live token of the authenticated agent",
                        ))
                    }
                }
            }
            let subject = required(p, "subject_token")?;
            let Ok((claims, bearer)) = verify_any(state, tenant, &keys, subject) else {
                return Err(OAuthError::new(
                    "invalid_grant",
                    "subject_token is not a live access token of a user of this tenant",
                ));
            };
            AgentCmd::Exchange {
                subject: bearer,
                subject_client: claims.client_id,
                scopes: p.get("scope").map(split_scopes),
                resource: resource_of(state, tenant, p).await?,
                agent,
            }
        }
        AgentGrant::Ciba => AgentCmd::Poll {
            flow: RequestFlow::Ciba,
            secret: required(p, "auth_req_id")?.to_owned(),
            agent,
        },
        AgentGrant::DeviceCode => AgentCmd::Poll {
            flow: RequestFlow::Device,
            secret: required(p, "device_code")?.to_owned(),
            agent,
        },
    };
    match call(tenant, ctx, cmd).await.map_err(grant_error)? {
        AgentAnswer::Token(mut issued) => {
            // For a resource, a resource scope only while the catalog approves it there (as
            // for OAuth clients' tokens).
            // Without a resource, a token's audience is the userinfo endpoint, which no
            // resource server takes for its own: the agent's scopes are kept as registered.
            if issued.resource.is_some() {
                let scopes = std::mem::take(&mut issued.scopes);
                issued.scopes =
                    still_grantable(state, tenant, issued.resource.as_deref(), scopes).await?;
            }
            sign(
                state,
                tenant,
                &keys,
                issued,
                grant == AgentGrant::TokenExchange,
            )
        }
        AgentAnswer::NotYet(r) => Err(match r {
            PollRefusal::Pending => OAuthError::new(
                "authorization_pending",
                "the user has not decided yet; poll again after the interval",
            ),
            PollRefusal::SlowDown => OAuthError::new(
                "slow_down",
                "polled sooner than the interval; the interval is now 5 seconds longer",
            ),
            PollRefusal::Denied => OAuthError::new("access_denied", "the user denied the request"),
            PollRefusal::Expired => OAuthError::new(
                "expired_token",
                "the request expired before the user approved it; start again",
            ),
        }),
        _ => Err(ApiError::internal("an unexpected answer to an agent grant").into()),
    }
}

/// An agent grant's refusal, in RFC 6749 5.2 words.
fn grant_error(e: CallError<TenantError>) -> OAuthError {
    match e {
        CallError::Failed(TenantError::OAuth(
            tessera_actors::tenant::oauth::OAuthFailure::InvalidGrant,
        )) => OAuthError::new(
            "invalid_grant",
            "the grant is invalid, used, expired, or not open to this agent for this user",
        ),
        CallError::Failed(TenantError::OAuth(
            tessera_actors::tenant::oauth::OAuthFailure::InvalidScope,
        )) => OAuthError::new(
            "invalid_scope",
            "a scope asked for is not the agent's, or not consented to by the user",
        ),
        CallError::Failed(TenantError::OAuth(
            tessera_actors::tenant::oauth::OAuthFailure::InvalidTarget,
        )) => OAuthError::new(
            "invalid_target",
            "the user's consent to this agent does not cover this resource (with none named: the consent given for no resource)",
        ),
        other => other.into(),
    }
}

/// Starts a CIBA or device flow (`what`: the endpoint, for an unexpected answer).
async fn start(
    tenant: &TenantHandle,
    ctx: AuditContext,
    cmd: AgentCmd,
    what: &str,
) -> Result<RequestStarted, OAuthError> {
    match call(tenant, ctx, cmd).await.map_err(grant_error)? {
        AgentAnswer::Started(s) => Ok(s),
        _ => Err(ApiError::internal(format!("an unexpected answer to {what}")).into()),
    }
}

/// The CIBA authentication request's form (for the OpenAPI document).
#[derive(Serialize, ToSchema)]
pub struct BackchannelForm {
    /// The user's e-mail address.
    pub login_hint: String,
    /// Space-separated; each one of the agent's scopes.
    pub scope: String,
    /// At most 64 characters, shown to the user on both sides.
    pub binding_message: Option<String>,
    /// RFC 8707: one of the tenant's registered resources. The user is shown it, and an
    /// approval consents to the scopes for this resource only.
    pub resource: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
}

/// A CIBA request started (CIBA Core 7.3).
#[derive(Serialize, ToSchema)]
pub struct BackchannelResponse {
    pub auth_req_id: String,
    pub expires_in: i64,
    /// Seconds to wait between polls of the token endpoint.
    pub interval: u32,
}

/// CIBA poll mode: an agent asks a user (by e-mail address) to approve it. The user is mailed
/// a link to the hosted approval page and sees the request at `GET
/// /v1/users/me/agent-requests`; the agent polls the token endpoint with
/// `grant_type=urn:openid:params:grant-type:ciba`. An address with no account is answered
/// alike (its request can never be approved). With `resource`, the approval is the user's
/// consent for that resource only; token exchange grants its scopes for no other.
#[utoipa::path(post, path = "/v1/tenants/{slug}/oauth/bc-authorize", tag = "agents",
    params(TenantSlug),
    request_body(content = BackchannelForm, content_type = "application/x-www-form-urlencoded",
        description = "An agent's authentication (HTTP Basic, or `client_id` and `client_secret`), `login_hint`, `scope`, optional `binding_message` and `resource`"),
    responses(
        (status = 200, description = "The request", body = BackchannelResponse),
        (status = 400, description = "`invalid_request`, `invalid_scope`, `invalid_target` (not a registered resource), `unauthorized_client` (not registered for CIBA)", body = OAuthErrorBody),
        (status = 401, description = "`invalid_client`", body = OAuthErrorBody),
        (status = 429, description = "`rate_limited` (`ciba_initiate_per_min`), with `Retry-After`", body = OAuthErrorBody),
    ))]
pub async fn backchannel(
    State(state): State<AppState>,
    RequestCtx(ctx): RequestCtx,
    request: FormRequest,
) -> Result<Response, OAuthError> {
    let (tenant, p, agent) = request.agent().await?;
    let hint = required(&p, "login_hint")?;
    let Some(hint) = tessera_actors::policy::normalize_email(hint).filter(|h| is_email(h)) else {
        return Err(OAuthError::invalid_request(
            "login_hint must be the user's e-mail address",
        ));
    };
    let scopes = split_scopes(required(&p, "scope")?);
    let binding_message = p.get("binding_message").map(str::to_owned);
    if binding_message
        .as_deref()
        .is_some_and(|m| m.chars().count() > MAX_BINDING_MESSAGE || m.chars().any(unshowable))
    {
        return Err(OAuthError::new(
            "invalid_binding_message",
            "binding_message must be at most 64 characters, without control, invisible or bidirectional characters",
        ));
    }
    let cmd = AgentCmd::Backchannel {
        login_hint: hint,
        scopes,
        binding_message,
        resource: resource_of(&state, &tenant, &p).await?,
        agent,
    };
    let s = start(&tenant, ctx, cmd, "bc-authorize").await?;
    Ok(no_store(
        Json(BackchannelResponse {
            auth_req_id: s.secret,
            expires_in: s.expires_in,
            interval: s.interval,
        })
        .into_response(),
    ))
}

/// The device authorization request's form (for the OpenAPI document).
#[derive(Serialize, ToSchema)]
pub struct DeviceForm {
    /// Space-separated; each one of the agent's scopes (default: all of them).
    pub scope: Option<String>,
    /// RFC 8707: one of the tenant's registered resources. The device page shows it, and an
    /// approval consents to the scopes for this resource only.
    pub resource: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
}

/// A device authorization (RFC 8628 3.2).
#[derive(Serialize, ToSchema)]
pub struct DeviceAuthorizationResponse {
    pub device_code: String,
    /// 8 letters of `BCDFGHJKLMNPQRSTVWXZ`, shown as `XXXX-XXXX`.
    pub user_code: String,
    /// `{accounts_url}/oauth/{slug}/device`, where the user types the code.
    pub verification_uri: String,
    pub verification_uri_complete: String,
    pub expires_in: i64,
    pub interval: u32,
}

/// RFC 8628: an agent on a device without a browser gets a code for its user to type on the
/// hosted device page (signed in), and polls the token endpoint with
/// `grant_type=urn:ietf:params:oauth:grant-type:device_code`.
#[utoipa::path(post, path = "/v1/tenants/{slug}/oauth/device_authorization", tag = "agents",
    params(TenantSlug),
    request_body(content = DeviceForm, content_type = "application/x-www-form-urlencoded",
        description = "An agent's authentication, optional `scope` and `resource`"),
    responses(
        (status = 200, description = "The codes", body = DeviceAuthorizationResponse),
        (status = 400, description = "`invalid_request`, `invalid_scope`, `invalid_target` (not a registered resource), `unauthorized_client`", body = OAuthErrorBody),
        (status = 401, description = "`invalid_client`", body = OAuthErrorBody),
        (status = 429, description = "`rate_limited` (`device_code_per_min`), with `Retry-After`", body = OAuthErrorBody),
    ))]
pub async fn device_authorization(
    State(state): State<AppState>,
    RequestCtx(ctx): RequestCtx,
    request: FormRequest,
) -> Result<Response, OAuthError> {
    let (tenant, p, agent) = request.agent().await?;
    let scopes = match p.get("scope") {
        Some(s) => split_scopes(s),
        None => agent.profile.scopes.clone(),
    };
    let cmd = AgentCmd::DeviceAuthorize {
        scopes,
        resource: resource_of(&state, &tenant, &p).await?,
        agent,
    };
    let s = start(&tenant, ctx, cmd, "device_authorization").await?;
    let code = s.user_code.unwrap_or_default();
    let shown = if code.len() == 8 {
        format!("{}-{}", &code[..4], &code[4..])
    } else {
        code
    };
    let verification_uri = format!("{}/oauth/{}/device", state.accounts_base(), tenant.slug);
    Ok(no_store(
        Json(DeviceAuthorizationResponse {
            device_code: s.secret,
            verification_uri_complete: format!("{verification_uri}?user_code={shown}"),
            user_code: shown,
            verification_uri,
            expires_in: s.expires_in,
            interval: s.interval,
        })
        .into_response(),
    ))
}

/// An agent's token at userinfo: the user's claims, when it acts for one with `openid`.
pub async fn userinfo(
    tenant: &TenantHandle,
    claims: AgentClaims,
) -> Result<Option<tessera_actors::tenant::messages::User>, Response> {
    let scopes = split_scopes(&claims.scope);
    if claims.act.is_none() || !scopes.iter().any(|s| s == "openid") {
        return Err(no_store(bearer_error(
            StatusCode::FORBIDDEN,
            "insufficient_scope",
            "the token does not act for a user with the openid scope",
        )));
    }
    let cmd = AgentCmd::UseToken {
        on_behalf: on_behalf(&claims),
        client_id: claims.client_id,
    };
    match call(tenant, AuditContext::default(), cmd).await {
        Ok(AgentAnswer::Used(view)) => Ok(view),
        Err(CallError::Failed(TenantError::RateLimited { retry_after })) => {
            Err(OAuthError::rate_limited(retry_after).into_response())
        }
        Err(CallError::Failed(TenantError::InvalidSession | TenantError::NotFound)) => {
            Err(no_store(invalid_bearer()))
        }
        Ok(_) => Err(ApiError::internal("an unexpected answer to userinfo").into_response()),
        Err(e) => Err(ApiError::from(e).into_response()),
    }
}

/// What a token acting for a user claims (`None`: the agent acts as itself). Its audience
/// is its resource unless it is the userinfo endpoint, the audience of a token naming none.
fn on_behalf(claims: &AgentClaims) -> Option<OnBehalf> {
    claims.act.as_ref()?;
    let userinfo = format!("{}/oauth/userinfo", claims.iss);
    Some(OnBehalf {
        // Signed by the tenant, so a user id; anything else is no user, whose consent
        // covers nothing.
        user: claims.sub.parse().unwrap_or_else(|_| uuid::Uuid::nil()),
        resource: (claims.aud != userinfo).then(|| claims.aud.clone()),
        scopes: split_scopes(&claims.scope),
    })
}

/// Records an introspection of an agent token in its agent's feed; answers whether the token
/// is active: `active` as the edge found it, and for a token acting for a user only while
/// the user's consent still covers its resource and scopes (that check failing is an error,
/// a recording failing only a warning).
pub async fn introspected(
    tenant: &TenantHandle,
    ctx: AuditContext,
    claims: &AgentClaims,
    active: bool,
) -> Result<bool, OAuthError> {
    let on_behalf = on_behalf(claims).filter(|_| active);
    let checked = on_behalf.is_some();
    let cmd = AgentCmd::Introspected {
        client_id: claims.client_id.clone(),
        jti: claims.jti.clone(),
        active,
        on_behalf,
    };
    match call(tenant, ctx, cmd).await {
        Ok(AgentAnswer::Active(a)) => Ok(a),
        Ok(_) => Err(ApiError::internal("an unexpected answer to an introspection").into()),
        Err(e) if checked => Err(e.into()),
        Err(e) => {
            tracing::warn!(error = ?e, "an agent token's introspection could not be recorded");
            Ok(active)
        }
    }
}

/// RFC 7009 for an agent: its own token is denylisted for the rest of its life.
pub async fn revoke_own(
    tenant: &TenantHandle,
    ctx: AuditContext,
    claims: &AgentClaims,
) -> Result<(), OAuthError> {
    let cmd = AgentCmd::RevokeToken {
        client_id: claims.client_id.clone(),
        jti: claims.jti.clone(),
        exp: claims.exp,
    };
    call(tenant, ctx, cmd).await?;
    Ok(())
}
