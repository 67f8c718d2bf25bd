//! The HTTP surface: routes, the middleware stack and the connection loop.
//!
//! Handlers parse, find the caller's tenant, send one message to an actor and render the reply.
//! They never touch storage.

pub mod accounts;
pub mod anonymous;
pub mod bearer;
pub mod dashboard;
pub mod error;
pub mod extract;
pub mod mfa;
pub mod middleware;
pub mod onboarding;
pub mod openapi;
pub mod passwordless;
pub mod platform;
pub mod sms;
pub mod step_up;
pub mod tenant;
pub mod wellknown;

use std::{convert::Infallible, future::Future, net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    body::Body,
    extract::{ConnectInfo, DefaultBodyLimit, Request},
    http::StatusCode,
    response::Response,
    Extension, Router,
};
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::{conn::auto, graceful::GracefulShutdown},
};
use tokio::{net::TcpListener, sync::Semaphore};
use tower::{ServiceBuilder, ServiceExt};
use tower_http::{
    request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer},
    timeout::TimeoutLayer,
    trace::TraceLayer,
};
use tracing::Span;
use utoipa::OpenApi;
use utoipa_axum::{router::OpenApiRouter, routes};

pub use crate::app::AppState;
use error::ApiError;

/// The routes and the OpenAPI document, made from the same `#[utoipa::path]` attributes so a
/// served route cannot be missing from the document.
pub fn routes() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (router, mut doc) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(platform::healthz))
        .routes(routes!(platform::readyz))
        .routes(routes!(platform::metrics))
        .routes(routes!(platform::openapi))
        .routes(routes!(onboarding::signup))
        .routes(routes!(tenant::current_tenant))
        .routes(routes!(tenant::tenant_by_slug))
        .routes(routes!(wellknown::jwks))
        .routes(routes!(wellknown::openid_configuration))
        .routes(routes!(accounts::register))
        .routes(routes!(anonymous::anonymous_signin))
        .routes(routes!(accounts::verify_email))
        .routes(routes!(accounts::resend_verification))
        .routes(routes!(accounts::login))
        .routes(routes!(accounts::refresh))
        .routes(routes!(accounts::me))
        .routes(routes!(accounts::logout))
        .routes(routes!(accounts::sessions))
        .routes(routes!(accounts::revoke_session))
        .routes(routes!(accounts::forgot_password))
        .routes(routes!(accounts::reset_password))
        .routes(routes!(accounts::change_password))
        .routes(routes!(passwordless::magic_link))
        .routes(routes!(passwordless::magic_link_verify))
        .routes(routes!(passwordless::email_otp))
        .routes(routes!(passwordless::email_otp_verify))
        .routes(routes!(sms::sms_otp))
        .routes(routes!(sms::sms_otp_verify))
        .routes(routes!(sms::phone_verify))
        .routes(routes!(sms::phone_confirm))
        .routes(routes!(sms::sms_test))
        .routes(routes!(mfa::setup))
        .routes(routes!(mfa::verify_setup))
        .routes(routes!(mfa::verify_mfa))
        .routes(routes!(mfa::disable))
        .routes(routes!(mfa::recovery_codes))
        .routes(routes!(step_up::password))
        .routes(routes!(step_up::email_otp_initiate))
        .routes(routes!(step_up::email_otp_verify))
        .routes(routes!(step_up::magic_link_initiate))
        .routes(routes!(step_up::magic_link_verify))
        .routes(routes!(step_up::link_provider))
        .routes(routes!(dashboard::session::login))
        .routes(routes!(dashboard::session::logout))
        .routes(routes!(dashboard::session::reauth))
        .routes(routes!(dashboard::session::tenants))
        .routes(routes!(dashboard::session::tenant))
        .routes(routes!(dashboard::session::rotate_api_key))
        .routes(routes!(
            dashboard::members::list,
            dashboard::members::invite
        ))
        .routes(routes!(dashboard::members::accept))
        .routes(routes!(
            dashboard::members::update,
            dashboard::members::remove
        ))
        .routes(routes!(dashboard::members::revoke))
        .routes(routes!(dashboard::account::verify_email))
        .routes(routes!(dashboard::account::resend_verification))
        .routes(routes!(dashboard::account::forgot_password))
        .routes(routes!(dashboard::account::reset_password))
        .routes(routes!(dashboard::audit::list))
        .routes(routes!(
            dashboard::settings::get_security,
            dashboard::settings::patch_security
        ))
        .routes(routes!(
            dashboard::settings::get_email_domains,
            dashboard::settings::put_email_domains
        ))
        .routes(routes!(
            dashboard::settings::get_anonymous,
            dashboard::settings::patch_anonymous
        ))
        .routes(routes!(
            dashboard::settings::get_roles,
            dashboard::settings::patch_roles
        ))
        .routes(routes!(
            dashboard::settings::get_passkey_domain,
            dashboard::settings::put_passkey_domain
        ))
        .routes(routes!(
            dashboard::settings::get_eudi,
            dashboard::settings::put_eudi
        ))
        .routes(routes!(
            dashboard::settings::get_eudi_age,
            dashboard::settings::put_eudi_age
        ))
        .split_for_parts();
    openapi::complete(&mut doc);
    (router, doc)
}

/// The complete application: routes, middleware and state.
pub fn app(state: AppState) -> Result<Router, serde_json::Error> {
    let (router, doc) = routes();
    let doc = platform::OpenApiJson(Arc::new(doc.to_json()?));
    let timeout = Duration::from_secs(state.config.server.request_timeout_secs);
    let body_limit = state.config.server.max_body_bytes;
    let stack = ServiceBuilder::new()
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request| {
                    let request_id = req
                        .headers()
                        .get("x-request-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    tracing::info_span!(
                        "request",
                        method = %req.method(),
                        route = %middleware::route_of(req),
                        request_id = %request_id,
                        tenant = tracing::field::Empty,
                    )
                })
                .on_request(())
                .on_response(|resp: &Response, latency: Duration, _: &Span| {
                    tracing::info!(
                        status = resp.status().as_u16(),
                        latency_ms = latency.as_secs_f64() * 1000.0,
                        "request"
                    );
                })
                .on_failure(()),
        )
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::metrics,
        ))
        .layer(axum::middleware::from_fn(middleware::error_envelope))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::client_ip,
        ))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            timeout,
        ))
        .layer(DefaultBodyLimit::max(body_limit));
    Ok(router
        .fallback(not_found)
        .layer(Extension(doc))
        .layer(stack)
        .with_state(state))
}

async fn not_found() -> ApiError {
    ApiError::for_status(StatusCode::NOT_FOUND)
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting and waits up to
/// `grace` for in-flight requests.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
    max_connections: usize,
) {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10));
    let graceful = GracefulShutdown::new();
    let permits = Arc::new(Semaphore::new(max_connections));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            _ = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let app = app.clone();
        let svc = hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
            let app = app.clone();
            async move {
                Ok::<_, Infallible>(
                    app.oneshot(req.map(Body::new))
                        .await
                        .unwrap_or_else(|e| match e {}),
                )
            }
        });
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), svc)
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    tracing::info!("no longer accepting connections; draining");
    tokio::select! {
        _ = graceful.shutdown() => tracing::info!("all connections drained"),
        _ = tokio::time::sleep(grace) => tracing::warn!("drain timed out; closing the rest"),
    }
}
