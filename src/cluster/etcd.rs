//! The etcd side of a cluster member (the `cluster` feature): the lease, its keep-alive, the
//! owner keys and their reconciliation. See the module above for the protocol.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicI64, AtomicU64, Ordering},
        Arc, RwLock,
    },
    time::{Duration, Instant},
};

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, LeaseKeepAliveStream, LeaseKeeper,
    PutOptions, Txn, TxnOp, TxnOpResponse,
};
use tessera_actors::DirectoryHandle;
use tessera_storage::TenantId;
use thiserror::Error;
use tokio::{sync::Notify, task::JoinHandle};

use super::refusal::Refusal;
use crate::config::ClusterConfig;

#[derive(Debug, Error)]
pub enum ClusterError {
    #[error("cannot reach etcd at {endpoints}: {source}")]
    Connect {
        endpoints: String,
        #[source]
        source: etcd_client::Error,
    },
    #[error("etcd: {0}")]
    Etcd(#[from] etcd_client::Error),
    #[error("etcd did not answer the keep-alive in time")]
    KeepAliveTimeout,
    #[error("the keep-alive stream ended")]
    KeepAliveClosed,
    #[error("the lease expired")]
    LeaseExpired,
}

/// Who holds a tenant's owner key, as last seen.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Owner {
    /// This node, under this lease (a key under an older lease vanished with it).
    Here { lease: i64 },
    /// Another node: its advertised URL.
    Elsewhere(String),
}

/// This node's membership: its lease, and who holds each tenant as last seen.
pub(super) struct Member {
    client: Client,
    advertise: String,
    prefix: String,
    ttl: Duration,
    /// The origin of `serve_until`.
    origin: Instant,
    /// Milliseconds after `origin` until which the lease is surely alive on etcd's side; 0
    /// while no lease is held. Past it every tenant is refused.
    serve_until: AtomicU64,
    /// The lease this node's owner keys are attached to; 0 while none is held.
    lease: AtomicI64,
    owners: RwLock<HashMap<TenantId, Owner>>,
    directory: DirectoryHandle,
    /// Wakes the reconciliation at once (a new lease).
    reconcile_now: Notify,
}

impl Member {
    /// Connects to etcd, takes this node's lease and every free tenant of the store, and
    /// starts keeping them, answering the tasks that keep them. Fails when etcd cannot be
    /// reached: a node configured for a cluster never serves on its own.
    pub(super) async fn join(
        config: &ClusterConfig,
        advertise: String,
        directory: DirectoryHandle,
    ) -> Result<(Arc<Member>, Vec<JoinHandle<()>>), ClusterError> {
        let timeout = Duration::from_millis(config.timeout_ms);
        let options = ConnectOptions::new()
            .with_connect_timeout(timeout)
            .with_timeout(timeout)
            .with_keep_alive(timeout, timeout);
        let client = Client::connect(&config.etcd_endpoints, Some(options))
            .await
            .map_err(|source| ClusterError::Connect {
                endpoints: config.etcd_endpoints.join(", "),
                source,
            })?;
        let shared = Arc::new(Member {
            client,
            advertise,
            prefix: config.key_prefix.clone(),
            ttl: Duration::from_secs(config.lease_ttl_secs),
            origin: Instant::now(),
            serve_until: AtomicU64::new(0),
            lease: AtomicI64::new(0),
            owners: RwLock::new(HashMap::new()),
            directory,
            reconcile_now: Notify::new(),
        });
        // The first grant's failure is the start's: etcd answers connections lazily.
        let (keeper, stream) = shared.grant().await.map_err(|e| match e {
            ClusterError::Etcd(source) => ClusterError::Connect {
                endpoints: config.etcd_endpoints.join(", "),
                source,
            },
            other => other,
        })?;
        shared.reconcile().await?;
        tracing::info!(
            advertise = %shared.advertise,
            lease = shared.lease.load(Ordering::Acquire),
            owned = shared.owned(),
            "joined the cluster"
        );
        let tasks = vec![
            tokio::spawn(keep_lease(shared.clone(), keeper, stream)),
            tokio::spawn(reconcile_loop(shared.clone())),
        ];
        Ok((shared, tasks))
    }

    /// Tries to take a tenant just created here, so it is served before the next
    /// reconciliation. A failure leaves it to that reconciliation.
    pub(super) async fn claim_new(&self, tenant: TenantId) {
        let lease = self.lease.load(Ordering::Acquire);
        if lease == 0 {
            return;
        }
        match self.claim(tenant, lease).await {
            Ok(Some(owner)) => self.set_owner(tenant, owner),
            Ok(None) => {}
            Err(e) => tracing::warn!(tenant = %tenant.0, error = %e, "cannot claim a new tenant"),
        }
    }

