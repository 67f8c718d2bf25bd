//! What the rest of the tenant asks of minor protection's records: the links a user's
//! erasure removes, the daily sweep of expired links, and the purge of declined accounts.

use tessera_storage::{Kind, TenantBatch};
use time::OffsetDateTime;
use uuid::Uuid;

use super::records::{ChildBlockedIndex, GuardianTokenRecord, DECLINED_RETENTION};
use crate::tenant::ctx::TenantCtx;
use crate::{
    error::TenantError,
    tenant::{audit::AuditContext, effects::Effects, records::ChildStatus},
};

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// The keys of the guardian links (consent, portal, export) about any of `users`.
    pub(in crate::tenant) fn guardian_link_keys(
        &self,
        users: &std::collections::HashSet<Uuid>,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        self.keys_where::<GuardianTokenRecord>(|r| users.contains(&r.child))
    }

    /// Removes up to `limit` expired guardian links (an export's sealed archive among them);
    /// answers how many.
    pub(in crate::tenant) fn sweep_guardian(
        &self,
        batch: &mut TenantBatch,
        as_of: OffsetDateTime,
        limit: usize,
    ) -> Result<usize, TenantError> {
        let mut n = 0;
        for item in self.store.scan::<GuardianTokenRecord>(b"") {
            if n == limit {
                break;
            }
            let (key, rec) = item?;
            if rec.expires_at <= as_of {
                batch.remove(Kind::GuardianToken, &key);
                n += 1;
            }
        }
        Ok(n)
    }

    /// Erases declined minors' accounts 30 days after the decline (the daily purge).
    pub(in crate::tenant) fn purge_declined(
        &mut self,
        fx: &mut Effects,
        as_of: OffsetDateTime,
        limit: usize,
    ) -> Result<usize, TenantError> {
        let mut due = Vec::new();
        for item in self.store.scan::<ChildBlockedIndex>(b"") {
            let (key, ix) = item?;
            if due.len() == limit {
                break;
            }
            if ix.at + DECLINED_RETENTION <= as_of {
                due.push(key);
            }
        }
        let mut n = 0;
        for key in due {
            fx.batch.remove(Kind::ChildBlocked, &key);
            let Ok(id) = Uuid::from_slice(&key) else {
                continue;
            };
            let Some(child) = self.user(id)? else {
                continue;
            };
            if child.guardian.as_ref().map(|g| g.status) != Some(ChildStatus::Blocked) {
                continue;
            }
            self.erase_child(fx, &child)?;
            // The record of the erasure names the erased id and nothing else.
            self.audit_into(
                &mut fx.batch,
                "guardian.declined_account_erased",
                &AuditContext::default(),
                serde_json::json!({ "deleted_user_id": child.id }),
            )?;
            n += 1;
        }
        Ok(n)
    }
}
