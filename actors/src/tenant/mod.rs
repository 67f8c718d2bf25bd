//! The tenant supervisor: one actor per tenant, owner of everything that tenant can change.
//!
//! The actor is a thin `match` over [`TenantMsg`]; the logic lives in the synchronous
//! [`TenantState`]. Handlers never do slow work: no argon2, no network, no fsync (writes are
//! acknowledged through group commit, see `crate::durable`).
//!
//! Invariant: only this actor reads or writes its tenant's keys; its `TenantStore` cannot
//! address any other tenant's.

pub mod accounts;
pub mod agents;
pub mod assertion;
pub mod audit;
pub mod ceremonies;
pub mod challenges;
pub mod credentials;
pub mod ctx;
pub mod devices;
pub mod effects;
pub mod eudi;
pub mod guardian;
pub mod guests;
pub mod hosted;
pub mod import;
pub mod inventory;
pub mod keys;
pub mod limits;
pub mod mailbox;
pub mod messages;
pub mod mfa;
pub mod oauth;
pub mod oauth_clients;
pub mod organizations;
pub mod passkeys;
pub mod passwordless;
pub mod records;
pub mod runtime;
pub mod sessions;
pub mod settings;
pub mod sms;
pub mod social;
pub mod sso;
pub mod state;
pub mod step_up;
pub mod usage;
pub mod users;
pub mod webhooks;

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tessera_storage::{MasterKey, TenantStore};

pub use accounts::msg::AccountsMsg;
pub use guests::msg::GuestsMsg;
pub use hosted::msg::HostedMsg;
pub use keys::msg::KeysMsg;
pub use mailbox::TenantMsg;
pub use messages::{SettingsView, TenantInfo, TenantOverview};
pub use mfa::msg::MfaMsg;
pub use passkeys::msg::PasskeysMsg;
pub use passwordless::msg::PasswordlessMsg;
pub use runtime::{PlatformSmsCaps, TenantCells, TenantRuntime, TokenPolicy};
pub use sessions::msg::SessionsMsg;
pub use settings::msg::SettingsMsg;
pub use settings::TenantSettings;
pub use sms::msg::SmsMsg;
pub use state::TenantState;
pub use step_up::msg::StepUpMsg;
pub use users::msg::UsersMsg;

use crate::{
    error::TenantError,
    outbound::Outbound,
    reply::{finish, Durability, Outcome},
};

