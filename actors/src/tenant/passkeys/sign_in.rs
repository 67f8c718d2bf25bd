//! Sign-in with a passkey, by user handle or discoverable: the options, the ceremony taken
//! for the handler's check, and the verdict applied to the passkey's use as stored, ending
//! in `signed_in` at AAL2.

use std::{net::IpAddr, time::Instant};

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use tessera_storage::sha256;
use time::OffsetDateTime;
use uuid::Uuid;
use webauthn_rs_core::proto::{AllowCredentials, Credential, PublicKeyCredential};

use super::{
    check::{
        amr_of, signed_challenge, AssertionVerdict, CheckedPasskey, PasskeyCheck, ASSERTION_UV,
    },
    memory::Passkeys,
};
use crate::{
    error::{PasskeyError, TenantError},
    outbound::MailJob,
    tenant::{
        audit::AuditContext,
        ceremonies::Ceremony,
        ctx::TenantCtx,
        effects::{refused, Effects},
        messages::LoginOutcome,
        records::{passkey_key, PasskeyCredentialIndex, PasskeyRecord, PasskeyUse, UserRecord},
        sessions::Proof,
    },
    throttle::throttle_ip,
};

/// What a finish makes of a checked assertion ([`Passkeys::settle`]).
pub(super) enum Settled {
    /// The passkey's use, as the verdict left it.
    Used(PasskeyUse),
    /// Refused: the reason the audit event names, and the error.
    Refused {
        reason: &'static str,
        error: TenantError,
    },
}

/// The user handle of a sign-in request: the user id's 16 bytes in base64url (as the
/// authenticator returns it), or the id as text.
pub(super) fn parse_user_handle(handle: &str) -> Option<Uuid> {
    if let Ok(id) = Uuid::parse_str(handle) {
        return Some(id);
    }
    let bytes = URL_SAFE_NO_PAD.decode(handle.trim_end_matches('=')).ok()?;
    Uuid::from_slice(&bytes).ok()
}

impl Passkeys {
    /// The request options of a sign-in: for the user `user_handle` names (their usable
    /// passkeys; for an unknown user or one without passkeys, a credential id derived from
    /// the handle, so the answer does not tell), or discoverable without one.
    pub fn passkey_assert_begin(
        &mut self,
        cx: &mut TenantCtx,
        user_handle: Option<&str>,
        ip: IpAddr,
    ) -> Result<serde_json::Value, TenantError> {
        let clock = Instant::now();
        cx.login.address_gate(ip).map_err(refused)?;
        self.begins
            .hit(&throttle_ip(ip), clock)
            .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
        let rp = self.relying_party(cx)?;
        let (user, creds, decoy) = match user_handle {
            None => (None, Vec::new(), None),
            Some(handle) => {
                let found = parse_user_handle(handle)
                    .map(|id| cx.user(id))
                    .transpose()?
                    .flatten()
                    .filter(|u| u.blocked_at.is_none());
                let creds: Vec<Credential> = match &found {
                    Some(u) => cx
                        .usable_passkeys(u.id)?
                        .into_iter()
                        .map(|p| p.credential)
                        .collect(),
                    None => Vec::new(),
                };
                if creds.is_empty() {
                    let decoy = cx.otp_hasher.hash(handle.as_bytes()).to_vec();
                    (Some(Uuid::nil()), creds, Some(decoy))
                } else {
                    (found.map(|u| u.id), creds, None)
                }
            }
        };
        let builder = rp
            .new_challenge_authenticate_builder(creds, Some(ASSERTION_UV))
            .map_err(|e| TenantError::Internal(format!("passkey options: {e}")))?;
        let (mut rcr, state) = rp
            .generate_challenge_authenticate(builder)
            .map_err(|e| TenantError::Internal(format!("passkey options: {e}")))?;
        if let Some(id) = decoy {
            rcr.public_key.allow_credentials = vec![AllowCredentials {
                type_: "public-key".into(),
                id,
                transports: None,
            }];
        }
        let challenge = rcr.public_key.challenge.to_vec();
        let options = serde_json::to_value(&rcr.public_key)
            .map_err(|e| TenantError::Internal(e.to_string()))?;
        cx.ceremonies.insert(
            challenge,
            Ceremony::SignIn {
                user,
                state: Box::new(state),
            },
            clock,
        );
        Ok(options)
    }

