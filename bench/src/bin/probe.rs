//! `probe`: a latency probe that runs beside a wrk load, one request at a time, and reports the
//! latency of its own requests (wrk cannot split latency by request type, nor tell 503s apart).
//!
//! - `probe me`: `GET /v1/auth/me` at a fixed, modest rate (`--rate` per second, one request at
//!   a time; a late request is sent at once, never two in flight) for `--seconds`. Used during
//!   the mixed load to measure the `me` latency under it.
//! - `probe login`: `--count` logins one after the other, `--interval-ms` apart. Used during
//!   the overload run: how many were refused with 503, whether each 503 had `Retry-After`, and
//!   how fast the refusals came.
//! - `probe timing`: the three routes that answer 202 whatever the address (`magic-link`,
//!   `email-otp`, `forgot-password`), `--count` times each for addresses with an account (read
//!   from `--existing`, each used once per route: the per-address spacing must not bite) and as
//!   many without one, interleaved in a random order, one at a time. Reports the latency of
//!   each kind per route and the gap between their medians and means: how much the answer
//!   time tells about whether an address has an account. Any answer but 202, or bodies that
//!   differ between the kinds, is a failure of the probe.
//!
//! The client is reqwest (async, rustls, as the server's own outbound client) over one
//! keep-alive connection opened before the first measured request (a `GET /healthz`), so the
//! figures are the server's answer time, not TCP set-up. `--fresh-connections` opens a new
//! connection for every request instead (then the figures include the connect). The JSON on
//! stdout says which.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
    time::{Duration, Instant},
};

use clap::{Args, Parser, Subcommand};
use rand::seq::SliceRandom;
use serde_json::json;
use tessera_bench::{round3, LatencySummary, Result};

#[derive(Parser)]
#[command(name = "probe", about = "Latency probe beside a wrk load")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct Common {
    /// The server, `http://127.0.0.1:PORT`.
    #[arg(long)]
    base: String,
    /// The tenant's API key.
    #[arg(long)]
    api_key: String,
    /// A new TCP connection for every request instead of one keep-alive connection.
    #[arg(long)]
    fresh_connections: bool,
    /// Per-request timeout, in seconds.
    #[arg(long, default_value_t = 30.0)]
    timeout_s: f64,
}

#[derive(Subcommand)]
enum Command {
    /// `GET /v1/auth/me` at a fixed rate.
    Me {
        #[command(flatten)]
        common: Common,
        /// The bearer access token.
        #[arg(long)]
        token: String,
        /// Requests per second.
        #[arg(long, default_value_t = 20.0)]
        rate: f64,
        /// How long to probe.
        #[arg(long)]
        seconds: f64,
        /// Wait this long before the first request (lets the load reach its pace).
        #[arg(long, default_value_t = 0.0)]
        delay_s: f64,
    },
    /// `POST /v1/auth/login`, `--count` times, one at a time.
    Login {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        email: String,
        #[arg(long, env = "BENCH_PASSWORD")]
        password: String,
        #[arg(long, default_value_t = 50)]
        count: usize,
        /// Pause between the end of one login and the start of the next.
        #[arg(long, default_value_t = 100)]
        interval_ms: u64,
        /// Wait this long before the first request (lets the load fill the queue).
        #[arg(long, default_value_t = 0.0)]
        delay_s: f64,
    },
    /// The 202 routes, for addresses with and without an account.
    Timing {
        #[command(flatten)]
        common: Common,
        /// Addresses with an account in the tenant, one per line (at least `--count`).
        #[arg(long)]
        existing: PathBuf,
        /// Calls per route and kind of address.
        #[arg(long, default_value_t = 200)]
        count: usize,
        /// Pause between the end of one call and the start of the next.
        #[arg(long, default_value_t = 0)]
        interval_ms: u64,
        /// Makes this run's unknown addresses its own (`nobody-<tag>-<n>@<domain>`).
        #[arg(long, default_value = "0")]
        tag: String,
    },
}

/// The routes `probe timing` compares; each takes `{"email": ...}`.
const TIMING_ROUTES: [&str; 3] = ["magic-link", "email-otp", "forgot-password"];

