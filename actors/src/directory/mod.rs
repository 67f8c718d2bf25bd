//! The directory: the platform's one root actor.
//!
//! It owns the platform records (tenants, the slug and API-key indexes, dashboard accounts,
//! onboarding idempotency records), starts a `TenantActor` the first time a tenant is used,
//! supervises it (a crashed tenant is restarted from sled, within a restart budget) and
//! publishes the snapshot handlers read to find a tenant without a mailbox hop.
//!
//! Invariant: only the directory writes platform records and the published snapshot.

pub mod dashboard;

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::Arc,
    time::{Duration, Instant},
};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use serde::{Deserialize, Serialize};
use tessera_storage::{
    random_token, sha256, KeyedHasher, Kind, MasterKey, PlatformBatch, PlatformStore, Store,
    TenantId,
};
use time::OffsetDateTime;
use uuid::Uuid;

use self::dashboard::{
    AcceptedInvite, AccountReset, AccountTarget, Invitation, InviteProof, InviteTarget, LoginGate,
    MailedToken, MemberChange, MemberList, NewSession, SessionInfo, SessionPolicy, FIRST_BLOCK,
    FREE_FAILURES_PER_ACCOUNT, FREE_FAILURES_PER_IP, MAX_BLOCK,
};
use crate::{
    durable::reply_when_durable,
    error::DirectoryError,
    published::{Index, Published, RunningTenant},
    records::{
        membership_key, AccountEmailIndex, AccountTokenPurpose, AccountTokenRecord, ApiKeyIndex,
        ApiKeyMeta, DashboardAccount, IdempotencyRecord, Membership, MembershipRecord, Role,
        SlugIndex, TenantRecord, TenantRef, Tier,
    },
    tenant::{
        records::QueuedMail, TenantActor, TenantArgs, TenantCells, TenantInfo, TenantMsg,
        TenantRuntime,
    },
    throttle::{
        saved_key, Clocks, PlatformThrottleRecord, RateWindow, SavedCount, Throttle, ThrottleKey,
    },
};

/// The persisted dashboard throttles, as numbered in their records' keys (never renumber).
const THROTTLE_ACCOUNTS: u8 = 1;
const THROTTLE_IPS: u8 = 2;

/// Crashes tolerated per tenant within [`RESTART_WINDOW`] before it answers 503 for a while.
const MAX_RESTARTS: u32 = 5;
const RESTART_WINDOW: Duration = Duration::from_secs(60);
/// How long an onboarding answer is replayed for its idempotency key.
const IDEMPOTENCY_TTL: time::Duration = time::Duration::hours(24);
/// The visible start of every API key.
pub const API_KEY_PREFIX: &str = "tsk_";
/// Longest generated slug.
const MAX_SLUG_LEN: usize = 40;

/// A new tenant, as validated by the caller (HTTP onboarding or the admin socket).
#[derive(Debug)]
pub struct NewTenant {
    pub name: String,
    /// A slug the operator chose; `None` derives one from the name.
    pub slug: Option<String>,
    pub owner: Option<NewOwner>,
    pub idempotency: Option<IdempotencyKey>,
}

/// Who owns a new tenant.
#[derive(Debug)]
pub enum NewOwner {
    /// A new dashboard account; the password was hashed by the caller, off this actor.
    Create {
        email: String,
        password_hash: String,
    },
    /// An existing account whose password the caller has verified.
    Existing { account_id: Uuid },
}

