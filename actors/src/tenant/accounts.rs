//! End-user accounts: registration (with the e-mail policy), verification, password login,
//! password reset and change, and the mail these send.
//!
//! Every check-and-change is one method, called from one message: a link token is consumed, a
//! login finished, a password changed inside a single handler, so two concurrent requests can
//! never both win. Argon2 never runs here: callers hash and verify off the actor and send the
//! result, and `LoginFinish` / `ChangePassword` re-check the password epoch before committing.

use crate::tenant::accounts::memory::Accounts;
use crate::tenant::ctx::TenantCtx;

pub mod address;
pub mod memory;
pub mod msg;

use std::{net::IpAddr, time::Instant};

use tessera_storage::{sha256, Kind, TenantBatch};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    audit::AuditContext,
    effects::Effects,
    messages::{Credential, LoginAttempt, LoginOutcome, PasswordSignIn, Registration, User},
    records::{LinkPurpose, LinkTokenRecord, UserRecord},
    sessions::Proof,
    webhooks::Revoked,
};
use crate::error::GuardianError;
use crate::{
    error::TenantError,
    login_guard::Attempt,
    outbound::{MailJob, MailKind},
    policy::{email_domain, EmailPolicy},
    throttle::throttle_ip,
};

/// A verification link lives this long.
pub const VERIFY_TTL: Duration = Duration::hours(24);
/// A password-reset link lives this long.
pub const RESET_TTL: Duration = Duration::hours(1);
/// At most one resend, reset or account-exists message per account this often.
pub const MAIL_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

impl UserRecord {
    /// A user with nothing set yet: no address, no password, not a guest.
    pub fn blank(id: Uuid, now: OffsetDateTime) -> Self {
        UserRecord {
            guardian: None,
            id,
            email: None,
            email_verified: false,
            password_hash: None,
            password_epoch: 0,
            phone: None,
            phone_verified: false,
            is_anonymous: false,
            mfa_enabled: false,
            created_at: now,
            last_sign_in_at: None,
            last_active_at: now,
            public_metadata: serde_json::json!({}),
            date_of_birth: None,
            age_verification_token: None,
            verify_token: None,
            reset_token: None,
            change_token: None,
            totp_seed: None,
            totp_pending: None,
            totp_last_step: 0,
            recovery_codes: Vec::new(),
            blocked_at: None,
            app_metadata: serde_json::json!({}),
            locale: None,
        }
    }

    pub fn view(&self) -> User {
        User {
            id: self.id,
            email: self.email.clone(),
            email_verified: self.email_verified,
            phone: self.phone.clone(),
            phone_verified: self.phone_verified,
            is_anonymous: self.is_anonymous,
            mfa_enabled: self.mfa_enabled,
            created_at: self.created_at,
            last_sign_in_at: self.last_sign_in_at,
            public_metadata: self.public_metadata.clone(),
        }
    }
}

