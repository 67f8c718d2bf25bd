//! Mailed sign-in: login links and e-mailed codes: the commands the tenant actor takes for this
//! flow, and how each is answered.

use std::net::IpAddr;

use ractor::RpcReplyPort;

use crate::{
    error::TenantError,
    reply::{finish, Outcome},
    tenant::{
        audit::AuditContext,
        messages::{HostedReturn, OAuthResume, PasswordlessLogin},
        state::TenantState,
    },
};

pub enum PasswordlessMsg {
    /// Mails a login link when the address has an account (one request per address a minute).
    MagicLinkRequest {
        email: String,
        oauth: Option<OAuthResume>,
        hosted: HostedReturn,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    MagicLinkVerify {
        token: String,
        /// Hex SHA-256 of the `resume_binding` sent, if any.
        binding_hash: Option<String>,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<PasswordlessLogin, TenantError>>,
    },
    /// Mails a login code when the address has an account, or (`create`) in any case.
    EmailOtpRequest {
        email: String,
        create: bool,
        oauth: Option<OAuthResume>,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    EmailOtpVerify {
        email: String,
        code: String,
        binding_hash: Option<String>,
        ip: IpAddr,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<PasswordlessLogin, TenantError>>,
    },
}

/// Applies one command and answers it by its reply policy.
pub(in crate::tenant) fn handle(state: &mut TenantState, msg: PasswordlessMsg) {
    match msg {
        PasswordlessMsg::MagicLinkRequest {
            email,
            oauth,
            hosted,
            reply,
        } => {
            let out = state.magic_link_request(&email, oauth, hosted);
            finish(state, reply, Outcome::alike(out));
        }
        PasswordlessMsg::MagicLinkVerify {
            token,
            binding_hash,
            ctx,
            reply,
        } => {
            let out = state.magic_link_verify(&token, binding_hash.as_deref(), &ctx);
            finish(state, reply, Outcome::with_mail(out));
        }
        PasswordlessMsg::EmailOtpRequest {
            email,
            create,
            oauth,
            ctx,
            reply,
        } => {
            let out = state.email_otp_request(&email, create, oauth, &ctx);
            finish(state, reply, Outcome::alike(out));
        }
        PasswordlessMsg::EmailOtpVerify {
            email,
            code,
            binding_hash,
            ip,
            ctx,
            reply,
        } => {
            let out = state.email_otp_verify(&email, &code, binding_hash.as_deref(), ip, &ctx);
            finish(state, reply, Outcome::with_mail(out));
        }
    }
}