    /// Applies what the checks said of an assertion to the passkey's use as stored now: a
    /// counter that did not increase past the stored one (when either is non-zero) marks it
    /// a suspected clone (written with `fx`, with its audit event); a valid one moves the
    /// counter and the backup flags, and the last use to `now`. A passkey made under another
    /// RP id than the tenant's now, or already suspect, is refused whatever the verdict.
    pub(super) fn apply_verdict(
        &mut self,
        cx: &mut TenantCtx,
        fx: &mut Effects,
        passkey: &CheckedPasskey,
        used: &mut PasskeyUse,
        verdict: AssertionVerdict,
        now: OffsetDateTime,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        if passkey.rp_id != cx.passkey_rp_id() || used.suspected_clone {
            return Err(TenantError::Passkey(PasskeyError::InvalidAssertion));
        }
        let key = passkey_key(passkey.user_id, passkey.passkey_id);
        let stored = used.counter;
        let counted = |c: u32| (c > 0 || stored > 0) && c <= stored;
        match verdict {
            AssertionVerdict::Valid {
                counter,
                backup_eligible,
                backup_state,
            } if !counted(counter) => {
                used.counter = counter.max(stored);
                used.backup_eligible = backup_eligible;
                used.backed_up = backup_state;
                used.last_used_at = Some(now);
                fx.batch.put(&key, &*used)?;
                Ok(())
            }
            AssertionVerdict::Valid { .. } | AssertionVerdict::CounterRegression => {
                used.suspected_clone = true;
                fx.batch.put(&key, &*used)?;
                let metadata = serde_json::json!({
                    "user_id": passkey.user_id,
                    "passkey_id": passkey.passkey_id,
                    "stored_counter": stored,
                    "ip_hash": ctx.ip_hash,
                    "ua_family": ctx.ua_family,
                });
                cx.audit_into(
                    &mut fx.batch,
                    "auth.passkey.counter_regression",
                    ctx,
                    metadata,
                )?;
                Err(TenantError::Passkey(PasskeyError::InvalidAssertion))
            }
            AssertionVerdict::UserNotVerified => {
                Err(TenantError::Passkey(PasskeyError::StepUpRequired))
            }
            AssertionVerdict::Invalid => Err(TenantError::Passkey(PasskeyError::InvalidAssertion)),
        }
    }

    /// What a finish makes of a checked assertion for `owner`, the user it must be of: the
    /// passkey's use as stored now with the verdict applied ([`Self::apply_verdict`]), or why
    /// it is refused.
    pub(super) fn settle(
        &mut self,
        cx: &mut TenantCtx,
        fx: &mut Effects,
        (passkey, verdict): (&CheckedPasskey, AssertionVerdict),
        owner: Uuid,
        now: OffsetDateTime,
        ctx: &AuditContext,
    ) -> Result<Settled, TenantError> {
        let used = self
            .use_now(cx, owner, passkey.passkey_id)?
            .filter(|_| passkey.user_id == owner);
        let Some(mut used) = used else {
            // Deleted while its signature was being checked.
            return Ok(Settled::Refused {
                reason: "unknown_credential",
                error: TenantError::Passkey(PasskeyError::InvalidAssertion),
            });
        };
        let Err(error) = self.apply_verdict(cx, fx, passkey, &mut used, verdict, now, ctx) else {
            return Ok(Settled::Used(used));
        };
        let reason = match error {
            TenantError::Passkey(PasskeyError::StepUpRequired) => "user_not_verified",
            _ => "invalid_assertion",
        };
        Ok(Settled::Refused { reason, error })
    }

    /// The stored passkey an assertion names, if any.
    pub(super) fn passkey_named(
        &self,
        cx: &TenantCtx,
        assertion: &PublicKeyCredential,
    ) -> Result<Option<PasskeyRecord>, TenantError> {
        let Some(ix) = cx
            .store
            .get::<PasskeyCredentialIndex>(&sha256(&assertion.raw_id))?
        else {
            return Ok(None);
        };
        self.passkey(cx, ix.user_id, ix.passkey_id)
    }

