//! Extractors: the JSON body (with the error envelope for every way it can be wrong), the
//! client's IP address, and the tenant named by `X-API-Key`.

use std::net::IpAddr;

use axum::{
    body::Bytes,
    extract::{FromRequest, FromRequestParts, Request},
    http::{header, request::Parts, StatusCode},
};
use serde::de::DeserializeOwned;
use tessera_actors::TenantHandle;

use super::{error::ApiError, AppState};

/// A JSON request body: 415 unless `application/json`, 413 over the size limit, 400
/// `validation/invalid_request` for broken JSON or a field of the wrong type, naming the field.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(req.headers().get(header::CONTENT_TYPE)) {
            return Err(ApiError::for_status(StatusCode::UNSUPPORTED_MEDIA_TYPE));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::for_status(StatusCode::PAYLOAD_TOO_LARGE)
            } else {
                ApiError::invalid_field("body", "the body could not be read")
            }
        })?;
        parse_json(&bytes).map(ApiJson)
    }
}

fn is_json(content_type: Option<&header::HeaderValue>) -> bool {
    let Some(ct) = content_type.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Parses `bytes` as `T`, naming the offending field (by its path) on failure. Request bodies
/// are JSON objects: anything else is refused before serde could read an array as a struct.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::invalid_field("body", format!("malformed JSON: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::invalid_field("body", "must be a JSON object"));
    }
    serde_path_to_error::deserialize::<_, T>(value).map_err(|err| {
        let path = err.path().to_string();
        let message = err.into_inner().to_string();
        let field = if path == "." || path.is_empty() {
            missing_field(&message).unwrap_or_else(|| "body".to_owned())
        } else {
            path
        };
        ApiError::invalid_field(&field, message)
    })
}

/// The field named by serde's "missing field `x`" / "unknown field `x`" messages.
fn missing_field(msg: &str) -> Option<String> {
    let start = msg.find('`')? + 1;
    let end = start + msg[start..].find('`')?;
    Some(msg[start..end].to_owned())
}

/// The client's address: the peer, or the first untrusted hop of `X-Forwarded-For` when the
/// peer is a trusted proxy; canonical (an IPv4-mapped IPv6 address is its IPv4 address). Set
/// by the `client_ip` middleware.
#[derive(Clone, Copy, Debug)]
pub struct ClientIp(pub IpAddr);

/// Set instead of [`ClientIp`] when a trusted proxy's `X-Forwarded-For` names the client with
/// something that is not an address (`unknown`, an obfuscated identifier). A route that needs
/// the client's address answers 400 `validation/invalid_request`: counting such requests
/// against the proxy's address would let one client's failures block every other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownClient;

impl<S: Send + Sync> FromRequestParts<S> for ClientIp {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        if let Some(ip) = parts.extensions.get::<ClientIp>() {
            return Ok(*ip);
        }
        if parts.extensions.get::<UnknownClient>().is_some() {
            return Err(ApiError::invalid_field(
                "X-Forwarded-For",
                "the hop added by the trusted proxy is not an IP address",
            ));
        }
        Err(ApiError::internal("client address missing"))
    }
}

/// The tenant whose `X-API-Key` came with the request.
pub struct ApiTenant(pub TenantHandle);

/// The tenant whose API key is in `headers`, if the header is there and the key is known.
pub fn tenant_of_key(state: &AppState, headers: &header::HeaderMap) -> Option<TenantHandle> {
    let key = headers.get(API_KEY_HEADER)?.to_str().ok()?;
    state.directory.tenant_for_api_key(key.trim())
}

pub const API_KEY_HEADER: &str = "x-api-key";

impl FromRequestParts<AppState> for ApiTenant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if !parts.headers.contains_key(API_KEY_HEADER) {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "auth/missing_api_key",
                "the X-API-Key header is required",
            ));
        }
        let tenant = tenant_of_key(state, &parts.headers).ok_or_else(|| {
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "auth/invalid_api_key",
                "the API key is not valid",
            )
        })?;
        tracing::Span::current().record("tenant", tenant.slug.as_str());
        Ok(ApiTenant(tenant))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct R {
        #[serde(default)]
        name: String,
        #[serde(default)]
        n: u32,
    }

    fn field_of(e: ApiError) -> String {
        let d = e.details.unwrap();
        d["fields"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone()
    }

    #[test]
    fn json_errors_name_the_field() {
        assert_eq!(
            field_of(parse_json::<R>(br#"{"n": "x"}"#).unwrap_err()),
            "n"
        );
        assert_eq!(
            field_of(parse_json::<R>(br#"{"name": 5}"#).unwrap_err()),
            "name"
        );
        assert_eq!(
            field_of(parse_json::<R>(br#"{"name": "#).unwrap_err()),
            "body"
        );
        assert_eq!(field_of(parse_json::<R>(br#"[]"#).unwrap_err()), "body");
        assert_eq!(field_of(parse_json::<R>(br#"{} x"#).unwrap_err()), "body");
        assert!(parse_json::<R>(br#"{"name": "a"}"#).is_ok());
    }

    #[test]
    fn json_content_types() {
        let v = |s: &'static str| header::HeaderValue::from_static(s);
        assert!(is_json(Some(&v("application/json"))));
        assert!(is_json(Some(&v("application/json; charset=utf-8"))));
        assert!(is_json(Some(&v("application/merge-patch+json"))));
        assert!(!is_json(Some(&v("text/plain"))));
        assert!(!is_json(None));
    }
}
