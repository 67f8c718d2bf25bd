//! A tenant's settings, with the platform's defaults, and the rules of changing them
//! ([`TenantSettings::apply`]: pure, so the actor only seals, writes and audits). The
//! dashboard edits them; every capability reads them from here.

mod error;
pub mod msg;
pub mod roles;
pub mod rules;

pub use error::SettingsError;
pub use roles::DefaultRole;
use serde::{Deserialize, Serialize};
use tessera_storage::Kind;
use time::{Duration, OffsetDateTime};

use crate::error::SmsError;
use crate::{error::TenantError, records::Tier};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MfaPolicy {
    Optional,
    Required,
}

/// Security settings (UpdateTenantSecurityRequest's fields). The BYOK token is not here: it is
/// a sealed secret kept in its own record once set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SecuritySettings {
    pub mfa_policy: MfaPolicy,
    pub mfa_grace_period_days: u32,
    pub block_disposable_emails: bool,
    pub block_email_subaddresses: bool,
    pub automatic_account_linking_enabled: bool,
    pub explicit_account_linking_enabled: bool,
    pub sms_otp_enabled: bool,
    pub sms_otp_monthly_cap: u32,
    pub magic_link_enabled: bool,
    pub email_otp_enabled: bool,
    /// `None`: the full platform allowlist.
    pub sms_allowed_countries: Option<Vec<String>>,
    /// The tenant's own SMS-provider account (BYOK); the auth token is a sealed secret kept
    /// in its own record.
    pub byok_provider_account_sid: Option<String>,
    pub byok_provider_messaging_service_sid: Option<String>,
    /// Whether password login needs a confirmed e-mail address (on by default; not yet
    /// editable through the dashboard).
    #[serde(default = "yes")]
    pub require_email_verification: bool,
    /// When `mfa_policy` last became `required`: the start of the grace period.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub mfa_required_since: Option<OffsetDateTime>,
}

fn yes() -> bool {
    true
}

impl Default for SecuritySettings {
    fn default() -> Self {
        SecuritySettings {
            mfa_policy: MfaPolicy::Optional,
            mfa_grace_period_days: 14,
            block_disposable_emails: false,
            block_email_subaddresses: false,
            automatic_account_linking_enabled: false,
            explicit_account_linking_enabled: false,
            sms_otp_enabled: false,
            sms_otp_monthly_cap: 1000,
            magic_link_enabled: true,
            email_otp_enabled: true,
            sms_allowed_countries: None,
            byok_provider_account_sid: None,
            byok_provider_messaging_service_sid: None,
            require_email_verification: true,
            mfa_required_since: None,
        }
    }
}

/// Registration e-mail domain lists: lowercase, punycoded, exact match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EmailDomains {
    pub allowlist: Vec<String>,
    pub blocklist: Vec<String>,
}

/// Guest sign-in settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnonymousSettings {
    pub anonymous_signins_enabled: bool,
    /// Days a guest may stay inactive before the daily purge deletes it (1-180).
    pub anonymous_user_ttl_days: u32,
}

