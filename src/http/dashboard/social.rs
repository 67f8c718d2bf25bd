//! The tenant's social sign-in providers (spec 4.2; ten of them, see
//! [`tessera_actors::tenant::social`]): read by any member, configured by owners. A secret (a
//! client secret, or Apple's private key) is sealed as it arrives, is never shown again
//! (`client_secret_set` says whether one is stored), and can be sent only after a
//! re-authentication within 5 minutes.

use axum::{
    extract::{Path, State},
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::{
    tenant::social::{
        apple_key_signs, AppleKeyId, Provider, SocialConfigCmd, SocialConfigPut, SocialProviderView,
    },
    TenantHandle, TenantMsg,
};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::Dashboard;
use crate::app::AppState;
use crate::http::{
    error::{ApiError, ErrorBody, FieldErrors},
    extract::ApiJson,
    fields::normalize_domain,
    path_id::TenantSlug,
};

/// Scopes a tenant may ask a provider for.
const MAX_SCOPES: usize = 20;

/// Apple's key, as the tenant downloads it from Apple's developer site.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AppleKeyRequest {
    /// The developer team id: 10 characters, `A-Z` and `0-9`.
    #[serde(default)]
    #[schema(required = true, pattern = "^[A-Z0-9]{10}$")]
    pub team_id: String,
    /// The key's id: 10 characters, `A-Z` and `0-9`.
    #[serde(default)]
    #[schema(required = true, pattern = "^[A-Z0-9]{10}$")]
    pub key_id: String,
    /// The `.p8` file's content: a P-256 private key in PKCS#8 PEM (at most 4,096 characters).
    /// Sealed on arrival; never shown again.
    #[serde(default)]
    #[schema(required = true, max_length = 4096)]
    pub private_key: String,
}

/// The whole configuration of one provider. Secrets are the exception to "whole": leaving
/// `client_secret` (or `apple`) out keeps the stored one, as long as `client_id` stays.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutSocialProviderRequest {
    /// Whether the provider's button and routes work for this tenant; needs `client_id` and a
    /// secret (sent now or stored).
    #[serde(default)]
    #[schema(required = true)]
    pub enabled: bool,
    /// The tenant's client id at the provider (Apple: the Services ID), 1-256 visible ASCII
    /// characters; null or absent removes the configuration's client and its secret.
    #[schema(max_length = 256)]
    pub client_id: Option<String>,
    /// The client secret, 1-1,024 visible ASCII characters (every provider but Apple).
    /// Needs a re-authentication within 5 minutes. Required when `client_id` changes.
    #[schema(max_length = 1024)]
    pub client_secret: Option<String>,
    /// Apple only, instead of `client_secret`: the key that signs Apple's client secret.
    /// Needs a re-authentication within 5 minutes. Required when `client_id` changes.
    pub apple: Option<AppleKeyRequest>,
    /// Microsoft only: the Entra ID directory users come from: `common` (the default; work,
    /// school and personal accounts), `organizations`, `consumers`, or a directory's id (a
    /// UUID) or domain.
    #[schema(max_length = 253)]
    pub microsoft_tenant: Option<String>,
    /// The scopes asked for, 1-20, each 1-128 visible ASCII characters without `"` or `\`;
    /// absent: the provider's defaults. An OpenID provider's list must hold `openid` (Apple's
    /// need not).
    #[schema(min_items = 1, max_items = 20)]
    pub scopes: Option<Vec<String>>,
    /// Keep the provider's tokens after each sign-in (sealed), so the user's app can call
    /// the provider's API for them (`GET /v1/users/me/identities/{provider}/tokens`, step-up
    /// gated). Default false: they are dropped once the user is known.
    #[serde(default)]
    pub store_provider_tokens: bool,
}

#[derive(Serialize, ToSchema)]
pub struct AppleKeyResponse {
    pub team_id: String,
    pub key_id: String,
    /// Whether the private key is stored; the key itself is never returned.
    pub private_key_set: bool,
}

