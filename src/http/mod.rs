//! The HTTP surface: routes, the middleware stack and the connection loop.
//!
//! Handlers parse, find the caller's tenant, send one message to an actor and render the reply.
//! They never touch storage.

pub mod accounts;
pub mod anonymous;
pub mod bearer;
pub mod catalog;
pub mod console;
pub mod cors;
pub mod dashboard;
pub mod dev_mail;
pub mod error;
pub mod error_responses;
pub mod eudi;
pub mod extract;
pub mod fields;
pub mod guardian;
pub mod hosted;
pub mod hosted_join;
pub mod mailed_links;
pub mod management;
pub mod mfa;
pub mod middleware;
pub mod my_agents;
pub mod new_credential;
pub mod oauth;
pub mod onboarding;
pub mod openapi;
pub mod organizations;
pub mod pages;
pub mod paging;
pub mod passkeys;
pub mod passwordless;
pub mod path_id;
pub mod platform;
pub mod reauth;
pub mod request_id;
pub mod responses;
pub mod sdk_policy;
pub mod sections;
pub mod social;
pub mod sso;
pub mod step_up;
pub mod tenant;
pub mod users;
pub mod users_me;
pub mod wellknown;

use std::{
    collections::HashMap,
    convert::Infallible,
    future::Future,
    net::{IpAddr, SocketAddr},
    sync::Arc,
    time::Duration,
};

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
use tessera_actors::throttle::throttle_ip;
use tokio::{net::TcpListener, sync::Semaphore, time::Instant};
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
/// served route cannot be missing from the document. `GET /metrics` is among them unless
/// `public_metrics` is false (it is then served on the management listener only).
pub fn routes(public_metrics: bool) -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let mut router = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(platform::healthz))
        .routes(routes!(platform::readyz));
    if public_metrics {
        router = router.routes(routes!(platform::metrics));
    }
    let router = router
        .routes(routes!(platform::openapi))
        .routes(routes!(sdk_policy::sdk_support_policy))
        .routes(routes!(onboarding::signup))
        .routes(routes!(tenant::current_tenant))
        .routes(routes!(tenant::tenant_by_slug))
        .routes(routes!(wellknown::jwks))
        .routes(routes!(wellknown::openid_configuration))
        .routes(routes!(wellknown::authorization_server))
        .routes(routes!(wellknown::authorization_server_root))
        .routes(routes!(oauth::register::register))
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
        .routes(routes!(accounts::change_email))
        .routes(routes!(passwordless::magic_link))
        .routes(routes!(passwordless::magic_link_verify))
        .routes(routes!(passwordless::token_exchange))
        .routes(routes!(passwordless::email_otp))
        .routes(routes!(passwordless::email_otp_verify))
        .routes(routes!(passwordless::sms_otp))
        .routes(routes!(passwordless::sms_otp_verify))
        .routes(routes!(users_me::phone_verify))
        .routes(routes!(users_me::phone_confirm))
        .routes(routes!(dashboard::sms_test::sms_test))
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
        .routes(routes!(passkeys::step_up_options))
        .routes(routes!(passkeys::step_up_verify))
        .routes(routes!(passkeys::register_begin))
        .routes(routes!(passkeys::register_finish))
        .routes(routes!(passkeys::assert_begin))
        .routes(routes!(passkeys::assert_finish))
        .routes(routes!(social::session))
        .routes(routes!(eudi::initiate_login))
        .routes(routes!(eudi::initiate_age))
        .routes(routes!(eudi::request_get, eudi::request_post))
        .routes(routes!(eudi::response))
        .routes(routes!(eudi::result_login))
        .routes(routes!(eudi::result_age))
        .routes(routes!(guardian::request::parental_consent))
        .routes(routes!(
            guardian::consent::consent_get,
            guardian::consent::consent_post
        ))
        .routes(routes!(guardian::wallet::consent_wallet))
        .routes(routes!(guardian::request::management_link))
        .routes(routes!(
            guardian::portal::portal_get,
            guardian::portal::portal_post
        ))
        .routes(routes!(guardian::export::export_download))
        .routes(routes!(passkeys::list))
        .routes(routes!(passkeys::rename, passkeys::delete))
        .routes(routes!(users_me::link_provider))
        .routes(routes!(users_me::identities))
        .routes(routes!(users_me::unlink))
        .routes(routes!(users_me::provider_tokens))
        .routes(routes!(my_agents::list))
        .routes(routes!(my_agents::revoke))
        .routes(routes!(my_agents::restore))
        .routes(routes!(my_agents::requests))
        .routes(routes!(my_agents::approve))
        .routes(routes!(my_agents::deny))
        .routes(routes!(dashboard::session::login))
        .routes(routes!(dashboard::session::login_mfa))
        .routes(routes!(dashboard::factors::account))
        .routes(routes!(
            dashboard::factors::totp_setup,
            dashboard::factors::totp_remove
        ))
        .routes(routes!(dashboard::factors::totp_confirm))
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
        .routes(routes!(dashboard::activity::get))
        .routes(routes!(
            dashboard::settings::security::get_security,
            dashboard::settings::security::patch_security
        ))
        .routes(routes!(
            dashboard::settings::email_domains::get_email_domains,
            dashboard::settings::email_domains::put_email_domains
        ))
        .routes(routes!(
            dashboard::settings::anonymous::get_anonymous,
            dashboard::settings::anonymous::patch_anonymous
        ))
        .routes(routes!(
            dashboard::settings::roles::get_roles,
            dashboard::settings::roles::patch_roles
        ))
        .routes(routes!(
            dashboard::settings::passkey_domain::get_passkey_domain,
            dashboard::settings::passkey_domain::put_passkey_domain
        ))
        .routes(routes!(
            dashboard::settings::wallet::get_eudi,
            dashboard::settings::wallet::put_eudi
        ))
        .routes(routes!(
            dashboard::settings::wallet_age::get_eudi_age,
            dashboard::settings::wallet_age::put_eudi_age
        ))
        .routes(routes!(
            dashboard::settings::urls::get_cors,
            dashboard::settings::urls::put_cors
        ))
        .routes(routes!(
            dashboard::settings::users::get_users,
            dashboard::settings::users::patch_users
        ))
        .routes(routes!(
            dashboard::settings::urls::get_urls,
            dashboard::settings::urls::put_urls
        ))
        .routes(routes!(
            dashboard::settings::agents::get_agents,
            dashboard::settings::agents::patch_agents
        ))
        .routes(routes!(
            dashboard::settings::branding::get_branding,
            dashboard::settings::branding::patch_branding
        ))
        .routes(routes!(
            dashboard::settings::minors::get_minors,
            dashboard::settings::minors::put_minors
        ))
        .routes(routes!(
            dashboard::social::get_provider,
            dashboard::social::put_provider
        ))
        .routes(routes!(users::dashboard_list, users::dashboard_create))
        .routes(routes!(
            users::dashboard_show,
            users::dashboard_update,
            users::dashboard_delete
        ))
        .routes(routes!(users::dashboard_act))
        .routes(routes!(
            dashboard::management_keys::list,
            dashboard::management_keys::create
        ))
        .routes(routes!(dashboard::management_keys::revoke))
        .routes(routes!(
            dashboard::oauth_clients::list,
            dashboard::oauth_clients::create
        ))
        .routes(routes!(
            dashboard::oauth_clients::show,
            dashboard::oauth_clients::update,
            dashboard::oauth_clients::delete
        ))
        .routes(routes!(dashboard::oauth_clients::rotate_secret))
        .routes(routes!(dashboard::agents::list, dashboard::agents::create))
        .routes(routes!(
            dashboard::agents::show,
            dashboard::agents::update,
            dashboard::agents::revoke
        ))
        .routes(routes!(dashboard::agents::rotate_secret))
        .routes(routes!(dashboard::agents::activity))
        .routes(routes!(
            dashboard::webhooks::list,
            dashboard::webhooks::create
        ))
        .routes(routes!(
            dashboard::webhooks::show,
            dashboard::webhooks::update,
            dashboard::webhooks::delete
        ))
        .routes(routes!(dashboard::webhooks::rotate_secret))
        .routes(routes!(dashboard::webhooks::test))
        .routes(routes!(dashboard::webhooks::deliveries))
        .routes(routes!(dashboard::webhooks::redeliver))
        .routes(routes!(oauth::authorize::authorize))
        .routes(routes!(oauth::authorize::consent))
        .routes(routes!(oauth::token::token))
        .routes(routes!(oauth::token::revoke))
        .routes(routes!(oauth::token::introspect))
        .routes(routes!(oauth::agents::backchannel))
        .routes(routes!(oauth::agents::device_authorization))
        .routes(routes!(
            oauth::token::userinfo_get,
            oauth::token::userinfo_post
        ))
        .routes(routes!(oauth::logout::end_session))
        .routes(routes!(oauth::consents::list))
        .routes(routes!(oauth::consents::withdraw))
        .routes(routes!(catalog::list, catalog::register))
        .routes(routes!(catalog::delete))
        .routes(routes!(management::current_key))
        .routes(routes!(users::key_list, users::key_create))
        .routes(routes!(
            users::key_show,
            users::key_update,
            users::key_delete
        ))
        .routes(routes!(users::key_act))
        .routes(routes!(users_me::export))
        .routes(routes!(users_me::delete_me));
    let router = organization_routes(router);
    let (router, mut doc) = router.split_for_parts();
    organizations::mirror(&mut doc);
    openapi::complete(&mut doc);
    (router, doc)
}