impl Default for AnonymousSettings {
    fn default() -> Self {
        AnonymousSettings {
            anonymous_signins_enabled: false,
            anonymous_user_ttl_days: 30,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AssuranceKind {
    Aal,
    Eidas,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AssuranceFloor {
    pub kind: AssuranceKind,
    pub value: String,
}

/// How a wallet issuer's keys are found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method")]
pub enum KeyResolution {
    #[serde(rename = "jwks_uri")]
    JwksUri {
        #[serde(rename = "jwksUri")]
        jwks_uri: String,
    },
    #[serde(rename = "did_web")]
    DidWeb { did: String },
    #[serde(rename = "x5c")]
    X5c {
        #[serde(rename = "x5cRoots")]
        x5c_roots: Vec<String>,
    },
}

/// A trusted wallet-credential issuer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustAnchor {
    pub issuer: String,
    pub member_state: Option<String>,
    pub allowed_algs: Vec<String>,
    pub max_assurance_level: String,
    pub allowed_formats: Vec<String>,
    pub key_resolution: KeyResolution,
    pub display_name: Option<std::collections::BTreeMap<String, String>>,
}

/// Wallet (EUDI) login configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EudiConfig {
    pub enabled: bool,
    pub requested_attributes: Vec<String>,
    pub trust_anchors: Vec<TrustAnchor>,
    pub required_assurance_floor: Option<AssuranceFloor>,
    pub purpose: Option<String>,
    pub on_status_unavailable: String,
    pub max_status_staleness_seconds: u32,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl EudiConfig {
    pub fn defaults(now: OffsetDateTime) -> Self {
        EudiConfig {
            enabled: false,
            requested_attributes: Vec::new(),
            trust_anchors: Vec::new(),
            required_assurance_floor: None,
            purpose: None,
            on_status_unavailable: "accept_with_cache".into(),
            max_status_staleness_seconds: 3600,
            updated_at: now,
        }
    }
}

/// Wallet age-verification configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EudiAgeConfig {
    pub age_verification_enabled: bool,
    pub supported_member_states: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// Everything a tenant's operators configure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TenantSettings {
    pub security: SecuritySettings,
    pub email_domains: EmailDomains,
    pub anonymous: AnonymousSettings,
    /// Whether guest sign-ins were ever enabled (the privileged-role confirmation is asked
    /// only the first time).
    pub anonymous_ever_enabled: bool,
    pub default_role: DefaultRole,
    /// The WebAuthn relying-party id; `None`: the host of the base URL.
    pub passkey_rp_id: Option<String>,
    /// Exact origins accepted in passkey ceremonies besides `https://<rp id>` and its
    /// subdomains (`http://localhost:PORT`, `android:apk-key-hash:...`); at most 20.
    #[serde(default)]
    pub passkey_origins: Vec<String>,
    pub eudi: EudiConfig,
    pub eudi_age: EudiAgeConfig,
    /// Browser origins (`scheme://host[:port]`, normalized) that may call the end-user API;
    /// empty: any origin.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    #[serde(default)]
    pub users: UserSettings,
    /// Where the hosted pages send users back to.
    #[serde(default)]
    pub urls: UrlSettings,
    /// RFC 7591 dynamic registration of public clients (MCP clients); off by default.
    #[serde(default)]
    pub dynamic_client_registration: bool,
    /// Minor protection: guardian consent below the age of digital consent (GDPR art. 8).
    #[serde(default)]
    pub minors: MinorSettings,
    /// How the hosted pages look for this tenant.
    #[serde(default)]
    pub branding: Branding,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// A change of the branding: `Some(None)` clears a field, `None` keeps it.
#[derive(Clone, Debug, Default)]
pub struct BrandingPatch {
    pub logo_url: Option<Option<String>>,
    pub primary_color: Option<Option<String>>,
    pub terms_url: Option<Option<String>>,
    pub privacy_url: Option<Option<String>>,
}

/// How the hosted pages look for a tenant: its logo above each page and the colour of the
/// primary buttons (the pages' own look where unset).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Branding {
    /// An https image URL, at most 2048 characters.
    pub logo_url: Option<String>,
    /// `#rrggbb`, dark enough for the buttons' white text (WCAG AA: 4.5:1).
    pub primary_color: Option<String>,
    /// The app's terms and its privacy policy (https URLs), linked where a sign-up consents.
    #[serde(default)]
    pub terms_url: Option<String>,
    #[serde(default)]
    pub privacy_url: Option<String>,
}

/// Minor protection (GDPR art. 8): with it on, registration needs a date of birth (or a
/// wallet's age proof), and an account of someone younger than `digital_consent_age` is held
/// until a guardian consents. The other fields are the consent receipt's text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MinorSettings {
    pub minor_protection_enabled: bool,
    /// 13-16, by the member state's law.
    pub digital_consent_age: u8,
    /// The controller named on the receipt; `None`: the tenant's name.
    pub controller_name: Option<String>,
    pub lawful_basis: String,
    pub purposes: Vec<String>,
    pub data_categories: Vec<String>,
    pub retention: String,
    /// The DPIA version the tenant linked to this processing (spec 2.7 DpiaVcGateLink).
    pub dpia: Option<DpiaLink>,
    /// The consent page's text in other languages of the hosted pages, by language; a
    /// guardian reading in one of them sees it. The receipt keeps the text above.
    #[serde(default)]
    pub translations: std::collections::BTreeMap<String, ConsentTexts>,
}

/// What a guardian is asked to consent to, in one language.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsentTexts {
    pub lawful_basis: String,
    pub purposes: Vec<String>,
    pub data_categories: Vec<String>,
    pub retention: String,
}

