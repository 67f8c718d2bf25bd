//! Tessera: a multi-tenant authentication server in one binary.
//!
//! The library holds everything; `main.rs` only parses the command line. [`run`] takes a
//! validated [`Config`] and a shutdown future, so tests and the binary start the same server.

pub mod admin;
pub mod app;
pub mod captcha;
pub mod cluster;
pub mod config;
pub mod delivery;
pub mod dns;
pub mod eudi;
pub mod http;
pub mod i18n;
pub mod metrics;
pub mod net;
pub mod oidc_rp;
pub mod ops;
pub mod origin;
pub mod social;
pub mod telemetry;
pub mod verified_tokens;
pub mod webhooks;

use std::{fs::File, future::Future, io::Write, sync::Arc, time::Duration};

use fs4::fs_std::FileExt;
use ractor::Actor;
use tessera_actors::{
    directory::dashboard::SessionPolicy,
    handle::Published,
    outbound::{ChannelOutbound, MailJob, Withdrawn},
    tenant::{PlatformSmsCaps, TenantRuntime, TokenPolicy},
    Directory, DirectoryArgs, DirectoryHandle, PasswordHasher, PoolLimits, TenantMsg,
};
use tessera_storage::{Durability, MasterKey, Store, StoreOptions};
use thiserror::Error;
use tokio::net::TcpListener;

use crate::{
    app::App,
    captcha::Captcha,
    config::Config,
    delivery::backlog::Backlog,
    metrics::{Metrics, Sources},
};

#[derive(Debug, Error)]
pub enum StartError {
    #[error("data directory {0} is in use by another tessera process")]
    DataDirInUse(String),
    #[error("cannot prepare the data directory {path}: {source}")]
    DataDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("master key: {0}")]
    MasterKey(String),
    #[error("storage: {0}")]
    Storage(String),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the admin socket {path}: {source}")]
    AdminSocket {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cluster: {0}")]
    Cluster(String),
    #[error("{0}")]
    Other(String),
}

/// Refuses a master key file that group or others may read or write, unless
/// `security.allow_insecure_master_key_file_mode` allows it, which is then said at every start.
/// A file about to be created is made 0600.
fn check_key_file_mode(config: &Config, key_path: &std::path::Path) -> Result<(), StartError> {
    let Some(shared) =
        MasterKey::shared_file(key_path).map_err(|e| StartError::MasterKey(e.to_string()))?
    else {
        return Ok(());
    };
    if !config.security.allow_insecure_master_key_file_mode {
        return Err(StartError::MasterKey(format!(
            "{shared} (or set security.allow_insecure_master_key_file_mode = true to start anyway)"
        )));
    }
    tracing::warn!(
        path = %shared.path.display(),
        mode = %format!("{:04o}", shared.mode),
        "INSECURE: the master key file is readable or writable by group or others, and \
         security.allow_insecure_master_key_file_mode = true uses it anyway; anyone who can \
         read it can open every sealed secret. Fix: chmod 600 {}",
        shared.path.display()
    );
    Ok(())
}

/// The exit code of a process stopped by the storage watchdog (`EX_TEMPFAIL`: restart it).
pub const STORAGE_STALLED_EXIT: i32 = 75;

