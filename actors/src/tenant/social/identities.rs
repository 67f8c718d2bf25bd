//! Linked provider accounts: who the provider says the user is, the link written for a
//! user, the provider's tokens kept sealed beside it (or dropped), and a user's links.

use serde::{Deserialize, Serialize};
use tessera_storage::Kind;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    config::SocialProviderRecord,
    providers::Provider,
    records::{
        identity_key, user_identity_key, SocialIdentityRecord, SocialTokenRecord, UserIdentityIndex,
    },
};
use crate::tenant::ctx::TenantCtx;
use crate::tenant::social::memory::Social;
use crate::{error::TenantError, tenant::messages::Bearer};

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

impl Social {
    fn token_aad(&self, cx: &TenantCtx, provider: Provider, subject: &str) -> Vec<u8> {
        cx.secret_aad(
            &[
                b"social-token/".as_slice(),
                &identity_key(provider, subject),
            ]
            .concat(),
        )
    }

    /// Keeps (sealed) or drops the provider's tokens of `identity`, as the tenant's
    /// configuration of `provider` says now.
    pub(super) fn keep_tokens(
        &self,
        cx: &TenantCtx,
        batch: &mut tessera_storage::TenantBatch,
        provider: Provider,
        identity: &SocialIdentity,
    ) -> Result<(), TenantError> {
        let key = identity_key(provider, &identity.subject);
        let keep = cx
            .store
            .get::<SocialProviderRecord>(provider.as_str().as_bytes())?
            .is_some_and(|r| r.store_tokens);
        if !keep {
            batch.remove(Kind::SocialToken, &key);
            return Ok(());
        }
        let plain = serde_json::to_vec(&identity.tokens)
            .map_err(|e| TenantError::Internal(e.to_string()))?;
        let sealed = cx
            .master_key
            .seal(&self.token_aad(cx, provider, &identity.subject), &plain)?;
        batch.put(&key, &SocialTokenRecord { sealed })?;
        Ok(())
    }

    /// The kept provider tokens of the caller's account of `provider`; `NotFound` when none
    /// are kept.
    pub(super) fn social_tokens(
        &self,
        cx: &TenantCtx,
        bearer: Bearer,
        provider: Provider,
        now: OffsetDateTime,
    ) -> Result<ProviderTokens, TenantError> {
        let (_, user) = cx.live_session(bearer, now)?;
        let ix = cx
            .store
            .get::<UserIdentityIndex>(&user_identity_key(user.id, provider))?
            .ok_or(TenantError::NotFound)?;
        let record = cx
            .store
            .get::<SocialTokenRecord>(&identity_key(provider, &ix.subject))?
            .ok_or(TenantError::NotFound)?;
        let plain = cx
            .master_key
            .open(&self.token_aad(cx, provider, &ix.subject), &record.sealed)?;
        serde_json::from_slice(&plain).map_err(|e| TenantError::Internal(e.to_string()))
    }

    /// Links `identity` to `user` in `batch`.
    pub(super) fn put_identity(
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
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// The provider accounts linked to `user`, in provider order.
    pub(in crate::tenant) fn identities_of(
        &self,
        user: Uuid,
    ) -> Result<Vec<SocialIdentityRecord>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<UserIdentityIndex>(user.as_bytes()) {
            let (key, ix) = item?;
            let name = std::str::from_utf8(key.get(16..).unwrap_or_default()).unwrap_or_default();
            let Some(p) = Provider::parse(name) else {
                continue;
            };
            if let Some(r) = self
                .store
                .get::<SocialIdentityRecord>(&identity_key(p, &ix.subject))?
            {
                out.push(r);
            }
        }
        Ok(out)
    }
}
