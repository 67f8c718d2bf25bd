//! The rules a settings change must keep whoever sends it: the ranges, limits, formats and
//! vocabularies of the settings' fields. [`SettingsChange::validate`] runs them first in
//! [`TenantSettings::apply`](super::TenantSettings::apply), so the tenant's actor refuses a
//! change that breaks one (`TenantError::Settings(SettingsError::Invalid)`, each field with its reason); the
//! dashboard checks a request with the same functions before it sends anything, so its
//! answer names the same fields with the same reasons.
//!
//! Its own file: `settings.rs` holds what the settings are and how a change applies; this
//! holds what a change may be. What needs the HTTP edge's own knowledge stays there: a
//! domain's or an origin's normal form, an app URL's shape, the languages of the pages.

use std::collections::BTreeMap;

use super::{
    EmailDomains, EudiAgeConfig, EudiConfig, KeyResolution, MinorSettings, SecurityPatch,
    SettingsChange, TrustAnchor, UrlSettings,
};
use crate::error::SettingsError;
use crate::error::TenantError;

/// The fields of a change that break a rule, each with the first reason found for it, so
/// that every fault is answered at once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SettingsFaults(BTreeMap<String, String>);

impl SettingsFaults {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `reason` for `field` unless `ok` (a field keeps its first reason); answers
    /// `ok`.
    pub fn check(&mut self, field: &str, ok: bool, reason: impl Into<String>) -> bool {
        if !ok {
            self.0
                .entry(field.to_owned())
                .or_insert_with(|| reason.into());
        }
        ok
    }

    /// Whether `v` is one of `allowed`, the field's fault if not.
    pub fn one_of(&mut self, field: &str, v: &str, allowed: &[&str]) -> bool {
        let reason = || format!("must be one of {}", allowed.join(", "));
        self.check(field, allowed.contains(&v), reason())
    }

    /// A list of at most `max` entries.
    pub fn at_most(&mut self, field: &str, len: usize, max: usize) -> bool {
        self.check(field, len <= max, format!("at most {max} entries"))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each field with its reason.
    pub fn into_fields(self) -> BTreeMap<String, String> {
        self.0
    }

    /// Each item of `list` one of `allowed`, the faults named `field[i]`.
    fn each_one_of(&mut self, field: &str, list: &[String], allowed: &[&str]) {
        for (i, item) in list.iter().enumerate() {
            self.one_of(&format!("{field}[{i}]"), item, allowed);
        }
    }

    /// A list with at least one item.
    fn not_empty(&mut self, field: &str, list: &[String]) -> bool {
        self.check(field, !list.is_empty(), "must have at least one item")
    }
}

/// The whole numbers a setting may take, both ends included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub min: u32,
    pub max: u32,
}

impl Bounds {
    /// `v` as the setting's number, or the field's fault when it is outside.
    pub fn take(self, f: &mut SettingsFaults, field: &str, v: i64) -> Option<u32> {
        let inside = (i64::from(self.min)..=i64::from(self.max)).contains(&v);
        f.check(field, inside, self.reason())
            .then(|| u32::try_from(v).ok())
            .flatten()
    }

    /// Whether `v` is inside, the field's fault if not.
    pub fn check(self, f: &mut SettingsFaults, field: &str, v: u32) -> bool {
        f.check(field, (self.min..=self.max).contains(&v), self.reason())
    }

    fn reason(self) -> String {
        format!("must be an integer from {} to {}", self.min, self.max)
    }
}

/// The days a user without MFA may still sign in once the policy requires it.
pub const MFA_GRACE_DAYS: Bounds = Bounds { min: 3, max: 30 };
/// The monthly text message cap (on the platform's account, the tier's ceiling applies too).
pub const SMS_MONTHLY_CAP: Bounds = Bounds {
    min: 0,
    max: 100_000,
};
/// The days an inactive guest is kept.
pub const GUEST_TTL_DAYS: Bounds = Bounds { min: 1, max: 180 };
/// The ages of digital consent the member states' laws set (GDPR art. 8(1)).
pub const CONSENT_AGES: Bounds = Bounds { min: 13, max: 16 };
/// A DPIA's versions.
pub const DPIA_VERSIONS: Bounds = Bounds {
    min: 1,
    max: u32::MAX,
};
/// How long a status list may be used when a fresh one cannot be had, in seconds.
pub const STATUS_STALENESS_SECONDS: Bounds = Bounds {
    min: 0,
    max: 86_400,
};

