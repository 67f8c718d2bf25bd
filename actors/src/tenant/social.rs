//! Social sign-in providers: the ten the platform speaks to, the protocol of each and how far
//! its e-mail addresses are trusted, and each tenant's configuration of them (the tenant's
//! client id at the provider, its client secret or, for Apple, the key that signs one, sealed
//! under the master key, and the scopes asked for).
//!
//! Trust decides what a provider's e-mail address may do (spec 4.2): `always_verified`
//! providers only hand out addresses they own or checked; `provider_verified` ones say per
//! address whether it was checked; `never_trust` ones say nothing reliable, so their address
//! never links to, or claims, an existing account.

use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, Record, Sealed, TenantRecord};
use time::OffsetDateTime;

use super::{
    audit::{AuditContext, AuditEvent},
    state::TenantState,
};
use crate::error::TenantError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Google,
    Apple,
    Microsoft,
    Gitlab,
    Linkedin,
    Slack,
    Github,
    Discord,
    Facebook,
    X,
}

/// How the platform signs a user in with a provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// OpenID Connect: discovery, a signed ID token.
    Oidc,
    /// OAuth 2 and the provider's REST API for the profile.
    OAuth2,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Oidc => "oidc",
            Protocol::OAuth2 => "oauth2",
        }
    }
}

/// How far a provider's e-mail address is trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmailTrust {
    /// The provider hands out only addresses it owns or has checked.
    AlwaysVerified,
    /// The provider says, per address, whether it checked it.
    ProviderVerified,
    /// Whatever the provider says, the address proves nothing.
    NeverTrust,
}

impl EmailTrust {
    pub fn as_str(self) -> &'static str {
        match self {
            EmailTrust::AlwaysVerified => "always_verified",
            EmailTrust::ProviderVerified => "provider_verified",
            EmailTrust::NeverTrust => "never_trust",
        }
    }
}

impl Provider {
    pub const ALL: [Provider; 10] = [
        Provider::Google,
        Provider::Apple,
        Provider::Microsoft,
        Provider::Gitlab,
        Provider::Linkedin,
        Provider::Slack,
        Provider::Github,
        Provider::Discord,
        Provider::Facebook,
        Provider::X,
    ];

    /// The provider of a lowercase name (as in paths).
    pub fn parse(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Google => "google",
            Provider::Apple => "apple",
            Provider::Microsoft => "microsoft",
            Provider::Gitlab => "gitlab",
            Provider::Linkedin => "linkedin",
            Provider::Slack => "slack",
            Provider::Github => "github",
            Provider::Discord => "discord",
            Provider::Facebook => "facebook",
            Provider::X => "x",
        }
    }

    pub fn protocol(self) -> Protocol {
        match self {
            Provider::Google
            | Provider::Apple
            | Provider::Microsoft
            | Provider::Gitlab
            | Provider::Linkedin
            | Provider::Slack => Protocol::Oidc,
            Provider::Github | Provider::Discord | Provider::Facebook | Provider::X => {
                Protocol::OAuth2
            }
        }
    }

    pub fn email_trust(self) -> EmailTrust {
        match self {
            Provider::Google | Provider::Apple => EmailTrust::AlwaysVerified,
            Provider::Microsoft
            | Provider::Gitlab
            | Provider::Linkedin
            | Provider::Slack
            | Provider::Github
            | Provider::Discord => EmailTrust::ProviderVerified,
            Provider::Facebook | Provider::X => EmailTrust::NeverTrust,
        }
    }

    /// The scopes asked for when the tenant names none: the user's id, e-mail address and
    /// name, nothing more.
    pub fn default_scopes(self) -> &'static [&'static str] {
        match self {
            Provider::Google
            | Provider::Microsoft
            | Provider::Gitlab
            | Provider::Linkedin
            | Provider::Slack => &["openid", "email", "profile"],
            Provider::Apple => &["name", "email"],
            Provider::Github => &["read:user", "user:email"],
            Provider::Discord => &["identify", "email"],
            Provider::Facebook => &["public_profile", "email"],
            Provider::X => &["users.read", "tweet.read"],
        }
    }

    /// A scope every request must carry, whatever the tenant asks for (`openid`, without which
    /// an OpenID provider sends no ID token; Apple sends one without it).
    pub fn required_scope(self) -> Option<&'static str> {
        (self.protocol() == Protocol::Oidc && self != Provider::Apple).then_some("openid")
    }

    /// Whether the provider signs in with a client secret the tenant pastes (all but Apple,
    /// whose client secret is a JWT signed with the tenant's key).
    pub fn takes_client_secret(self) -> bool {
        self != Provider::Apple
    }
}

/// Apple's identifiers of the key that signs the client secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppleKeyId {
    /// The Apple developer team (10 characters).
    pub team_id: String,
    /// The key's id (10 characters).
    pub key_id: String,
}

