//! `passkeys`: the passkey sign-in load. wrk cannot sign WebAuthn assertions, so this drives
//! it: for every `api_key<TAB>email<TAB>access[<TAB>...]` line of `--input` it registers a
//! device-bound ES256 passkey (a password step-up with `--password` / `BENCH_PASSWORD`, then
//! register begin and finish), then runs `--concurrency` loops for `--seconds` after a
//! `--warmup`, each with a passkey of its own: `assert/begin` (username-less), sign with the
//! software authenticator, `assert/finish`, expecting the token pair. Every sign-in comes from
//! a client address of its own (`X-Forwarded-For`; the server must trust 127.0.0.1), as many
//! users behind a proxy would. Prints `{rps, p50_ms, p99_ms, errors, ...}` like the wrk
//! scenarios, a sign-in (begin + finish) being one request, and with `--server-pid` the
//! server's CPU over the measured seconds.

use std::{
    path::PathBuf,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use clap::Parser;
use serde_json::{json, Value};
use tessera_bench::{
    call, client_ip, field, read_rows, webauthn::SoftAuthenticator, LatencySummary, Result,
};

#[derive(Parser)]
#[command(name = "passkeys", about = "Passkey sign-ins under load")]
struct Cli {
    /// The server, `http://127.0.0.1:PORT`.
    #[arg(long)]
    base: String,
    /// `api_key<TAB>email<TAB>access_token[<TAB>...]` lines: one passkey each.
    #[arg(long)]
    input: PathBuf,
    /// The users' password (for the step-up before registering).
    #[arg(long, env = "BENCH_PASSWORD")]
    password: String,
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    #[arg(long, default_value_t = 3.0)]
    warmup: f64,
    /// The server's process id: its CPU time over the measured seconds is reported.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Clock ticks a second of `/proc/<pid>/stat` (`getconf CLK_TCK`).
    #[arg(long, default_value_t = 100)]
    clock_ticks: u64,
}

/// User plus system CPU time of process `pid`, in clock ticks.
fn cpu_ticks(pid: Option<u32>) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid?)).ok()?;
    // The fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

// The load shares the machine's cores with the server: glibc's allocator was a quarter of
// this generator's CPU, which the server's figure then lost.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    tessera_bench::main_with("passkeys", run(Cli::parse()))
}

/// One user's passkey: its tenant's key and the authenticator holding it.
struct Holder {
    api_key: String,
    authenticator: SoftAuthenticator,
}

/// Registers a passkey for the user of `row`.
async fn register(
    http: &reqwest::Client,
    base: &str,
    password: &str,
    row: &[String],
) -> Result<Holder> {
    let api_key = field(row, 0)?.to_owned();
    let email = field(row, 1)?;
    let access = field(row, 2)?;
    let step_up = call(
        format!("step-up of {email}"),
        200,
        http.post(format!("{base}/v1/auth/step-up/password"))
            .header("x-api-key", &api_key)
            .bearer_auth(access)
            .json(&json!({ "password": password })),
    )
    .await?;
    let token = step_up["step_up_token"].as_str().unwrap_or_default();
    let options = call(
        format!("register/begin of {email}"),
        200,
        http.post(format!("{base}/v1/auth/passkeys/register/begin"))
            .header("x-api-key", &api_key)
            .header("x-step-up-token", token)
            .bearer_auth(access)
            .json(&json!({})),
    )
    .await?;
    let mut authenticator = SoftAuthenticator::device_bound();
    let public_key = &options["publicKey"];
    let origin = origin_of(public_key["rp"]["id"].as_str())?;
    let credential = authenticator.create(public_key, &origin)?;
    call(
        format!("register/finish of {email}"),
        201,
        http.post(format!("{base}/v1/auth/passkeys/register/finish"))
            .header("x-api-key", &api_key)
            .bearer_auth(access)
            .json(&json!({ "response": credential, "nickname": "bench" })),
    )
    .await?;
    Ok(Holder {
        api_key,
        authenticator,
    })
}

fn origin_of(rp_id: Option<&str>) -> Result<String> {
    rp_id
        .map(|id| format!("https://{id}"))
        .ok_or_else(|| "no relying-party id in the options".into())
}

/// The two routes of a sign-in, parsed once.
struct Routes {
    begin: reqwest::Url,
    finish: reqwest::Url,
}