/// Starts the server and serves until `shutdown` resolves; then drains connections, stops the
/// actors, flushes storage and returns.
pub async fn run(config: Config, shutdown: impl Future<Output = ()>) -> Result<(), StartError> {
    let data_dir = config.storage.data_dir.clone();
    let dir_err = |source| StartError::DataDir {
        path: data_dir.display().to_string(),
        source,
    };
    // The server's alone: created 0700, and an existing one made so.
    tessera_storage::files::private_dir(&data_dir).map_err(dir_err)?;
    // One server per data directory: an exclusive lock held for the life of the process.
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(data_dir.join("LOCK"))
        .map_err(dir_err)?;
    match FileExt::try_lock_exclusive(&lock) {
        Ok(true) => {}
        Ok(false) => return Err(StartError::DataDirInUse(data_dir.display().to_string())),
        Err(e) => return Err(dir_err(e)),
    }

    let store = Store::open(&StoreOptions {
        path: tessera_storage::store::db_path(&data_dir),
        cache_capacity_bytes: config.storage.cache_capacity_mb.saturating_mul(1024 * 1024),
        durability: if config.storage.sync_writes {
            Durability::Sync
        } else {
            Durability::Relaxed
        },
        max_unflushed_batches: config.storage.max_unflushed_batches,
    })
    .map_err(|e| StartError::Storage(e.to_string()))?;
    if config.storage.watchdog_secs > 0 {
        let limit = std::time::Duration::from_secs(config.storage.watchdog_secs);
        tessera_storage::watch::start_watchdog(limit, |stalled| {
            // A graceful shutdown would wait on the same locks: stop at once. Acknowledged
            // writes are on disk; sled recovers from its log at the next start.
            tracing::error!(
                call = %stalled.op,
                running_secs = stalled.age.as_secs(),
                exit_code = STORAGE_STALLED_EXIT,
                "a storage call has not returned; stopping for a restart"
            );
            std::process::exit(STORAGE_STALLED_EXIT);
        })
        .map_err(|e| StartError::Storage(e.to_string()))?;
    }
    let key_path = config.master_key_path();
    // A rotation a crash interrupted is finished (or undone) before the key file is read.
    tessera_storage::rotation::settle_key_files(&store, &key_path)
        .map_err(|e| StartError::MasterKey(e.to_string()))?;
    let bound = store
        .has_master_key()
        .map_err(|e| StartError::Storage(e.to_string()))?;
    if bound && !key_path.exists() {
        return Err(StartError::MasterKey(format!(
            "{} is missing, but this data directory was written with a master key; restore the key file",
            key_path.display()
        )));
    }
    check_key_file_mode(&config, &key_path)?;
    let (master_key, created) =
        MasterKey::load_or_create(&key_path).map_err(|e| StartError::MasterKey(e.to_string()))?;
    let master_key = store
        .bind_master_key(&master_key)
        .map_err(|e| StartError::MasterKey(e.to_string()))?;
    if created {
        tracing::warn!(path = %key_path.display(), "created a new master key; back it up");
    }

    let addr = config
        .listen_addr()
        .map_err(|e| StartError::Other(e.to_string()))?;
    let (listener, bound) = bind(addr).await?;
    let base_url = if config.server.base_url.is_empty() {
        format!("http://{bound}")
    } else {
        config.server.base_url.trim_end_matches('/').to_owned()
    };
    let accounts_url = if config.server.accounts_url.is_empty() {
        base_url.clone()
    } else {
        config.server.accounts_url.trim_end_matches('/').to_owned()
    };

    let (mail_tx, mail_rx) = tokio::sync::mpsc::unbounded_channel();
    let (sms_tx, sms_rx) = tokio::sync::mpsc::unbounded_channel();
    let (webhooks_tx, webhooks_rx) = tokio::sync::mpsc::unbounded_channel();
    let withdrawn = Withdrawn::default();
    let runtime = TenantRuntime {
        tokens: TokenPolicy {
            access_ttl: Duration::from_secs(config.tokens.access_ttl_secs),
            refresh_ttl: Duration::from_secs(config.tokens.refresh_ttl_secs),
            reuse_grace: Duration::from_secs(config.tokens.refresh_reuse_grace_secs),
            code_ttl: Duration::from_secs(config.tokens.authorization_code_ttl_secs),
        },
        accounts_url,
        outbound: Arc::new(ChannelOutbound {
            mail: mail_tx,
            sms: sms_tx,
            withdrawn: withdrawn.clone(),
            webhooks: webhooks_tx,
        }),
        clock_offset: time::Duration::seconds(config.testing.clock_offset_secs),
        sms_countries: Arc::new(config.sms.allowed_countries.clone()),
        sms_platform_caps: PlatformSmsCaps {
            free: config.sms.platform_monthly_cap_max.free,
            pro: config.sms.platform_monthly_cap_max.pro,
            enterprise: config.sms.platform_monthly_cap_max.enterprise,
        },
        agents: config.agents.policy(),
        eudi_request_ttl: time::Duration::seconds(i64::from(config.eudi.request_ttl_secs)),
        webhooks: config.webhooks.policy(),
        login_failures_per_address: config.security.login_failures_per_address,
    };
    let published = Published::default();
    let (directory_ref, directory_join) = Actor::spawn(
        None,
        Directory,
        DirectoryArgs {
            store: store.clone(),
            master_key: master_key.clone(),
            published: published.clone(),
            fault_injection: config.testing.fault_injection,
            session_policy: SessionPolicy {
                idle: Duration::from_secs(config.dashboard.idle_timeout_secs),
                absolute: Duration::from_secs(config.dashboard.absolute_timeout_secs),
            },
            runtime,
            tenant_idle: (config.server.tenant_idle_secs > 0)
                .then(|| Duration::from_secs(config.server.tenant_idle_secs)),
            onboarding_per_ip_hourly: config.security.onboarding_per_ip_hourly,
        },
    )
    .await
    .map_err(|e| StartError::Storage(format!("the directory failed to start: {e}")))?;
    let directory = DirectoryHandle::new(
        directory_ref,
        published,
        Duration::from_millis(config.server.actor_timeout_ms),
    );
    // A cluster member takes its tenants' leases before it serves any of them.
    let (cluster, cluster_tasks) = if config.cluster.enabled() {
        let advertise = advertise_url(&config.cluster.advertise_url, bound)?;
        let (cluster, tasks) =
            cluster::Cluster::join(&config.cluster, advertise, directory.clone())
                .await
                .map_err(|e| StartError::Cluster(e.to_string()))?;
        (cluster, Some(tasks))
    } else {
        (cluster::Cluster::off(), None)
    };

    let hasher = PasswordHasher::new(
        config.security.argon2_m_cost_kib,
        config.security.argon2_t_cost,
        config.security.argon2_p_cost,
        PoolLimits {
            threads: config.security.hashing_threads,
            verify_queue_max: config.security.hashing_queue_max,
            hash_queue_max: config.security.hashing_new_queue_max,
        },
    )
    .map_err(StartError::Other)?;
    let captcha = Captcha::new(config.captcha.clone()).map_err(StartError::Other)?;
    let social = social::SocialClient::new(config.social.clone()).map_err(StartError::Other)?;
    let wallet = eudi::WalletVerifier::new(config.eudi.clone()).map_err(StartError::Other)?;
    let mailer = Arc::new(delivery::mail::Mailer::from_config(&config).map_err(StartError::Other)?);
    let (mail_backlog, sms_backlog) = (Backlog::default(), Backlog::default());
    let postman = tokio::spawn(delivery::postman::run(
        mailer.clone(),
        mail_rx,
        Arc::new(SettleInTenant(directory.clone())),
        withdrawn,
        mail_backlog.clone(),
    ));
    let texter = Arc::new(delivery::sms::Texter::from_config(&config).map_err(StartError::Other)?);
    // libphonenumber's metadata is decoded on first use; doing it here keeps the first phone
    // request from holding a worker thread (and whoever waits on the same lazy value).
    let _ = tokio::task::spawn_blocking(|| phonenumber::parse(None, "+33612345678").is_ok()).await;
    let courier = tokio::spawn(delivery::sms::run(
        texter.clone(),
        sms_rx,
        sms_backlog.clone(),
    ));
    let webhook_worker = tokio::spawn(webhooks::run(
        directory.clone(),
        cluster.clone(),
        config.webhooks.clone(),
        webhooks_rx,
    ));
    let ip_hasher = master_key.hasher("audit-ip");
    let sign_in_hasher = master_key.hasher("hosted-sign-in");
    let trusted_proxies = config
        .trusted_proxies()
        .map_err(|e| StartError::Other(e.to_string()))?;
    let policy = http::ConnectionPolicy::from_config(&config.server);
    let service_docs = service_docs_header(&config.server.docs_url, &base_url)?;
    let metrics_addr = config
        .metrics_addr()
        .map_err(|e| StartError::Other(e.to_string()))?;
    let socket_path = config.admin_socket_path();
    let verified_tokens =
        verified_tokens::VerifiedTokens::new(config.tokens.verified_cache_entries);
    let metrics = Metrics::new(Sources {
        store: store.clone(),
        hasher: hasher.clone(),
        mail: mail_backlog,
        sms: sms_backlog,
    });
    let dns = config
        .dns
        .addresses()
        .map_err(|e| StartError::Other(e.to_string()))
        .and_then(|a| dns::TxtLookup::new(&a).map_err(StartError::Other))?;
    let federation = oidc_rp::Federation::new(
        Duration::from_millis(config.sso.timeout_ms),
        Duration::from_secs(config.sso.keys_refetch_secs),
        config.sso.allow_private_targets,
    )
    .map_err(StartError::Other)?;
    let state = Arc::new(App {
        dns,
        federation,
        store: store.clone(),
        config,
        directory: directory.clone(),
        hasher,
        captcha,
        social,
        wallet,
        mailer,
        texter,
        ip_hasher,
        sign_in_hasher,
        metrics,
        verified_tokens,
        trusted_proxies,
        base_url: base_url.clone(),
        service_docs,
        cluster: cluster.clone(),
    });
    let router = http::app(state.clone()).map_err(|e| StartError::Other(e.to_string()))?;
    let management = match metrics_addr {
        Some(addr) => Some(bind(addr).await?),
        None => None,
    };

    let admin_listener =
        admin::server::bind(&socket_path).map_err(|source| StartError::AdminSocket {
            path: socket_path.display().to_string(),
            source,
        })?;
    let admin_task = tokio::spawn(admin::server::run(admin_listener, state.clone()));
    let purge_task = tokio::spawn(daily_purge(state.clone()));

    tracing::info!(addr = %bound, base_url = %base_url, "listening");
    // The one line on stdout: scripts and tests read the bound address from it.
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "tessera listening on http://{bound} (admin socket {})",
        socket_path.display()
    );
    let mut stop_management = None;
    if let Some((listener, bound)) = management {
        tracing::info!(addr = %bound, "serving /metrics on the management listener");
        // The second line on stdout, after the one above.
        let _ = writeln!(out, "tessera metrics on http://{bound}/metrics");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = http::management_app(state.clone());
        let task = tokio::spawn(http::serve(
            listener,
            app,
            async move {
                let _ = stopped.await;
            },
            http::ConnectionPolicy {
                grace: Duration::from_secs(1),
                ..policy
            },
        ));
        stop_management = Some((stop, task));
    }
    let _ = out.flush();

    http::serve(listener, router, shutdown, policy).await;

    if let Some((stop, task)) = stop_management {
        let _ = stop.send(());
        let _ = task.await;
    }

    // Connections are drained: hand this node's tenants over before stopping the actors.
    if let Some(tasks) = cluster_tasks {
        cluster.leave(tasks).await;
    }
    admin_task.abort();
    purge_task.abort();
    postman.abort();
    courier.abort();
    webhook_worker.abort();
    let _ = std::fs::remove_file(&socket_path);
    directory.stop().await;
    let _ = directory_join.await;
    if let Err(e) = store.flush_blocking() {
        tracing::error!(error = %e, "final flush failed");
    }
    tracing::info!("stopped");
    drop(lock);
    Ok(())
}