    /// How long a client should wait before asking again after a refusal.
    pub(super) fn retry_after_secs(&self) -> u64 {
        self.ttl.as_secs().div_ceil(2).max(1)
    }

    /// Revokes the lease (the tasks are stopped already), so the other nodes take this
    /// node's tenants at their next look instead of after the time to live.
    pub(super) async fn leave(&self) {
        self.serve_until.store(0, Ordering::Release);
        let lease = self.lease.swap(0, Ordering::AcqRel);
        if lease != 0 {
            let mut client = self.client.clone();
            match client.lease_revoke(lease).await {
                Ok(_) => tracing::info!(lease, "left the cluster; tenants released"),
                Err(e) => tracing::warn!(
                    error = %e,
                    "cannot revoke the lease; its tenants move when it expires"
                ),
            }
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    pub(super) fn admit(&self, tenant: TenantId) -> Result<(), Refusal> {
        let lease = self.lease.load(Ordering::Acquire);
        let live = lease != 0 && self.now_ms() < self.serve_until.load(Ordering::Acquire);
        let owners = self.owners.read().unwrap_or_else(|e| e.into_inner());
        match owners.get(&tenant) {
            Some(Owner::Here { lease: held }) if live && *held == lease => Ok(()),
            Some(Owner::Elsewhere(url)) if live => Err(Refusal::Elsewhere(url.clone())),
            _ => Err(Refusal::Unowned),
        }
    }

    fn owned(&self) -> usize {
        let lease = self.lease.load(Ordering::Acquire);
        self.owners
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|o| **o == Owner::Here { lease })
            .count()
    }

    fn set_owner(&self, tenant: TenantId, owner: Owner) {
        let mut owners = self.owners.write().unwrap_or_else(|e| e.into_inner());
        let before = owners.insert(tenant, owner.clone());
        drop(owners);
        if before.as_ref() != Some(&owner) {
            match &owner {
                Owner::Here { .. } => {
                    tracing::info!(tenant = %tenant.0, "serving the tenant: its lease is held here")
                }
                Owner::Elsewhere(url) => {
                    tracing::info!(tenant = %tenant.0, owner = %url, "the tenant is served by another node")
                }
            }
        }
    }

    /// Lets this node serve until five sixths of `ttl_secs` after `sent`, when the
    /// keep-alive etcd answered with that time to live was sent.
    fn extend(&self, sent: Instant, ttl_secs: i64) {
        let ttl_ms = u64::try_from(ttl_secs).unwrap_or(0).saturating_mul(1000);
        let sent_ms = u64::try_from(sent.duration_since(self.origin).as_millis()).unwrap_or(0);
        self.serve_until
            .store(sent_ms.saturating_add(ttl_ms * 5 / 6), Ordering::Release);
    }

    fn owner_key(&self, tenant: TenantId) -> String {
        format!("{}/tenants/{}/owner", self.prefix, tenant.0)
    }

    /// Grants a new lease and opens its keep-alive stream; this node may serve under it
    /// from now on.
    async fn grant(&self) -> Result<(LeaseKeeper, LeaseKeepAliveStream), ClusterError> {
        let mut client = self.client.clone();
        let sent = Instant::now();
        let ttl = i64::try_from(self.ttl.as_secs()).unwrap_or(i64::MAX);
        let granted = client.lease_grant(ttl, None).await?;
        let streams = client.lease_keep_alive(granted.id()).await?;
        self.lease.store(granted.id(), Ordering::Release);
        self.extend(sent, granted.ttl());
        Ok(streams)
    }

    /// Takes `tenant` under `lease` if nobody holds it; answers who holds it then (`None`
    /// when the key vanished between the two steps: the next look decides).
    async fn claim(&self, tenant: TenantId, lease: i64) -> Result<Option<Owner>, ClusterError> {
        let key = self.owner_key(tenant);
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                key.clone(),
                self.advertise.clone(),
                Some(PutOptions::new().with_lease(lease)),
            )])
            .or_else([TxnOp::get(key, None)]);
        let mut client = self.client.clone();
        let answer = client.txn(txn).await?;
        if answer.succeeded() {
            return Ok(Some(Owner::Here { lease }));
        }
        for op in answer.op_responses() {
            if let TxnOpResponse::Get(got) = op {
                if let Some(kv) = got.kvs().first() {
                    return Ok(Some(owner_of(kv.lease(), kv.value(), lease)));
                }
            }
        }
        Ok(None)
    }

    /// Reads every owner key and takes the tenants of this store that nobody holds.
    async fn reconcile(&self) -> Result<(), ClusterError> {
        let lease = self.lease.load(Ordering::Acquire);
        if lease == 0 {
            return Ok(());
        }
        let prefix = format!("{}/tenants/", self.prefix);
        let mut client = self.client.clone();
        let listing = client
            .get(prefix.as_str(), Some(GetOptions::new().with_prefix()))
            .await?;
        let mut seen: HashMap<TenantId, Owner> = HashMap::new();
        for kv in listing.kvs() {
            let id = std::str::from_utf8(kv.key())
                .ok()
                .and_then(|k| k.strip_prefix(&prefix))
                .and_then(|k| k.strip_suffix("/owner"))
                .and_then(|id| uuid::Uuid::try_parse(id).ok());
            if let Some(id) = id {
                seen.insert(TenantId(id), owner_of(kv.lease(), kv.value(), lease));
            }
        }
        for tenant in self.directory.all_tenants() {
            let owner = match seen.remove(&tenant.id) {
                Some(owner) => Some(owner),
                None => match self.claim(tenant.id, lease).await {
                    Ok(owner) => owner,
                    Err(e) => {
                        tracing::warn!(tenant = %tenant.id.0, error = %e, "cannot claim a tenant");
                        None
                    }
                },
            };
            match owner {
                Some(owner) => self.set_owner(tenant.id, owner),
                // Nobody holds it and this node could not take it: refuse it until a look
                // decides.
                None => {
                    self.owners
                        .write()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&tenant.id);
                }
            }
        }
        Ok(())
    }
}

