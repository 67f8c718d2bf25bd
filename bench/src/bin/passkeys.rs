//! `passkeys`: the passkey sign-in load. wrk cannot sign WebAuthn assertions, so this drives
//! it: for every `api_key<TAB>email<TAB>access[<TAB>...]` line of `--input` it registers a
//! device-bound ES256 passkey (a password step-up with `--password` / `BENCH_PASSWORD`, then
//! register begin and finish), then runs `--concurrency` loops for `--seconds` after a
//! `--warmup`, each with a passkey of its own: `assert/begin` (username-less), sign with the
//! software authenticator, `assert/finish`, expecting the token pair. Every sign-in comes from
//! a client address of its own (`X-Forwarded-For`; the server must trust 127.0.0.1), as many
//! users behind a proxy would. Each loop keeps one HTTP/1.1 connection, as wrk does, and reads
//! the options and writes the assertion as typed JSON: the load shares the cores with the
//! server, and a client's pool, URL handling and JSON trees would take from the server's
//! share. Prints `{rps, p50_ms, p99_ms, errors, ...}` like the wrk
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

use std::borrow::Cow;

use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::{
    body::Bytes,
    client::conn::http1::SendRequest,
    header::{CONTENT_TYPE, HOST},
    Request,
};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use serde_json::{json, Value};
use tessera_bench::{call, client_ip, field, read_rows, LatencySummary, Result};
use tessera_testkit::webauthn::{Assertion, SoftAuthenticator};

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

/// One keep-alive HTTP/1.1 connection to the server, opened again when the server closed it.
struct Conn {
    /// `host:port` of the server.
    authority: String,
    sender: SendRequest<Full<Bytes>>,
}

impl Conn {
    async fn open(authority: &str) -> Result<Self> {
        let stream = tokio::net::TcpStream::connect(authority).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        Ok(Conn {
            authority: authority.to_owned(),
            sender,
        })
    }

    /// POSTs `body` (JSON) to `path` for the tenant of `api_key` from client address `ip`;
    /// answers the body when the status is 200.
    async fn post(&mut self, path: &str, api_key: &str, ip: &str, body: Vec<u8>) -> Result<Bytes> {
        if self.sender.is_closed() {
            *self = Conn::open(&self.authority).await?;
        }
        self.sender.ready().await?;
        let request = Request::post(path)
            .header(HOST, &self.authority)
            .header("x-api-key", api_key)
            .header("x-forwarded-for", ip)
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))?;
        let exchange = async {
            let response = self.sender.send_request(request).await?;
            let status = response.status().as_u16();
            let body = response.into_body().collect().await?.to_bytes();
            Ok::<_, hyper::Error>((status, body))
        };
        let (status, body) = tokio::time::timeout(Duration::from_secs(30), exchange)
            .await
            .map_err(|_| format!("{path}: no answer in 30 s"))??;
        if status == 200 {
            Ok(body)
        } else {
            Err(format!(
                "{path}: expected 200, got {status}: {}",
                String::from_utf8_lossy(&body)
            )
            .into())
        }
    }
}

/// What a sign-in needs of `assert/begin`'s answer.
#[derive(Deserialize)]
struct BeginAnswer<'a> {
    #[serde(rename = "publicKey", borrow)]
    public_key: RequestOptions<'a>,
}

#[derive(Deserialize)]
struct RequestOptions<'a> {
    #[serde(borrow)]
    challenge: Cow<'a, str>,
    #[serde(rename = "rpId", borrow)]
    rp_id: Cow<'a, str>,
}

/// What a sign-in looks for in `assert/finish`'s answer.
#[derive(Deserialize)]
struct TokenPair<'a> {
    #[serde(borrow)]
    access_token: Cow<'a, str>,
}

#[derive(serde::Serialize)]
struct FinishBody<'a> {
    response: &'a Assertion,
}

const BEGIN: &str = "/v1/auth/passkeys/assert/begin";
const FINISH: &str = "/v1/auth/passkeys/assert/finish";

/// One username-less sign-in from address `n`.
async fn sign_in(conn: &mut Conn, holder: &mut Holder, n: usize) -> Result<()> {
    let ip = client_ip(n);
    let options = conn
        .post(BEGIN, &holder.api_key, &ip, b"{}".to_vec())
        .await?;
    let options: BeginAnswer = serde_json::from_slice(&options)?;
    let origin = origin_of(Some(&options.public_key.rp_id))?;
    let assertion = holder.authenticator.get_discoverable(
        &options.public_key.rp_id,
        &options.public_key.challenge,
        &origin,
    )?;
    let body = serde_json::to_vec(&FinishBody {
        response: &assertion,
    })?;
    let pair = conn.post(FINISH, &holder.api_key, &ip, body).await?;
    match serde_json::from_slice::<TokenPair>(&pair) {
        Ok(p) if !p.access_token.is_empty() => Ok(()),
        _ => Err(format!(
            "assert/finish: no token pair in {}",
            String::from_utf8_lossy(&pair)
        )
        .into()),
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
    let authority = cli
        .base
        .strip_prefix("http://")
        .map(|a| a.trim_end_matches('/').to_owned())
        .ok_or("--base must be http://HOST:PORT")?;
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
        let mut conn = Conn::open(&authority).await?;
        let (measuring, stop, next_ip, errors, first_error) = (
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
                let outcome = sign_in(&mut conn, &mut holder, n).await;
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