/// `X-Service-Docs`: `server.docs_url` (validated as an http(s) URL; sent in its ASCII
/// serialisation), or the served OpenAPI document, whose 429 answers state each route's limits.
fn service_docs_header(
    docs_url: &str,
    base_url: &str,
) -> Result<axum::http::HeaderValue, StartError> {
    let url = if docs_url.is_empty() {
        format!("{base_url}/v1/openapi.json")
    } else {
        reqwest::Url::parse(docs_url)
            .map_err(|e| StartError::Other(format!("server.docs_url: {e}")))?
            .to_string()
    };
    axum::http::HeaderValue::from_str(&url)
        .map_err(|e| StartError::Other(format!("server.docs_url: {e}")))
}

/// The URL the cluster knows this node by: `cluster.advertise_url`, else the bound address,
/// which must then be one other machines can reach (not 0.0.0.0 or `[::]`).
fn advertise_url(configured: &str, bound: std::net::SocketAddr) -> Result<String, StartError> {
    if !configured.is_empty() {
        return Ok(configured.trim_end_matches('/').to_owned());
    }
    if bound.ip().is_unspecified() {
        return Err(StartError::Cluster(format!(
            "cluster.advertise_url is required when listening on {bound}: other nodes and the router cannot reach an unspecified address"
        )));
    }
    Ok(format!("http://{bound}"))
}

