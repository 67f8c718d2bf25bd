//! `GET /v1/sdk-support-policy` (spec 2.14): the SDK support policy document the operator
//! provides in `sdk.policy_file`.
//!
//! The file is read and checked once, when the config is loaded ([`SdkPolicy::load`], called
//! by `config.rs`), so a bad file stops `serve` and `check-config` with an error naming the file
//! and the problem. The answer's bytes and `ETag` are made once more, when the application is
//! built ([`Served`]); the handler never touches the file and never serialises.

use std::{collections::HashSet, path::Path, sync::Arc};

use axum::{
    body::Bytes,
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Extension,
};
use serde::{Deserialize, Deserializer, Serialize};
use sha2::{Digest, Sha256};
use time::Date;
use utoipa::ToSchema;

use super::error::{ApiError, ErrorBody};

/// Clients and caches may reuse the document for 5 minutes without asking again.
const CACHE_CONTROL: &str = "public, max-age=300";

/// The SDK support policy: which major version of which SDK package is supported until when.
/// Field names are the spec's, camelCase and snake_case as it writes them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SdkPolicy {
    /// The version of this document's format, as the operator writes it.
    #[serde(rename = "schemaVersion")]
    pub schema_version: String,
    /// When the operator produced the document, as the operator writes it.
    pub generated_at: String,
    /// The last day the document is valid (`YYYY-MM-DD`).
    #[serde(with = "calendar_date")]
    #[schema(value_type = String, format = Date, pattern = r"^\d{4}-\d{2}-\d{2}$")]
    pub valid_until: Date,
    /// Where people read the policy.
    #[serde(rename = "policyUrl")]
    pub policy_url: String,
    /// One entry per package, registry and major version; possibly none.
    pub entries: Vec<SdkEntry>,
}

/// The support of one major version of one SDK package.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SdkEntry {
    /// The package's name in its registry; not empty.
    #[schema(min_length = 1)]
    pub package: String,
    /// The registry the package is published to; absent when the package name says enough.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(nullable = false)]
    pub registry: Option<Registry>,
    /// The major version.
    #[schema(minimum = 0)]
    pub major: u64,
    /// When the major version was released (`YYYY-MM-DD`).
    #[serde(with = "calendar_date")]
    #[schema(value_type = String, format = Date, pattern = r"^\d{4}-\d{2}-\d{2}$")]
    pub released: Date,
    /// The last day the major version is supported (`YYYY-MM-DD`), never before `released`.
    #[serde(rename = "supportedUntil", with = "calendar_date")]
    #[schema(value_type = String, format = Date, pattern = r"^\d{4}-\d{2}-\d{2}$")]
    pub supported_until: Date,
    pub status: SupportStatus,
    /// Why support ended before `supportedUntil`; only with status `eol`, and not empty.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(nullable = false, min_length = 1)]
    pub early_eol_reason: Option<String>,
}

/// The package registry an SDK is published to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Registry {
    Npm,
    Spm,
    Pubdev,
}

/// Where a major version stands: `active`, `maintenance`, or `eol` (end of life: no longer
/// supported).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SupportStatus {
    Active,
    Maintenance,
    Eol,
}

/// An optional field is absent or a value, never `null`: what was validated is what is served.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A calendar date written exactly `YYYY-MM-DD`.
mod calendar_date {
    use serde::{de::Error as _, Deserialize, Deserializer, Serializer};
    use time::{format_description::FormatItem, macros::format_description, Date};

