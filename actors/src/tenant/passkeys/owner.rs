//! What the owner does with their passkeys: list, rename and delete them.

use crate::tenant::ctx::TenantCtx;
use crate::tenant::passkeys::memory::Passkeys;

use tessera_storage::{sha256, Kind};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::error::PasskeyError;
use crate::{
    error::TenantError,
    outbound::MailJob,
    tenant::{
        audit::AuditContext,
        messages::{Bearer, PasskeyView},
        records::{passkey_key, PasskeyRecord, UserRecord},
    },
};

impl Passkeys {
    /// The caller's passkeys, oldest first.
    pub fn passkey_list(
        &self,
        cx: &TenantCtx,
        bearer: Bearer,
    ) -> Result<Vec<PasskeyView>, TenantError> {
        let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
        Ok(cx
            .passkeys_of(user.id)?
            .iter()
            .map(PasskeyRecord::view)
            .collect())
    }

    /// One of the caller's passkeys (another's: not found).
    fn own_passkey(
        &self,
        cx: &TenantCtx,
        bearer: Bearer,
        id: Uuid,
    ) -> Result<(UserRecord, PasskeyRecord), TenantError> {
        let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
        let record = self
            .passkey(cx, user.id, id)?
            .ok_or(TenantError::NotFound)?;
        Ok((user, record))
    }

    /// Renames one of the caller's passkeys.
    pub fn passkey_rename(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        id: Uuid,
        nickname: String,
        ctx: &AuditContext,
    ) -> Result<(PasskeyView, Vec<MailJob>), TenantError> {
        let (user, mut record) = self.own_passkey(cx, bearer, id)?;
        record.nickname = Some(nickname);
        let mut fx = cx.effects();
        fx.batch.put(&passkey_key(user.id, id), &record)?;
        self.passkey_audit(cx, &mut fx, "auth.passkey.renamed", &record, ctx)?;
        Ok((record.view(), cx.commit(fx)?))
    }

    /// Deletes one of the caller's passkeys, unless it is their last way in: no password,
    /// no confirmed address or number, no other passkey.
    pub fn passkey_delete(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        id: Uuid,
        ctx: &AuditContext,
    ) -> Result<((), Vec<MailJob>), TenantError> {
        let (user, record) = self.own_passkey(cx, bearer, id)?;
        let other_way_in = user.password_hash.is_some()
            || (user.email.is_some() && user.email_verified)
            || (user.phone.is_some() && user.phone_verified)
            || cx.usable_passkeys(user.id)?.iter().any(|p| p.id != id);
        if !other_way_in {
            return Err(TenantError::Passkey(PasskeyError::LastCredential));
        }
        let mut fx = cx.effects();
        fx.batch.remove(Kind::Passkey, &passkey_key(user.id, id));
        fx.batch.remove(Kind::PasskeyUse, &passkey_key(user.id, id));
        fx.batch
            .remove(Kind::PasskeyCredential, &sha256(&record.credential.cred_id));
        self.passkey_audit(cx, &mut fx, "auth.passkey.deleted", &record, ctx)?;
        Ok(((), cx.commit(fx)?))
    }
}