/// The owner a key names: this node when it is attached to this node's lease.
fn owner_of(key_lease: i64, value: &[u8], lease: i64) -> Owner {
    if key_lease == lease {
        Owner::Here { lease }
    } else {
        Owner::Elsewhere(String::from_utf8_lossy(value).into_owned())
    }
}

/// Keeps the lease alive. When the keep-alive stream fails, opens it again for the same lease
/// (this node serves meanwhile only until the deadline of its last answer); when etcd says
/// the lease has expired, stops serving every tenant at once and takes a new lease as soon
/// as etcd answers again.
async fn keep_lease(shared: Arc<Member>, keeper: LeaseKeeper, stream: LeaseKeepAliveStream) {
    let pause = (shared.ttl / 6).max(Duration::from_millis(200));
    let mut streams = (keeper, stream);
    loop {
        let (keeper, stream) = streams;
        let lost = hold(&shared, keeper, stream).await;
        if matches!(lost, ClusterError::LeaseExpired) {
            shared.serve_until.store(0, Ordering::Release);
            shared.lease.store(0, Ordering::Release);
            tracing::warn!("the cluster lease has expired; this node serves no tenant until it takes a new one");
        } else {
            tracing::warn!(error = %lost, "the cluster lease's keep-alive failed; opening it again");
        }
        streams = loop {
            tokio::time::sleep(pause).await;
            let lease = shared.lease.load(Ordering::Acquire);
            let opened = if lease != 0 {
                let mut client = shared.client.clone();
                client
                    .lease_keep_alive(lease)
                    .await
                    .map_err(ClusterError::from)
            } else {
                shared.grant().await.inspect(|_| {
                    tracing::info!(
                        lease = shared.lease.load(Ordering::Acquire),
                        "took a new cluster lease"
                    );
                    shared.reconcile_now.notify_one();
                })
            };
            match opened {
                Ok(s) => break s,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot reach etcd for the cluster lease; retrying")
                }
            }
        };
    }
}

/// Sends a keep-alive every third of the time to live and extends the serving deadline with
/// each answer; answers why it stopped.
async fn hold(
    shared: &Member,
    mut keeper: LeaseKeeper,
    mut stream: LeaseKeepAliveStream,
) -> ClusterError {
    let period = shared.ttl / 3;
    loop {
        let sent = Instant::now();
        if let Err(e) = keeper.keep_alive().await {
            return e.into();
        }
        let answer = match tokio::time::timeout(period, stream.message()).await {
            Err(_) => return ClusterError::KeepAliveTimeout,
            Ok(Err(e)) => return e.into(),
            Ok(Ok(None)) => return ClusterError::KeepAliveClosed,
            Ok(Ok(Some(answer))) => answer,
        };
        if answer.ttl() <= 0 {
            return ClusterError::LeaseExpired;
        }
        shared.extend(sent, answer.ttl());
        tokio::time::sleep_until((sent + period).into()).await;
    }
}

/// Looks at the owner keys every half time to live (at least every 500 ms apart), and at
/// once after a new lease.
async fn reconcile_loop(shared: Arc<Member>) {
    let period = (shared.ttl / 2).max(Duration::from_millis(500));
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = shared.reconcile_now.notified() => {}
        }
        if let Err(e) = shared.reconcile().await {
            tracing::warn!(error = %e, "cannot read the tenants' owners from etcd");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_names_this_node_only_under_its_own_lease() {
        assert_eq!(owner_of(7, b"http://a:1", 7), Owner::Here { lease: 7 });
        assert_eq!(
            owner_of(6, b"http://b:2", 7),
            Owner::Elsewhere("http://b:2".into())
        );
    }
}
