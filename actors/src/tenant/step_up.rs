//! Step-up re-authentication (spec 4.1 and 5): a signed-in user proves again who they are
//! (password, an e-mailed code, an e-mailed link, or TOTP through the MFA verify flow) and
//! gets a short-lived, single-use step-up token bound to their session, which a gated request
//! then consumes.
//!
//! Every challenge here is bound to the session that started it (its slot is the session id),
//! so verifying from any other session fails, and a session holds at most one of each kind.
//! Challenges and tokens are consumed inside one message (see `challenges.rs`).

pub mod memory;
pub mod msg;

use std::time::Instant;

use rand::Rng;
use tessera_storage::{ct_eq, Kind};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    audit::AuditContext,
    challenges::{challenge_key, ChallengeRecord, CodeVerdict, Purpose},
    effects::Effects,
    messages::{Bearer, Credential, GateChallenge, StepUpGrant, StepUpUse},
    records::{SessionRecord, UserRecord},
};
use crate::tenant::ctx::TenantCtx;
use crate::tenant::step_up::memory::StepUp;
use crate::{
    error::TenantError,
    outbound::{MailJob, MailKind},
    policy::mask_email,
};

/// How long a step-up token may wait for its gated request.
pub const STEP_UP_TOKEN_TTL: Duration = Duration::minutes(5);
/// An e-mailed step-up code lives this long (spec section 8).
pub const EMAIL_OTP_TTL: Duration = Duration::minutes(5);
/// An e-mailed step-up link lives this long (spec section 8).
pub const MAGIC_LINK_TTL: Duration = Duration::minutes(10);
/// The gate's TOTP challenge lives this long.
pub const GATE_CHALLENGE_TTL: Duration = Duration::minutes(5);
/// The step-up methods, strongest first (spec 4.1's recommended order; `totp` is AAL2 and
/// sits with the passkey).
const METHOD_ORDER: [&str; 5] = ["passkey", "totp", "email_otp", "magic_link", "password"];

/// What a step-up answers: the grant, and the mail its commit queued.
type Granted = Result<(StepUpGrant, Vec<MailJob>), TenantError>;

/// A step-up method of this flow: its name in the audit events, the assurance level it
/// proves and its `amr`.
#[derive(Clone, Copy)]
struct Method {
    name: &'static str,
    aal: u8,
    amr: &'static str,
}

const PASSWORD: Method = Method {
    name: "password",
    aal: 2,
    amr: "pwd",
};
const EMAIL_OTP: Method = Method {
    name: "email_otp",
    aal: 1,
    amr: "otp",
};
const MAGIC_LINK: Method = Method {
    name: "magic_link",
    aal: 1,
    amr: "mca",
};

/// A uniformly random 6-digit code.
pub(super) fn six_digit_code() -> String {
    format!("{:06}", rand::rngs::OsRng.gen_range(0..1_000_000u32))
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// The audit metadata of a step-up event (spec section 6).
    fn step_up_metadata(
        user: &UserRecord,
        session: Option<Uuid>,
        method: &str,
        aal: u8,
        ctx: &AuditContext,
    ) -> serde_json::Value {
        serde_json::json!({
            "user_id": user.id,
            "session_id": session,
            "step_up_method": method,
            "aal": aal,
            "ip_hash": ctx.ip_hash,
            "ua_family": ctx.ua_family,
        })
    }

    /// Writes an `auth.step_up_failed` event.
    pub(super) fn step_up_failed(
        &mut self,
        fx: &mut Effects,
        user: &UserRecord,
        method: &str,
        aal: u8,
        reason: &str,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        let mut metadata = Self::step_up_metadata(user, None, method, aal, ctx);
        metadata["reason"] = reason.into();
        self.audit_into(&mut fx.batch, "auth.step_up_failed", ctx, metadata)
    }

    /// Records a new step-up token for `session` (its `jti` is the slot) and its
    /// `auth.step_up_issued` event; the handler signs the token.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn issue_step_up(
        &mut self,
        fx: &mut Effects,
        session: &SessionRecord,
        aal: u8,
        amr: Vec<String>,
        method: &str,
        latency_ms: Option<i128>,
        ctx: &AuditContext,
    ) -> Result<StepUpGrant, TenantError> {
        // The drills' clock, as every step-up lifetime is checked against.
        let now = self.calendar_now();
        let jti = Uuid::new_v4();
        let expires_at = now + STEP_UP_TOKEN_TTL;
        // One outstanding token per session (a new one replaces it), found by the session.
        let user = self
            .user(session.user_id)?
            .ok_or(TenantError::InvalidSession)?;
        let mut record = ChallengeRecord::new(
            Purpose::StepUpToken,
            &user,
            Some(session.id),
            STEP_UP_TOKEN_TTL,
            now,
        );
        record.secret_hash = jti.to_string();
        record.aal = aal;
        record.amr = amr.clone();
        fx.batch
            .put(&challenge_key(session.id, Purpose::StepUpToken), &record)?;
        // A proven factor forgives the user's wrong step-up codes (not failed passwords).
        self.code_fails.reset(&user.id);
        let mut metadata = Self::step_up_metadata(&user, Some(session.id), method, aal, ctx);
        if let Some(ms) = latency_ms {
            metadata["latency_ms"] = serde_json::json!(i64::try_from(ms).unwrap_or(i64::MAX));
        }
        self.audit_into(&mut fx.batch, "auth.step_up_issued", ctx, metadata)?;
        Ok(StepUpGrant {
            jti,
            user_id: session.user_id,
            session_id: session.id,
            aal,
            amr,
            issued_at: now,
            expires_at,
        })
    }
}

