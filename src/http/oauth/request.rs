//! The authorization request as both modes of the authorization endpoint take it: the API's
//! authorize and consent decision (`authorize.rs`) and the hosted sign-in and consent pages
//! (`browser/`). One [`check`] of a request: a request whose client or `redirect_uri` is
//! wrong is refused to the caller and never sent anywhere (RFC 6749 4.1.2.1); any other fault
//! goes back to the client's `redirect_uri` with `error`, `state` and `iss` (RFC 9207). And
//! what both need of a checked request: the scopes the user may approve one by one, the
//! consent decision's rule, the redirects to the client, the query to repeat after a sign-in.
//!
//! Its own file so that both modes stand on it, neither on the other.

use std::sync::Arc;

use axum::http::{header, HeaderMap, StatusCode};
use serde::Serialize;
use tessera_actors::{
    directory::catalog::{DisplayMetadata, Sensitivity, TenantResource},
    tenant::{
        oauth::{AuthzRequest, ConsentDecision},
        oauth_clients::OAuthClientRecord,
    },
    TenantHandle,
};
use utoipa::ToSchema;

use super::{grantable, is_protocol_scope, split_scopes, tenant_catalog, Params};
use crate::{
    app::AppState,
    http::{bearer::issuer, error::ApiError},
};

/// An authorization request's parameters as sent (a query string, or the consent decision's
/// body).
#[derive(Default)]
pub struct RawRequest<'a> {
    pub client_id: Option<&'a str>,
    pub redirect_uri: Option<&'a str>,
    pub response_type: Option<&'a str>,
    pub scope: Option<&'a str>,
    pub state: Option<&'a str>,
    pub nonce: Option<&'a str>,
    pub code_challenge: Option<&'a str>,
    pub code_challenge_method: Option<&'a str>,
    pub resource: Option<&'a str>,
    /// The organization the tokens are for (needs the `organization` scope).
    pub organization: Option<&'a str>,
    pub prompt: Option<&'a str>,
    pub max_age: Option<&'a str>,
    /// `request` or `request_uri` (OpenID Connect request objects, not supported).
    pub request_object: Option<&'static str>,
}

impl<'a> RawRequest<'a> {
    pub fn of(p: &'a Params) -> Self {
        RawRequest {
            client_id: p.get("client_id"),
            redirect_uri: p.get("redirect_uri"),
            response_type: p.get("response_type"),
            scope: p.get("scope"),
            state: p.get("state"),
            nonce: p.get("nonce"),
            code_challenge: p.get("code_challenge"),
            code_challenge_method: p.get("code_challenge_method"),
            resource: p.get("resource"),
            organization: p.get("organization"),
            prompt: p.get("prompt"),
            max_age: p.get("max_age"),
            request_object: if p.get("request").is_some() {
                Some("request_not_supported")
            } else if p.get("request_uri").is_some() {
                Some("request_uri_not_supported")
            } else {
                None
            },
        }
    }
}

/// The scope an authorization request names with its `organization`.
pub const ORGANIZATION_SCOPE: &str = "organization";

/// `prompt` (OpenID Connect Core 3.1.2.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prompt {
    pub none: bool,
    pub login: bool,
    pub consent: bool,
}

/// A request that passed [`check`].
pub struct Checked {
    pub request: AuthzRequest,
    pub client: Arc<OAuthClientRecord>,
    pub catalog: Vec<TenantResource>,
    pub prompt: Prompt,
    pub max_age: Option<u64>,
}

/// Why a request is refused.
pub enum Refusal {
    /// To the caller only: the client or the redirect URI is wrong.
    Shown(ApiError),
    /// Back to the client.
    Redirect(String),
}

impl From<ApiError> for Refusal {
    fn from(e: ApiError) -> Self {
        Refusal::Shown(e)
    }
}

/// `redirect_uri` with `pairs` added to its query.
pub fn redirect_with(redirect_uri: &str, pairs: &[(&str, &str)]) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        q.append_pair(k, v);
    }
    let sep = if redirect_uri.contains('?') { '&' } else { '?' };
    format!("{redirect_uri}{sep}{}", q.finish())
}

/// The client's redirect URI with an RFC 6749 4.1.2.1 error.
pub fn error_redirect(
    iss: &str,
    redirect_uri: &str,
    state: Option<&str>,
    error: &str,
    description: &str,
) -> String {
    let mut pairs = vec![("error", error), ("error_description", description)];
    if let Some(s) = state {
        pairs.push(("state", s));
    }
    pairs.push(("iss", iss));
    redirect_with(redirect_uri, &pairs)
}

/// The client's redirect URI with a code (RFC 6749 4.1.2, RFC 9207).
pub fn code_redirect(iss: &str, redirect_uri: &str, state: Option<&str>, code: &str) -> String {
    let mut pairs = vec![("code", code)];
    if let Some(s) = state {
        pairs.push(("state", s));
    }
    pairs.push(("iss", iss));
    redirect_with(redirect_uri, &pairs)
}