/// Organizations: the dashboard's routes (documented) and their management-key copies (the
/// same handlers; documented by `organizations::mirror`), and the users' routes.
fn organization_routes(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    use axum::routing::{delete, get, patch, put};
    use organizations::{admin, connections, domains, me, MANAGEMENT_PREFIX as M};
    router
        .routes(routes!(admin::list, admin::create))
        .routes(routes!(admin::show, admin::update, admin::delete))
        .routes(routes!(admin::members, admin::add_member))
        .routes(routes!(admin::update_member, admin::remove_member))
        .routes(routes!(admin::invitations, admin::invite))
        .routes(routes!(admin::revoke_invitation))
        .routes(routes!(domains::list, domains::add))
        .routes(routes!(domains::update, domains::remove))
        .routes(routes!(domains::verify))
        .routes(routes!(connections::list, connections::create))
        .routes(routes!(
            connections::show,
            connections::update,
            connections::delete
        ))
        .route(
            &format!("{M}/organizations/{{org_id}}/connections"),
            get(connections::list).post(connections::create),
        )
        .route(
            &format!("{M}/organizations/{{org_id}}/connections/{{connection_id}}"),
            get(connections::show)
                .patch(connections::update)
                .delete(connections::delete),
        )
        .routes(routes!(sso::discover))
        .routes(routes!(sso::session))
        .route("/sso/{slug}/{connection_id}/start", get(sso::start))
        .route("/sso/{slug}/{connection_id}/callback", get(sso::callback))
        .route(
            "/sso/{slug}/{connection_id}/acs",
            axum::routing::post(sso::acs),
        )
        .route("/sso/{slug}/{connection_id}/metadata", get(sso::metadata))
        .route(
            &format!("{M}/organizations/{{org_id}}/domains"),
            get(domains::list).post(domains::add),
        )
        .route(
            &format!("{M}/organizations/{{org_id}}/domains/{{domain}}"),
            patch(domains::update).delete(domains::remove),
        )
        .route(
            &format!("{M}/organizations/{{org_id}}/domains/{{domain}}/verify"),
            axum::routing::post(domains::verify),
        )
        .routes(routes!(admin::roles))
        .routes(routes!(admin::put_role, admin::delete_role))
        .route(
            &format!("{M}/organizations"),
            get(admin::list).post(admin::create),
        )
        .route(
            &format!("{M}/organizations/{{org_id}}"),
            get(admin::show).patch(admin::update).delete(admin::delete),
        )
        .route(
            &format!("{M}/organizations/{{org_id}}/members"),
            get(admin::members).post(admin::add_member),
        )
        .route(
            &format!("{M}/organizations/{{org_id}}/members/{{user_id}}"),
            patch(admin::update_member).delete(admin::remove_member),
        )
        .route(
            &format!("{M}/organizations/{{org_id}}/invitations"),
            get(admin::invitations).post(admin::invite),
        )
        .route(
            &format!("{M}/organizations/{{org_id}}/invitations/{{email}}"),
            delete(admin::revoke_invitation),
        )
        .route(&format!("{M}/organization-roles"), get(admin::roles))
        .route(
            &format!("{M}/organization-roles/{{role}}"),
            put(admin::put_role).delete(admin::delete_role),
        )
        .routes(routes!(me::mine))
        .routes(routes!(me::switch))
        .routes(routes!(me::switch_out))
        .routes(routes!(me::preview))
        .routes(routes!(me::accept))
}

