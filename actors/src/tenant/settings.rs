//! A tenant's settings, with the platform's defaults. The dashboard edits them; every
//! capability reads them from here.

use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, Record, TenantRecord};
use time::OffsetDateTime;

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

/// Everything a tenant's operators configure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TenantSettings {
    pub security: SecuritySettings,
    pub email_domains: EmailDomains,
    pub anonymous: AnonymousSettings,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl TenantSettings {
    pub fn defaults(now: OffsetDateTime) -> Self {
        TenantSettings {
            security: SecuritySettings::default(),
            email_domains: EmailDomains::default(),
            anonymous: AnonymousSettings::default(),
            updated_at: now,
        }
    }
}

impl Record for TenantSettings {
    const KIND: Kind = Kind::TenantSettings;
    const NAME: &'static str = "tenant settings";
    const VERSION: u16 = 1;
}
impl TenantRecord for TenantSettings {}
