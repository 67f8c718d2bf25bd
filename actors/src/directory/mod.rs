//! The directory: the platform's one root actor.
//!
//! It owns the platform records (tenants, the slug and API-key indexes, dashboard accounts,
//! onboarding idempotency records), starts a `TenantActor` the first time a tenant is used,
//! supervises it (a crashed tenant is restarted from sled, within a restart budget) and
//! publishes the snapshot handlers read to find a tenant without a mailbox hop.
//!
//! The actor is a thin `match` over [`DirectoryMsg`] that sends each answer; the logic lives in
//! [`DirectoryState`]'s methods: `tenants` (records, API keys, onboarding), `supervision`
//! (tenant actors) and `dashboard` (accounts, sessions, members).
//!
//! Invariant: only the directory writes platform records and the published snapshot.

pub mod catalog;
pub mod dashboard;
mod management_keys;
pub mod messages;
mod state;
mod supervision;
mod tenants;

use std::{collections::HashMap, sync::Arc, time::Duration};

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tessera_storage::{MasterKey, Store};

use self::dashboard::{ACCOUNT_MAILS_PER_HOUR, RESETS_PER_IP_HOUR};
pub use self::{
    management_keys::{MANAGEMENT_KEY_PREFIX, MAX_MANAGEMENT_KEYS},
    messages::{
        AccountCredential, CreateOutcome, Created, DirectoryMsg, IdempotencyKey, NewOwner,
        NewTenant, OwnerSummary, RotatedKey, TenantDetails, TenantSummary,
    },
    state::{DirectoryState, SessionPolicy},
    supervision::takes_messages,
    tenants::{is_valid_slug, slug_from_name, API_KEY_PREFIX},
};
use crate::{
    error::DirectoryError,
    login_guard::LoginThrottles,
    published::Published,
    records::TenantRecord,
    reply::{after_flush, finish, DirectoryReply, Durability, Outcome},
    tenant::TenantRuntime,
    throttle::RateWindow,
};

/// What the directory starts with.
pub struct DirectoryArgs {
    pub store: Store,
    pub master_key: MasterKey,
    pub published: Published,
    pub fault_injection: bool,
    pub session_policy: SessionPolicy,
    /// Handed to every tenant actor.
    pub runtime: TenantRuntime,
    /// A tenant actor unused for this long is stopped (its state is on disk; the next request
    /// starts it again). `None`: never.
    pub tenant_idle: Option<Duration>,
    /// Onboarding sign-ups per client address (IPv6: per /64) per hour.
    pub onboarding_per_ip_hourly: u32,
}

pub struct Directory;