    const FORMAT: &[FormatItem<'static>] = format_description!("[year]-[month]-[day]");

    pub fn serialize<S: Serializer>(date: &Date, s: S) -> Result<S::Ok, S::Error> {
        let text = date.format(FORMAT).map_err(serde::ser::Error::custom)?;
        s.serialize_str(&text)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Date, D::Error> {
        let text = String::deserialize(d)?;
        parse(&text).map_err(D::Error::custom)
    }

    pub fn parse(text: &str) -> Result<Date, String> {
        let b = text.as_bytes();
        let shaped = b.len() == 10
            && b.iter().enumerate().all(|(i, c)| match i {
                4 | 7 => *c == b'-',
                _ => c.is_ascii_digit(),
            });
        if !shaped {
            return Err(format!("{text:?} is not a date written YYYY-MM-DD"));
        }
        Date::parse(text, FORMAT).map_err(|_| format!("{text:?} is not a calendar date"))
    }
}

impl SdkPolicy {
    /// Reads the document at `path` and checks it; the error names the file, and the field or
    /// entry at fault.
    pub fn load(path: &Path) -> Result<SdkPolicy, String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses and checks a document: JSON with exactly the spec's fields at both levels, then
    /// the rules between fields and entries.
    pub fn parse(bytes: &[u8]) -> Result<SdkPolicy, String> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let doc: SdkPolicy = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let at = e.path().to_string();
            if at == "." {
                e.into_inner().to_string()
            } else {
                format!("{at}: {}", e.into_inner())
            }
        })?;
        de.end().map_err(|e| e.to_string())?;
        doc.check()?;
        Ok(doc)
    }

    fn check(&self) -> Result<(), String> {
        let mut seen = HashSet::new();
        for (i, e) in self.entries.iter().enumerate() {
            let at = format!("entries[{i}]");
            if e.package.trim().is_empty() {
                return Err(format!("{at}.package: must not be empty"));
            }
            let which = format!("{at} ({:?} major {})", e.package, e.major);
            if e.supported_until < e.released {
                return Err(format!(
                    "{which}: supportedUntil {} is before released {}",
                    e.supported_until, e.released
                ));
            }
            match (&e.early_eol_reason, e.status) {
                (Some(_), SupportStatus::Active | SupportStatus::Maintenance) => {
                    return Err(format!(
                        "{which}: early_eol_reason is only allowed with status \"eol\""
                    ));
                }
                (Some(reason), SupportStatus::Eol) if reason.trim().is_empty() => {
                    return Err(format!(
                        "{which}: early_eol_reason must not be empty (leave it out instead)"
                    ));
                }
                _ => {}
            }
            if !seen.insert((e.package.as_str(), e.registry, e.major)) {
                return Err(format!(
                    "{which}: another entry has the same package, registry and major"
                ));
            }
        }
        Ok(())
    }
}

/// The document as served: its JSON bytes and their strong `ETag`, made once; `None` when no
/// `sdk.policy_file` is configured.
#[derive(Clone)]
pub struct Served(Option<Arc<Rendered>>);

struct Rendered {
    body: Bytes,
    /// The quoted `ETag` value.
    etag: HeaderValue,
}

impl Served {
    pub fn new(policy: Option<&SdkPolicy>) -> Result<Served, serde_json::Error> {
        let Some(policy) = policy else {
            return Ok(Served(None));
        };
        let body = serde_json::to_vec(policy)?;
        let digest = Sha256::digest(&body);
        let etag = format!("\"{}\"", hex::encode(&digest[..16]));
        let etag = HeaderValue::from_str(&etag)
            .map_err(|e| <serde_json::Error as serde::ser::Error>::custom(e.to_string()))?;
        Ok(Served(Some(Arc::new(Rendered {
            body: Bytes::from(body),
            etag,
        }))))
    }
}

/// The SDK support policy document.
///
/// Per SDK package and major version: its release date, the last day it is supported and its
/// status, as the operator's `sdk.policy_file` holds them (read at start-up). No credentials.
/// Conditional with `If-None-Match`.
#[utoipa::path(get, path = "/v1/sdk-support-policy", tag = "platform",
    params(
        ("If-None-Match" = Option<String>, Header, nullable = false,
            description = "Entity tags of copies the client holds (or `*`): when one matches \
                the document's `ETag` (weak comparison), the answer is 304 without a body"),
    ),
    responses(
        (status = 200, description = "The document, as the operator's file holds it",
            content_type = "application/json", body = SdkPolicy,
            headers(
                ("ETag" = String, description = "A strong entity tag of the document's bytes"),
                ("Cache-Control" = String, description = "`public, max-age=300`"),
            )),
        (status = 304, description = "The client's copy (named in `If-None-Match`) is current",
            headers(
                ("ETag" = String, description = "The document's entity tag"),
                ("Cache-Control" = String, description = "`public, max-age=300`"),
            )),
        (status = 404, description = "`sdk_policy/not_configured`: the operator has not \
            provided a policy (`sdk.policy_file`)", body = ErrorBody),
    ))]