/// Spec 2.7 DpiaVcGateLink.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DpiaLink {
    pub dpia_key: uuid::Uuid,
    pub dpia_version: u32,
    pub dpia_content_hash: String,
    #[serde(with = "time::serde::rfc3339")]
    pub linked_at: OffsetDateTime,
}

impl Default for MinorSettings {
    fn default() -> Self {
        MinorSettings {
            minor_protection_enabled: false,
            digital_consent_age: 16,
            controller_name: None,
            lawful_basis: "consent given by the holder of parental responsibility \
                           (GDPR art. 6(1)(a) and art. 8)"
                .to_owned(),
            purposes: vec!["providing the account and signing in".to_owned()],
            data_categories: vec![
                "e-mail address".to_owned(),
                "date of birth".to_owned(),
                "sign-in activity".to_owned(),
            ],
            retention: "until the account is deleted, or 30 days after consent is declined"
                .to_owned(),
            dpia: None,
            translations: std::collections::BTreeMap::new(),
        }
    }
}

/// The tenant's app: where the hosted pages send users back to. Every `redirect_to` a
/// request carries must be one of these exactly (never an open redirect).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlSettings {
    /// The app's address: the default destination when a link carries no `redirect_to`.
    pub site_url: Option<String>,
    /// Other exact destinations a request may name.
    pub redirect_urls: Vec<String>,
}

impl UrlSettings {
    /// Whether `url` may be a `redirect_to`.
    pub fn allows(&self, url: &str) -> bool {
        self.site_url.as_deref() == Some(url) || self.redirect_urls.iter().any(|u| u == url)
    }

    /// Where a link that asked for `redirect_to` ends now: that URL while it is still
    /// allowed, else the site URL.
    pub fn destination(&self, redirect_to: Option<&str>) -> Option<String> {
        match redirect_to {
            Some(u) if self.allows(u) => Some(u.to_owned()),
            _ => self.site_url.clone(),
        }
    }
}

/// What the tenant's users may do about their own accounts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserSettings {
    /// Whether `DELETE /v1/users/me` erases the caller (GDPR art. 17 without a ticket).
    #[serde(default = "yes")]
    pub self_service_deletion_enabled: bool,
    /// The language of mail and pages for users who chose none (`en`, `pl`, `de`, `fr`, `es`).
    #[serde(default = "english")]
    pub default_locale: String,
}

fn english() -> String {
    "en".to_owned()
}

impl Default for UserSettings {
    fn default() -> Self {
        UserSettings {
            self_service_deletion_enabled: true,
            default_locale: english(),
        }
    }
}

impl TenantSettings {
    pub fn defaults(now: OffsetDateTime) -> Self {
        TenantSettings {
            security: SecuritySettings::default(),
            email_domains: EmailDomains::default(),
            anonymous: AnonymousSettings::default(),
            anonymous_ever_enabled: false,
            default_role: DefaultRole::Member,
            passkey_rp_id: None,
            passkey_origins: Vec::new(),
            eudi: EudiConfig::defaults(now),
            eudi_age: EudiAgeConfig {
                age_verification_enabled: false,
                supported_member_states: Vec::new(),
                updated_at: now,
            },
            allowed_origins: Vec::new(),
            users: UserSettings::default(),
            urls: UrlSettings::default(),
            dynamic_client_registration: false,
            minors: MinorSettings::default(),
            branding: Branding::default(),
            updated_at: now,
        }
    }
}

tessera_storage::record!(
    TenantSettings in TenantRecord: Kind::TenantSettings, "tenant settings", version 1
);

/// A sealed tenant secret (the BYOK SMS token), keyed by its name.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TenantSecret {
    pub sealed: tessera_storage::Sealed,
}

tessera_storage::record!(
    TenantSecret in TenantRecord: Kind::TenantSecret, "tenant secret", version 1
);

/// Name of the BYOK SMS auth-token secret.
pub const BYOK_AUTH_TOKEN: &[u8] = b"byok_provider_auth_token";

