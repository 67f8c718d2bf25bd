//! The hosted pages: a look at a mailed link, the sign-in page, and the code exchange: the commands
//! the tenant actor takes for this flow, and how each is answered.

use crate::tenant::ctx::TenantCtx;
use crate::tenant::hosted::Hosted;
use crate::{
    reply::{finish, Outcome, TenantReply},
    tenant::{
        audit::AuditContext,
        messages::{HostedLink, HostedView, PasswordlessLogin, SignInView},
    },
};

pub enum HostedMsg {
    /// A hosted page's look at a mailed link (nothing is used).
    HostedPeek {
        link: HostedLink,
        token: String,
        reply: TenantReply<HostedView>,
    },
    /// What the hosted sign-in page of the authorization server offers (nothing is used).
    SignInView { reply: TenantReply<SignInView> },
    /// The hosted login-link page's button: answers the code and where to send it.
    HostedMagicLink {
        token: String,
        ctx: AuditContext,
        reply: TenantReply<(String, String)>,
    },
    /// `POST /v1/auth/token/exchange`: a hosted page's code and its PKCE verifier.
    ExchangeCode {
        code: String,
        code_verifier: String,
        ctx: AuditContext,
        reply: TenantReply<PasswordlessLogin>,
    },
}

impl Hosted {
    /// Applies one command and answers it by its reply policy.
    pub(in crate::tenant) fn handle(&mut self, cx: &mut TenantCtx, msg: HostedMsg) {
        match msg {
            HostedMsg::HostedPeek { link, token, reply } => {
                let out = self.hosted_peek(cx, link, &token);
                finish(cx, reply, Outcome::now(out));
            }
            HostedMsg::SignInView { reply } => {
                let out = Ok(self.sign_in_view(cx));
                finish(cx, reply, Outcome::now(out));
            }
            HostedMsg::HostedMagicLink { token, ctx, reply } => {
                let out = self.hosted_magic_link(cx, &token, &ctx);
                finish(cx, reply, Outcome::now(out));
            }
            HostedMsg::ExchangeCode {
                code,
                code_verifier,
                ctx,
                reply,
            } => {
                let out = self.exchange_code(cx, &code, &code_verifier, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
        }
    }
}