/// The registration e-mail domains each list may hold.
pub const MAX_EMAIL_DOMAINS: usize = 100;
/// The most origins a tenant may allow to call the end-user API.
pub const MAX_ALLOWED_ORIGINS: usize = 50;
/// The most redirect URLs a tenant may list.
pub const MAX_REDIRECT_URLS: usize = 50;
/// The extra origins a tenant's passkey ceremonies may accept.
pub const MAX_PASSKEY_ORIGINS: usize = 20;
/// The country codes text messages may be limited to.
pub const MAX_SMS_COUNTRIES: usize = 300;

/// The attributes a tenant may ask of a wallet.
pub const WALLET_ATTRIBUTES: &[&str] = &[
    "family_name",
    "given_name",
    "birth_date",
    "nationality",
    "age_over_16",
    "age_over_18",
    "age_over_21",
    "resident_country",
    "resident_city",
    "email",
    "phone_number",
];
/// The signature algorithms a trust anchor may allow.
pub const ANCHOR_ALGS: &[&str] = &["ES256", "EdDSA"];
/// The credential formats a trust anchor may allow.
pub const ANCHOR_FORMATS: &[&str] = &["dc+sd-jwt", "mso_mdoc"];
/// The eIDAS assurance levels, lowest first.
pub const ASSURANCE_LEVELS: &[&str] = &["low", "substantial", "high"];
/// What a wallet sign-in does when a credential's status list cannot be had.
pub const ON_STATUS_UNAVAILABLE: &[&str] = &["reject", "accept_with_cache", "accept_unverified"];
/// The member states whose age proofs a wallet age check takes.
pub const AGE_MEMBER_STATES: &[&str] = &["PL", "DE", "FR", "IE"];

/// What a DPIA link's date must be, and what its fault says.
pub const LINKED_AT_RULE: &str = "must be an RFC 3339 UTC timestamp (ending in Z)";
/// What an extra passkey origin must be, and what its fault says.
pub const PASSKEY_ORIGIN_RULE: &str = "must be an origin as browsers send it (scheme://host[:port], lowercase, no path) or android:apk-key-hash:<base64url>";
/// The prefix of an Android app's passkey origin; the rest is the base64url SHA-256 of its
/// signing certificate.
pub const ANDROID_ORIGIN_PREFIX: &str = "android:apk-key-hash:";

impl SettingsChange {
    /// Every rule of the change's values, each fault recorded in `f`.
    pub fn check(&self, f: &mut SettingsFaults) {
        match self {
            SettingsChange::Security(patch) => patch.check(f),
            SettingsChange::EmailDomains(domains) => domains.check(f),
            SettingsChange::Anonymous { ttl_days, .. } => {
                if let Some(days) = ttl_days {
                    GUEST_TTL_DAYS.check(f, "anonymous_user_ttl_days", *days);
                }
            }
            SettingsChange::PasskeyDomain { rp_id, origins } => {
                check_passkey_domain(f, rp_id.as_ref(), origins.as_deref())
            }
            SettingsChange::Eudi(config) => config.check(f),
            SettingsChange::EudiAge(config) => config.check(f),
            SettingsChange::AllowedOrigins(origins) => {
                f.at_most("allowed_origins", origins.len(), MAX_ALLOWED_ORIGINS);
            }
            SettingsChange::Urls(urls) => urls.check(f),
            SettingsChange::Minors(minors) => minors.check(f),
            SettingsChange::Branding(patch) => {
                for (field, value) in [
                    ("logo_url", &patch.logo_url),
                    ("terms_url", &patch.terms_url),
                    ("privacy_url", &patch.privacy_url),
                ] {
                    if let Some(Some(url)) = value {
                        f.check(
                            field,
                            url.len() <= 2048
                                && url::Url::parse(url).is_ok_and(|u| u.scheme() == "https"),
                            "must be an https URL of at most 2048 characters",
                        );
                    }
                }
                if let Some(Some(color)) = &patch.primary_color {
                    f.check(
                        "primary_color",
                        white_text_contrast(color).is_some_and(|c| c >= 4.5),
                        "must be #rrggbb, dark enough for white text on it (4.5:1, WCAG AA)",
                    );
                }
            }
            SettingsChange::DefaultRole(_)
            | SettingsChange::Users { .. }
            | SettingsChange::Agents { .. } => {}
        }
    }

