//! Extractors: the JSON body (with the error envelope for every way it can be wrong), the
//! client's IP address, the tenant named by `X-API-Key`, and the audit context of a request.

use std::net::IpAddr;

use axum::{
    body::Bytes,
    extract::{FromRequest, FromRequestParts, Request},
    http::{header, request::Parts, HeaderMap, HeaderName, HeaderValue, StatusCode},
};
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use tessera_actors::{tenant::audit::AuditContext, TenantHandle};
use tessera_storage::TenantId;

use super::error::ApiError;
use crate::{app::AppState, cluster::Refusal};

/// A JSON request body: 415 unless `application/json` ([`is_json`]), 413 over the size limit,
/// 400 `validation/invalid_request` for broken JSON, a repeated key or a field of the wrong
/// type, naming the field.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(req.headers()) {
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

/// A body that may be absent: no bytes at all means the defaults. Anything else, even only
/// whitespace, is a JSON body: 415 unless [`is_json`], 400 unless it parses.
pub fn optional_json<T: DeserializeOwned + Default>(
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<T, ApiError> {
    if body.is_empty() {
        return Ok(T::default());
    }
    if !is_json(headers) {
        return Err(ApiError::for_status(StatusCode::UNSUPPORTED_MEDIA_TYPE));
    }
    parse_json(body)
}

/// Whether a request's body is declared as the JSON this API reads: exactly one
/// `Content-Type`, `application/json`, with at most the parameter `charset=utf-8` (names and
/// values in any case, the value possibly quoted). Structured-syntax types
/// (`application/merge-patch+json`), other parameters and other charsets are refused: each
/// would promise semantics or an encoding this parser does not implement.
pub fn is_json(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(header::CONTENT_TYPE).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return false;
    };
    let Some(mime) = value
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse::<mime::Mime>().ok())
    else {
        return false;
    };
    mime.essence_str() == "application/json"
        && mime.params().count() <= 1
        && mime
            .params()
            .all(|(name, value)| name == "charset" && value == "utf-8")
}

/// Parses `bytes` as `T`, naming the offending field (by its path) on failure. Request bodies
/// are JSON objects: anything else is refused before serde could read an array as a struct.
/// An object with a repeated key, at any depth, is refused naming the key's path: taking
/// either copy would let two readers of one body see different requests.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let value = strict_value(bytes)?;
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

/// `bytes` as one JSON value (nothing but whitespace after it), every object's keys distinct.
fn strict_value(bytes: &[u8]) -> Result<Value, ApiError> {
    let mut path = Vec::new();
    let mut duplicate = None;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = StrictValue {
        path: &mut path,
        duplicate: &mut duplicate,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    match (parsed, duplicate) {
        (Ok(v), _) => Ok(v),
        (Err(_), Some(field)) => Err(ApiError::invalid_field(
            &field,
            "duplicate key: each key may appear once in an object",
        )),
        (Err(e), None) => Err(ApiError::invalid_field(
            "body",
            format!("malformed JSON: {e}"),
        )),
    }
}

/// One step of a path into a JSON value.
enum Step {
    Key(String),
    Index(usize),
}

/// A path as `serde_path_to_error` writes it: `oauth_params.scope`, `items[2].name`.
fn render(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// Builds a [`Value`] as `Value::deserialize` does, but fails on an object's second copy of
/// a key, leaving that key's path in `duplicate`. serde_json's own nesting limit still holds.
struct StrictValue<'a> {
    /// Where the value being read sits.
    path: &'a mut Vec<Step>,
    duplicate: &'a mut Option<String>,
}

impl StrictValue<'_> {
    fn child(&mut self) -> StrictValue<'_> {
        StrictValue {
            path: &mut *self.path,
            duplicate: &mut *self.duplicate,
        }
    }
}

impl<'de> DeserializeSeed<'de> for StrictValue<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.path.push(Step::Index(items.len()));
            let item = seq.next_element_seed(self.child())?;
            self.path.pop();
            match item {
                Some(v) => items.push(v),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let repeated = object.contains_key(&key);
            self.path.push(Step::Key(key));
            if repeated {
                *self.duplicate = Some(render(self.path));
                return Err(de::Error::custom("duplicate key"));
            }
            let value = map.next_value_seed(self.child())?;
            let Some(Step::Key(key)) = self.path.pop() else {
                return Err(de::Error::custom("path out of step"));
            };
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
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

/// The header of a cluster node's refusal that names the node serving the tenant.
pub const TENANT_OWNER_HEADER: &str = "tessera-tenant-owner";

/// Whether this node serves `tenant` (`[cluster]`; always without it): else 503
/// `cluster/tenant_elsewhere` with the serving node's URL in `Tessera-Tenant-Owner`, or
/// `cluster/tenant_unowned` while no node holds the tenant; both with `Retry-After`.
pub fn served_here(state: &crate::app::App, tenant: TenantId) -> Result<(), ApiError> {
    let refusal = match state.cluster.admit(tenant) {
        Ok(()) => return Ok(()),
        Err(r) => r,
    };
    let retry = HeaderValue::from_str(&state.cluster.retry_after_secs().to_string())
        .unwrap_or(HeaderValue::from_static("1"));
    let error = match refusal {
        Refusal::Elsewhere(url) => {
            let e = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "cluster/tenant_elsewhere",
                "this tenant is served by another node; send the request there",
            );
            match HeaderValue::from_str(&url) {
                Ok(owner) => e.with_header(HeaderName::from_static(TENANT_OWNER_HEADER), owner),
                Err(_) => e,
            }
        }
        Refusal::Unowned => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "cluster/tenant_unowned",
            "no node serves this tenant at the moment; retry shortly",
        ),
    };
    Err(error.with_header(header::RETRY_AFTER, retry))
}

