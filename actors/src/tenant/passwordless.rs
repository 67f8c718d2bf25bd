//! Passwordless login by e-mail: a single-use link (10 minutes, AMR `mca`) or a 6-digit code
//! (10 minutes, AMR `otp`), each optionally resuming an OAuth authorize flow.
//!
//! Requests never tell whether an address has an account: the answer, its timing class and
//! the per-address spacing are the same for every address; mail goes only where it should.
//! Links and codes are single-use challenges (see `challenges.rs`): the link in the user's
//! slot, the code in the address's slot (with `login_or_create` the account may not exist
//! until the code is verified).

pub mod msg;

use std::{net::IpAddr, time::Instant};

use tessera_storage::{ct_eq, Kind};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    audit::AuditContext,
    challenges::{challenge_key, ChallengeRecord, CodeVerdict, Found, OAuthResume, Purpose},
    credentials::{Credential, Ending},
    effects::Effects,
    messages::{HostedReturn, LoginOutcome, PasswordlessLogin},
    records::UserRecord,
    sessions::Proof,
};
use crate::tenant::ctx::TenantCtx;
use crate::{
    error::TenantError,
    login_guard::{Attempt, Captcha},
    outbound::{MailJob, MailKind},
};

/// The mailed sign-in flow: it keeps nothing in memory and works on the context.
#[derive(Default)]
pub struct Passwordless;

/// A login link lives this long.
pub const LOGIN_LINK_TTL: Duration = Duration::minutes(10);
/// A login code lives this long.
pub const LOGIN_CODE_TTL: Duration = Duration::minutes(10);
/// Where a login code was sent.
#[derive(Clone, Copy, Debug)]
pub(super) enum CodeTarget<'a> {
    /// An address.
    Email(&'a str),
    /// A number, E.164.
    Phone(&'a str),
}

/// Which passwordless flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    MagicLink,
    EmailOtp,
    /// A texted code (see `sms.rs`).
    SmsOtp,
}

impl Flow {
    pub(super) fn method(self) -> &'static str {
        match self {
            Flow::MagicLink => "magic_link",
            Flow::EmailOtp => "email_otp",
            Flow::SmsOtp => "sms_otp",
        }
    }

    /// RFC 8176: `mca` (a link), `otp` (an e-mailed code), `sms` (a texted code).
    fn amr(self) -> &'static str {
        match self {
            Flow::MagicLink => "mca",
            Flow::EmailOtp => "otp",
            Flow::SmsOtp => "sms",
        }
    }
}

/// A record as JSON, for a decoy's size.
pub(super) fn to_value<T: serde::Serialize>(r: &T) -> Result<serde_json::Value, TenantError> {
    serde_json::to_value(r).map_err(|e| TenantError::Internal(e.to_string()))
}

impl Passwordless {
    /// Mails a login link to the account with this address, if there is one.
    pub fn magic_link_request(
        &mut self,
        cx: &mut TenantCtx,
        email: &str,
        oauth: Option<OAuthResume>,
        hosted: HostedReturn,
    ) -> Result<Vec<MailJob>, TenantError> {
        cx.flow_enabled(Flow::MagicLink)?;
        cx.sso_gate(email)?;
        cx.space_request(Flow::MagicLink, email)?;
        let now = OffsetDateTime::now_utc();
        let Some(user) = cx.member_by_email(email)? else {
            // As much sealed and written as for an account (see `write_decoy`).
            let mut record = ChallengeRecord::new(
                Purpose::LoginMagicLink,
                &UserRecord::blank(Uuid::now_v7(), now),
                None,
                LOGIN_LINK_TTL,
                now,
            );
            record.secret_hash = "0".repeat(64);
            record.oauth = oauth;
            record.redirect_to = hosted.redirect_to;
            record.code_challenge = hosted.code_challenge;
            let link = cx.link("magic-link", &tessera_storage::random_token(65));
            let records = [to_value(&record)?];
            cx.write_decoy(&cx.decoy_of(email, MailKind::MagicLink { link }, &records)?)?;
            return Ok(Vec::new());
        };
        let mut fx = cx.effects();
        let mut record =
            ChallengeRecord::new(Purpose::LoginMagicLink, &user, None, LOGIN_LINK_TTL, now);
        record.oauth = oauth;
        record.redirect_to = hosted.redirect_to;
        record.code_challenge = hosted.code_challenge;
        let token = cx.store_challenge(&mut fx.batch, user.id, record)?;
        let link = cx.link("magic-link", &token);
        cx.queue_mail(&mut fx, email, MailKind::MagicLink { link })?;
        cx.commit(fx)
    }

