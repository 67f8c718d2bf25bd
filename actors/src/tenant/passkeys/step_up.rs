//! The passkey step-up of a signed-in session, in the same two messages as a sign-in around
//! the handler's check, answering a step-up grant at AAL2.

use std::time::Instant;

use time::OffsetDateTime;
use webauthn_rs_core::proto::{Credential, PublicKeyCredential};

use super::check::{amr_of, signed_challenge, AssertionVerdict, CheckedPasskey, PasskeyCheck};
use super::{check::ASSERTION_UV, memory::Passkeys, sign_in::Settled};
use crate::error::{PasskeyError, TenantError};
use crate::outbound::MailJob;
use crate::tenant::messages::{Bearer, StepUpGrant};
use crate::tenant::{audit::AuditContext, ceremonies::Ceremony, ctx::TenantCtx};

impl Passkeys {
    /// The step-up options of the caller's session: their usable passkeys, user
    /// verification required.
    pub fn passkey_step_up_options(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        ctx: &AuditContext,
    ) -> Result<(serde_json::Value, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let (session, user) = cx.live_session(bearer, now)?;
        let creds: Vec<Credential> = cx
            .usable_passkeys(user.id)?
            .into_iter()
            .map(|p| p.credential)
            .collect();
        if creds.is_empty() {
            return Err(TenantError::StepUpMethodUnavailable);
        }
        self.step_ups
            .hit(&session.id, Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
        let rp = self.relying_party(cx)?;
        let builder = rp
            .new_challenge_authenticate_builder(creds, Some(ASSERTION_UV))
            .map_err(|e| TenantError::Internal(format!("passkey options: {e}")))?;
        let (rcr, state) = rp
            .generate_challenge_authenticate(builder)
            .map_err(|e| TenantError::Internal(format!("passkey options: {e}")))?;
        let options = serde_json::to_value(&rcr.public_key)
            .map_err(|e| TenantError::Internal(e.to_string()))?;
        cx.ceremonies.insert(
            rcr.public_key.challenge.to_vec(),
            Ceremony::StepUp {
                session: session.id,
                user: user.id,
                state: Box::new(state),
            },
            Instant::now(),
        );
        let mut fx = cx.effects();
        let metadata = serde_json::json!({
            "user_id": user.id,
            "session_id": session.id,
            "step_up_method": "passkey",
            "aal": 2,
            "ip_hash": ctx.ip_hash,
            "ua_family": ctx.ua_family,
        });
        cx.audit_into(
            &mut fx.batch,
            "auth.step_up_passkey_options_issued",
            ctx,
            metadata,
        )?;
        Ok((options, cx.commit(fx)?))
    }

    /// The first half of a passkey step-up: takes the caller's session's options that the
    /// assertion names and finds the passkey, so the signature is checked off the actor
    /// ([`PasskeyCheck::verify`]); [`Self::passkey_step_up_finish`] applies the verdict.
    pub fn passkey_step_up_take(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        assertion: serde_json::Value,
        ctx: &AuditContext,
    ) -> Result<PasskeyCheck, TenantError> {
        let (session, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
        let mut fx = cx.effects();
        let assertion: PublicKeyCredential = match serde_json::from_value(assertion) {
            Ok(a) => a,
            Err(_) => {
                cx.step_up_failed(&mut fx, &user, "passkey", 2, "malformed", ctx)?;
                return cx.fail(fx, TenantError::Passkey(PasskeyError::InvalidAssertion));
            }
        };
        let challenge = signed_challenge(&assertion.response.client_data_json)
            .ok_or(TenantError::InvalidChallenge)?;
        let state = match cx.ceremonies.take(&challenge, Instant::now()) {
            Some(Ceremony::StepUp {
                session: s,
                user: u,
                state,
            }) if s == session.id && u == user.id => state,
            _ => {
                cx.step_up_failed(&mut fx, &user, "passkey", 2, "no_challenge", ctx)?;
                return cx.fail(fx, TenantError::InvalidChallenge);
            }
        };
        let record = match self.passkey_named(cx, &assertion)? {
            Some(r) if r.user_id == user.id => r,
            _ => {
                cx.step_up_failed(&mut fx, &user, "passkey", 2, "unknown_credential", ctx)?;
                return cx.fail(fx, TenantError::Passkey(PasskeyError::InvalidAssertion));
            }
        };
        self.passkey_check(cx, assertion, state, challenge, record)
    }

    /// The second half of a passkey step-up: the verdict applied to the passkey as stored
    /// now, then a step-up token of the caller's session at AAL2, `hwk` or `swk`. Without
    /// user verification: `PasskeyStepUpRequired`, nothing issued.
    pub fn passkey_step_up_finish(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        (passkey, verdict): (CheckedPasskey, AssertionVerdict),
        ctx: &AuditContext,
    ) -> Result<(StepUpGrant, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let (session, user) = cx.live_session(bearer, now)?;
        let mut fx = cx.effects();
        let used = match self.settle(cx, &mut fx, (&passkey, verdict), user.id, now, ctx)? {
            Settled::Used(used) => used,
            Settled::Refused { reason, error } => {
                cx.step_up_failed(&mut fx, &user, "passkey", 2, reason, ctx)?;
                return cx.fail(fx, error);
            }
        };
        let grant = cx.issue_step_up(
            &mut fx,
            &session,
            2,
            vec![amr_of(&used).to_owned()],
            "passkey",
            None,
            ctx,
        )?;
        Ok((grant, cx.commit(fx)?))
    }
}
