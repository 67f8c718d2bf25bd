//! Passkeys: registration, sign-in, step-up, the list and the relying-party domain: the commands
//! the tenant actor takes for this flow, and how each is answered.

use std::net::IpAddr;

use uuid::Uuid;

use crate::tenant::ctx::TenantCtx;
use crate::tenant::passkeys::memory::Passkeys;
use crate::{
    reply::{finish, Outcome, TenantReply},
    tenant::{
        audit::AuditContext,
        messages::{Bearer, LoginOutcome, PasskeyView, SettingsView, StepUpGrant},
    },
};

pub enum PasskeysMsg {
    /// Starts a passkey registration for the signed-in user (step-up already passed):
    /// answers the `publicKey` creation options.
    PasskeyRegisterBegin {
        bearer: Bearer,
        reply: TenantReply<serde_json::Value>,
    },
    /// Finishes a registration of the caller's session with the browser's credential.
    PasskeyRegisterFinish {
        bearer: Bearer,
        response: serde_json::Value,
        nickname: Option<String>,
        ctx: AuditContext,
        reply: TenantReply<PasskeyView>,
    },
    /// Starts a passkey sign-in: for one user (`user_handle`) or any discoverable one.
    PasskeyAssertBegin {
        user_handle: Option<String>,
        ip: IpAddr,
        reply: TenantReply<serde_json::Value>,
    },
    /// Takes the ceremony of a sign-in's assertion and finds its passkey: the signature is
    /// then checked off the actor.
    PasskeyAssertTake {
        response: serde_json::Value,
        ip: IpAddr,
        ctx: AuditContext,
        reply: TenantReply<crate::tenant::passkeys::PasskeyCheck>,
    },
    /// Finishes a passkey sign-in with the verdict on its signature.
    PasskeyAssertFinish {
        passkey: crate::tenant::passkeys::CheckedPasskey,
        verdict: crate::tenant::passkeys::AssertionVerdict,
        ip: IpAddr,
        ctx: AuditContext,
        reply: TenantReply<LoginOutcome>,
    },
    /// The step-up options: the caller's passkeys, user verification required.
    PasskeyStepUpOptions {
        bearer: Bearer,
        ctx: AuditContext,
        reply: TenantReply<serde_json::Value>,
    },
    /// A passkey step-up, first half: takes the options of the caller's session that the
    /// assertion names; the signature is then checked off the actor.
    PasskeyStepUpTake {
        bearer: Bearer,
        assertion: serde_json::Value,
        ctx: AuditContext,
        reply: TenantReply<crate::tenant::passkeys::PasskeyCheck>,
    },
    /// A passkey step-up, second half: the verdict on the signature.
    PasskeyStepUpFinish {
        bearer: Bearer,
        passkey: crate::tenant::passkeys::CheckedPasskey,
        verdict: crate::tenant::passkeys::AssertionVerdict,
        ctx: AuditContext,
        reply: TenantReply<StepUpGrant>,
    },
    /// The caller's passkeys.
    PasskeyList {
        bearer: Bearer,
        reply: TenantReply<Vec<PasskeyView>>,
    },
    /// Renames one of the caller's passkeys (step-up already passed).
    PasskeyRename {
        bearer: Bearer,
        id: Uuid,
        nickname: String,
        ctx: AuditContext,
        reply: TenantReply<PasskeyView>,
    },
    /// Deletes one of the caller's passkeys (step-up already passed).
    PasskeyDelete {
        bearer: Bearer,
        id: Uuid,
        ctx: AuditContext,
        reply: TenantReply<()>,
    },
    /// Changes the relying-party id and the extra origins; a change that strands users'
    /// passkeys needs `confirmed`.
    PasskeyDomain {
        rp_id: Option<Option<String>>,
        origins: Option<Vec<String>>,
        confirmed: bool,
        ctx: AuditContext,
        reply: TenantReply<SettingsView>,
    },
}

impl Passkeys {
    /// Applies one command and answers it by its reply policy.
    pub(in crate::tenant) fn handle(&mut self, cx: &mut TenantCtx, msg: PasskeysMsg) {
        match msg {
            PasskeysMsg::PasskeyRegisterBegin { bearer, reply } => {
                let out = self.passkey_register_begin(cx, bearer);
                finish(cx, reply, Outcome::now(out));
            }
            PasskeysMsg::PasskeyRegisterFinish {
                bearer,
                response,
                nickname,
                ctx,
                reply,
            } => {
                let out = self.passkey_register_finish(cx, bearer, response, nickname, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            PasskeysMsg::PasskeyAssertBegin {
                user_handle,
                ip,
                reply,
            } => {
                let out = self.passkey_assert_begin(cx, user_handle.as_deref(), ip);
                finish(cx, reply, Outcome::now(out));
            }
            PasskeysMsg::PasskeyAssertTake {
                response,
                ip,
                ctx,
                reply,
            } => {
                // Nothing written for a check: it goes straight back; a refusal counted a failure.
                let out = self.passkey_assert_take(cx, response, ip, &ctx);
                finish(cx, reply, Outcome::durable_refusal(out));
            }
            PasskeysMsg::PasskeyAssertFinish {
                passkey,
                verdict,
                ip,
                ctx,
                reply,
            } => {
                let out = self.passkey_assert_finish(cx, (passkey, verdict), ip, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            PasskeysMsg::PasskeyStepUpOptions { bearer, ctx, reply } => {
                let out = self.passkey_step_up_options(cx, bearer, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            PasskeysMsg::PasskeyStepUpTake {
                bearer,
                assertion,
                ctx,
                reply,
            } => {
                // Nothing written for a check: it goes straight back; a refusal counted a failure.
                let out = self.passkey_step_up_take(cx, bearer, assertion, &ctx);
                finish(cx, reply, Outcome::durable_refusal(out));
            }
            PasskeysMsg::PasskeyStepUpFinish {
                bearer,
                passkey,
                verdict,
                ctx,
                reply,
            } => {
                let out = self.passkey_step_up_finish(cx, bearer, (passkey, verdict), &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            PasskeysMsg::PasskeyList { bearer, reply } => {
                let out = self.passkey_list(cx, bearer);
                finish(cx, reply, Outcome::now(out));
            }
            PasskeysMsg::PasskeyRename {
                bearer,
                id,
                nickname,
                ctx,
                reply,
            } => {
                let out = self.passkey_rename(cx, bearer, id, nickname, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            PasskeysMsg::PasskeyDelete {
                bearer,
                id,
                ctx,
                reply,
            } => {
                let out = self.passkey_delete(cx, bearer, id, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            PasskeysMsg::PasskeyDomain {
                rp_id,
                origins,
                confirmed,
                ctx,
                reply,
            } => {
                let out = self.passkey_domain(cx, rp_id, origins, confirmed, &ctx);
                finish(cx, reply, Outcome::durable_success(out));
            }
        }
    }
}
