//! Mailed sign-in: login links and e-mailed codes: the commands the tenant actor takes for this
//! flow, and how each is answered.

use std::net::IpAddr;

use crate::tenant::ctx::TenantCtx;
use crate::tenant::passwordless::Passwordless;
use crate::{
    reply::{finish, Outcome, TenantReply},
    tenant::{
        audit::AuditContext,
        messages::{HostedReturn, OAuthResume, PasswordlessLogin},
    },
};

pub enum PasswordlessMsg {
    /// Mails a login link when the address has an account (one request per address a minute).
    MagicLinkRequest {
        email: String,
        oauth: Option<OAuthResume>,
        hosted: HostedReturn,
        reply: TenantReply<()>,
    },
    MagicLinkVerify {
        token: String,
        /// Hex SHA-256 of the `resume_binding` sent, if any.
        binding_hash: Option<String>,
        ctx: AuditContext,
        reply: TenantReply<PasswordlessLogin>,
    },
    /// Mails a login code when the address has an account, or (`create`) in any case.
    EmailOtpRequest {
        email: String,
        create: bool,
        oauth: Option<OAuthResume>,
        ctx: AuditContext,
        reply: TenantReply<()>,
    },
    EmailOtpVerify {
        email: String,
        code: String,
        binding_hash: Option<String>,
        ip: IpAddr,
        ctx: AuditContext,
        reply: TenantReply<PasswordlessLogin>,
    },
}

impl Passwordless {
    /// Applies one command and answers it by its reply policy.
    pub(in crate::tenant) fn handle(&mut self, cx: &mut TenantCtx, msg: PasswordlessMsg) {
        match msg {
            PasswordlessMsg::MagicLinkRequest {
                email,
                oauth,
                hosted,
                reply,
            } => {
                let out = self.magic_link_request(cx, &email, oauth, hosted);
                finish(cx, reply, Outcome::alike(out));
            }
            PasswordlessMsg::MagicLinkVerify {
                token,
                binding_hash,
                ctx,
                reply,
            } => {
                let out = self.magic_link_verify(cx, &token, binding_hash.as_deref(), &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            PasswordlessMsg::EmailOtpRequest {
                email,
                create,
                oauth,
                ctx,
                reply,
            } => {
                let out = self.email_otp_request(cx, &email, create, oauth, &ctx);
                finish(cx, reply, Outcome::alike(out));
            }
            PasswordlessMsg::EmailOtpVerify {
                email,
                code,
                binding_hash,
                ip,
                ctx,
                reply,
            } => {
                let out =
                    self.email_otp_verify(cx, &email, &code, binding_hash.as_deref(), ip, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
        }
    }
}
