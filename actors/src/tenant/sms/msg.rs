//! Text messages: sign-in codes, phone confirmation and the dashboard's test message: the commands
//! the tenant actor takes for this flow, and how each is answered.

use std::net::IpAddr;

use crate::tenant::ctx::TenantCtx;
use crate::tenant::sms::memory::Sms;
use crate::{
    reply::{finish, Outcome, TenantReply},
    tenant::{
        audit::AuditContext,
        messages::{Bearer, OAuthResume, PasswordlessLogin, Phone, User},
    },
};

pub enum SmsMsg {
    /// Texts a login code (answered at once, like every passwordless request).
    SmsOtpRequest {
        phone: Phone,
        create: bool,
        oauth: Option<OAuthResume>,
        ip: IpAddr,
        reply: TenantReply<()>,
    },
    SmsOtpVerify {
        /// E.164.
        phone: String,
        code: String,
        binding_hash: Option<String>,
        ip: IpAddr,
        ctx: AuditContext,
        reply: TenantReply<PasswordlessLogin>,
    },
    /// Texts a code confirming a signed-in user's number.
    PhoneVerifyRequest {
        bearer: Bearer,
        phone: Phone,
        ip: IpAddr,
        ctx: AuditContext,
        reply: TenantReply<()>,
    },
    PhoneConfirm {
        bearer: Bearer,
        /// E.164.
        phone: String,
        code: String,
        ctx: AuditContext,
        reply: TenantReply<User>,
    },
    /// Checks and counts the dashboard's test message, and answers it for the caller to send.
    SmsTest {
        phone: Phone,
        ctx: AuditContext,
        reply: TenantReply<crate::outbound::SmsJob>,
    },
}

impl Sms {
    /// Applies one command and answers it by its reply policy.
    pub(in crate::tenant) fn handle(&mut self, cx: &mut TenantCtx, msg: SmsMsg) {
        match msg {
            SmsMsg::SmsOtpRequest {
                phone,
                create,
                oauth,
                ip,
                reply,
            } => {
                // Answered at once, after as much work whether or not anything is sent (a decoy is
                // written for a number without a user): see `Timing::Alike`.
                let outcome = match self.sms_otp_request(cx, &phone, create, oauth, ip) {
                    Ok(job) => Outcome::alike(Ok(Vec::new())).texting(job),
                    Err(e) => Outcome::now(Err(e)),
                };
                finish(cx, reply, outcome);
            }
            SmsMsg::SmsOtpVerify {
                phone,
                code,
                binding_hash,
                ip,
                ctx,
                reply,
            } => {
                let out = self.sms_otp_verify(cx, &phone, &code, binding_hash.as_deref(), ip, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            SmsMsg::PhoneVerifyRequest {
                bearer,
                phone,
                ip,
                ctx,
                reply,
            } => {
                let outcome = match self.phone_verify_request(cx, bearer, &phone, ip, &ctx) {
                    Ok(job) => Outcome::durable_success(Ok(())).texting(Some(job)),
                    Err(e) => Outcome::now(Err(e)),
                };
                finish(cx, reply, outcome);
            }
            SmsMsg::PhoneConfirm {
                bearer,
                phone,
                code,
                ctx,
                reply,
            } => {
                let out = self.phone_confirm(cx, bearer, &phone, &code, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            SmsMsg::SmsTest { phone, ctx, reply } => {
                let out = self.sms_test(cx, &phone, &ctx);
                finish(cx, reply, Outcome::durable_success(out));
            }
        }
    }
}