    /// The change as it may be applied, or the refusal that names every field breaking a
    /// rule.
    pub fn validate(&self) -> Result<(), TenantError> {
        let mut f = SettingsFaults::new();
        self.check(&mut f);
        if f.is_empty() {
            Ok(())
        } else {
            Err(TenantError::Settings(SettingsError::Invalid {
                fields: f.into_fields(),
            }))
        }
    }
}

/// A provider account's SID: `prefix` and 32 lowercase hex digits.
fn is_sid(s: &str, prefix: &str) -> bool {
    s.len() == 34
        && s.starts_with(prefix)
        && s[2..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl SecurityPatch {
    pub fn check(&self, f: &mut SettingsFaults) {
        if let Some(days) = self.mfa_grace_period_days {
            MFA_GRACE_DAYS.check(f, "mfa_grace_period_days", days);
        }
        if let Some(cap) = self.sms_otp_monthly_cap {
            SMS_MONTHLY_CAP.check(f, "sms_otp_monthly_cap", cap);
        }
        if let Some(Some(sid)) = &self.byok_provider_account_sid {
            f.check(
                "byok_provider_account_sid",
                is_sid(sid, "AC"),
                "must match ^AC[a-f0-9]{32}$",
            );
        }
        if let Some(Some(sid)) = &self.byok_provider_messaging_service_sid {
            f.check(
                "byok_provider_messaging_service_sid",
                is_sid(sid, "MG"),
                "must match ^MG[a-f0-9]{32}$",
            );
        }
        if let Some(Some(token)) = &self.byok_provider_auth_token {
            f.check(
                "byok_provider_auth_token",
                (32..=128).contains(&token.chars().count()),
                "must be 32-128 characters",
            );
        }
        if let Some(Some(list)) = &self.sms_allowed_countries {
            f.check(
                "sms_allowed_countries",
                list.len() <= MAX_SMS_COUNTRIES,
                "at most 300 codes",
            );
            for (i, c) in list.iter().enumerate() {
                f.check(
                    &format!("sms_allowed_countries[{i}]"),
                    c.len() == 2 && c.bytes().all(|b| b.is_ascii_uppercase()),
                    "must be a two-letter uppercase ISO 3166-1 alpha-2 code (^[A-Z]{2}$)",
                );
            }
        }
    }
}

impl EmailDomains {
    pub fn check(&self, f: &mut SettingsFaults) {
        f.at_most("allowlist", self.allowlist.len(), MAX_EMAIL_DOMAINS);
        f.at_most("blocklist", self.blocklist.len(), MAX_EMAIL_DOMAINS);
    }
}

/// The passkey relying-party id (a domain) and the extra origins, as far as they can be
/// judged without a web origin's normal form (the dashboard checks that).
pub fn check_passkey_domain(
    f: &mut SettingsFaults,
    rp_id: Option<&Option<String>>,
    origins: Option<&[String]>,
) {
    if let Some(Some(id)) = rp_id {
        let ok = (1..=253).contains(&id.len())
            && id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-');
        f.check(
            "passkey_rp_id",
            ok,
            "must be 1-253 characters matching ^[a-z0-9.-]+$",
        );
    }
    let Some(origins) = origins else {
        return;
    };
    f.check(
        "passkey_origins",
        origins.len() <= MAX_PASSKEY_ORIGINS,
        "at most 20 origins",
    );
    for (i, origin) in origins.iter().enumerate() {
        if let Some(hash) = origin.strip_prefix(ANDROID_ORIGIN_PREFIX) {
            let ok = (16..=128).contains(&hash.len())
                && hash
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            f.check(&format!("passkey_origins[{i}]"), ok, PASSKEY_ORIGIN_RULE);
        }
    }
}

impl UrlSettings {
    pub fn check(&self, f: &mut SettingsFaults) {
        f.at_most("redirect_urls", self.redirect_urls.len(), MAX_REDIRECT_URLS);
    }
}

impl EudiConfig {
    pub fn check(&self, f: &mut SettingsFaults) {
        f.each_one_of(
            "requested_attributes",
            &self.requested_attributes,
            WALLET_ATTRIBUTES,
        );
        for (i, anchor) in self.trust_anchors.iter().enumerate() {
            anchor.check(f, &format!("trust_anchors[{i}]"));
        }
        if let Some(floor) = &self.required_assurance_floor {
            f.check(
                "required_assurance_floor.value",
                !floor.value.is_empty(),
                "is required (at least 1 character)",
            );
        }
        if let Some(p) = &self.purpose {
            f.check(
                "purpose",
                p.chars().count() <= 300,
                "at most 300 characters",
            );
        }
        f.one_of(
            "on_status_unavailable",
            &self.on_status_unavailable,
            ON_STATUS_UNAVAILABLE,
        );
        STATUS_STALENESS_SECONDS.check(
            f,
            "max_status_staleness_seconds",
            self.max_status_staleness_seconds,
        );
    }
}

impl TrustAnchor {
    /// The anchor's rules, its faults named under `at` (`trust_anchors[0]`).
    pub fn check(&self, f: &mut SettingsFaults, at: &str) {
        let field = |name: &str| format!("{at}.{name}");
        f.check(
            &field("issuer"),
            !self.issuer.is_empty(),
            "is required (at least 1 character)",
        );
        if let Some(ms) = &self.member_state {
            f.check(
                &field("memberState"),
                ms.chars().count() == 2,
                "must be 2 characters",
            );
        }
        f.not_empty(&field("allowedAlgs"), &self.allowed_algs);
        f.each_one_of(&field("allowedAlgs"), &self.allowed_algs, ANCHOR_ALGS);
        f.one_of(
            &field("maxAssuranceLevel"),
            &self.max_assurance_level,
            ASSURANCE_LEVELS,
        );
        f.not_empty(&field("allowedFormats"), &self.allowed_formats);
        f.each_one_of(
            &field("allowedFormats"),
            &self.allowed_formats,
            ANCHOR_FORMATS,
        );
        self.key_resolution.check(f, &field("keyResolution"));
        for (locale, name) in self.display_name.iter().flatten() {
            let chars = |s: &str, min, max| (min..=max).contains(&s.chars().count());
            f.check(
                &field(&format!("displayName.{locale}")),
                chars(locale, 2, 35) && chars(name, 1, 200),
                "locale 2-35 characters, name 1-200 characters",
            );
        }
    }
}

impl KeyResolution {
    /// The resolution's values, its faults named under `at` (`...keyResolution`).
    pub fn check(&self, f: &mut SettingsFaults, at: &str) {
        match self {
            KeyResolution::JwksUri { jwks_uri } => {
                let ok = url::Url::parse(jwks_uri)
                    .is_ok_and(|u| matches!(u.scheme(), "https" | "http") && u.host().is_some());
                f.check(&format!("{at}.jwksUri"), ok, "must be an http(s) URI");
            }
            KeyResolution::DidWeb { did } => {
                let ok = did.starts_with("did:web:") && did.len() > "did:web:".len();
                f.check(&format!("{at}.did"), ok, "must match ^did:web:");
            }
            KeyResolution::X5c { x5c_roots } => {
                let ok = !x5c_roots.is_empty()
                    && x5c_roots.len() <= 20
                    && x5c_roots
                        .iter()
                        .all(|r| tessera_eudi::x509::root_from_config(r).is_ok());
                f.check(
                    &format!("{at}.x5cRoots"),
                    ok,
                    "must be 1-20 certificates (base64 DER or PEM)",
                );
            }
        }
    }
}

impl EudiAgeConfig {
    pub fn check(&self, f: &mut SettingsFaults) {
        f.each_one_of(
            "supported_member_states",
            &self.supported_member_states,
            AGE_MEMBER_STATES,
        );
    }
}

/// Whether `v`, trimmed, is 1 to `max` characters without control characters; the field's
/// fault if not.
pub fn check_text(f: &mut SettingsFaults, field: &str, v: &str, max: usize) -> bool {
    let t = v.trim();
    f.check(
        field,
        (1..=max).contains(&t.chars().count()) && !t.chars().any(char::is_control),
        format!("must be 1-{max} characters without control characters"),
    )
}

impl MinorSettings {
    pub fn check(&self, f: &mut SettingsFaults) {
        CONSENT_AGES.check(
            f,
            "digital_consent_age",
            u32::from(self.digital_consent_age),
        );
        if let Some(c) = &self.controller_name {
            check_text(f, "controller_name", c, 200);
        }
        check_consent_texts(
            f,
            "",
            (&self.lawful_basis, &self.retention),
            (&self.purposes, &self.data_categories),
        );
        for (lang, texts) in &self.translations {
            let prefix = format!("translations.{lang}.");
            f.check(
                &format!("translations.{lang}"),
                PAGE_LANGUAGES.contains(&lang.as_str()),
                "must be one of the pages' languages: en, pl, de, fr or es",
            );
            check_consent_texts(
                f,
                &prefix,
                (&texts.lawful_basis, &texts.retention),
                (&texts.purposes, &texts.data_categories),
            );
        }
        if let Some(d) = &self.dpia {
            DPIA_VERSIONS.check(f, "dpia.dpia_version", d.dpia_version);
            f.check(
                "dpia.dpia_content_hash",
                (1..=256).contains(&d.dpia_content_hash.chars().count()),
                "must be 1-256 characters",
            );
            f.check(
                "dpia.linked_at",
                d.linked_at.offset().is_utc(),
                LINKED_AT_RULE,
            );
        }
    }
}

#[cfg(test)]
mod tests;

/// The contrast ratio (WCAG 2) of white text on the colour `#rrggbb`; `None` for anything
/// else.
pub fn white_text_contrast(color: &str) -> Option<f64> {
    let hex = color.strip_prefix('#').filter(|h| h.len() == 6)?;
    let channel = |i: usize| -> Option<f64> {
        let v = f64::from(u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()?) / 255.0;
        Some(if v <= 0.04045 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        })
    };
    let luminance = 0.2126 * channel(0)? + 0.7152 * channel(2)? + 0.0722 * channel(4)?;
    Some(1.05 / (luminance + 0.05))
}

/// The languages of the hosted pages.
pub const PAGE_LANGUAGES: &[&str] = &["en", "pl", "de", "fr", "es"];

/// The rules of what a guardian consents to (the main text, or a translation's under
/// `prefix`): two texts of 1-500 characters and two lists of 1-20 entries of 1-200.
fn check_consent_texts(
    f: &mut SettingsFaults,
    prefix: &str,
    (lawful_basis, retention): (&str, &str),
    (purposes, data_categories): (&[String], &[String]),
) {
    check_text(f, &format!("{prefix}lawful_basis"), lawful_basis, 500);
    check_text(f, &format!("{prefix}retention"), retention, 500);
    for (field, items) in [("purposes", purposes), ("data_categories", data_categories)] {
        f.check(
            &format!("{prefix}{field}"),
            (1..=20).contains(&items.len()),
            "must hold 1-20 entries",
        );
        for (i, item) in items.iter().enumerate() {
            check_text(f, &format!("{prefix}{field}[{i}]"), item, 200);
        }
    }
}