/// A partial update of the security settings: `None` leaves a field alone; for nullable fields
/// `Some(None)` clears it. The rules of its values are in [`rules`].
#[derive(Clone, Default)]
pub struct SecurityPatch {
    pub mfa_policy: Option<MfaPolicy>,
    pub mfa_grace_period_days: Option<u32>,
    pub block_disposable_emails: Option<bool>,
    pub block_email_subaddresses: Option<bool>,
    pub automatic_account_linking_enabled: Option<bool>,
    pub explicit_account_linking_enabled: Option<bool>,
    pub sms_otp_enabled: Option<bool>,
    pub sms_otp_monthly_cap: Option<u32>,
    pub byok_provider_account_sid: Option<Option<String>>,
    pub byok_provider_auth_token: Option<Option<String>>,
    pub byok_provider_messaging_service_sid: Option<Option<String>>,
    pub magic_link_enabled: Option<bool>,
    pub email_otp_enabled: Option<bool>,
    /// `Some(None)` and `Some(Some([]))` both restore the full platform allowlist.
    pub sms_allowed_countries: Option<Option<Vec<String>>>,
}

impl std::fmt::Debug for SecurityPatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecurityPatch(<fields>)")
    }
}

/// One change to a tenant's settings.
#[derive(Clone, Debug)]
pub enum SettingsChange {
    Security(Box<SecurityPatch>),
    EmailDomains(EmailDomains),
    Anonymous {
        enabled: Option<bool>,
        ttl_days: Option<u32>,
        /// The `X-Service-Confirm: privileged-default-role` header was sent.
        confirmed_privileged: bool,
    },
    DefaultRole(DefaultRole),
    /// The relying-party id (`Some(None)`: the accounts URL's host) and the extra origins
    /// (one listed twice is kept once, in the order first given); `None` keeps a field.
    PasskeyDomain {
        rp_id: Option<Option<String>>,
        origins: Option<Vec<String>>,
    },
    Eudi(Box<EudiConfig>),
    /// The age-verification configuration (a member state listed twice is kept once).
    EudiAge(EudiAgeConfig),
    /// The whole list of allowed browser origins, normalized.
    AllowedOrigins(Vec<String>),
    Users {
        self_service_deletion_enabled: Option<bool>,
        /// One of the five languages, checked by the caller.
        default_locale: Option<String>,
    },
    /// The app's URLs, normalized by the caller.
    Urls(UrlSettings),
    /// Agent-related settings: dynamic client registration on or off.
    Agents {
        dynamic_client_registration: bool,
    },
    /// The whole minor-protection setting.
    Minors(Box<MinorSettings>),
    /// The hosted pages' branding.
    Branding(Box<BrandingPatch>),
}

/// What the HTTP edge checks before a request reaches the tenant's actor, published by the
/// actor (`TenantCells::edge`) so that the check costs no hop.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EdgePolicy {
    /// Browser origins that may call the end-user API; empty: any.
    pub allowed_origins: Vec<String>,
    /// The destinations a `redirect_to` may name.
    pub urls: UrlSettings,
    /// How the hosted pages look.
    pub branding: Branding,
}

impl EdgePolicy {
    pub fn of(settings: &TenantSettings) -> Self {
        EdgePolicy {
            allowed_origins: settings.allowed_origins.clone(),
            urls: settings.urls.clone(),
            branding: settings.branding.clone(),
        }
    }

    /// Whether a request from the browser origin `origin` (the `Origin` header, exactly as
    /// sent) may proceed.
    pub fn allows_origin(&self, origin: &str) -> bool {
        self.allowed_origins.is_empty() || self.allowed_origins.iter().any(|o| o == origin)
    }
}

/// What applying a change needs besides the settings themselves.
pub struct ApplyContext {
    /// Whether a BYOK SMS auth token is stored now.
    pub byok_token_set: bool,
    pub tier: Tier,
    /// The highest monthly text message cap on the platform's account for the tier.
    pub platform_sms_cap: u32,
    pub now: OffsetDateTime,
}

/// What becomes of the stored BYOK SMS auth token.
#[derive(Debug, PartialEq, Eq)]
pub enum ByokToken {
    Keep,
    /// Seal and store this one.
    Set(String),
    Clear,
}

/// A change applied: the settings to store, the names of the fields that changed (for the
/// audit event; none means nothing is written), the event's type and the token's fate.
#[derive(Debug)]
pub struct Applied {
    pub next: TenantSettings,
    pub changed: Vec<String>,
    pub event_type: &'static str,
    pub byok_token: ByokToken,
    /// Whether a BYOK token is stored once this is applied.
    pub byok_token_set: bool,
}

