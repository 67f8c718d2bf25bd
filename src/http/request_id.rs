//! The client's `X-Request-Id`, kept only when it is safe to echo and to log.
//!
//! The id is echoed in the answer and is a field of every log line of the request; in the text
//! log format a value with spaces, quotes or braces could pose as other fields (`abc
//! tenant="evil" status=500`), and a long one fills the log. [`sanitise`] runs outermost and
//! drops the header unless the request carries exactly one, made of 1-128 characters of
//! `A-Z a-z 0-9 . _ : -`; the request-id layer behind it then generates a UUID, as for a
//! request without one.

use axum::{
    extract::Request,
    http::{HeaderMap, HeaderName},
    middleware::Next,
    response::Response,
};

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest id kept.
pub const MAX_LEN: usize = 128;

/// Removes every `X-Request-Id` of the request unless it has exactly one valid one.
pub async fn sanitise(mut req: Request, next: Next) -> Response {
    if !has_valid_id(req.headers()) {
        req.headers_mut().remove(REQUEST_ID);
    }
    next.run(req).await
}

fn has_valid_id(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(REQUEST_ID).iter();
    match (values.next(), values.next()) {
        (Some(v), None) => is_valid(v.as_bytes()),
        _ => false,
    }
}

/// 1-128 bytes of `[A-Za-z0-9._:-]`.
pub fn is_valid(id: &[u8]) -> bool {
    (1..=MAX_LEN).contains(&id.len())
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn only_short_plain_ids_are_kept() {
        for ok in [
            "a",
            "0b7e6f2c-1d1a-4c1e-9f3e-2a9c4e5b6d7f",
            "trace.span:01_ABC-z",
            &"x".repeat(MAX_LEN),
        ] {
            assert!(is_valid(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "",
            &"x".repeat(MAX_LEN + 1),
            "abc tenant=\"evil\" status=500 }: forged",
            "a b",
            "a\tb",
            "a/b",
            "a=b",
            "{a}",
            "é",
        ] {
            assert!(!is_valid(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn exactly_one_header() {
        let mut h = HeaderMap::new();
        assert!(!has_valid_id(&h));
        h.append(REQUEST_ID, HeaderValue::from_static("abc"));
        assert!(has_valid_id(&h));
        h.append(REQUEST_ID, HeaderValue::from_static("def"));
        assert!(!has_valid_id(&h));
    }
}
