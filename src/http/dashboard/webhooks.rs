//! The tenant's webhook endpoints: registered, changed, re-keyed, tested and deleted by
//! owners (a secret is made only after a re-authentication within 5 minutes, and shown
//! once), read by any member; each endpoint's delivery log and manual redelivery.
//!
//! An endpoint URL is `https://` to a public host. `http://` and targets that are not public
//! (loopback, private, link-local or any other special-use range, an IPv4 address embedded in
//! an IPv6 one judged as itself: `net::is_public`) are refused (400
//! `webhook/target_not_allowed`) unless the operator set `[webhooks] allow_private_targets`;
//! a name is checked when saved (when it resolves) and again at every connection
//! (`crate::net`).

use axum::{
    extract::{Path, Query, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::WebhookError;
use tessera_actors::{
    tenant::{
        audit::AuditContext,
        webhooks::{
            EndpointPatch, IssuedEndpoint, NewEndpoint, WebhookAnswer, WebhookCmd,
            WebhookDeliveryRecord, WebhookEndpointRecord, EVENT_TYPES,
        },
    },
    TenantHandle, TenantMsg,
};
use tessera_wire::WebhookEndpoint;
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::{created, TenantCaller};
use crate::http::error_responses::ReauthRequired;
use crate::{
    app::AppState,
    http::{
        error::{len_between, ApiError, ErrorBody, FieldErrors},
        extract::ApiJson,
        fields::{check_description, nullable},
        paging::{self, Pagination},
        path_id::{not_found_as, path_id, TenantSlug},
    },
    webhooks::{check_url, resolves_only_to_private, UrlRefusal},
};

/// The register-endpoint body.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhookRequest {
    /// Where events are POSTed: an `https://` URL of at most 2,048 characters, without
    /// credentials or fragment, to a public host (see `[webhooks] allow_private_targets`).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 2048, required = true)]
    pub url: String,
    /// 1-13 of `user.created`, `user.deleted`, `user.email_verified`, `session.revoked`,
    /// `agent.revoked`, `guardian.consent_granted`, `guardian.consent_withdrawn`,
    /// `organization.created`, `organization.updated`, `organization.deleted`,
    /// `membership.created`, `membership.updated`, `membership.deleted`.
    #[serde(default)]
    #[schema(min_items = 1, max_items = 13, required = true)]
    pub event_types: Vec<String>,
    /// At most 500 characters.
    pub description: Option<String>,
}

/// A change to an endpoint; absent fields stay as they are.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWebhookRequest {
    #[schema(min_length = 1, max_length = 2048)]
    pub url: Option<String>,
    #[schema(min_items = 1, max_items = 13)]
    pub event_types: Option<Vec<String>>,
    /// Null clears it.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, nullable)]
    pub description: Option<Option<String>>,
    /// `true` enables an endpoint again (after it was disabled for failing, or by an owner);
    /// `false` stops deliveries to it.
    pub enabled: Option<bool>,
}

/// An endpoint as the dashboard shows it (the API's shape): the previous secret's end only
/// while that secret still signs.
fn endpoint_of(e: WebhookEndpointRecord) -> WebhookEndpoint {
    let now = OffsetDateTime::now_utc();
    WebhookEndpoint {
        id: e.id,
        url: e.url,
        description: e.description,
        event_types: e.event_types,
        enabled: e.enabled,
        disabled_reason: e.disabled_reason,
        disabled_at: e.disabled_at,
        failing_since: e.failing_since,
        created_at: e.created_at,
        updated_at: e.updated_at,
        secret_rotated_at: e.secret_rotated_at,
        previous_secret_expires_at: e.previous_until.filter(|u| *u > now),
    }
}

/// An endpoint with its new signing secret: the answer of a registration and of a rotation.
#[derive(Serialize, ToSchema)]
pub struct IssuedWebhookResponse {
    #[serde(flatten)]
    pub endpoint: WebhookEndpoint,
    /// `whsec_...` (the standard base64 of 32 random bytes): shown once. Verify each
    /// delivery's `webhook-signature` with it (Standard Webhooks).
    pub secret: String,
}