/// The complete application: routes, middleware and state.
pub fn app(state: AppState) -> Result<Router, serde_json::Error> {
    let (router, doc) = routes(state.config.server.metrics_listen.is_empty());
    let cors = cors::Cors::new(state.clone(), &doc);
    let console_doc = console::ApiDoc(Arc::new(serde_json::to_value(&doc)?));
    let doc = platform::OpenApiJson(Arc::new(doc.to_json()?));
    let sdk_policy = sdk_policy::Served::new(state.config.sdk.policy.as_deref())?;
    let timeout = Duration::from_secs(state.config.server.request_timeout_secs);
    let body_limit = state.config.server.max_body_bytes;
    let stack = ServiceBuilder::new()
        .layer(axum::middleware::from_fn(request_id::sanitise))
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
            middleware::service_docs,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::client_ip,
        ))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            timeout,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::tenant_owner,
        ))
        .layer(axum::middleware::from_fn_with_state(cors, cors::middleware))
        .layer(DefaultBodyLimit::max(body_limit));
    // Development only, and refused by the configuration anywhere but on loopback.
    let router = if state.config.mail.dev_viewer {
        router.merge(dev_mail::router())
    } else {
        router
    };
    Ok(router
        .merge(hosted::router())
        .merge(hosted_join::router())
        .merge(dashboard::pages::router())
        .merge(console::router(console_doc))
        .merge(oauth::browser::router())
        .merge(oauth::account::router())
        .route(
            "/oauth/{slug}/authorize",
            axum::routing::get(hosted_authorize),
        )
        .route(
            "/oauth/{slug}/logout",
            axum::routing::get(oauth::logout::logout_page).post(oauth::logout::logout_submit),
        )
        .route(
            "/oauth/{slug}/callback",
            axum::routing::get(social::callback_get).post(social::callback_post),
        )
        .route(
            "/agent-request",
            axum::routing::get(oauth::agent_pages::request_page)
                .post(oauth::agent_pages::request_submit),
        )
        .route(
            "/oauth/{slug}/device",
            axum::routing::get(oauth::agent_pages::device_page)
                .post(oauth::agent_pages::device_submit),
        )
        .route("/eudi/{request_id}", axum::routing::get(eudi::page))
        .route(
            "/oauth/{slug}/link-confirm",
            axum::routing::get(social::link_confirm),
        )
        .fallback(not_found)
        .layer(Extension(doc))
        .layer(Extension(sdk_policy))
        .layer(stack)
        .with_state(state))
}

