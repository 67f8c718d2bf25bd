//! What a verified presentation does: the user a wallet identity signs in as (linked, found
//! by its attested address, or new), under the tenant's assurance floor; and the client's
//! poll, which opens the session or hands over the age token, once.

use tessera_storage::{ct_eq, sha256};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    records::{
        Eidas, EudiClaimsRecord, EudiPollIndex, EudiPurpose, EudiSubjectRecord, EudiTxRecord,
        TxOutcome,
    },
    refusal::EudiRefusal,
    values::{EudiAnswer, PollAnswer, WalletIdentity},
};
use crate::tenant::ctx::TenantCtx;
use crate::tenant::eudi::memory::Eudi;
use crate::{
    error::TenantError,
    tenant::{
        audit::AuditContext, effects::Effects, messages::LoginOutcome, records::UserRecord,
        sessions::Proof, settings::AssuranceKind,
    },
};

/// The level a floor asks for: an eIDAS level, or an AAL (`aal2`, `AAL2` or `2`): AAL2 and
/// above need two factors, which eIDAS substantial and high are.
pub(super) fn floor_level(kind: AssuranceKind, value: &str) -> Eidas {
    match kind {
        AssuranceKind::Eidas => Eidas::parse(value).unwrap_or(Eidas::High),
        AssuranceKind::Aal => {
            let v = value.to_ascii_lowercase();
            match v.trim_start_matches("aal").parse::<u8>() {
                Ok(n) if n >= 2 => Eidas::Substantial,
                _ => Eidas::Low,
            }
        }
    }
}

