//! Cross-origin requests from browser apps.
//!
//! Two kinds of route, told apart by their template:
//! - **End-user API** (every `/v1/...` route outside the dashboard and onboarding): any origin
//!   may send a preflight, answered 204 without looking at a tenant (a preflight carries no
//!   API key). A real request from an origin is refused with 403 `cors/origin_not_allowed`,
//!   before its handler runs, when the API key's tenant lists `allowed_origins` and this
//!   origin is not on the list (nor one of the server's own); otherwise the origin is echoed.
//!   Never with credentials: end-user calls carry an API key and a bearer token, no cookie.
//! - **Dashboard** (`/v1/auth/dashboard/...`, `/v1/onboarding/...`, cookie sessions): same-origin
//!   unless the operator lists `server.dashboard_origins`; only those get CORS headers, with
//!   credentials.
//!
//! Platform routes (`/healthz`, `/readyz`, `/metrics`), the management-key routes
//! (`/v1/management/...`: back ends only) and unknown paths get no CORS headers.

use std::{collections::HashMap, sync::Arc};

use axum::{
    extract::{MatchedPath, Request, State},
    http::{header, HeaderMap, HeaderValue, Method, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
};

use super::{error::ApiError, extract::tenant_of_key};
use crate::{app::AppState, origin::normalize_origin};

/// Headers a browser may send on an end-user API call.
const END_USER_HEADERS: &str =
    "authorization, content-type, x-api-key, x-step-up-token, x-request-id, x-service-confirm";
/// Headers a browser may send on a dashboard call from a listed origin.
const DASHBOARD_HEADERS: &str =
    "authorization, content-type, x-csrf-token, x-request-id, x-service-confirm";
/// Answer headers a script may read.
const EXPOSED: &str = "Retry-After, X-Request-Id, WWW-Authenticate, X-Service-Docs";
/// How long a browser may reuse a preflight answer, in seconds.
const MAX_AGE: &str = "600";

/// Which CORS rules a route follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    EndUser,
    Dashboard,
}

fn scope(route: &str) -> Option<Scope> {
    if route.starts_with("/v1/auth/dashboard/") || route.starts_with("/v1/onboarding/") {
        Some(Scope::Dashboard)
    } else if route.starts_with("/v1/management/") {
        // Management keys are back-end secrets: no browser may call with one.
        None
    } else if route.starts_with("/v1/") {
        Some(Scope::EndUser)
    } else {
        None
    }
}

/// What the CORS middleware needs besides the application: each route's methods (from the
/// OpenAPI document, the same source as the router) and the origins that are always allowed.
#[derive(Clone)]
pub struct Cors {
    app: AppState,
    /// `Access-Control-Allow-Methods` per route template.
    methods: Arc<HashMap<String, HeaderValue>>,
    /// `server.dashboard_origins`, normalized.
    dashboard_origins: Arc<Vec<String>>,
    /// The server's own origins (base URL, accounts URL): its pages are never refused.
    own_origins: Arc<Vec<String>>,
}

impl Cors {
    pub fn new(app: AppState, doc: &utoipa::openapi::OpenApi) -> Self {
        let methods = doc
            .paths
            .paths
            .iter()
            .filter_map(|(path, item)| {
                let ops = [
                    ("GET", item.get.is_some()),
                    ("HEAD", item.head.is_some()),
                    ("POST", item.post.is_some()),
                    ("PUT", item.put.is_some()),
                    ("PATCH", item.patch.is_some()),
                    ("DELETE", item.delete.is_some()),
                ];
                let list: Vec<&str> = ops.iter().filter(|(_, on)| *on).map(|(m, _)| *m).collect();
                HeaderValue::from_str(&list.join(", "))
                    .ok()
                    .map(|v| (path.clone(), v))
            })
            .collect();
        let dashboard_origins = app
            .config
            .server
            .dashboard_origins
            .iter()
            .filter_map(|o| normalize_origin(o))
            .collect();
        let own_origins = [app.base_url.clone(), app.accounts_base()]
            .iter()
            .filter_map(|u| normalize_origin(u.trim_end_matches('/')))
            .collect();
        Cors {
            app,
            methods: Arc::new(methods),
            dashboard_origins: Arc::new(dashboard_origins),
            own_origins: Arc::new(own_origins),
        }
    }
}