    /// Mails a login code to this address when it has an account, or (`create`) whatever it
    /// has: the account is then created when the code is verified.
    pub fn email_otp_request(
        &mut self,
        cx: &mut TenantCtx,
        email: &str,
        create: bool,
        oauth: Option<OAuthResume>,
        ctx: &AuditContext,
    ) -> Result<Vec<MailJob>, TenantError> {
        cx.flow_enabled(Flow::EmailOtp)?;
        cx.sso_gate(email)?;
        cx.space_request(Flow::EmailOtp, email)?;
        let user = cx.member_by_email(email)?;
        if user.is_none() && !create {
            // As much sealed and written as for an account (see `write_decoy`).
            let now = OffsetDateTime::now_utc();
            let mut record = ChallengeRecord::new(
                Purpose::LoginEmailOtp,
                &UserRecord::blank(Uuid::nil(), now),
                None,
                LOGIN_CODE_TTL,
                now,
            );
            record.secret_hash = "0".repeat(64);
            record.email = Some(email.to_owned());
            record.oauth = oauth;
            let kind = MailKind::EmailOtp {
                code: super::step_up::six_digit_code(),
            };
            cx.write_decoy(&cx.decoy_of(email, kind, &[to_value(&record)?])?)?;
            return Ok(Vec::new());
        }
        if user.is_none() {
            // A new account: the tenant's e-mail policy applies as to a registration, and a
            // refusal looks the same from outside (202, nothing sent).
            let mut fx = cx.effects();
            if cx.registration_blocked(&mut fx, email, ctx)? {
                return cx.commit(fx);
            }
        }
        let now = OffsetDateTime::now_utc();
        let slot = cx.address_slot(email);
        let user = user.unwrap_or_else(|| UserRecord::blank(Uuid::nil(), now));
        let code = super::step_up::six_digit_code();
        let mut record =
            ChallengeRecord::new(Purpose::LoginEmailOtp, &user, None, LOGIN_CODE_TTL, now);
        record.secret_hash = cx.otp_hash(slot, &code);
        record.email = Some(email.to_owned());
        record.oauth = oauth;
        let mut fx = cx.effects();
        fx.batch
            .put(&challenge_key(slot, Purpose::LoginEmailOtp), &record)?;
        cx.queue_mail(&mut fx, email, MailKind::EmailOtp { code })?;
        cx.commit(fx)
    }

    /// Signs in with a login link.
    pub fn magic_link_verify(
        &mut self,
        cx: &mut TenantCtx,
        token: &str,
        binding_hash: Option<&str>,
        ctx: &AuditContext,
    ) -> Result<(PasswordlessLogin, Vec<MailJob>), TenantError> {
        cx.flow_enabled(Flow::MagicLink)?;
        let now = OffsetDateTime::now_utc();
        let expiry_now = now.max(cx.calendar_now());
        let found = cx.find_challenge(token, &[Purpose::LoginMagicLink], expiry_now)?;
        let mut fx = cx.effects();
        // A password change since the link was sent (a recovery) kills it.
        let user = cx
            .user(found.record.user_id)?
            .filter(|u| !u.is_anonymous && u.email.is_some())
            .filter(|u| u.password_epoch == found.record.epoch);
        let Some(user) = user else {
            fx.batch.remove(Kind::Challenge, &found.key);
            return cx.fail(fx, TenantError::InvalidChallenge);
        };
        if !TenantCtx::binding_ok(&found.record, binding_hash) {
            return Err(TenantError::InvalidChallenge);
        }
        fx.batch.remove(Kind::Challenge, &found.key);
        let login =
            cx.passwordless_login(&mut fx, user, Flow::MagicLink, found.record.oauth, ctx, now)?;
        Ok((login, cx.commit(fx)?))
    }

    /// Signs in (or, for `login_or_create`, signs up) with a login code.
    pub fn email_otp_verify(
        &mut self,
        cx: &mut TenantCtx,
        email: &str,
        code: &str,
        binding_hash: Option<&str>,
        ip: IpAddr,
        ctx: &AuditContext,
    ) -> Result<(PasswordlessLogin, Vec<MailJob>), TenantError> {
        let proof = (code, binding_hash, ip);
        cx.code_login(CodeTarget::Email(email), proof, ctx)
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    pub(super) fn flow_enabled(&self, flow: Flow) -> Result<(), TenantError> {
        let sec = &self.settings.security;
        let on = match flow {
            Flow::MagicLink => sec.magic_link_enabled,
            Flow::EmailOtp => sec.email_otp_enabled,
            Flow::SmsOtp => sec.sms_otp_enabled,
        };
        on.then_some(()).ok_or(TenantError::PasswordlessDisabled)
    }

    /// Counts a request for `email` in `flow`: one per address per [`REQUEST_SPACING`],
    /// whether or not the address has an account.
    pub(super) fn space_request(&mut self, flow: Flow, email: &str) -> Result<(), TenantError> {
        self.request_spacing
            .hit(&format!("{}:{email}", flow.method()), Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })
    }

