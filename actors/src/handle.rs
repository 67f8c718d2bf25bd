//! Typed handles through which the binary reaches the actors.
//!
//! A request costs one actor hop: the tenant is found in a read-mostly snapshot that only the
//! directory writes, and its running actor is called directly. Only a miss (the tenant's actor
//! is not running) goes through the directory's mailbox.

use std::{sync::Arc, time::Duration};

use ractor::{rpc::CallResult, ActorRef, MessagingErr, RpcReplyPort};
use tessera_storage::{sha256, TenantId};

/// The published snapshot, where it has always been reachable.
pub use crate::published::{Index, ManagementKeyRef, Published, Running, RunningTenant};
use crate::{
    directory::messages::DirectoryMsg,
    error::{CallError, DirectoryError, TenantError},
    reply::{DirectoryReply, TenantReply},
    tenant::{keys::TokenKeys, settings::EdgePolicy, TenantMsg},
};

/// How handlers reach the directory and, through it, the tenants.
#[derive(Clone)]
pub struct DirectoryHandle {
    actor: ActorRef<DirectoryMsg>,
    published: Published,
    timeout: Duration,
}

impl DirectoryHandle {
    pub fn new(actor: ActorRef<DirectoryMsg>, published: Published, timeout: Duration) -> Self {
        DirectoryHandle {
            actor,
            published,
            timeout,
        }
    }

    /// Calls the directory with the handle's timeout.
    pub async fn call<T: Send + 'static>(
        &self,
        build: impl FnOnce(RpcReplyPort<T>) -> DirectoryMsg,
    ) -> Result<T, CallError<DirectoryError>> {
        match self.actor.call(build, Some(self.timeout)).await {
            Ok(CallResult::Success(v)) => Ok(v),
            Ok(CallResult::Timeout) => {
                tracing::warn!("the directory did not answer in time");
                Err(CallError::Unavailable)
            }
            Ok(CallResult::SenderError) | Err(_) => Err(CallError::Unavailable),
        }
    }

    /// Rotates the master key (`DirectoryMsg::RotateMasterKey`). No timeout: a rotation reads
    /// the whole database, and answering before it ends would say nothing true.
    pub async fn rotate_master_key(
        &self,
        new: tessera_storage::MasterKey,
        key_path: std::path::PathBuf,
    ) -> Result<tessera_storage::RotationReport, CallError<DirectoryError>> {
        match self
            .actor
            .call(
                |reply| DirectoryMsg::RotateMasterKey {
                    new,
                    key_path,
                    reply,
                },
                None,
            )
            .await
        {
            Ok(CallResult::Success(Ok(report))) => Ok(report),
            Ok(CallResult::Success(Err(e))) => Err(CallError::Failed(e)),
            Ok(CallResult::Timeout) | Ok(CallResult::SenderError) | Err(_) => {
                Err(CallError::Unavailable)
            }
        }
    }

    /// Calls the directory for a fallible command and flattens the two error layers.
    pub async fn request<T: Send + 'static>(
        &self,
        build: impl FnOnce(DirectoryReply<T>) -> DirectoryMsg,
    ) -> Result<T, CallError<DirectoryError>> {
        match self.call(build).await? {
            Ok(v) => Ok(v),
            Err(DirectoryError::TenantUnavailable) => Err(CallError::Unavailable),
            Err(e) => Err(CallError::Failed(e)),
        }
    }

    /// The tenant whose API key this is, without a mailbox hop.
    pub fn tenant_for_api_key(&self, api_key: &str) -> Option<TenantHandle> {
        let hash = sha256(api_key.as_bytes());
        let index = self.published.index.load();
        let id = *index.by_key_hash.get(&hash)?;
        let slug = index.slugs.get(&id)?.clone();
        Some(self.tenant_handle(id, slug))
    }

    /// The tenant and the grant of an unrevoked management key, without a mailbox hop (the
    /// caller checks its expiry).
    pub fn management_key(&self, key: &str) -> Option<(TenantHandle, ManagementKeyRef)> {
        let hash = sha256(key.as_bytes());
        let index = self.published.index.load();
        let grant = index.by_management_key.get(&hash)?.clone();
        let slug = index.slugs.get(&grant.tenant)?.clone();
        Some((self.tenant_handle(grant.tenant, slug), grant))
    }

    /// The tenant with this slug, without a mailbox hop.
    pub fn tenant_for_slug(&self, slug: &str) -> Option<TenantHandle> {
        let index = self.published.index.load();
        let id = *index.by_slug.get(slug)?;
        Some(self.tenant_handle(id, slug.to_owned()))
    }

    /// Every tenant, in slug order, without a mailbox hop.
    pub fn all_tenants(&self) -> Vec<TenantHandle> {
        let index = self.published.index.load();
        let mut all: Vec<_> = index
            .slugs
            .iter()
            .map(|(id, slug)| self.tenant_handle(*id, slug.clone()))
            .collect();
        all.sort_by(|a, b| a.slug.cmp(&b.slug));
        all
    }

    /// The tenant with this id, without a mailbox hop.
    pub fn tenant_by_id(&self, id: TenantId) -> Option<TenantHandle> {
        let slug = self.published.index.load().slugs.get(&id)?.clone();
        Some(self.tenant_handle(id, slug))
    }

    fn tenant_handle(&self, id: TenantId, slug: String) -> TenantHandle {
        TenantHandle {
            id,
            slug,
            directory: self.clone(),
        }
    }

    /// How many tenant actors run now.
    pub fn running_tenants(&self) -> usize {
        self.published.running.len()
    }

    /// Whether the directory actor is alive and answering.
    pub async fn ping(&self) -> bool {
        self.call(|reply| DirectoryMsg::Ping { reply })
            .await
            .is_ok()
    }

    /// Stops the directory and, with it, every tenant actor.
    pub async fn stop(&self) {
        self.actor
            .stop_and_wait(Some("shutdown".into()), Some(Duration::from_secs(10)))
            .await
            .ok();
    }
}

