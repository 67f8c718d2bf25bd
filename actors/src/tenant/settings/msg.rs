//! The tenant's settings: the commands the tenant actor takes for this flow, and how each is
//! answered.

use ractor::RpcReplyPort;

use crate::{
    error::TenantError,
    reply::{finish, Outcome},
    tenant::{audit::AuditContext, messages::SettingsView, settings::SettingsChange, TenantState},
};

pub enum SettingsMsg {
    GetSettings {
        reply: RpcReplyPort<Result<SettingsView, TenantError>>,
    },
    /// One settings change and its audit event, atomically.
    UpdateSettings {
        change: SettingsChange,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<SettingsView, TenantError>>,
    },
}

/// Applies one command and answers it by its reply policy.
pub(in crate::tenant) fn handle(state: &mut TenantState, msg: SettingsMsg) {
    match msg {
        SettingsMsg::GetSettings { reply } => {
            let out = Ok(state.settings_view());
            finish(state, reply, Outcome::now(out));
        }
        SettingsMsg::UpdateSettings { change, ctx, reply } => {
            let out = state.update_settings(change, &ctx);
            finish(state, reply, Outcome::durable_success(out));
        }
    }
}
