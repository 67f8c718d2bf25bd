//! The snapshot the directory publishes for handlers: where each tenant is found, and the tenant
//! actors running now.
//!
//! Only the directory writes it; [`crate::handle`] reads it, so a request reaches its tenant
//! without a hop through the directory's mailbox.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::{SystemTime, UNIX_EPOCH},
};

use arc_swap::ArcSwap;
use ractor::ActorRef;
use tessera_storage::TenantId;

use crate::{
    records::Role,
    tenant::{TenantCells, TenantMsg},
};

/// Where each tenant is found: rebuilt by the directory when a tenant, slug or key changes.
#[derive(Default, Clone)]
pub struct Index {
    pub by_key_hash: HashMap<[u8; 32], TenantId>,
    pub by_slug: HashMap<String, TenantId>,
    pub slugs: HashMap<TenantId, String>,
    /// The unrevoked management keys, by the SHA-256 of the key.
    pub by_management_key: HashMap<[u8; 32], ManagementKeyRef>,
}

/// What a handler needs of a management key.
#[derive(Clone, Debug)]
pub struct ManagementKeyRef {
    pub tenant: TenantId,
    pub id: uuid::Uuid,
    pub role: Role,
    pub expires_at: Option<time::OffsetDateTime>,
}

/// A running tenant actor and the signing keys it publishes for handlers.
#[derive(Clone)]
pub struct RunningTenant {
    pub actor: ActorRef<TenantMsg>,
    /// Written only by the actor; read by every token check and the edge checks, so neither
    /// costs an actor hop.
    pub cells: TenantCells,
    /// When a handler last reached this actor (Unix seconds): the directory stops actors idle
    /// for longer than `tenant_idle`.
    pub last_used: Arc<AtomicU64>,
}

impl RunningTenant {
    /// Records a use now. Written at most once a second, so a busy tenant's handlers do not
    /// all write the same cache line.
    pub fn touch(&self) {
        let now = unix_now();
        if self.last_used.load(Ordering::Relaxed) != now {
            self.last_used.store(now, Ordering::Relaxed);
        }
    }

    /// Seconds since the last use.
    pub fn idle_secs(&self) -> u64 {
        unix_now().saturating_sub(self.last_used.load(Ordering::Relaxed))
    }
}

pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The tenant actors running now: written only by the directory, one entry at a time as an
/// actor starts or stops (starting the 10,000th tenant costs what starting the first did).
pub type Running = dashmap::DashMap<TenantId, RunningTenant>;

/// The snapshot the directory publishes.
#[derive(Clone, Default)]
pub struct Published {
    pub index: Arc<ArcSwap<Index>>,
    pub running: Arc<Running>,
}
