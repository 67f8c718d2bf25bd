//! Sessions: refresh, the access check, sign-out and the session list: the commands the tenant
//! actor takes for this flow, and how each is answered.

use ractor::RpcReplyPort;
use uuid::Uuid;

use crate::{
    error::TenantError,
    reply::{finish, Outcome},
    tenant::{
        audit::AuditContext,
        messages::{Bearer, Grant, SessionView, UserView},
        state::TenantState,
    },
};

pub enum SessionsMsg {
    /// Rotates a refresh token (single use, with a short grace for concurrent retries).
    Refresh {
        token: String,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<Grant, TenantError>>,
    },
    /// The user behind a verified access token, if its session is still alive.
    Authenticate {
        bearer: Bearer,
        reply: RpcReplyPort<Result<UserView, TenantError>>,
    },
    Logout {
        bearer: Bearer,
        global: bool,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    ListSessions {
        bearer: Bearer,
        reply: RpcReplyPort<Result<Vec<SessionView>, TenantError>>,
    },
    RevokeSession {
        bearer: Bearer,
        session_id: Uuid,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
}

/// Applies one command and answers it by its reply policy.
pub(in crate::tenant) fn handle(state: &mut TenantState, msg: SessionsMsg) {
    match msg {
        SessionsMsg::Refresh { token, ctx, reply } => {
            let out = state.refresh(&token, &ctx);
            finish(state, reply, Outcome::with_mail(out));
        }
        SessionsMsg::Authenticate { bearer, reply } => {
            let out = state.authenticate(bearer);
            finish(state, reply, Outcome::now(out));
        }
        SessionsMsg::Logout {
            bearer,
            global,
            ctx,
            reply,
        } => {
            let out = state.logout(bearer, global, &ctx).map(|m| ((), m));
            finish(state, reply, Outcome::with_mail(out));
        }
        SessionsMsg::ListSessions { bearer, reply } => {
            let out = state.list_sessions(bearer);
            finish(state, reply, Outcome::now(out));
        }
        SessionsMsg::RevokeSession {
            bearer,
            session_id,
            ctx,
            reply,
        } => {
            let out = state
                .revoke_session(bearer, session_id, &ctx)
                .map(|m| ((), m));
            finish(state, reply, Outcome::with_mail(out));
        }
    }
}
