//! A sign-in's way out to the identity provider and back: `Begin` stores the flow under its
//! `state` (SAML: the RelayState, with the AuthnRequest's ID), `Take` removes it once when
//! the provider answers, in the browser that began it, with the connection's opened secret.
//! An unsolicited SAML response (IdP-initiated) has no flow: `Unsolicited` answers the
//! connection when it takes them.

use std::net::IpAddr;

use tessera_storage::{ct_eq, random_token, sha256, Kind};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    error::SsoError,
    records::{SsoConnectionRecord, SsoProtocol, SsoStateRecord, SSO_STATE_TTL},
    Sso,
};
use crate::{error::TenantError, tenant::ctx::TenantCtx};

/// What the start route needs to send the browser to the provider.
#[derive(Clone, Debug)]
pub struct SsoStart {
    pub connection: SsoConnectionRecord,
    /// The `state` (SAML: RelayState); only its hash is stored.
    pub state: String,
    /// OpenID: the nonce; SAML: the AuthnRequest's ID.
    pub nonce: String,
    /// RFC 7636 S256 of the flow's verifier (OpenID).
    pub code_challenge: String,
    /// The cookie value that binds the flow to this browser.
    pub binding: String,
}

/// A taken sign-in: what the edge needs to finish it at the provider, with the opened
/// secret (never logged, never answered).
#[derive(Clone)]
pub struct SsoPending {
    pub connection: SsoConnectionRecord,
    pub redirect_uri: String,
    /// Begun on the hosted sign-in page: `redirect_uri` is its return page.
    pub hosted: bool,
    /// OpenID: the nonce the ID token must carry; SAML: the ID `InResponseTo` must name
    /// (`None`: an unsolicited response).
    pub nonce: Option<String>,
    pub pkce_verifier: String,
    /// The SAML key (PKCS#8 PEM) or the OpenID client secret.
    pub secret: String,
}

impl std::fmt::Debug for SsoPending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SsoPending")
            .field("connection", &self.connection.id)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

impl Sso {
    /// An enabled connection (any organization's).
    pub(super) fn enabled(
        &self,
        cx: &TenantCtx,
        id: Uuid,
    ) -> Result<SsoConnectionRecord, TenantError> {
        let c = self
            .connection(cx, None, id)
            .map_err(|_| TenantError::Sso(SsoError::UnknownConnection))?;
        if !c.enabled {
            return Err(SsoError::Disabled.into());
        }
        Ok(c)
    }

    pub(super) fn begin(
        &mut self,
        cx: &mut TenantCtx,
        connection: Uuid,
        (redirect_uri, hosted): (String, bool),
        ip: IpAddr,
        now: OffsetDateTime,
    ) -> Result<SsoStart, TenantError> {
        let c = self.enabled(cx, connection)?;
        // The hosted page's return page is this server's, whatever the tenant's URLs are.
        if !hosted && !cx.settings.urls.allows(&redirect_uri) {
            return Err(SsoError::RedirectNotAllowed.into());
        }
        self.admit(&ip, false)?;
        let state = random_token(32);
        let binding = random_token(32);
        // A SAML request ID must start with a letter (xs:ID is an NCName).
        let nonce = match c.protocol {
            SsoProtocol::Saml(_) => format!("id-{}", random_token(16)),
            SsoProtocol::Oidc(_) => random_token(16),
        };
        let pkce_verifier = random_token(32);
        let record = SsoStateRecord {
            connection,
            redirect_uri,
            nonce: nonce.clone(),
            pkce_verifier: pkce_verifier.clone(),
            binding_hash: sha256(binding.as_bytes()),
            hosted,
            expires_at: now + SSO_STATE_TTL,
        };
        let mut fx = cx.effects();
        fx.batch.put(&sha256(state.as_bytes()), &record)?;
        cx.commit(fx)?;
        Ok(SsoStart {
            connection: c,
            state,
            nonce,
            code_challenge: crate::tenant::challenges::s256(&pkce_verifier),
            binding,
        })
    }

    /// Takes (removes) the flow of `state` for `connection`: unknown, expired or another
    /// connection's is `StateInvalid`; one begun in another browser is `StateForeign`.
    pub(super) fn take(
        &mut self,
        cx: &mut TenantCtx,
        connection: Uuid,
        (state, binding): (&str, &str),
        now: OffsetDateTime,
    ) -> Result<SsoPending, TenantError> {
        if state.is_empty() || state.len() > 160 {
            return Err(SsoError::StateInvalid.into());
        }
        let key = sha256(state.as_bytes());
        let Some(record) = cx.store.get::<SsoStateRecord>(&key)? else {
            return Err(SsoError::StateInvalid.into());
        };
        let mut fx = cx.effects();
        fx.batch.remove(Kind::SsoState, &key);
        if record.connection != connection || record.expires_at <= now {
            return cx.fail(fx, SsoError::StateInvalid.into());
        }
        if !ct_eq(&record.binding_hash, &sha256(binding.as_bytes())) {
            let foreign = SsoError::StateForeign {
                redirect_uri: record.redirect_uri,
            };
            return cx.fail(fx, foreign.into());
        }
        let pending = self.enabled(cx, connection).and_then(|c| {
            Ok(SsoPending {
                secret: self.opened_secret(cx, &c)?,
                connection: c,
                redirect_uri: record.redirect_uri,
                hosted: record.hosted,
                nonce: Some(record.nonce),
                pkce_verifier: record.pkce_verifier,
            })
        });
        match pending {
            Ok(p) => {
                cx.commit(fx)?;
                Ok(p)
            }
            Err(e) => cx.fail(fx, e),
        }
    }

    /// An unsolicited SAML response's connection, when it takes them.
    pub(super) fn unsolicited(
        &self,
        cx: &TenantCtx,
        connection: Uuid,
    ) -> Result<SsoPending, TenantError> {
        let c = self.enabled(cx, connection)?;
        let SsoProtocol::Saml(s) = &c.protocol else {
            return Err(SsoError::UnsolicitedRefused.into());
        };
        // Still one of the tenant's URLs (they may have changed since it was set).
        let redirect_uri = match (&s.idp_initiated_redirect_uri, s.allow_idp_initiated) {
            (Some(to), true) if cx.settings.urls.allows(to) => to.clone(),
            _ => return Err(SsoError::UnsolicitedRefused.into()),
        };
        Ok(SsoPending {
            secret: self.opened_secret(cx, &c)?,
            connection: c,
            redirect_uri,
            hosted: false,
            nonce: None,
            pkce_verifier: String::new(),
        })
    }
}
