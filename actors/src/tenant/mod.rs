//! The tenant supervisor: one actor per tenant, owner of everything that tenant can change.
//!
//! The actor is a thin `match` over [`TenantMsg`]; the logic lives in the synchronous
//! [`TenantState`]. Handlers never do slow work: no argon2, no network, no fsync (writes are
//! acknowledged through group commit, see `crate::durable`).
//!
//! Invariant: only this actor reads or writes its tenant's keys; its `TenantStore` cannot
//! address any other tenant's.

pub mod audit;
pub mod messages;
pub mod settings;
pub mod state;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tessera_storage::{MasterKey, TenantStore};

pub use messages::{SettingsView, TenantInfo, TenantMsg, TenantOverview};
pub use settings::TenantSettings;
pub use state::TenantState;

use crate::{durable::reply_when_durable, error::TenantError};

/// What the directory gives a tenant actor when it starts it.
pub struct TenantArgs {
    pub info: TenantInfo,
    pub store: TenantStore,
    /// Seals and opens the tenant's secrets.
    pub master_key: MasterKey,
    /// Whether `TenantMsg::InjectPanic` may crash this actor (operators' fault drills and tests).
    pub fault_injection: bool,
}

/// The tenant supervisor actor.
pub struct TenantActor;

impl Actor for TenantActor {
    type Msg = TenantMsg;
    type State = TenantState;
    type Arguments = TenantArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: TenantArgs,
    ) -> Result<TenantState, ActorProcessingErr> {
        Ok(TenantState::load(
            args.info,
            args.store,
            args.master_key,
            args.fault_injection,
        )?)
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        message: TenantMsg,
        state: &mut TenantState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            TenantMsg::GetOverview { reply } => {
                let _ = reply.send(Ok(state.overview()));
            }
            TenantMsg::UpdateInfo { info } => state.set_info(info),
            TenantMsg::GetSettings { reply } => {
                let _ = reply.send(Ok(state.settings_view()));
            }
            TenantMsg::UpdateSettings { change, ctx, reply } => {
                match state.update_settings(change, &ctx) {
                    Ok(view) => reply_durable(state, reply, view),
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
            TenantMsg::AppendAudit {
                event_type,
                ctx,
                fields,
                metadata,
                reply,
            } => {
                let mut event = audit::AuditEvent::new(&event_type, &ctx, fields);
                event.metadata = metadata;
                match state.append_audit(event) {
                    Ok(()) => reply_durable(state, reply, ()),
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
            TenantMsg::ListAudit {
                cursor,
                limit,
                event_type,
                reply,
            } => {
                let _ =
                    reply.send(state.list_audit(cursor.as_deref(), limit, event_type.as_deref()));
            }
            TenantMsg::InjectPanic { reply } => {
                if state.fault_injection() {
                    tracing::warn!(tenant = %state.info().id, "fault injection: panicking");
                    // Deliberate: this drill checks that the directory restarts a crashed tenant.
                    panic!("fault injection for tenant {}", state.info().id);
                }
                let _ = reply.send(Err(TenantError::FaultInjectionDisabled));
            }
            TenantMsg::InjectStall { millis, reply } => {
                if !state.fault_injection() {
                    let _ = reply.send(Err(TenantError::FaultInjectionDisabled));
                    return Ok(());
                }
                tracing::warn!(tenant = %state.info().id, millis, "fault injection: stalling");
                // Deliberate: holds the mailbox so callers see their timeout, not a hang.
                tokio::time::sleep(std::time::Duration::from_millis(millis)).await;
                let _ = reply.send(Ok(()));
            }
        }
        Ok(())
    }
}

/// Replies `value` once the writes applied so far are on disk.
fn reply_durable<T: Send + 'static>(
    state: &TenantState,
    reply: ractor::RpcReplyPort<Result<T, TenantError>>,
    value: T,
) {
    reply_when_durable(
        state.store().ticket(),
        reply,
        Ok(value),
        TenantError::Internal,
    );
}
