//! Multi-factor authentication: TOTP (RFC 6238 with totp-rs: SHA-1, 6 digits, 30 s), recovery
//! codes, the second step of an MFA login, and the tenant's MFA policy with its grace period.
//!
//! Seeds are sealed with the master key, bound to the tenant and the user. Recovery codes are
//! stored as keyed hashes. A TOTP code is accepted at most once: the user keeps the last
//! accepted time step, and only a later step is accepted (the window is one step either side).
//! TOTP checks are a few HMACs, cheap enough for the actor; passwords are checked off it.

mod error;
pub mod msg;

use tessera_storage::Kind;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    audit::AuditContext,
    challenges::{ChallengeRecord, Found, OAuthResume, Purpose},
    credentials::Credential as CredentialKind,
    effects::{refused, Effects},
    inventory::may_add,
    messages::{Bearer, Grant, LoginOutcome, MfaLogin, MfaManage, MfaSecret, MfaVerified, MfaWho},
    records::UserRecord,
    sessions::Proof,
};
pub use crate::second_factor::RECOVERY_CODES;
use crate::second_factor::{
    is_totp_code, new_recovery_codes, new_seed, recovery_index, totp, totp_step,
};
use crate::{error::TenantError, outbound::MailJob};

pub use super::settings::{enrollment, Enrollment};
use crate::tenant::ctx::TenantCtx;
pub use error::MfaError;

/// The TOTP and recovery-code flow: it keeps nothing in memory and works on the context.
#[derive(Default)]
pub struct Mfa;

/// How long the second step of an MFA login may take.
pub const MFA_CHALLENGE_TTL: Duration = Duration::minutes(5);
/// How long an enrolment token (login past the grace period) allows MFA setup.
pub const ENROLLMENT_TTL: Duration = Duration::minutes(15);
/// The MFA methods a login challenge takes.
pub const LOGIN_METHODS: [&str; 2] = ["totp", "recovery_code"];

/// The login method an RFC 8176 first-factor `amr` value stands for, in audit events.
pub fn first_factor_method(amr: &str) -> &'static str {
    match amr {
        "mca" => "magic_link",
        "otp" => "email_otp",
        _ => "password",
    }
}

/// Which second factor a code proved.
enum Factor {
    Totp(u64),
    Recovery(usize),
}

impl Factor {
    fn method(&self) -> &'static str {
        match self {
            Factor::Totp(_) => "totp",
            Factor::Recovery(_) => "recovery_code",
        }
    }
}

// The kernel's calendar, and what MFA lends the sign-in: the second step and the enrolment.
/// What a second step after a first factor carries on: the first factor's `amr`, the OAuth
/// flow to resume, the known device, and a single sign-on's organization and connection.
type SecondStep<'a> = (
    &'a str,
    Option<OAuthResume>,
    Option<Uuid>,
    Option<(Uuid, Uuid)>,
);

impl TenantCtx {
    /// The calendar the MFA grace period is measured on (shifted only in fault drills).
    pub(super) fn calendar_now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc() + self.runtime.clock_offset
    }

    /// When the policy became `required` (older settings lack the moment: their last change).
    fn mfa_required_since(&self) -> OffsetDateTime {
        self.settings
            .security
            .mfa_required_since
            .unwrap_or(self.settings.updated_at)
    }

    /// Where `user` stands under the tenant's MFA policy.
    pub(super) fn enrollment_of(&self, user: &UserRecord) -> Enrollment {
        if user.mfa_enabled || user.is_anonymous {
            return Enrollment::NotRequired;
        }
        let sec = &self.settings.security;
        enrollment(
            sec.mfa_policy,
            self.mfa_required_since(),
            sec.mfa_grace_period_days,
            user.created_at,
            self.calendar_now(),
        )
    }

    /// The throttle key of a user: the address, as for password logins.
    pub(super) fn throttle_key(user: &UserRecord) -> String {
        user.email.clone().unwrap_or_else(|| user.id.to_string())
    }

    /// A user whose password was just checked, with MFA or under an overdue policy: the
    /// challenge for the second step (or for enrolment) instead of a session.
    pub(super) fn login_second_step(
        &self,
        fx: &mut Effects,
        user: &UserRecord,
        (first_factor, oauth, device, sso): SecondStep<'_>,
        now: OffsetDateTime,
    ) -> Result<Option<LoginOutcome>, TenantError> {
        if user.mfa_enabled {
            let mut record =
                ChallengeRecord::new(Purpose::MfaLogin, user, None, MFA_CHALLENGE_TTL, now);
            record.amr = vec![first_factor.to_owned()];
            record.device = device;
            record.sso = sso;
            // The flow resumes after the second factor; the challenge token, handed to the
            // client that passed the binding check, carries it there.
            record.oauth = oauth;
            let token = self.store_challenge(&mut fx.batch, user.id, record)?;
            return Ok(Some(LoginOutcome::MfaRequired {
                challenge: token,
                methods: LOGIN_METHODS.iter().map(|m| (*m).to_owned()).collect(),
                expires_in: MFA_CHALLENGE_TTL.whole_seconds(),
            }));
        }
        if self.enrollment_of(user) == Enrollment::Overdue {
            let token = self.issue_challenge(
                &mut fx.batch,
                Purpose::MfaEnrollment,
                user,
                None,
                ENROLLMENT_TTL,
                now,
            )?;
            return Ok(Some(LoginOutcome::EnrollmentRequired {
                token,
                expires_in: ENROLLMENT_TTL.whole_seconds(),
                user: user.view(),
            }));
        }
        Ok(None)
    }
}