/// The management listener's application (`server.metrics_listen`): `GET /metrics` and
/// nothing else.
pub fn management_app(state: AppState) -> Router {
    Router::new()
        .route("/metrics", axum::routing::get(platform::metrics))
        .fallback(not_found)
        .layer(axum::middleware::from_fn(middleware::error_envelope))
        .with_state(state)
}

/// `GET /oauth/{name}/authorize` at the accounts URL: a social sign-in (spec 4.2) when `name`
/// is a provider's and the query has `tenant_id`, else the authorization server's hosted
/// sign-in page of the tenant whose slug `name` is.
async fn hosted_authorize(
    axum::extract::State(state): axum::extract::State<AppState>,
    req: axum::extract::Request,
) -> axum::response::Response {
    use axum::handler::Handler;
    let name = req.uri().path().split('/').nth(2).unwrap_or("").to_owned();
    if social::is_social_authorize(&name, req.uri().query()) {
        Handler::call(social::authorize, req, state).await
    } else {
        Handler::call(oauth::browser::authorize_page, req, state).await
    }
}

async fn not_found() -> ApiError {
    ApiError::for_status(StatusCode::NOT_FOUND)
}

/// How connections are admitted and how long they may sit silent (`[server]`).
#[derive(Clone, Copy, Debug)]
pub struct ConnectionPolicy {
    /// Connections served at once; more wait in the kernel's backlog.
    pub max_connections: usize,
    /// Connections one peer address (IPv6: one /64) may hold; 0: no cap.
    pub max_per_peer: usize,
    /// From accept until the first request's head is complete.
    pub header_read_timeout: Duration,
    /// From the end of an answer until the next request's head is complete.
    pub keep_alive_timeout: Duration,
    /// How long shutdown waits for in-flight requests.
    pub grace: Duration,
}

