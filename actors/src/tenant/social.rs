//! Social sign-in providers: the ten the platform speaks to, the protocol of each and how far
//! its e-mail addresses are trusted, and each tenant's configuration of them (the tenant's
//! client id at the provider, its client secret or, for Apple, the key that signs one, sealed
//! under the master key, and the scopes asked for).
//!
//! Trust decides what a provider's e-mail address may do (spec 4.2): `always_verified`
//! providers only hand out addresses they own or checked; `provider_verified` ones say per
//! address whether it was checked; `never_trust` ones say nothing reliable, so their address
//! never links to, or claims, an existing account.

pub mod memory;

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use tessera_storage::{ct_eq, random_token, sha256, Kind, Record, Sealed, TenantRecord};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    audit::{AuditContext, AuditEvent},
    credentials::Credential,
    effects::Effects,
    inventory::may_add,
    messages::{Bearer, PasswordlessLogin},
    records::UserRecord,
    sessions::Proof,
    state::TenantState,
};
use crate::{error::TenantError, throttle::throttle_ip};

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

    /// The name people know it by.
    pub fn display_name(self) -> &'static str {
        match self {
            Provider::Google => "Google",
            Provider::Apple => "Apple",
            Provider::Microsoft => "Microsoft",
            Provider::Gitlab => "GitLab",
            Provider::Linkedin => "LinkedIn",
            Provider::Slack => "Slack",
            Provider::Github => "GitHub",
            Provider::Discord => "Discord",
            Provider::Facebook => "Facebook",
            Provider::X => "X",
        }
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
    /// Keep the provider's tokens after a sign-in (sealed), for the user's app to call the
    /// provider's API; off: they are dropped once the user is known.
    #[serde(default)]
    pub store_tokens: bool,
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
    pub store_tokens: bool,
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
    pub store_tokens: bool,
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
            store_tokens: record.is_some_and(|r| r.store_tokens),
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
                    .cx
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
        let current = self.cx.store.get::<SocialProviderRecord>(key)?;
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
                self.cx
                    .master_key
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
        // Apple's key ids go with the key: kept with it, dropped with it.
        let apple = match (put.apple, put.secret.is_some(), secret.is_some()) {
            (Some(ids), _, _) => Some(ids),
            (None, false, true) => current.as_ref().and_then(|r| r.apple.clone()),
            _ => None,
        };
        let next = SocialProviderRecord {
            provider,
            enabled: put.enabled,
            client_id: put.client_id,
            scopes: put.scopes,
            apple,
            microsoft_tenant: put.microsoft_tenant,
            secret,
            store_tokens: put.store_tokens,
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
        if was.is_some_and(|r| r.store_tokens) != next.store_tokens {
            changed.push("store_provider_tokens");
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

// ---------------------------------------------------------------- sign-in flows

/// How long a sign-in may stay at the provider.
pub const SOCIAL_STATE_TTL: Duration = Duration::minutes(10);

/// The most expired flows, tickets and exchange records one daily run removes (in one batch).
const SOCIAL_SWEEP_MAX: usize = 200_000;

/// How long a callback's exchange token may wait for the app's back end.
pub const EXCHANGE_TTL: Duration = Duration::seconds(60);

/// A sign-in under way at a provider, keyed by the SHA-256 of its `state`: single use, for
/// [`SOCIAL_STATE_TTL`], in the browser holding the binding cookie.
#[derive(Clone, Serialize, Deserialize)]
pub struct SocialStateRecord {
    pub provider: Provider,
    /// Where the browser goes back to (one of the tenant's URLs when it was asked for).
    pub redirect_uri: String,
    pub nonce: String,
    pub pkce_verifier: String,
    /// SHA-256 of the cookie value that binds the flow to the browser that began it.
    pub binding_hash: [u8; 32],
    /// The guest whose bearer came with the authorize request: claimed in place by a trusted
    /// provider.
    pub guest: Option<Uuid>,
    /// Begun on the authorization server's hosted sign-in page, whose return page
    /// `redirect_uri` is.
    #[serde(default)]
    pub hosted: bool,
    /// The signed-in user the provider account is to be linked to (explicit linking).
    #[serde(default)]
    pub link_user: Option<Uuid>,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

impl std::fmt::Debug for SocialStateRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocialStateRecord")
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

impl Record for SocialStateRecord {
    const KIND: Kind = Kind::SocialState;
    const NAME: &'static str = "social sign-in state";
    const VERSION: u16 = 1;
}
impl TenantRecord for SocialStateRecord {}

/// A signed-in user's leave to link a provider (`POST /v1/users/me/link/{provider}`, past
/// the step-up gate), keyed by the SHA-256 of the ticket its authorize URL carries: single
/// use, [`SOCIAL_STATE_TTL`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SocialLinkTicketRecord {
    pub user_id: Uuid,
    pub provider: Provider,
    pub redirect_uri: String,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

impl Record for SocialLinkTicketRecord {
    const KIND: Kind = Kind::SocialLinkTicket;
    const NAME: &'static str = "social link ticket";
    const VERSION: u16 = 1;
}
impl TenantRecord for SocialLinkTicketRecord {}

/// A callback's outcome waiting for the exchange, keyed by the exchange token's `jti`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SocialExchangeRecord {
    pub user_id: Uuid,
    pub provider: Provider,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

impl Record for SocialExchangeRecord {
    const KIND: Kind = Kind::SocialExchange;
    const NAME: &'static str = "social exchange";
    const VERSION: u16 = 1;
}
impl TenantRecord for SocialExchangeRecord {}

/// A provider account linked to a user, keyed `provider | 0 | subject`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SocialIdentityRecord {
    pub user_id: Uuid,
    pub provider: Provider,
    /// The provider's id of the account.
    pub subject: String,
    /// The address the provider gave when it was linked.
    pub email: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub linked_at: OffsetDateTime,
}

impl Record for SocialIdentityRecord {
    const KIND: Kind = Kind::SocialIdentity;
    const NAME: &'static str = "social identity";
    const VERSION: u16 = 1;
}
impl TenantRecord for SocialIdentityRecord {}

/// `user id | provider` -> the subject: a user's linked provider accounts.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct UserIdentityIndex {
    pub subject: String,
}

impl Record for UserIdentityIndex {
    const KIND: Kind = Kind::UserIdentity;
    const NAME: &'static str = "user identity index";
    const VERSION: u16 = 1;
}
impl TenantRecord for UserIdentityIndex {}

pub(super) fn identity_key(provider: Provider, subject: &str) -> Vec<u8> {
    let mut k = provider.as_str().as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(subject.as_bytes());
    k
}

pub(super) fn user_identity_key(user: Uuid, provider: Provider) -> Vec<u8> {
    let mut k = user.as_bytes().to_vec();
    k.extend_from_slice(provider.as_str().as_bytes());
    k
}

/// What the authorize route needs to send the browser to the provider.
#[derive(Clone, Debug)]
pub struct SocialStart {
    /// Where the flow returns: the request's, or a link ticket's.
    pub redirect_uri: String,
    /// The `state` sent to the provider, `<tenant id, 32 hex digits>.<random>` (only its hash
    /// is stored).
    pub state: String,
    pub nonce: String,
    /// RFC 7636 S256 of the flow's verifier.
    pub code_challenge: String,
    /// The cookie value that binds the flow to this browser.
    pub binding: String,
    pub client_id: String,
    pub scopes: Vec<String>,
    pub microsoft_tenant: Option<String>,
}

/// A taken sign-in: what the callback needs to finish it at the provider, with the opened
/// secret (never logged, never answered).
#[derive(Clone)]
pub struct SocialPending {
    pub redirect_uri: String,
    /// Begun on the hosted sign-in page: `redirect_uri` is its return page.
    pub hosted: bool,
    /// Explicit linking: the user to link to.
    pub link_user: Option<Uuid>,
    pub nonce: String,
    pub pkce_verifier: String,
    pub guest: Option<Uuid>,
    pub client_id: String,
    /// The client secret, or Apple's private key (PEM).
    pub secret: String,
    pub apple: Option<AppleKeyId>,
    pub microsoft_tenant: Option<String>,
}

impl std::fmt::Debug for SocialPending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocialPending")
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

/// Who the provider says the user is, checked by the caller (the ID token's signature and
/// claims, or the provider's API over TLS).
#[derive(Clone, Debug)]
pub struct SocialIdentity {
    pub subject: String,
    pub email: Option<String>,
    /// What the provider says of the address, when it says anything (trust decides what it
    /// is worth).
    pub email_verified: Option<bool>,
    /// The provider's answer at the code exchange: kept (sealed) only when the tenant's
    /// configuration says so.
    pub tokens: ProviderTokens,
}

/// The tokens a provider answered for the user.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct ProviderTokens {
    pub access_token: String,
    pub refresh_token: Option<String>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    pub scope: Option<String>,
}

