//! A sign-in's way out to the provider and back: `Begin` stores the flow under its
//! `state` (using a link ticket once), `Take` removes it once at the callback, for the
//! browser that began it, with the opened secret.

use crate::tenant::ctx::TenantCtx;
use crate::tenant::social::memory::Social;

use std::net::IpAddr;

use tessera_storage::{ct_eq, random_token, sha256, Kind};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    providers::{AppleKeyId, Provider},
    records::{SocialLinkTicketRecord, SocialStateRecord, SOCIAL_STATE_TTL},
};
use crate::error::{GuestError, SocialError};
use crate::{error::TenantError, tenant::messages::Bearer, throttle::throttle_ip};

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

impl Social {
    pub(super) fn social_begin(
        &mut self,
        cx: &mut TenantCtx,
        provider: Provider,
        (redirect_uri, hosted): (String, bool),
        (guest, link_ticket): (Option<Bearer>, Option<String>),
        ip: IpAddr,
        now: OffsetDateTime,
    ) -> Result<SocialStart, TenantError> {
        let (config, _) = self.social_enabled(cx, provider)?;
        // A link ticket is used here, once: the flow links to its user and returns where the
        // ticket says.
        let mut fx = cx.effects();
        let (redirect_uri, link_user) = match link_ticket {
            Some(ticket) => {
                let key = sha256(ticket.as_bytes());
                let found = cx.store.get::<SocialLinkTicketRecord>(&key)?;
                fx.batch.remove(Kind::SocialLinkTicket, &key);
                match found {
                    Some(t) if t.provider == provider && t.expires_at > now => {
                        (t.redirect_uri, Some(t.user_id))
                    }
                    _ => return cx.fail(fx, TenantError::Social(SocialError::StateInvalid)),
                }
            }
            None => (redirect_uri, None),
        };
        if link_user.is_none() && !hosted && !cx.settings.urls.allows(&redirect_uri) {
            return Err(TenantError::Social(SocialError::RedirectNotAllowed));
        }
        let guest = match guest.filter(|_| link_user.is_none()) {
            Some(bearer) => {
                let (_, user) = cx.live_session(bearer, now)?;
                if !user.is_anonymous {
                    return Err(TenantError::Guest(GuestError::AlreadyClaimed));
                }
                Some(user.id)
            }
            None => None,
        };
        self.begins
            .hit(&throttle_ip(ip), std::time::Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
        // The callback URL is one for every tenant: the state names its tenant.
        let state = format!("{}.{}", cx.store.tenant_id().0.simple(), random_token(32));
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
        cx.commit(fx)?;
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
            code_challenge: crate::tenant::challenges::s256(&pkce_verifier),
            binding,
            client_id: config.client_id.unwrap_or_default(),
            scopes,
            microsoft_tenant: config.microsoft_tenant,
        })
    }

    /// Takes (removes) the flow of `state`: unknown, expired or another provider's is
    /// `SocialStateInvalid`; one begun in another browser is `SocialStateForeign`.
    pub(super) fn social_take(
        &mut self,
        cx: &mut TenantCtx,
        provider: Provider,
        state: &str,
        binding: &str,
        now: OffsetDateTime,
    ) -> Result<SocialPending, TenantError> {
        if state.is_empty() || state.len() > 160 {
            return Err(TenantError::Social(SocialError::StateInvalid));
        }
        let key = sha256(state.as_bytes());
        let Some(record) = cx.store.get::<SocialStateRecord>(&key)? else {
            return Err(TenantError::Social(SocialError::StateInvalid));
        };
        let mut fx = cx.effects();
        fx.batch.remove(Kind::SocialState, &key);
        if record.provider != provider || record.expires_at <= now {
            return cx.fail(fx, TenantError::Social(SocialError::StateInvalid));
        }
        if !ct_eq(&record.binding_hash, &sha256(binding.as_bytes())) {
            return cx.fail(
                fx,
                TenantError::Social(SocialError::StateForeign {
                    redirect_uri: record.redirect_uri,
                    hosted: record.hosted,
                }),
            );
        }
        let (config, secret) = match self.social_enabled(cx, provider) {
            Ok(found) => found,
            Err(e) => return cx.fail(fx, e),
        };
        cx.commit(fx)?;
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
}
