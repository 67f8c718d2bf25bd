//! Middleware: the client address, the error envelope for bare error statuses, metrics.

use std::{
    net::{IpAddr, SocketAddr},
    time::Instant,
};

use axum::{
    extract::{ConnectInfo, FromRequestParts, MatchedPath, RawPathParams, Request, State},
    http::{header, HeaderName, HeaderValue, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
};
use ipnet::IpNet;
use tessera_actors::directory::MANAGEMENT_KEY_PREFIX;

use super::{
    bearer::{bearer_header, BearerHeader},
    error::ApiError,
    extract::{served_here, tenant_of_key, ClientIp, UnknownClient},
};
use crate::app::AppState;

/// Sets [`ClientIp`]: the peer address, unless the peer is a trusted proxy; then the nearest
/// address in `X-Forwarded-For` that is not a trusted proxy. When that hop is not an address
/// (`unknown`, an obfuscated identifier), sets [`UnknownClient`] instead: routes that count
/// by client address then answer 400 rather than count the request against the proxy.
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
    match resolve_client_ip(peer, &forwarded, &state.trusted_proxies) {
        Ok(ip) => {
            req.extensions_mut().insert(ClientIp(ip));
        }
        Err(UnknownClient) => {
            req.extensions_mut().insert(UnknownClient);
        }
    }
    next.run(req).await
}

/// Walks `X-Forwarded-For` from the right (the hop nearest us) while each hop is trusted.
/// Every address is canonical: an IPv4 peer of a dual-stack listener (`::ffff:a.b.c.d`) is
/// `a.b.c.d`, for the trusted-proxy check and for every limit counted by address. A hop that
/// is not an address, where the walk needs one, is an error: falling back to the proxy's own
/// address would put every such request in one bucket.
pub fn resolve_client_ip(
    peer: IpAddr,
    forwarded: &str,
    trusted: &[IpNet],
) -> Result<IpAddr, UnknownClient> {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|n| n.contains(ip));
    let peer = peer.to_canonical();
    if !is_trusted(&peer) {
        return Ok(peer);
    }
    let mut client = peer;
    for hop in forwarded
        .rsplit(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
    {
        let ip = parse_hop(hop).ok_or(UnknownClient)?;
        client = ip;
        if !is_trusted(&ip) {
            break;
        }
    }
    Ok(client)
}

/// One `X-Forwarded-For` hop: an address, possibly with a port (`192.0.2.1:4711`,
/// `[2001:db8::1]:4711`) or in brackets, made canonical.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    hop.parse::<IpAddr>()
        .ok()
        .or_else(|| hop.parse::<SocketAddr>().ok().map(|s| s.ip()))
        .or_else(|| {
            hop.strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .and_then(|h| h.parse::<IpAddr>().ok())
        })
        .map(|ip| ip.to_canonical())
}

/// On a cluster node (`[cluster]`), refuses a request for a tenant another node serves, or
/// none, before its handler runs (see [`served_here`]): the tenant of its `X-API-Key`, of a
/// management key (`Authorization: Bearer tmk_...`), or of the route's `{slug}`, as a front
/// router routes them. Routes that name their tenant only inside a token check it where
/// they read the token. Without `[cluster]` it passes everything.
pub async fn tenant_owner(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if !state.cluster.is_on() {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let mut tenants = Vec::with_capacity(2);
    if let Some(t) = tenant_of_key(&state, &parts.headers) {
        tenants.push(t.id);
    }
    if let BearerHeader::Token(key) = bearer_header(&parts.headers) {
        if key.starts_with(MANAGEMENT_KEY_PREFIX) && key.len() <= 128 {
            if let Some((t, _)) = state.directory.management_key(key) {
                tenants.push(t.id);
            }
        }
    }
    if let Ok(params) = RawPathParams::from_request_parts(&mut parts, &state).await {
        let slug = params
            .iter()
            .find(|(name, _)| *name == "slug")
            .map(|(_, v)| v);
        if let Some(t) = slug.and_then(|s| state.directory.tenant_for_slug(s)) {
            tenants.push(t.id);
        }
    }
    for tenant in tenants {
        if let Err(refusal) = served_here(&state, tenant) {
            return refusal.into_response();
        }
    }
    next.run(Request::from_parts(parts, body)).await
}

/// Gives every error status without a JSON body (routing's 404 and 405, the body limit, the
/// timeout) the standard error envelope, keeping headers such as `Allow`. The hosted pages'
/// own HTML error pages pass as they are.
pub async fn error_envelope(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let status = resp.status();
    let rendered = resp.headers().get(header::CONTENT_TYPE).is_some_and(|v| {
        v.as_bytes().starts_with(b"application/json") || v.as_bytes().starts_with(b"text/html")
    });
    if !(status.is_client_error() || status.is_server_error()) || rendered {
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

/// Adds `X-Service-Docs: <server.docs_url>` to every 429: where the limits are explained.
pub async fn service_docs(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    if resp.status() == StatusCode::TOO_MANY_REQUESTS {
        resp.headers_mut()
            .insert(SERVICE_DOCS, state.service_docs.clone());
    }
    resp
}

const SERVICE_DOCS: HeaderName = HeaderName::from_static("x-service-docs");

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
        let client = |peer: &str, xff: &str| resolve_client_ip(ip(peer), xff, &trusted);
        // Untrusted peer: its header is ignored.
        assert_eq!(client("1.2.3.4", "5.6.7.8"), Ok(ip("1.2.3.4")));
        assert_eq!(client("1.2.3.4", "unknown"), Ok(ip("1.2.3.4")));
        // Trusted peer: the nearest untrusted hop.
        assert_eq!(client("10.0.0.1", "5.6.7.8"), Ok(ip("5.6.7.8")));
        assert_eq!(
            client("10.0.0.1", "9.9.9.9, 5.6.7.8, 10.0.0.2"),
            Ok(ip("5.6.7.8"))
        );
        // A client's own junk to the left of the hop we need is never read.
        assert_eq!(client("10.0.0.1", "junk, 5.6.7.8"), Ok(ip("5.6.7.8")));
        // Ports and brackets, as some proxies write them.
        assert_eq!(client("10.0.0.1", "5.6.7.8:4711"), Ok(ip("5.6.7.8")));
        assert_eq!(
            client("10.0.0.1", "[2001:db8::1]:4711"),
            Ok(ip("2001:db8::1"))
        );
        assert_eq!(client("10.0.0.1", "[2001:db8::1]"), Ok(ip("2001:db8::1")));
        // A hop that is not an address where one is needed: no fallback to the proxy.
        assert_eq!(client("10.0.0.1", "junk"), Err(UnknownClient));
        assert_eq!(client("10.0.0.1", "5.6.7.8, unknown"), Err(UnknownClient));
        assert_eq!(
            client("10.0.0.1", "5.6.7.8, unknown, 10.0.0.2"),
            Err(UnknownClient)
        );
        // No header: the proxy's own request.
        assert_eq!(client("10.0.0.1", ""), Ok(ip("10.0.0.1")));
    }

    #[test]
    fn ipv4_mapped_addresses_are_ipv4() {
        let trusted: Vec<IpNet> = vec!["127.0.0.1/32".parse().unwrap()];
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // A dual-stack listener's IPv4 peer, trusted by its IPv4 address.
        assert_eq!(
            resolve_client_ip(ip("::ffff:127.0.0.1"), "::ffff:192.0.2.5", &trusted),
            Ok(ip("192.0.2.5"))
        );
        assert_eq!(
            resolve_client_ip(ip("::ffff:192.0.2.9"), "", &trusted),
            Ok(ip("192.0.2.9"))
        );
    }
}