    /// A refused sign-in: counted against the client address, and audited.
    fn passkey_sign_in_failed<T>(
        &mut self,
        cx: &mut TenantCtx,
        mut fx: Effects,
        ip: IpAddr,
        user: Option<Uuid>,
        reason: &str,
        ctx: &AuditContext,
    ) -> Result<T, TenantError> {
        cx.login.fail_address(ip);
        cx.audit_into(
            &mut fx.batch,
            "auth.login.failed",
            ctx,
            serde_json::json!({
                "user_id": user,
                "method": "passkey",
                "reason": reason,
                "ip_hash": ctx.ip_hash,
                "ua_family": ctx.ua_family,
            }),
        )?;
        cx.fail(fx, TenantError::Passkey(PasskeyError::InvalidAssertion))
    }

    /// The first half of a sign-in: takes the ceremony the assertion names and finds the
    /// passkey, so the signature can be checked off the actor ([`PasskeyCheck::verify`]);
    /// [`Self::passkey_assert_finish`] then applies the verdict. Refusals here are counted
    /// and audited like a wrong signature.
    pub fn passkey_assert_take(
        &mut self,
        cx: &mut TenantCtx,
        response: serde_json::Value,
        ip: IpAddr,
        ctx: &AuditContext,
    ) -> Result<PasskeyCheck, TenantError> {
        let clock = Instant::now();
        let fx = cx.effects();
        let Ok(assertion) = serde_json::from_value::<PublicKeyCredential>(response) else {
            return self.passkey_sign_in_failed(cx, fx, ip, None, "malformed", ctx);
        };
        let challenge = signed_challenge(&assertion.response.client_data_json)
            .ok_or(TenantError::Passkey(PasskeyError::CeremonyNotFound))?;
        let (named, state) = match cx.ceremonies.take(&challenge, clock) {
            Some(Ceremony::SignIn { user, state }) => (user, state),
            _ => return Err(TenantError::Passkey(PasskeyError::CeremonyNotFound)),
        };
        cx.login.address_gate(ip).map_err(refused)?;
        let Some(record) = self.passkey_named(cx, &assertion)? else {
            return self.passkey_sign_in_failed(cx, fx, ip, None, "unknown_credential", ctx);
        };
        let owner = record.user_id;
        let handle_ok = match &assertion.response.user_handle {
            Some(h) => h.as_slice() == owner.as_bytes(),
            // A discoverable sign-in must say whose credential it is.
            None => named.is_some(),
        };
        if !handle_ok || named.is_some_and(|u| u != owner) {
            return self.passkey_sign_in_failed(cx, fx, ip, Some(owner), "wrong_user", ctx);
        }
        self.passkey_check(cx, assertion, state, challenge, record)
    }

    /// The second half of a sign-in: the verdict on the signature applied to the passkey as
    /// stored now (its counter may have moved since the take), then AAL2, `hwk` or `swk`, no
    /// second step.
    pub fn passkey_assert_finish(
        &mut self,
        cx: &mut TenantCtx,
        (passkey, verdict): (CheckedPasskey, AssertionVerdict),
        ip: IpAddr,
        ctx: &AuditContext,
    ) -> Result<(LoginOutcome, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let mut fx = cx.effects();
        let user_id = passkey.user_id;
        let used = match self.settle(cx, &mut fx, (&passkey, verdict), user_id, now, ctx)? {
            Settled::Used(used) => used,
            Settled::Refused { reason, .. } => {
                return self.passkey_sign_in_failed(cx, fx, ip, Some(user_id), reason, ctx)
            }
        };
        let mut user: UserRecord = cx
            .user(user_id)?
            .ok_or(TenantError::Passkey(PasskeyError::InvalidAssertion))?;
        let mut proof = Proof::first_factor(amr_of(&used), "passkey");
        proof.aal = 2;
        proof
            .audit
            .insert("passkey_id".into(), serde_json::json!(passkey.passkey_id));
        let grant = match cx.signed_in(&mut fx, &mut user, proof, ctx, now) {
            Ok(g) => g,
            Err(e) => return cx.fail(fx, e),
        };
        let outcome = LoginOutcome::Signed {
            grant,
            enrollment_required_by: None,
        };
        Ok((outcome, cx.commit(fx)?))
    }
}