/// A provider's configuration: never its secret.
#[derive(Serialize, ToSchema)]
pub struct SocialProviderResponse {
    /// The provider's lowercase name.
    pub provider: String,
    /// `oidc` (OpenID Connect: a signed ID token) or `oauth2` (OAuth 2 and the provider's API).
    pub protocol: String,
    /// How far the provider's e-mail addresses are trusted: `always_verified`,
    /// `provider_verified` (as the provider says per address) or `never_trust`.
    pub email_trust: String,
    pub enabled: bool,
    pub client_id: Option<String>,
    /// Whether a client secret (Apple: a private key) is stored.
    pub client_secret_set: bool,
    /// Apple only.
    pub apple: Option<AppleKeyResponse>,
    /// Microsoft only (`common` when not set).
    pub microsoft_tenant: Option<String>,
    /// The scopes asked for: the tenant's, or the provider's defaults.
    pub scopes: Vec<String>,
    /// Whether the provider's tokens are kept (sealed) after a sign-in.
    pub store_provider_tokens: bool,
    /// The redirect URI to register at the provider:
    /// `{accounts_url}/oauth/{provider}/callback`.
    pub callback_url: String,
    /// Null until first configured.
    #[serde(with = "time::serde::rfc3339::option")]
    pub updated_at: Option<OffsetDateTime>,
}

fn response(state: &AppState, v: SocialProviderView) -> SocialProviderResponse {
    let p = v.provider;
    SocialProviderResponse {
        provider: p.as_str().to_owned(),
        protocol: p.protocol().as_str().to_owned(),
        email_trust: p.email_trust().as_str().to_owned(),
        enabled: v.enabled,
        client_id: v.client_id,
        client_secret_set: v.secret_set,
        apple: v.apple.map(|a| AppleKeyResponse {
            team_id: a.team_id,
            key_id: a.key_id,
            private_key_set: v.secret_set,
        }),
        microsoft_tenant: match p {
            Provider::Microsoft => Some(v.microsoft_tenant.unwrap_or_else(|| "common".into())),
            _ => None,
        },
        scopes: v.scopes,
        store_provider_tokens: v.store_tokens,
        callback_url: format!("{}/oauth/{}/callback", state.accounts_base(), p.as_str()),
        updated_at: v.updated_at,
    }
}

/// The provider named in the path; 404 for any other name.
fn provider_of(name: &str) -> Result<Provider, ApiError> {
    Provider::parse(name).ok_or_else(|| ApiError::not_found("social provider"))
}

/// Visible ASCII only (what client ids, secrets and scopes are made of).
fn visible_ascii(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic())
}

