//! What the rest of the tenant asks of the wallet records: the keys a user's erasure
//! removes, and the daily sweep of finished transactions and unused age tokens.

use tessera_storage::Kind;
use time::OffsetDateTime;
use uuid::Uuid;

use super::records::{
    AgeTokenRecord, EudiClaimsRecord, EudiSubjectRecord, EudiTxRecord, TxOutcome, RESULT_TTL,
};
use crate::error::TenantError;
use crate::tenant::ctx::TenantCtx;

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// The records of the user's wallet identities: each link to the user and what wallets
    /// attested.
    pub(in crate::tenant) fn wallet_link_keys(
        &self,
        user: Uuid,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        if let Some(c) = self.store.get::<EudiClaimsRecord>(user.as_bytes())? {
            for subject in &c.subjects {
                let linked = self.store.get::<EudiSubjectRecord>(subject)?;
                if linked.is_some_and(|l| l.user_id == user) {
                    out.push((Kind::EudiSubject, subject.to_vec()));
                }
            }
            out.push((Kind::EudiClaims, user.as_bytes().to_vec()));
        }
        Ok(out)
    }

    /// The wallet sign-ins that completed for any of `users` and wait for the client's poll
    /// (the transaction and its poll index: the poll then finds nothing).
    pub(in crate::tenant) fn wallet_sign_in_keys(
        &self,
        users: &std::collections::HashSet<Uuid>,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<EudiTxRecord>(b"") {
            let (key, tx) = item?;
            if matches!(tx.outcome, TxOutcome::SignedIn { user_id, .. } if users.contains(&user_id))
            {
                out.push((Kind::EudiTx, key));
                out.push((Kind::EudiPoll, tx.poll_hash.to_vec()));
            }
        }
        Ok(out)
    }

    /// Deletes transactions past their result's keeping and unused age tokens past their
    /// expiry (at most `limit` of each); answers how many.
    pub(in crate::tenant) fn sweep_eudi(
        &self,
        batch: &mut tessera_storage::TenantBatch,
        now: OffsetDateTime,
        limit: usize,
    ) -> Result<usize, TenantError> {
        let mut n = self.sweep_kind::<EudiTxRecord>(
            limit,
            |_, tx| tx.expires_at + RESULT_TTL <= now,
            |k, tx| {
                batch.remove(Kind::EudiTx, k);
                batch.remove(Kind::EudiPoll, &tx.poll_hash);
            },
        )?;
        n += self.sweep_kind::<AgeTokenRecord>(
            limit,
            |_, t| t.expires_at <= now,
            |k, _| batch.remove(Kind::AgeToken, k),
        )?;
        Ok(n)
    }
}
