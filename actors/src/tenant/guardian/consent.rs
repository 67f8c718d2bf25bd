//! Consent: the held child asks a guardian (a consent link mailed), and the guardian
//! accepts (with the consent receipt) or declines, an adult by the date of birth asked or by
//! the EU wallet's age proof.

use crate::tenant::ctx::TenantCtx;
use crate::tenant::guardian::memory::Guardian;

use tessera_storage::{sha256, Kind, TenantBatch};
use time::OffsetDateTime;

use super::{
    records::{ChildBlockedIndex, GuardianPurpose, GuardianTokenRecord, CONSENT_TTL},
    values::GuardianAnswer,
};
use crate::error::GuardianError;
use crate::{
    error::TenantError,
    login_guard::{Attempt, Captcha},
    outbound::{MailJob, MailKind},
    tenant::{
        audit::AuditContext,
        messages::Credential,
        records::{ChildStatus, ConsentReceipt},
    },
};

impl Guardian {
    /// `POST /v1/auth/parental-consent`: the child's password proves it is them; a held
    /// account gets a new consent link mailed to `guardian` (the previous one dies).
    pub(super) fn request_consent(
        &mut self,
        cx: &mut TenantCtx,
        email: &str,
        (credential, password_ok): (&Credential, bool),
        guardian: &str,
        ip: std::net::IpAddr,
        ctx: &AuditContext,
    ) -> Result<(GuardianAnswer, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let mut fx = cx.effects();
        // As a login: a wrong password finishing after the block began still counts.
        let attempt = Attempt::new(email, ip, Captcha::Off);
        if let Err(refused) = cx.login_gate(&attempt) {
            if !password_ok {
                cx.count_failed_login(&mut fx.batch, &attempt, credential.user_id, ctx)?;
                cx.commit(fx)?;
            }
            return Err(refused);
        }
        let Some(mut child) = cx.proven_user(email, credential, password_ok)? else {
            cx.count_failed_login(&mut fx.batch, &attempt, credential.user_id, ctx)?;
            cx.audit_into(
                &mut fx.batch,
                "guardian.consent_request_failed",
                ctx,
                serde_json::json!({ "user_id": credential.user_id, "reason": "invalid_credentials" }),
            )?;
            return cx.fail(fx, TenantError::InvalidCredentials);
        };
        cx.login.succeed(&attempt);
        let Some(mut g) = child
            .guardian
            .clone()
            .filter(|g| g.status == ChildStatus::Held)
        else {
            return Err(TenantError::Guardian(GuardianError::ConsentNotPending));
        };
        if child.blocked_at.is_some() {
            return Err(TenantError::UserBlocked);
        }
        if guardian == email {
            return Err(TenantError::Guardian(GuardianError::Invalid));
        }
        // Once a guardian consented (and withdrew), only that guardian is asked again.
        if g.consented_by.as_deref().is_some_and(|c| c != guardian) {
            return Err(TenantError::Guardian(GuardianError::OtherGuardian));
        }
        self.asks
            .hit(&child.id, std::time::Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
        if let Some(old) = g.consent_token.take().and_then(|h| hex::decode(h).ok()) {
            fx.batch.remove(Kind::GuardianToken, &old);
        }
        let expires_at = now + CONSENT_TTL;
        let token = self.put_guardian_token(
            cx,
            &mut fx.batch,
            &GuardianTokenRecord {
                purpose: GuardianPurpose::Consent,
                child: child.id,
                guardian: guardian.to_owned(),
                expires_at,
                confirm: None,
                archive: None,
                adult_proven: false,
                exports: 0,
            },
        )?;
        g.consent_token = Some(hex::encode(sha256(token.as_bytes())));
        g.asked = Some(guardian.to_owned());
        child.guardian = Some(g);
        fx.batch.put(child.id.as_bytes(), &child)?;
        let link = cx.link("v1/guardian/consent", &token);
        fx.locale = child.locale.clone();
        cx.queue_mail(
            &mut fx,
            guardian,
            MailKind::GuardianConsent {
                link,
                child_email: email.to_owned(),
            },
        )?;
        cx.audit_into(
            &mut fx.batch,
            "guardian.consent_requested",
            ctx,
            serde_json::json!({ "user_id": child.id }),
        )?;
        let mail = cx.commit(fx)?;
        Ok((GuardianAnswer::Requested { expires_at }, mail))
    }

    /// The guardian's answer on the consent page: the link is used either way.
    pub(super) fn answer_consent(
        &mut self,
        cx: &mut TenantCtx,
        token: &str,
        accept: bool,
        ctx: &AuditContext,
    ) -> Result<(GuardianAnswer, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let mut fx = cx.effects();
        let (rec, mut child) =
            match self.guardian_link(cx, &mut fx.batch, token, GuardianPurpose::Consent, now) {
                Ok(found) => found,
                Err(e) => return cx.fail(fx, e),
            };
        fx.batch
            .remove(Kind::GuardianToken, &sha256(token.as_bytes()));
        let Some(mut g) = child
            .guardian
            .clone()
            .filter(|g| g.status == ChildStatus::Held)
        else {
            return cx.fail(fx, TenantError::Guardian(GuardianError::Invalid));
        };
        g.consent_token = None;
        g.status_at = now;
        let method = if rec.adult_proven {
            "eudi_wallet"
        } else {
            "email"
        };
        let event = if accept {
            let m = &cx.settings.minors;
            g.status = ChildStatus::Active;
            g.consented_by = Some(rec.guardian.clone());
            g.receipt = Some(ConsentReceipt {
                consented_at: now,
                lawful_basis: m.lawful_basis.clone(),
                purposes: m.purposes.clone(),
                data_categories: m.data_categories.clone(),
                retention: m.retention.clone(),
                controller: self.controller(cx),
                withdrawal_available: true,
                consent_method: method.to_owned(),
            });
            fx.batch.remove(Kind::ChildBlocked, child.id.as_bytes());
            cx.emit_event(
                &mut fx.batch,
                "guardian.consent_granted",
                serde_json::json!({ "user_id": child.id, "consent_method": method }),
            )?;
            "guardian.consent_granted"
        } else {
            g.status = ChildStatus::Blocked;
            fx.batch
                .put(child.id.as_bytes(), &ChildBlockedIndex { at: now })?;
            "guardian.consent_declined"
        };
        let status = g.status;
        let dpia =
            cx.settings.minors.dpia.as_ref().map(
                |d| serde_json::json!({ "dpia_key": d.dpia_key, "dpia_version": d.dpia_version }),
            );
        child.guardian = Some(g);
        fx.batch.put(child.id.as_bytes(), &child)?;
        cx.audit_into(
            &mut fx.batch,
            event,
            ctx,
            serde_json::json!({ "user_id": child.id, "consent_method": method, "dpia": dpia }),
        )?;
        let mail = cx.commit(fx)?;
        Ok((
            GuardianAnswer::Answered {
                tenant: self.guardian_tenant(cx),
                status,
            },
            mail,
        ))
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// Whether a guardian may prove adulthood with the wallet: age verification on, and a
    /// verifier certificate that has not expired.
    pub(super) fn guardian_wallet_available(&self, now: OffsetDateTime) -> bool {
        self.settings.eudi_age.age_verification_enabled
            && self
                .verifier
                .as_ref()
                .is_some_and(|v| v.not_after > now.unix_timestamp())
    }

    /// A wallet proved the guardian of the consent link `link` (its token's SHA-256) an adult.
    pub(in crate::tenant) fn mark_guardian_adult(
        &self,
        batch: &mut TenantBatch,
        link: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        if let Some(mut rec) = self.store.get::<GuardianTokenRecord>(link)? {
            if rec.purpose == GuardianPurpose::Consent && rec.expires_at > now {
                rec.adult_proven = true;
                batch.put(link, &rec)?;
            }
        }
        Ok(())
    }
}
