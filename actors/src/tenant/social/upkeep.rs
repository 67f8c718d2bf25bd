//! What the rest of the tenant asks of social sign-in's records: the keys a user's erasure
//! removes, and the daily sweep of expired flows, tickets and exchange records.

use tessera_storage::Kind;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    providers::Provider,
    records::{
        identity_key, SocialExchangeRecord, SocialLinkTicketRecord, SocialStateRecord,
        SocialTokenRecord, UserIdentityIndex,
    },
};
use crate::error::TenantError;
use crate::tenant::ctx::TenantCtx;

/// The most expired flows, tickets and exchange records one daily run removes (in one batch).
const SOCIAL_SWEEP_MAX: usize = 200_000;

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// The records of every provider account linked to `user`: the index entry, the link
    /// and the provider tokens kept for it.
    pub(in crate::tenant) fn identity_keys(
        &self,
        user: Uuid,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<UserIdentityIndex>(user.as_bytes()) {
            let (key, ix) = item?;
            let name = std::str::from_utf8(key.get(16..).unwrap_or_default()).unwrap_or_default();
            if let Some(p) = Provider::parse(name) {
                let link = identity_key(p, &ix.subject);
                if self.store.get::<SocialTokenRecord>(&link)?.is_some() {
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
    pub(in crate::tenant) fn social_sign_in_keys(
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
    pub(in crate::tenant) fn sweep_social(
        &self,
        batch: &mut tessera_storage::TenantBatch,
        now: OffsetDateTime,
    ) -> Result<usize, TenantError> {
        // Every expired one: anyone may begin flows (30 a minute per address), so a cap below
        // what a day can write would let them pile up.
        let mut n = 0;
        for item in self.store.scan::<SocialStateRecord>(b"") {
            let (key, r) = item?;
            if r.expires_at <= now && n < SOCIAL_SWEEP_MAX {
                batch.remove(Kind::SocialState, &key);
                n += 1;
            }
        }
        for item in self.store.scan::<SocialLinkTicketRecord>(b"") {
            let (key, r) = item?;
            if r.expires_at <= now && n < SOCIAL_SWEEP_MAX {
                batch.remove(Kind::SocialLinkTicket, &key);
                n += 1;
            }
        }
        for item in self.store.scan::<SocialExchangeRecord>(b"") {
            let (key, r) = item?;
            if r.expires_at <= now && n < SOCIAL_SWEEP_MAX {
                batch.remove(Kind::SocialExchange, &key);
                n += 1;
            }
        }
        Ok(n)
    }
}
