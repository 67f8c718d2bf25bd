//! Step-up re-authentication: the gate, its methods and the consumed token: the commands the tenant
//! actor takes for this flow, and how each is answered.

use uuid::Uuid;

use crate::tenant::ctx::TenantCtx;
use crate::tenant::step_up::memory::StepUp;
use crate::{
    reply::{finish, Outcome, TenantReply},
    tenant::{
        audit::AuditContext,
        messages::{Bearer, Credential, GateChallenge, StepUpGrant, StepUpUse},
    },
};

pub enum StepUpMsg {
    /// Step-up with the password, checked off the actor.
    StepUpPassword {
        bearer: Bearer,
        credential: Credential,
        password_ok: bool,
        latency_ms: i128,
        ctx: AuditContext,
        reply: TenantReply<StepUpGrant>,
    },
    /// Mails a step-up code (`link: false`) or link (`link: true`); answers the masked address.
    StepUpMailInitiate {
        bearer: Bearer,
        link: bool,
        action_hint: Option<String>,
        /// For a link: where the hosted page hands its token to the app.
        redirect_to: Option<String>,
        ctx: AuditContext,
        reply: TenantReply<String>,
    },
    StepUpEmailVerify {
        bearer: Bearer,
        otp: String,
        ctx: AuditContext,
        reply: TenantReply<StepUpGrant>,
    },
    StepUpLinkVerify {
        bearer: Bearer,
        token: String,
        ctx: AuditContext,
        reply: TenantReply<StepUpGrant>,
    },
    /// A gated request came without a step-up token.
    StepUpGate {
        bearer: Bearer,
        reply: TenantReply<GateChallenge>,
    },
    /// A gated request came with a (verified) step-up token: consume it.
    ConsumeStepUp {
        bearer: Bearer,
        jti: Uuid,
        reply: TenantReply<StepUpUse>,
    },
}

impl StepUp {
    /// Applies one command and answers it by its reply policy.
    pub(in crate::tenant) fn handle(&mut self, cx: &mut TenantCtx, msg: StepUpMsg) {
        match msg {
            StepUpMsg::StepUpPassword {
                bearer,
                credential,
                password_ok,
                latency_ms,
                ctx,
                reply,
            } => {
                let out =
                    self.step_up_password(cx, bearer, &credential, password_ok, latency_ms, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            StepUpMsg::StepUpMailInitiate {
                bearer,
                link,
                action_hint,
                redirect_to,
                ctx,
                reply,
            } => {
                let out = if link {
                    self.step_up_link_initiate(cx, bearer, action_hint, redirect_to, &ctx)
                } else {
                    self.step_up_email_initiate(cx, bearer, action_hint, &ctx)
                };
                finish(cx, reply, Outcome::with_mail(out));
            }
            StepUpMsg::StepUpEmailVerify {
                bearer,
                otp,
                ctx,
                reply,
            } => {
                let out = self.step_up_email_verify(cx, bearer, &otp, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            StepUpMsg::StepUpLinkVerify {
                bearer,
                token,
                ctx,
                reply,
            } => {
                let out = self.step_up_link_verify(cx, bearer, &token, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            StepUpMsg::StepUpGate { bearer, reply } => {
                let out = self.step_up_gate(cx, bearer);
                finish(cx, reply, Outcome::with_mail(out));
            }
            StepUpMsg::ConsumeStepUp { bearer, jti, reply } => {
                let out = self.consume_step_up(cx, bearer, jti);
                finish(cx, reply, Outcome::with_mail(out));
            }
        }
    }
}
