//! Middleware: the client address, the error envelope for bare error statuses, metrics.

use std::{
    net::{IpAddr, SocketAddr},
    time::Instant,
};

use axum::{
    extract::{ConnectInfo, MatchedPath, Request, State},
    http::{header, HeaderValue},
    middleware::Next,
    response::{IntoResponse, Response},
};
use ipnet::IpNet;

use super::{error::ApiError, extract::ClientIp, AppState};

/// Sets [`ClientIp`]: the peer address, unless the peer is a trusted proxy; then the nearest
/// address in `X-Forwarded-For` that is not a trusted proxy.
pub async fn client_ip(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
        .unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let forwarded = req
        .headers()
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    let ip = resolve_client_ip(peer, &forwarded, &state.trusted_proxies);
    req.extensions_mut().insert(ClientIp(ip));
    next.run(req).await
}

/// Walks `X-Forwarded-For` from the right (the hop nearest us) while each hop is trusted.
pub fn resolve_client_ip(peer: IpAddr, forwarded: &str, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|n| n.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let mut client = peer;
    for hop in forwarded
        .rsplit(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
    {
        let Ok(ip) = hop.parse::<IpAddr>() else {
            break;
        };
        client = ip;
        if !is_trusted(&ip) {
            break;
        }
    }
    client
}

/// Gives every error status without a JSON body (routing's 404 and 405, the body limit, the
/// timeout) the standard error envelope, keeping headers such as `Allow`.
pub async fn error_envelope(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return resp;
    }
    let (mut parts, _) = resp.into_parts();
    let mut fresh = ApiError::for_status(status).into_response();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if status == axum::http::StatusCode::SERVICE_UNAVAILABLE
        && !parts.headers.contains_key(header::RETRY_AFTER)
    {
        parts
            .headers
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    *fresh.headers_mut() = parts.headers;
    fresh
}

/// Counts each request by route template and status, and times it.
pub async fn metrics(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = match req.method().as_str() {
        m @ ("GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS") => m,
        _ => "OTHER",
    }
    .to_owned();
    let route = route_of(&req);
    let resp = next.run(req).await;
    state.metrics.observe(
        &method,
        &route,
        resp.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    resp
}

/// The route template of a request (`/v1/tenants/{slug}`), never its concrete path, so no
/// token in a path reaches a metric or a log.
pub fn route_of<B>(req: &axum::http::Request<B>) -> String {
    req.extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // Untrusted peer: its header is ignored.
        assert_eq!(
            resolve_client_ip(ip("1.2.3.4"), "5.6.7.8", &trusted),
            ip("1.2.3.4")
        );
        // Trusted peer: the nearest untrusted hop.
        assert_eq!(
            resolve_client_ip(ip("10.0.0.1"), "5.6.7.8", &trusted),
            ip("5.6.7.8")
        );
        assert_eq!(
            resolve_client_ip(ip("10.0.0.1"), "9.9.9.9, 5.6.7.8, 10.0.0.2", &trusted),
            ip("5.6.7.8")
        );
        // Garbage stops the walk at the last good hop.
        assert_eq!(
            resolve_client_ip(ip("10.0.0.1"), "junk", &trusted),
            ip("10.0.0.1")
        );
        assert_eq!(
            resolve_client_ip(ip("10.0.0.1"), "", &trusted),
            ip("10.0.0.1")
        );
    }
}