impl std::fmt::Debug for ProviderTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProviderTokens(<redacted>)")
    }
}

/// A linked account's provider tokens, sealed, keyed as its [`SocialIdentityRecord`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SocialTokenRecord {
    pub sealed: Sealed,
}

impl Record for SocialTokenRecord {
    const KIND: Kind = Kind::SocialToken;
    const NAME: &'static str = "social provider tokens";
    const VERSION: u16 = 1;
}
impl TenantRecord for SocialTokenRecord {}

/// Why a callback did not sign anyone in: the `error` the browser is sent back with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocialRefusal {
    /// The provider's address belongs to another account, and it may not be linked.
    EmailExists,
    /// The provider account is linked to another user.
    ProviderInUse,
    /// The guest was claimed (or signed up) meanwhile.
    AlreadyClaimed,
    /// The account is blocked by the tenant's admins.
    AccountBlocked,
    /// The user has another account of this provider linked already.
    AlreadyLinked,
    /// The tenant's e-mail policy refuses new accounts at the provider's address.
    EmailNotAllowed,
    /// Minor protection: accounts are made by registration with a date of birth.
    AgeRequired,
}

impl SocialRefusal {
    pub fn as_str(self) -> &'static str {
        match self {
            SocialRefusal::EmailExists => "email_exists",
            SocialRefusal::ProviderInUse => "provider_in_use",
            SocialRefusal::AlreadyClaimed => "already_claimed",
            SocialRefusal::AccountBlocked => "account_blocked",
            SocialRefusal::AlreadyLinked => "already_linked",
            SocialRefusal::EmailNotAllowed => "email_not_allowed",
            SocialRefusal::AgeRequired => "age_required",
        }
    }
}