/// One username-less sign-in from address `n`.
async fn sign_in(
    http: &reqwest::Client,
    routes: &Routes,
    holder: &mut Holder,
    n: usize,
) -> Result<()> {
    let ip = client_ip(n);
    let options = call(
        "assert/begin".into(),
        200,
        http.post(routes.begin.clone())
            .header("x-api-key", &holder.api_key)
            .header("x-forwarded-for", &ip)
            .json(&json!({})),
    )
    .await?;
    let public_key = &options["publicKey"];
    let origin = origin_of(public_key["rpId"].as_str())?;
    let assertion = holder.authenticator.get(public_key, &origin)?;
    let pair: Value = call(
        "assert/finish".into(),
        200,
        http.post(routes.finish.clone())
            .header("x-api-key", &holder.api_key)
            .header("x-forwarded-for", &ip)
            .json(&json!({ "response": assertion })),
    )
    .await?;
    if pair["access_token"].is_string() {
        Ok(())
    } else {
        Err(format!("assert/finish: no token pair in {pair}").into())
    }
}

async fn run(cli: Cli) -> Result<Value> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .user_agent("tessera-bench passkeys")
        .pool_max_idle_per_host(cli.concurrency)
        .build()?;
    let rows = read_rows(&cli.input, 3)?;
    let mut holders: Vec<Holder> = Vec::with_capacity(rows.len());
    for row in &rows {
        holders.push(register(&http, &cli.base, &cli.password, row).await?);
    }
    if holders.is_empty() {
        return Err("no users in the input".into());
    }
    let routes = Arc::new(Routes {
        begin: format!("{}/v1/auth/passkeys/assert/begin", cli.base).parse()?,
        finish: format!("{}/v1/auth/passkeys/assert/finish", cli.base).parse()?,
    });
    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let next_ip = Arc::new(AtomicUsize::new(1_000_000));
    let errors = Arc::new(AtomicUsize::new(0));
    let first_error = Arc::new(std::sync::Mutex::new(None::<String>));
    let mut tasks = tokio::task::JoinSet::new();
    let loops = cli.concurrency.max(1);
    // More loops than users would share a credential, whose counters could then race.
    if loops > holders.len() {
        return Err(format!("--concurrency {loops} exceeds the {} users", holders.len()).into());
    }
    for mut holder in holders.into_iter().take(loops) {
        let (http, routes, measuring, stop, next_ip, errors, first_error) = (
            http.clone(),
            routes.clone(),
            measuring.clone(),
            stop.clone(),
            next_ip.clone(),
            errors.clone(),
            first_error.clone(),
        );
        tasks.spawn(async move {
            let mut samples = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let n = next_ip.fetch_add(1, Ordering::Relaxed);
                let started = Instant::now();
                let outcome = sign_in(&http, &routes, &mut holder, n).await;
                if !measuring.load(Ordering::Relaxed) {
                    continue;
                }
                match outcome {
                    Ok(()) => samples.push(started.elapsed()),
                    Err(e) => {
                        errors.fetch_add(1, Ordering::Relaxed);
                        if let Ok(mut slot) = first_error.lock() {
                            slot.get_or_insert_with(|| e.to_string());
                        }
                    }
                }
            }
            samples
        });
    }
    tokio::time::sleep(Duration::from_secs_f64(cli.warmup)).await;
    measuring.store(true, Ordering::Relaxed);
    let started = Instant::now();
    let ticks_before = cpu_ticks(cli.server_pid);
    tokio::time::sleep(Duration::from_secs_f64(cli.seconds)).await;
    measuring.store(false, Ordering::Relaxed);
    let ticks = cpu_ticks(cli.server_pid)
        .zip(ticks_before)
        .map(|(after, before)| after.saturating_sub(before) as f64 / cli.clock_ticks as f64);
    let elapsed = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let mut samples = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        samples.extend(joined?);
    }
    let latency = LatencySummary::of(&samples);
    let first_error = first_error.lock().ok().and_then(|e| e.clone());
    let cpu_s = ticks.filter(|_| elapsed > 0.0);
    Ok(json!({
        "server_cpu_cores": cpu_s.map(|c| tessera_bench::round3(c / elapsed)),
        "server_cpu_ms_per_request": cpu_s
            .filter(|_| !samples.is_empty())
            .map(|c| tessera_bench::round3(c * 1e3 / samples.len() as f64)),
        "sign_ins": samples.len(),
        "seconds": tessera_bench::round3(elapsed),
        "rps": tessera_bench::round3(samples.len() as f64 / elapsed),
        "p50_ms": latency.p50_ms,
        "p99_ms": latency.p99_ms,
        "latency": latency,
        "errors": errors.load(Ordering::Relaxed),
        "first_error": first_error,
        "concurrency": loops,
        "passkeys": rows.len(),
    }))
}