fn main() -> std::process::ExitCode {
    tessera_bench::main_with("probe", run(Cli::parse()))
}

fn client(c: &Common) -> Result<reqwest::Client> {
    let mut b = reqwest::Client::builder()
        .timeout(Duration::from_secs_f64(c.timeout_s))
        .user_agent("tessera-bench probe");
    if c.fresh_connections {
        b = b.pool_max_idle_per_host(0);
    }
    Ok(b.build()?)
}

fn connection(c: &Common) -> &'static str {
    if c.fresh_connections {
        "fresh connection per request"
    } else {
        "one keep-alive connection"
    }
}

/// What one request came to.
struct Outcome {
    status: Option<u16>,
    retry_after: bool,
    latency: Duration,
}

async fn send(req: reqwest::RequestBuilder) -> Outcome {
    let started = Instant::now();
    match req.send().await {
        Ok(resp) => {
            let status = resp.status().as_u16();
            let retry_after = resp.headers().contains_key(reqwest::header::RETRY_AFTER);
            // The latency includes reading the whole body, as a client experiences it.
            let body_ok = resp.bytes().await.is_ok();
            Outcome {
                status: body_ok.then_some(status),
                retry_after,
                latency: started.elapsed(),
            }
        }
        Err(_) => Outcome {
            status: None,
            retry_after: false,
            latency: started.elapsed(),
        },
    }
}

fn status_counts(outcomes: &[Outcome]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for o in outcomes {
        let k = o.status.map_or("error".to_owned(), |s| s.to_string());
        *m.entry(k).or_insert(0) += 1;
    }
    m
}

fn latencies<'a>(it: impl Iterator<Item = &'a Outcome>) -> LatencySummary {
    let v: Vec<Duration> = it.map(|o| o.latency).collect();
    LatencySummary::of(&v)
}

async fn warm(client: &reqwest::Client, c: &Common) -> Result<()> {
    let r = client.get(format!("{}/healthz", c.base)).send().await?;
    if !r.status().is_success() {
        return Err(format!("GET /healthz answered {}", r.status()).into());
    }
    r.bytes().await?;
    Ok(())
}

async fn run(cli: Cli) -> Result<serde_json::Value> {
    match cli.command {
        Command::Me {
            common,
            token,
            rate,
            seconds,
            delay_s,
        } => {
            if rate.is_nan() || rate <= 0.0 {
                return Err("--rate must be positive".into());
            }
            let client = client(&common)?;
            warm(&client, &common).await?;
            tokio::time::sleep(Duration::from_secs_f64(delay_s)).await;
            let url = format!("{}/v1/auth/me", common.base);
            let period = Duration::from_secs_f64(1.0 / rate);
            let started = tokio::time::Instant::now();
            let end = started + Duration::from_secs_f64(seconds);
            let mut outcomes = Vec::new();
            let mut next = started;
            while next < end {
                tokio::time::sleep_until(next).await;
                let req = client
                    .get(&url)
                    .header("x-api-key", &common.api_key)
                    .bearer_auth(&token);
                outcomes.push(send(req).await);
                next += period;
            }
            let ok: Vec<&Outcome> = outcomes
                .iter()
                .filter(|o| o.status.is_some_and(|s| (200..300).contains(&s)))
                .collect();
            Ok(json!({
                "mode": "me",
                "connection": connection(&common),
                "rate_per_s": rate,
                "sent": outcomes.len(),
                "ok": ok.len(),
                "failed": outcomes.len() - ok.len(),
                "statuses": status_counts(&outcomes),
                "latency": latencies(outcomes.iter()),
            }))
        }
        Command::Login {
            common,
            email,
            password,
            count,
            interval_ms,
            delay_s,
        } => {
            let client = client(&common)?;
            warm(&client, &common).await?;
            tokio::time::sleep(Duration::from_secs_f64(delay_s)).await;
            let url = format!("{}/v1/auth/login", common.base);
            let body = json!({ "email": email, "password": password });
            let mut outcomes = Vec::with_capacity(count);
            for i in 0..count {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(interval_ms)).await;
                }
                let req = client
                    .post(&url)
                    .header("x-api-key", &common.api_key)
                    .json(&body);
                outcomes.push(send(req).await);
            }
            let refused: Vec<&Outcome> =
                outcomes.iter().filter(|o| o.status == Some(503)).collect();
            Ok(json!({
                "mode": "login",
                "connection": connection(&common),
                "sent": outcomes.len(),
                "statuses": status_counts(&outcomes),
                "refused_503": refused.len(),
                "refused_503_with_retry_after": refused.iter().filter(|o| o.retry_after).count(),
                "latency_503": latencies(refused.iter().copied()),
                "latency_other": latencies(outcomes.iter().filter(|o| o.status != Some(503))),
            }))
        }
        Command::Timing {
            common,
            existing,
            count,
            interval_ms,
            tag,
        } => timing(&common, &existing, count, interval_ms, &tag).await,
    }
}