impl IssuedWebhookResponse {
    fn of(i: IssuedEndpoint) -> Self {
        IssuedWebhookResponse {
            endpoint: endpoint_of(i.record),
            secret: i.secret,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct WebhookList {
    /// Oldest first (at most 10).
    pub data: Vec<WebhookEndpoint>,
}

/// One event's delivery to the endpoint.
#[derive(Serialize, ToSchema)]
pub struct WebhookDeliveryResponse {
    /// The delivery's id within the endpoint: its event's id (also the `webhook-id` header).
    pub id: Uuid,
    pub event_id: Uuid,
    pub event_type: String,
    /// `pending`, `succeeded` or `failed`.
    pub status: String,
    /// Attempts made so far.
    pub attempts: u32,
    /// The HTTP status of the last attempt that got an answer.
    pub http_status: Option<u16>,
    /// How long the last attempt took, in milliseconds.
    pub latency_ms: Option<u64>,
    /// What went wrong with the last attempt: `timeout`, `connection_failed`,
    /// `address_not_allowed`, `http_<status>`, `endpoint_disabled`...
    pub error: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub next_attempt_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_attempt_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub delivered_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl WebhookDeliveryResponse {
    fn of(d: WebhookDeliveryRecord) -> Self {
        WebhookDeliveryResponse {
            id: d.event,
            event_id: d.event,
            event_type: d.event_type,
            status: d.status.as_str().to_owned(),
            attempts: d.attempts,
            http_status: d.last_status,
            latency_ms: d.last_latency_ms,
            error: d.last_error,
            next_attempt_at: d.next_attempt_at,
            last_attempt_at: d.last_attempt_at,
            delivered_at: d.delivered_at,
            created_at: d.created_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct WebhookDeliveryList {
    /// Newest first.
    pub data: Vec<WebhookDeliveryResponse>,
    pub pagination: Pagination,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveriesQuery {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// 1-100, default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
}

/// One webhook command on the tenant's actor; an unknown endpoint or delivery is 404
/// `resource/not_found`.
async fn webhooks(
    tenant: &TenantHandle,
    ctx: &AuditContext,
    cmd: WebhookCmd,
    what: &str,
) -> Result<WebhookAnswer, ApiError> {
    tenant
        .call(|reply| TenantMsg::Webhooks {
            cmd: cmd.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await
        .map_err(|e| not_found_as(what, e))
}

/// [`webhooks`] for a command about one of the tenant's endpoints (or all of them).
async fn endpoints(
    tenant: &TenantHandle,
    ctx: &AuditContext,
    cmd: WebhookCmd,
) -> Result<WebhookAnswer, ApiError> {
    webhooks(tenant, ctx, cmd, "webhook endpoint").await
}

fn unexpected() -> ApiError {
    ApiError::internal("unexpected webhook answer")
}

/// The URL's shape (400 `validation/invalid_request` naming `url`).
fn check_url_field(e: &mut FieldErrors, url: &str) {
    e.check(
        "url",
        len_between(url, 1, 2048)
            && !matches!(check_url(url, true), Err(UrlRefusal::Malformed)),
        "must be an absolute http(s) URL of at most 2048 characters, without credentials or fragment",
    );
}

/// 400 `webhook/target_not_allowed`.
fn target_not_allowed(why: &str) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "webhook/target_not_allowed", why)
        .with_details(serde_json::json!({ "field": "url" }))
}

/// Where the URL points, once its shape is right: `https://` to a public host unless the
/// operator allows private targets.
async fn check_target(state: &AppState, url: &str) -> Result<(), ApiError> {
    let allow = state.config.webhooks.allow_private_targets;
    match check_url(url, allow) {
        Ok(parsed) => {
            if !allow && resolves_only_to_private(&parsed).await {
                return Err(target_not_allowed(
                    "the URL's host resolves only to addresses that are not public (loopback, private, link-local or special-use)",
                ));
            }
            Ok(())
        }
        Err(UrlRefusal::NotHttps) => Err(target_not_allowed(
            "the URL must be https:// (http:// only where the operator allows private targets)",
        )),
        Err(UrlRefusal::PrivateTarget) => Err(target_not_allowed(
            "the URL points at an address that is not public (loopback, private, link-local or special-use)",
        )),
        Err(UrlRefusal::Malformed) => Err(ApiError::invalid_field(
            "url",
            "must be an absolute http(s) URL without credentials or fragment",
        )),
    }
}

/// The event types, each from the catalogue, without repeats.
fn check_event_types(e: &mut FieldErrors, types: &[String]) -> Vec<String> {
    e.check(
        "event_types",
        (1..=EVENT_TYPES.len()).contains(&types.len()),
        format!("must list 1-{} event types", EVENT_TYPES.len()),
    );
    for (i, t) in types.iter().enumerate() {
        e.check(
            &format!("event_types[{i}]"),
            EVENT_TYPES.contains(&t.as_str()),
            format!("must be one of {}", EVENT_TYPES.join(", ")),
        );
    }
    let mut out: Vec<String> = Vec::new();
    for t in types {
        if !out.contains(t) {
            out.push(t.clone());
        }
    }
    out
}

fn one(answer: WebhookAnswer) -> Result<WebhookEndpointRecord, ApiError> {
    match answer {
        WebhookAnswer::Endpoint(e) => Ok(*e),
        _ => Err(unexpected()),
    }
}

fn issued(answer: WebhookAnswer) -> Result<IssuedEndpoint, ApiError> {
    match answer {
        WebhookAnswer::Issued(i) => Ok(*i),
        _ => Err(unexpected()),
    }
}

/// 202 with the delivery a command queued.
fn queued(answer: WebhookAnswer) -> Result<Response, ApiError> {
    match answer {
        WebhookAnswer::Delivery(d) => {
            let body = WebhookDeliveryResponse::of(*d);
            Ok((StatusCode::ACCEPTED, Json(body)).into_response())
        }
        _ => Err(unexpected()),
    }
}

/// The tenant's webhook endpoints, oldest first (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/webhooks", tag = "webhooks",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "The endpoints, never their secrets", body = WebhookList),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    caller: TenantCaller,
) -> Result<Json<WebhookList>, ApiError> {
    let (_, tenant) = caller.member(&state)?;
    let WebhookAnswer::Endpoints(all) =
        endpoints(&tenant, &caller.auth.ctx, WebhookCmd::List).await?
    else {
        return Err(unexpected());
    };
    Ok(Json(WebhookList {
        data: all.into_iter().map(endpoint_of).collect(),
    }))
}

/// Registers an endpoint (owner, re-authenticated in the last 5 minutes). Its signing secret
/// is in this answer only.
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/webhooks", tag = "webhooks",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = CreateWebhookRequest,
    responses(
        (status = 201, description = "The endpoint, with its secret (shown once)", body = IssuedWebhookResponse),
        (status = 400, description = "`validation/invalid_request` naming each bad field; `webhook/target_not_allowed` (http://, or a target that is not public: loopback, private, link-local or special-use)", body = ErrorBody),
        ReauthRequired,
        (status = 403, description = "`dashboard/forbidden` (not an owner), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`webhook/limit_reached` (10 endpoints)", body = ErrorBody),
    ))]
pub async fn create(
    State(state): State<AppState>,
    caller: TenantCaller,
    ApiJson(req): ApiJson<CreateWebhookRequest>,
) -> Result<Response, ApiError> {
    let (_, tenant) = caller.owner(&state)?;
    let url = req.url.trim().to_owned();
    let mut e = FieldErrors::new();
    check_url_field(&mut e, &url);
    let event_types = check_event_types(&mut e, &req.event_types);
    check_description(&mut e, req.description.as_deref());
    e.finish()?;
    check_target(&state, &url).await?;
    caller.auth.require_recent_reauth()?;
    let new = NewEndpoint {
        url,
        description: req.description,
        event_types,
    };
    let endpoint = issued(endpoints(&tenant, &caller.auth.ctx, WebhookCmd::Create(new)).await?)?;
    Ok(created(IssuedWebhookResponse::of(endpoint)))
}

/// One endpoint (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/webhooks/{webhook_id}", tag = "webhooks",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("webhook_id" = String, Path, description = "The endpoint's id"),
    ),
    responses(
        (status = 200, description = "The endpoint", body = WebhookEndpoint),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 404, description = "No such endpoint of this tenant, or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn show(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id)): Path<(String, String)>,
) -> Result<Json<WebhookEndpoint>, ApiError> {
    let (_, tenant, id) = caller.member_item(&state, &id, "webhook endpoint")?;
    let e = one(endpoints(&tenant, &caller.auth.ctx, WebhookCmd::Get(id)).await?)?;
    Ok(Json(endpoint_of(e)))
}

/// Changes an endpoint (owner): its URL, events, description, or whether it is enabled.
/// Enabling a disabled endpoint forgets its failures; deliveries it missed stay failed and
/// can be sent again from its delivery log.
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/webhooks/{webhook_id}", tag = "webhooks",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("webhook_id" = String, Path, description = "The endpoint's id"),
    ),
    request_body = UpdateWebhookRequest,
    responses(
        (status = 200, description = "The endpoint as changed", body = WebhookEndpoint),
        (status = 400, description = "`validation/invalid_request`, `webhook/target_not_allowed`", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden`, `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "No such endpoint", body = ErrorBody),
    ))]
pub async fn update(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id)): Path<(String, String)>,
    ApiJson(req): ApiJson<UpdateWebhookRequest>,
) -> Result<Json<WebhookEndpoint>, ApiError> {
    let (_, tenant, id) = caller.owner_item(&state, &id, "webhook endpoint")?;
    let url = req.url.as_ref().map(|u| u.trim().to_owned());
    let mut e = FieldErrors::new();
    if let Some(u) = &url {
        check_url_field(&mut e, u);
    }
    let event_types = req
        .event_types
        .as_ref()
        .map(|t| check_event_types(&mut e, t));
    if let Some(d) = &req.description {
        check_description(&mut e, d.as_deref());
    }
    e.finish()?;
    if let Some(u) = &url {
        check_target(&state, u).await?;
    }
    let patch = EndpointPatch {
        url,
        description: req.description,
        event_types,
        enabled: req.enabled,
    };
    let e = one(webhooks(
        &tenant,
        &caller.auth.ctx,
        WebhookCmd::Update(id, patch),
        "webhook endpoint",
    )
    .await?)?;
    Ok(Json(endpoint_of(e)))
}