impl StepUp {
    /// Step-up with the password (checked off the actor): AAL2, `pwd`. Only for users with a
    /// password.
    pub fn step_up_password(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        credential: &Credential,
        password_ok: bool,
        latency_ms: i128,
        ctx: &AuditContext,
    ) -> Granted {
        let (session, user, _) = Self::caller(cx, bearer)?;
        if user.password_hash.is_none() {
            return Err(TenantError::StepUpMethodUnavailable);
        }
        let mut fx = cx.effects();
        // Checked again here: guesses sent together all passed `PasswordCredential`, and the
        // ones finishing after the block began must not learn their result.
        if let Some(retry_after) = cx.login.account_blocked(&TenantCtx::throttle_key(&user)) {
            if !password_ok {
                cx.login.fail_account(&TenantCtx::throttle_key(&user));
                Self::failed(cx, &mut fx, &user, PASSWORD, "throttled", ctx)?;
                cx.commit(fx)?;
            }
            return Err(TenantError::TooManyAttempts { retry_after });
        }
        if !password_ok || credential.epoch != user.password_epoch {
            cx.login.fail_account(&TenantCtx::throttle_key(&user));
            Self::failed(cx, &mut fx, &user, PASSWORD, "wrong_password", ctx)?;
            return cx.fail(fx, TenantError::InvalidCredentials);
        }
        Self::granted(cx, fx, &session, PASSWORD, Some(latency_ms), ctx)
    }

    /// The caller's live session and user, and the drills' clock, which every step-up
    /// lifetime is checked against.
    fn caller(
        cx: &TenantCtx,
        bearer: Bearer,
    ) -> Result<(SessionRecord, UserRecord, OffsetDateTime), TenantError> {
        let now = cx.calendar_now();
        let (session, user) = cx.live_session(bearer, now)?;
        Ok((session, user, now))
    }

    /// Writes `method`'s `auth.step_up_failed` event, for `reason`.
    fn failed(
        cx: &mut TenantCtx,
        fx: &mut Effects,
        user: &UserRecord,
        method: Method,
        reason: &str,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        cx.step_up_failed(fx, user, method.name, method.aal, reason, ctx)
    }

    /// Ends a step-up that `method` proved: the session's new token, committed with what
    /// the check wrote.
    fn granted(
        cx: &mut TenantCtx,
        mut fx: Effects,
        session: &SessionRecord,
        method: Method,
        latency_ms: Option<i128>,
        ctx: &AuditContext,
    ) -> Granted {
        let amr = vec![method.amr.to_owned()];
        let grant = cx.issue_step_up(
            &mut fx,
            session,
            method.aal,
            amr,
            method.name,
            latency_ms,
            ctx,
        )?;
        Ok((grant, cx.commit(fx)?))
    }