impl ConnectionPolicy {
    pub fn from_config(server: &crate::config::ServerConfig) -> Self {
        ConnectionPolicy {
            max_connections: server.max_connections,
            max_per_peer: server.max_connections_per_ip,
            header_read_timeout: Duration::from_secs(server.header_read_timeout_secs),
            keep_alive_timeout: Duration::from_secs(server.keep_alive_timeout_secs),
            grace: Duration::from_secs(server.shutdown_grace_secs),
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting and waits up to
/// `policy.grace` for in-flight requests.
///
/// Each connection has a watchdog: until its first request arrives it may stay silent for
/// `header_read_timeout`, and between requests for `keep_alive_timeout`; then it is closed.
/// This covers every state hyper's own header timer does not (the HTTP/1-or-2 sniff of a new
/// connection, HTTP/2). A request under way (handler and answer) is bounded by the request
/// timeout instead. A peer over its connection cap gets a 503 and a closed connection.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()>,
    policy: ConnectionPolicy,
) {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(policy.keep_alive_timeout);
    builder.http2().timer(TokioTimer::new());
    let graceful = GracefulShutdown::new();
    let permits = Arc::new(Semaphore::new(policy.max_connections));
    let peers = PeerCounts::default();
    let over_cap = over_cap_answer();
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
        let Some(slot) = peers.admit(peer.ip(), policy.max_per_peer) else {
            tracing::debug!("a peer is over its connection cap; refused");
            // Best effort: a full socket buffer drops the answer, never blocks the loop.
            let _ = stream.try_write(&over_cap);
            drop(stream);
            continue;
        };
        let activity = Arc::new(Activity::new());
        let app = app.clone();
        let on_request = activity.clone();
        let svc = hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
            let app = app.clone();
            let busy = RequestUnderWay::begin(on_request.clone());
            async move {
                let resp = app
                    .oneshot(req.map(Body::new))
                    .await
                    .unwrap_or_else(|e| match e {});
                // The request is under way until its answer's body is sent (or dropped).
                Ok::<_, Infallible>(resp.map(|body| Body::new(TrackedBody { body, _busy: busy })))
            }
        });
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), svc)
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            tokio::pin!(conn);
            // The watchdog looks only at its deadlines, never at each request: while a
            // request is under way it looks again `keep_alive_timeout` later, which is before
            // any deadline that request's end can set.
            loop {
                let check = activity
                    .deadline(&policy)
                    .unwrap_or_else(|| Instant::now() + policy.keep_alive_timeout);
                tokio::select! {
                    r = &mut conn => {
                        if let Err(e) = r {
                            tracing::debug!(error = %e, "connection ended with an error");
                        }
                        break;
                    }
                    _ = tokio::time::sleep_until(check) => {
                        if activity.deadline(&policy).is_some_and(|d| d <= Instant::now()) {
                            tracing::debug!("closing a connection silent for too long");
                            break;
                        }
                    }
                }
            }
            drop(permit);
            drop(slot);
        });
    }
    drop(listener);
    tracing::info!("no longer accepting connections; draining");
    tokio::select! {
        _ = graceful.shutdown() => tracing::info!("all connections drained"),
        _ = tokio::time::sleep(policy.grace) => tracing::warn!("drain timed out; closing the rest"),
    }
}

