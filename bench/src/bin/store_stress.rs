//! `store_stress`: drives Tessera's store the way the tenant actors do, at the most it can take,
//! for a bounded time, and says whether any storage call stuck.
//!
//! Each of `--actors` tasks owns one tenant's store and loops as a busy tenant actor does: it
//! applies a batch of three records over `--keys` keys (two puts and a removal), takes a group
//! commit ticket and hands it to a task that awaits it (the reply that waits for the disk), and
//! between writes reads a record and, now and then, scans a prefix. Every call goes through the
//! store's pacing and is registered with its watchdog table. A thread of its own samples, every
//! 100 ms, the oldest call in flight, the batches applied and not yet flushed, and (every
//! second) the data directory's size.
//!
//! `--durability sync` is the server's default (tickets wait for sled's flush and the fdatasync
//! of its data file); `relaxed` is `storage.sync_writes = false` (the flush, no fdatasync).
//!
//! A call in flight for `--stall-secs` is a stall: the program prints its report with
//! `"stalled": true` at once (a hung sled never returns to finish the run) and exits 1.
//! Otherwise it prints the report after `--secs` and exits 0. One JSON document on stdout.

use std::{
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use clap::{Parser, ValueEnum};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tessera_bench::{round3, LatencySummary, Result};
use tessera_storage::{flusher::Durability, watch, Kind, Store, StoreOptions, TenantId};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Mode {
    Sync,
    Relaxed,
}

#[derive(Parser)]
#[command(
    name = "store_stress",
    about = "The store under the tenant actors' write pattern, at its maximum rate"
)]
struct Args {
    /// How long to drive the store, in seconds.
    #[arg(long, default_value_t = 60)]
    secs: u64,
    #[arg(long, value_enum, default_value_t = Mode::Sync)]
    durability: Mode,
    /// Writer tasks (one tenant each).
    #[arg(long, default_value_t = 64)]
    actors: usize,
    /// Keys each writer's batches spread over.
    #[arg(long, default_value_t = 256)]
    keys: u32,
    /// storage.max_unflushed_batches.
    #[arg(long, default_value_t = tessera_storage::flusher::DEFAULT_MAX_UNFLUSHED)]
    max_unflushed: u64,
    /// A call in flight this long is a stall.
    #[arg(long, default_value_t = 5)]
    stall_secs: u64,
    /// Where the data directory goes (a temporary directory inside it, removed at the end).
    #[arg(long, default_value = "/tmp")]
    tmp_dir: PathBuf,
}

/// A record shaped like a session: a few hundred bytes of JSON.
#[derive(Serialize, Deserialize)]
struct Row {
    n: u64,
    payload: String,
}

tessera_storage::record!(Row in TenantRecord: Kind::Session, "stress row", version 1);

/// What the sampler thread saw.
#[derive(Default)]
struct Seen {
    oldest_call_max: Duration,
    outstanding_max: u64,
    in_flight_max: usize,
    disk_bytes_max: u64,
}

/// What the writers did.
#[derive(Default)]
struct Counts {
    batches: AtomicU64,
    acknowledged: AtomicU64,
    reads: AtomicU64,
    scans: AtomicU64,
    errors: AtomicU64,
}

fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("store_stress: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(report) => {
            println!("{report}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("store_stress: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[allow(clippy::too_many_lines)]
async fn run(args: Args) -> Result<Value> {
    let tmp = tempfile::Builder::new()
        .prefix("store-stress.")
        .tempdir_in(&args.tmp_dir)?;
    let path = tmp.path().join("db");
    let durability = match args.durability {
        Mode::Sync => Durability::Sync,
        Mode::Relaxed => Durability::Relaxed,
    };
    let store = Store::open(&StoreOptions {
        path: path.clone(),
        cache_capacity_bytes: 64 << 20,
        durability,
        max_unflushed_batches: args.max_unflushed,
    })?;
    let counts = Arc::new(Counts::default());
    let seen = Arc::new(Mutex::new(Seen::default()));
    let acks = Arc::new(Mutex::new(Vec::<Duration>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mode = format!("{:?}", args.durability).to_lowercase();

    // The report, from what is counted and seen so far.
    let report = {
        let (counts, seen, acks, store, mode) = (
            counts.clone(),
            seen.clone(),
            acks.clone(),
            store.clone(),
            mode.clone(),
        );
        let (actors, keys, max_unflushed) = (args.actors, args.keys, args.max_unflushed);
        move |stalled: Option<watch::Running>| -> Value {
            let secs = started.elapsed().as_secs_f64();
            let batches = counts.batches.load(Ordering::Relaxed);
            let seen = seen.lock().unwrap_or_else(|p| p.into_inner());
            let acks = acks.lock().unwrap_or_else(|p| p.into_inner());
            let pacing = store.flusher().pacing();
            json!({
                "durability": mode,
                "secs": round3(secs),
                "actors": actors,
                "keys_per_actor": keys,
                "max_unflushed_batches": max_unflushed,
                "batches": batches,
                "batches_per_s": round3(batches as f64 / secs.max(1e-9)),
                "acknowledged": counts.acknowledged.load(Ordering::Relaxed),
                "reads": counts.reads.load(Ordering::Relaxed),
                "scans": counts.scans.load(Ordering::Relaxed),
                "errors": counts.errors.load(Ordering::Relaxed),
                "ack_latency": LatencySummary::of(&acks),
                "outstanding_max": seen.outstanding_max,
                "paced_writes": pacing.paced_total,
                "calls_in_flight_max": seen.in_flight_max,
                "oldest_call_max_ms": round3(seen.oldest_call_max.as_secs_f64() * 1e3),
                "disk_bytes_max": seen.disk_bytes_max,
                "stalled": stalled.is_some(),
                "stalled_call": stalled.map(|r| json!({
                    "op": r.op.as_str(),
                    "running_ms": round3(r.age.as_secs_f64() * 1e3),
                })),
            })
        }
    };

    // The watchdog: a stall ends the run at once, with its report.
    {
        let report = report.clone();
        watch::start_watchdog(Duration::from_secs(args.stall_secs), move |running| {
            println!("{}", report(Some(running)));
            std::process::exit(1);
        })?;
    }

    // The sampler.
    let sampler = {
        let (seen, stop, store, dir) = (seen.clone(), stop.clone(), store.clone(), path.clone());
        std::thread::Builder::new()
            .name("stress-sampler".into())
            .spawn(move || {
                let mut tick = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    let oldest = watch::oldest().map_or(Duration::ZERO, |r| r.age);
                    let outstanding = store.flusher().pacing().outstanding;
                    let in_flight = watch::in_flight();
                    let disk = tick.is_multiple_of(10).then(|| dir_size(&dir));
                    tick += 1;
                    let mut s = seen.lock().unwrap_or_else(|p| p.into_inner());
                    s.oldest_call_max = s.oldest_call_max.max(oldest);
                    s.outstanding_max = s.outstanding_max.max(outstanding);
                    s.in_flight_max = s.in_flight_max.max(in_flight);
                    if let Some(d) = disk {
                        s.disk_bytes_max = s.disk_bytes_max.max(d);
                    }
                }
            })?
    };

    // The writers.
    let payload = "x".repeat(240);
    let mut writers = Vec::new();
    for a in 0..args.actors {
        let tenant = store.tenant(TenantId::new());
        let (counts, acks, stop, payload) =
            (counts.clone(), acks.clone(), stop.clone(), payload.clone());
        let keys = args.keys.max(2);
        writers.push(tokio::spawn(async move {
            let mut n: u64 = a as u64;
            while !stop.load(Ordering::Relaxed) {
                n = n
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let k = (n >> 33) as u32 % keys;
                let mut batch = tenant.batch();
                let row = Row {
                    n,
                    payload: payload.clone(),
                };
                let ok = batch.put(&k.to_be_bytes(), &row).is_ok()
                    && batch.put(&((k + 1) % keys).to_be_bytes(), &row).is_ok();
                batch.remove(Kind::Session, &((k + 2) % keys).to_be_bytes());
                if !ok || tenant.apply(batch).is_err() {
                    counts.errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                counts.batches.fetch_add(1, Ordering::Relaxed);
                let ticket = tenant.ticket();
                let (counts2, acks2) = (counts.clone(), acks.clone());
                let taken = Instant::now();
                tokio::spawn(async move {
                    if ticket.wait().await.is_ok() {
                        counts2.acknowledged.fetch_add(1, Ordering::Relaxed);
                        let mut acks = acks2.lock().unwrap_or_else(|p| p.into_inner());
                        // A sample of one in eight keeps the memory bounded on long runs.
                        if n.is_multiple_of(8) {
                            acks.push(taken.elapsed());
                        }
                    } else {
                        counts2.errors.fetch_add(1, Ordering::Relaxed);
                    }
                });
                match tenant.get::<Row>(&((k + 3) % keys).to_be_bytes()) {
                    Ok(_) => counts.reads.fetch_add(1, Ordering::Relaxed),
                    Err(_) => counts.errors.fetch_add(1, Ordering::Relaxed),
                };
                if n.is_multiple_of(16) {
                    // A page of a listing: up to 32 rows, each decoded.
                    if tenant.scan::<Row>(&[]).take(32).all(|r| r.is_ok()) {
                        counts.scans.fetch_add(1, Ordering::Relaxed);
                    } else {
                        counts.errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
                // A tenant actor takes its next message from the mailbox: others run meanwhile.
                tokio::task::yield_now().await;
            }
        }));
    }

    tokio::time::sleep(Duration::from_secs(args.secs)).await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await?;
    }
    // The last tickets resolve with the last flush.
    let last = store.tenant(TenantId::new()).ticket();
    tokio::time::timeout(Duration::from_secs(args.stall_secs), last.wait())
        .await
        .map_err(|_| "the last flush did not finish")??;
    tokio::time::sleep(Duration::from_millis(200)).await;
    sampler.join().map_err(|_| "the sampler panicked")?;
    let mut out = report(None);
    out["disk_bytes_end"] = json!(dir_size(&path));
    Ok(out)
}