/// A tenant's configuration of one provider, keyed by the provider's name.
#[derive(Clone, Serialize, Deserialize)]
pub struct SocialProviderRecord {
    pub provider: Provider,
    pub enabled: bool,
    /// The tenant's client id at the provider (Apple: the Services ID).
    pub client_id: Option<String>,
    /// `None`: the provider's defaults.
    pub scopes: Option<Vec<String>>,
    /// Apple only.
    pub apple: Option<AppleKeyId>,
    /// Microsoft only: `common`, `organizations`, `consumers`, or a directory's id or domain.
    pub microsoft_tenant: Option<String>,
    /// The client secret (Apple: the PKCS#8 PEM private key), sealed and bound to this tenant
    /// and provider.
    pub secret: Option<Sealed>,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl std::fmt::Debug for SocialProviderRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocialProviderRecord")
            .field("provider", &self.provider)
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

impl Record for SocialProviderRecord {
    const KIND: Kind = Kind::SocialProvider;
    const NAME: &'static str = "social provider";
    const VERSION: u16 = 1;
}
impl TenantRecord for SocialProviderRecord {}

/// The whole configuration of one provider as the dashboard puts it, its fields checked by the
/// caller. A secret left out keeps the stored one (for the same client id).
#[derive(Clone)]
pub struct SocialConfigPut {
    pub enabled: bool,
    pub client_id: Option<String>,
    /// A new client secret (Apple: the private key's PEM).
    pub secret: Option<String>,
    pub apple: Option<AppleKeyId>,
    pub microsoft_tenant: Option<String>,
    pub scopes: Option<Vec<String>>,
}

impl std::fmt::Debug for SocialConfigPut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SocialConfigPut(<fields>)")
    }
}

/// A provider's configuration as the dashboard shows it: never the secret.
#[derive(Clone, Debug)]
pub struct SocialProviderView {
    pub provider: Provider,
    pub enabled: bool,
    pub client_id: Option<String>,
    pub secret_set: bool,
    pub apple: Option<AppleKeyId>,
    pub microsoft_tenant: Option<String>,
    /// The scopes asked for (the defaults when the tenant named none).
    pub scopes: Vec<String>,
    /// `None`: never configured.
    pub updated_at: Option<OffsetDateTime>,
}

impl SocialProviderView {
    fn of(provider: Provider, record: Option<&SocialProviderRecord>) -> Self {
        let scopes = record.and_then(|r| r.scopes.clone()).unwrap_or_else(|| {
            provider
                .default_scopes()
                .iter()
                .map(|s| (*s).to_owned())
                .collect()
        });
        SocialProviderView {
            provider,
            enabled: record.is_some_and(|r| r.enabled),
            client_id: record.and_then(|r| r.client_id.clone()),
            secret_set: record.is_some_and(|r| r.secret.is_some()),
            apple: record.and_then(|r| r.apple.clone()),
            microsoft_tenant: record.and_then(|r| r.microsoft_tenant.clone()),
            scopes,
            updated_at: record.map(|r| r.updated_at),
        }
    }
}

#[derive(Clone, Debug)]
pub enum SocialConfigCmd {
    Get(Provider),
    Put(Provider, Box<SocialConfigPut>),
}

/// Whether `pem` is a P-256 private key in PKCS#8 PEM (an Apple `.p8` file) that signs an
/// ES256 JWT, as Apple's client secret is.
pub fn apple_key_signs(pem: &str) -> bool {
    let Some(der) = pkcs8_der(pem) else {
        return false;
    };
    let key = jsonwebtoken::EncodingKey::from_ec_der(&der);
    let header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    jsonwebtoken::encode(&header, &serde_json::json!({ "sub": "check" }), &key).is_ok()
}

/// The DER inside a PEM `PRIVATE KEY` block (PKCS#8, RFC 7468), whatever the line breaks.
pub fn pkcs8_der(pem: &str) -> Option<Vec<u8>> {
    use base64::{engine::general_purpose::STANDARD, Engine};
    const BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
    const END: &str = "-----END PRIVATE KEY-----";
    let body = pem.trim().strip_prefix(BEGIN)?.strip_suffix(END)?;
    let b64: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    STANDARD.decode(b64).ok().filter(|d| !d.is_empty())
}

/// The name a provider's secret is sealed under.
fn secret_name(provider: Provider) -> Vec<u8> {
    format!("social/{}", provider.as_str()).into_bytes()
}

impl TenantState {
    pub fn social_config_cmd(
        &mut self,
        cmd: SocialConfigCmd,
        ctx: &AuditContext,
    ) -> Result<SocialProviderView, TenantError> {
        match cmd {
            SocialConfigCmd::Get(provider) => {
                let record = self
                    .store
                    .get::<SocialProviderRecord>(provider.as_str().as_bytes())?;
                Ok(SocialProviderView::of(provider, record.as_ref()))
            }
            SocialConfigCmd::Put(provider, put) => self.social_config_put(provider, *put, ctx),
        }
    }