/// Deletes an endpoint (owner) with its delivery log; its pending deliveries are dropped.
#[utoipa::path(delete, path = "/v1/auth/dashboard/tenants/{slug}/webhooks/{webhook_id}", tag = "webhooks",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("webhook_id" = String, Path, description = "The endpoint's id"),
    ),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden`, `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "No such endpoint", body = ErrorBody),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let (_, tenant, id) = caller.owner_item(&state, &id, "webhook endpoint")?;
    match endpoints(&tenant, &caller.auth.ctx, WebhookCmd::Delete(id)).await? {
        WebhookAnswer::Done => Ok(StatusCode::NO_CONTENT),
        _ => Err(unexpected()),
    }
}

/// A new signing secret (owner, re-authenticated in the last 5 minutes). The previous secret
/// keeps signing beside it for 24 hours (two signatures in `webhook-signature`), so the
/// receiver can switch without losing deliveries.
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/webhooks/{webhook_id}/rotate-secret", tag = "webhooks",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("webhook_id" = String, Path, description = "The endpoint's id"),
    ),
    responses(
        (status = 200, description = "The endpoint with its new secret (shown once)", body = IssuedWebhookResponse),
        ReauthRequired,
        (status = 403, description = "`dashboard/forbidden`, `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "No such endpoint", body = ErrorBody),
    ))]