/// What the directory gives a tenant actor when it starts it.
pub struct TenantArgs {
    pub info: TenantInfo,
    pub store: TenantStore,
    /// Seals and opens the tenant's secrets.
    pub master_key: MasterKey,
    /// Whether `TenantMsg::InjectPanic` may crash this actor (operators' fault drills and tests).
    pub fault_injection: bool,
    pub runtime: TenantRuntime,
    /// Where the actor publishes what request handlers read without a hop.
    pub cells: TenantCells,
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
        let state = TenantState::load(
            args.info,
            args.store,
            args.master_key,
            args.fault_injection,
            args.runtime,
            args.cells,
        )?;
        // Whatever was queued when the last run ended goes out now.
        for job in state.cx.queued_mail()? {
            state.cx.runtime.outbound.submit(job);
        }
        if let Some(at) = state.webhooks.next_webhook_due(&state.cx)? {
            state
                .cx
                .runtime
                .outbound
                .webhooks_due(state.cx.info().id, at);
        }
        tracing::info!(tenant = %state.cx.info().slug, "tenant actor started");
        Ok(state)
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        message: TenantMsg,
        state: &mut TenantState,
    ) -> Result<(), ActorProcessingErr> {
        // Throttle changes that no command's batch took (a reset on a path that writes
        // nothing else) are written before the next message, and when the actor stops.
        state.cx.persist_throttles_logged();
        match message {
            TenantMsg::Accounts(msg) => state.accounts.handle(&mut state.cx, msg),
            TenantMsg::Sessions(msg) => state.sessions.handle(&mut state.cx, msg),
            TenantMsg::Mfa(msg) => state.mfa.handle(&mut state.cx, msg),
            TenantMsg::StepUp(msg) => state.step_up.handle(&mut state.cx, msg),
            TenantMsg::Passkeys(msg) => state.passkeys.handle(&mut state.cx, msg),
            TenantMsg::Passwordless(msg) => state.passwordless.handle(&mut state.cx, msg),
            TenantMsg::Hosted(msg) => state.hosted.handle(&mut state.cx, msg),
            TenantMsg::Sms(msg) => state.sms.handle(&mut state.cx, msg),
            TenantMsg::Guests(msg) => state.guests.handle(&mut state.cx, msg),
            TenantMsg::Users(msg) => state.users.handle(&mut state.cx, msg),
            TenantMsg::Settings(msg) => settings::msg::handle(&mut state.cx, msg),
            TenantMsg::Keys(msg) => keys::msg::handle(&mut state.cx, msg),
            TenantMsg::OAuth { cmd, ctx, reply } => {
                let out = state.oauth.oauth_cmd(&mut state.cx, cmd, &ctx);
                finish(state, reply, Outcome::wrote(out));
            }
            TenantMsg::OAuthClients { cmd, ctx, reply } => {
                let out = state
                    .oauth_clients
                    .oauth_client_cmd(&mut state.cx, cmd, &ctx);
                finish(state, reply, Outcome::durable_success(out));
            }
            TenantMsg::Social { cmd, ctx, reply } => {
                let out = state.social.social_cmd(&mut state.cx, cmd, &ctx);
                finish(state, reply, Outcome::durable_success(out));
            }
            TenantMsg::SocialConfig { cmd, ctx, reply } => {
                let out = state.social.social_config_cmd(&mut state.cx, cmd, &ctx);
                finish(state, reply, Outcome::durable_success(out));
            }
            TenantMsg::Eudi { cmd, ctx, reply } => {
                let out = state.eudi.eudi_cmd(&mut state.cx, cmd, &ctx);
                finish(state, reply, Outcome::durable_success(out));
            }
            TenantMsg::Agents { cmd, ctx, reply } => {
                let reads_only = cmd.reads_only();
                let out = state.agents.agent_cmd(&mut state.cx, cmd, &ctx);
                finish(state, reply, Outcome::read_or_mail(reads_only, out));
            }
            TenantMsg::Guardian {
                cmd,
                ip,
                ctx,
                reply,
            } => {
                let reads_only = cmd.reads_only();
                let out = state.guardian_cmd(cmd, ip, &ctx);
                finish(state, reply, Outcome::read_or_mail(reads_only, out));
            }
            TenantMsg::GuardianManagementLink {
                child_email,
                guardian_email,
                ip,
                ctx,
                reply,
            } => {
                let out = state.guardian.guardian_management_link(
                    &mut state.cx,
                    &child_email,
                    &guardian_email,
                    ip,
                    &ctx,
                );
                finish(state, reply, Outcome::alike(out));
            }
            TenantMsg::Organizations { cmd, ctx, reply } => {
                state.organizations.handle(&mut state.cx, cmd, ctx, reply)
            }
            TenantMsg::Sso { cmd, ctx, reply } => state.sso.handle(&mut state.cx, cmd, ctx, reply),
            TenantMsg::Webhooks { cmd, ctx, reply } => {
                let at_once = cmd.answers_at_once();
                let out = state.webhooks.webhook_cmd(&mut state.cx, cmd, &ctx);
                finish(state, reply, Outcome::read_or_mail(at_once, out));
            }
            TenantMsg::GetOverview { reply } => {
                finish(state, reply, Outcome::now(Ok(state.cx.overview())))
            }
            TenantMsg::UpdateInfo { info } => state.cx.set_info(info),
            TenantMsg::AppendAudit {
                event_type,
                ctx,
                fields,
                metadata,
                reply,
            } => {
                let mut event = audit::AuditEvent::new(&event_type, &ctx, fields);
                event.metadata = metadata;
                let out = state.cx.append_audit(event);
                finish(state, reply, Outcome::durable_success(out));
            }
            TenantMsg::ListAudit {
                cursor,
                limit,
                event_type,
                reply,
            } => {
                let out = state
                    .cx
                    .list_audit(cursor.as_deref(), limit, event_type.as_deref());
                finish(state, reply, Outcome::now(out));
            }
            TenantMsg::MailSettled { id } => {
                if let Err(e) = state.cx.mail_settled(id) {
                    tracing::error!(tenant = %state.cx.info().id, error = %e, "cannot dequeue a settled message");
                }
            }
            TenantMsg::InjectPanic { reply } => {
                if state.cx.fault_injection() {
                    tracing::warn!(tenant = %state.cx.info().id, "fault injection: panicking");
                    // Deliberate: this drill checks that the directory restarts a crashed tenant.
                    panic!("fault injection for tenant {}", state.cx.info().id);
                }
                let _ = reply.send(Err(TenantError::FaultInjectionDisabled));
            }
            TenantMsg::InjectStall { millis, reply } => {
                if !state.cx.fault_injection() {
                    let _ = reply.send(Err(TenantError::FaultInjectionDisabled));
                    return Ok(());
                }
                tracing::warn!(tenant = %state.cx.info().id, millis, "fault injection: stalling");
                // Deliberate: holds the mailbox so callers see their timeout, not a hang.
                tokio::time::sleep(std::time::Duration::from_millis(millis)).await;
                let _ = reply.send(Ok(()));
            }
        }
        wake_webhooks(state);
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut TenantState,
    ) -> Result<(), ActorProcessingErr> {
        state.cx.persist_throttles_logged();
        Ok(())
    }
}

impl Durability for TenantState {
    fn ticket(&self) -> tessera_storage::flusher::Ticket {
        self.cx.ticket()
    }

    fn outbound(&self) -> Option<Arc<dyn Outbound>> {
        self.cx.outbound()
    }
}

/// Wakes the webhook worker when the message just handled scheduled deliveries, once they
/// are on disk (the worker never sends an event whose cause could still be lost).
fn wake_webhooks(state: &TenantState) {
    let Some(at) = state.webhooks.take_webhook_wake(&state.cx) else {
        return;
    };
    let ticket = state.cx.store().ticket();
    let outbound = state.cx.runtime.outbound.clone();
    let tenant = state.cx.info().id;
    tokio::spawn(async move {
        match ticket.wait().await {
            Ok(()) => outbound.webhooks_due(tenant, at),
            Err(e) => tracing::error!(error = %e, "a write could not be made durable"),
        }
    });
}