impl Accounts {
    /// Counts a registration attempt from `ip`.
    pub fn register_admit(&mut self, ip: IpAddr) -> Result<(), TenantError> {
        self.register_ips
            .hit(&throttle_ip(ip), Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })
    }

    /// Counts a reset link asked for on the hosted sign-in page from `ip`.
    pub fn reset_admit(&mut self, ip: IpAddr) -> Result<(), TenantError> {
        self.reset_ips
            .hit(&throttle_ip(ip), Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })
    }

    /// Registers a new user, or answers a look-alike for an address that exists (its owner is
    /// told by mail) or that the tenant's policy blocks (an audit event, nothing else).
    pub fn register(
        &mut self,
        cx: &mut TenantCtx,
        r: Registration,
        ctx: &AuditContext,
    ) -> Result<(User, Vec<MailJob>), TenantError> {
        cx.register_or_claim(r, None, ctx)
    }

    /// Consumes a link token of `purpose`: answers its user, with the token removed from
    /// `fx`. An invalid token is `InvalidLinkToken`, after removing it if it was dead.
    fn consume_link(
        &mut self,
        cx: &mut TenantCtx,
        fx: Effects,
        token: &str,
        purpose: LinkPurpose,
        now: OffsetDateTime,
    ) -> Result<(Effects, UserRecord), TenantError> {
        let (fx, _, user) = Self::take_link(cx, fx, token, (purpose, now))?;
        Ok((fx, user))
    }

    /// [`Self::consume_link`], answering the token's record too (an address change's link
    /// carries the new address).
    pub(super) fn take_link(
        cx: &mut TenantCtx,
        fx: Effects,
        token: &str,
        (purpose, now): (LinkPurpose, OffsetDateTime),
    ) -> Result<(Effects, LinkTokenRecord, UserRecord), TenantError> {
        let mut fx = fx;
        let Some((rec, mut user)) = cx.live_link(&mut fx.batch, token, purpose, now)? else {
            return cx.fail(fx, TenantError::InvalidLinkToken);
        };
        fx.batch.remove(Kind::LinkToken, &sha256(token.as_bytes()));
        match purpose {
            LinkPurpose::VerifyEmail => user.verify_token = None,
            LinkPurpose::ResetPassword => user.reset_token = None,
            LinkPurpose::ChangeEmail => user.change_token = None,
        }
        Ok((fx, rec, user))
    }

    /// Whether a reset link is alive (checked before the new password is hashed, so that
    /// guessing tokens costs no argon2 work).
    pub fn check_reset_link(&mut self, cx: &mut TenantCtx, token: &str) -> Result<(), TenantError> {
        let mut fx = cx.effects();
        let found = cx.live_link(
            &mut fx.batch,
            token,
            LinkPurpose::ResetPassword,
            OffsetDateTime::now_utc(),
        )?;
        cx.commit(fx)?;
        found.map(|_| ()).ok_or(TenantError::InvalidLinkToken)
    }

    /// Confirms an address with a verification link.
    pub fn verify_email(
        &mut self,
        cx: &mut TenantCtx,
        token: &str,
        ctx: &AuditContext,
    ) -> Result<Vec<MailJob>, TenantError> {
        let now = OffsetDateTime::now_utc();
        let (mut fx, mut user) =
            self.consume_link(cx, cx.effects(), token, LinkPurpose::VerifyEmail, now)?;
        if !user.email_verified {
            cx.emit_email_verified(&mut fx.batch, user.id)?;
        }
        user.email_verified = true;
        fx.batch.put(user.id.as_bytes(), &user)?;
        cx.audit_into(
            &mut fx.batch,
            "auth.email.verified",
            ctx,
            serde_json::json!({ "user_id": user.id }),
        )?;
        cx.commit(fx)
    }

    /// A new verification link for an unverified account; silently nothing otherwise.
    pub fn resend_verification(
        &mut self,
        cx: &mut TenantCtx,
        email: &str,
        redirect_to: Option<String>,
    ) -> Result<Vec<MailJob>, TenantError> {
        self.mail_link(cx, email, (LinkPurpose::VerifyEmail, redirect_to))
    }

    /// A reset link for an account with this address; silently nothing otherwise.
    pub fn forgot_password(
        &mut self,
        cx: &mut TenantCtx,
        email: &str,
        redirect_to: Option<String>,
    ) -> Result<Vec<MailJob>, TenantError> {
        self.mail_link(cx, email, (LinkPurpose::ResetPassword, redirect_to))
    }

    /// Mails a new link of `purpose` to the account with this address, unless there is none,
    /// it was mailed less than [`MAIL_INTERVAL`] ago, or (verification) it is confirmed already.
    fn mail_link(
        &mut self,
        cx: &mut TenantCtx,
        email: &str,
        (purpose, redirect_to): (LinkPurpose, Option<String>),
    ) -> Result<Vec<MailJob>, TenantError> {
        let now = OffsetDateTime::now_utc();
        let user = cx.user_by_email(email)?;
        let verified =
            purpose == LinkPurpose::VerifyEmail && user.as_ref().is_some_and(|u| u.email_verified);
        let mut user = match user {
            Some(u) if !verified && cx.mail_allowed(u.id) => u,
            // Nothing to send: as much sealed and written as when there is.
            found => {
                let stand_in = found.unwrap_or_else(|| {
                    let mut u = UserRecord::blank(Uuid::now_v7(), now);
                    u.email = Some(email.to_owned());
                    u.password_hash = Some("x".repeat(97));
                    u
                });
                let stand_in_token = cx.link_token();
                let token = LinkTokenRecord {
                    purpose,
                    user_id: stand_in.id,
                    expires_at: now + RESET_TTL,
                    epoch: stand_in.password_epoch,
                    redirect_to,
                    new_email: None,
                };
                let records = [
                    serde_json::to_value(&stand_in),
                    serde_json::to_value(&token),
                ]
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| TenantError::Internal(e.to_string()))?;
                let kind = match purpose {
                    LinkPurpose::VerifyEmail => MailKind::VerifyEmail {
                        link: cx.link("verify-email", &stand_in_token),
                    },
                    LinkPurpose::ResetPassword => MailKind::PasswordReset {
                        link: cx.link("reset-password", &stand_in_token),
                    },
                    LinkPurpose::ChangeEmail => MailKind::EmailChange {
                        link: cx.link("confirm-email", &stand_in_token),
                    },
                };
                cx.write_decoy(&cx.decoy_of(email, kind, &records)?)?;
                return Ok(Vec::new());
            }
        };
        let mut fx = cx.effects();
        cx.send_link(&mut fx, &mut user, (purpose, redirect_to), email, now)?;
        fx.batch.put(user.id.as_bytes(), &user)?;
        cx.commit(fx)
    }

    /// Sets a new password with a reset link: every session ends, the e-mail counts as
    /// confirmed (the link proved it), failed-login counters are forgiven.
    pub fn reset_password(
        &mut self,
        cx: &mut TenantCtx,
        token: &str,
        password_hash: String,
        ctx: &AuditContext,
    ) -> Result<Vec<MailJob>, TenantError> {
        let now = OffsetDateTime::now_utc();
        let (mut fx, mut user) =
            self.consume_link(cx, cx.effects(), token, LinkPurpose::ResetPassword, now)?;
        if !user.email_verified {
            // The link proved the address: an unconfirmed account's ways in go.
            cx.recover_address(&mut fx, &mut user, "password_reset", ctx)?;
        }
        user.password_hash = Some(password_hash);
        user.password_epoch = user.password_epoch.wrapping_add(1);
        user.email_verified = true;
        fx.batch.put(user.id.as_bytes(), &user)?;
        if cx.revoke_user_sessions(&mut fx.batch, user.id, None)? > 0 {
            cx.emit_session_revoked(&mut fx.batch, user.id, Revoked::All, "password_reset")?;
        }
        cx.audit_into(
            &mut fx.batch,
            "auth.password.reset",
            ctx,
            serde_json::json!({ "user_id": user.id }),
        )?;
        if let Some(email) = user.email.clone() {
            cx.queue_mail(&mut fx, &email, MailKind::PasswordChanged)?;
            cx.login.forgive_account(&email);
        }
        cx.commit(fx)
    }

    /// Checks the sign-in rules, then answers what to verify: the account's credential, and
    /// the known device the attempt presented, if it is a live one of that account.
    pub fn login_begin(
        &self,
        cx: &TenantCtx,
        attempt: &LoginAttempt,
    ) -> Result<Credential, TenantError> {
        cx.sso_gate(&attempt.email)?;
        let user = cx.user_by_email(&attempt.email)?;
        let device = match (&user, attempt.device_token.as_deref()) {
            (Some(u), Some(token)) => cx.known_device(u.id, token, OffsetDateTime::now_utc())?,
            _ => None,
        };
        cx.login_gate(&Self::guard_attempt(attempt, device))?;
        Ok(match user {
            Some(u) => Credential {
                user_id: Some(u.id),
                password_hash: u.password_hash,
                epoch: u.password_epoch,
                device,
            },
            None => Credential {
                user_id: None,
                password_hash: None,
                epoch: 0,
                device: None,
            },
        })
    }

    /// The sign-in rules' view of a password login.
    fn guard_attempt(attempt: &LoginAttempt, device: Option<Uuid>) -> Attempt<'_> {
        Attempt {
            account: &attempt.email,
            ip: attempt.ip,
            device,
            captcha: attempt.captcha,
        }
    }

    /// Records a failed password check with its audit event (and one for each rule it made
    /// refuse).
    fn login_failed(
        &mut self,
        cx: &mut TenantCtx,
        fx: &mut Effects,
        attempt: &Attempt<'_>,
        user: Option<Uuid>,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        cx.count_failed_login(&mut fx.batch, attempt, user, ctx)?;
        cx.audit_into(
            &mut fx.batch,
            "auth.login.failed",
            ctx,
            serde_json::json!({ "user_id": user, "reason": "invalid_credentials" }),
        )
    }

    /// Finishes a password login: a failure counts against the sign-in rules; a success (when
    /// nothing changed since `login_begin`) opens a session and answers the device token to
    /// keep.
    pub fn login_finish(
        &mut self,
        cx: &mut TenantCtx,
        attempt: &LoginAttempt,
        credential: &Credential,
        password_ok: bool,
        ctx: &AuditContext,
    ) -> Result<(PasswordSignIn, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let mut fx = cx.effects();
        let guard = Self::guard_attempt(attempt, credential.device);
        // Checked again here: attempts started together all passed `login_begin`, and the
        // ones finishing after the block began must not learn their result.
        if let Err(refused) = cx.login_gate(&guard) {
            if !password_ok {
                self.login_failed(cx, &mut fx, &guard, credential.user_id, ctx)?;
                cx.commit(fx)?;
            }
            return Err(refused);
        }
        let Some(mut user) = cx.proven_user(&attempt.email, credential, password_ok)? else {
            self.login_failed(cx, &mut fx, &guard, credential.user_id, ctx)?;
            return cx.fail(fx, TenantError::InvalidCredentials);
        };
        // A held minor learns that first: confirming the address alone would not help.
        if let Err(e) = user.guardian_gate() {
            cx.login.succeed(&guard);
            return Err(e);
        }
        if cx.settings.security.require_email_verification && !user.email_verified {
            cx.login.succeed(&guard);
            return Err(TenantError::EmailNotVerified);
        }
        let mut proof = Proof::first_factor("pwd", "password");
        proof.device = credential.device;
        // Asked into an organization: only one the user belongs to.
        if let Some(org) = attempt.organization {
            if cx.membership(org, user.id)?.is_none() {
                cx.login.succeed(&guard);
                return Err(crate::OrgError::NotMember.into());
            }
            proof.sso = Some((org, Uuid::nil()));
        }
        let outcome = cx.sign_in(&mut fx, &mut user, proof, ctx, now)?.outcome;
        // The account's failures are forgiven, not the address's (see `LoginThrottles::
        // succeed`), and not while a second factor is still to come: a known password must
        // not reset the count of wrong codes.
        if !matches!(outcome, LoginOutcome::MfaRequired { .. }) {
            cx.login.succeed(&guard);
        }
        // A device that signed in is known from now on (one that presented a live token keeps
        // it). Only a complete sign-in: after MFA, the second step's answer carries it.
        let device_token = match (&outcome, credential.device) {
            (LoginOutcome::Signed { .. }, None) => {
                Some(cx.issue_device(&mut fx.batch, user.id, now)?)
            }
            _ => None,
        };
        let mail = cx.commit(fx)?;
        Ok((
            PasswordSignIn {
                outcome,
                device_token,
            },
            mail,
        ))
    }

    /// The signed-in user's credential, to check the current password off the actor.
    pub fn password_credential(
        &self,
        cx: &TenantCtx,
        bearer: super::messages::Bearer,
    ) -> Result<Credential, TenantError> {
        let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
        if let Some(retry_after) = user
            .email
            .as_ref()
            .and_then(|e| cx.login.account_blocked(e))
        {
            return Err(TenantError::TooManyAttempts { retry_after });
        }
        Ok(Credential {
            user_id: Some(user.id),
            password_hash: user.password_hash,
            epoch: user.password_epoch,
            device: None,
        })
    }

    /// Changes the password of a signed-in user whose current password was checked: the other
    /// sessions end, outstanding reset links die (the epoch moves).
    pub fn change_password(
        &mut self,
        cx: &mut TenantCtx,
        bearer: super::messages::Bearer,
        credential: &Credential,
        current_ok: bool,
        new_hash: String,
        ctx: &AuditContext,
    ) -> Result<Vec<MailJob>, TenantError> {
        let now = OffsetDateTime::now_utc();
        let (_, mut user) = cx.live_session(bearer, now)?;
        let email = user.email.clone().unwrap_or_default();
        let mut fx = cx.effects();
        if !current_ok || user.password_epoch != credential.epoch || user.password_hash.is_none() {
            // Counts against the account only: the address throttle belongs to login.
            cx.login.fail_account(&email);
            cx.audit_into(
                &mut fx.batch,
                "auth.password.change_failed",
                ctx,
                serde_json::json!({ "user_id": user.id }),
            )?;
            return cx.fail(fx, TenantError::InvalidCredentials);
        }
        user.password_hash = Some(new_hash);
        user.password_epoch = user.password_epoch.wrapping_add(1);
        if let Some(old) = user.reset_token.take().and_then(|h| hex::decode(h).ok()) {
            fx.batch.remove(Kind::LinkToken, &old);
        }
        fx.batch.put(user.id.as_bytes(), &user)?;
        if cx.revoke_user_sessions(&mut fx.batch, user.id, Some(bearer.session_id))? > 0 {
            cx.emit_session_revoked(
                &mut fx.batch,
                user.id,
                Revoked::AllBut(bearer.session_id),
                "password_changed",
            )?;
        }
        cx.audit_into(
            &mut fx.batch,
            "auth.password.changed",
            ctx,
            serde_json::json!({ "user_id": user.id }),
        )?;
        if !email.is_empty() {
            cx.queue_mail(&mut fx, &email, MailKind::PasswordChanged)?;
        }
        cx.commit(fx)
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// A reference-only placeholder user, for answers that must look like a registration.
    fn lookalike(email: &str, now: OffsetDateTime) -> User {
        let mut user = UserRecord::blank(Uuid::now_v7(), now);
        user.email = Some(email.to_owned());
        user.view()
    }

    /// Registration, or (with `guest`) the claim of a guest: the same user id becomes a
    /// registered user, keeping its sessions and metadata. Blocked and existing addresses
    /// answer a look-alike either way (for a claim, with the guest's own id, so a claim
    /// reveals no more than a registration).
    pub(super) fn register_or_claim(
        &mut self,
        r: Registration,
        guest: Option<UserRecord>,
        ctx: &AuditContext,
    ) -> Result<(User, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let mut fx = self.effects();
        // A wallet's age verification is used here, once, whatever else the registration
        // meets (an existing address answers a look-alike, and the token is spent all the same).
        let age_proof = match &r.age_verification_token {
            Some(token) => {
                let key = sha256(token.as_bytes());
                match self.store.get::<super::eudi::AgeTokenRecord>(&key)? {
                    Some(proof) if proof.expires_at > now => {
                        fx.batch.remove(Kind::AgeToken, &key);
                        Some(proof)
                    }
                    _ => return Err(TenantError::Guardian(GuardianError::AgeTokenInvalid)),
                }
            }
            None => None,
        };
        // Minor protection decides before anything is written: a missing date of birth is
        // refused, whatever the address.
        let held =
            self.guardian_hold(&r, age_proof.as_ref().map(|p| (p.over, p.threshold)), now)?;
        let lookalike = |email: &str| {
            let mut view = Self::lookalike(email, now);
            if let Some(g) = &guest {
                view.id = g.id;
                view.created_at = g.created_at;
            }
            view
        };
        // An SSO-only domain registers nobody (an age token sent along is spent all the same).
        if let Err(e) = self.sso_gate(&r.email) {
            return self.fail(fx, e);
        }
        if self.registration_blocked(&mut fx, &r.email, ctx)? {
            self.commit(fx)?;
            return Ok((lookalike(&r.email), Vec::new()));
        }
        if let Some(mut existing) = self.user_by_email(&r.email)? {
            if self.mail_allowed(existing.id) {
                let token = self.issue_link(
                    &mut fx.batch,
                    &mut existing,
                    (LinkPurpose::ResetPassword, r.redirect_to.clone()),
                    now,
                )?;
                let reset_link = self.link("reset-password", &token);
                fx.batch.put(existing.id.as_bytes(), &existing)?;
                self.queue_mail(&mut fx, &r.email, MailKind::AccountExists { reset_link })?;
            }
            self.audit_into(
                &mut fx.batch,
                "auth.register.existing_email",
                ctx,
                serde_json::json!({ "user_id": existing.id }),
            )?;
            let mail = self.commit(fx)?;
            return Ok((lookalike(&r.email), mail));
        }
        let claimed = guest.is_some();
        let (mut user, event) = match guest {
            Some(g) => {
                fx.batch.remove(Kind::Guest, g.id.as_bytes());
                (g, "auth.anonymous.claimed")
            }
            None => {
                let user = UserRecord::blank(Uuid::now_v7(), now);
                self.count_active(&mut fx.batch, None, now)?;
                (user, "auth.register")
            }
        };
        let id = user.id;
        user.date_of_birth = r
            .date_of_birth
            .map(|d| {
                self.master_key
                    .seal(&self.user_aad(id, "date_of_birth"), d.as_bytes())
            })
            .transpose()?;
        // What the wallet proved (not the spent token): sealed like the date of birth.
        user.age_verification_token = age_proof
            .map(|p| {
                let proof = serde_json::json!({
                    "method": "eudi_wallet",
                    "over": p.over,
                    "threshold": p.threshold,
                    "verified_at": p.verified_at.unix_timestamp(),
                });
                self.master_key.seal(
                    &self.user_aad(id, "age_verification_token"),
                    proof.to_string().as_bytes(),
                )
            })
            .transpose()?;
        user.email = Some(r.email.clone());
        user.email_verified = false;
        user.password_hash = Some(r.password_hash);
        user.is_anonymous = false;
        user.locale = r.locale.clone();
        if held == Some(true) {
            Self::hold_child(&mut user, now);
            // A guest claimed into a held account keeps no session.
            if claimed {
                let ended = self.revoke_user_sessions(&mut fx.batch, user.id, None)?;
                if ended > 0 {
                    self.emit_session_revoked(
                        &mut fx.batch,
                        user.id,
                        super::webhooks::Revoked::All,
                        "guardian_consent_pending",
                    )?;
                }
            }
        }
        fx.locale = r.locale;
        self.send_link(
            &mut fx,
            &mut user,
            (LinkPurpose::VerifyEmail, r.redirect_to),
            &r.email,
            now,
        )?;
        self.put_new_user(&mut fx.batch, &user)?;
        let method = if claimed { "guest_claim" } else { "password" };
        self.emit_user_created(&mut fx.batch, &user, method)?;
        let mut metadata = serde_json::json!({ "user_id": id });
        if held == Some(true) {
            metadata["guardian_consent"] = serde_json::json!("pending");
        }
        self.audit_into(&mut fx.batch, event, ctx, metadata)?;
        let mail = self.commit(fx)?;
        Ok((user.view(), mail))
    }

    /// Whether the tenant's e-mail policy refuses new accounts at `email`; if so, the
    /// `auth.register.blocked_*` event (a keyed hash of the domain and a decision reference,
    /// never the address) is written into `fx`.
    pub(super) fn registration_blocked(
        &mut self,
        fx: &mut Effects,
        email: &str,
        ctx: &AuditContext,
    ) -> Result<bool, TenantError> {
        let sec = &self.settings.security;
        let policy = EmailPolicy {
            block_disposable: sec.block_disposable_emails,
            block_subaddress: sec.block_email_subaddresses,
            allowlist: &self.settings.email_domains.allowlist,
            blocklist: &self.settings.email_domains.blocklist,
        };
        let Some(block) = policy.check(email) else {
            return Ok(false);
        };
        let domain_hash = hex::encode(self.domain_hasher.hash(email_domain(email).as_bytes()));
        let decision_ref = Uuid::new_v4();
        let mut metadata = serde_json::json!({
            "domain_hash": domain_hash,
            "decision_ref": decision_ref,
        });
        if let crate::policy::EmailBlock::CustomBlocklist { reason } = &block {
            metadata["reason"] = serde_json::json!(reason);
        }
        tracing::info!(
            tenant = %self.info.id,
            decision_ref = %decision_ref,
            event = block.event_type(),
            "registration blocked by the e-mail policy"
        );
        self.audit_into(&mut fx.batch, block.event_type(), ctx, metadata)?;
        Ok(true)
    }

    /// Whether another message may go to this account now (resend, reset and account-exists
    /// mail are spaced so the service cannot be used to flood a mailbox); counts it if so.
    pub(super) fn mail_allowed(&mut self, user: Uuid) -> bool {
        let now = Instant::now();
        if self.mail_sent.len() > 10_000 {
            self.mail_sent
                .retain(|_, at| now.duration_since(*at) < MAIL_INTERVAL);
        }
        match self.mail_sent.get(&user) {
            Some(at) if now.duration_since(*at) < MAIL_INTERVAL => false,
            _ => {
                self.mail_sent.insert(user, now);
                true
            }
        }
    }

    /// A new single-use link token for `user`; the previous one of the same purpose dies.
    /// Answers the token; only its hash is stored.
    pub(super) fn issue_link(
        &self,
        batch: &mut TenantBatch,
        user: &mut UserRecord,
        (purpose, redirect_to): (LinkPurpose, Option<String>),
        now: OffsetDateTime,
    ) -> Result<String, TenantError> {
        let ttl = match purpose {
            LinkPurpose::VerifyEmail => VERIFY_TTL,
            LinkPurpose::ResetPassword | LinkPurpose::ChangeEmail => RESET_TTL,
        };
        self.issue_link_for(batch, user, (purpose, redirect_to), ttl, now)
    }

    /// [`Self::issue_link`] with a lifetime of its own (an admin's invitation is a reset link
    /// that lives a week).
    pub(super) fn issue_link_for(
        &self,
        batch: &mut TenantBatch,
        user: &mut UserRecord,
        link: (LinkPurpose, Option<String>),
        ttl: Duration,
        now: OffsetDateTime,
    ) -> Result<String, TenantError> {
        self.issue_link_to(batch, user, link, (ttl, None), now)
    }

    /// [`Self::issue_link_for`] with the address an address-change link confirms.
    pub(super) fn issue_link_to(
        &self,
        batch: &mut TenantBatch,
        user: &mut UserRecord,
        (purpose, redirect_to): (LinkPurpose, Option<String>),
        (ttl, new_email): (Duration, Option<String>),
        now: OffsetDateTime,
    ) -> Result<String, TenantError> {
        let token = self.link_token();
        let hash = sha256(token.as_bytes());
        let slot = match purpose {
            LinkPurpose::VerifyEmail => &mut user.verify_token,
            LinkPurpose::ResetPassword => &mut user.reset_token,
            LinkPurpose::ChangeEmail => &mut user.change_token,
        };
        if let Some(old) = slot.take().and_then(|h| hex::decode(h).ok()) {
            batch.remove(Kind::LinkToken, &old);
        }
        *slot = Some(hex::encode(hash));
        batch.put(
            &hash,
            &LinkTokenRecord {
                purpose,
                user_id: user.id,
                expires_at: now + ttl,
                epoch: user.password_epoch,
                redirect_to,
                new_email,
            },
        )?;
        Ok(token)
    }

    /// The keys of the verification and reset links mailed for `user`: the user's slots hold
    /// the newest of each, and issuing one removes the one before.
    pub(super) fn link_keys(&self, user: &UserRecord) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for h in [&user.verify_token, &user.reset_token, &user.change_token]
            .into_iter()
            .flatten()
        {
            if let Ok(h) = hex::decode(h) {
                if self.store.get::<LinkTokenRecord>(&h)?.is_some() {
                    out.push((Kind::LinkToken, h));
                }
            }
        }
        Ok(out)
    }

    /// The record of a live link token of `purpose`, without consuming it (for the hosted
    /// page's first look); as [`Self::live_link`] otherwise.
    pub(super) fn peek_link(
        &self,
        batch: &mut TenantBatch,
        token: &str,
        purpose: LinkPurpose,
        now: OffsetDateTime,
    ) -> Result<Option<LinkTokenRecord>, TenantError> {
        Ok(self
            .live_link(batch, token, purpose, now)?
            .map(|(rec, _)| rec))
    }

    /// The live link token of `purpose` and its user, without consuming it. Unknown,
    /// expired, other-purpose and (for resets) stale-epoch tokens are all `None`; a dead token
    /// found on the way is staged for removal in `batch`.
    pub(super) fn live_link(
        &self,
        batch: &mut TenantBatch,
        token: &str,
        purpose: LinkPurpose,
        now: OffsetDateTime,
    ) -> Result<Option<(LinkTokenRecord, UserRecord)>, TenantError> {
        let hash = sha256(token.as_bytes());
        let Some(rec) = self.store.get::<LinkTokenRecord>(&hash)? else {
            return Ok(None);
        };
        if rec.purpose != purpose {
            return Ok(None);
        }
        let user = self.user(rec.user_id)?;
        // A password change kills reset links and pending address changes alike.
        let stale = |u: &UserRecord| {
            matches!(
                purpose,
                LinkPurpose::ResetPassword | LinkPurpose::ChangeEmail
            ) && rec.epoch != u.password_epoch
        };
        match user {
            Some(u) if rec.expires_at > now && !stale(&u) => Ok(Some((rec, u))),
            _ => {
                batch.remove(Kind::LinkToken, &hash);
                Ok(None)
            }
        }
    }

    /// Issues a new link of `purpose` for `user` and queues its mail (the verification or
    /// the reset mail) to `to`, into `fx`; the caller writes the user record.
    pub(super) fn send_link(
        &mut self,
        fx: &mut Effects,
        user: &mut UserRecord,
        (purpose, redirect_to): (LinkPurpose, Option<String>),
        to: &str,
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        let token = self.issue_link(&mut fx.batch, user, (purpose, redirect_to), now)?;
        let kind = match purpose {
            LinkPurpose::VerifyEmail => MailKind::VerifyEmail {
                link: self.link("verify-email", &token),
            },
            LinkPurpose::ResetPassword => MailKind::PasswordReset {
                link: self.link("reset-password", &token),
            },
            LinkPurpose::ChangeEmail => MailKind::EmailChange {
                link: self.link("confirm-email", &token),
            },
        };
        self.queue_mail(fx, to, kind)
    }

    /// The account a password checked off the actor opens: the credential's user, when the
    /// password was right and nothing changed since `login_begin` (the same password epoch and
    /// the same address).
    pub(super) fn proven_user(
        &self,
        email: &str,
        credential: &Credential,
        password_ok: bool,
    ) -> Result<Option<UserRecord>, TenantError> {
        let user = match credential.user_id {
            Some(id) => self.user(id)?,
            None => None,
        };
        Ok(user.filter(|u| {
            password_ok && u.password_epoch == credential.epoch && u.email.as_deref() == Some(email)
        }))
    }
}

#[cfg(test)]
pub(crate) mod tests;
