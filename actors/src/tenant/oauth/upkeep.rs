//! What the rest of the tenant asks of the authorization server's records: the keys a
//! user's erasure removes, and the daily sweep of codes past their reuse watch.

use tessera_storage::{Kind, TenantBatch};
use time::OffsetDateTime;
use uuid::Uuid;

use super::records::{is_agent_client, AuthCodeRecord, ConsentRecord, CODE_REUSE_WATCH};
use crate::error::TenantError;
use crate::tenant::ctx::TenantCtx;

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// The keys of `user`'s consents to agents (`agents` true) or to OAuth clients.
    pub(in crate::tenant) fn consent_keys(
        &self,
        user: Uuid,
        agents: bool,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<ConsentRecord>(user.as_bytes()) {
            let (key, c) = item?;
            if is_agent_client(&c.client_id) == agents {
                out.push((Kind::OAuthConsent, key));
            }
        }
        Ok(out)
    }

    /// The keys of the authorization codes issued to any of `users` (redeemed ones too: the
    /// record of a redeemed code watches for a second use of it, which a gone record cannot
    /// show, but the grant it opened goes with the user's grants).
    pub(in crate::tenant) fn code_keys(
        &self,
        users: &std::collections::HashSet<Uuid>,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        self.keys_where::<AuthCodeRecord>(|c| users.contains(&c.user_id))
    }

    /// Removes codes past their reuse watch (at most `limit`); answers how many.
    pub(in crate::tenant) fn sweep_oauth_codes(
        &self,
        batch: &mut TenantBatch,
        now: OffsetDateTime,
        limit: usize,
    ) -> Result<usize, TenantError> {
        self.sweep_kind::<AuthCodeRecord>(
            limit,
            |_, r| r.expires_at + CODE_REUSE_WATCH <= now,
            |k, _| batch.remove(Kind::OAuthCode, k),
        )
    }
}