impl Mfa {
    /// The user an MFA setup call acts for: a signed-in user, or the holder of an enrolment
    /// token. Anything invalid is an invalid bearer.
    fn mfa_subject(
        &self,
        cx: &TenantCtx,
        who: &MfaWho,
        now: OffsetDateTime,
    ) -> Result<(UserRecord, Option<Found>), TenantError> {
        match who {
            MfaWho::Session(bearer) => Ok((cx.live_session(*bearer, now)?.1, None)),
            MfaWho::Enrollment(token) => {
                let found = cx
                    .find_challenge(token, &[Purpose::MfaEnrollment], now)
                    .map_err(|_| TenantError::InvalidSession)?;
                // A password change since the login kills the enrolment token too.
                let user = cx
                    .user(found.record.user_id)?
                    .filter(|u| u.password_epoch == found.record.epoch)
                    .ok_or(TenantError::InvalidSession)?;
                Ok((user, Some(found)))
            }
        }
    }

    fn seed_aad(&self, cx: &TenantCtx, user: Uuid) -> Vec<u8> {
        cx.user_aad(user, "totp_seed")
    }

    /// Starts (or restarts) TOTP setup: a new pending seed.
    pub fn mfa_setup(
        &mut self,
        cx: &mut TenantCtx,
        who: &MfaWho,
    ) -> Result<MfaSecret, TenantError> {
        let now = OffsetDateTime::now_utc();
        let (mut user, _) = self.mfa_subject(cx, who, now)?;
        if user.is_anonymous {
            return Err(TenantError::Mfa(MfaError::Unavailable));
        }
        if user.mfa_enabled {
            return Err(TenantError::Mfa(MfaError::AlreadyEnabled));
        }
        may_add(&user, CredentialKind::Totp)?;
        let seed = new_seed();
        user.totp_pending = Some(cx.master_key.seal(&self.seed_aad(cx, user.id), &seed[..])?);
        let account = user.email.clone().unwrap_or_else(|| user.id.to_string());
        let t = totp(&seed[..], &cx.info.name, &account);
        let mut fx = cx.effects();
        fx.batch.put(user.id.as_bytes(), &user)?;
        cx.commit(fx)?;
        Ok(MfaSecret {
            secret: t.get_secret_base32(),
            otpauth_uri: t.get_url(),
        })
    }

    fn open_seed(
        &self,
        cx: &TenantCtx,
        user: Uuid,
        sealed: &tessera_storage::Sealed,
    ) -> Result<Vec<u8>, TenantError> {
        Ok(cx
            .master_key
            .open(&self.seed_aad(cx, user), sealed)?
            .to_vec())
    }

    /// Which factor `code` proves for `user`: a TOTP code of a later step than the last
    /// accepted, or one of the unused recovery codes (when `recovery` allows them).
    fn check_factor(
        &self,
        cx: &TenantCtx,
        user: &UserRecord,
        code: &str,
        recovery: bool,
    ) -> Result<Option<Factor>, TenantError> {
        let Some(sealed) = &user.totp_seed else {
            return Ok(None);
        };
        if is_totp_code(code) {
            let seed = zeroize::Zeroizing::new(self.open_seed(cx, user.id, sealed)?);
            let now = u64::try_from(OffsetDateTime::now_utc().unix_timestamp()).unwrap_or(0);
            return Ok(totp_step(&seed, code, now, user.totp_last_step).map(Factor::Totp));
        }
        if !recovery {
            return Ok(None);
        }
        Ok(recovery_index(&cx.recovery_hasher, &user.recovery_codes, code).map(Factor::Recovery))
    }

