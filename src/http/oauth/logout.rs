//! RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0): a relying party sends the
//! browser here with the ID token it got; the sign-in session that authorized it ends, and
//! the browser goes back to one of the client's registered post-logout URIs.

use axum::{
    extract::{Path, RawQuery, State},
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::Serialize;
use tessera_actors::tenant::oauth::OAuthCmd;
use utoipa::ToSchema;

use super::{authorize::redirect_with, browser::clear_sign_in_cookie, oauth, Params};
use crate::{
    app::AppState,
    http::{
        bearer::issuer,
        error::{ApiError, ErrorBody},
        extract::{tenant_by_slug, RequestCtx},
    },
};

fn bad(code: &str, message: &str) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, code, message)
}

/// Answered when no post-logout URI was given.
#[derive(Serialize, ToSchema)]
pub struct SignedOut {
    /// Always true.
    pub signed_out: bool,
}

/// Ends the sign-in session named by `id_token_hint` (an ID token of this tenant, expired or
/// not) and sends the browser to `post_logout_redirect_uri` (one of the client's registered
/// post-logout URIs, exactly) with `state`.
#[utoipa::path(get, path = "/v1/tenants/{slug}/oauth/end_session", tag = "oauth",
    params(
        ("slug" = String, Path, description = "The tenant's slug"),
        ("id_token_hint" = String, Query, description = "An ID token this tenant issued"),
        ("post_logout_redirect_uri" = Option<String>, Query, description = "One of the client's post_logout_redirect_uris"),
        ("client_id" = Option<String>, Query, description = "When sent, the ID token's audience"),
        ("state" = Option<String>, Query, description = "Returned unchanged"),
    ),
    responses(
        (status = 302, description = "To the post-logout URI"),
        (status = 200, description = "Signed out; no post-logout URI was asked for", body = SignedOut),
        (status = 400, description = "`oauth/invalid_request` (no or a bad `id_token_hint`, a repeated parameter), `oauth/invalid_client` (`client_id` is not the token's client, or the client is gone), `oauth/invalid_post_logout_redirect_uri`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such tenant", body = ErrorBody),
    ))]
pub async fn end_session(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(query): RawQuery,
    RequestCtx(ctx): RequestCtx,
) -> Result<Response, ApiError> {
    let tenant = tenant_by_slug(&state, &slug)?;
    let p = Params::parse(query.unwrap_or_default().as_bytes())
        .map_err(|e| bad("oauth/invalid_request", &e))?;
    let hint = p.get("id_token_hint").ok_or_else(|| {
        bad(
            "oauth/invalid_request",
            "id_token_hint is required: the ID token the client was given",
        )
    })?;
    let keys = tenant.keys().await?;
    let claims = keys
        .verify_id_token_hint(hint, &issuer(&state, &tenant.slug))
        .map_err(|_| {
            bad(
                "oauth/invalid_request",
                "id_token_hint is not an ID token of this tenant",
            )
        })?;
    if p.get("client_id").is_some_and(|c| c != claims.aud) {
        return Err(bad(
            "oauth/invalid_client",
            "client_id is not the ID token's client",
        ));
    }
    let clients = tenant.oauth_clients().await?;
    let client = clients.get(&claims.aud).ok_or_else(|| {
        bad(
            "oauth/invalid_client",
            "the ID token's client no longer exists",
        )
    })?;
    let back = match p.get("post_logout_redirect_uri") {
        None => None,
        Some(uri) if client.post_logout_redirect_uris.iter().any(|u| u == uri) => Some(uri),
        Some(_) => {
            return Err(bad(
                "oauth/invalid_post_logout_redirect_uri",
                "post_logout_redirect_uri is not one of the client's registered post-logout URIs, exactly",
            ))
        }
    };
    let (Ok(user), Some(Ok(session))) = (claims.sub.parse(), claims.sid.as_deref().map(str::parse))
    else {
        return Err(bad(
            "oauth/invalid_request",
            "id_token_hint names no sign-in session",
        ));
    };
    let cmd = OAuthCmd::EndSession {
        user,
        session,
        client_id: client.client_id.clone(),
    };
    oauth(&tenant, ctx, cmd).await?;
    let mut resp = match back {
        Some(uri) => {
            let to = match p.get("state") {
                Some(s) => redirect_with(uri, &[("state", s)]),
                None => uri.to_owned(),
            };
            let mut r = StatusCode::FOUND.into_response();
            let v = HeaderValue::from_str(&to).map_err(ApiError::internal)?;
            r.headers_mut().insert(header::LOCATION, v);
            r
        }
        None => Json(SignedOut { signed_out: true }).into_response(),
    };
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // The session is ended, so the hosted sign-in cookie naming it is dead wherever it is;
    // where the accounts URL shares this host, the browser also drops it.
    if let Some(c) = clear_sign_in_cookie(&tenant) {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
    Ok(resp)
}
