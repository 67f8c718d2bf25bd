//! Prometheus metrics: requests by route and status, latency by route, tenant actors running,
//! and what an operator watches besides: group commit latency, the mail and text message
//! backlogs, the password hashing queues, the sign-in rules' refusals and the size of the
//! database.
//!
//! Requests and group commits are counted as they happen; the rest is read from its owner
//! ([`Sources`]) at each scrape, so a gauge is never stale.

use std::{
    sync::{atomic::AtomicU64, Arc, Mutex},
    time::{Duration, SystemTime},
};

use prometheus_client::{
    encoding::{text::encode, EncodeLabelSet},
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};
use tessera_actors::{login_guard, PasswordHasher};
use tessera_storage::{flusher::FlushObserver, Store};

use crate::delivery::backlog::Backlog;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    /// `verify` (checks of existing passwords) or `new` (hashes of new passwords).
    queue: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabels {
    /// The sign-in rule that refused: `pair`, `account`, `address`, `captcha`, `device`.
    rule: &'static str,
}

type LatencyFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

/// A gauge of seconds.
type Seconds = Gauge<f64, AtomicU64>;

fn latency_histogram() -> Histogram {
    // 0.25 ms .. ~8 s
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.00025, 2.0, 16,
    ))
}

fn group_commit_histogram() -> Histogram {
    // 0.1 ms .. ~3.3 s: an fdatasync takes tenths of a millisecond on an SSD, tens on a disk
    // that spins, seconds on one that is failing.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.0001, 2.0, 16,
    ))
}

/// Hears each group commit's duration from the storage flusher.
struct GroupCommit(Histogram);

impl FlushObserver for GroupCommit {
    fn flushed(&self, took: Duration) {
        self.0.observe(took.as_secs_f64());
    }
}

/// What the scrape reads from the rest of the server.
pub struct Sources {
    /// The database: its size on disk, and its flusher, which reports group commits.
    pub store: Store,
    /// The password hashing pool, for its queues.
    pub hasher: PasswordHasher,
    /// The mail the postman holds.
    pub mail: Backlog,
    /// The text messages the courier holds.
    pub sms: Backlog,
}

/// The gauges of one delivery backlog.
#[derive(Default)]
struct BacklogGauges {
    depth: Gauge,
    oldest: Seconds,
}

impl BacklogGauges {
    /// `channel`: the name's stem (`mail`); `messages` and `message`: what it carries, for
    /// the help lines.
    fn register(&self, registry: &mut Registry, channel: &str, messages: &str, message: &str) {
        registry.register(
            format!("{channel}_queue_depth"),
            format!(
                "{messages} handed to delivery and not yet delivered or given up (being sent \
                 or waiting for a retry)"
            ),
            self.depth.clone(),
        );
        registry.register(
            format!("{channel}_queue_oldest_age_seconds"),
            format!(
                "Seconds since the oldest {message} that delivery holds was queued by its \
                 tenant; 0 when it holds none"
            ),
            self.oldest.clone(),
        );
    }

    fn set(&self, backlog: &Backlog, now: SystemTime) {
        let depth = backlog.depth(now);
        self.depth.set(count(depth.messages));
        self.oldest.set(depth.oldest.as_secs_f64());
    }
}

/// The store's pacing and the age of its oldest call in flight (what the watchdog watches).
#[derive(Default)]
struct StorageGauges {
    unflushed: Gauge,
    unflushed_max: Gauge,
    paced_now: Gauge,
    paced_total: Gauge,
    oldest_call: Seconds,
}

impl StorageGauges {
    fn register(&self, registry: &mut Registry) {
        registry.register(
            "storage_unflushed_batches",
            "Batches applied to sled and not yet flushed",
            self.unflushed.clone(),
        );
        registry.register(
            "storage_unflushed_batches_max",
            "storage.max_unflushed_batches: past it a writer waits for the flush under way",
            self.unflushed_max.clone(),
        );
        registry.register(
            "storage_paced_writers",
            "Writers waiting now for a flush before they may apply their batch",
            self.paced_now.clone(),
        );
        registry.register(
            "storage_paced_writes",
            "Batches that waited for a flush before they were applied, since the start",
            self.paced_total.clone(),
        );
        registry.register(
            "storage_oldest_call_seconds",
            "How long the oldest storage call now in flight has run; past \
             storage.watchdog_secs the process stops",
            self.oldest_call.clone(),
        );
    }

    fn set(&self, store: &Store) {
        let pacing = store.flusher().pacing();
        self.unflushed.set(count_u64(pacing.outstanding));
        self.unflushed_max.set(count_u64(pacing.max_unflushed));
        self.paced_now.set(count_u64(pacing.paced_now));
        self.paced_total.set(count_u64(pacing.paced_total));
        let oldest = tessera_storage::watch::oldest().map_or(0.0, |r| r.age.as_secs_f64());
        self.oldest_call.set(oldest);
    }
}