    fn use_factor(user: &mut UserRecord, factor: &Factor) {
        match factor {
            Factor::Totp(step) => user.totp_last_step = *step,
            Factor::Recovery(i) => {
                user.recovery_codes.remove(*i);
            }
        }
    }

    /// A fresh set of recovery codes: the plain codes for the user, their hashes for the
    /// record.
    fn new_recovery_codes(&self, cx: &TenantCtx) -> (Vec<String>, Vec<String>) {
        new_recovery_codes(&cx.recovery_hasher)
    }

    /// Counts a wrong code against the user's throttle, with its audit event.
    fn mfa_failed(
        &mut self,
        cx: &mut TenantCtx,
        fx: &mut Effects,
        user: &UserRecord,
        reason: &str,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        cx.login.fail_account(&TenantCtx::throttle_key(user));
        cx.audit_into(
            &mut fx.batch,
            "auth.mfa.failed",
            ctx,
            serde_json::json!({ "user_id": user.id, "reason": reason }),
        )
    }

    fn mfa_blocked(&self, cx: &TenantCtx, user: &UserRecord) -> Result<(), TenantError> {
        match cx.login.account_blocked(&TenantCtx::throttle_key(user)) {
            Some(retry_after) => Err(TenantError::TooManyAttempts { retry_after }),
            None => Ok(()),
        }
    }

    /// Confirms the pending seed with a code: MFA is on, and the recovery codes are answered
    /// (shown once). An enrolment token is consumed by it.
    pub fn mfa_verify_setup(
        &mut self,
        cx: &mut TenantCtx,
        who: &MfaWho,
        code: &str,
        ctx: &AuditContext,
    ) -> Result<(Vec<String>, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let (mut user, enrollment) = self.mfa_subject(cx, who, now)?;
        if user.mfa_enabled {
            return Err(TenantError::Mfa(MfaError::AlreadyEnabled));
        }
        let Some(pending) = user.totp_pending.clone() else {
            return Err(TenantError::Mfa(MfaError::SetupNotStarted));
        };
        may_add(&user, CredentialKind::Totp)?;
        self.mfa_blocked(cx, &user)?;
        let seed = zeroize::Zeroizing::new(self.open_seed(cx, user.id, &pending)?);
        let unix = u64::try_from(now.unix_timestamp()).unwrap_or(0);
        let mut fx = cx.effects();
        let Some(step) = totp_step(&seed, code, unix, user.totp_last_step) else {
            self.mfa_failed(cx, &mut fx, &user, "wrong_code", ctx)?;
            return cx.fail(fx, TenantError::Mfa(MfaError::InvalidCode));
        };
        let (codes, hashes) = self.new_recovery_codes(cx);
        user.totp_seed = Some(pending);
        user.totp_pending = None;
        user.totp_last_step = step;
        user.mfa_enabled = true;
        user.recovery_codes = hashes;
        fx.batch.put(user.id.as_bytes(), &user)?;
        if let Some(found) = enrollment {
            fx.batch.remove(Kind::Challenge, &found.key);
        }
        cx.login.forgive_account(&TenantCtx::throttle_key(&user));
        cx.audit_into(
            &mut fx.batch,
            "auth.mfa.enabled",
            ctx,
            serde_json::json!({ "user_id": user.id, "method": "totp" }),
        )?;
        let mail = cx.commit(fx)?;
        Ok((codes, mail))
    }