/// One timed call of a 202 route: its latency, or why it is not the expected answer.
async fn timed_202(
    client: &reqwest::Client,
    c: &Common,
    route: &str,
    email: &str,
) -> Result<(Duration, Vec<u8>)> {
    let req = client
        .post(format!("{}/v1/auth/{route}", c.base))
        .header("x-api-key", &c.api_key)
        .json(&json!({ "email": email }));
    let started = Instant::now();
    let resp = req.send().await?;
    let status = resp.status().as_u16();
    let body = resp.bytes().await?;
    let latency = started.elapsed();
    if status != 202 {
        return Err(format!(
            "{route}: expected 202, got {status}: {}",
            String::from_utf8_lossy(&body)
        )
        .into());
    }
    Ok((latency, body.to_vec()))
}

async fn timing(
    c: &Common,
    existing: &std::path::Path,
    count: usize,
    interval_ms: u64,
    tag: &str,
) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(existing)
        .map_err(|e| format!("reading {}: {e}", existing.display()))?;
    let known: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if known.len() < count {
        return Err(format!(
            "{}: {} addresses, --count needs {count}",
            existing.display(),
            known.len()
        )
        .into());
    }
    let domain = known
        .first()
        .and_then(|a| a.rsplit_once('@'))
        .map_or("bench.test", |(_, d)| d);
    let client = client(c)?;
    warm(&client, c).await?;
    let mut routes = serde_json::Map::new();
    for route in TIMING_ROUTES {
        // Every call a (kind, index) pair, in a random order: drift over the run (other load,
        // the allocator, sled's cache) falls on both kinds alike.
        let mut calls: Vec<(bool, usize)> =
            (0..count).flat_map(|i| [(true, i), (false, i)]).collect();
        calls.shuffle(&mut rand::thread_rng());
        let (mut with, mut without) = (Vec::with_capacity(count), Vec::with_capacity(count));
        let mut bodies = BTreeSet::new();
        for (n, (has_account, i)) in calls.into_iter().enumerate() {
            if n > 0 && interval_ms > 0 {
                tokio::time::sleep(Duration::from_millis(interval_ms)).await;
            }
            let email = if has_account {
                known[i].to_owned()
            } else {
                format!("nobody-{tag}-{route}-{i}@{domain}")
            };
            let (latency, body) = timed_202(&client, c, route, &email).await?;
            bodies.insert(body);
            if has_account {
                with.push(latency);
            } else {
                without.push(latency);
            }
        }
        if bodies.len() != 1 {
            return Err(format!("{route}: the answers differ: {bodies:?}").into());
        }
        let (a, b) = (LatencySummary::of(&with), LatencySummary::of(&without));
        let gap = |x: Option<f64>, y: Option<f64>| x.zip(y).map(|(x, y)| round3(x - y));
        routes.insert(
            route.to_owned(),
            json!({
                "existing": a,
                "unknown": b,
                "gap_p50_ms": gap(a.p50_ms, b.p50_ms),
                "gap_mean_ms": gap(a.mean_ms, b.mean_ms),
            }),
        );
    }
    Ok(json!({
        "mode": "timing",
        "connection": connection(c),
        "count_per_kind": count,
        "interval_ms": interval_ms,
        "routes": routes,
    }))
}