/// A callback that found its user: the exchange token's `jti` and `sub`.
#[derive(Clone, Debug)]
pub struct SocialFinished {
    pub user_id: Uuid,
    pub jti: Uuid,
    pub expires_at: OffsetDateTime,
}

#[derive(Clone, Debug)]
pub enum SocialCmd {
    /// The authorize route: a new flow for `redirect_uri` (one of the tenant's URLs, or with
    /// `hosted` the hosted sign-in page's return page), claiming `guest` if given.
    Begin {
        provider: Provider,
        redirect_uri: String,
        hosted: bool,
        guest: Option<Bearer>,
        /// A link ticket: the flow links to its user and returns to its `redirect_uri`.
        link_ticket: Option<String>,
        ip: IpAddr,
    },
    /// The callback: takes the flow of `state`, which must be bound to `binding`.
    Take {
        provider: Provider,
        state: String,
        binding: String,
    },
    /// The callback, after the provider: the user of `identity`, by the rules of spec 4.2.
    Finish {
        provider: Provider,
        identity: SocialIdentity,
        guest: Option<Uuid>,
        link_user: Option<Uuid>,
    },
    /// The app's back end trades an exchange token for a session.
    Session { provider: Provider, jti: Uuid },
    /// A signed-in user (past the step-up gate) asks to link `provider`: a ticket for the
    /// authorize URL.
    LinkStart {
        bearer: Bearer,
        provider: Provider,
        redirect_uri: String,
    },
    /// The signed-in user's linked provider accounts.
    Identities { bearer: Bearer },
    /// Unlinks the signed-in user's account of `provider` (past the step-up gate).
    Unlink { bearer: Bearer, provider: Provider },
    /// The kept provider tokens of the signed-in user's account of `provider` (past the
    /// step-up gate).
    Tokens { bearer: Bearer, provider: Provider },
    /// What the link confirmation page shows of a ticket, without using it.
    PeekTicket { provider: Provider, ticket: String },
}

/// A link ticket as its confirmation page shows it.
#[derive(Clone, Debug)]
pub struct TicketView {
    /// The account it links to: its masked address (or its id, without one).
    pub account: String,
    pub tenant_name: String,
    pub default_locale: String,
}

pub enum SocialAnswer {
    Started(Box<SocialStart>),
    Pending(Box<SocialPending>),
    Finished(SocialFinished),
    /// An explicit link made (or already there).
    Linked,
    Login(Box<PasswordlessLogin>),
    Ticket(String),
    Identities(Vec<SocialIdentityRecord>),
    Unlinked,
    Tokens(Box<ProviderTokens>),
    TicketView(Box<TicketView>),
}

impl std::fmt::Debug for SocialAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SocialAnswer(..)")
    }
}

impl TenantState {
    pub fn social_cmd(
        &mut self,
        cmd: SocialCmd,
        ctx: &AuditContext,
    ) -> Result<SocialAnswer, TenantError> {
        let now = OffsetDateTime::now_utc();
        Ok(match cmd {
            SocialCmd::Begin {
                provider,
                redirect_uri,
                hosted,
                guest,
                link_ticket,
                ip,
            } => SocialAnswer::Started(Box::new(self.social_begin(
                provider,
                (redirect_uri, hosted),
                (guest, link_ticket),
                ip,
                now,
            )?)),
            SocialCmd::Take {
                provider,
                state,
                binding,
            } => {
                SocialAnswer::Pending(Box::new(self.social_take(provider, &state, &binding, now)?))
            }
            SocialCmd::Finish {
                provider,
                identity,
                link_user: Some(user),
                ..
            } => {
                self.social_link(provider, identity, user, ctx, now)?;
                SocialAnswer::Linked
            }
            SocialCmd::Finish {
                provider,
                identity,
                guest,
                link_user: None,
            } => SocialAnswer::Finished(self.social_finish(provider, identity, guest, ctx, now)?),
            SocialCmd::LinkStart {
                bearer,
                provider,
                redirect_uri,
            } => SocialAnswer::Ticket(self.social_link_ticket(
                bearer,
                provider,
                redirect_uri,
                now,
            )?),
            SocialCmd::Identities { bearer } => {
                let (_, user) = self.live_session(bearer, now)?;
                SocialAnswer::Identities(self.identities_of(user.id)?)
            }
            SocialCmd::Unlink { bearer, provider } => {
                self.social_unlink(bearer, provider, ctx, now)?;
                SocialAnswer::Unlinked
            }
            SocialCmd::Tokens { bearer, provider } => {
                SocialAnswer::Tokens(Box::new(self.social_tokens(bearer, provider, now)?))
            }
            SocialCmd::PeekTicket { provider, ticket } => {
                SocialAnswer::TicketView(Box::new(self.peek_ticket(provider, &ticket, now)?))
            }
            SocialCmd::Session { provider, jti } => {
                SocialAnswer::Login(Box::new(self.social_session(provider, jti, ctx, now)?))
            }
        })
    }