/// A tenant as a handler sees it: an id, a slug and a way to call its actor.
#[derive(Clone)]
pub struct TenantHandle {
    pub id: TenantId,
    pub slug: String,
    directory: DirectoryHandle,
}

impl TenantHandle {
    /// Calls the tenant's actor with a timeout, starting it through the directory when it is
    /// not running. `build` makes a flow's command (e.g. `AccountsMsg::Register`) or one of the
    /// tenant's own messages. A message sent to an actor that has just stopped is sent once
    /// more to its successor; a timeout or a crash during the call is `Unavailable`.
    pub async fn call<T: Send + 'static, M: Into<TenantMsg>>(
        &self,
        build: impl Fn(TenantReply<T>) -> M,
    ) -> Result<T, CallError<TenantError>> {
        for _attempt in 0..2 {
            let actor = self.running().await?.actor;
            let message = |reply| build(reply).into();
            match actor.call(message, Some(self.directory.timeout)).await {
                Ok(CallResult::Success(Ok(v))) => return Ok(v),
                Ok(CallResult::Success(Err(e))) => return Err(CallError::Failed(e)),
                Ok(CallResult::Timeout) => {
                    tracing::warn!(tenant = %self.id, "a tenant actor did not answer in time");
                    return Err(CallError::Unavailable);
                }
                Ok(CallResult::SenderError) => return Err(CallError::Unavailable),
                Err(MessagingErr::SendErr(_)) | Err(MessagingErr::ChannelClosed) => continue,
                Err(_) => return Err(CallError::Unavailable),
            }
        }
        Err(CallError::Unavailable)
    }

    /// Carries out an organizations command (`OrgCmd`) with `ctx`'s audit context.
    pub async fn organizations(
        &self,
        ctx: &crate::tenant::audit::AuditContext,
        cmd: crate::tenant::organizations::msg::OrgCmd,
    ) -> Result<crate::tenant::organizations::msg::OrgAnswer, CallError<TenantError>> {
        self.call(|reply| TenantMsg::Organizations {
            cmd: cmd.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await
    }

    /// Carries out a single sign-on command (`SsoCmd`) with `ctx`'s audit context.
    pub async fn sso(
        &self,
        ctx: &crate::tenant::audit::AuditContext,
        cmd: crate::tenant::sso::msg::SsoCmd,
    ) -> Result<crate::tenant::sso::msg::SsoAnswer, CallError<TenantError>> {
        self.call(|reply| TenantMsg::Sso {
            cmd: cmd.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await
    }

    /// Sends a message that takes no reply (starting the actor if needed).
    pub async fn tell(&self, message: TenantMsg) -> Result<(), CallError<TenantError>> {
        self.running()
            .await?
            .actor
            .cast(message)
            .map_err(|_| CallError::Unavailable)
    }

    /// The tenant's current signing keys (starting its actor if needed).
    pub async fn keys(&self) -> Result<Arc<TokenKeys>, CallError<TenantError>> {
        Ok(self.running().await?.cells.keys.load_full())
    }

    /// The tenant's OAuth clients as last published (starting its actor if needed).
    /// The tenant's agents and the denylist of their tokens, as its actor last published them.
    pub async fn agents(
        &self,
    ) -> Result<Arc<crate::tenant::agents::PublishedAgents>, CallError<TenantError>> {
        Ok(self.running().await?.cells.agents.load_full())
    }

    pub async fn oauth_clients(
        &self,
    ) -> Result<Arc<crate::tenant::oauth_clients::PublishedClients>, CallError<TenantError>> {
        Ok(self.running().await?.cells.oauth_clients.load_full())
    }

    /// What the HTTP edge checks before the actor is called (starting its actor if needed).
    pub async fn edge(&self) -> Result<Arc<EdgePolicy>, CallError<TenantError>> {
        Ok(self.running().await?.cells.edge.load_full())
    }

    async fn running(&self) -> Result<RunningTenant, CallError<TenantError>> {
        let found = self
            .directory
            .published
            .running
            .get(&self.id)
            .map(|r| r.value().clone());
        if let Some(r) = found {
            if crate::directory::takes_messages(r.actor.get_status()) {
                r.touch();
                return Ok(r);
            }
        }
        let id = self.id;
        let r = self
            .directory
            .request(|reply| DirectoryMsg::EnsureRunning { tenant: id, reply })
            .await
            .map_err(|_| CallError::Unavailable)?;
        r.touch();
        Ok(r)
    }
}