    /// The second step of a login (`MfaLogin` challenge: a session at AAL2), or a TOTP
    /// step-up (`StepUpTotp` challenge, which must be answered from its own session: a
    /// step-up token).
    pub fn mfa_verify(
        &mut self,
        cx: &mut TenantCtx,
        token: &str,
        code: &str,
        bearer: Option<Bearer>,
        ctx: &AuditContext,
    ) -> Result<(MfaVerified, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let mut found = cx.find_challenge(token, &[Purpose::MfaLogin, Purpose::StepUpTotp], now)?;
        let mut fx = cx.effects();
        let Some(mut user) = cx.user(found.record.user_id)? else {
            fx.batch.remove(Kind::Challenge, &found.key);
            return cx.fail(fx, TenantError::InvalidChallenge);
        };
        let step_up = found.record.purpose == Purpose::StepUpTotp;
        let session = if step_up {
            let session = bearer
                .filter(|b| Some(b.session_id) == found.record.session_id && b.user_id == user.id)
                .and_then(|b| cx.live_session(b, now).ok());
            match session {
                Some((s, _)) => Some(s),
                None => {
                    cx.step_up_failed(&mut fx, &user, "totp", 2, "session_mismatch", ctx)?;
                    return cx.fail(fx, TenantError::InvalidChallenge);
                }
            }
        } else {
            if found.record.epoch != user.password_epoch {
                fx.batch.remove(Kind::Challenge, &found.key);
                return cx.fail(fx, TenantError::InvalidChallenge);
            }
            None
        };
        // After a known device's password step, the device's count holds this step too.
        let device = found.record.device.filter(|_| !step_up);
        match device {
            Some(d) => cx.login.device_gate(d).map_err(refused)?,
            None => self.mfa_blocked(cx, &user)?,
        }
        let Some(factor) = self.check_factor(cx, &user, code, !step_up)? else {
            cx.challenge_failed(&mut fx.batch, &mut found)?;
            match device {
                Some(d) => cx.login.fail_device(d),
                None => cx.login.fail_account(&TenantCtx::throttle_key(&user)),
            }
            cx.audit_into(
                &mut fx.batch,
                "auth.mfa.failed",
                ctx,
                serde_json::json!({ "user_id": user.id, "reason": "wrong_code" }),
            )?;
            if step_up {
                cx.step_up_failed(&mut fx, &user, "totp", 2, "wrong_code", ctx)?;
            }
            return cx.fail(fx, TenantError::Mfa(MfaError::InvalidCode));
        };
        Self::use_factor(&mut user, &factor);
        fx.batch.remove(Kind::Challenge, &found.key);
        match device {
            Some(d) => cx.login.device_succeeded(d),
            None => cx.login.forgive_account(&TenantCtx::throttle_key(&user)),
        }
        let outcome = match session {
            Some(session) => {
                fx.batch.put(user.id.as_bytes(), &user)?;
                let latency = (now - found.record.created_at).whole_milliseconds();
                let grant = cx.issue_step_up(
                    &mut fx,
                    &session,
                    2,
                    vec!["otp".into()],
                    "totp",
                    Some(latency),
                    ctx,
                )?;
                MfaVerified::StepUp(grant)
            }
            None => {
                let first = found.record.amr.first().map_or("pwd", String::as_str);
                let sso = found.record.sso;
                let grant = self.mfa_login_session(
                    cx,
                    &mut fx,
                    &mut user,
                    (first, &factor, sso),
                    ctx,
                    now,
                )?;
                let oauth = found.record.oauth.take().map(|o| o.params);
                // The device that proved both factors is known from now on.
                let device_token = match (device, first) {
                    (None, "pwd") => Some(cx.issue_device(&mut fx.batch, user.id, now)?),
                    _ => None,
                };
                MfaVerified::Login(Box::new(MfaLogin {
                    grant,
                    oauth,
                    device_token,
                }))
            }
        };
        let mail = cx.commit(fx)?;
        Ok((outcome, mail))
    }

