//! Registration, e-mail verification, password sign-in and the password itself: the commands the
//! tenant actor takes for this flow, and how each is answered.

use std::net::IpAddr;

use crate::tenant::accounts::memory::Accounts;
use crate::tenant::ctx::TenantCtx;
use crate::{
    reply::{finish, Outcome, TenantReply},
    tenant::{
        audit::AuditContext,
        messages::{Bearer, Credential, LoginAttempt, PasswordSignIn, Registration, User},
    },
};

pub enum AccountsMsg {
    /// Counts a registration attempt from `ip` (5 a minute): answers `RateLimited` over it.
    RegisterAdmit { ip: IpAddr, reply: TenantReply<()> },
    /// Counts a reset link asked for on the hosted sign-in page from `ip` (20 an hour):
    /// answers `RateLimited` over it.
    ResetAdmit { ip: IpAddr, reply: TenantReply<()> },
    /// Registers, or (for an existing or policy-blocked address) answers a look-alike.
    Register {
        registration: Registration,
        ctx: AuditContext,
        reply: TenantReply<User>,
    },
    VerifyEmail {
        token: String,
        ctx: AuditContext,
        reply: TenantReply<()>,
    },
    /// Sends a new verification link when the address has an unverified account.
    ResendVerification {
        email: String,
        redirect_to: Option<String>,
        reply: TenantReply<()>,
    },
    /// Checks the sign-in rules, then answers the credential to verify.
    LoginBegin {
        attempt: LoginAttempt,
        reply: TenantReply<Credential>,
    },
    /// Records the verification's result; on success opens a session.
    LoginFinish {
        attempt: LoginAttempt,
        credential: Credential,
        password_ok: bool,
        ctx: AuditContext,
        reply: TenantReply<PasswordSignIn>,
    },
    /// Sends a reset link when the address has an account.
    ForgotPassword {
        email: String,
        redirect_to: Option<String>,
        reply: TenantReply<()>,
    },
    /// Whether a reset link is alive, before the new password is hashed.
    CheckResetLink {
        token: String,
        reply: TenantReply<()>,
    },
    ResetPassword {
        token: String,
        password_hash: String,
        ctx: AuditContext,
        reply: TenantReply<()>,
    },
    /// The signed-in user's password hash, to check the current password off the actor.
    PasswordCredential {
        bearer: Bearer,
        reply: TenantReply<Credential>,
    },
    ChangePassword {
        bearer: Bearer,
        credential: Credential,
        current_ok: bool,
        new_hash: String,
        ctx: AuditContext,
        reply: TenantReply<()>,
    },
    /// Asks to move the signed-in user's account to `new_email` (normalised): answered
    /// alike whether the address is free, taken or refused by the tenant's policy.
    ChangeEmail {
        bearer: Bearer,
        new_email: String,
        ctx: AuditContext,
        reply: TenantReply<()>,
    },
    /// Moves the account to the address its change link was mailed to.
    ConfirmEmailChange {
        token: String,
        ctx: AuditContext,
        reply: TenantReply<()>,
    },
}

impl Accounts {
    /// Applies one command and answers it by its reply policy.
    pub(in crate::tenant) fn handle(&mut self, cx: &mut TenantCtx, msg: AccountsMsg) {
        match msg {
            AccountsMsg::RegisterAdmit { ip, reply } => {
                let out = self.register_admit(ip);
                finish(cx, reply, Outcome::now(out));
            }
            AccountsMsg::ResetAdmit { ip, reply } => {
                let out = self.reset_admit(ip);
                finish(cx, reply, Outcome::now(out));
            }
            AccountsMsg::Register {
                registration,
                ctx,
                reply,
            } => {
                let out = self.register(cx, registration, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            AccountsMsg::VerifyEmail { token, ctx, reply } => {
                let out = self.verify_email(cx, &token, &ctx).map(|m| ((), m));
                finish(cx, reply, Outcome::with_mail(out));
            }
            AccountsMsg::ResendVerification {
                email,
                redirect_to,
                reply,
            } => {
                let out = self.resend_verification(cx, &email, redirect_to);
                finish(cx, reply, Outcome::alike(out));
            }
            AccountsMsg::LoginBegin { attempt, reply } => {
                let out = self.login_begin(cx, &attempt);
                finish(cx, reply, Outcome::now(out));
            }
            AccountsMsg::LoginFinish {
                attempt,
                credential,
                password_ok,
                ctx,
                reply,
            } => {
                let out = self.login_finish(cx, &attempt, &credential, password_ok, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            AccountsMsg::ForgotPassword {
                email,
                redirect_to,
                reply,
            } => {
                let out = self.forgot_password(cx, &email, redirect_to);
                finish(cx, reply, Outcome::alike(out));
            }
            AccountsMsg::CheckResetLink { token, reply } => {
                let out = self.check_reset_link(cx, &token);
                finish(cx, reply, Outcome::now(out));
            }
            AccountsMsg::ResetPassword {
                token,
                password_hash,
                ctx,
                reply,
            } => {
                let out = self
                    .reset_password(cx, &token, password_hash, &ctx)
                    .map(|m| ((), m));
                finish(cx, reply, Outcome::with_mail(out));
            }
            AccountsMsg::PasswordCredential { bearer, reply } => {
                let out = self.password_credential(cx, bearer);
                finish(cx, reply, Outcome::now(out));
            }
            AccountsMsg::ChangePassword {
                bearer,
                credential,
                current_ok,
                new_hash,
                ctx,
                reply,
            } => {
                let out = self
                    .change_password(cx, bearer, &credential, current_ok, new_hash, &ctx)
                    .map(|m| ((), m));
                finish(cx, reply, Outcome::with_mail(out));
            }
            AccountsMsg::ChangeEmail {
                bearer,
                new_email,
                ctx,
                reply,
            } => {
                let out = self.change_email_begin(cx, bearer, &new_email, &ctx);
                finish(cx, reply, Outcome::alike(out));
            }
            AccountsMsg::ConfirmEmailChange { token, ctx, reply } => {
                let out = self.change_email_confirm(cx, &token, &ctx).map(|m| ((), m));
                finish(cx, reply, Outcome::with_mail(out));
            }
        }
    }
}