    /// Replaces a provider's configuration. A changed client id needs its secret in the same
    /// request; a provider is enabled only with a client id and a secret.
    fn social_config_put(
        &mut self,
        provider: Provider,
        put: SocialConfigPut,
        ctx: &AuditContext,
    ) -> Result<SocialProviderView, TenantError> {
        let key = provider.as_str().as_bytes();
        let current = self.store.get::<SocialProviderRecord>(key)?;
        let secret_field = if provider.takes_client_secret() {
            "client_secret"
        } else {
            "apple.private_key"
        };
        let old_client = current.as_ref().and_then(|r| r.client_id.as_ref());
        let old_secret = current.as_ref().and_then(|r| r.secret.clone());
        // A stored secret stays with its client id: kept for the same id, never handed on to
        // another one.
        let kept_secret = match (&put.secret, &put.client_id) {
            (Some(_), _) | (None, None) => None,
            (None, Some(id)) if old_client == Some(id) => old_secret,
            (None, Some(_)) if old_secret.is_some() => {
                return Err(TenantError::SocialCredentialMissing {
                    field: secret_field,
                    reason: "a new client_id needs its secret in the same request",
                })
            }
            (None, Some(_)) => None,
        };
        let secret = match &put.secret {
            Some(plain) => Some(
                self.master_key
                    .seal(&self.secret_aad(&secret_name(provider)), plain.as_bytes())?,
            ),
            None => kept_secret,
        };
        if put.enabled && secret.is_none() {
            return Err(TenantError::SocialCredentialMissing {
                field: secret_field,
                reason: "an enabled provider needs its secret",
            });
        }
        let next = SocialProviderRecord {
            provider,
            enabled: put.enabled,
            client_id: put.client_id,
            scopes: put.scopes,
            apple: put.apple,
            microsoft_tenant: put.microsoft_tenant,
            secret,
            updated_at: OffsetDateTime::now_utc(),
        };
        let mut changed: Vec<&str> = Vec::new();
        let was = current.as_ref();
        if was.is_some_and(|r| r.enabled) != next.enabled {
            changed.push("enabled");
        }
        if was.and_then(|r| r.client_id.as_ref()) != next.client_id.as_ref() {
            changed.push("client_id");
        }
        if put.secret.is_some()
            || (was.is_some_and(|r| r.secret.is_some()) && next.secret.is_none())
        {
            changed.push(secret_field);
        }
        if was.and_then(|r| r.scopes.as_ref()) != next.scopes.as_ref() {
            changed.push("scopes");
        }
        if was.and_then(|r| r.apple.as_ref()) != next.apple.as_ref() {
            changed.push("apple");
        }
        if was.and_then(|r| r.microsoft_tenant.as_ref()) != next.microsoft_tenant.as_ref() {
            changed.push("microsoft_tenant");
        }
        if changed.is_empty() {
            return Ok(SocialProviderView::of(provider, was));
        }
        let mut fx = self.effects();
        fx.batch.put(key, &next)?;
        let fields = changed.iter().map(|f| (*f).to_owned()).collect();
        let mut event = AuditEvent::new("settings.social.updated", ctx, fields);
        event.at = next.updated_at;
        event.metadata = serde_json::json!({
            "provider": provider.as_str(),
            "enabled": next.enabled,
        });
        fx.batch.put(&self.next_event_key(event.at), &event)?;
        self.commit(fx)?;
        Ok(SocialProviderView::of(provider, Some(&next)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_always_six_provider_two_never() {
        let count = |t: EmailTrust| {
            Provider::ALL
                .iter()
                .filter(|p| p.email_trust() == t)
                .count()
        };
        assert_eq!(count(EmailTrust::AlwaysVerified), 2);
        assert_eq!(count(EmailTrust::ProviderVerified), 6);
        assert_eq!(count(EmailTrust::NeverTrust), 2);
    }

    #[test]
    fn names_round_trip_and_match_serde() {
        for p in Provider::ALL {
            assert_eq!(Provider::parse(p.as_str()), Some(p));
            assert_eq!(
                serde_json::to_value(p).ok(),
                Some(serde_json::Value::String(p.as_str().to_owned()))
            );
        }
        assert_eq!(Provider::parse("Google"), None);
        assert_eq!(Provider::parse("twitter"), None);
    }

    #[test]
    fn default_scopes_carry_the_required_one() {
        for p in Provider::ALL {
            if let Some(s) = p.required_scope() {
                assert!(p.default_scopes().contains(&s), "{p:?}");
            }
        }
    }

    /// A key of `alg` made here, as PKCS#8 PEM.
    fn pem_of(alg: &'static aws_lc_rs::signature::EcdsaSigningAlgorithm) -> String {
        use base64::{engine::general_purpose::STANDARD, Engine};
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let der = aws_lc_rs::signature::EcdsaKeyPair::generate_pkcs8(alg, &rng)
            .map(|d| d.as_ref().to_vec())
            .unwrap_or_default();
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(der)
        )
    }

    #[test]
    fn an_apple_key_must_be_a_p256_pkcs8_key() {
        use aws_lc_rs::signature::{
            ECDSA_P256_SHA256_FIXED_SIGNING, ECDSA_P384_SHA384_FIXED_SIGNING,
        };
        assert!(apple_key_signs(&pem_of(&ECDSA_P256_SHA256_FIXED_SIGNING)));
        assert!(!apple_key_signs(&pem_of(&ECDSA_P384_SHA384_FIXED_SIGNING)));
        assert!(!apple_key_signs("not a key"));
        assert!(!apple_key_signs(
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
        ));
    }
}