    /// Opens the AAL2 session of a completed MFA login.
    fn mfa_login_session(
        &mut self,
        cx: &mut TenantCtx,
        fx: &mut Effects,
        user: &mut UserRecord,
        (first, factor, sso): (&str, &Factor, Option<(Uuid, Uuid)>),
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<Grant, TenantError> {
        // RFC 8176: a code after a code is still `otp`; `mfa` says there were two.
        let amr = if first == "otp" {
            vec!["otp".into(), "mfa".into()]
        } else {
            vec![first.to_owned(), "otp".into()]
        };
        let mut audit = serde_json::Map::new();
        audit.insert("method".into(), first_factor_method(first).into());
        audit.insert("second_factor".into(), factor.method().into());
        let proof = Proof {
            amr,
            aal: 2,
            audit,
            oauth: None,
            acr: None,
            device: None,
            sso,
        };
        cx.signed_in(fx, user, proof, ctx, now)
    }

    /// [`Self::mfa_manage_check`] in a command of its own: the command, the user and the
    /// factor used, or the refusal once what it must keep is committed.
    fn mfa_manage(
        &mut self,
        cx: &mut TenantCtx,
        manage: &MfaManage,
        recovery: bool,
        ctx: &AuditContext,
    ) -> Result<(Effects, UserRecord, Factor), TenantError> {
        let mut fx = cx.effects();
        match self.mfa_manage_check(cx, &mut fx, manage, recovery, ctx) {
            Ok((user, factor)) => Ok((fx, user, factor)),
            Err(e) => cx.fail(fx, e),
        }
    }

    /// The checks shared by disabling MFA and regenerating codes: a live session, MFA on, the
    /// password (checked off the actor) and a code. Answers the user and the factor used.
    fn mfa_manage_check(
        &mut self,
        cx: &mut TenantCtx,
        fx: &mut Effects,
        manage: &MfaManage,
        recovery: bool,
        ctx: &AuditContext,
    ) -> Result<(UserRecord, Factor), TenantError> {
        let now = OffsetDateTime::now_utc();
        let (_, user) = cx.live_session(manage.bearer, now)?;
        if !user.mfa_enabled {
            return Err(TenantError::Mfa(MfaError::NotEnabled));
        }
        self.mfa_blocked(cx, &user)?;
        let password_ok = manage.password_ok
            && user.password_hash.is_some()
            && manage.credential.epoch == user.password_epoch;
        if !password_ok {
            self.mfa_failed(cx, fx, &user, "wrong_password", ctx)?;
            return Err(TenantError::InvalidCredentials);
        }
        match self.check_factor(cx, &user, &manage.code, recovery)? {
            Some(f) => Ok((user, f)),
            None => {
                self.mfa_failed(cx, fx, &user, "wrong_code", ctx)?;
                Err(TenantError::Mfa(MfaError::InvalidCode))
            }
        }
    }

    /// Turns MFA off (password and a code required); the seed and recovery codes are erased.
    pub fn mfa_disable(
        &mut self,
        cx: &mut TenantCtx,
        manage: &MfaManage,
        ctx: &AuditContext,
    ) -> Result<((), Vec<MailJob>), TenantError> {
        let (fx, mut user, _) = self.mfa_manage(cx, manage, true, ctx)?;
        user.mfa_enabled = false;
        user.totp_seed = None;
        user.totp_pending = None;
        user.recovery_codes.clear();
        let mail = Self::managed(cx, fx, &user, "auth.mfa.disabled", ctx)?;
        Ok(((), mail))
    }

    /// A new set of recovery codes (password and a TOTP code required); the old set dies.
    pub fn mfa_regenerate(
        &mut self,
        cx: &mut TenantCtx,
        manage: &MfaManage,
        ctx: &AuditContext,
    ) -> Result<(Vec<String>, Vec<MailJob>), TenantError> {
        let (fx, mut user, factor) = self.mfa_manage(cx, manage, false, ctx)?;
        if let Err(e) = may_add(&user, CredentialKind::RecoveryCodes) {
            return cx.fail(fx, e);
        }
        Self::use_factor(&mut user, &factor);
        let (codes, hashes) = self.new_recovery_codes(cx);
        user.recovery_codes = hashes;
        let mail = Self::managed(cx, fx, &user, "auth.mfa.recovery_codes_regenerated", ctx)?;
        Ok((codes, mail))
    }

    /// Writes the user as a management command left them, with its `event`, and commits.
    fn managed(
        cx: &mut TenantCtx,
        mut fx: Effects,
        user: &UserRecord,
        event: &str,
        ctx: &AuditContext,
    ) -> Result<Vec<MailJob>, TenantError> {
        fx.batch.put(user.id.as_bytes(), user)?;
        let metadata = serde_json::json!({ "user_id": user.id });
        cx.audit_into(&mut fx.batch, event, ctx, metadata)?;
        cx.commit(fx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant::settings::MfaPolicy;

    #[test]
    fn the_grace_period_runs_from_the_later_of_policy_and_sign_up() {
        let t0 = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        let day = Duration::days(1);
        assert_eq!(
            enrollment(MfaPolicy::Optional, t0, 3, t0, t0 + 100 * day),
            Enrollment::NotRequired
        );
        assert_eq!(
            enrollment(MfaPolicy::Required, t0, 3, t0 - 10 * day, t0 + day),
            Enrollment::Grace(t0 + 3 * day)
        );
        // A user who signed up after the policy changed gets the full grace from sign-up.
        assert_eq!(
            enrollment(MfaPolicy::Required, t0, 3, t0 + 2 * day, t0 + 4 * day),
            Enrollment::Grace(t0 + 5 * day)
        );
        assert_eq!(
            enrollment(MfaPolicy::Required, t0, 3, t0, t0 + 3 * day),
            Enrollment::Overdue
        );
    }
}