impl Actor for Directory {
    type Msg = DirectoryMsg;
    type State = DirectoryState;
    type Arguments = DirectoryArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<DirectoryMsg>,
        args: DirectoryArgs,
    ) -> Result<DirectoryState, ActorProcessingErr> {
        let state = DirectoryState::open(args)?;
        tracing::info!(tenants = state.tenants.len(), "directory started");
        Ok(state)
    }

    async fn post_start(
        &self,
        myself: ActorRef<DirectoryMsg>,
        state: &mut DirectoryState,
    ) -> Result<(), ActorProcessingErr> {
        state.start_tenants_with_mail(&myself).await;
        state.start_idle_timer(&myself);
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<DirectoryMsg>,
        state: &mut DirectoryState,
    ) -> Result<(), ActorProcessingErr> {
        state.stop_all().await;
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<DirectoryMsg>,
        message: DirectoryMsg,
        state: &mut DirectoryState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            DirectoryMsg::CreateTenant { req, reply } => {
                state.answer_durable(reply, |s| s.create_tenant(req));
            }
            DirectoryMsg::ReplayIdempotent { key, reply } => {
                state.answer_durable(reply, |s| s.replay(&key, time::OffsetDateTime::now_utc()));
            }
            DirectoryMsg::FindAccount { email, reply } => {
                let _ = reply.send(state.find_account(&email));
            }
            DirectoryMsg::ListTenants { reply } => {
                let _ = reply.send(state.list_tenants());
            }
            DirectoryMsg::ShowTenant { slug, reply } => {
                let _ = reply.send(state.show_tenant(&slug));
            }
            DirectoryMsg::SetTier { slug, tier, reply } => {
                state.answer_durable(reply, |s| s.update_tenant(&slug, |rec| rec.tier = tier));
            }
            DirectoryMsg::SetLimits {
                slug,
                mau_cap,
                reply,
            } => {
                state.answer_durable(reply, |s| {
                    s.update_tenant(&slug, |rec| rec.mau_cap = Some(mau_cap))
                });
            }
            DirectoryMsg::RotateApiKey { slug, reply } => {
                state.answer_durable(reply, |s| s.rotate_api_key(&slug));
            }
            DirectoryMsg::EnsureRunning { tenant, reply } => {
                let _ = reply.send(state.ensure_running(&myself, tenant).await);
            }
            DirectoryMsg::RegisterResource {
                tenant,
                name,
                uri,
                reply,
            } => {
                state.answer_durable(reply, |s| s.register_resource(tenant, name, uri));
            }
            DirectoryMsg::GetResource { id, reply } => {
                let _ = reply.send(state.resource(id));
            }
            DirectoryMsg::TenantCatalog { tenant, reply } => {
                let _ = reply.send(state.tenant_catalog(tenant));
            }
            DirectoryMsg::ListCatalogScopes {
                tenant,
                resource,
                reply,
            } => {
                let _ = reply.send(state.list_catalog_scopes(tenant, resource));
            }
            DirectoryMsg::RegisterCatalogScope {
                tenant,
                scope,
                reply,
            } => {
                state.answer_durable(reply, |s| s.register_catalog_scope(tenant, scope));
            }
            DirectoryMsg::DeleteCatalogScope {
                tenant,
                resource,
                scope,
                reply,
            } => {
                state.answer_durable(reply, |s| s.delete_catalog_scope(tenant, resource, scope));
            }
            DirectoryMsg::CatalogScopes {
                pending_only,
                reply,
            } => {
                let _ = reply.send(state.all_catalog_scopes(pending_only));
            }
            DirectoryMsg::ApproveCatalogScope {
                resource,
                scope,
                reply,
            } => {
                state.answer_durable(reply, |s| s.approve_catalog_scope(resource, scope));
            }
            DirectoryMsg::CreateManagementKey { key, reply } => {
                state.answer_durable(reply, |s| s.create_management_key(key));
            }
            DirectoryMsg::ListManagementKeys { tenant, reply } => {
                let _ = reply.send(state.list_management_keys(tenant));
            }
            DirectoryMsg::RevokeManagementKey { tenant, id, reply } => {
                state.answer_durable(reply, |s| s.revoke_management_key(tenant, id));
            }
            DirectoryMsg::Ping { reply } => {
                let _ = reply.send(());
            }
            DirectoryMsg::RotateMasterKey {
                new,
                key_path,
                reply,
            } => {
                let _ = reply.send(state.rotate_master_key(&myself, new, key_path).await);
            }
            DirectoryMsg::RetireIdle => {
                state.sweep_throttles();
                state.sweep_mfa_logins();
                state.retire_idle().await;
            }
            DirectoryMsg::AdmitSignup { ip, reply } => {
                let _ = reply.send(state.admit_signup(ip));
            }
            DirectoryMsg::BeginLogin {
                email,
                ip,
                device_token,
                reply,
            } => {
                let _ = reply.send(state.begin_login(&email, ip, device_token.as_deref()));
            }
            DirectoryMsg::LoginFailed {
                email,
                ip,
                device,
                reply,
            } => {
                state.login_failed(&email, ip, device);
                after_flush(state, reply);
            }
            DirectoryMsg::PasswordAccepted {
                account_id,
                ip,
                device,
                reply,
            } => {
                state.answer_durable(reply, |s| s.password_accepted(account_id, ip, device));
            }
            DirectoryMsg::MfaLogin {
                challenge,
                code,
                ip,
                reply,
            } => {
                state.answer_durable(reply, |s| s.mfa_login(&challenge, &code, ip));
            }
            DirectoryMsg::TotpSetup { account_id, reply } => {
                state.answer_durable(reply, |s| s.totp_setup(account_id));
            }
            DirectoryMsg::TotpConfirm {
                account_id,
                code,
                reply,
            } => {
                state.answer_durable(reply, |s| s.totp_confirm(account_id, &code));
            }
            DirectoryMsg::TotpRemove { account_id, reply } => {
                state.answer_durable(reply, |s| s.totp_remove(account_id));
            }
            DirectoryMsg::ResetAccountMfa { email, reply } => {
                state.answer_durable(reply, |s| s.reset_account_mfa(&email));
            }
            DirectoryMsg::Authenticate { token, reply } => {
                let _ = reply.send(state.authenticate(&token));
            }
            DirectoryMsg::Logout { token, reply } => {
                state.answer_durable(reply, |s| s.logout(&token));
            }
            DirectoryMsg::MarkReauth { token, reply } => {
                state.answer_durable(reply, |s| s.mark_reauth(&token));
            }
            DirectoryMsg::ListMembers { tenant, reply } => {
                let _ = reply.send(state.members_and_invitations(tenant));
            }
            DirectoryMsg::InviteMember {
                tenant,
                email,
                role,
                invited_by,
                reply,
            } => {
                state.answer_durable(reply, |s| s.invite(tenant, &email, role, invited_by));
            }
            DirectoryMsg::RevokeInvite {
                tenant,
                email,
                reply,
            } => {
                state.answer_durable(reply, |s| s.revoke_invite(tenant, &email));
            }
            DirectoryMsg::InviteTarget { token, reply } => {
                let _ = reply.send(state.invite_target(&token));
            }
            DirectoryMsg::AcceptInvite {
                token,
                proof,
                reply,
            } => {
                state.answer_durable(reply, |s| s.accept_invite(&token, proof));
            }
            DirectoryMsg::ChangeMember {
                tenant,
                account_id,
                role,
                reply,
            } => {
                state.answer_durable(reply, |s| s.change_member(tenant, account_id, role));
            }
            DirectoryMsg::IssueAccountToken {
                target,
                purpose,
                reply,
            } => {
                let out = state.issue_account_token(target, purpose);
                finish(state, reply, alike_after_flush(out));
            }
            DirectoryMsg::VerifyAccount {
                token,
                account_id,
                reply,
            } => {
                state.answer_durable(reply, |s| s.verify_account(&token, account_id));
            }
            DirectoryMsg::CheckAccountToken {
                token,
                purpose,
                reply,
            } => {
                let _ = reply.send(state.check_account_token(&token, purpose));
            }
            DirectoryMsg::ResetPassword {
                token,
                password_hash,
                reply,
            } => {
                state.answer_durable(reply, |s| s.reset_password(&token, password_hash));
            }
        }
        // Resets (a login that went through) and sweeps are written after the message.
        state.persist_throttles_logged();
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<DirectoryMsg>,
        event: SupervisionEvent,
        state: &mut DirectoryState,
    ) -> Result<(), ActorProcessingErr> {
        state.supervise(&myself, event).await;
        Ok(())
    }
}

