//! Checks of request fields that several routes share: an e-mail address, a six-digit code,
//! a phone number, the schema of a consent flag, app URLs, scope names and nullable fields.
//!
//! Phone numbers are parsed with `phonenumber` (libphonenumber's metadata) in international
//! form and normalised to E.164 before anything reaches an actor; the tenant actor then checks
//! the country, the limits and the monthly cap.

use phonenumber::{metadata, Mode, PhoneNumber, Type};
use serde::{Deserialize, Deserializer};
use tessera_actors::{
    policy::normalize_email,
    tenant::{guests::MAX_METADATA_BYTES, settings::UrlSettings, sms::Phone},
};
use utoipa::openapi::{ObjectBuilder, Type as JsonType};

use super::error::{is_email, len_between, mailer_accepts, ApiError, FieldErrors};

/// The address of an end-user request, normalised (lowercase, punycode), when it is an
/// address and the mailer can send to its normalised form (else the field's error).
pub fn email_field(errors: &mut FieldErrors, value: &str) -> Option<String> {
    let normalized = is_email(value.trim())
        .then(|| normalize_email(value))
        .flatten()
        .filter(|n| mailer_accepts(n));
    errors.check("email", normalized.is_some(), "must be an e-mail address");
    normalized
}

/// A metadata object (`public_metadata`, `app_metadata`) of at most 16 KiB serialised;
/// `null` reads as an empty object.
pub fn metadata_field(
    errors: &mut FieldErrors,
    name: &str,
    value: serde_json::Value,
) -> Option<serde_json::Value> {
    match value {
        serde_json::Value::Null => Some(serde_json::json!({})),
        v @ serde_json::Value::Object(_) => {
            let size = serde_json::to_vec(&v).map_or(usize::MAX, |b| b.len());
            errors.check(
                name,
                size <= MAX_METADATA_BYTES,
                "must be at most 16 KiB serialised",
            );
            (size <= MAX_METADATA_BYTES).then_some(v)
        }
        _ => {
            errors.check(name, false, "must be an object");
            None
        }
    }
}

/// A one-time code of exactly six digits (a TOTP code, a texted code).
pub fn six_digits(errors: &mut FieldErrors, field: &str, code: &str) {
    errors.check(
        field,
        code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit()),
        "must be exactly 6 digits",
    );
}

/// Longest phone field accepted, in characters (formatting included).
const MAX_PHONE: usize = 64;

/// Parses `raw` (international form: a leading `+`) into E.164 and its country; a message in
/// `errors` when it is not a valid number.
pub fn phone_field(errors: &mut FieldErrors, name: &str, raw: &str) -> Option<Phone> {
    let parsed = (raw.chars().count() >= 5 && raw.len() <= MAX_PHONE)
        .then(|| phonenumber::parse(None, raw).ok())
        .flatten()
        .filter(|n| n.is_valid() && can_receive_texts(n))
        .and_then(|n| {
            let country = n.country().id()?.as_ref().to_owned();
            Some(Phone {
                e164: n.format().mode(Mode::E164).to_string(),
                country,
            })
        });
    errors.check(
        name,
        parsed.is_some(),
        "must be a valid mobile phone number in international format (+ and the country code)",
    );
    parsed
}

/// The number [`phone_field`] parsed, once its errors have been answered: always there then;
/// a bug that skipped the check is a 500, never a panic.
pub fn checked_phone(phone: Option<Phone>) -> Result<Phone, ApiError> {
    phone.ok_or_else(|| ApiError::internal("a checked phone number is missing"))
}

/// The one field `phone` of a body, checked: its validation error, or the number.
pub fn only_phone(raw: &str) -> Result<Phone, ApiError> {
    let mut errors = FieldErrors::new();
    let phone = phone_field(&mut errors, "phone", raw);
    errors.finish()?;
    checked_phone(phone)
}

/// The first checks of a body that carries a `phone` and its 6-digit `code`: the errors so
/// far, to which the caller adds its own before answering them, and the parsed number.
pub fn phone_and_code(phone: &str, code: &str) -> (FieldErrors, Option<Phone>) {
    let mut errors = FieldErrors::new();
    let phone = phone_field(&mut errors, "phone", phone);
    six_digits(&mut errors, "code", code);
    (errors, phone)
}

/// Mobile (or possibly mobile), personal and VoIP numbers receive texts. Premium-rate,
/// shared-cost, toll-free, pager, UAN and fixed-line numbers are refused: texting them is how
/// SMS pumping fraud makes money, and they cannot read a code anyway.
fn can_receive_texts(n: &PhoneNumber) -> bool {
    matches!(
        n.number_type(&metadata::DATABASE),
        Type::Mobile | Type::FixedLineOrMobile | Type::PersonalNumber | Type::Voip
    )
}

/// The schema of a consent flag: a boolean that must be `true` (the handlers answer a named
/// field error for `false`).
pub fn must_be_true() -> utoipa::openapi::Object {
    ObjectBuilder::new()
        .schema_type(JsonType::Boolean)
        .enum_values(Some([true]))
        .description(Some("Must be true."))
        .build()
}