    /// The slot of an address's login code.
    fn address_slot(&self, email: &str) -> Uuid {
        let mut m = b"login-code:".to_vec();
        m.extend_from_slice(email.as_bytes());
        let h = self.otp_hasher.hash(&m);
        let mut b = [0u8; 16];
        b.copy_from_slice(&h[..16]);
        Uuid::from_bytes(b)
    }

    /// The registered (non-guest) user of an address.
    fn member_by_email(&self, email: &str) -> Result<Option<UserRecord>, TenantError> {
        Ok(self.user_by_email(email)?.filter(|u| !u.is_anonymous))
    }

    /// Whether the browser verifying is the one that started an OAuth-resuming login:
    /// `binding_hash` is the hash of the `resume_binding` it sent. Without OAuth parameters
    /// anything passes.
    pub(super) fn binding_ok(record: &ChallengeRecord, binding_hash: Option<&str>) -> bool {
        match &record.oauth {
            None => true,
            Some(o) => binding_hash.is_some_and(|h| ct_eq(h.as_bytes(), o.binding_hash.as_bytes())),
        }
    }

    /// Signs in whoever a typed login code proves: the code is checked and consumed (see
    /// [`Self::consume_login_code`]), then the user who holds the address or number now signs
    /// in, or, when the code was sent for `login_or_create` and nobody does, a new user is
    /// created (an address under the tenant's e-mail policy, checked again here).
    pub(super) fn code_login(
        &mut self,
        target: CodeTarget<'_>,
        (code, binding_hash, ip): (&str, Option<&str>, IpAddr),
        ctx: &AuditContext,
    ) -> Result<(PasswordlessLogin, Vec<MailJob>), TenantError> {
        let (flow, to, at) = match target {
            CodeTarget::Email(e) => (
                Flow::EmailOtp,
                e,
                (self.address_slot(e), Purpose::LoginEmailOtp),
            ),
            CodeTarget::Phone(p) => (Flow::SmsOtp, p, (self.number_slot(p), Purpose::LoginSmsOtp)),
        };
        self.flow_enabled(flow)?;
        let now = OffsetDateTime::now_utc();
        let sent_to = |r: &ChallengeRecord| match target {
            CodeTarget::Email(e) => r.email.as_deref() == Some(e),
            CodeTarget::Phone(p) => r.phone.as_deref() == Some(p),
        };
        let (mut fx, found) =
            self.consume_login_code(to, at, sent_to, code, binding_hash, (ip, ctx), now)?;
        // Whoever holds the address or number now is who the code proves.
        let holder = match target {
            CodeTarget::Email(e) => self.member_by_email(e)?,
            CodeTarget::Phone(p) => self.user_by_phone(p)?,
        };
        let user = match (holder, target) {
            (Some(u), _) => u,
            (None, CodeTarget::Email(e)) if found.record.user_id.is_nil() => {
                // The policy may have changed since the code was sent.
                if self.registration_blocked(&mut fx, e, ctx)? {
                    return self.fail(fx, TenantError::InvalidChallenge);
                }
                // Minor protection: the code is spent, no account is made.
                if let Err(e) = self.age_unknown_signup() {
                    return self.fail(fx, e);
                }
                self.create_passwordless(&mut fx, e, ctx, now)?
            }
            (None, CodeTarget::Phone(p)) if found.record.user_id.is_nil() => {
                if let Err(e) = self.age_unknown_signup() {
                    return self.fail(fx, e);
                }
                self.create_sms_user(&mut fx, p, ctx, now)?
            }
            // The account the code was sent to is gone.
            (None, _) => return self.fail(fx, TenantError::InvalidChallenge),
        };
        let login = self.passwordless_login(&mut fx, user, flow, found.record.oauth, ctx, now)?;
        Ok((login, self.commit(fx)?))
    }