fn count_u64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub struct Metrics {
    registry: Registry,
    storage: StorageGauges,
    requests: Family<RequestLabels, Counter>,
    latency: LatencyFamily,
    tenants_running: Gauge,
    sources: Sources,
    size_on_disk: Gauge,
    mail: BacklogGauges,
    sms: BacklogGauges,
    hash_queue: Family<QueueLabels, Gauge>,
    hash_queue_capacity: Family<QueueLabels, Gauge>,
    /// Mirrors the sign-in rules' refusal counts ([`login_guard::refusals`]); the lock keeps
    /// two scrapes from adding the same refusals twice.
    login_refusals: Mutex<Family<RuleLabels, Counter>>,
}

impl Metrics {
    /// The metrics of a server whose other parts are `sources`. Installs itself as the store's
    /// flush observer, so group commits are timed from now on.
    pub fn new(sources: Sources) -> Self {
        let mut registry = Registry::with_prefix("tessera");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = LatencyFamily::new_with_constructor(latency_histogram);
        let tenants_running = Gauge::default();
        let group_commit = group_commit_histogram();
        let size_on_disk = Gauge::default();
        let storage = StorageGauges::default();
        storage.register(&mut registry);
        let (mail, sms) = (BacklogGauges::default(), BacklogGauges::default());
        let hash_queue = Family::<QueueLabels, Gauge>::default();
        let hash_queue_capacity = Family::<QueueLabels, Gauge>::default();
        registry.register(
            "http_requests",
            "HTTP requests by method, route template and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "HTTP request latency by route template",
            latency.clone(),
        );
        registry.register(
            "tenant_actors_running",
            "Tenant supervisor actors running now",
            tenants_running.clone(),
        );
        registry.register(
            "storage_group_commit_duration_seconds",
            "Group commit latency: from the start of a flush to the end of its fdatasync \
             (the flush alone with storage.sync_writes = false)",
            group_commit.clone(),
        );
        registry.register(
            "storage_size_on_disk_bytes",
            "Size of the sled database on disk, as sled reports it",
            size_on_disk.clone(),
        );
        mail.register(&mut registry, "mail", "Mail messages", "mail message");
        sms.register(&mut registry, "sms", "Text messages", "text message");
        registry.register(
            "password_hash_queue_depth",
            "Password hashing jobs waiting for a thread, by queue (verify: checks of existing \
             passwords; new: hashes of new passwords)",
            hash_queue.clone(),
        );
        registry.register(
            "password_hash_queue_capacity",
            "Bound of each password hashing queue; a job past it is answered 503 at once",
            hash_queue_capacity.clone(),
        );
        let login_refusals = Family::<RuleLabels, Counter>::default();
        registry.register(
            "login_refusals",
            "Sign-in attempts refused by a sign-in rule (pair: an address and an account; \
             account: every address; address: all accounts from one address; captcha: past \
             the address's count, asked for a CAPTCHA; device: a known device's own count)",
            login_refusals.clone(),
        );
        if !sources
            .store
            .flusher()
            .observe(Arc::new(GroupCommit(group_commit)))
        {
            tracing::warn!("the store's group commits are already observed; not timed here");
        }
        Metrics {
            registry,
            storage,
            requests,
            latency,
            tenants_running,
            sources,
            size_on_disk,
            mail,
            sms,
            hash_queue,
            hash_queue_capacity,
            login_refusals: Mutex::new(login_refusals),
        }
    }

    pub fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method.to_owned(),
                route: route.to_owned(),
                status,
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels {
                route: route.to_owned(),
            })
            .observe(seconds);
    }

    /// The text exposition, with the running-tenant gauge set to `tenants_running` and the
    /// other gauges read from their sources now.
    pub fn render(&self, tenants_running: usize) -> String {
        self.tenants_running.set(count(tenants_running));
        self.read_sources();
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }

    /// Sets the gauges that mirror another part of the server.
    fn read_sources(&self) {
        let Sources {
            store,
            hasher,
            mail,
            sms,
        } = &self.sources;
        match store.size_on_disk() {
            Ok(bytes) => {
                self.size_on_disk
                    .set(i64::try_from(bytes).unwrap_or(i64::MAX));
            }
            // Keeps the last size read; the error is the disk's, for the logs.
            Err(e) => tracing::warn!(error = %e, "cannot read the database's size on disk"),
        }
        self.storage.set(store);
        let now = SystemTime::now();
        self.mail.set(mail, now);
        self.sms.set(sms, now);
        let load = hasher.queue_load();
        for (queue, waiting, max) in [
            ("verify", load.verify_waiting, load.verify_max),
            ("new", load.new_waiting, load.new_max),
        ] {
            let labels = QueueLabels { queue };
            self.hash_queue.get_or_create(&labels).set(count(waiting));
            self.hash_queue_capacity
                .get_or_create(&labels)
                .set(count(max));
        }
        if let Ok(family) = self.login_refusals.lock() {
            for (rule, total) in login_guard::refusals() {
                let counter = family.get_or_create(&RuleLabels {
                    rule: rule.as_str(),
                });
                counter.inc_by(total.saturating_sub(counter.get()));
            }
        }
    }
}

/// A count as a gauge's value.
fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
