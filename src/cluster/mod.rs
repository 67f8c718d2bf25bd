//! Running on several nodes: each tenant is served by one node at a time, the node that holds
//! the tenant's owner key in etcd (`[cluster]`; see ARCHITECTURE.md, "Past one machine").
//!
//! The node holds one etcd lease, kept alive every third of its time to live. For every
//! tenant in its store it tries to create `{key_prefix}/tenants/{tenant id}/owner` = its
//! advertised URL, attached to that lease, in a transaction that succeeds only if the key is
//! absent; a key already there names the owner. Tenants owned elsewhere are looked at again
//! every half time to live, so when their owner stops (its lease expires) one of the others
//! takes them.
//!
//! Fencing: this node serves its tenants only until a local deadline, the moment its last
//! acknowledged keep-alive was sent plus five sixths of the time to live. etcd expires the
//! lease no earlier than a full time to live after it received that keep-alive, so this node
//! stops serving before another node can take its tenants, whatever happened to etcd or to
//! the network in between.
//!
//! The etcd client (and the protobuf compiler its build needs) comes with the `cluster` cargo
//! feature, off by default: a build without it refuses to start with `[cluster] enabled = true`
//! and says how to build one that can (`ClusterError::NotBuilt`).
//!
//! This module only decides whether the node may serve a tenant; it never touches storage
//! and knows nothing of HTTP (`http::middleware::tenant_owner` turns a [`Refusal`] into a
//! 503). Storage is not replicated: each node serves from its own copy of the data.

#[cfg(feature = "cluster")]
mod etcd;
mod refusal;

#[cfg(feature = "cluster")]
use std::sync::Arc;

use tessera_actors::DirectoryHandle;
use tessera_storage::TenantId;
use tokio::task::JoinHandle;

use crate::config::ClusterConfig;

#[cfg(feature = "cluster")]
pub use etcd::ClusterError;
pub use refusal::Refusal;

/// Why a node cannot join its cluster.
#[cfg(not(feature = "cluster"))]
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(
        "[cluster] enabled = true, but this build has no cluster support: build with \
         `cargo build --release --features cluster` (its etcd client needs protoc)"
    )]
    NotBuilt,
}

/// Whether this node may serve a tenant. Cheap to clone. [`Cluster::off`], the default,
/// admits every tenant and never speaks to etcd.
#[derive(Clone, Default)]
pub struct Cluster {
    #[cfg(feature = "cluster")]
    member: Option<Arc<etcd::Member>>,
}

/// The background tasks of a cluster member; stopped by [`Cluster::leave`].
pub struct ClusterTasks(Vec<JoinHandle<()>>);

impl Cluster {
    /// The single-node server: every tenant is served here.
    pub fn off() -> Self {
        Cluster::default()
    }

    /// Connects to etcd, takes this node's lease and every free tenant of the store, and
    /// starts keeping them. Fails when etcd cannot be reached: a node configured for a
    /// cluster never serves on its own.
    #[cfg(feature = "cluster")]
    pub async fn join(
        config: &ClusterConfig,
        advertise: String,
        directory: DirectoryHandle,
    ) -> Result<(Cluster, ClusterTasks), ClusterError> {
        let (member, tasks) = etcd::Member::join(config, advertise, directory).await?;
        Ok((
            Cluster {
                member: Some(member),
            },
            ClusterTasks(tasks),
        ))
    }

    /// A build without the `cluster` feature cannot join a cluster: says how to build one.
    #[cfg(not(feature = "cluster"))]
    pub async fn join(
        _config: &ClusterConfig,
        _advertise: String,
        _directory: DirectoryHandle,
    ) -> Result<(Cluster, ClusterTasks), ClusterError> {
        Err(ClusterError::NotBuilt)
    }

    /// Whether this node shares tenants with others (`[cluster]`).
    #[cfg(feature = "cluster")]
    pub fn is_on(&self) -> bool {
        self.member.is_some()
    }

    /// Whether this node shares tenants with others: never, in a build without `cluster`.
    #[cfg(not(feature = "cluster"))]
    pub fn is_on(&self) -> bool {
        false
    }

    /// Whether this node serves `tenant` now.
    pub fn admit(&self, tenant: TenantId) -> Result<(), Refusal> {
        #[cfg(feature = "cluster")]
        if let Some(member) = &self.member {
            return member.admit(tenant);
        }
        let _ = tenant;
        Ok(())
    }

    /// Tries to take a tenant just created here, so it is served before the next
    /// reconciliation. A failure leaves it to that reconciliation.
    pub async fn claim(&self, tenant: TenantId) {
        #[cfg(feature = "cluster")]
        if let Some(member) = &self.member {
            member.claim_new(tenant).await;
        }
        let _ = tenant;
    }

    /// How long a client should wait before asking again after a refusal.
    pub fn retry_after_secs(&self) -> u64 {
        #[cfg(feature = "cluster")]
        if let Some(member) = &self.member {
            return member.retry_after_secs();
        }
        1
    }

    /// Stops keeping the lease and revokes it, so the other nodes take this node's tenants
    /// at their next look instead of after the time to live. Called once connections are
    /// drained.
    pub async fn leave(&self, tasks: ClusterTasks) {
        for t in tasks.0 {
            t.abort();
        }
        #[cfg(feature = "cluster")]
        if let Some(member) = &self.member {
            member.leave().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_admits_every_tenant() {
        let c = Cluster::off();
        assert!(!c.is_on());
        assert_eq!(c.admit(TenantId::new()), Ok(()));
        assert_eq!(c.retry_after_secs(), 1);
    }
}
