//! Registration, e-mail verification, password sign-in and the password itself: the commands the
//! tenant actor takes for this flow, and how each is answered.

use std::net::IpAddr;

use ractor::RpcReplyPort;

use crate::{
    error::TenantError,
    reply::{finish, Outcome},
    tenant::{
        audit::AuditContext,
        messages::{Bearer, Credential, LoginAttempt, PasswordSignIn, Registration, UserView},
        state::TenantState,
    },
};

pub enum AccountsMsg {
    /// Counts a registration attempt from `ip` (5 a minute): answers `RateLimited` over it.
    RegisterAdmit {
        ip: IpAddr,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Registers, or (for an existing or policy-blocked address) answers a look-alike.
    Register {
        registration: Registration,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<UserView, TenantError>>,
    },
    VerifyEmail {
        token: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Sends a new verification link when the address has an unverified account.
    ResendVerification {
        email: String,
        redirect_to: Option<String>,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Checks the sign-in rules, then answers the credential to verify.
    LoginBegin {
        attempt: LoginAttempt,
        reply: RpcReplyPort<Result<Credential, TenantError>>,
    },
    /// Records the verification's result; on success opens a session.
    LoginFinish {
        attempt: LoginAttempt,
        credential: Credential,
        password_ok: bool,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<PasswordSignIn, TenantError>>,
    },
    /// Sends a reset link when the address has an account.
    ForgotPassword {
        email: String,
        redirect_to: Option<String>,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Whether a reset link is alive, before the new password is hashed.
    CheckResetLink {
        token: String,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    ResetPassword {
        token: String,
        password_hash: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// The signed-in user's password hash, to check the current password off the actor.
    PasswordCredential {
        bearer: Bearer,
        reply: RpcReplyPort<Result<Credential, TenantError>>,
    },
    ChangePassword {
        bearer: Bearer,
        credential: Credential,
        current_ok: bool,
        new_hash: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
}

/// Applies one command and answers it by its reply policy.
pub(in crate::tenant) fn handle(state: &mut TenantState, msg: AccountsMsg) {
    match msg {
        AccountsMsg::RegisterAdmit { ip, reply } => {
            let out = state.register_admit(ip);
            finish(state, reply, Outcome::now(out));
        }
        AccountsMsg::Register {
            registration,
            ctx,
            reply,
        } => {
            let out = state.register(registration, &ctx);
            finish(state, reply, Outcome::with_mail(out));
        }
        AccountsMsg::VerifyEmail { token, ctx, reply } => {
            let out = state.verify_email(&token, &ctx).map(|m| ((), m));
            finish(state, reply, Outcome::with_mail(out));
        }
        AccountsMsg::ResendVerification {
            email,
            redirect_to,
            reply,
        } => {
            let out = state.resend_verification(&email, redirect_to);
            finish(state, reply, Outcome::alike(out));
        }
        AccountsMsg::LoginBegin { attempt, reply } => {
            let out = state.login_begin(&attempt);
            finish(state, reply, Outcome::now(out));
        }
        AccountsMsg::LoginFinish {
            attempt,
            credential,
            password_ok,
            ctx,
            reply,
        } => {
            let out = state.login_finish(&attempt, &credential, password_ok, &ctx);
            finish(state, reply, Outcome::with_mail(out));
        }
        AccountsMsg::ForgotPassword {
            email,
            redirect_to,
            reply,
        } => {
            let out = state.forgot_password(&email, redirect_to);
            finish(state, reply, Outcome::alike(out));
        }
        AccountsMsg::CheckResetLink { token, reply } => {
            let out = state.check_reset_link(&token);
            finish(state, reply, Outcome::now(out));
        }
        AccountsMsg::ResetPassword {
            token,
            password_hash,
            ctx,
            reply,
        } => {
            let out = state
                .reset_password(&token, password_hash, &ctx)
                .map(|m| ((), m));
            finish(state, reply, Outcome::with_mail(out));
        }
        AccountsMsg::PasswordCredential { bearer, reply } => {
            let out = state.password_credential(bearer);
            finish(state, reply, Outcome::now(out));
        }
        AccountsMsg::ChangePassword {
            bearer,
            credential,
            current_ok,
            new_hash,
            ctx,
            reply,
        } => {
            let out = state
                .change_password(bearer, &credential, current_ok, new_hash, &ctx)
                .map(|m| ((), m));
            finish(state, reply, Outcome::with_mail(out));
        }
    }
}