/// An onboarding idempotency key and a fingerprint of the request it came with.
#[derive(Debug)]
pub struct IdempotencyKey {
    pub key: String,
    pub fingerprint: Vec<u8>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TenantSummary {
    pub id: TenantId,
    pub slug: String,
    pub name: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OwnerSummary {
    pub id: Uuid,
    pub email: String,
}

/// The answer to a tenant creation: the API key appears here and nowhere else.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Created {
    pub tenant: TenantSummary,
    pub owner: Option<OwnerSummary>,
    pub api_key: String,
}

/// A creation, or the replay of an earlier one with the same idempotency key.
#[derive(Debug)]
pub struct CreateOutcome {
    pub created: Created,
    pub replayed: bool,
    /// The new owner account's address-verification token, to be mailed (never replayed).
    pub verification: Option<MailedToken>,
}

/// What operators see of a tenant.
#[derive(Clone, Debug, Serialize)]
pub struct TenantDetails {
    #[serde(flatten)]
    pub info: TenantInfo,
    pub owners: Vec<String>,
    pub running: bool,
}

/// A freshly rotated API key, shown once.
#[derive(Clone, Debug, Serialize)]
pub struct RotatedKey {
    pub tenant: TenantSummary,
    pub api_key: String,
}

/// A dashboard account's credential, for verification off the actor.
#[derive(Clone, Debug)]
pub struct AccountCredential {
    pub account_id: Uuid,
    pub password_hash: String,
}

pub enum DirectoryMsg {
    CreateTenant {
        req: NewTenant,
        reply: RpcReplyPort<Result<CreateOutcome, DirectoryError>>,
    },
    FindAccount {
        email: String,
        reply: RpcReplyPort<Option<AccountCredential>>,
    },
    ListTenants {
        reply: RpcReplyPort<Vec<TenantDetails>>,
    },
    /// The stored answer for an idempotency key and request (answered once durable).
    ReplayIdempotent {
        key: IdempotencyKey,
        reply: RpcReplyPort<Result<Option<Created>, DirectoryError>>,
    },
    ShowTenant {
        slug: String,
        reply: RpcReplyPort<Result<TenantDetails, DirectoryError>>,
    },
    SetTier {
        slug: String,
        tier: Tier,
        reply: RpcReplyPort<Result<TenantDetails, DirectoryError>>,
    },
    /// Overrides the tenant's monthly-active-user cap.
    SetLimits {
        slug: String,
        mau_cap: u64,
        reply: RpcReplyPort<Result<TenantDetails, DirectoryError>>,
    },
    RotateApiKey {
        slug: String,
        reply: RpcReplyPort<Result<RotatedKey, DirectoryError>>,
    },
    /// Stops the tenant actors idle for longer than `tenant_idle` (sent by a timer).
    RetireIdle,
    /// Starts the tenant's actor unless it runs; answers it.
    EnsureRunning {
        tenant: TenantId,
        reply: RpcReplyPort<Result<RunningTenant, DirectoryError>>,
    },
    Ping {
        reply: RpcReplyPort<()>,
    },
    /// Checks the login throttles for `email` and `ip`, then answers the credential to verify.
    BeginLogin {
        email: String,
        ip: IpAddr,
        reply: RpcReplyPort<LoginGate>,
    },
    /// Counts one onboarding sign-up from `ip` (IPv6: its /64); `Err(retry_after_secs)` past
    /// the hourly limit. Sent before any hashing.
    AdmitSignup {
        ip: IpAddr,
        reply: RpcReplyPort<Result<(), u64>>,
    },
    /// Counts a failed password check against `email` and `ip`; answers once the count is
    /// durable.
    LoginFailed {
        email: String,
        ip: IpAddr,
        reply: RpcReplyPort<()>,
    },
    /// A new dashboard session for an account whose password was verified.
    CreateSession {
        account_id: Uuid,
        reply: RpcReplyPort<Result<NewSession, DirectoryError>>,
    },
    /// The live session for a token.
    Authenticate {
        token: String,
        reply: RpcReplyPort<Result<SessionInfo, DirectoryError>>,
    },
    Logout {
        token: String,
        reply: RpcReplyPort<Result<(), DirectoryError>>,
    },
    /// Records a successful re-authentication on the session.
    MarkReauth {
        token: String,
        reply: RpcReplyPort<Result<OffsetDateTime, DirectoryError>>,
    },
    /// The tenant's members and pending invitations.
    ListMembers {
        tenant: TenantId,
        reply: RpcReplyPort<Result<MemberList, DirectoryError>>,
    },
    /// Records an invitation (a token to mail); nobody is added before accepting.
    InviteMember {
        tenant: TenantId,
        email: String,
        role: Role,
        invited_by: Uuid,
        reply: RpcReplyPort<Result<Invitation, DirectoryError>>,
    },
    /// Withdraws a pending invitation.
    RevokeInvite {
        tenant: TenantId,
        email: String,
        reply: RpcReplyPort<Result<(), DirectoryError>>,
    },
    /// What accepting the invitation behind a token needs.
    InviteTarget {
        token: String,
        reply: RpcReplyPort<Result<InviteTarget, DirectoryError>>,
    },
    /// Consumes an invitation with the invitee's proof.
    AcceptInvite {
        token: String,
        proof: InviteProof,
        reply: RpcReplyPort<Result<AcceptedInvite, DirectoryError>>,
    },
    /// Changes a member's role (`Some`) or removes the member (`None`).
    ChangeMember {
        tenant: TenantId,
        account_id: Uuid,
        role: Option<Role>,
        reply: RpcReplyPort<Result<MemberChange, DirectoryError>>,
    },
    /// A verification or reset token to mail to an account, if any.
    IssueAccountToken {
        target: AccountTarget,
        purpose: AccountTokenPurpose,
        reply: RpcReplyPort<Result<Option<MailedToken>, DirectoryError>>,
    },
    /// Marks the session's account verified with a mailed token.
    VerifyAccount {
        token: String,
        account_id: Uuid,
        reply: RpcReplyPort<Result<(), DirectoryError>>,
    },
    /// Whether a mailed token of `purpose` is live (checked again when it is used).
    CheckAccountToken {
        token: String,
        purpose: AccountTokenPurpose,
        reply: RpcReplyPort<Result<(), DirectoryError>>,
    },
    /// Replaces the password through a mailed reset token.
    ResetPassword {
        token: String,
        password_hash: String,
        reply: RpcReplyPort<Result<AccountReset, DirectoryError>>,
    },
}

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

/// How long an idle tenant actor may take to finish the messages it already has.
const RETIRE_TIMEOUT: Duration = Duration::from_secs(5);

struct RestartBudget {
    window_start: Instant,
    count: u32,
    failed_until: Option<Instant>,
}

pub struct DirectoryState {
    root: Store,
    platform: PlatformStore,
    master_key: MasterKey,
    idempotency_hasher: KeyedHasher,
    published: Published,
    fault_injection: bool,
    tenants: HashMap<TenantId, TenantRecord>,
    running: HashMap<TenantId, RunningTenant>,
    /// Which tenant each running actor serves (for supervision events).
    by_actor: HashMap<ractor::ActorId, TenantId>,
    restarts: HashMap<TenantId, RestartBudget>,
    session_policy: SessionPolicy,
    runtime: TenantRuntime,
    account_throttle: Throttle<String>,
    ip_throttle: Throttle<IpAddr>,
    /// Verification and reset mails per account and purpose.
    account_mail_window: RateWindow<(Uuid, AccountTokenPurpose)>,
    /// Dashboard password-reset requests per client address.
    reset_ip_window: RateWindow<IpAddr>,
    /// Onboarding sign-ups per client address, in memory.
    signup_ips: RateWindow<IpAddr>,
    tenant_idle: Option<Duration>,
}

impl Actor for Directory {
    type Msg = DirectoryMsg;
    type State = DirectoryState;
    type Arguments = DirectoryArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<DirectoryMsg>,
        args: DirectoryArgs,
    ) -> Result<DirectoryState, ActorProcessingErr> {
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
            master_key: args.master_key,
            published: args.published,
            fault_injection: args.fault_injection,
            tenants,
            running: HashMap::new(),
            by_actor: HashMap::new(),
            restarts: HashMap::new(),
            session_policy: args.session_policy,
            runtime: args.runtime,
            account_throttle: Throttle::new(FREE_FAILURES_PER_ACCOUNT, FIRST_BLOCK, MAX_BLOCK),
            ip_throttle: Throttle::new(FREE_FAILURES_PER_IP, FIRST_BLOCK, MAX_BLOCK),
            account_mail_window: RateWindow::new(
                dashboard::ACCOUNT_MAILS_PER_HOUR,
                Duration::from_secs(3600),
            ),
            reset_ip_window: RateWindow::new(
                dashboard::RESETS_PER_IP_HOUR,
                Duration::from_secs(3600),
            ),
            signup_ips: RateWindow::new(args.onboarding_per_ip_hourly, Duration::from_secs(3600)),
            tenant_idle: args.tenant_idle,
        };
        state.restore_throttles()?;
        state.publish_index();
        state.published.running.clear();
        tracing::info!(tenants = state.tenants.len(), "directory started");
        Ok(state)
    }

    /// Starts the tenants that have mail waiting from the last run, so it goes out now rather
    /// than at the tenant's next request. Only the existence of a queued message is read here;
    /// the tenant's own actor reads and sends it.
    async fn post_start(
        &self,
        myself: ActorRef<DirectoryMsg>,
        state: &mut DirectoryState,
    ) -> Result<(), ActorProcessingErr> {
        let pending: Vec<TenantId> = state
            .tenants
            .keys()
            .copied()
            .filter(|id| {
                state
                    .root
                    .tenant(*id)
                    .scan::<QueuedMail>(b"")
                    .next()
                    .is_some()
            })
            .collect();
        for id in pending {
            if let Err(e) = state.ensure_running(&myself, id).await {
                tracing::error!(tenant = %id, error = %e, "cannot start a tenant with queued mail");
            }
        }
        if let Some(idle) = state.tenant_idle {
            // Looks for idle tenants a few times per idle period; ends with the directory.
            let period = (idle / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
            let directory = myself.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(period);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    if directory.cast(DirectoryMsg::RetireIdle).is_err() {
                        break;
                    }
                }
            });
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<DirectoryMsg>,
        state: &mut DirectoryState,
    ) -> Result<(), ActorProcessingErr> {
        state.published.running.clear();
        state.by_actor.clear();
        for (_, running) in state.running.drain() {
            running
                .actor
                .stop_and_wait(Some("shutdown".into()), Some(Duration::from_secs(5)))
                .await
                .ok();
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<DirectoryMsg>,
        message: DirectoryMsg,
        state: &mut DirectoryState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            DirectoryMsg::CreateTenant { req, reply } => state.create_tenant(req, reply),
            DirectoryMsg::ReplayIdempotent { key, reply } => {
                let out = state.replay(&key, OffsetDateTime::now_utc());
                state.reply_durable(reply, out);
            }
            DirectoryMsg::FindAccount { email, reply } => {
                let _ = reply.send(state.find_account(&email));
            }
            DirectoryMsg::ListTenants { reply } => {
                let mut all: Vec<_> = state
                    .tenants
                    .values()
                    .map(|t| state.details(t, false))
                    .collect();
                all.sort_by(|a, b| a.info.slug.cmp(&b.info.slug));
                let _ = reply.send(all);
            }
            DirectoryMsg::ShowTenant { slug, reply } => {
                let out = state
                    .by_slug(&slug)
                    .map(|t| state.details(t, true))
                    .ok_or(DirectoryError::TenantNotFound);
                let _ = reply.send(out);
            }
            DirectoryMsg::SetTier { slug, tier, reply } => {
                state.update_and_reply(&slug, |rec| rec.tier = tier, reply)
            }
            DirectoryMsg::SetLimits {
                slug,
                mau_cap,
                reply,
            } => state.update_and_reply(&slug, |rec| rec.mau_cap = Some(mau_cap), reply),
            DirectoryMsg::RotateApiKey { slug, reply } => state.rotate_api_key(&slug, reply),
            DirectoryMsg::EnsureRunning { tenant, reply } => {
                let out = state.ensure_running(&myself, tenant).await;
                let _ = reply.send(out);
            }
            DirectoryMsg::Ping { reply } => {
                let _ = reply.send(());
            }
            DirectoryMsg::RetireIdle => {
                state.account_throttle.sweep(Instant::now());
                state.ip_throttle.sweep(Instant::now());
                state.retire_idle().await
            }
            DirectoryMsg::AdmitSignup { ip, reply } => {
                let key = crate::throttle::throttle_ip(ip);
                let _ = reply.send(state.signup_ips.hit(&key, Instant::now()));
            }
            DirectoryMsg::BeginLogin { email, ip, reply } => {
                let _ = reply.send(state.begin_login(&email, ip));
            }
            DirectoryMsg::LoginFailed { email, ip, reply } => {
                state.login_failed(&email, ip);
                // The count is on disk before the failure is answered: a restart forgives
                // nothing.
                if let Err(e) = state.persist_throttles() {
                    tracing::error!(error = %e, "cannot write dashboard throttle state");
                }
                let ticket = state.platform.ticket();
                tokio::spawn(async move {
                    if let Err(e) = ticket.wait().await {
                        tracing::error!(error = %e, "a write could not be made durable");
                    }
                    let _ = reply.send(());
                });
            }
            DirectoryMsg::CreateSession { account_id, reply } => {
                state.create_session(account_id, reply)
            }
            DirectoryMsg::Authenticate { token, reply } => {
                let _ = reply.send(state.authenticate(&token));
            }
            DirectoryMsg::Logout { token, reply } => state.logout(&token, reply),
            DirectoryMsg::MarkReauth { token, reply } => state.mark_reauth(&token, reply),
            DirectoryMsg::ListMembers { tenant, reply } => {
                let _ = reply.send(state.members_and_invitations(tenant));
            }
            DirectoryMsg::InviteMember {
                tenant,
                email,
                role,
                invited_by,
                reply,
            } => state.invite(tenant, &email, role, invited_by, reply),
            DirectoryMsg::RevokeInvite {
                tenant,
                email,
                reply,
            } => state.revoke_invite(tenant, &email, reply),
            DirectoryMsg::InviteTarget { token, reply } => {
                let _ = reply.send(state.invite_target(&token));
            }
            DirectoryMsg::AcceptInvite {
                token,
                proof,
                reply,
            } => state.accept_invite(&token, proof, reply),
            DirectoryMsg::ChangeMember {
                tenant,
                account_id,
                role,
                reply,
            } => state.change_member(tenant, account_id, role, reply),
            DirectoryMsg::IssueAccountToken {
                target,
                purpose,
                reply,
            } => state.issue_account_token(target, purpose, reply),
            DirectoryMsg::VerifyAccount {
                token,
                account_id,
                reply,
            } => state.verify_account(&token, account_id, reply),
            DirectoryMsg::CheckAccountToken {
                token,
                purpose,
                reply,
            } => {
                let _ = reply.send(state.redeem_account_token(&token, purpose).map(|_| ()));
            }
            DirectoryMsg::ResetPassword {
                token,
                password_hash,
                reply,
            } => state.reset_password(&token, password_hash, reply),
        }
        // Resets (a login that went through) and sweeps are written after the message.
        if let Err(e) = state.persist_throttles() {
            tracing::error!(error = %e, "cannot write dashboard throttle state");
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<DirectoryMsg>,
        event: SupervisionEvent,
        state: &mut DirectoryState,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(cell, err) => {
                let Some(id) = state.tenant_of(cell.get_id()) else {
                    return Ok(());
                };
                tracing::error!(tenant = %id, error = %err, "tenant actor crashed");
                state.unpublish(id);
                if state.charge_restart(id) {
                    if let Err(e) = state.spawn_tenant(&myself, id).await {
                        tracing::error!(tenant = %id, error = %e, "tenant actor restart failed");
                    }
                } else {
                    tracing::error!(tenant = %id, "tenant over its restart budget; answering 503");
                }
            }
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                if let Some(id) = state.tenant_of(cell.get_id()) {
                    state.unpublish(id);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Whether `slug` is a valid tenant slug: 2-50 of `[a-z0-9-]`, starting and ending with a
/// letter or digit.
pub fn is_valid_slug(slug: &str) -> bool {
    let b = slug.as_bytes();
    (2..=50).contains(&b.len())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b.first().is_some_and(|c| *c != b'-')
        && b.last().is_some_and(|c| *c != b'-')
}

/// A slug derived from a tenant name: transliterated, lowercase `[a-z0-9-]`.
pub fn slug_from_name(name: &str) -> String {
    let mut s = slug::slugify(name);
    s.truncate(MAX_SLUG_LEN);
    let s = s.trim_matches('-').to_owned();
    if s.len() < 2 {
        "tenant".to_owned()
    } else {
        s
    }
}

fn new_api_key() -> String {
    format!("{API_KEY_PREFIX}{}", random_token(32))
}

fn api_key_meta(key: &str, now: OffsetDateTime) -> ApiKeyMeta {
    ApiKeyMeta {
        hash: sha256(key.as_bytes()),
        prefix: key.chars().take(API_KEY_PREFIX.len() + 8).collect(),
        created_at: now,
    }
}

fn info_of(rec: &TenantRecord) -> TenantInfo {
    TenantInfo {
        id: rec.id,
        slug: rec.slug.clone(),
        name: rec.name.clone(),
        tier: rec.tier,
        created_at: rec.created_at,
        api_key_prefix: rec.api_key.prefix.clone(),
        api_key_created_at: rec.api_key.created_at,
        mau_cap: rec.mau_cap.or(rec.tier.default_mau_cap()),
    }
}

fn summary_of(rec: &TenantRecord) -> TenantSummary {
    TenantSummary {
        id: rec.id,
        slug: rec.slug.clone(),
        name: rec.name.clone(),
    }
}

impl DirectoryState {
    fn publish_index(&self) {
        let mut index = Index::default();
        for rec in self.tenants.values() {
            index.by_key_hash.insert(rec.api_key.hash, rec.id);
            index.by_slug.insert(rec.slug.clone(), rec.id);
            index.slugs.insert(rec.id, rec.slug.clone());
        }
        self.published.index.store(index.into());
    }

    /// Takes a stopped (or stopping) actor out of the directory's map and the published one.
    fn unpublish(&mut self, id: TenantId) -> Option<RunningTenant> {
        let r = self.running.remove(&id)?;
        self.by_actor.remove(&r.actor.get_id());
        self.published.running.remove(&id);
        Some(r)
    }

    fn by_slug(&self, slug: &str) -> Option<&TenantRecord> {
        self.tenants.values().find(|t| t.slug == slug)
    }

    fn tenant_of(&self, actor: ractor::ActorId) -> Option<TenantId> {
        self.by_actor.get(&actor).copied()
    }

    fn details(&self, rec: &TenantRecord, with_owners: bool) -> TenantDetails {
        let owners = if with_owners {
            self.list_members(rec.id)
                .unwrap_or_default()
                .into_iter()
                .filter(|m| m.role == Role::Owner)
                .map(|m| m.email)
                .collect()
        } else {
            Vec::new()
        };
        TenantDetails {
            info: info_of(rec),
            owners,
            running: self.running.contains_key(&rec.id),
        }
    }

    fn find_account(&self, email: &str) -> Option<AccountCredential> {
        let idx = self
            .platform
            .get::<AccountEmailIndex>(email.to_lowercase().as_bytes())
            .ok()??;
        let acct = self
            .platform
            .get::<DashboardAccount>(idx.account.as_bytes())
            .ok()??;
        Some(AccountCredential {
            account_id: acct.id,
            password_hash: acct.password_hash,
        })
    }

    fn idempotency_aad(key_hash: &[u8; 32]) -> Vec<u8> {
        let mut aad = b"onboarding-idempotency:".to_vec();
        aad.extend_from_slice(key_hash);
        aad
    }

    /// The earlier answer for this idempotency key, if any and still fresh.
    fn replay(
        &self,
        idem: &IdempotencyKey,
        now: OffsetDateTime,
    ) -> Result<Option<Created>, DirectoryError> {
        let key_hash = self.idempotency_hasher.hash(idem.key.as_bytes());
        let Some(rec) = self.platform.get::<IdempotencyRecord>(&key_hash)? else {
            return Ok(None);
        };
        if now - rec.created_at > IDEMPOTENCY_TTL {
            return Ok(None);
        }
        let fingerprint = self.idempotency_hasher.hash(&idem.fingerprint);
        if !tessera_storage::ct_eq(&fingerprint, &rec.body_hash) {
            return Err(DirectoryError::IdempotencyConflict);
        }
        let plain = self
            .master_key
            .open(&Self::idempotency_aad(&key_hash), &rec.response)?;
        serde_json::from_slice(&plain)
            .map(Some)
            .map_err(|e| DirectoryError::Internal(format!("idempotency record: {e}")))
    }

    fn unique_slug(&self, base: &str) -> String {
        if !self.tenants.values().any(|t| t.slug == base) {
            return base.to_owned();
        }
        (2u32..)
            .map(|n| format!("{base}-{n}"))
            .find(|s| !self.tenants.values().any(|t| &t.slug == s))
            .unwrap_or_else(|| format!("{base}-{}", Uuid::new_v4().simple()))
    }

    fn create_tenant(
        &mut self,
        req: NewTenant,
        reply: RpcReplyPort<Result<CreateOutcome, DirectoryError>>,
    ) {
        let now = OffsetDateTime::now_utc();
        if let Some(idem) = &req.idempotency {
            match self.replay(idem, now) {
                Ok(Some(created)) => {
                    // The first answer may not be on disk yet: replay it only once it is.
                    reply_when_durable(
                        self.platform.ticket(),
                        reply,
                        Ok(CreateOutcome {
                            created,
                            replayed: true,
                            verification: None,
                        }),
                        DirectoryError::Internal,
                    );
                    return;
                }
                Ok(None) => {}
                Err(e) => {
                    let _ = reply.send(Err(e));
                    return;
                }
            }
        }
        let result = self.insert_tenant(req, now);
        match result {
            Ok((created, verification)) => reply_when_durable(
                self.platform.ticket(),
                reply,
                Ok(CreateOutcome {
                    created,
                    replayed: false,
                    verification,
                }),
                DirectoryError::Internal,
            ),
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    fn insert_tenant(
        &mut self,
        req: NewTenant,
        now: OffsetDateTime,
    ) -> Result<(Created, Option<MailedToken>), DirectoryError> {
        let slug = match req.slug {
            Some(s) if self.tenants.values().any(|t| t.slug == s) => {
                return Err(DirectoryError::SlugTaken(s))
            }
            Some(s) => s,
            None => self.unique_slug(&slug_from_name(&req.name)),
        };
        let api_key = new_api_key();
        let rec = TenantRecord {
            id: TenantId::new(),
            slug,
            name: req.name,
            tier: Tier::Free,
            created_at: now,
            api_key: api_key_meta(&api_key, now),
            mau_cap: None,
        };
        let mut batch = PlatformBatch::default();
        batch.put(rec.id.as_bytes(), &rec)?;
        batch.put(
            rec.slug.as_bytes(),
            &SlugIndex(TenantRef { tenant: rec.id }),
        )?;
        batch.put(
            &rec.api_key.hash,
            &ApiKeyIndex(TenantRef { tenant: rec.id }),
        )?;
        let membership = Membership {
            tenant: rec.id,
            role: Role::Owner,
        };
        let owner_record = MembershipRecord {
            role: Role::Owner,
            added_at: now,
        };
        let mut verification = None;
        let owner = match req.owner {
            None => None,
            Some(NewOwner::Create {
                email,
                password_hash,
            }) => {
                let email = email.to_lowercase();
                if self
                    .platform
                    .get::<AccountEmailIndex>(email.as_bytes())?
                    .is_some()
                {
                    return Err(DirectoryError::AccountExists);
                }
                // Nothing proves yet that whoever signed up holds this mailbox: the account
                // reaches only this tenant until the mailed link is used with its session.
                let acct = DashboardAccount {
                    id: Uuid::now_v7(),
                    email,
                    password_hash,
                    created_at: now,
                    memberships: vec![membership],
                    email_verified: false,
                    onboarded_tenant: Some(rec.id),
                    epoch: 0,
                };
                let token = random_token(32);
                batch.put(
                    &sha256(token.as_bytes()),
                    &AccountTokenRecord {
                        account: acct.id,
                        email: acct.email.clone(),
                        purpose: AccountTokenPurpose::Verify,
                        epoch: 0,
                        expires_at: now + dashboard::VERIFY_TTL,
                    },
                )?;
                verification = Some(MailedToken {
                    token,
                    email: acct.email.clone(),
                });
                batch.put(acct.id.as_bytes(), &acct)?;
                batch.put(
                    acct.email.as_bytes(),
                    &AccountEmailIndex { account: acct.id },
                )?;
                batch.put(&membership_key(&rec.id, &acct.id), &owner_record)?;
                Some(OwnerSummary {
                    id: acct.id,
                    email: acct.email,
                })
            }
            Some(NewOwner::Existing { account_id }) => {
                let mut acct = self
                    .platform
                    .get::<DashboardAccount>(account_id.as_bytes())?
                    .ok_or_else(|| DirectoryError::Internal("account vanished".into()))?;
                acct.memberships.push(membership);
                batch.put(acct.id.as_bytes(), &acct)?;
                batch.put(&membership_key(&rec.id, &acct.id), &owner_record)?;
                Some(OwnerSummary {
                    id: acct.id,
                    email: acct.email,
                })
            }
        };
        let created = Created {
            tenant: summary_of(&rec),
            owner,
            api_key,
        };
        if let Some(idem) = &req.idempotency {
            let key_hash = self.idempotency_hasher.hash(idem.key.as_bytes());
            let plain = serde_json::to_vec(&created)
                .map_err(|e| DirectoryError::Internal(e.to_string()))?;
            let record = IdempotencyRecord {
                body_hash: self.idempotency_hasher.hash(&idem.fingerprint),
                created_at: now,
                response: self
                    .master_key
                    .seal(&Self::idempotency_aad(&key_hash), &plain)?,
            };
            batch.put(&key_hash, &record)?;
        }
        self.platform.apply(batch)?;
        tracing::info!(tenant = %rec.id, slug = %rec.slug, "tenant created");
        self.tenants.insert(rec.id, rec);
        self.publish_index();
        Ok((created, verification))
    }

    fn update_record(
        &mut self,
        slug: &str,
        change: impl FnOnce(&mut TenantRecord, &mut PlatformBatch),
    ) -> Result<TenantRecord, DirectoryError> {
        let mut rec = self
            .by_slug(slug)
            .cloned()
            .ok_or(DirectoryError::TenantNotFound)?;
        let mut batch = PlatformBatch::default();
        change(&mut rec, &mut batch);
        batch.put(rec.id.as_bytes(), &rec)?;
        self.platform.apply(batch)?;
        if let Some(running) = self.running.get(&rec.id) {
            let _ = running.actor.cast(TenantMsg::UpdateInfo {
                info: info_of(&rec),
            });
        }
        self.tenants.insert(rec.id, rec.clone());
        self.publish_index();
        Ok(rec)
    }

    /// Changes a tenant record and answers its details once durable.
    fn update_and_reply(
        &mut self,
        slug: &str,
        change: impl FnOnce(&mut TenantRecord),
        reply: RpcReplyPort<Result<TenantDetails, DirectoryError>>,
    ) {
        match self.update_record(slug, |rec, _| change(rec)) {
            Ok(rec) => {
                let details = self.details(&rec, true);
                reply_when_durable(
                    self.platform.ticket(),
                    reply,
                    Ok(details),
                    DirectoryError::Internal,
                );
            }
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    fn rotate_api_key(
        &mut self,
        slug: &str,
        reply: RpcReplyPort<Result<RotatedKey, DirectoryError>>,
    ) {
        let api_key = new_api_key();
        let now = OffsetDateTime::now_utc();
        let mut index_error = None;
        let result = self.update_record(slug, |rec, batch| {
            batch.remove(Kind::ApiKeyIndex, &rec.api_key.hash);
            rec.api_key = api_key_meta(&api_key, now);
            if let Err(e) = batch.put(
                &rec.api_key.hash,
                &ApiKeyIndex(TenantRef { tenant: rec.id }),
            ) {
                index_error = Some(e);
            }
        });
        let result = match (result, index_error) {
            (_, Some(e)) => Err(e.into()),
            (r, None) => r,
        };
        match result {
            Ok(rec) => {
                tracing::info!(tenant = %rec.id, "API key rotated");
                reply_when_durable(
                    self.platform.ticket(),
                    reply,
                    Ok(RotatedKey {
                        tenant: summary_of(&rec),
                        api_key,
                    }),
                    DirectoryError::Internal,
                );
            }
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    /// Records a crash; false when the tenant is over its budget (it then answers 503 until
    /// the window passes).
    fn charge_restart(&mut self, id: TenantId) -> bool {
        let now = Instant::now();
        let budget = self.restarts.entry(id).or_insert(RestartBudget {
            window_start: now,
            count: 0,
            failed_until: None,
        });
        if now.duration_since(budget.window_start) > RESTART_WINDOW {
            budget.window_start = now;
            budget.count = 0;
        }
        budget.count += 1;
        if budget.count > MAX_RESTARTS {
            budget.failed_until = Some(now + RESTART_WINDOW);
            false
        } else {
            true
        }
    }

    /// Loads the dashboard throttles' entries written by earlier runs; expired or unreadable
    /// ones are deleted.
    fn restore_throttles(&mut self) -> Result<(), DirectoryError> {
        let clocks = Clocks::now();
        let mut stale = PlatformBatch::default();
        let mut any_stale = false;
        for item in self.platform.scan_prefix::<PlatformThrottleRecord>(b"") {
            let (key, PlatformThrottleRecord(saved)) = item?;
            let kept = match key.split_first() {
                Some((&THROTTLE_ACCOUNTS, k)) => String::from_key_bytes(k)
                    .is_some_and(|k| self.account_throttle.restore(k, &saved, clocks)),
                Some((&THROTTLE_IPS, k)) => IpAddr::from_key_bytes(k)
                    .is_some_and(|k| self.ip_throttle.restore(k, &saved, clocks)),
                _ => false,
            };
            if !kept {
                stale.remove(Kind::PlatformThrottle, &key);
                any_stale = true;
            }
        }
        if any_stale {
            self.platform.apply(stale)?;
        }
        Ok(())
    }

    /// Writes (or deletes) the dashboard throttle entries changed since the last time, in
    /// one batch.
    fn persist_throttles(&mut self) -> Result<(), DirectoryError> {
        if !(self.account_throttle.has_changes() || self.ip_throttle.has_changes()) {
            return Ok(());
        }
        let clocks = Clocks::now();
        let mut batch = PlatformBatch::default();
        put_changes(
            &mut batch,
            THROTTLE_ACCOUNTS,
            self.account_throttle.take_changes(clocks),
        )?;
        put_changes(
            &mut batch,
            THROTTLE_IPS,
            self.ip_throttle.take_changes(clocks),
        )?;
        self.platform.apply(batch)?;
        Ok(())
    }

    /// Stops every tenant actor unused for longer than `tenant_idle`, one at a time. Each is
    /// first taken out of the published map (new requests then come here, and wait behind this
    /// message), then drained: it refuses new messages (their senders retry through
    /// `EnsureRunning`), handles those already queued, and stops. Only then can a successor
    /// start, so one tenant never has two actors.
    async fn retire_idle(&mut self) {
        let Some(idle) = self.tenant_idle else {
            return;
        };
        let idle_ids: Vec<TenantId> = self
            .running
            .iter()
            // Whole seconds on both sides: `>` means more than `idle` has really passed.
            .filter(|(_, r)| r.idle_secs() > idle.as_secs())
            .map(|(id, _)| *id)
            .collect();
        if idle_ids.is_empty() {
            return;
        }
        for id in &idle_ids {
            let Some(r) = self.unpublish(*id) else {
                continue;
            };
            let drained = r.actor.drain_and_wait(Some(RETIRE_TIMEOUT)).await;
            if drained.is_err() {
                tracing::warn!(tenant = %id, "an idle tenant actor did not drain in time; stopping it");
                r.actor.kill_and_wait(Some(RETIRE_TIMEOUT)).await.ok();
            }
        }
        tracing::info!(
            retired = idle_ids.len(),
            running = self.running.len(),
            "idle tenant actors stopped"
        );
    }

    async fn ensure_running(
        &mut self,
        myself: &ActorRef<DirectoryMsg>,
        id: TenantId,
    ) -> Result<RunningTenant, DirectoryError> {
        if let Some(r) = self.running.get(&id) {
            if matches!(r.actor.get_status(), ractor::ActorStatus::Running) {
                return Ok(r.clone());
            }
        }
        if let Some(b) = self.restarts.get_mut(&id) {
            match b.failed_until {
                Some(until) if Instant::now() < until => {
                    return Err(DirectoryError::TenantUnavailable)
                }
                Some(_) => {
                    b.failed_until = None;
                    b.count = 0;
                }
                None => {}
            }
        }
        self.spawn_tenant(myself, id).await
    }

    async fn spawn_tenant(
        &mut self,
        myself: &ActorRef<DirectoryMsg>,
        id: TenantId,
    ) -> Result<RunningTenant, DirectoryError> {
        let rec = self
            .tenants
            .get(&id)
            .ok_or(DirectoryError::TenantNotFound)?;
        let cells = TenantCells::empty();
        let args = TenantArgs {
            info: info_of(rec),
            store: self.root.tenant(id),
            master_key: self.master_key.clone(),
            fault_injection: self.fault_injection,
            runtime: self.runtime.clone(),
            cells: cells.clone(),
        };
        let (actor, _) = Actor::spawn_linked(None, TenantActor, args, myself.get_cell())
            .await
            .map_err(|e| {
                tracing::error!(tenant = %id, error = %e, "tenant actor failed to start");
                DirectoryError::TenantUnavailable
            })?;
        let running = RunningTenant {
            actor,
            cells,
            last_used: Arc::new(std::sync::atomic::AtomicU64::new(
                crate::published::unix_now(),
            )),
        };
        self.running.insert(id, running.clone());
        self.by_actor.insert(running.actor.get_id(), id);
        self.published.running.insert(id, running.clone());
        Ok(running)
    }
}

/// Puts each changed entry of one dashboard throttle in `batch` (or removes its record).
fn put_changes<K: ThrottleKey>(
    batch: &mut PlatformBatch,
    throttle: u8,
    changes: Vec<(K, Option<SavedCount>)>,
) -> Result<(), DirectoryError> {
    for (key, saved) in changes {
        let key = saved_key(throttle, &key);
        match saved {
            Some(saved) => batch.put(&key, &PlatformThrottleRecord(saved))?,
            None => batch.remove(Kind::PlatformThrottle, &key),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_derived_and_validated() {
        assert_eq!(slug_from_name("Acme Corp"), "acme-corp");
        assert_eq!(slug_from_name("Żółć & Co."), "zolc-co");
        assert_eq!(slug_from_name("!!"), "tenant");
        assert!(slug_from_name(&"x".repeat(80)).len() <= MAX_SLUG_LEN);
        assert!(is_valid_slug("acme-2"));
        assert!(!is_valid_slug("-acme"));
        assert!(!is_valid_slug("Acme"));
        assert!(!is_valid_slug("a"));
        assert!(!is_valid_slug("a_b"));
    }
}
