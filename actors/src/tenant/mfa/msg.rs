//! TOTP and recovery codes: setup, challenges, disabling and new codes: the commands the tenant
//! actor takes for this flow, and how each is answered.

use crate::tenant::ctx::TenantCtx;
use crate::tenant::mfa::Mfa;
use crate::{
    reply::{finish, Outcome, TenantReply},
    tenant::{
        audit::AuditContext,
        messages::{Bearer, MfaManage, MfaSecret, MfaVerified, MfaWho},
    },
};

pub enum MfaMsg {
    /// Starts TOTP setup: a new pending seed.
    MfaSetup {
        who: MfaWho,
        reply: TenantReply<MfaSecret>,
    },
    /// Confirms the pending seed; answers the recovery codes.
    MfaVerifySetup {
        who: MfaWho,
        code: String,
        ctx: AuditContext,
        reply: TenantReply<Vec<String>>,
    },
    /// Answers an MFA login challenge or the gate's TOTP step-up challenge.
    MfaVerify {
        challenge: String,
        code: String,
        bearer: Option<Bearer>,
        ctx: AuditContext,
        reply: TenantReply<MfaVerified>,
    },
    /// Turns MFA off.
    MfaDisable {
        manage: MfaManage,
        ctx: AuditContext,
        reply: TenantReply<()>,
    },
    /// Replaces the recovery codes; answers the new ones.
    MfaRegenerateCodes {
        manage: MfaManage,
        ctx: AuditContext,
        reply: TenantReply<Vec<String>>,
    },
}

impl Mfa {
    /// Applies one command and answers it by its reply policy.
    pub(in crate::tenant) fn handle(&mut self, cx: &mut TenantCtx, msg: MfaMsg) {
        match msg {
            MfaMsg::MfaSetup { who, reply } => {
                let out = self.mfa_setup(cx, &who);
                finish(cx, reply, Outcome::durable_success(out));
            }
            MfaMsg::MfaVerifySetup {
                who,
                code,
                ctx,
                reply,
            } => {
                let out = self.mfa_verify_setup(cx, &who, &code, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            MfaMsg::MfaVerify {
                challenge,
                code,
                bearer,
                ctx,
                reply,
            } => {
                let out = self.mfa_verify(cx, &challenge, &code, bearer, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            MfaMsg::MfaDisable { manage, ctx, reply } => {
                let out = self.mfa_disable(cx, &manage, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            MfaMsg::MfaRegenerateCodes { manage, ctx, reply } => {
                let out = self.mfa_regenerate(cx, &manage, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
        }
    }
}