pub async fn rotate_secret(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id)): Path<(String, String)>,
) -> Result<Json<IssuedWebhookResponse>, ApiError> {
    let (_, tenant, id) = caller.owner_item(&state, &id, "webhook endpoint")?;
    one(endpoints(&tenant, &caller.auth.ctx, WebhookCmd::Get(id)).await?)?;
    caller.auth.require_recent_reauth()?;
    let i = issued(endpoints(&tenant, &caller.auth.ctx, WebhookCmd::RotateSecret(id)).await?)?;
    Ok(Json(IssuedWebhookResponse::of(i)))
}

/// Sends a `webhook.test` event to this endpoint alone (owner). The answer is the queued
/// delivery; its outcome appears in the delivery log.
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/webhooks/{webhook_id}/test", tag = "webhooks",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("webhook_id" = String, Path, description = "The endpoint's id"),
    ),
    responses(
        (status = 202, description = "The test delivery, queued", body = WebhookDeliveryResponse),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden`, `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "No such endpoint", body = ErrorBody),
        (status = 409, description = "`webhook/endpoint_disabled`", body = ErrorBody),
    ))]
pub async fn test(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let (_, tenant, id) = caller.owner_item(&state, &id, "webhook endpoint")?;
    queued(endpoints(&tenant, &caller.auth.ctx, WebhookCmd::Test(id)).await?)
}

