//! Platform routes: liveness, readiness, metrics and the OpenAPI document.

use std::sync::Arc;

use axum::{
    extract::State,
    http::{header, StatusCode},
    response::IntoResponse,
    Extension, Json,
};
use serde::Serialize;
use utoipa::ToSchema;

use crate::app::AppState;

#[derive(Serialize, ToSchema)]
pub struct HealthResponse {
    /// `ok`, `ready` or `not_ready`.
    pub status: &'static str,
}

/// Liveness: the process serves HTTP.
#[utoipa::path(get, path = "/healthz", tag = "platform",
    responses((status = 200, description = "The process is alive", body = HealthResponse)))]
pub async fn healthz() -> Json<HealthResponse> {
    Json(HealthResponse { status: "ok" })
}

/// Readiness: storage is open and the directory actor answers.
#[utoipa::path(get, path = "/readyz", tag = "platform",
    responses(
        (status = 200, description = "Ready to serve", body = HealthResponse),
        (status = 503, description = "Not ready: the directory actor does not answer, or a storage call is stuck (the process is about to stop)", body = HealthResponse),
    ))]
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    if !tessera_storage::watch::stalled() && state.directory.ping().await {
        (StatusCode::OK, Json(HealthResponse { status: "ready" }))
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(HealthResponse {
                status: "not_ready",
            }),
        )
    }
}

/// Prometheus metrics in the text exposition format.
#[utoipa::path(get, path = "/metrics", tag = "platform",
    responses((status = 200, description = "The OpenMetrics text format", content_type = "application/openmetrics-text", body = String)))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(state.directory.running_tenants()),
    )
}

/// The rendered OpenAPI document, made once at start-up.
#[derive(Clone)]
pub struct OpenApiJson(pub Arc<String>);

/// This API's OpenAPI 3.1 document.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "platform",
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json", body = Object)))]
pub async fn openapi(Extension(doc): Extension<OpenApiJson>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        doc.0.as_str().to_owned(),
    )
}
