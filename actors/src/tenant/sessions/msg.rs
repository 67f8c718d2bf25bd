//! Sessions: refresh, the access check, sign-out and the session list: the commands the tenant
//! actor takes for this flow, and how each is answered.

use uuid::Uuid;

use crate::tenant::ctx::TenantCtx;
use crate::tenant::sessions::Sessions;
use crate::{
    reply::{finish, Outcome, TenantReply},
    tenant::{
        audit::AuditContext,
        messages::{Bearer, Grant, SessionView, User},
    },
};

pub enum SessionsMsg {
    /// Rotates a refresh token (single use, with a short grace for concurrent retries).
    Refresh {
        token: String,
        ctx: AuditContext,
        reply: TenantReply<Grant>,
    },
    /// The user behind a verified access token, if its session is still alive.
    Authenticate {
        bearer: Bearer,
        reply: TenantReply<User>,
    },
    Logout {
        bearer: Bearer,
        global: bool,
        ctx: AuditContext,
        reply: TenantReply<()>,
    },
    ListSessions {
        bearer: Bearer,
        reply: TenantReply<Vec<SessionView>>,
    },
    RevokeSession {
        bearer: Bearer,
        session_id: Uuid,
        ctx: AuditContext,
        reply: TenantReply<()>,
    },
}

impl Sessions {
    /// Applies one command and answers it by its reply policy.
    pub(in crate::tenant) fn handle(&mut self, cx: &mut TenantCtx, msg: SessionsMsg) {
        match msg {
            SessionsMsg::Refresh { token, ctx, reply } => {
                let out = self.refresh(cx, &token, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            SessionsMsg::Authenticate { bearer, reply } => {
                let out = self.authenticate(cx, bearer);
                finish(cx, reply, Outcome::now(out));
            }
            SessionsMsg::Logout {
                bearer,
                global,
                ctx,
                reply,
            } => {
                let out = self.logout(cx, bearer, global, &ctx).map(|m| ((), m));
                finish(cx, reply, Outcome::with_mail(out));
            }
            SessionsMsg::ListSessions { bearer, reply } => {
                let out = self.list_sessions(cx, bearer);
                finish(cx, reply, Outcome::now(out));
            }
            SessionsMsg::RevokeSession {
                bearer,
                session_id,
                ctx,
                reply,
            } => {
                let out = self
                    .revoke_session(cx, bearer, session_id, &ctx)
                    .map(|m| ((), m));
                finish(cx, reply, Outcome::with_mail(out));
            }
        }
    }
}