impl TenantSettings {
    /// Applies one change to a copy of these settings: the change's own rules
    /// ([`SettingsChange::validate`]) and every rule that depends on the settings themselves
    /// (the privileged-role confirmation, the platform's SMS cap) are checked here, so a
    /// refused change leaves nothing to undo.
    pub fn apply(&self, change: SettingsChange, cx: &ApplyContext) -> Result<Applied, TenantError> {
        change.validate()?;
        let mut next = self.clone();
        let mut changed = Vec::new();
        let mut byok_token = ByokToken::Keep;
        let mut byok_token_set = cx.byok_token_set;
        let event_type = match change {
            SettingsChange::Security(patch) => {
                apply_security(
                    &mut next,
                    *patch,
                    &mut changed,
                    (&mut byok_token, &mut byok_token_set),
                    self.updated_at,
                    cx,
                )?;
                "settings.security.updated"
            }
            SettingsChange::EmailDomains(domains) => {
                if next.email_domains.allowlist != domains.allowlist {
                    changed.push("allowlist".into());
                }
                if next.email_domains.blocklist != domains.blocklist {
                    changed.push("blocklist".into());
                }
                next.email_domains = domains;
                "settings.email_domains.updated"
            }
            SettingsChange::Anonymous {
                enabled,
                ttl_days,
                confirmed_privileged,
            } => {
                let enabling = enabled == Some(true) && !next.anonymous.anonymous_signins_enabled;
                if enabling
                    && !next.anonymous_ever_enabled
                    && next.default_role.is_privileged()
                    && !confirmed_privileged
                {
                    return Err(TenantError::Settings(
                        SettingsError::PrivilegedDefaultRoleUnconfirmed {
                            default_role: next.default_role,
                        },
                    ));
                }
                set(
                    &mut next.anonymous.anonymous_signins_enabled,
                    enabled,
                    "anonymous_signins_enabled",
                    &mut changed,
                );
                set(
                    &mut next.anonymous.anonymous_user_ttl_days,
                    ttl_days,
                    "anonymous_user_ttl_days",
                    &mut changed,
                );
                if enabling {
                    next.anonymous_ever_enabled = true;
                }
                "settings.anonymous.updated"
            }
            SettingsChange::DefaultRole(role) => {
                set(
                    &mut next.default_role,
                    Some(role),
                    "default_role",
                    &mut changed,
                );
                "settings.roles.updated"
            }
            SettingsChange::PasskeyDomain { rp_id, origins } => {
                set(
                    &mut next.passkey_rp_id,
                    rp_id,
                    "passkey_rp_id",
                    &mut changed,
                );
                set(
                    &mut next.passkey_origins,
                    origins.map(first_of_each),
                    "passkey_origins",
                    &mut changed,
                );
                "settings.passkey_domain.updated"
            }
            SettingsChange::Eudi(mut config) => {
                config.updated_at = next.eudi.updated_at;
                if *config != next.eudi {
                    changed.extend(eudi_fields_changed(&next.eudi, &config));
                    config.updated_at = cx.now;
                    next.eudi = *config;
                }
                "settings.eudi.updated"
            }
            SettingsChange::EudiAge(mut config) => {
                config.updated_at = next.eudi_age.updated_at;
                config.supported_member_states = first_of_each(config.supported_member_states);
                if config != next.eudi_age {
                    if config.age_verification_enabled != next.eudi_age.age_verification_enabled {
                        changed.push("age_verification_enabled".into());
                    }
                    if config.supported_member_states != next.eudi_age.supported_member_states {
                        changed.push("supported_member_states".into());
                    }
                    config.updated_at = cx.now;
                    next.eudi_age = config;
                }
                "settings.eudi_age.updated"
            }
            SettingsChange::AllowedOrigins(origins) => {
                set(
                    &mut next.allowed_origins,
                    Some(origins),
                    "allowed_origins",
                    &mut changed,
                );
                "settings.cors.updated"
            }
            SettingsChange::Users {
                self_service_deletion_enabled,
                default_locale,
            } => {
                set(
                    &mut next.users.self_service_deletion_enabled,
                    self_service_deletion_enabled,
                    "self_service_deletion_enabled",
                    &mut changed,
                );
                set(
                    &mut next.users.default_locale,
                    default_locale,
                    "default_locale",
                    &mut changed,
                );
                "settings.users.updated"
            }
            SettingsChange::Urls(urls) => {
                set(
                    &mut next.urls.site_url,
                    Some(urls.site_url),
                    "site_url",
                    &mut changed,
                );
                set(
                    &mut next.urls.redirect_urls,
                    Some(urls.redirect_urls),
                    "redirect_urls",
                    &mut changed,
                );
                "settings.urls.updated"
            }
            SettingsChange::Agents {
                dynamic_client_registration,
            } => {
                set(
                    &mut next.dynamic_client_registration,
                    Some(dynamic_client_registration),
                    "dynamic_client_registration",
                    &mut changed,
                );
                "settings.agents.updated"
            }
            SettingsChange::Minors(minors) => {
                if next.minors != *minors {
                    let m = &next.minors;
                    let fields = [
                        (
                            "minor_protection_enabled",
                            m.minor_protection_enabled != minors.minor_protection_enabled,
                        ),
                        (
                            "digital_consent_age",
                            m.digital_consent_age != minors.digital_consent_age,
                        ),
                        (
                            "controller_name",
                            m.controller_name != minors.controller_name,
                        ),
                        ("lawful_basis", m.lawful_basis != minors.lawful_basis),
                        ("purposes", m.purposes != minors.purposes),
                        (
                            "data_categories",
                            m.data_categories != minors.data_categories,
                        ),
                        ("retention", m.retention != minors.retention),
                        ("dpia", m.dpia != minors.dpia),
                        ("translations", m.translations != minors.translations),
                    ];
                    changed.extend(fields.iter().filter(|f| f.1).map(|f| f.0.to_owned()));
                    next.minors = *minors;
                }
                "settings.minors.updated"
            }
            SettingsChange::Branding(patch) => {
                let BrandingPatch {
                    logo_url,
                    primary_color,
                    terms_url,
                    privacy_url,
                } = *patch;
                let b = &mut next.branding;
                for (field, value, name) in [
                    (&mut b.logo_url, logo_url, "logo_url"),
                    (&mut b.terms_url, terms_url, "terms_url"),
                    (&mut b.privacy_url, privacy_url, "privacy_url"),
                ] {
                    set(field, value, name, &mut changed);
                }
                set(
                    &mut next.branding.primary_color,
                    primary_color.map(|c| c.map(|c| c.to_ascii_lowercase())),
                    "primary_color",
                    &mut changed,
                );
                "settings.branding.updated"
            }
        };
        if !changed.is_empty() {
            next.updated_at = cx.now;
        }
        Ok(Applied {
            next,
            changed,
            event_type,
            byok_token,
            byok_token_set,
        })
    }
}