/// The endpoint's deliveries, newest first (any member): status, the last attempt's HTTP
/// status, latency and error, the attempts made and the next one.
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/webhooks/{webhook_id}/deliveries", tag = "webhooks",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("webhook_id" = String, Path, description = "The endpoint's id"),
        DeliveriesQuery,
    ),
    responses(
        (status = 200, description = "A page of deliveries", body = WebhookDeliveryList),
        (status = 400, description = "`validation/invalid_request` (cursor, limit)", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 404, description = "No such endpoint", body = ErrorBody),
    ))]
pub async fn deliveries(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id)): Path<(String, String)>,
    Query(q): Query<DeliveriesQuery>,
) -> Result<Json<WebhookDeliveryList>, ApiError> {
    let (_, tenant, id) = caller.member_item(&state, &id, "webhook endpoint")?;
    let mut e = FieldErrors::new();
    let limit = paging::limit(&mut e, q.limit.as_deref(), 20, 100);
    let before = paging::cursor(&mut e, q.cursor.as_deref(), paging::id_cursor);
    e.finish()?;
    let cmd = WebhookCmd::Deliveries {
        endpoint: id,
        before,
        limit,
    };
    let WebhookAnswer::Deliveries(page, next) = endpoints(&tenant, &caller.auth.ctx, cmd).await?
    else {
        return Err(unexpected());
    };
    Ok(Json(WebhookDeliveryList {
        data: page.into_iter().map(WebhookDeliveryResponse::of).collect(),
        pagination: Pagination::next(next.map(|n| n.to_string())),
    }))
}

/// Sends a delivery again now (owner): a pending one is attempted at once, a delivered or
/// failed one starts a new round of attempts (with the same `webhook-id`, so a receiver can
/// tell it already has it).
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver", tag = "webhooks",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("webhook_id" = String, Path, description = "The endpoint's id"),
        ("delivery_id" = String, Path, description = "The delivery's id (its event's id)"),
    ),
    responses(
        (status = 202, description = "The delivery, due now", body = WebhookDeliveryResponse),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden`, `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "No such endpoint or delivery (or its event is past the retention)", body = ErrorBody),
        (status = 409, description = "`webhook/endpoint_disabled`, `webhook/delivery_in_flight`", body = ErrorBody),
    ))]
pub async fn redeliver(
    State(state): State<AppState>,
    caller: TenantCaller,
    Path((_, id, delivery_id)): Path<(String, String, String)>,
) -> Result<Response, ApiError> {
    let (_, tenant) = caller.owner(&state)?;
    let endpoint = path_id(&id, "webhook delivery")?;
    let event = path_id(&delivery_id, "webhook delivery")?;
    let cmd = WebhookCmd::Redeliver { endpoint, event };
    queued(webhooks(&tenant, &caller.auth.ctx, cmd, "webhook delivery").await?)
}

/// How webhooks' refusals answer.
impl From<WebhookError> for ApiError {
    fn from(e: WebhookError) -> Self {
        match e {
            WebhookError::Limit => ApiError::new(
                StatusCode::CONFLICT,
                "webhook/limit_reached",
                "a tenant may have at most 10 webhook endpoints; delete one first",
            ),
            WebhookError::Disabled => ApiError::new(
                StatusCode::CONFLICT,
                "webhook/endpoint_disabled",
                "the endpoint is disabled: enable it (PATCH with \"enabled\": true) first",
            ),
            WebhookError::DeliveryInFlight => ApiError::new(
                StatusCode::CONFLICT,
                "webhook/delivery_in_flight",
                "an attempt of this delivery is under way; retry once it is recorded",
            ),
        }
    }
}
