//! User management (dashboard, management keys, admin CLI) and the user's own data: the commands
//! the tenant actor takes for this flow, and how each is answered.

use uuid::Uuid;

use crate::tenant::ctx::TenantCtx;
use crate::tenant::users::Users;
use crate::{
    reply::{finish, Outcome, TenantReply},
    tenant::{
        audit::AuditContext,
        messages::{
            Bearer, HeldCredential, ImportOutcome, ImportedUser, NewUser, TenantActivity, Trace,
            UserAction, UserDetail, UserPage, UserPatch, UserQuery,
        },
    },
};

pub enum UsersMsg {
    /// Writes users that come with an Argon2id hash (`admin user import`), in one batch.
    ImportUsers {
        users: Vec<ImportedUser>,
        ctx: AuditContext,
        reply: TenantReply<ImportOutcome>,
    },
    /// A page of the users list.
    ListUsers {
        query: UserQuery,
        reply: TenantReply<UserPage>,
    },
    GetUser {
        id: Uuid,
        reply: TenantReply<UserDetail>,
    },
    CreateUser {
        user: NewUser,
        ctx: AuditContext,
        reply: TenantReply<UserDetail>,
    },
    UpdateUser {
        id: Uuid,
        patch: UserPatch,
        ctx: AuditContext,
        reply: TenantReply<UserDetail>,
    },
    ActOnUser {
        id: Uuid,
        action: UserAction,
        ctx: AuditContext,
        reply: TenantReply<UserDetail>,
    },
    /// Erases a user and everything keyed to them (an admin's request).
    DeleteUser {
        id: Uuid,
        ctx: AuditContext,
        reply: TenantReply<()>,
    },
    /// Everything held about the caller (GDPR art. 15 and 20).
    ExportMe {
        bearer: Bearer,
        reply: TenantReply<serde_json::Value>,
    },
    /// Erases the caller (GDPR art. 17), when the tenant allows it.
    DeleteMe {
        bearer: Bearer,
        ctx: AuditContext,
        reply: TenantReply<()>,
    },
    /// Every record of the tenant whose key or plain value holds one of `needles` (an
    /// operator's check that an erasure left nothing behind).
    UserTraces {
        needles: Vec<Vec<u8>>,
        reply: TenantReply<Vec<Trace>>,
    },
    /// This month's active users and the last `days` days' sign-ins (the overview).
    Activity {
        days: u32,
        reply: TenantReply<TenantActivity>,
    },
    /// What a user holds of each kind of credential, as stored (the kinds with something):
    /// the operator's check that a recovery or an erasure left the holder nothing.
    UserCredentials {
        id: uuid::Uuid,
        reply: TenantReply<Vec<HeldCredential>>,
    },
}

impl Users {
    /// Applies one command and answers it by its reply policy.
    pub(in crate::tenant) fn handle(&mut self, cx: &mut TenantCtx, msg: UsersMsg) {
        match msg {
            UsersMsg::ImportUsers { users, ctx, reply } => {
                let out = cx.import_users(users, &ctx);
                finish(cx, reply, Outcome::durable_success(out));
            }
            UsersMsg::ListUsers { query, reply } => {
                let out = self.list_users(cx, &query);
                finish(cx, reply, Outcome::now(out));
            }
            UsersMsg::GetUser { id, reply } => {
                let out = self.get_user(cx, id);
                finish(cx, reply, Outcome::now(out));
            }
            UsersMsg::CreateUser { user, ctx, reply } => {
                let out = self.create_user(cx, user, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            UsersMsg::UpdateUser {
                id,
                patch,
                ctx,
                reply,
            } => {
                let out = self.update_user(cx, id, patch, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            UsersMsg::ActOnUser {
                id,
                action,
                ctx,
                reply,
            } => {
                let out = self.act_on_user(cx, id, action, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            UsersMsg::DeleteUser { id, ctx, reply } => {
                let out = self.delete_user(cx, id, &ctx);
                finish(cx, reply, Outcome::erased(out));
            }
            UsersMsg::ExportMe { bearer, reply } => {
                let out = self.export_me(cx, bearer);
                finish(cx, reply, Outcome::now(out));
            }
            UsersMsg::DeleteMe { bearer, ctx, reply } => {
                let out = self.delete_me(cx, bearer, &ctx);
                finish(cx, reply, Outcome::erased(out));
            }
            UsersMsg::UserTraces { needles, reply } => {
                let out = self.user_traces(cx, &needles);
                finish(cx, reply, Outcome::now(out));
            }
            UsersMsg::Activity { days, reply } => {
                let out = self.activity(cx, days);
                finish(cx, reply, Outcome::now(out));
            }
            UsersMsg::UserCredentials { id, reply } => {
                let out = self.user_credentials(cx, id);
                finish(cx, reply, Outcome::now(out));
            }
        }
    }
}
