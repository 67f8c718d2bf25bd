//! End-user bearer tokens: the one reading of `Authorization`, the issuer of a tenant's tokens,
//! and the [`UserBearer`] extractor that verifies an access token (`responses::token_pair`
//! signs them).
//!
//! Verification runs here, off the tenant actor, with the keys the actor publishes; the actor
//! is then asked only whether the session is still alive (every command taking a [`Bearer`]
//! checks that itself), so a revoked session's tokens stop working at once. A token verified
//! once is remembered until it expires (`crate::verified_tokens`): ES256 verification costs more
//! than the rest of `GET /v1/auth/me` together.

use std::sync::Arc;

use axum::{
    extract::FromRequestParts,
    http::{header, request::Parts, HeaderValue, StatusCode},
};
use ractor::RpcReplyPort;
use tessera_actors::{
    tenant::{
        keys::{AccessClaims, TokenKeys},
        messages::Bearer,
    },
    CallError, TenantError, TenantHandle, TenantMsg,
};
use tessera_storage::sha256;
use time::OffsetDateTime;

use super::{
    error::{invalid_token, ApiError},
    extract::ApiTenant,
};
use crate::{
    app::{App, AppState},
    verified_tokens::Verified,
};

/// `{base_url}/v1/tenants/{slug}`: the issuer of a tenant's tokens.
pub fn issuer(app: &App, slug: &str) -> String {
    format!("{}/v1/tenants/{slug}", app.base_url)
}

/// A signed-in end user of the API key's tenant: the token verified (signature, `typ`, `iss`,
/// `aud`, `exp`, tenant), or the hosted sign-in cookie's tag (the account page). Whether its
/// session is alive is checked by the command it is used for.
#[derive(Clone)]
pub struct UserBearer {
    pub tenant: TenantHandle,
    pub bearer: Bearer,
}

impl UserBearer {
    /// A command about the signed-in user (the session, the account) on the tenant's actor:
    /// `build` makes it of the bearer it names and the reply port.
    pub async fn call<T: Send + 'static, M: Into<TenantMsg>>(
        &self,
        build: impl Fn(Bearer, RpcReplyPort<Result<T, TenantError>>) -> M,
    ) -> Result<T, CallError<TenantError>> {
        let bearer = self.bearer;
        self.tenant.call(|reply| build(bearer, reply)).await
    }
}

/// What a request's `Authorization` header holds, as every bearer-authenticated route reads it
/// (end users and the dashboard alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BearerHeader<'a> {
    /// No `Authorization` header, or one of another scheme (`Basic ...`) or with an empty
    /// token: the request carries no bearer token.
    Absent,
    /// An `Authorization` header that cannot be a credential: more than one, or a byte that is
    /// not visible ASCII or a space. Refused as an invalid credential, never taken as none: a
    /// request that sent one must not silently be served as anonymous or by its cookie.
    Malformed,
    /// The token of `Authorization: Bearer <token>` (scheme in any case).
    Token(&'a str),
}

/// Reads the `Authorization` header; see [`BearerHeader`].
pub fn bearer_header(headers: &axum::http::HeaderMap) -> BearerHeader<'_> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let value = match (values.next(), values.next()) {
        (None, _) => return BearerHeader::Absent,
        (Some(v), None) => v,
        (Some(_), Some(_)) => return BearerHeader::Malformed,
    };
    let visible = value
        .as_bytes()
        .iter()
        .all(|b| *b == b' ' || b.is_ascii_graphic());
    let Some(value) = value.to_str().ok().filter(|_| visible) else {
        return BearerHeader::Malformed;
    };
    let Some((scheme, token)) = value.trim().split_once(' ') else {
        return BearerHeader::Absent;
    };
    let token = token.trim();
    if scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() {
        BearerHeader::Token(token)
    } else {
        BearerHeader::Absent
    }
}

/// 401 `auth/missing_token` with the bare RFC 6750 challenge.
pub fn missing_token() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "auth/missing_token",
        "an Authorization: Bearer access token is required",
    )
    .with_header(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))
}

/// Verifies `token` as a first-party access token of `tenant`: audience the tenant's slug, no
/// `client_id` (an OAuth client's token never stands in for the user's own).
pub fn verify(
    app: &App,
    tenant: &TenantHandle,
    keys: &Arc<TokenKeys>,
    token: &str,
) -> Result<(AccessClaims, Bearer), ApiError> {
    let (claims, bearer) = verify_any(app, tenant, keys, token)?;
    if claims.aud != tenant.slug || claims.client_id.is_some() {
        return Err(invalid_token());
    }
    Ok((claims, bearer))
}

/// Verifies `token` as an access token of `tenant` for any audience, first-party or issued to
/// an OAuth client; a token verified before (same tenant, same published keys, not yet
/// expired) is answered from [`VerifiedTokens`](crate::verified_tokens::VerifiedTokens) without
/// the ES256 check.
pub fn verify_any(
    app: &App,
    tenant: &TenantHandle,
    keys: &Arc<TokenKeys>,
    token: &str,
) -> Result<(AccessClaims, Bearer), ApiError> {
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let digest = sha256(token.as_bytes());
    if let Some(hit) = app.verified_tokens.get(&digest, tenant, keys, now) {
        return Ok((hit.claims.clone(), hit.bearer));
    }
    let claims = keys
        .verify_any_audience(token, &issuer(app, &tenant.slug), now)
        .map_err(|_| invalid_token())?;
    if claims.tid != tenant.id.to_string() {
        return Err(invalid_token());
    }
    let (Ok(session_id), Ok(user_id)) = (claims.sid.parse(), claims.sub.parse()) else {
        return Err(invalid_token());
    };
    let bearer = Bearer {
        session_id,
        user_id,
    };
    app.verified_tokens.insert(
        digest,
        Verified {
            tenant: tenant.id,
            slug: tenant.slug.clone(),
            keys: keys.clone(),
            claims: claims.clone(),
            bearer,
        },
    );
    Ok((claims, bearer))
}

impl FromRequestParts<AppState> for UserBearer {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let ApiTenant(tenant) = ApiTenant::from_request_parts(parts, state).await?;
        let token = match bearer_header(&parts.headers) {
            BearerHeader::Token(t) => t,
            BearerHeader::Absent => return Err(missing_token()),
            BearerHeader::Malformed => return Err(invalid_token()),
        };
        let keys = tenant.keys().await?;
        let (_, bearer) = verify(state, &tenant, &keys, token)?;
        Ok(UserBearer { tenant, bearer })
    }
}
