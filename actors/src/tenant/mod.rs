//! The tenant supervisor: one actor per tenant, owner of everything that tenant can change.
//!
//! The actor is a thin `match` over [`TenantMsg`]; the logic lives in the synchronous
//! [`TenantState`]. Handlers never do slow work: no argon2, no network, no fsync (writes are
//! acknowledged through group commit, see `crate::durable`).
//!
//! Invariant: only this actor reads or writes its tenant's keys; its `TenantStore` cannot
//! address any other tenant's.

pub mod messages;
pub mod settings;
pub mod state;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tessera_storage::TenantStore;

pub use messages::{TenantInfo, TenantMsg, TenantOverview};
pub use settings::TenantSettings;
pub use state::TenantState;

use crate::error::TenantError;

/// What the directory gives a tenant actor when it starts it.
pub struct TenantArgs {
    pub info: TenantInfo,
    pub store: TenantStore,
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
