//! `GET .../activity`: the tenant's overview figures: this month's active users, and sign-ins
//! and refused sign-ins a day (the console draws them).

use axum::{
    extract::{Query, State},
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::UsersMsg;
use utoipa::{IntoParams, ToSchema};

use super::TenantCaller;
use crate::app::AppState;
use crate::http::{
    error::{ApiError, ErrorBody, FieldErrors},
    path_id::TenantSlug,
};

#[derive(Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ActivityQuery {
    /// 1-90, default 14. Read as text so a bad value is a named field error.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 90)]
    pub days: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct ActivityDayResponse {
    /// `YYYY-MM-DD` (UTC).
    pub day: String,
    /// Successful sign-ins (`auth.login.succeeded`).
    pub sign_ins: u64,
    /// Refused sign-ins (`auth.login.failed`).
    pub failures: u64,
}

#[derive(Serialize, ToSchema)]
pub struct ActivityResponse {
    /// `YYYY-MM` (UTC).
    pub month: String,
    /// Users active this month (created, signed in or refreshed a session).
    pub active_users: u64,
    /// Oldest first, today last; a day without sign-ins is zero.
    pub days: Vec<ActivityDayResponse>,
}

/// The tenant's activity (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/activity", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ActivityQuery),
    responses(
        (status = 200, description = "This month's active users and the days' sign-ins", body = ActivityResponse),
        (status = 400, description = "`validation/invalid_request` (days)", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get(
    State(state): State<AppState>,
    caller: TenantCaller,
    Query(q): Query<ActivityQuery>,
) -> Result<Json<ActivityResponse>, ApiError> {
    let (_, tenant) = caller.member(&state)?;
    let mut e = FieldErrors::new();
    let days = match q.days.as_deref() {
        None => Some(14),
        Some(d) => d.parse::<u32>().ok().filter(|d| (1..=90).contains(d)),
    };
    e.check("days", days.is_some(), "must be 1-90");
    e.finish()?;
    let days = days.unwrap_or(14);
    let a = tenant
        .call(|reply| UsersMsg::Activity { days, reply })
        .await?;
    Ok(Json(ActivityResponse {
        month: a.month,
        active_users: a.active_users,
        days: a
            .days
            .into_iter()
            .map(|d| ActivityDayResponse {
                day: d.day,
                sign_ins: d.sign_ins,
                failures: d.failures,
            })
            .collect(),
    }))
}