/// `list` with each entry kept once, where it first stands.
fn first_of_each(list: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    list.into_iter()
        .filter(|e| seen.insert(e.clone()))
        .collect()
}

/// Sets `*slot` to `value` and records `name` when it changes.
fn set<T: PartialEq>(slot: &mut T, value: Option<T>, name: &str, changed: &mut Vec<String>) {
    if let Some(v) = value {
        if *slot != v {
            *slot = v;
            changed.push(name.to_owned());
        }
    }
}

/// A security patch (spec 2.8) applied to `next`; `last_change` pins the moment an MFA
/// requirement of older settings began.
fn apply_security(
    next: &mut TenantSettings,
    p: SecurityPatch,
    changed: &mut Vec<String>,
    (byok_token, byok_token_set): (&mut ByokToken, &mut bool),
    last_change: OffsetDateTime,
    cx: &ApplyContext,
) -> Result<(), TenantError> {
    let s = &mut next.security;
    if p.mfa_policy == Some(MfaPolicy::Required) && s.mfa_policy != MfaPolicy::Required {
        // The grace period of users without MFA counts from now.
        s.mfa_required_since = Some(cx.now);
    } else if s.mfa_policy == MfaPolicy::Required && s.mfa_required_since.is_none() {
        // Settings written before the moment was kept: pin it to the last change, so
        // this write does not move every user's deadline.
        s.mfa_required_since = Some(last_change);
    }
    set(&mut s.mfa_policy, p.mfa_policy, "mfa_policy", changed);
    set(
        &mut s.mfa_grace_period_days,
        p.mfa_grace_period_days,
        "mfa_grace_period_days",
        changed,
    );
    set(
        &mut s.block_disposable_emails,
        p.block_disposable_emails,
        "block_disposable_emails",
        changed,
    );
    set(
        &mut s.block_email_subaddresses,
        p.block_email_subaddresses,
        "block_email_subaddresses",
        changed,
    );
    set(
        &mut s.automatic_account_linking_enabled,
        p.automatic_account_linking_enabled,
        "automatic_account_linking_enabled",
        changed,
    );
    set(
        &mut s.explicit_account_linking_enabled,
        p.explicit_account_linking_enabled,
        "explicit_account_linking_enabled",
        changed,
    );
    set(
        &mut s.sms_otp_enabled,
        p.sms_otp_enabled,
        "sms_otp_enabled",
        changed,
    );
    set(
        &mut s.sms_otp_monthly_cap,
        p.sms_otp_monthly_cap,
        "sms_otp_monthly_cap",
        changed,
    );
    set(
        &mut s.byok_provider_account_sid,
        p.byok_provider_account_sid,
        "byok_provider_account_sid",
        changed,
    );
    set(
        &mut s.byok_provider_messaging_service_sid,
        p.byok_provider_messaging_service_sid,
        "byok_provider_messaging_service_sid",
        changed,
    );
    set(
        &mut s.magic_link_enabled,
        p.magic_link_enabled,
        "magic_link_enabled",
        changed,
    );
    set(
        &mut s.email_otp_enabled,
        p.email_otp_enabled,
        "email_otp_enabled",
        changed,
    );
    let countries = p
        .sms_allowed_countries
        .map(|c| c.filter(|list| !list.is_empty()));
    set(
        &mut s.sms_allowed_countries,
        countries,
        "sms_allowed_countries",
        changed,
    );
    match p.byok_provider_auth_token {
        None => {}
        Some(Some(token)) => {
            *byok_token = ByokToken::Set(token);
            *byok_token_set = true;
            changed.push("byok_provider_auth_token".into());
        }
        Some(None) if *byok_token_set => {
            *byok_token = ByokToken::Clear;
            *byok_token_set = false;
            changed.push("byok_provider_auth_token".into());
        }
        Some(None) => {}
    }
    // On the platform's account the operator pays: a cap above the tier's ceiling is
    // refused (checked against the account the patch leaves, so one patch may set the
    // tenant's own account and a large cap together).
    if let Some(cap) = p.sms_otp_monthly_cap {
        let own = s.byok_provider_account_sid.is_some()
            && s.byok_provider_messaging_service_sid.is_some()
            && *byok_token_set;
        let max = cx.platform_sms_cap;
        if !own && cap > max {
            return Err(TenantError::Sms(SmsError::CapAboveTier {
                max,
                tier: cx.tier,
            }));
        }
    }
    Ok(())
}

