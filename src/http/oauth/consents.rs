//! The signed-in user's OAuth consents: what each client was granted, and withdrawing it
//! (GDPR art. 7(3): as easy as giving it), which ends that client's grants at once.

use axum::{
    extract::Path,
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::Serialize;
use tessera_actors::tenant::oauth::{OAuthAnswer, OAuthCmd};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::oauth;
use crate::http::{
    bearer::UserBearer,
    error::{ApiError, ErrorBody},
    extract::RequestCtx,
};

/// A consent on file: to an OAuth client, or to an agent (`agt_...`, given by approving its
/// CIBA request or device code).
#[derive(Serialize, ToSchema)]
pub struct ConsentResponse {
    pub client_id: String,
    /// `null` once the client is deleted, and for an agent.
    pub client_name: Option<String>,
    /// Every scope granted, for any resource.
    pub scopes: Vec<String>,
    /// The RFC 8707 resources scopes were granted for: a scope granted for one is granted for
    /// no other. Scopes granted naming no resource are not listed here.
    pub resources: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub granted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[derive(Serialize, ToSchema)]
pub struct ConsentList {
    pub data: Vec<ConsentResponse>,
}

/// The clients and agents the user has consented to, most recently changed first.
#[utoipa::path(get, path = "/v1/users/me/consents", tag = "oauth",
    security(("api_key" = [], "bearer" = [])),
    responses(
        (status = 200, description = "The consents", body = ConsentList),
        (status = 401, description = "`auth/missing_token`, `auth/invalid_token`", body = ErrorBody),
    ))]
pub async fn list(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
) -> Result<Json<ConsentList>, ApiError> {
    let cmd = OAuthCmd::Consents {
        bearer: user.bearer,
    };
    let OAuthAnswer::Consents(list) = oauth(&user.tenant, ctx, cmd).await? else {
        return Err(ApiError::internal(
            "an unexpected answer to the consent list",
        ));
    };
    Ok(Json(ConsentList {
        data: list
            .into_iter()
            .map(|c| ConsentResponse {
                client_id: c.client_id,
                client_name: c.client_name,
                scopes: c.scopes,
                resources: c.resources,
                granted_at: c.granted_at,
                updated_at: c.updated_at,
            })
            .collect(),
    }))
}

/// Withdraws the consent given to a client and revokes that client's refresh tokens (its
/// access tokens stop passing userinfo and introspection at once).
#[utoipa::path(delete, path = "/v1/users/me/consents/{client_id}", tag = "oauth",
    security(("api_key" = [], "bearer" = [])),
    params(("client_id" = String, Path, description = "The client")),
    responses(
        (status = 204, description = "Withdrawn"),
        (status = 401, description = "`auth/missing_token`, `auth/invalid_token`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no consent to this client", body = ErrorBody),
    ))]
pub async fn withdraw(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
    Path(client_id): Path<String>,
) -> Result<Response, ApiError> {
    let cmd = OAuthCmd::Withdraw {
        bearer: user.bearer,
        client_id,
    };
    oauth(&user.tenant, ctx, cmd).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
