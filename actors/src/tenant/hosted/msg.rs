//! The hosted pages: a look at a mailed link, the sign-in page, and the code exchange: the commands
//! the tenant actor takes for this flow, and how each is answered.

use ractor::RpcReplyPort;

use crate::{
    error::TenantError,
    reply::{finish, Outcome},
    tenant::{
        audit::AuditContext,
        messages::{HostedLink, HostedView, PasswordlessLogin, SignInView},
        state::TenantState,
    },
};

pub enum HostedMsg {
    /// A hosted page's look at a mailed link (nothing is used).
    HostedPeek {
        link: HostedLink,
        token: String,
        reply: RpcReplyPort<Result<HostedView, TenantError>>,
    },
    /// What the hosted sign-in page of the authorization server offers (nothing is used).
    SignInView {
        reply: RpcReplyPort<Result<SignInView, TenantError>>,
    },
    /// The hosted login-link page's button: answers the code and where to send it.
    HostedMagicLink {
        token: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(String, String), TenantError>>,
    },
    /// `POST /v1/auth/token/exchange`: a hosted page's code and its PKCE verifier.
    ExchangeCode {
        code: String,
        code_verifier: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<PasswordlessLogin, TenantError>>,
    },
}

/// Applies one command and answers it by its reply policy.
pub(in crate::tenant) fn handle(state: &mut TenantState, msg: HostedMsg) {
    match msg {
        HostedMsg::HostedPeek { link, token, reply } => {
            let out = state.hosted_peek(link, &token);
            finish(state, reply, Outcome::now(out));
        }
        HostedMsg::SignInView { reply } => {
            let out = Ok(state.sign_in_view());
            finish(state, reply, Outcome::now(out));
        }
        HostedMsg::HostedMagicLink { token, ctx, reply } => {
            let out = state.hosted_magic_link(&token, &ctx);
            finish(state, reply, Outcome::now(out));
        }
        HostedMsg::ExchangeCode {
            code,
            code_verifier,
            ctx,
            reply,
        } => {
            let out = state.exchange_code(&code, &code_verifier, &ctx);
            finish(state, reply, Outcome::with_mail(out));
        }
    }
}