    /// Checks a login code sent to `target` (an address or a number), kept in `at` (slot and
    /// purpose) when `sent_to` accepts its record, and consumes it: the answer's batch removes
    /// it. Guesses are failed logins of `target` and of the client: the block is checked first
    /// and alike for every target, so it tells nothing about whether a code exists. The code
    /// is compared in constant time whatever was sent, against a dummy when there is none.
    /// The code just consumed from this slot, sent again before it would have expired, is
    /// answered as a used code and counted nowhere: it is no guess.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn consume_login_code(
        &mut self,
        target: &str,
        at: (Uuid, Purpose),
        sent_to: impl Fn(&ChallengeRecord) -> bool,
        code: &str,
        binding_hash: Option<&str>,
        (ip, ctx): (IpAddr, &AuditContext),
        now: OffsetDateTime,
    ) -> Result<(Effects, Found), TenantError> {
        // A code is checked as a password is, by the same rules (no device token, no CAPTCHA:
        // past the address's count, the answer is a refusal).
        let attempt = Attempt::new(target, ip, Captcha::Off);
        self.login_gate(&attempt)?;
        let mut fx = self.effects();
        // Expiry is a calendar deadline: fault drills move it with the clock offset.
        let expiry_now = now.max(self.calendar_now());
        let mut found = match self.check_code(at, code, sent_to, expiry_now)? {
            CodeVerdict::Missing { resubmitted } => {
                if resubmitted {
                    return Err(TenantError::InvalidChallenge);
                }
                self.count_failed_login(&mut fx.batch, &attempt, None, ctx)?;
                return self.fail(fx, TenantError::InvalidChallenge);
            }
            CodeVerdict::Wrong { found, resubmitted } => {
                // Without the binding the code is not even compared: another browser learns
                // nothing. A newer code is pending: the old one is no guess at it either.
                if !Self::binding_ok(&found.record, binding_hash) || resubmitted {
                    return Err(TenantError::InvalidChallenge);
                }
                found
            }
            CodeVerdict::Right(found) => {
                if !Self::binding_ok(&found.record, binding_hash) {
                    return Err(TenantError::InvalidChallenge);
                }
                self.consume_code(&mut fx.batch, &found, expiry_now);
                return Ok((fx, found));
            }
        };
        self.challenge_failed(&mut fx.batch, &mut found)?;
        let user = Some(found.record.user_id).filter(|id| !id.is_nil());
        self.count_failed_login(&mut fx.batch, &attempt, user, ctx)?;
        self.fail(fx, TenantError::InvalidChallenge)
    }

    /// A new account for an address proven by a login code: confirmed, without a password.
    fn create_passwordless(
        &mut self,
        fx: &mut Effects,
        email: &str,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<UserRecord, TenantError> {
        self.age_unknown_signup()?;
        let mut user = UserRecord::blank(Uuid::now_v7(), now);
        user.email = Some(email.to_owned());
        user.email_verified = true;
        self.count_active(&mut fx.batch, None, now)?;
        self.put_new_user(&mut fx.batch, &user)?;
        self.emit_user_created(&mut fx.batch, &user, "email_otp")?;
        self.audit_into(
            &mut fx.batch,
            "auth.register",
            ctx,
            serde_json::json!({ "user_id": user.id, "method": "email_otp" }),
        )?;
        Ok(user)
    }

    /// The owner of an address just proved it (`via`: a reset link, a login link or code, an
    /// admin's confirmation) on an account that never confirmed it: whoever registered the
    /// address without being able to confirm it keeps no way in. Every credential the
    /// inventory's recovery removes goes (the password too: a reset sets the owner's right
    /// after), the address counts as confirmed, and `auth.account.recovered` names the kinds
    /// that went. The caller writes the user record.
    pub(super) fn recover_address(
        &mut self,
        fx: &mut Effects,
        user: &mut UserRecord,
        via: &str,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        if !user.email_verified {
            self.emit_email_verified(&mut fx.batch, user.id)?;
        }
        user.email_verified = true;
        let removed = self.end_holds(fx, std::slice::from_mut(user), Ending::Recovery)?;
        if removed
            .iter()
            .any(|k| matches!(k, Credential::Sessions | Credential::OAuthGrants))
        {
            self.emit_session_revoked(
                &mut fx.batch,
                user.id,
                super::webhooks::Revoked::All,
                "unconfirmed_holder_removed",
            )?;
        }
        self.audit_into(
            &mut fx.batch,
            "auth.account.recovered",
            ctx,
            serde_json::json!({ "user_id": user.id, "via": via, "removed": removed }),
        )
    }

    /// Finishes a passwordless sign-in of `user`, whose address (or number) the link or code
    /// just proved: an address counts as confirmed; MFA and the tenant's MFA policy apply as
    /// for a password login.
    pub(super) fn passwordless_login(
        &mut self,
        fx: &mut Effects,
        mut user: UserRecord,
        flow: Flow,
        oauth: Option<OAuthResume>,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<PasswordlessLogin, TenantError> {
        if flow != Flow::SmsOtp && !user.email_verified {
            // The password goes too: the owner sets one with a reset link.
            self.recover_address(fx, &mut user, flow.method(), ctx)?;
        }
        fx.batch.put(user.id.as_bytes(), &user)?;
        let mut proof = Proof::first_factor(flow.amr(), flow.method());
        proof.oauth = oauth;
        let login = self.sign_in(fx, &mut user, proof, ctx, now)?;
        if matches!(login.outcome, LoginOutcome::Signed { .. }) {
            // The proven identifier's failures are forgotten, as after a password login.
            let proven = match flow {
                Flow::SmsOtp => user.phone.as_ref(),
                _ => user.email.as_ref(),
            };
            if let Some(key) = proven {
                self.login.forgive_account(key);
            }
        }
        Ok(login)
    }
}

#[cfg(test)]
mod tests;