pub async fn sdk_support_policy(
    Extension(served): Extension<Served>,
    headers: HeaderMap,
) -> Response {
    let Some(doc) = served.0 else {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            "sdk_policy/not_configured",
            "this server publishes no SDK support policy",
        )
        .into_response();
    };
    let cache = [
        (header::ETAG, doc.etag.clone()),
        (
            header::CACHE_CONTROL,
            HeaderValue::from_static(CACHE_CONTROL),
        ),
    ];
    if none_match(&headers, doc.etag.as_bytes()) {
        return (StatusCode::NOT_MODIFIED, cache).into_response();
    }
    (
        cache,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        doc.body.clone(),
    )
        .into_response()
}

/// Whether `If-None-Match` names `etag` (quoted), by weak comparison, or is `*` (RFC 9110,
/// 13.1.2): the client's copy is current. Every field line counts; a malformed member ends
/// the reading of its line.
fn none_match(headers: &HeaderMap, etag: &[u8]) -> bool {
    let ours = opaque(etag);
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .any(|line| line_matches(line.as_bytes(), ours))
}

/// `"abc"` of `W/"abc"` or `"abc"`.
fn opaque(tag: &[u8]) -> &[u8] {
    tag.strip_prefix(b"W/").unwrap_or(tag)
}

fn line_matches(line: &[u8], ours: &[u8]) -> bool {
    let mut rest = line;
    loop {
        rest = trim_start(rest);
        while let Some(r) = rest.strip_prefix(b",") {
            rest = trim_start(r);
        }
        if rest.is_empty() {
            return false;
        }
        if let Some(r) = rest.strip_prefix(b"*") {
            // Only a whole member: `*x` is malformed.
            let r = trim_start(r);
            return r.is_empty() || r.starts_with(b",");
        }
        let tag = rest.strip_prefix(b"W/").unwrap_or(rest);
        let Some(body) = tag.strip_prefix(b"\"") else {
            return false;
        };
        let Some(end) = body.iter().position(|c| *c == b'"') else {
            return false;
        };
        // The quoted tag, quotes included.
        let theirs = &tag[..end + 2];
        if theirs == ours {
            return true;
        }
        rest = &body[end + 1..];
        let after = trim_start(rest);
        if !(after.is_empty() || after.starts_with(b",")) {
            return false;
        }
    }
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|c| **c == b' ' || **c == b'\t').count();
    &s[n..]
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const DOC: &str = r#"{"schemaVersion": "1.0", "generated_at": "2026-01-01T00:00:00Z",
        "valid_until": "2026-12-31", "policyUrl": "https://example.com/sdk-policy",
        "entries": [
          {"package": "@tessera/js", "registry": "npm", "major": 3, "released": "2025-01-10",
           "supportedUntil": "2027-01-10", "status": "active"},
          {"package": "@tessera/js", "registry": "npm", "major": 2, "released": "2024-02-29",
           "supportedUntil": "2025-06-30", "status": "eol", "early_eol_reason": "security"},
          {"package": "TesseraKit", "major": 1, "released": "2025-03-01",
           "supportedUntil": "2025-03-01", "status": "maintenance"}
        ]}"#;

    fn with(f: impl FnOnce(&mut serde_json::Value)) -> Result<SdkPolicy, String> {
        let mut v: serde_json::Value = serde_json::from_str(DOC).unwrap();
        f(&mut v);
        SdkPolicy::parse(&serde_json::to_vec(&v).unwrap())
    }

    #[test]
    fn a_good_document_round_trips_in_the_spec_order() {
        let doc = SdkPolicy::parse(DOC.as_bytes()).unwrap();
        assert_eq!(doc.entries.len(), 3);
        let out = serde_json::to_string(&doc).unwrap();
        let again: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            again,
            serde_json::from_str::<serde_json::Value>(DOC).unwrap()
        );
        let keys = [
            "schemaVersion",
            "generated_at",
            "valid_until",
            "policyUrl",
            "entries",
            "package",
            "registry",
            "major",
            "released",
            "supportedUntil",
            "status",
        ];
        let at: Vec<usize> = keys
            .iter()
            .map(|k| out.find(&format!("\"{k}\"")).unwrap())
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{out}");
        assert!(with(|v| v["entries"] = serde_json::json!([])).is_ok());
    }

    #[test]
    fn every_rule_is_checked_and_named() {
        for (change, says) in [
            (
                Box::new(|v: &mut serde_json::Value| v["entries"][0]["status"] = "retired".into())
                    as Box<dyn FnOnce(&mut serde_json::Value)>,
                "entries[0].status",
            ),
            (
                Box::new(|v| v["entries"][0]["registry"] = "pypi".into()),
                "entries[0].registry",
            ),
            (
                Box::new(|v| v["entries"][0]["registry"] = serde_json::Value::Null),
                "entries[0].registry",
            ),
            (
                Box::new(|v| v["entries"][1]["released"] = "2023-02-29".into()),
                "not a calendar date",
            ),
            (
                Box::new(|v| v["entries"][1]["released"] = "2024-2-29".into()),
                "YYYY-MM-DD",
            ),
            (
                Box::new(|v| v["valid_until"] = "2026-12-31T00:00:00Z".into()),
                "valid_until",
            ),
            (
                Box::new(|v| v["entries"][0]["supportedUntil"] = "2024-12-31".into()),
                "supportedUntil 2024-12-31 is before released 2025-01-10",
            ),
            (
                Box::new(|v| v["entries"][0]["early_eol_reason"] = "x".into()),
                "only allowed with status",
            ),
            (
                Box::new(|v| v["entries"][1]["early_eol_reason"] = " ".into()),
                "must not be empty",
            ),
            (
                Box::new(|v| v["entries"][0]["major"] = (-1).into()),
                "entries[0].major",
            ),
            (
                Box::new(|v| v["entries"][0]["major"] = 1.5.into()),
                "entries[0].major",
            ),
            (
                Box::new(|v| v["entries"][0]["package"] = "".into()),
                "entries[0].package",
            ),
            (
                Box::new(|v| v["entries"][0]["colour"] = "blue".into()),
                "unknown field `colour`",
            ),
            (Box::new(|v| v["extra"] = 1.into()), "unknown field `extra`"),
            (
                Box::new(|v| {
                    v.as_object_mut().unwrap().remove("policyUrl");
                }),
                "missing field `policyUrl`",
            ),
            (
                Box::new(|v| {
                    v["entries"][2].as_object_mut().unwrap().remove("status");
                }),
                "missing field `status`",
            ),
        ] {
            let err = with(change).map(|_| ()).unwrap_err();
            assert!(err.contains(says), "{says}: {err}");
        }
        // The same package and major in another registry (or none) is another entry; twice in
        // the same one is not.
        assert!(with(|v| v["entries"][2]["package"] = "@tessera/js".into()).is_ok());
        let err = with(|v| {
            v["entries"][2]["package"] = "@tessera/js".into();
            v["entries"][2]["registry"] = "npm".into();
            v["entries"][2]["major"] = 3.into();
        })
        .unwrap_err();
        assert!(err.contains("same package, registry and major"), "{err}");
        assert!(SdkPolicy::parse(b"{} trailing").is_err());
        assert!(SdkPolicy::parse(format!("{DOC} x").as_bytes()).is_err());
    }

    #[test]
    fn if_none_match_compares_weakly_and_takes_lists_and_the_star() {
        let ours = b"\"abc\"";
        let m = |line: &str| line_matches(line.as_bytes(), opaque(ours));
        assert!(m("\"abc\""));
        assert!(m("W/\"abc\""));
        assert!(m("\"x\", W/\"abc\""));
        assert!(m(" \"x,y\" ,\"abc\" "));
        assert!(m("*"));
        assert!(!m("\"abcd\""));
        assert!(!m("abc"));
        assert!(!m("\"x\""));
        assert!(!m(""));
        assert!(!m("\"unterminated, \"abc\""));
        assert!(!m("*x"));
        let mut headers = HeaderMap::new();
        headers.append(header::IF_NONE_MATCH, HeaderValue::from_static("\"x\""));
        assert!(!none_match(&headers, ours));
        headers.append(header::IF_NONE_MATCH, HeaderValue::from_static("\"abc\""));
        assert!(none_match(&headers, ours));
    }
}
