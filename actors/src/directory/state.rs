//! What the directory holds: the platform store, the tenant records, the running tenant actors
//! and the dashboard's throttles. The modules beside this one add its behaviour: `tenants`
//! (records, slugs, API keys, onboarding), `supervision` (tenant actors) and `dashboard`
//! (accounts, sessions, members).

use std::{
    collections::HashMap,
    net::IpAddr,
    time::{Duration, Instant},
};

use tessera_storage::{KeyedHasher, MasterKey, PlatformStore, Store, TenantId};
use uuid::Uuid;

use crate::{
    published::{ManagementKeyRef, Published, RunningTenant},
    records::{AccountTokenPurpose, TenantRecord},
    tenant::TenantRuntime,
    throttle::RateWindow,
};

/// How long dashboard sessions live.
#[derive(Clone, Copy, Debug)]
pub struct SessionPolicy {
    /// Without a request for this long, a session ends.
    pub idle: Duration,
    /// A session ends this long after login, whatever its use.
    pub absolute: Duration,
}

/// A tenant's recent crashes (see `supervision`).
pub(super) struct RestartBudget {
    pub(super) window_start: Instant,
    pub(super) count: u32,
    pub(super) failed_until: Option<Instant>,
}

pub struct DirectoryState {
    pub(super) root: Store,
    pub(super) platform: PlatformStore,
    pub(super) master_key: MasterKey,
    pub(super) idempotency_hasher: KeyedHasher,
    pub(super) published: Published,
    pub(super) fault_injection: bool,
    pub(super) tenants: HashMap<TenantId, TenantRecord>,
    pub(super) running: HashMap<TenantId, RunningTenant>,
    /// Which tenant each running actor serves (for supervision events).
    pub(super) by_actor: HashMap<ractor::ActorId, TenantId>,
    pub(super) restarts: HashMap<TenantId, RestartBudget>,
    pub(super) session_policy: SessionPolicy,
    pub(super) runtime: TenantRuntime,
    /// The sign-in rules of dashboard logins.
    pub(super) login: crate::login_guard::LoginThrottles,
    /// Verification and reset mails per account and purpose.
    pub(super) account_mail_window: RateWindow<(Uuid, AccountTokenPurpose)>,
    /// Dashboard password-reset requests per client address.
    pub(super) reset_ip_window: RateWindow<IpAddr>,
    /// Onboarding sign-ups per client address, in memory.
    pub(super) signup_ips: RateWindow<IpAddr>,
    pub(super) tenant_idle: Option<Duration>,
    /// The unrevoked management keys (published with the index).
    pub(super) management_keys: HashMap<[u8; 32], ManagementKeyRef>,
    /// Each tenant's resources of the scope catalog (resources are never deleted), so a
    /// tenant's catalog is read without a scan of every tenant's.
    pub(super) resources_by_tenant: HashMap<TenantId, Vec<uuid::Uuid>>,
}