/// Top-level wallet-configuration fields that differ.
fn eudi_fields_changed(old: &EudiConfig, new: &EudiConfig) -> Vec<String> {
    let (Ok(a), Ok(b)) = (serde_json::to_value(old), serde_json::to_value(new)) else {
        return vec!["eudi".into()];
    };
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return vec!["eudi".into()];
    };
    b.iter()
        .filter(|(k, v)| k.as_str() != "updated_at" && a.get(*k) != Some(v))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Where a user without MFA stands under the tenant's policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enrollment {
    NotRequired,
    /// Required by this moment; sign-ins are allowed until then.
    Grace(OffsetDateTime),
    /// The grace period is over: only MFA setup is allowed.
    Overdue,
}

/// The policy's verdict for a user without MFA: the grace runs from the later of the moment
/// the policy became `required` and the user's sign-up.
pub fn enrollment(
    policy: MfaPolicy,
    required_since: OffsetDateTime,
    grace_days: u32,
    user_created: OffsetDateTime,
    now: OffsetDateTime,
) -> Enrollment {
    if policy != MfaPolicy::Required {
        return Enrollment::NotRequired;
    }
    let deadline = required_since.max(user_created) + Duration::days(i64::from(grace_days));
    if now < deadline {
        Enrollment::Grace(deadline)
    } else {
        Enrollment::Overdue
    }
}

#[cfg(test)]
mod tests;