/// A request's `redirect_to`: absent, or exactly the tenant's site URL or one of its redirect
/// URLs (never an open redirect). The field's error names the rule, not the list.
pub fn redirect_to_field(
    errors: &mut FieldErrors,
    urls: &UrlSettings,
    value: Option<&str>,
) -> Option<String> {
    let value = value?;
    let ok = value.len() <= 2048 && urls.allows(value);
    errors.check(
        "redirect_to",
        ok,
        "must be the tenant's site URL or one of its redirect URLs, exactly",
    );
    ok.then(|| value.to_owned())
}

/// A PKCE `code_challenge` (RFC 7636): the S256 transform of a verifier, 43 base64url
/// characters; `code_challenge_method`, when sent, must be `S256`.
pub fn code_challenge_field(
    errors: &mut FieldErrors,
    challenge: Option<&str>,
    method: Option<&str>,
) -> Option<String> {
    if let Some(m) = method {
        errors.check("code_challenge_method", m == "S256", "must be S256");
    }
    let c = challenge?;
    let ok = c.len() == 43
        && c.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    errors.check(
        "code_challenge",
        ok,
        "must be the S256 challenge: 43 base64url characters",
    );
    ok.then(|| c.to_owned())
}

/// A PKCE `code_verifier` (RFC 7636): 43-128 characters of `[A-Za-z0-9-._~]`.
pub fn code_verifier_field(errors: &mut FieldErrors, verifier: &str) {
    let ok = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
    errors.check(
        "code_verifier",
        ok,
        "must be 43-128 characters of A-Z, a-z, 0-9, '-', '.', '_', '~'",
    );
}

/// Deserializes a field that may be absent (`None`), `null` (`Some(None)`) or a value.
pub fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Whether `raw` may be a destination of the hosted pages: an absolute `https` URL, or
/// `http` on `localhost` or `127.0.0.1`, with a host, no user info and no fragment, of at
/// most 2,048 characters. It is kept exactly as written: `redirect_to` is compared with it
/// byte for byte.
pub fn is_app_url(raw: &str) -> bool {
    let Ok(u) = url::Url::parse(raw) else {
        return false;
    };
    let loopback = matches!(u.host_str(), Some("localhost" | "127.0.0.1"));
    raw.len() <= 2048
        && (u.scheme() == "https" || (u.scheme() == "http" && loopback))
        && u.host_str().is_some_and(|h| !h.is_empty())
        && u.username().is_empty()
        && u.password().is_none()
        && u.fragment().is_none()
}

/// The OpenID Connect and OAuth scopes every tenant knows.
pub const PROTOCOL_SCOPES: [&str; 7] = [
    "openid",
    "profile",
    "email",
    "phone",
    "address",
    "offline_access",
    "organization",
];

/// A resource scope's name (spec 2.13): `^[a-z][a-z0-9_.:-]{0,63}$`.
pub fn scope_name_ok(name: &str) -> bool {
    let mut bytes = name.bytes();
    name.len() <= 64
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.:-".contains(&b))
}

/// A domain as stored: lowercase ASCII (IDNA punycode), exact match, at least two labels.
pub fn normalize_domain(entry: &str) -> Option<String> {
    if !len_between(entry, 1, 253) || entry.chars().any(|c| c.is_whitespace()) {
        return None;
    }
    let ascii = tessera_actors::policy::normalize_domain(entry)?;
    let labels: Vec<&str> = ascii.split('.').collect();
    let ok = ascii.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(|l| {
            (1..=63).contains(&l.len())
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        });
    ok.then_some(ascii)
}

/// Whether `uri` may be registered as a redirect URI: an app URL as the hosted pages take
/// them ([`is_app_url`]), or a native app's (RFC 8252): `http` on `[::1]`, or a private-use
/// scheme with a dot in it.
pub fn redirect_uri_ok(uri: &str) -> bool {
    if is_app_url(uri) {
        return true;
    }
    let Ok(u) = url::Url::parse(uri) else {
        return false;
    };
    let clean = uri.len() <= 2048
        && u.fragment().is_none()
        && u.username().is_empty()
        && u.password().is_none();
    clean
        && match u.scheme() {
            "http" => u.host_str() == Some("[::1]"),
            "https" => false,
            scheme => scheme.contains('.'),
        }
}

/// Whether `scope` may be allowed to a client: a protocol scope or a catalog scope's name.
pub fn scope_ok(scope: &str) -> bool {
    PROTOCOL_SCOPES.contains(&scope) || scope_name_ok(scope)
}

/// `description`: at most 500 characters.
pub fn check_description(e: &mut FieldErrors, d: Option<&str>) {
    e.check(
        "description",
        d.is_none_or(|d| d.chars().count() <= 500),
        "at most 500 characters",
    );
}

/// `logo_url`: an https URL of at most 2,048 characters.
pub fn check_logo(e: &mut FieldErrors, l: Option<&str>) {
    e.check(
        "logo_url",
        l.is_none_or(|l| {
            l.len() <= 2048 && url::Url::parse(l).is_ok_and(|u| u.scheme() == "https")
        }),
        "must be an https URL of at most 2048 characters",
    );
}

/// The list without repeats, in the order first given.
pub fn dedup(list: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    list.into_iter()
        .filter(|s| seen.insert(s.clone()))
        .collect()
}

/// A real, past calendar date in `YYYY-MM-DD`.
pub fn is_past_date(s: &str) -> bool {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    s.len() == 10
        && time::Date::parse(s, &format)
            .is_ok_and(|d| d < time::OffsetDateTime::now_utc().date() && d.year() >= 1900)
}