/// The tenant a public route names by its slug (`/v1/tenants/{slug}/...`): 404
/// `resource/not_found` for none.
pub fn tenant_by_slug(state: &AppState, slug: &str) -> Result<TenantHandle, ApiError> {
    state
        .directory
        .tenant_for_slug(slug)
        .ok_or_else(|| ApiError::not_found("tenant"))
}

/// The audit context of a request before it names an actor (a signed-in caller's extractor
/// adds one): keyed hash of the client address, user-agent family.
pub struct RequestCtx(pub AuditContext);

impl FromRequestParts<AppState> for RequestCtx {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        Ok(RequestCtx(audit_context(state, parts, None)))
    }
}

/// The audit context of a request: keyed hash of the client address, user-agent family.
pub fn audit_context(state: &AppState, parts: &Parts, actor: Option<uuid::Uuid>) -> AuditContext {
    let ip = parts.extensions.get::<ClientIp>().map(|c| c.0);
    AuditContext {
        actor,
        ip_hash: ip.map(|ip| hex::encode(state.ip_hasher.hash(ip.to_string().as_bytes()))),
        ua_family: parts
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(ua_family),
        management_key: None,
        ua_hash: parts
            .headers
            .get(header::USER_AGENT)
            .map(|v| hex::encode(state.ip_hasher.hash(&[b"ua:", v.as_bytes()].concat()))),
    }
}

/// A coarse browser or client family from a User-Agent: never the full string.
pub fn ua_family(ua: &str) -> String {
    let ua = ua.to_ascii_lowercase();
    let family = if ua.contains("edg/") {
        "edge"
    } else if ua.contains("firefox/") {
        "firefox"
    } else if ua.contains("chrome/") || ua.contains("chromium/") {
        "chrome"
    } else if ua.contains("safari/") {
        "safari"
    } else if ua.starts_with("curl/") {
        "curl"
    } else if ua.contains("reqwest") || ua.contains("python") || ua.contains("go-http") {
        "library"
    } else {
        "other"
    };
    family.to_owned()
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

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Nested {
        #[serde(default)]
        email: String,
        #[serde(default)]
        oauth_params: Option<Value>,
    }

    #[test]
    fn repeated_keys_are_refused_at_any_depth() {
        let dup = |body: &str| field_of(parse_json::<Nested>(body.as_bytes()).unwrap_err());
        assert_eq!(dup(r#"{"email":"a@x","email":"b@x"}"#), "email");
        // The same key twice with the same value is still two keys.
        assert_eq!(dup(r#"{"email":"a@x","email":"a@x"}"#), "email");
        assert_eq!(
            dup(r#"{"oauth_params":{"scope":"a","state":"s","scope":"b"}}"#),
            "oauth_params.scope"
        );
        assert_eq!(
            dup(r#"{"oauth_params":{"list":[{"k":1},{"k":1,"k":2}]}}"#),
            "oauth_params.list[1].k"
        );
        // A repeat inside a value the type ignores is refused too.
        assert_eq!(dup(r#"{"unknown":{"a":1,"a":2}}"#), "unknown.a");
        // Distinct keys, the same key in sibling objects, escapes that differ in spelling
        // but not in meaning.
        assert!(parse_json::<Nested>(
            br#"{"email":"a@x","oauth_params":{"a":{"k":1},"b":{"k":1}}}"#
        )
        .is_ok());
        assert_eq!(dup(r#"{"email":"a@x","\u0065mail":"b@x"}"#), "email");
        let e = parse_json::<Nested>(br#"{"email":"a@x","email":"b@x"}"#).unwrap_err();
        assert_eq!(e.code, "validation/invalid_request");
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn strict_values_read_every_json_type() {
        let body = br#"{"a":[1,-2,3.5,true,false,null,"s\n",{}],"b":{"c":18446744073709551615}}"#;
        let strict = strict_value(body).unwrap();
        let plain: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(strict, plain);
        // serde_json's nesting limit still holds.
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(strict_value(deep.as_bytes()).is_err());
        // Whitespace alone is no JSON value.
        for ws in [" ", "\n", "\r\n"] {
            assert_eq!(
                field_of(parse_json::<R>(ws.as_bytes()).unwrap_err()),
                "body"
            );
        }
    }

    #[test]
    fn json_content_types() {
        let h = |values: &[&'static str]| {
            let mut map = HeaderMap::new();
            for v in values {
                map.append(header::CONTENT_TYPE, header::HeaderValue::from_static(v));
            }
            is_json(&map)
        };
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            "application/json;charset=utf-8",
            "application/json; charset=UTF-8",
            "application/json; CHARSET=utf-8",
            "application/json; charset=\"utf-8\"",
            "application/json; charset=\"UTF-8\"",
            // RFC 9110 allows an empty parameter.
            "application/json;",
        ] {
            assert!(h(&[ok]), "{ok}");
        }
        for bad in [
            "application/merge-patch+json",
            "application/vnd.api+json",
            "application/json; charset=latin1",
            "application/json; charset=utf-16",
            "application/json; charset=utf-8; charset=utf-8",
            "application/json; profile=x",
            "application/jsonx",
            "application/json-patch",
            "text/json",
            "text/plain",
            "",
        ] {
            assert!(!h(&[bad]), "{bad}");
        }
        assert!(!h(&[]));
        assert!(!h(&["application/json", "application/json"]));
    }
}