/// The answer to a connection over its peer's cap; the connection is closed after it.
fn over_cap_answer() -> Vec<u8> {
    let body = r#"{"error":{"code":"service/unavailable","message":"too many connections from this address"}}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// What a connection's watchdog needs: requests under way, and since when it has been idle.
struct Activity {
    accepted: Instant,
    state: std::sync::Mutex<ActivityState>,
}

#[derive(Clone, Copy)]
struct ActivityState {
    under_way: usize,
    /// The end of the last answer; `None` until the first request.
    idle_since: Option<Instant>,
}

impl Activity {
    fn new() -> Self {
        Activity {
            accepted: Instant::now(),
            state: std::sync::Mutex::new(ActivityState {
                under_way: 0,
                idle_since: None,
            }),
        }
    }

    fn update(&self, f: impl FnOnce(&mut ActivityState)) {
        if let Ok(mut s) = self.state.lock() {
            f(&mut s);
        }
    }

    /// When the connection is to be closed unless something happens; `None` while a request
    /// is under way.
    fn deadline(&self, policy: &ConnectionPolicy) -> Option<Instant> {
        let s = *self.state.lock().ok()?;
        if s.under_way > 0 {
            return None;
        }
        Some(match s.idle_since {
            None => self.accepted + policy.header_read_timeout,
            Some(t) => t + policy.keep_alive_timeout,
        })
    }
}

/// One request under way on a connection, from its head until its answer is sent.
struct RequestUnderWay(Arc<Activity>);

impl RequestUnderWay {
    fn begin(activity: Arc<Activity>) -> Self {
        activity.update(|s| s.under_way += 1);
        RequestUnderWay(activity)
    }
}

impl Drop for RequestUnderWay {
    fn drop(&mut self) {
        self.0.update(|s| {
            s.under_way = s.under_way.saturating_sub(1);
            s.idle_since = Some(Instant::now());
        });
    }
}

/// An answer's body that marks its request finished when sent or dropped.
struct TrackedBody {
    body: Body,
    _busy: RequestUnderWay,
}

impl hyper::body::Body for TrackedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        hyper::body::Body::poll_frame(std::pin::Pin::new(&mut self.body), cx)
    }

    fn is_end_stream(&self) -> bool {
        hyper::body::Body::is_end_stream(&self.body)
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::Body::size_hint(&self.body)
    }
}

/// Open connections per peer bucket (IPv4 address, IPv6 /64).
#[derive(Clone, Default)]
struct PeerCounts(Arc<std::sync::Mutex<HashMap<IpAddr, usize>>>);

impl PeerCounts {
    /// A slot for one more connection from `peer`, or `None` when it holds `cap` already.
    fn admit(&self, peer: IpAddr, cap: usize) -> Option<PeerSlot> {
        if cap == 0 {
            return Some(PeerSlot(None));
        }
        let key = throttle_ip(peer);
        let mut counts = self.0.lock().ok()?;
        let n = counts.entry(key).or_insert(0);
        if *n >= cap {
            return None;
        }
        *n += 1;
        Some(PeerSlot(Some((self.clone(), key))))
    }
}

/// Gives its connection's place back when the connection ends.
struct PeerSlot(Option<(PeerCounts, IpAddr)>);

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let Some((counts, key)) = self.0.take() else {
            return;
        };
        let Ok(mut map) = counts.0.lock() else {
            return;
        };
        if let Some(n) = map.get_mut(&key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&key);
            }
        }
    }
}
