//! The export's download (`GET /v1/guardian/export?token=`): the child's data a guardian asked
//! for from the portal, one JSON document behind the mailed link (24 hours).
//!
//! Its own file: the one guardian route that answers a file.

use axum::{
    extract::{Query, State},
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use tessera_actors::{
    tenant::{
        audit::AuditContext,
        guardian::{GuardianAnswer, GuardianCmd},
    },
    CallError, TenantError,
};

use super::link::{guardian, tenant_of_link, TokenQuery};
use crate::{
    app::AppState,
    http::{
        error::{ApiError, ErrorBody},
        extract::ClientIp,
        pages::protect,
    },
};

/// Downloads the child's data a guardian asked for from the portal (the mailed link, 24
/// hours): one JSON document.
#[utoipa::path(get, path = "/v1/guardian/export", tag = "guardian",
    params(("token" = Option<String>, Query, description = "The mailed download link's token")),
    responses(
        (status = 200, description = "The archive, as an attachment", body = Object),
        (status = 404, description = "`guardian/export_not_found`: unknown or expired", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited`: 120 calls of the guardian routes a minute per address", body = ErrorBody),
    ))]
pub async fn export_download(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Query(q): Query<TokenQuery>,
) -> Result<Response, ApiError> {
    let not_found = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "guardian/export_not_found",
            "the download link is unknown or expired: ask for a new export from the portal",
        )
    };
    let token = q.token.unwrap_or_default();
    let tenant = tenant_of_link(&state, &token).ok_or_else(not_found)?;
    let cmd = GuardianCmd::Download { token };
    let archive = match guardian(&tenant, (AuditContext::default(), ip), cmd).await {
        Ok(GuardianAnswer::Archive(a)) => a,
        Err(e @ (CallError::Unavailable | CallError::Failed(TenantError::RateLimited { .. }))) => {
            return Err(e.into())
        }
        _ => return Err(not_found()),
    };
    let mut resp = Json(archive).into_response();
    let h = resp.headers_mut();
    protect(h);
    h.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"account-data.json\""),
    );
    Ok(resp)
}
