//! A guardian's links: written under their token's hash, looked up live and of their
//! purpose with the child they name; the tenant and controller the pages show; the
//! per-address limit of the guardian's routes.

use crate::tenant::ctx::TenantCtx;
use crate::tenant::guardian::memory::Guardian;

use tessera_storage::{sha256, Kind, TenantBatch};
use time::OffsetDateTime;

use super::{
    records::{GuardianPurpose, GuardianTokenRecord},
    values::GuardianTenant,
};
use crate::error::GuardianError;
use crate::{error::TenantError, tenant::records::UserRecord};

impl Guardian {
    pub(super) fn guardian_tenant(&self, cx: &TenantCtx) -> GuardianTenant {
        GuardianTenant {
            name: cx.info.name.clone(),
            default_locale: cx.settings.users.default_locale.clone(),
        }
    }

    pub(super) fn controller(&self, cx: &TenantCtx) -> String {
        cx.settings
            .minors
            .controller_name
            .clone()
            .unwrap_or_else(|| cx.info.name.clone())
    }

    pub(super) fn put_guardian_token(
        &self,
        cx: &TenantCtx,
        batch: &mut TenantBatch,
        rec: &GuardianTokenRecord,
    ) -> Result<String, TenantError> {
        let token = cx.link_token();
        batch.put(&sha256(token.as_bytes()), rec)?;
        Ok(token)
    }

    /// The live link of `purpose` behind `token`, with its child; anything else is
    /// `GuardianError::Invalid`, and a dead link found on the way is staged for removal.
    pub(super) fn guardian_link(
        &self,
        cx: &TenantCtx,
        batch: &mut TenantBatch,
        token: &str,
        purpose: GuardianPurpose,
        now: OffsetDateTime,
    ) -> Result<(GuardianTokenRecord, UserRecord), TenantError> {
        let hash = sha256(token.as_bytes());
        let Some(rec) = cx.store.get::<GuardianTokenRecord>(&hash)? else {
            return Err(TenantError::Guardian(GuardianError::Invalid));
        };
        if rec.purpose != purpose {
            return Err(TenantError::Guardian(GuardianError::Invalid));
        }
        let child = cx.user(rec.child)?;
        let live = rec.expires_at > now;
        let child = match child {
            Some(c) if live && c.guardian.is_some() => c,
            _ => {
                batch.remove(Kind::GuardianToken, &hash);
                return Err(TenantError::Guardian(GuardianError::Invalid));
            }
        };
        // Portal and export links work only for the guardian who consented (a child who asked
        // someone else after a withdrawal does not take the portal from them).
        if purpose != GuardianPurpose::Consent
            && child
                .guardian
                .as_ref()
                .and_then(|g| g.consented_by.as_deref())
                != Some(rec.guardian.as_str())
        {
            batch.remove(Kind::GuardianToken, &hash);
            return Err(TenantError::Guardian(GuardianError::Invalid));
        }
        // A consent link is the child's one live link.
        if purpose == GuardianPurpose::Consent
            && child
                .guardian
                .as_ref()
                .and_then(|g| g.consent_token.as_deref())
                != Some(hex::encode(hash).as_str())
        {
            batch.remove(Kind::GuardianToken, &hash);
            return Err(TenantError::Guardian(GuardianError::Invalid));
        }
        Ok((rec, child))
    }

    /// Counts a call of the guardian routes from `ip` (they need no key).
    pub(super) fn guardian_call(&mut self, ip: std::net::IpAddr) -> Result<(), TenantError> {
        self.calls
            .hit(&crate::throttle::throttle_ip(ip), std::time::Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })
    }
}
