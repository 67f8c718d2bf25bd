//! Each tenant's configuration of a provider: its client id, its secret (or Apple's key)
//! sealed under the master key, its scopes; put and shown by the dashboard, and opened for
//! a sign-in.

use crate::tenant::ctx::TenantCtx;
use crate::tenant::social::memory::Social;

use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, Sealed};
use time::OffsetDateTime;

use super::providers::{AppleKeyId, Provider};
use crate::error::SocialError;
use crate::{
    error::TenantError,
    tenant::audit::{AuditContext, AuditEvent},
};

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

tessera_storage::record!(
    SocialProviderRecord in TenantRecord: Kind::SocialProvider, "social provider", version 1
);

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

/// The name a provider's secret is sealed under.
fn secret_name(provider: Provider) -> Vec<u8> {
    format!("social/{}", provider.as_str()).into_bytes()
}

impl Social {
    pub fn social_config_cmd(
        &mut self,
        cx: &mut TenantCtx,
        cmd: SocialConfigCmd,
        ctx: &AuditContext,
    ) -> Result<SocialProviderView, TenantError> {
        match cmd {
            SocialConfigCmd::Get(provider) => {
                let record = cx
                    .store
                    .get::<SocialProviderRecord>(provider.as_str().as_bytes())?;
                Ok(SocialProviderView::of(provider, record.as_ref()))
            }
            SocialConfigCmd::Put(provider, put) => self.social_config_put(cx, provider, *put, ctx),
        }
    }

    /// Replaces a provider's configuration. A changed client id needs its secret in the same
    /// request; a provider is enabled only with a client id and a secret.
    fn social_config_put(
        &mut self,
        cx: &mut TenantCtx,
        provider: Provider,
        put: SocialConfigPut,
        ctx: &AuditContext,
    ) -> Result<SocialProviderView, TenantError> {
        let key = provider.as_str().as_bytes();
        let current = cx.store.get::<SocialProviderRecord>(key)?;
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
                return Err(TenantError::Social(SocialError::CredentialMissing {
                    field: secret_field,
                    reason: "a new client_id needs its secret in the same request",
                }))
            }
            (None, Some(_)) => None,
        };
        let secret = match &put.secret {
            Some(plain) => Some(
                cx.master_key
                    .seal(&cx.secret_aad(&secret_name(provider)), plain.as_bytes())?,
            ),
            None => kept_secret,
        };
        if put.enabled && secret.is_none() {
            return Err(TenantError::Social(SocialError::CredentialMissing {
                field: secret_field,
                reason: "an enabled provider needs its secret",
            }));
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
        let mut fx = cx.effects();
        fx.batch.put(key, &next)?;
        let fields = changed.iter().map(|f| (*f).to_owned()).collect();
        let mut event = AuditEvent::new("settings.social.updated", ctx, fields);
        event.at = next.updated_at;
        event.metadata = serde_json::json!({
            "provider": provider.as_str(),
            "enabled": next.enabled,
        });
        fx.batch.put(&cx.next_event_key(event.at), &event)?;
        cx.commit(fx)?;
        Ok(SocialProviderView::of(provider, Some(&next)))
    }

    /// The configuration of an enabled provider, with its secret opened.
    pub(super) fn social_enabled(
        &self,
        cx: &TenantCtx,
        provider: Provider,
    ) -> Result<(SocialProviderRecord, String), TenantError> {
        let record = cx
            .store
            .get::<SocialProviderRecord>(provider.as_str().as_bytes())?
            .filter(|r| r.enabled && r.client_id.is_some())
            .ok_or(TenantError::Social(SocialError::NotConfigured))?;
        let sealed = record
            .secret
            .as_ref()
            .ok_or(TenantError::Social(SocialError::NotConfigured))?;
        let plain = cx
            .master_key
            .open(&cx.secret_aad(&secret_name(provider)), sealed)?;
        let secret = std::str::from_utf8(&plain)
            .map_err(|_| TenantError::Internal("a sealed provider secret is not text".into()))?
            .to_owned();
        Ok((record, secret))
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// The providers a user may sign in with now, in the table's order.
    pub(in crate::tenant) fn social_providers_enabled(&self) -> Vec<Provider> {
        Provider::ALL
            .into_iter()
            .filter(|p| {
                self.store
                    .get::<SocialProviderRecord>(p.as_str().as_bytes())
                    .ok()
                    .flatten()
                    .is_some_and(|r| r.enabled && r.client_id.is_some() && r.secret.is_some())
            })
            .collect()
    }
}
