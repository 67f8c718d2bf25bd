//! A user's passkeys as stored, each read together with its use state: listed, looked up,
//! counted under an RP id, their keys for erasure, and the audit event of a change.

use tessera_storage::{sha256, Kind};
use uuid::Uuid;

use crate::tenant::ctx::TenantCtx;
use crate::tenant::passkeys::memory::Passkeys;
use crate::{
    error::TenantError,
    tenant::{
        audit::AuditContext,
        effects::Effects,
        messages::PasskeyView,
        records::{passkey_key, PasskeyRecord, PasskeyUse},
    },
};

impl PasskeyRecord {
    pub fn view(&self) -> PasskeyView {
        let transports = self
            .credential
            .transports
            .iter()
            .flatten()
            .filter_map(|t| serde_json::to_value(t).ok())
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        PasskeyView {
            id: self.id,
            nickname: self.nickname.clone(),
            created_at: self.created_at,
            last_used_at: self.last_used_at,
            backup_eligible: self.credential.backup_eligible,
            backed_up: self.credential.backup_state,
            transports,
            aaguid: self.aaguid,
            suspected_clone: self.suspected_clone,
        }
    }
}

impl Passkeys {
    /// A passkey's use state as stored now; `None` when the passkey is gone.
    pub(super) fn use_now(
        &self,
        cx: &TenantCtx,
        user: Uuid,
        passkey: Uuid,
    ) -> Result<Option<PasskeyUse>, TenantError> {
        let key = passkey_key(user, passkey);
        if let Some(used) = cx.store.get::<PasskeyUse>(&key)? {
            return Ok(Some(used));
        }
        // Never used since registration: the record's own values.
        Ok(cx.store.get::<PasskeyRecord>(&key)?.map(|r| r.use_state()))
    }

    /// One passkey with its use applied.
    pub(super) fn passkey(
        &self,
        cx: &TenantCtx,
        user: Uuid,
        passkey: Uuid,
    ) -> Result<Option<PasskeyRecord>, TenantError> {
        cx.store
            .get::<PasskeyRecord>(&passkey_key(user, passkey))?
            .map(|r| cx.in_use(r))
            .transpose()
    }

    /// How many passkeys of all users were registered under `rp_id`.
    pub(in crate::tenant) fn passkeys_under(
        &self,
        cx: &TenantCtx,
        rp_id: &str,
    ) -> Result<usize, TenantError> {
        let mut n = 0;
        for item in cx.store.scan::<PasskeyRecord>(b"") {
            let (_, record) = item?;
            if record.rp_id == rp_id {
                n += 1;
            }
        }
        Ok(n)
    }

    pub(super) fn passkey_audit(
        &mut self,
        cx: &mut TenantCtx,
        fx: &mut Effects,
        event: &str,
        record: &PasskeyRecord,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        let metadata = serde_json::json!({
            "user_id": record.user_id,
            "passkey_id": record.id,
            "backup_eligible": record.credential.backup_eligible,
            "ip_hash": ctx.ip_hash,
            "ua_family": ctx.ua_family,
        });
        cx.audit_into(&mut fx.batch, event, ctx, metadata)
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// The user's passkeys, oldest first, each with its use applied.
    pub(in crate::tenant) fn passkeys_of(
        &self,
        user: Uuid,
    ) -> Result<Vec<PasskeyRecord>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<PasskeyRecord>(user.as_bytes()) {
            let (_, record) = item?;
            out.push(self.in_use(record)?);
        }
        out.sort_by_key(|p| p.created_at);
        Ok(out)
    }

    /// `record` with its use state applied, when it has one.
    fn in_use(&self, record: PasskeyRecord) -> Result<PasskeyRecord, TenantError> {
        let key = passkey_key(record.user_id, record.id);
        Ok(match self.store.get::<PasskeyUse>(&key)? {
            Some(used) => record.with_use(used),
            None => record,
        })
    }

    /// The user's passkeys that can sign in now: under the RP id in force, not suspect.
    pub(in crate::tenant) fn usable_passkeys(
        &self,
        user: Uuid,
    ) -> Result<Vec<PasskeyRecord>, TenantError> {
        let rp_id = self.passkey_rp_id();
        Ok(self
            .passkeys_of(user)?
            .into_iter()
            .filter(|p| p.rp_id == rp_id && !p.suspected_clone)
            .collect())
    }

    /// The records of the user's passkeys: each credential, its use record and its index
    /// entry.
    pub(in crate::tenant) fn passkey_keys(
        &self,
        user: Uuid,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for p in self.passkeys_of(user)? {
            out.push((Kind::Passkey, passkey_key(user, p.id)));
            out.push((Kind::PasskeyUse, passkey_key(user, p.id)));
            out.push((
                Kind::PasskeyCredential,
                sha256(&p.credential.cred_id).to_vec(),
            ));
        }
        Ok(out)
    }
}