    /// The session and user of a step-up by mail: the user needs a confirmed address, and the
    /// session a send left in its window.
    fn mail_step_up_subject(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
    ) -> Result<(SessionRecord, UserRecord, String, OffsetDateTime), TenantError> {
        let (session, user, now) = Self::caller(cx, bearer)?;
        let email = match &user.email {
            Some(e) if user.email_verified => e.clone(),
            _ => return Err(TenantError::StepUpMethodUnavailable),
        };
        self.mails
            .hit(&session.id, Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
        Ok((session, user, email, now))
    }

    /// Mails a 6-digit code (5 minutes, hashed at rest) to the signed-in user; a new code
    /// replaces the session's previous one. Answers the masked address.
    pub fn step_up_email_initiate(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        action_hint: Option<String>,
        ctx: &AuditContext,
    ) -> Result<(String, Vec<MailJob>), TenantError> {
        let (session, user, email, now) = self.mail_step_up_subject(cx, bearer)?;
        let code = six_digit_code();
        let mut record = ChallengeRecord::new(
            Purpose::StepUpEmailOtp,
            &user,
            Some(session.id),
            EMAIL_OTP_TTL,
            now,
        );
        record.secret_hash = cx.otp_hash(session.id, &code);
        let mut fx = cx.effects();
        fx.batch
            .put(&challenge_key(session.id, Purpose::StepUpEmailOtp), &record)?;
        let kind = MailKind::StepUpEmailOtp { code, action_hint };
        self.send_step_up_mail(cx, fx, session.id, &user, &email, kind, EMAIL_OTP, ctx)
    }

    /// Queues a step-up message with its `auth.step_up_<method>_initiated` event and commits;
    /// answers the masked address.
    #[allow(clippy::too_many_arguments)]
    fn send_step_up_mail(
        &mut self,
        cx: &mut TenantCtx,
        mut fx: Effects,
        session: Uuid,
        user: &UserRecord,
        email: &str,
        kind: MailKind,
        method: Method,
        ctx: &AuditContext,
    ) -> Result<(String, Vec<MailJob>), TenantError> {
        cx.queue_mail(&mut fx, email, kind)?;
        let metadata =
            TenantCtx::step_up_metadata(user, Some(session), method.name, method.aal, ctx);
        let event = format!("auth.step_up_{}_initiated", method.name);
        cx.audit_into(&mut fx.batch, &event, ctx, metadata)?;
        let mail = cx.commit(fx)?;
        Ok((mask_email(email), mail))
    }

    /// Checks the session's e-mailed code: AAL1, `otp`. Five wrong tries kill the code.
    pub fn step_up_email_verify(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        otp: &str,
        ctx: &AuditContext,
    ) -> Granted {
        let (session, user, now) = Self::caller(cx, bearer)?;
        let at = (session.id, Purpose::StepUpEmailOtp);
        let of_session =
            |r: &ChallengeRecord| r.user_id == user.id && r.session_id == Some(session.id);
        let verdict = cx.check_code(at, otp, of_session, now)?;
        let mut fx = cx.effects();
        if let CodeVerdict::Missing { .. } = verdict {
            Self::failed(cx, &mut fx, &user, EMAIL_OTP, "no_challenge", ctx)?;
            return cx.fail(fx, TenantError::InvalidChallenge);
        }
        // Wrong codes count per user across codes and sessions: five kill a code, and five
        // in a row block every code of the user for a while, doubling.
        if let Some(retry_after) = cx.code_fails.blocked(&user.id, Instant::now()) {
            return Err(TenantError::TooManyAttempts { retry_after });
        }
        let found = match verdict {
            CodeVerdict::Right(found) => found,
            // The session's previous code, just used, sent again: no guess at this one.
            CodeVerdict::Wrong {
                resubmitted: true, ..
            }
            | CodeVerdict::Missing { .. } => return Err(TenantError::InvalidChallenge),
            CodeVerdict::Wrong { mut found, .. } => {
                cx.challenge_failed(&mut fx.batch, &mut found)?;
                cx.code_fails.fail(&user.id, Instant::now());
                Self::failed(cx, &mut fx, &user, EMAIL_OTP, "wrong_code", ctx)?;
                return cx.fail(fx, TenantError::InvalidChallenge);
            }
        };
        cx.consume_code(&mut fx.batch, &found, now);
        let latency = (now - found.record.created_at).whole_milliseconds();
        Self::granted(cx, fx, &session, EMAIL_OTP, Some(latency), ctx)
    }

    /// Mails a single-use step-up link (10 minutes) to the signed-in user; a new link
    /// replaces the session's previous one. Answers the masked address.
    pub fn step_up_link_initiate(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        action_hint: Option<String>,
        redirect_to: Option<String>,
        ctx: &AuditContext,
    ) -> Result<(String, Vec<MailJob>), TenantError> {
        let (session, user, email, now) = self.mail_step_up_subject(cx, bearer)?;
        let mut fx = cx.effects();
        let mut record = ChallengeRecord::new(
            Purpose::StepUpMagicLink,
            &user,
            Some(session.id),
            MAGIC_LINK_TTL,
            now,
        );
        record.redirect_to = redirect_to;
        let token = cx.store_challenge(&mut fx.batch, session.id, record)?;
        let link = cx.link("step-up/magic-link", &token);
        let kind = MailKind::StepUpMagicLink { link, action_hint };
        self.send_step_up_mail(cx, fx, session.id, &user, &email, kind, MAGIC_LINK, ctx)
    }

    /// Checks a step-up link's token from the session that asked for it: AAL1, `mca`.
    pub fn step_up_link_verify(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        token: &str,
        ctx: &AuditContext,
    ) -> Granted {
        let (session, user, now) = Self::caller(cx, bearer)?;
        let mut fx = cx.effects();
        let found = match cx.find_challenge(token, &[Purpose::StepUpMagicLink], now) {
            Ok(f) if f.record.session_id == Some(session.id) && f.record.user_id == user.id => f,
            Ok(_) => {
                Self::failed(cx, &mut fx, &user, MAGIC_LINK, "session_mismatch", ctx)?;
                return cx.fail(fx, TenantError::InvalidChallenge);
            }
            Err(e) => {
                Self::failed(cx, &mut fx, &user, MAGIC_LINK, "invalid_token", ctx)?;
                return cx.fail(fx, e);
            }
        };
        fx.batch.remove(Kind::Challenge, &found.key);
        let latency = (now - found.record.created_at).whole_milliseconds();
        Self::granted(cx, fx, &session, MAGIC_LINK, Some(latency), ctx)
    }

    /// The step-up methods `user` can use, strongest first.
    fn step_up_methods(
        &self,
        cx: &TenantCtx,
        user: &UserRecord,
    ) -> Result<Vec<String>, TenantError> {
        let mailable = user.email.is_some() && user.email_verified;
        let passkey = !cx.usable_passkeys(user.id)?.is_empty();
        Ok(METHOD_ORDER
            .iter()
            .filter(|m| match **m {
                "passkey" => passkey,
                "totp" => user.mfa_enabled,
                "email_otp" | "magic_link" => mailable,
                "password" => user.password_hash.is_some(),
                _ => false,
            })
            .map(|m| (*m).to_owned())
            .collect())
    }

    /// What a gated request without a step-up token is answered: the methods the user can
    /// use and a TOTP challenge for this session (answered through the MFA verify flow).
    pub fn step_up_gate(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
    ) -> Result<(GateChallenge, Vec<MailJob>), TenantError> {
        let (session, user, now) = Self::caller(cx, bearer)?;
        let mut fx = cx.effects();
        let token = cx.issue_challenge(
            &mut fx.batch,
            Purpose::StepUpTotp,
            &user,
            Some(session.id),
            GATE_CHALLENGE_TTL,
            now,
        )?;
        let methods = self.step_up_methods(cx, &user)?;
        Ok((
            GateChallenge {
                mfa_challenge_token: token,
                available_methods: methods,
            },
            cx.commit(fx)?,
        ))
    }

    /// Consumes the step-up token `jti` (its signature already checked) for a gated request
    /// of `bearer`'s session. Another session's, a used or an expired token is refused.
    pub fn consume_step_up(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        jti: Uuid,
    ) -> Result<(StepUpUse, Vec<MailJob>), TenantError> {
        let (session, _, now) = Self::caller(cx, bearer)?;
        let key = challenge_key(session.id, Purpose::StepUpToken);
        let record = cx
            .store
            .get::<ChallengeRecord>(&key)?
            .filter(|r| r.session_id == Some(session.id) && r.user_id == session.user_id)
            .filter(|r| ct_eq(r.secret_hash.as_bytes(), jti.to_string().as_bytes()))
            .filter(|r| r.expires_at > now)
            .ok_or(TenantError::InvalidChallenge)?;
        let mut fx = cx.effects();
        fx.batch.remove(Kind::Challenge, &key);
        Ok((
            StepUpUse {
                aal: record.aal,
                amr: record.amr,
            },
            cx.commit(fx)?,
        ))
    }
}

#[cfg(test)]
mod tests;