fn shown(code: &str, message: &str) -> Refusal {
    Refusal::Shown(ApiError::new(StatusCode::BAD_REQUEST, code, message))
}

async fn client_of(
    tenant: &TenantHandle,
    client_id: &str,
) -> Result<Arc<OAuthClientRecord>, Refusal> {
    let clients = tenant
        .oauth_clients()
        .await
        .map_err(|e| Refusal::Shown(e.into()))?;
    clients.get(client_id).cloned().ok_or_else(|| {
        shown(
            "oauth/invalid_client",
            "client_id names no client of this tenant",
        )
    })
}

/// Whether `s` is an S256 challenge: 43 base64url characters.
fn challenge_ok(s: &str) -> bool {
    s.len() == 43
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Checks an authorization request against the client's registration and the catalog.
pub async fn check(
    state: &AppState,
    tenant: &TenantHandle,
    raw: &RawRequest<'_>,
) -> Result<Checked, Refusal> {
    let client_id = raw
        .client_id
        .ok_or_else(|| shown("oauth/invalid_client", "client_id is required"))?;
    let client = client_of(tenant, client_id).await?;
    let redirect_uri = raw
        .redirect_uri
        .filter(|r| client.profile.redirect_uris.iter().any(|u| u == r))
        .ok_or_else(|| {
            shown(
                "oauth/invalid_redirect_uri",
                "redirect_uri is missing or is not one of the client's registered redirect URIs, exactly",
            )
        })?;
    let iss = issuer(state, &tenant.slug);
    let back = |error: &str, description: &str| {
        Refusal::Redirect(error_redirect(
            &iss,
            redirect_uri,
            raw.state,
            error,
            description,
        ))
    };
    if let Some(e) = raw.request_object {
        return Err(back(e, "request objects are not supported"));
    }
    match raw.response_type {
        None => return Err(back("invalid_request", "response_type is required")),
        Some("code") => {}
        Some(_) => {
            return Err(back(
                "unsupported_response_type",
                "only response_type=code is supported (no implicit or hybrid flow)",
            ))
        }
    }
    let Some(challenge) = raw.code_challenge else {
        return Err(back(
            "invalid_request",
            "code_challenge is required (PKCE, S256)",
        ));
    };
    if raw.code_challenge_method != Some("S256") {
        return Err(back(
            "invalid_request",
            "code_challenge_method must be S256 (plain is not accepted)",
        ));
    }
    if !challenge_ok(challenge) {
        return Err(back(
            "invalid_request",
            "code_challenge must be 43 base64url characters",
        ));
    }
    let mut prompt = Prompt::default();
    for p in raw
        .prompt
        .unwrap_or("")
        .split(' ')
        .filter(|p| !p.is_empty())
    {
        match p {
            "none" => prompt.none = true,
            "login" => prompt.login = true,
            "consent" => prompt.consent = true,
            _ => {
                return Err(back(
                    "invalid_request",
                    "prompt may be none, login or consent",
                ))
            }
        }
    }
    if prompt.none && (prompt.login || prompt.consent) {
        return Err(back("invalid_request", "prompt=none stands alone"));
    }
    let max_age = match raw.max_age {
        None => None,
        Some(m) => Some(m.parse::<u64>().map_err(|_| {
            back(
                "invalid_request",
                "max_age must be a whole number of seconds",
            )
        })?),
    };
    let scopes = split_scopes(raw.scope.unwrap_or(""));
    if scopes.is_empty() {
        return Err(back("invalid_scope", "scope is required"));
    }
    if let Some(s) = scopes
        .iter()
        .find(|s| !client.profile.allowed_scopes.iter().any(|a| a == *s))
    {
        return Err(back(
            "invalid_scope",
            &format!("{s} is not among the client's allowed scopes"),
        ));
    }
    // The catalog is read only for a request that names a resource (the only one that may ask
    // for resource scopes), and only once the client is known to allow what it asks.
    let catalog = match raw.resource {
        Some(_) => tenant_catalog(state, tenant).await?,
        None => Vec::new(),
    };
    if let Some(r) = raw.resource {
        let absolute = url::Url::parse(r).is_ok_and(|u| u.fragment().is_none());
        if !absolute || !catalog.iter().any(|t| t.resource.uri == r) {
            return Err(back(
                "invalid_target",
                "resource must be the URI of one of the tenant's registered resources",
            ));
        }
    }
    let approved = grantable(&catalog, raw.resource);
    for s in scopes.iter().filter(|s| !is_protocol_scope(s)) {
        if raw.resource.is_none() {
            return Err(back(
                "invalid_scope",
                &format!("{s} is a resource scope: name its resource (RFC 8707 resource)"),
            ));
        }
        if !approved.iter().any(|a| &a.scope_name == s) {
            return Err(back(
                "invalid_scope",
                &format!("{s} is not an approved scope of the resource"),
            ));
        }
    }
    let organization =
        match raw.organization {
            None => None,
            Some(o) => {
                if !scopes.iter().any(|s| s == ORGANIZATION_SCOPE) {
                    return Err(back(
                        "invalid_request",
                        "organization needs the organization scope",
                    ));
                }
                Some(uuid::Uuid::parse_str(o).map_err(|_| {
                    back("invalid_request", "organization must be an organization id")
                })?)
            }
        };
    let request = AuthzRequest {
        client_id: client.client_id.clone(),
        redirect_uri: redirect_uri.to_owned(),
        scopes,
        resource: raw.resource.map(str::to_owned),
        code_challenge: challenge.to_owned(),
        state: raw.state.map(str::to_owned),
        nonce: raw.nonce.map(str::to_owned),
        organization,
    };
    Ok(Checked {
        request,
        client,
        catalog,
        prompt,
        max_age,
    })
}

/// A resource scope offered for individual approval (an approved `normal` catalog entry).
#[derive(Serialize, ToSchema)]
pub struct CustomScope {
    pub scope: String,
    /// The owner's text in the reader's language, or, for platform-authored copy, its
    /// `consent.scopes.*` key for the app to translate.
    pub display_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The request's resource scopes that the user may approve one by one (approved `normal`
/// catalog entries), in the reader's language.
pub fn custom_scopes(checked: &Checked, lang: &str) -> Vec<CustomScope> {
    let approved = grantable(&checked.catalog, checked.request.resource.as_deref());
    checked
        .request
        .scopes
        .iter()
        .filter_map(|s| approved.iter().find(|a| &a.scope_name == s))
        .filter(|a| a.sensitivity == Sensitivity::Normal)
        .map(|a| CustomScope {
            scope: a.scope_name.clone(),
            display_name: match &a.display_metadata {
                DisplayMetadata::LocaleText { locale_text } => match lang {
                    "pl" => locale_text.pl.clone(),
                    "de" => locale_text.de.clone(),
                    "fr" => locale_text.fr.clone(),
                    "es" => locale_text.es.clone(),
                    _ => locale_text.en.clone(),
                },
                DisplayMetadata::I18nKey { i18n_key } => i18n_key.clone(),
            },
            description: None,
        })
        .collect()
}

/// The consent decision for `checked`: approve `granted` (default: everything asked), of which
/// only the individually checkable scopes may leave anything out, or deny.
pub fn decide(
    checked: &Checked,
    approve: bool,
    granted: Option<Vec<String>>,
) -> Result<ConsentDecision, ApiError> {
    if !approve {
        return Ok(ConsentDecision::Deny);
    }
    let req = &checked.request;
    let granted = granted.unwrap_or_else(|| req.scopes.clone());
    let checkable: Vec<String> = custom_scopes(checked, "en")
        .into_iter()
        .map(|c| c.scope)
        .collect();
    if let Some(s) = granted.iter().find(|s| !req.scopes.contains(s)) {
        return Err(ApiError::invalid_field(
            "granted_scopes",
            format!("{s} was not asked for"),
        ));
    }
    let required: Vec<&str> = req
        .scopes
        .iter()
        .filter(|s| !checkable.contains(s) && !granted.contains(s))
        .map(String::as_str)
        .collect();
    if !required.is_empty() {
        return Err(ApiError::invalid_field(
            "granted_scopes",
            format!(
                "only individually checkable scopes may be left out; missing {}",
                required.join(" ")
            ),
        ));
    }
    Ok(ConsentDecision::Approve(granted))
}

/// The query of an authorize request without `prompt=login` (the user has just signed in).
pub fn query_without_login(params: &Params) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params.iter() {
        if k == "prompt" {
            let rest: Vec<&str> = v
                .split(' ')
                .filter(|p| *p != "login" && !p.is_empty())
                .collect();
            if !rest.is_empty() {
                q.append_pair(k, &rest.join(" "));
            }
            continue;
        }
        q.append_pair(k, v);
    }
    q.finish()
}

/// Where a browser-mode authorize request is served.
pub fn hosted_authorize_url(state: &AppState, slug: &str, query: &str) -> String {
    format!("{}/oauth/{slug}/authorize?{query}", state.accounts_base())
}

/// Whether a request to the authorize endpoint is a plain browser navigation: no bearer token,
/// and an `Accept` that names HTML.
pub fn is_navigation(headers: &HeaderMap) -> bool {
    headers.get(header::AUTHORIZATION).is_none()
        && headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains("text/html"))
}