    /// The configuration of an enabled provider, with its secret opened.
    fn social_enabled(
        &self,
        provider: Provider,
    ) -> Result<(SocialProviderRecord, String), TenantError> {
        let record = self
            .cx
            .store
            .get::<SocialProviderRecord>(provider.as_str().as_bytes())?
            .filter(|r| r.enabled && r.client_id.is_some())
            .ok_or(TenantError::SocialNotConfigured)?;
        let sealed = record
            .secret
            .as_ref()
            .ok_or(TenantError::SocialNotConfigured)?;
        let plain = self
            .cx
            .master_key
            .open(&self.secret_aad(&secret_name(provider)), sealed)?;
        let secret = std::str::from_utf8(&plain)
            .map_err(|_| TenantError::Internal("a sealed provider secret is not text".into()))?
            .to_owned();
        Ok((record, secret))
    }

    fn social_begin(
        &mut self,
        provider: Provider,
        (redirect_uri, hosted): (String, bool),
        (guest, link_ticket): (Option<Bearer>, Option<String>),
        ip: IpAddr,
        now: OffsetDateTime,
    ) -> Result<SocialStart, TenantError> {
        let (config, _) = self.social_enabled(provider)?;
        // A link ticket is used here, once: the flow links to its user and returns where the
        // ticket says.
        let mut fx = self.effects();
        let (redirect_uri, link_user) = match link_ticket {
            Some(ticket) => {
                let key = sha256(ticket.as_bytes());
                let found = self.cx.store.get::<SocialLinkTicketRecord>(&key)?;
                fx.batch.remove(Kind::SocialLinkTicket, &key);
                match found {
                    Some(t) if t.provider == provider && t.expires_at > now => {
                        (t.redirect_uri, Some(t.user_id))
                    }
                    _ => return self.fail(fx, TenantError::SocialStateInvalid),
                }
            }
            None => (redirect_uri, None),
        };
        if link_user.is_none() && !hosted && !self.cx.settings.urls.allows(&redirect_uri) {
            return Err(TenantError::SocialRedirectNotAllowed);
        }
        let guest = match guest.filter(|_| link_user.is_none()) {
            Some(bearer) => {
                let (_, user) = self.live_session(bearer, now)?;
                if !user.is_anonymous {
                    return Err(TenantError::AlreadyClaimed);
                }
                Some(user.id)
            }
            None => None,
        };
        self.social
            .begins
            .hit(&throttle_ip(ip), std::time::Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
        // The callback URL is one for every tenant: the state names its tenant.
        let state = format!(
            "{}.{}",
            self.cx.store.tenant_id().0.simple(),
            random_token(32)
        );
        let binding = random_token(32);
        let nonce = random_token(16);
        let pkce_verifier = random_token(32);
        let record = SocialStateRecord {
            provider,
            redirect_uri: redirect_uri.clone(),
            nonce: nonce.clone(),
            pkce_verifier: pkce_verifier.clone(),
            binding_hash: sha256(binding.as_bytes()),
            guest,
            hosted,
            link_user,
            expires_at: now + SOCIAL_STATE_TTL,
        };
        fx.batch.put(&sha256(state.as_bytes()), &record)?;
        self.commit(fx)?;
        let scopes = config.scopes.clone().unwrap_or_else(|| {
            provider
                .default_scopes()
                .iter()
                .map(|s| (*s).to_owned())
                .collect()
        });
        Ok(SocialStart {
            redirect_uri,
            state,
            nonce,
            code_challenge: super::challenges::s256(&pkce_verifier),
            binding,
            client_id: config.client_id.unwrap_or_default(),
            scopes,
            microsoft_tenant: config.microsoft_tenant,
        })
    }

    /// Takes (removes) the flow of `state`: unknown, expired or another provider's is
    /// `SocialStateInvalid`; one begun in another browser is `SocialStateForeign`.
    fn social_take(
        &mut self,
        provider: Provider,
        state: &str,
        binding: &str,
        now: OffsetDateTime,
    ) -> Result<SocialPending, TenantError> {
        if state.is_empty() || state.len() > 160 {
            return Err(TenantError::SocialStateInvalid);
        }
        let key = sha256(state.as_bytes());
        let Some(record) = self.cx.store.get::<SocialStateRecord>(&key)? else {
            return Err(TenantError::SocialStateInvalid);
        };
        let mut fx = self.effects();
        fx.batch.remove(Kind::SocialState, &key);
        if record.provider != provider || record.expires_at <= now {
            return self.fail(fx, TenantError::SocialStateInvalid);
        }
        if !ct_eq(&record.binding_hash, &sha256(binding.as_bytes())) {
            return self.fail(
                fx,
                TenantError::SocialStateForeign {
                    redirect_uri: record.redirect_uri,
                    hosted: record.hosted,
                },
            );
        }
        let (config, secret) = match self.social_enabled(provider) {
            Ok(found) => found,
            Err(e) => return self.fail(fx, e),
        };
        self.commit(fx)?;
        Ok(SocialPending {
            redirect_uri: record.redirect_uri,
            hosted: record.hosted,
            link_user: record.link_user,
            nonce: record.nonce,
            pkce_verifier: record.pkce_verifier,
            guest: record.guest,
            client_id: config.client_id.unwrap_or_default(),
            secret,
            apple: config.apple,
            microsoft_tenant: config.microsoft_tenant,
        })
    }

    fn token_aad(&self, provider: Provider, subject: &str) -> Vec<u8> {
        self.secret_aad(
            &[
                b"social-token/".as_slice(),
                &identity_key(provider, subject),
            ]
            .concat(),
        )
    }

    /// Keeps (sealed) or drops the provider's tokens of `identity`, as the tenant's
    /// configuration of `provider` says now.
    fn keep_tokens(
        &self,
        batch: &mut tessera_storage::TenantBatch,
        provider: Provider,
        identity: &SocialIdentity,
    ) -> Result<(), TenantError> {
        let key = identity_key(provider, &identity.subject);
        let keep = self
            .cx
            .store
            .get::<SocialProviderRecord>(provider.as_str().as_bytes())?
            .is_some_and(|r| r.store_tokens);
        if !keep {
            batch.remove(Kind::SocialToken, &key);
            return Ok(());
        }
        let plain = serde_json::to_vec(&identity.tokens)
            .map_err(|e| TenantError::Internal(e.to_string()))?;
        let sealed = self
            .cx
            .master_key
            .seal(&self.token_aad(provider, &identity.subject), &plain)?;
        batch.put(&key, &SocialTokenRecord { sealed })?;
        Ok(())
    }

    /// The kept provider tokens of the caller's account of `provider`; `NotFound` when none
    /// are kept.
    fn social_tokens(
        &self,
        bearer: Bearer,
        provider: Provider,
        now: OffsetDateTime,
    ) -> Result<ProviderTokens, TenantError> {
        let (_, user) = self.live_session(bearer, now)?;
        let ix = self
            .cx
            .store
            .get::<UserIdentityIndex>(&user_identity_key(user.id, provider))?
            .ok_or(TenantError::NotFound)?;
        let record = self
            .cx
            .store
            .get::<SocialTokenRecord>(&identity_key(provider, &ix.subject))?
            .ok_or(TenantError::NotFound)?;
        let plain = self
            .cx
            .master_key
            .open(&self.token_aad(provider, &ix.subject), &record.sealed)?;
        serde_json::from_slice(&plain).map_err(|e| TenantError::Internal(e.to_string()))
    }

    /// Links `identity` to `user` in `batch`.
    fn put_identity(
        &self,
        batch: &mut tessera_storage::TenantBatch,
        user: Uuid,
        provider: Provider,
        identity: &SocialIdentity,
        email: Option<&String>,
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        let record = SocialIdentityRecord {
            user_id: user,
            provider,
            subject: identity.subject.clone(),
            email: email.cloned(),
            linked_at: now,
        };
        batch.put(&identity_key(provider, &identity.subject), &record)?;
        batch.put(
            &user_identity_key(user, provider),
            &UserIdentityIndex {
                subject: identity.subject.clone(),
            },
        )?;
        Ok(())
    }

    /// The user a provider's account signs in as (spec 4.2): the account already linked; else
    /// the account of a trusted, verified address when automatic linking is on (else
    /// `email_exists`); else the guest of the flow, claimed in place (trusted providers);
    /// else a new account. Answers the exchange token's `jti`, recorded for one use.
    fn social_finish(
        &mut self,
        provider: Provider,
        identity: SocialIdentity,
        guest: Option<Uuid>,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<SocialFinished, TenantError> {
        let trust = provider.email_trust();
        let email = identity
            .email
            .as_deref()
            .and_then(crate::policy::normalize_email);
        // An always-verified provider's address counts unless it says otherwise.
        let verified = email.is_some()
            && match trust {
                EmailTrust::AlwaysVerified => identity.email_verified != Some(false),
                EmailTrust::ProviderVerified => identity.email_verified == Some(true),
                EmailTrust::NeverTrust => false,
            };
        let mut fx = self.effects();
        let refuse = |state: &mut TenantState, mut fx: Effects, why: SocialRefusal| {
            state.audit_into(
                &mut fx.batch,
                "auth.social.link_refused",
                ctx,
                serde_json::json!({ "provider": provider.as_str(), "reason": why.as_str() }),
            )?;
            state.fail(fx, TenantError::SocialRefused(why))
        };
        // A link whose user is gone counts as none (the next write replaces it).
        let linked = match self
            .cx
            .store
            .get::<SocialIdentityRecord>(&identity_key(provider, &identity.subject))?
        {
            Some(l) => self.user(l.user_id)?,
            None => None,
        };
        let (user, how) = if let Some(user) = linked {
            if user.blocked_at.is_some() {
                return refuse(self, fx, SocialRefusal::AccountBlocked);
            }
            (user, "linked")
        } else if let Some(existing) = match &email {
            Some(e) => self.user_by_email(e)?,
            None => None,
        } {
            let may_link = guest.is_none()
                && verified
                && existing.email_verified
                && !existing.is_anonymous
                && self.cx.settings.security.automatic_account_linking_enabled;
            if !may_link {
                return refuse(self, fx, SocialRefusal::EmailExists);
            }
            if existing.blocked_at.is_some() {
                return refuse(self, fx, SocialRefusal::AccountBlocked);
            }
            // One account of a provider per user: another one is linked explicitly, if at all.
            if self
                .cx
                .store
                .get::<UserIdentityIndex>(&user_identity_key(existing.id, provider))?
                .is_some()
            {
                return refuse(self, fx, SocialRefusal::AlreadyLinked);
            }
            self.put_identity(
                &mut fx.batch,
                existing.id,
                provider,
                &identity,
                email.as_ref(),
                now,
            )?;
            self.audit_into(
                &mut fx.batch,
                "auth.social.linked",
                ctx,
                serde_json::json!({
                    "user_id": existing.id,
                    "provider": provider.as_str(),
                    "method": "automatic",
                }),
            )?;
            (existing, "automatic_link")
        } else {
            // A new account keeps only an address the trust rule vouches for: an unverified
            // one would hold the address for whoever claimed it (and keep this provider
            // account's way in once the real owner confirms it).
            let kept = email.clone().filter(|_| verified);
            // An allowlist admits only the addresses it lists: without one, nothing.
            let refused = match &kept {
                Some(e) => self.registration_blocked(&mut fx, e, ctx)?,
                None => !self.cx.settings.email_domains.allowlist.is_empty(),
            };
            if refused {
                return refuse(self, fx, SocialRefusal::EmailNotAllowed);
            }
            if self.age_unknown_signup().is_err() {
                return refuse(self, fx, SocialRefusal::AgeRequired);
            }
            let claim = guest.filter(|_| trust != EmailTrust::NeverTrust);
            let (mut user, event) = match claim {
                Some(id) => match self.user(id)? {
                    Some(g) if g.is_anonymous && !g.suspended() => {
                        fx.batch.remove(Kind::Guest, g.id.as_bytes());
                        (g, "auth.anonymous.claimed")
                    }
                    _ => return refuse(self, fx, SocialRefusal::AlreadyClaimed),
                },
                None => {
                    let user = UserRecord::blank(Uuid::now_v7(), now);
                    self.count_active(&mut fx.batch, None, now)?;
                    (user, "auth.register")
                }
            };
            user.is_anonymous = false;
            user.email = kept;
            user.email_verified = verified;
            self.put_new_user(&mut fx.batch, &user)?;
            let method = if claim.is_some() {
                "guest_claim"
            } else {
                "social"
            };
            self.emit_user_created(&mut fx.batch, &user, method)?;
            self.put_identity(
                &mut fx.batch,
                user.id,
                provider,
                &identity,
                email.as_ref(),
                now,
            )?;
            self.audit_into(
                &mut fx.batch,
                event,
                ctx,
                serde_json::json!({
                    "user_id": user.id,
                    "method": "social",
                    "provider": provider.as_str(),
                }),
            )?;
            (
                user,
                if claim.is_some() {
                    "guest_claim"
                } else {
                    "new_account"
                },
            )
        };
        self.keep_tokens(&mut fx.batch, provider, &identity)?;
        let jti = Uuid::now_v7();
        let expires_at = now + EXCHANGE_TTL;
        fx.batch.put(
            jti.as_bytes(),
            &SocialExchangeRecord {
                user_id: user.id,
                provider,
                expires_at,
            },
        )?;
        self.audit_into(
            &mut fx.batch,
            "auth.social.signed_in",
            ctx,
            serde_json::json!({
                "user_id": user.id,
                "provider": provider.as_str(),
                "outcome": how,
            }),
        )?;
        self.commit(fx)?;
        Ok(SocialFinished {
            user_id: user.id,
            jti,
            expires_at,
        })
    }

    /// Trades an exchange token (its `jti`, verified by the caller) for a sign-in: once,
    /// before it expires, for the provider it names. The tenant's MFA policy applies.
    fn social_session(
        &mut self,
        provider: Provider,
        jti: Uuid,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<PasswordlessLogin, TenantError> {
        let Some(record) = self.cx.store.get::<SocialExchangeRecord>(jti.as_bytes())? else {
            return Err(TenantError::SocialExchangeInvalid);
        };
        let mut fx = self.effects();
        fx.batch.remove(Kind::SocialExchange, jti.as_bytes());
        if record.provider != provider || record.expires_at <= now {
            return self.fail(fx, TenantError::SocialExchangeInvalid);
        }
        let Some(mut user) = self.user(record.user_id)? else {
            return self.fail(fx, TenantError::SocialExchangeInvalid);
        };
        let mut proof = Proof::first_factor("fed", "social");
        proof
            .audit
            .insert("provider".into(), provider.as_str().into());
        let login = match self.sign_in(&mut fx, &mut user, proof, ctx, now) {
            Ok(l) => l,
            Err(e) => return self.fail(fx, e),
        };
        self.commit(fx)?;
        Ok(login)
    }

    /// A ticket that lets the signed-in user's next flow with `provider` link to them.
    fn social_link_ticket(
        &mut self,
        bearer: Bearer,
        provider: Provider,
        redirect_uri: String,
        now: OffsetDateTime,
    ) -> Result<String, TenantError> {
        self.social_enabled(provider)?;
        if !self.cx.settings.urls.allows(&redirect_uri) {
            return Err(TenantError::SocialRedirectNotAllowed);
        }
        let (_, user) = self.live_session(bearer, now)?;
        may_add(&user, Credential::SocialLinks)?;
        let ticket = random_token(32);
        let mut fx = self.effects();
        fx.batch.put(
            &sha256(ticket.as_bytes()),
            &SocialLinkTicketRecord {
                user_id: user.id,
                provider,
                redirect_uri,
                expires_at: now + SOCIAL_STATE_TTL,
            },
        )?;
        self.commit(fx)?;
        Ok(ticket)
    }

    /// A live ticket of `provider`, as its confirmation page shows it.
    fn peek_ticket(
        &self,
        provider: Provider,
        ticket: &str,
        now: OffsetDateTime,
    ) -> Result<TicketView, TenantError> {
        let t = self
            .cx
            .store
            .get::<SocialLinkTicketRecord>(&sha256(ticket.as_bytes()))?
            .filter(|t| t.provider == provider && t.expires_at > now)
            .ok_or(TenantError::SocialStateInvalid)?;
        let user = self
            .user(t.user_id)?
            .ok_or(TenantError::SocialStateInvalid)?;
        Ok(TicketView {
            account: user
                .email
                .as_deref()
                .map_or_else(|| user.id.to_string(), crate::policy::mask_email),
            tenant_name: self.cx.info.name.clone(),
            default_locale: self.cx.settings.users.default_locale.clone(),
        })
    }

    /// Links `identity` to `user` (explicit linking): refused when the provider account is
    /// another user's (`provider_in_use`) or the user has another account of this provider
    /// (`already_linked`); linking it again is no change.
    fn social_link(
        &mut self,
        provider: Provider,
        identity: SocialIdentity,
        user: Uuid,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        let mut fx = self.effects();
        let refuse = |state: &mut TenantState, mut fx: Effects, why: SocialRefusal| {
            state.audit_into(
                &mut fx.batch,
                "auth.social.link_refused",
                ctx,
                serde_json::json!({
                    "user_id": user,
                    "provider": provider.as_str(),
                    "reason": why.as_str(),
                }),
            )?;
            state.fail(fx, TenantError::SocialRefused(why))
        };
        let Some(holder) = self.user(user)?.filter(|u| !u.suspended()) else {
            return refuse(self, fx, SocialRefusal::AccountBlocked);
        };
        may_add(&holder, Credential::SocialLinks)?;
        if let Some(linked) = self
            .cx
            .store
            .get::<SocialIdentityRecord>(&identity_key(provider, &identity.subject))?
        {
            if linked.user_id == user {
                return Ok(());
            }
            return refuse(self, fx, SocialRefusal::ProviderInUse);
        }
        if self
            .cx
            .store
            .get::<UserIdentityIndex>(&user_identity_key(user, provider))?
            .is_some()
        {
            return refuse(self, fx, SocialRefusal::AlreadyLinked);
        }
        let email = identity
            .email
            .as_deref()
            .and_then(crate::policy::normalize_email);
        self.put_identity(
            &mut fx.batch,
            user,
            provider,
            &identity,
            email.as_ref(),
            now,
        )?;
        self.keep_tokens(&mut fx.batch, provider, &identity)?;
        self.audit_into(
            &mut fx.batch,
            "auth.social.linked",
            ctx,
            serde_json::json!({
                "user_id": user,
                "provider": provider.as_str(),
                "method": "explicit",
            }),
        )?;
        self.commit(fx)?;
        Ok(())
    }

    /// Unlinks the user's account of `provider`, unless nothing else would sign them in: a
    /// password, a passkey, another provider, or a confirmed address or number while the
    /// tenant signs in by mailed or texted codes.
    fn social_unlink(
        &mut self,
        bearer: Bearer,
        provider: Provider,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        let (_, user) = self.live_session(bearer, now)?;
        let key = user_identity_key(user.id, provider);
        let Some(ix) = self.cx.store.get::<UserIdentityIndex>(&key)? else {
            return Err(TenantError::NotFound);
        };
        let sec = &self.cx.settings.security;
        let other_ways = user.password_hash.is_some()
            || !self.passkeys_of(user.id)?.is_empty()
            || self.identities_of(user.id)?.len() > 1
            || (user.email_verified && (sec.magic_link_enabled || sec.email_otp_enabled))
            || (user.phone_verified && sec.sms_otp_enabled);
        if !other_ways {
            return Err(TenantError::SocialLastMethod);
        }
        let mut fx = self.effects();
        fx.batch.remove(Kind::UserIdentity, &key);
        fx.batch
            .remove(Kind::SocialIdentity, &identity_key(provider, &ix.subject));
        fx.batch
            .remove(Kind::SocialToken, &identity_key(provider, &ix.subject));
        self.audit_into(
            &mut fx.batch,
            "auth.social.unlinked",
            ctx,
            serde_json::json!({ "user_id": user.id, "provider": provider.as_str() }),
        )?;
        self.commit(fx)?;
        Ok(())
    }

    /// The providers a user may sign in with now, in the table's order.
    pub(super) fn social_providers_enabled(&self) -> Vec<Provider> {
        Provider::ALL
            .into_iter()
            .filter(|p| {
                self.cx
                    .store
                    .get::<SocialProviderRecord>(p.as_str().as_bytes())
                    .ok()
                    .flatten()
                    .is_some_and(|r| r.enabled && r.client_id.is_some() && r.secret.is_some())
            })
            .collect()
    }

    /// The provider accounts linked to `user`, in provider order.
    pub(super) fn identities_of(
        &self,
        user: Uuid,
    ) -> Result<Vec<SocialIdentityRecord>, TenantError> {
        let mut out = Vec::new();
        for item in self.cx.store.scan::<UserIdentityIndex>(user.as_bytes()) {
            let (key, ix) = item?;
            let name = std::str::from_utf8(key.get(16..).unwrap_or_default()).unwrap_or_default();
            let Some(p) = Provider::parse(name) else {
                continue;
            };
            if let Some(r) = self
                .cx
                .store
                .get::<SocialIdentityRecord>(&identity_key(p, &ix.subject))?
            {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// The records of every provider account linked to `user`: the index entry, the link
    /// and the provider tokens kept for it.
    pub(super) fn identity_keys(&self, user: Uuid) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for item in self.cx.store.scan::<UserIdentityIndex>(user.as_bytes()) {
            let (key, ix) = item?;
            let name = std::str::from_utf8(key.get(16..).unwrap_or_default()).unwrap_or_default();
            if let Some(p) = Provider::parse(name) {
                let link = identity_key(p, &ix.subject);
                if self.cx.store.get::<SocialTokenRecord>(&link)?.is_some() {
                    out.push((Kind::SocialToken, link.clone()));
                }
                out.push((Kind::SocialIdentity, link));
            }
            out.push((Kind::UserIdentity, key));
        }
        Ok(out)
    }

    /// The social sign-ins under way for any of `users`: exchange tokens not yet traded,
    /// link tickets not yet used, and flows waiting for the provider that would link to one
    /// of them or claim one of them (a guest).
    pub(super) fn social_sign_in_keys(
        &self,
        users: &std::collections::HashSet<Uuid>,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = self.keys_where::<SocialExchangeRecord>(|r| users.contains(&r.user_id))?;
        out.extend(self.keys_where::<SocialLinkTicketRecord>(|r| users.contains(&r.user_id))?);
        out.extend(self.keys_where::<SocialStateRecord>(|r| {
            [r.link_user, r.guest]
                .iter()
                .flatten()
                .any(|u| users.contains(u))
        })?);
        Ok(out)
    }

    /// Removes expired sign-in states and exchange records, at most `limit` of each.
    pub(super) fn sweep_social(
        &self,
        batch: &mut tessera_storage::TenantBatch,
        now: OffsetDateTime,
    ) -> Result<usize, TenantError> {
        // Every expired one: anyone may begin flows (30 a minute per address), so a cap below
        // what a day can write would let them pile up.
        let mut n = 0;
        for item in self.cx.store.scan::<SocialStateRecord>(b"") {
            let (key, r) = item?;
            if r.expires_at <= now && n < SOCIAL_SWEEP_MAX {
                batch.remove(Kind::SocialState, &key);
                n += 1;
            }
        }
        for item in self.cx.store.scan::<SocialLinkTicketRecord>(b"") {
            let (key, r) = item?;
            if r.expires_at <= now && n < SOCIAL_SWEEP_MAX {
                batch.remove(Kind::SocialLinkTicket, &key);
                n += 1;
            }
        }
        for item in self.cx.store.scan::<SocialExchangeRecord>(b"") {
            let (key, r) = item?;
            if r.expires_at <= now && n < SOCIAL_SWEEP_MAX {
                batch.remove(Kind::SocialExchange, &key);
                n += 1;
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