impl Eudi {
    /// The user a verified wallet identity signs in as: the one linked to it; else the
    /// account of its attested address when automatic linking allows; else a new account.
    /// Answers the user and the `acr`.
    pub(super) fn wallet_user(
        &mut self,
        cx: &mut TenantCtx,
        fx: &mut Effects,
        identity: &WalletIdentity,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<(Uuid, Eidas), TenantError> {
        let acr = identity.level;
        if let Some(floor) = &cx.settings.eudi.required_assurance_floor {
            if acr < floor_level(floor.kind, &floor.value) {
                return Err(TenantError::Eudi(EudiRefusal::BelowFloor));
            }
        }
        let mut subject_input = identity.issuer.as_bytes().to_vec();
        subject_input.push(0);
        subject_input.extend_from_slice(identity.identifier.as_bytes());
        let subject = cx.eudi_hasher.hash(&subject_input);
        let linked = match cx.store.get::<EudiSubjectRecord>(&subject)? {
            Some(l) => cx.user(l.user_id)?,
            None => None,
        };
        let email = identity
            .email
            .as_deref()
            .and_then(crate::policy::normalize_email);
        // A wallet identity signs in only as the account it made: a PID's e-mail address is
        // the holder's say-so (issuers need not check it), so it never opens another account,
        // and an address an account holds is not taken over.
        let user: UserRecord = if let Some(user) = linked {
            user
        } else if match &email {
            Some(e) => cx.user_by_email(e)?.is_some(),
            None => false,
        } {
            return Err(TenantError::Eudi(EudiRefusal::EmailExists));
        } else {
            if match &email {
                Some(e) => cx.registration_blocked(fx, e, ctx)?,
                None => !cx.settings.email_domains.allowlist.is_empty(),
            } {
                return Err(TenantError::Eudi(EudiRefusal::EmailExists));
            }
            let mut user = UserRecord::blank(Uuid::now_v7(), now);
            // Minor protection: the PID's birth date must show the consent age.
            let born = identity.claims.get("birth_date").and_then(|v| v.as_str());
            if cx.settings.minors.minor_protection_enabled {
                if !born.is_some_and(|b| cx.adult_for_consent(b, now)) {
                    return Err(TenantError::Eudi(EudiRefusal::AgeRequired));
                }
                user.date_of_birth = born
                    .map(|b| {
                        cx.master_key
                            .seal(&cx.user_aad(user.id, "date_of_birth"), b.as_bytes())
                    })
                    .transpose()?;
            }
            cx.count_active(&mut fx.batch, None, now)?;
            // Kept unconfirmed: the account's confirmation rule applies as to any address.
            user.email = email.clone();
            user.email_verified = false;
            cx.put_new_user(&mut fx.batch, &user)?;
            cx.emit_user_created(&mut fx.batch, &user, "eudi_wallet")?;
            cx.audit_into(
                &mut fx.batch,
                "auth.register",
                ctx,
                serde_json::json!({ "user_id": user.id, "method": "eudi_wallet" }),
            )?;
            user
        };
        if user.blocked_at.is_some() {
            return Err(TenantError::Eudi(EudiRefusal::AccountBlocked));
        }
        fx.batch.put(
            &subject,
            &EudiSubjectRecord {
                user_id: user.id,
                issuer: identity.issuer.clone(),
                linked_at: now,
            },
        )?;
        let mut subjects = cx
            .store
            .get::<EudiClaimsRecord>(user.id.as_bytes())?
            .map(|c| c.subjects)
            .unwrap_or_default();
        if !subjects.contains(&subject) {
            subjects.push(subject);
        }
        let plain = serde_json::to_vec(&identity.claims)
            .map_err(|e| TenantError::Internal(e.to_string()))?;
        let sealed = cx
            .master_key
            .seal(&cx.user_aad(user.id, "eudi_claims"), &plain)?;
        fx.batch.put(
            user.id.as_bytes(),
            &EudiClaimsRecord {
                sealed,
                subjects,
                acr,
                issuer: identity.issuer.clone(),
                verified_at: now,
            },
        )?;
        Ok((user.id, acr))
    }

    pub(super) fn eudi_result(
        &mut self,
        cx: &mut TenantCtx,
        purpose: EudiPurpose,
        state: &str,
        response_code: Option<&str>,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<EudiAnswer, TenantError> {
        let poll = |a| Ok(EudiAnswer::Poll(a));
        let Some(ix) = cx.store.get::<EudiPollIndex>(&sha256(state.as_bytes()))? else {
            return poll(PollAnswer::NotFound);
        };
        let Some(mut tx) = cx.store.get::<EudiTxRecord>(&ix.tx_key)? else {
            return poll(PollAnswer::NotFound);
        };
        if tx.purpose != purpose {
            return poll(PollAnswer::NotFound);
        }
        if tx.expires_at <= now {
            return poll(PollAnswer::Expired);
        }
        if matches!(tx.outcome, TxOutcome::Pending) {
            return poll(PollAnswer::Pending);
        }
        if let Some(expected) = &tx.response_code_hash {
            let shown = response_code.map(|c| sha256(c.as_bytes()));
            if !shown.is_some_and(|s| ct_eq(&s, expected)) {
                return Err(TenantError::Eudi(EudiRefusal::ResponseCodeMismatch));
            }
        }
        let mut fx = cx.effects();
        let answer = match std::mem::replace(&mut tx.outcome, TxOutcome::Consumed) {
            TxOutcome::SignedIn { user_id, acr } => {
                let Some(mut user) = cx.user(user_id)? else {
                    return poll(PollAnswer::NotFound);
                };
                let high_enough = acr >= Eidas::Substantial;
                let mut proof = Proof::first_factor("pop", "eudi_wallet");
                proof.acr = Some(acr);
                proof.audit.insert("acr".into(), acr.acr().into());
                // eIDAS substantial and high are two-factor by definition (wallet key and
                // the holder's unlock): the session is AAL2 and no MFA step follows.
                let login = if high_enough {
                    proof.aal = 2;
                    cx.signed_in(&mut fx, &mut user, proof, ctx, now)
                        .map(|grant| LoginOutcome::Signed {
                            grant,
                            enrollment_required_by: None,
                        })
                } else {
                    cx.sign_in(&mut fx, &mut user, proof, ctx, now)
                        .map(|l| l.outcome)
                };
                match login {
                    Ok(l) => PollAnswer::Consumed(Some(Box::new(l))),
                    Err(e) => return cx.fail(fx, e),
                }
            }
            TxOutcome::Consumed => PollAnswer::Consumed(None),
            TxOutcome::Determined {
                over,
                token_hash,
                sealed_token,
            } => {
                let token = match &sealed_token {
                    Some(sealed) => {
                        let plain = cx
                            .master_key
                            .open(&self.tx_aad(cx, &tx.request_id), sealed)?;
                        Some(String::from_utf8_lossy(&plain).into_owned())
                    }
                    None => None,
                };
                tx.outcome = TxOutcome::Determined {
                    over,
                    token_hash,
                    sealed_token: None,
                };
                PollAnswer::Determined(token)
            }
            TxOutcome::Fallback => {
                tx.outcome = TxOutcome::Fallback;
                PollAnswer::Fallback
            }
            TxOutcome::Pending => return poll(PollAnswer::Pending),
        };
        fx.batch.put(&ix.tx_key, &tx)?;
        cx.commit(fx)?;
        poll(answer)
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// What wallets attested for the user (the data export): issuer, level, when, and the
    /// disclosed attributes; `null` for a user who never signed in with a wallet.
    pub(in crate::tenant) fn wallet_claims_of(
        &self,
        user: Uuid,
    ) -> Result<serde_json::Value, TenantError> {
        let Some(c) = self.store.get::<EudiClaimsRecord>(user.as_bytes())? else {
            return Ok(serde_json::Value::Null);
        };
        let plain = self
            .master_key
            .open(&self.user_aad(user, "eudi_claims"), &c.sealed)?;
        let claims: serde_json::Value =
            serde_json::from_slice(&plain).map_err(|e| TenantError::Internal(e.to_string()))?;
        Ok(serde_json::json!({
            "issuer": c.issuer,
            "acr": c.acr.acr(),
            "verified_at": c.verified_at
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            "claims": claims,
        }))
    }
}
