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
    ) -> Result<(StepUpGrant, Vec<MailJob>), TenantError> {
        let now = cx.calendar_now();
        let (session, user) = cx.live_session(bearer, now)?;
        if user.password_hash.is_none() {
            return Err(TenantError::StepUpMethodUnavailable);
        }
        let mut fx = cx.effects();
        // Checked again here: guesses sent together all passed `PasswordCredential`, and the
        // ones finishing after the block began must not learn their result.
        if let Some(retry_after) = cx.login.account_blocked(&TenantCtx::throttle_key(&user)) {
            if !password_ok {
                cx.login.fail_account(&TenantCtx::throttle_key(&user));
                cx.step_up_failed(&mut fx, &user, "password", 2, "throttled", ctx)?;
                cx.commit(fx)?;
            }
            return Err(TenantError::TooManyAttempts { retry_after });
        }
        if !password_ok || credential.epoch != user.password_epoch {
            cx.login.fail_account(&TenantCtx::throttle_key(&user));
            cx.step_up_failed(&mut fx, &user, "password", 2, "wrong_password", ctx)?;
            return cx.fail(fx, TenantError::InvalidCredentials);
        }
        let grant = cx.issue_step_up(
            &mut fx,
            &session,
            2,
            vec!["pwd".into()],
            "password",
            Some(latency_ms),
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
        now: OffsetDateTime,
    ) -> Result<(SessionRecord, UserRecord, String), TenantError> {
        let (session, user) = cx.live_session(bearer, now)?;
        let email = match &user.email {
            Some(e) if user.email_verified => e.clone(),
            _ => return Err(TenantError::StepUpMethodUnavailable),
        };
        self.mails
            .hit(&session.id, Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
        Ok((session, user, email))
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
        let now = cx.calendar_now();
        let (session, user, email) = self.mail_step_up_subject(cx, bearer, now)?;
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
        self.send_step_up_mail(cx, fx, session.id, &user, &email, kind, "email_otp", ctx)
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
        method: &str,
        ctx: &AuditContext,
    ) -> Result<(String, Vec<MailJob>), TenantError> {
        cx.queue_mail(&mut fx, email, kind)?;
        let metadata = TenantCtx::step_up_metadata(user, Some(session), method, 1, ctx);
        let event = format!("auth.step_up_{method}_initiated");
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
    ) -> Result<(StepUpGrant, Vec<MailJob>), TenantError> {
        let now = cx.calendar_now();
        let (session, user) = cx.live_session(bearer, now)?;
        let at = (session.id, Purpose::StepUpEmailOtp);
        let of_session =
            |r: &ChallengeRecord| r.user_id == user.id && r.session_id == Some(session.id);
        let verdict = cx.check_code(at, otp, of_session, now)?;
        let mut fx = cx.effects();
        if let CodeVerdict::Missing { .. } = verdict {
            cx.step_up_failed(&mut fx, &user, "email_otp", 1, "no_challenge", ctx)?;
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
                cx.step_up_failed(&mut fx, &user, "email_otp", 1, "wrong_code", ctx)?;
                return cx.fail(fx, TenantError::InvalidChallenge);
            }
        };
        cx.consume_code(&mut fx.batch, &found, now);
        let latency = (now - found.record.created_at).whole_milliseconds();
        let grant = cx.issue_step_up(
            &mut fx,
            &session,
            1,
            vec!["otp".into()],
            "email_otp",
            Some(latency),
            ctx,
        )?;
        Ok((grant, cx.commit(fx)?))
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
        let now = cx.calendar_now();
        let (session, user, email) = self.mail_step_up_subject(cx, bearer, now)?;
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
        self.send_step_up_mail(cx, fx, session.id, &user, &email, kind, "magic_link", ctx)
    }

    /// Checks a step-up link's token from the session that asked for it: AAL1, `mca`.
    pub fn step_up_link_verify(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        token: &str,
        ctx: &AuditContext,
    ) -> Result<(StepUpGrant, Vec<MailJob>), TenantError> {
        let now = cx.calendar_now();
        let (session, user) = cx.live_session(bearer, now)?;
        let mut fx = cx.effects();
        let found = match cx.find_challenge(token, &[Purpose::StepUpMagicLink], now) {
            Ok(f) if f.record.session_id == Some(session.id) && f.record.user_id == user.id => f,
            Ok(_) => {
                cx.step_up_failed(&mut fx, &user, "magic_link", 1, "session_mismatch", ctx)?;
                return cx.fail(fx, TenantError::InvalidChallenge);
            }
            Err(e) => {
                cx.step_up_failed(&mut fx, &user, "magic_link", 1, "invalid_token", ctx)?;
                return cx.fail(fx, e);
            }
        };
        fx.batch.remove(Kind::Challenge, &found.key);
        let latency = (now - found.record.created_at).whole_milliseconds();
        let grant = cx.issue_step_up(
            &mut fx,
            &session,
            1,
            vec!["mca".into()],
            "magic_link",
            Some(latency),
            ctx,
        )?;
        Ok((grant, cx.commit(fx)?))
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
        let now = cx.calendar_now();
        let (session, user) = cx.live_session(bearer, now)?;
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
        let now = cx.calendar_now();
        let (session, _) = cx.live_session(bearer, now)?;
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
mod tests {
    use super::*;
    use crate::tenant::accounts::tests::{signed_in_session, tenant};
    use crate::tenant::state::TenantState;

    /// A user (a password, an address confirmed or not) and a first-party session of theirs.
    fn signed_in(t: &mut TenantState, email: &str, verified: bool) -> (UserRecord, Bearer) {
        let now = OffsetDateTime::now_utc();
        let mut user = UserRecord::blank(Uuid::now_v7(), now);
        user.email = Some(email.into());
        user.email_verified = verified;
        user.password_hash = Some("$argon2id$opaque".into());
        let mut b = t.cx.store.batch();
        t.cx.put_new_user(&mut b, &user).unwrap();
        t.cx.store.apply(b).unwrap();
        let bearer = signed_in_session(t, &user);
        (user, bearer)
    }

    fn password(user: &UserRecord) -> Credential {
        Credential {
            user_id: Some(user.id),
            password_hash: user.password_hash.clone(),
            epoch: user.password_epoch,
            device: None,
        }
    }

    fn code_of(mail: &[MailJob]) -> String {
        match &mail[0].kind {
            MailKind::StepUpEmailOtp { code, .. } => code.clone(),
            _ => panic!("not a step-up code"),
        }
    }

    fn link_token_of(mail: &[MailJob]) -> String {
        match &mail[0].kind {
            MailKind::StepUpMagicLink { link, .. } => {
                link.split("token=").nth(1).unwrap().to_owned()
            }
            _ => panic!("not a step-up link"),
        }
    }

    fn wrong(code: &str) -> String {
        let first = if code.starts_with('0') { '1' } else { '0' };
        format!("{first}{}", &code[1..])
    }

    #[test]
    fn codes_are_six_digits() {
        for _ in 0..200 {
            let c = six_digit_code();
            assert_eq!(c.len(), 6, "{c}");
            assert!(c.bytes().all(|b| b.is_ascii_digit()), "{c}");
        }
    }

    #[tokio::test]
    async fn a_step_up_token_is_consumed_once_and_only_by_its_own_session() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        let (user, bearer) = signed_in(&mut t, "ada@example.com", true);
        let other = signed_in_session(&t, &user);
        let (grant, _) = t
            .step_up
            .step_up_password(&mut t.cx, bearer, &password(&user), true, 5, &ctx)
            .unwrap();
        assert_eq!(
            (grant.aal, grant.amr.as_slice()),
            (2, &["pwd".to_owned()][..])
        );
        assert_eq!(grant.session_id, bearer.session_id);
        assert_eq!(grant.expires_at - grant.issued_at, STEP_UP_TOKEN_TTL);
        assert!(matches!(
            t.step_up.consume_step_up(&mut t.cx, other, grant.jti),
            Err(TenantError::InvalidChallenge)
        ));
        assert!(matches!(
            t.step_up.consume_step_up(&mut t.cx, bearer, Uuid::new_v4()),
            Err(TenantError::InvalidChallenge)
        ));
        let (used, _) = t
            .step_up
            .consume_step_up(&mut t.cx, bearer, grant.jti)
            .unwrap();
        assert_eq!((used.aal, used.amr), (2, vec!["pwd".to_owned()]));
        assert!(matches!(
            t.step_up.consume_step_up(&mut t.cx, bearer, grant.jti),
            Err(TenantError::InvalidChallenge)
        ));
    }

    #[tokio::test]
    async fn a_step_up_token_expires_and_a_newer_one_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        let (user, bearer) = signed_in(&mut t, "ada@example.com", true);
        let (first, _) = t
            .step_up
            .step_up_password(&mut t.cx, bearer, &password(&user), true, 5, &ctx)
            .unwrap();
        let (second, _) = t
            .step_up
            .step_up_password(&mut t.cx, bearer, &password(&user), true, 5, &ctx)
            .unwrap();
        assert!(matches!(
            t.step_up.consume_step_up(&mut t.cx, bearer, first.jti),
            Err(TenantError::InvalidChallenge)
        ));
        // Past its lifetime (the drills' clock moved on), the newer one is refused too.
        t.cx.runtime.clock_offset = STEP_UP_TOKEN_TTL + Duration::seconds(1);
        assert!(matches!(
            t.step_up.consume_step_up(&mut t.cx, bearer, second.jti),
            Err(TenantError::InvalidChallenge)
        ));
        // A moment before, it was good.
        t.cx.runtime.clock_offset = STEP_UP_TOKEN_TTL - Duration::seconds(5);
        assert!(t
            .step_up
            .consume_step_up(&mut t.cx, bearer, second.jti)
            .is_ok());
    }

    #[tokio::test]
    async fn password_step_up_refuses_a_wrong_or_stale_password_and_users_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        let (mut user, bearer) = signed_in(&mut t, "ada@example.com", true);
        assert!(matches!(
            t.step_up
                .step_up_password(&mut t.cx, bearer, &password(&user), false, 5, &ctx),
            Err(TenantError::InvalidCredentials)
        ));
        // A hash read before a password change: the right old password is no proof.
        let stale = password(&user);
        user.password_epoch += 1;
        let mut b = t.cx.store.batch();
        b.put(user.id.as_bytes(), &user).unwrap();
        t.cx.store.apply(b).unwrap();
        assert!(matches!(
            t.step_up
                .step_up_password(&mut t.cx, bearer, &stale, true, 5, &ctx),
            Err(TenantError::InvalidCredentials)
        ));
        user.password_hash = None;
        let mut b = t.cx.store.batch();
        b.put(user.id.as_bytes(), &user).unwrap();
        t.cx.store.apply(b).unwrap();
        assert!(matches!(
            t.step_up
                .step_up_password(&mut t.cx, bearer, &password(&user), true, 5, &ctx),
            Err(TenantError::StepUpMethodUnavailable)
        ));
        // An unknown session is no bearer.
        let stranger = Bearer {
            session_id: Uuid::now_v7(),
            user_id: user.id,
        };
        assert!(matches!(
            t.step_up
                .step_up_password(&mut t.cx, stranger, &password(&user), true, 5, &ctx),
            Err(TenantError::InvalidSession)
        ));
    }

    #[tokio::test]
    async fn an_emailed_code_steps_up_its_own_session_once_at_aal1() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        let (user, bearer) = signed_in(&mut t, "ada@example.com", true);
        let other = signed_in_session(&t, &user);
        let (masked, mail) = t
            .step_up
            .step_up_email_initiate(&mut t.cx, bearer, None, &ctx)
            .unwrap();
        assert_eq!(masked, "a***@example.com");
        assert_eq!(mail[0].to, "ada@example.com");
        let code = code_of(&mail);
        assert!(matches!(
            t.step_up
                .step_up_email_verify(&mut t.cx, other, &code, &ctx),
            Err(TenantError::InvalidChallenge)
        ));
        assert!(matches!(
            t.step_up
                .step_up_email_verify(&mut t.cx, bearer, &wrong(&code), &ctx),
            Err(TenantError::InvalidChallenge)
        ));
        let (grant, _) = t
            .step_up
            .step_up_email_verify(&mut t.cx, bearer, &code, &ctx)
            .unwrap();
        assert_eq!((grant.aal, grant.amr), (1, vec!["otp".to_owned()]));
        assert!(matches!(
            t.step_up
                .step_up_email_verify(&mut t.cx, bearer, &code, &ctx),
            Err(TenantError::InvalidChallenge)
        ));
    }

    #[tokio::test]
    async fn an_emailed_code_expires_after_five_minutes() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        let (_, bearer) = signed_in(&mut t, "ada@example.com", true);
        let code = code_of(
            &t.step_up
                .step_up_email_initiate(&mut t.cx, bearer, None, &ctx)
                .unwrap()
                .1,
        );
        t.cx.runtime.clock_offset = EMAIL_OTP_TTL + Duration::seconds(1);
        assert!(matches!(
            t.step_up
                .step_up_email_verify(&mut t.cx, bearer, &code, &ctx),
            Err(TenantError::InvalidChallenge)
        ));
        // A moment before its end, the same code was good.
        t.cx.runtime.clock_offset = EMAIL_OTP_TTL - Duration::seconds(5);
        assert!(t
            .step_up
            .step_up_email_verify(&mut t.cx, bearer, &code, &ctx)
            .is_ok());
    }

    #[tokio::test]
    async fn five_wrong_codes_block_every_code_of_the_user_for_a_while() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        let (_, bearer) = signed_in(&mut t, "ada@example.com", true);
        let code = code_of(
            &t.step_up
                .step_up_email_initiate(&mut t.cx, bearer, None, &ctx)
                .unwrap()
                .1,
        );
        for _ in 0..5 {
            assert!(matches!(
                t.step_up
                    .step_up_email_verify(&mut t.cx, bearer, &wrong(&code), &ctx),
                Err(TenantError::InvalidChallenge)
            ));
        }
        // That code is dead; a new one is right but the user's codes are blocked.
        let fresh = code_of(
            &t.step_up
                .step_up_email_initiate(&mut t.cx, bearer, None, &ctx)
                .unwrap()
                .1,
        );
        assert!(matches!(
            t.step_up
                .step_up_email_verify(&mut t.cx, bearer, &fresh, &ctx),
            Err(TenantError::TooManyAttempts { .. })
        ));
    }

    #[tokio::test]
    async fn mail_step_up_needs_a_confirmed_address_and_is_spaced_per_session() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        let (_, unconfirmed) = signed_in(&mut t, "bo@example.com", false);
        assert!(matches!(
            t.step_up
                .step_up_email_initiate(&mut t.cx, unconfirmed, None, &ctx),
            Err(TenantError::StepUpMethodUnavailable)
        ));
        assert!(matches!(
            t.step_up
                .step_up_link_initiate(&mut t.cx, unconfirmed, None, None, &ctx),
            Err(TenantError::StepUpMethodUnavailable)
        ));
        let (user, bearer) = signed_in(&mut t, "ada@example.com", true);
        for i in 0..crate::tenant::limits::STEP_UP_MAILS {
            if i % 2 == 0 {
                t.step_up
                    .step_up_email_initiate(&mut t.cx, bearer, None, &ctx)
                    .unwrap();
            } else {
                t.step_up
                    .step_up_link_initiate(&mut t.cx, bearer, None, None, &ctx)
                    .unwrap();
            }
        }
        assert!(matches!(
            t.step_up
                .step_up_link_initiate(&mut t.cx, bearer, None, None, &ctx),
            Err(TenantError::RateLimited { .. })
        ));
        // Another session of the user has its own window.
        let other = signed_in_session(&t, &user);
        assert!(t
            .step_up
            .step_up_email_initiate(&mut t.cx, other, None, &ctx)
            .is_ok());
    }

    #[tokio::test]
    async fn a_step_up_link_works_once_and_only_from_its_session() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        let (user, bearer) = signed_in(&mut t, "ada@example.com", true);
        let other = signed_in_session(&t, &user);
        let (masked, mail) = t
            .step_up
            .step_up_link_initiate(&mut t.cx, bearer, Some("link google".into()), None, &ctx)
            .unwrap();
        assert_eq!(masked, "a***@example.com");
        let token = link_token_of(&mail);
        assert!(matches!(
            t.step_up
                .step_up_link_verify(&mut t.cx, other, &token, &ctx),
            Err(TenantError::InvalidChallenge)
        ));
        let (grant, _) = t
            .step_up
            .step_up_link_verify(&mut t.cx, bearer, &token, &ctx)
            .unwrap();
        assert_eq!((grant.aal, grant.amr), (1, vec!["mca".to_owned()]));
        assert!(matches!(
            t.step_up
                .step_up_link_verify(&mut t.cx, bearer, &token, &ctx),
            Err(TenantError::InvalidChallenge)
        ));
    }

    #[tokio::test]
    async fn the_gate_offers_what_the_user_can_use_strongest_first() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let (mut user, bearer) = signed_in(&mut t, "ada@example.com", true);
        user.mfa_enabled = true;
        let mut b = t.cx.store.batch();
        b.put(user.id.as_bytes(), &user).unwrap();
        t.cx.store.apply(b).unwrap();
        let (gate, _) = t.step_up.step_up_gate(&mut t.cx, bearer).unwrap();
        assert_eq!(
            gate.available_methods,
            ["totp", "email_otp", "magic_link", "password"]
        );
        // The challenge is the session's TOTP step-up.
        let found =
            t.cx.find_challenge(
                &gate.mfa_challenge_token,
                &[Purpose::StepUpTotp],
                OffsetDateTime::now_utc(),
            )
            .unwrap();
        assert_eq!(found.record.session_id, Some(bearer.session_id));
        // No password, no confirmed address, no MFA: nothing to offer.
        let (mut bare, bare_bearer) = signed_in(&mut t, "bo@example.com", false);
        bare.password_hash = None;
        let mut b = t.cx.store.batch();
        b.put(bare.id.as_bytes(), &bare).unwrap();
        t.cx.store.apply(b).unwrap();
        let (gate, _) = t.step_up.step_up_gate(&mut t.cx, bare_bearer).unwrap();
        assert!(gate.available_methods.is_empty());
    }
}