fn apple_id_ok(s: &str) -> bool {
    s.len() == 10
        && s.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

/// A Microsoft directory as stored: a keyword, a UUID (lowercase) or a domain.
fn microsoft_tenant(s: &str) -> Option<String> {
    match s {
        "common" | "organizations" | "consumers" => Some(s.to_owned()),
        _ => match uuid::Uuid::try_parse(s) {
            Ok(id) => Some(id.hyphenated().to_string()),
            Err(_) => normalize_domain(s),
        },
    }
}

/// Checks every field against the provider: the change to send, or every field's error.
fn checked(provider: Provider, req: PutSocialProviderRequest) -> Result<SocialConfigPut, ApiError> {
    let mut e = FieldErrors::new();
    if let Some(id) = &req.client_id {
        e.check(
            "client_id",
            visible_ascii(id, 1, 256),
            "1-256 visible ASCII characters",
        );
    }
    e.check(
        "client_id",
        !req.enabled || req.client_id.is_some(),
        "an enabled provider needs its client_id",
    );
    if let Some(secret) = &req.client_secret {
        if provider.takes_client_secret() {
            e.check(
                "client_secret",
                visible_ascii(secret, 1, 1024),
                "1-1024 visible ASCII characters",
            );
        } else {
            e.check("client_secret", false, "Apple takes `apple` instead");
        }
    }
    let mut secret = req.client_secret;
    let mut apple = None;
    if let Some(key) = req.apple {
        if provider == Provider::Apple {
            e.check(
                "apple.team_id",
                apple_id_ok(&key.team_id),
                "10 characters, A-Z and 0-9",
            );
            e.check(
                "apple.key_id",
                apple_id_ok(&key.key_id),
                "10 characters, A-Z and 0-9",
            );
            e.check(
                "apple.private_key",
                key.private_key.len() <= 4096 && apple_key_signs(&key.private_key),
                "must be the .p8 file's content: a P-256 private key in PKCS#8 PEM",
            );
            secret = Some(key.private_key);
            apple = Some(AppleKeyId {
                team_id: key.team_id,
                key_id: key.key_id,
            });
        } else {
            e.check("apple", false, "only for the apple provider");
        }
    }
    let mut tenant = None;
    if let Some(t) = &req.microsoft_tenant {
        if provider == Provider::Microsoft {
            tenant = microsoft_tenant(t);
            e.check(
                "microsoft_tenant",
                tenant.is_some(),
                "common, organizations, consumers, a directory id (UUID) or a domain",
            );
        } else {
            e.check("microsoft_tenant", false, "only for the microsoft provider");
        }
    }
    let scopes = req.scopes.map(|list| {
        e.check(
            "scopes",
            (1..=MAX_SCOPES).contains(&list.len()),
            "1-20 scopes",
        );
        for (i, s) in list.iter().enumerate() {
            e.check(
                &format!("scopes[{i}]"),
                visible_ascii(s, 1, 128) && !s.contains(['"', '\\']),
                "1-128 visible ASCII characters, without \" or \\",
            );
        }
        if let Some(required) = provider.required_scope() {
            e.check(
                "scopes",
                list.iter().any(|s| s == required),
                format!("must hold {required}"),
            );
        }
        let mut seen = std::collections::HashSet::new();
        list.into_iter()
            .filter(|s| seen.insert(s.clone()))
            .collect::<Vec<_>>()
    });
    e.finish()?;
    Ok(SocialConfigPut {
        enabled: req.enabled,
        client_id: req.client_id,
        secret,
        apple,
        microsoft_tenant: tenant,
        scopes,
        store_tokens: req.store_provider_tokens,
    })
}

async fn call(
    tenant: &TenantHandle,
    ctx: &tessera_actors::tenant::audit::AuditContext,
    cmd: SocialConfigCmd,
) -> Result<SocialProviderView, ApiError> {
    Ok(tenant
        .call(|reply| TenantMsg::SocialConfig {
            cmd: cmd.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?)
}

/// One provider's configuration (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/social/{provider}", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("provider" = String, Path, description = "google, apple, microsoft, gitlab, linkedin, slack, github, discord, facebook or x"),
    ),
    responses(
        (status = 200, description = "The configuration, never its secret (a provider never configured: disabled, no client)", body = SocialProviderResponse),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants, or no such provider (`resource/not_found`)", body = ErrorBody),
    ))]
pub async fn get_provider(
    State(state): State<AppState>,
    auth: Dashboard,
    Path((slug, provider)): Path<(String, String)>,
) -> Result<Json<SocialProviderResponse>, ApiError> {
    let (_, tenant) = auth.member(&state, &slug)?;
    let provider = provider_of(&provider)?;
    let view = call(&tenant, &auth.ctx, SocialConfigCmd::Get(provider)).await?;
    Ok(Json(response(&state, view)))
}

/// Replaces one provider's configuration (owner; a request carrying a secret needs a
/// re-authentication within 5 minutes). Audited as `settings.social.updated` with the names
/// of the changed fields.
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/settings/social/{provider}", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("provider" = String, Path, description = "google, apple, microsoft, gitlab, linkedin, slack, github, discord, facebook or x"),
    ),
    request_body = PutSocialProviderRequest,
    responses(
        (status = 200, description = "The configuration as stored, never its secret", body = SocialProviderResponse),
        (status = 400, description = "`validation/invalid_request` naming each bad field (also a secret missing for an enabled provider or a new `client_id`)", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated`, `dashboard/reauth_required` (a secret sent without a recent re-authentication)", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` (not an owner), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants, or no such provider (`resource/not_found`)", body = ErrorBody),
    ))]
pub async fn put_provider(
    State(state): State<AppState>,
    auth: Dashboard,
    Path((slug, provider)): Path<(String, String)>,
    ApiJson(req): ApiJson<PutSocialProviderRequest>,
) -> Result<Json<SocialProviderResponse>, ApiError> {
    let (_, tenant) = auth.owner(&state, &slug)?;
    let provider = provider_of(&provider)?;
    let carries_secret = req.client_secret.is_some() || req.apple.is_some();
    let put = checked(provider, req)?;
    if carries_secret {
        auth.require_recent_reauth()?;
    }
    let view = call(
        &tenant,
        &auth.ctx,
        SocialConfigCmd::Put(provider, Box::new(put)),
    )
    .await?;
    Ok(Json(response(&state, view)))
}