/// Tells a message's tenant that delivery is done with it, so it leaves the queue.
struct SettleInTenant(DirectoryHandle);

impl delivery::postman::Settle for SettleInTenant {
    fn settled(&self, job: &MailJob, _delivered: bool) {
        let Some(tenant) = self.0.tenant_by_id(job.tenant) else {
            return;
        };
        let id = job.id;
        tokio::spawn(async move {
            if tenant.tell(TenantMsg::MailSettled { id }).await.is_err() {
                tracing::warn!(tenant = %tenant.id, "cannot dequeue a delivered message; it may be sent again");
            }
        });
    }
}

/// The daily guest purge of every tenant, first one day after start.
async fn daily_purge(state: Arc<App>) {
    let day = Duration::from_secs(24 * 3600);
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + day, day);
    loop {
        ticks.tick().await;
        match state
            .purge(None, time::OffsetDateTime::now_utc(), false)
            .await
        {
            Ok(reports) => {
                let purged: usize = reports.iter().map(|r| r.purged).sum();
                tracing::info!(tenants = reports.len(), purged, "daily guest purge done");
            }
            Err(e) => tracing::error!(error = ?e.code, "daily guest purge failed"),
        }
    }
}

/// Binds `addr`; answers the listener and the address it got (port 0 picks one).
async fn bind(
    addr: std::net::SocketAddr,
) -> Result<(TcpListener, std::net::SocketAddr), StartError> {
    let listen_error = |source| StartError::Listen {
        addr: addr.to_string(),
        source,
    };
    let listener = TcpListener::bind(addr).await.map_err(listen_error)?;
    let bound = listener.local_addr().map_err(listen_error)?;
    Ok((listener, bound))
}