impl Durability for DirectoryState {
    fn ticket(&self) -> tessera_storage::flusher::Ticket {
        self.platform.ticket()
    }

    /// The directory sends nothing itself: the dashboard's mail leaves from its routes.
    fn outbound(&self) -> Option<Arc<dyn crate::outbound::Outbound>> {
        None
    }
}

/// For the mailed-token answers that must not tell whether an address has an account: a rate
/// limit (checked before any lookup, alike for every address) is answered at once; any other
/// answer, a token, none or an error, once the writes applied so far are durable, so an
/// unknown address answers as late as a known one.
fn alike_after_flush<T>(out: Result<T, DirectoryError>) -> Outcome<T, DirectoryError> {
    match out {
        Err(e @ DirectoryError::RateLimited { .. }) => Outcome::now(Err(e)),
        other => Outcome::durable(other),
    }
}

impl DirectoryState {
    /// Applies a write and answers it once it is durable if it went through, at once if not.
    fn answer_durable<T: Send + 'static>(
        &mut self,
        reply: DirectoryReply<T>,
        write: impl FnOnce(&mut Self) -> Result<T, DirectoryError>,
    ) {
        let out = write(self);
        finish(self, reply, Outcome::durable_success(out));
    }

    /// The directory's state as its records left it: the tenants, the dashboard throttles,
    /// the unrevoked management keys and the resources, with the index published and no
    /// tenant actor running.
    pub(super) fn open(args: DirectoryArgs) -> Result<DirectoryState, DirectoryError> {
        let platform = args.store.platform();
        let mut tenants = HashMap::new();
        for rec in platform.scan::<TenantRecord>() {
            let rec = rec?;
            tenants.insert(rec.id, rec);
        }
        let mut state = DirectoryState {
            root: args.store,
            platform,
            idempotency_hasher: args.master_key.hasher("onboarding-idempotency"),
            recovery_hasher: args.master_key.hasher("dashboard-recovery-code"),
            mfa_logins: HashMap::new(),
            mfa_misses: RateWindow::new(
                dashboard::MFA_MISSES_PER_ADDRESS,
                Duration::from_secs(900),
            ),
            master_key: args.master_key,
            published: args.published,
            fault_injection: args.fault_injection,
            tenants,
            running: HashMap::new(),
            by_actor: HashMap::new(),
            restarts: HashMap::new(),
            session_policy: args.session_policy,
            login: LoginThrottles::new(args.runtime.login_failures_per_address),
            runtime: args.runtime,
            account_mail_window: RateWindow::new(ACCOUNT_MAILS_PER_HOUR, Duration::from_secs(3600)),
            reset_ip_window: RateWindow::new(RESETS_PER_IP_HOUR, Duration::from_secs(3600)),
            signup_ips: RateWindow::new(args.onboarding_per_ip_hourly, Duration::from_secs(3600)),
            tenant_idle: args.tenant_idle,
            management_keys: HashMap::new(),
            resources_by_tenant: HashMap::new(),
        };
        state.restore_throttles()?;
        state.load_management_keys()?;
        state.load_resources()?;
        state.publish_index();
        state.published.running.clear();
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use ractor::concurrency::{oneshot, OneshotReceiver};

    use super::*;
    use crate::directory::state::tests::directory;

    /// The answer, if it was sent already.
    fn sent<T>(rx: &mut OneshotReceiver<T>) -> Option<T> {
        rx.try_recv().ok()
    }

    /// Finishes `outcome` on a new reply port; answers where its answer arrives.
    fn finished<T: Send + 'static>(
        d: &DirectoryState,
        outcome: Outcome<T, DirectoryError>,
    ) -> OneshotReceiver<Result<T, DirectoryError>> {
        let (tx, rx) = oneshot();
        finish(d, tx.into(), outcome);
        rx
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_write_is_answered_once_durable_and_an_error_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let d = directory(dir.path());
        let mut rx = finished(
            &d,
            Outcome::durable_success(Err::<u8, _>(DirectoryError::NotFound)),
        );
        assert!(matches!(sent(&mut rx), Some(Err(DirectoryError::NotFound))));
        let mut rx = finished(&d, Outcome::durable_success(Ok::<u8, DirectoryError>(7)));
        assert!(sent(&mut rx).is_none());
        assert!(matches!(rx.await, Ok(Ok(7))));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_mailed_token_answer_waits_for_the_flush_alike_unless_rate_limited() {
        let dir = tempfile::tempdir().unwrap();
        let d = directory(dir.path());
        let mut rx = finished(
            &d,
            alike_after_flush(Err::<Option<u8>, _>(DirectoryError::RateLimited {
                retry_after_secs: 9,
            })),
        );
        assert!(matches!(
            sent(&mut rx),
            Some(Err(DirectoryError::RateLimited {
                retry_after_secs: 9
            }))
        ));
        // A token, none, or any other error: each is answered after the same flush.
        for out in [
            Ok(Some(1u8)),
            Ok(None),
            Err(DirectoryError::TokenInvalid),
            Err(DirectoryError::Internal("x".into())),
        ] {
            let expected = format!("{out:?}");
            let mut rx = finished(&d, alike_after_flush(out));
            assert!(sent(&mut rx).is_none(), "{expected} was answered at once");
            assert_eq!(format!("{:?}", rx.await.unwrap()), expected);
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_failed_login_is_answered_after_the_flush() {
        let dir = tempfile::tempdir().unwrap();
        let d = directory(dir.path());
        let (tx, mut rx) = oneshot();
        after_flush(&d, tx.into());
        assert!(sent(&mut rx).is_none());
        rx.await.unwrap();
    }
}
