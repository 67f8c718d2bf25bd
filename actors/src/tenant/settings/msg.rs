//! The tenant's settings: the commands the tenant actor takes for this flow, and how each is
//! answered.

use crate::tenant::ctx::TenantCtx;
use crate::{
    reply::{finish, Outcome, TenantReply},
    tenant::{audit::AuditContext, messages::SettingsView, settings::SettingsChange},
};

pub enum SettingsMsg {
    GetSettings {
        reply: TenantReply<SettingsView>,
    },
    /// One settings change and its audit event, atomically.
    UpdateSettings {
        change: SettingsChange,
        ctx: AuditContext,
        reply: TenantReply<SettingsView>,
    },
}

/// Applies one command and answers it by its reply policy.
pub(in crate::tenant) fn handle(cx: &mut TenantCtx, msg: SettingsMsg) {
    match msg {
        SettingsMsg::GetSettings { reply } => {
            let out = Ok(cx.settings_view());
            finish(cx, reply, Outcome::now(out));
        }
        SettingsMsg::UpdateSettings { change, ctx, reply } => {
            let out = cx.update_settings(change, &ctx);
            finish(cx, reply, Outcome::durable_success(out));
        }
    }
}