/// Answers preflights and checks and marks cross-origin requests (see the module's rules).
pub async fn middleware(State(cors): State<Cors>, req: Request, next: Next) -> Response {
    let Some(route) = req.extensions().get::<MatchedPath>().map(|m| m.as_str()) else {
        return next.run(req).await;
    };
    let Some(scope) = scope(route) else {
        return next.run(req).await;
    };
    let methods = cors.methods.get(route).cloned();
    let origin = req.headers().get(header::ORIGIN).cloned();
    let preflight = req.method() == Method::OPTIONS
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    match (scope, origin) {
        (_, None) => {
            let mut resp = next.run(req).await;
            vary_origin(resp.headers_mut());
            resp
        }
        (Scope::EndUser, Some(origin)) => {
            if preflight {
                return preflight_answer(&origin, methods, END_USER_HEADERS, false);
            }
            if let Err(refused) = check_tenant_origin(&cors, req.headers(), &origin).await {
                return refused;
            }
            let mut resp = next.run(req).await;
            allow(resp.headers_mut(), origin, false);
            resp
        }
        (Scope::Dashboard, Some(origin)) => {
            let listed = origin
                .to_str()
                .is_ok_and(|o| cors.dashboard_origins.iter().any(|d| d == o));
            if preflight {
                if !listed {
                    return refused();
                }
                return preflight_answer(&origin, methods, DASHBOARD_HEADERS, true);
            }
            let mut resp = next.run(req).await;
            if listed {
                allow(resp.headers_mut(), origin, true);
            } else {
                vary_origin(resp.headers_mut());
            }
            resp
        }
    }
}

/// A real end-user request from `origin`: refused when the API key's tenant lists origins
/// and this one is neither listed nor the server's own. Without a known API key there is no
/// list to check; the handler answers 401.
async fn check_tenant_origin(
    cors: &Cors,
    headers: &HeaderMap,
    origin: &HeaderValue,
) -> Result<(), Response> {
    let Some(tenant) = tenant_of_key(&cors.app, headers) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("");
    if cors.own_origins.iter().any(|o| o == origin) {
        return Ok(());
    }
    let edge = tenant
        .edge()
        .await
        .map_err(|e| ApiError::from(e).into_response())?;
    if edge.allows_origin(origin) {
        Ok(())
    } else {
        tracing::debug!(tenant = %tenant.slug, "a request from an origin the tenant does not list was refused");
        Err(refused())
    }
}

fn refused() -> Response {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "cors/origin_not_allowed",
        "this origin may not call this API",
    )
    .into_response()
}

fn preflight_answer(
    origin: &HeaderValue,
    methods: Option<HeaderValue>,
    allowed_headers: &'static str,
    credentials: bool,
) -> Response {
    let mut resp = StatusCode::NO_CONTENT.into_response();
    let h = resp.headers_mut();
    allow_origin(h, origin.clone(), credentials);
    if let Some(m) = methods {
        h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, m);
    }
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(allowed_headers),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static(MAX_AGE),
    );
    resp
}

/// The headers of an answer a script on `origin` may read.
fn allow(h: &mut HeaderMap, origin: HeaderValue, credentials: bool) {
    allow_origin(h, origin, credentials);
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSED),
    );
}

/// `Access-Control-Allow-Origin`, with credentials when asked, and `Vary: Origin`: what every
/// CORS answer (preflight or real) to an allowed origin carries.
fn allow_origin(h: &mut HeaderMap, origin: HeaderValue, credentials: bool) {
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    if credentials {
        h.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
    }
    vary_origin(h);
}

/// Adds `Vary: Origin` unless the answer already varies on it.
fn vary_origin(h: &mut HeaderMap) {
    let present = h
        .get_all(header::VARY)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.trim().eq_ignore_ascii_case("origin"));
    if !present {
        h.append(header::VARY, HeaderValue::from_static("Origin"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_scoped_by_template() {
        assert_eq!(scope("/v1/auth/login"), Some(Scope::EndUser));
        assert_eq!(scope("/v1/users/me/phone/verify"), Some(Scope::EndUser));
        assert_eq!(
            scope("/v1/tenants/{slug}/.well-known/jwks.json"),
            Some(Scope::EndUser)
        );
        assert_eq!(scope("/v1/auth/dashboard/login"), Some(Scope::Dashboard));
        assert_eq!(scope("/v1/management/users"), None);
        assert_eq!(scope("/v1/onboarding/signup"), Some(Scope::Dashboard));
        assert_eq!(scope("/healthz"), None);
        assert_eq!(scope("/metrics"), None);
    }

    #[test]
    fn vary_is_added_once() {
        let mut h = HeaderMap::new();
        vary_origin(&mut h);
        vary_origin(&mut h);
        assert_eq!(h.get_all(header::VARY).iter().count(), 1);
        let mut h = HeaderMap::new();
        h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
        vary_origin(&mut h);
        assert_eq!(h.get_all(header::VARY).iter().count(), 2);
    }
}
