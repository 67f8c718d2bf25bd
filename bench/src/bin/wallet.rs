//! `wallet`: the wallet presentation load (OpenID4VP 1.0, `direct_post.jwt`). wrk cannot be a
//! wallet, so this is one, many times over:
//!
//! - `wallet issuers --output FILE`: makes the bench's two test issuers (a PID issuer signing
//!   SD-JWT VC, a PID issuer signing mdoc; ES256 each, each under an X.509 root of its own),
//!   keeps their keys and chains in `FILE` for `wallet run`, and prints the body of
//!   `PUT /v1/auth/dashboard/tenants/{slug}/settings/eudi` that trusts them (status lists under
//!   policy `reject`: a list that cannot be had refuses the presentation).
//! - `wallet run`: serves the SD-JWT issuer's token status list on 127.0.0.1 (a list token
//!   with a `ttl` of an hour, so the server fetches it once and then serves it from its cache;
//!   the server must run with `eudi.allow_loopback_http`), builds `--wallets` test wallets
//!   (half hold an SD-JWT PID whose `status` points at that list, half an mdoc PID), checks
//!   once that a revoked credential is refused and that a sign-in of each format completes
//!   (result poll), then runs `--concurrency` loops for `--seconds` after a `--warmup`, each
//!   with a wallet of its own: initiate (with the tenant's API key), fetch the request object
//!   (`POST request_uri` with a `wallet_nonce`), open it (the `x5c` chain to the verifier root
//!   of `--verifier-root`, the signature, the `x509_hash` client id), answer at `response_uri`
//!   (a JWE of key-bound presentations). An answer the server takes (200) is a verified
//!   presentation. Every flow comes from a client address of its own (`X-Forwarded-For`; the
//!   server must trust 127.0.0.1): initiate allows 30 a minute per address.
//!
//! Prints `{rps, p50_ms, p99_ms, errors, ...}` like the other scenarios: `rps` the verified
//! presentations a second, the percentiles those of the answer's POST (where the server
//! decrypts and verifies), `by_format` the same per credential format, `flow_latency` the
//! whole flow's. `errors` counts failed flows of the warm-up and of the measured seconds.

use std::{
    path::PathBuf,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use base64::{engine::general_purpose::STANDARD, Engine};
use clap::{Args, Parser, Subcommand};
use serde_json::{json, Map, Value};
use tessera_bench::{call, client_ip, round3, LatencySummary, Result};
use tessera_eudi::{
    jose::{Alg, SigningKey},
    x509::Usage,
};
use tessera_testkit::wallet::{now, TestIssuer, TestWallet, PID_DOCTYPE};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The SD-JWT PID issuer's `iss` (its trust anchor's `issuer`).
const SD_ISSUER: &str = "https://pid.bench.test";
/// The mdoc PID issuer's trust anchor (mdoc issuers are found by their chain).
const MDOC_ISSUER: &str = "PID mdoc issuer (bench)";
/// Where the status list is served.
const LIST_PATH: &str = "/status/pid/1";
/// How long the server may use the list without fetching it again, in seconds.
const LIST_TTL: u64 = 3600;

#[derive(Parser)]
#[command(name = "wallet", about = "Wallet presentations under load")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Makes the test issuers; prints the tenant's wallet settings that trust them.
    Issuers {
        /// Where the issuers' keys and chains go (read by `wallet run`).
        #[arg(long)]
        output: PathBuf,
    },
    /// The load.
    Run(RunArgs),
}

#[derive(Args)]
struct RunArgs {
    /// The server, `http://127.0.0.1:PORT`.
    #[arg(long)]
    base: String,
    /// The tenant's API key.
    #[arg(long)]
    api_key: String,
    /// The verifier's root certificate (PEM; `root_pem` of `tessera admin eudi dev-cert`).
    #[arg(long)]
    verifier_root: PathBuf,
    /// The issuers file of `wallet issuers`.
    #[arg(long)]
    issuers: PathBuf,
    /// Test wallets (even ones hold an SD-JWT PID, odd ones an mdoc PID); at least
    /// `--concurrency`.
    #[arg(long, default_value_t = 64)]
    wallets: usize,
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

// As in `passkeys`: the load shares the machine's cores with the server.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    tessera_bench::main_with("wallet", async move {
        match cli.command {
            Command::Issuers { output } => issuers(&output),
            Command::Run(args) => run(args).await,
        }
    })
}

/// User plus system CPU time of process `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

fn issuer_json(issuer: &TestIssuer) -> Result<Value> {
    Ok(json!({
        "key_pkcs8": STANDARD.encode(issuer.key.to_pkcs8()?),
        "leaf": STANDARD.encode(&issuer.leaf_der),
        "root": STANDARD.encode(&issuer.root_der),
    }))
}

fn issuer_from(v: &Value) -> Result<TestIssuer> {
    let bytes = |name: &str| -> Result<Vec<u8>> {
        let text = v[name]
            .as_str()
            .ok_or("the issuers file is not `wallet issuers`'")?;
        Ok(STANDARD.decode(text)?)
    };
    Ok(TestIssuer {
        key: SigningKey::from_pkcs8(&bytes("key_pkcs8")?)?,
        leaf_der: bytes("leaf")?,
        root_der: bytes("root")?,
    })
}

/// `wallet issuers`: the issuers file, and the settings body on stdout.
fn issuers(output: &std::path::Path) -> Result<Value> {
    let sd = TestIssuer::new("pid.bench.test", Alg::Es256, Usage::Issuer)?;
    let md = TestIssuer::new("mdoc.pid.bench.test", Alg::Es256, Usage::MdocDocumentSigner)?;
    let file = json!({ "sd_jwt": issuer_json(&sd)?, "mdoc": issuer_json(&md)? });
    std::fs::write(output, serde_json::to_vec(&file)?)
        .map_err(|e| format!("writing {}: {e}", output.display()))?;
    Ok(json!({
        "enabled": true,
        "requested_attributes": ["given_name", "family_name", "birth_date", "email"],
        "on_status_unavailable": "reject",
        "trust_anchors": [
            {
                "issuer": SD_ISSUER,
                "memberState": "DE",
                "allowedAlgs": ["ES256"],
                "maxAssuranceLevel": "high",
                "allowedFormats": ["dc+sd-jwt"],
                "keyResolution": {"method": "x5c", "x5cRoots": [sd.root_b64()]},
            },
            {
                "issuer": MDOC_ISSUER,
                "memberState": "PL",
                "allowedAlgs": ["ES256"],
                "maxAssuranceLevel": "substantial",
                "allowedFormats": ["mso_mdoc"],
                "keyResolution": {"method": "x5c", "x5cRoots": [md.root_b64()]},
            },
        ],
    }))
}

/// A tiny HTTP server on 127.0.0.1 answering every GET of [`LIST_PATH`] with the status list
/// token (and 404 otherwise); answers its base URL and the count of list fetches.
async fn serve_status_list(token: Arc<Mutex<String>>) -> Result<(String, Arc<AtomicUsize>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let fetches = Arc::new(AtomicUsize::new(0));
    let counter = fetches.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (token, counter) = (token.clone(), counter.clone());
            tokio::spawn(async move {
                let mut buf = Vec::with_capacity(1024);
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf);
                let path = head.split(' ').nth(1).unwrap_or("/");
                let answer = if path == LIST_PATH {
                    counter.fetch_add(1, Ordering::Relaxed);
                    let body = token.lock().map(|t| t.clone()).unwrap_or_default();
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/statuslist+jwt\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                } else {
                    "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        .to_owned()
                };
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    Ok((base, fetches))
}

/// Which PID a wallet holds.
#[derive(Clone, Copy)]
enum Format {
    SdJwt,
    Mdoc,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::SdJwt => "dc+sd-jwt",
            Format::Mdoc => "mso_mdoc",
        }
    }
}

struct Holder {
    wallet: TestWallet,
    format: Format,
}

/// The identity of wallet `i` (a user of its own: the tenant links it on the first sign-in):
/// the PID's mandatory attributes, which identify the person, and an address.
fn sd_claims(i: usize) -> Map<String, Value> {
    let v = json!({
        "family_name": "Bench",
        "given_name": format!("Sd{i}"),
        "birthdate": "1984-01-26",
        "place_of_birth": {"locality": "Berlin", "country": "DE"},
        "email": format!("sd{i}@pid.bench.test"),
        "age_equal_or_over": {"18": true},
        "nationalities": ["DE"],
    });
    v.as_object().cloned().unwrap_or_default()
}

fn mdoc_elements(i: usize) -> Map<String, Value> {
    let v = json!({
        "family_name": "Bench",
        "given_name": format!("Md{i}"),
        "birth_date": "1990-05-01",
        "birth_place": "Kraków",
        "email_address": format!("md{i}@pid.bench.test"),
        "age_over_18": true,
        "nationality": "PL",
    });
    v.as_object().cloned().unwrap_or_default()
}

/// The bench's routes and credentials, shared by every loop.
struct Ctx {
    http: reqwest::Client,
    initiate: reqwest::Url,
    result: String,
    api_key: String,
}

/// What one flow measured.
struct Flow {
    state: String,
    response: Duration,
}

/// One presentation from address `n`: initiate, fetch and open the request object, answer.
/// `want` is the answer's expected status (200 but for the revocation check).
async fn present(ctx: &Ctx, wallet: &TestWallet, n: usize, want: u16) -> Result<Flow> {
    let ip = client_ip(n);
    let started = call(
        "initiate".into(),
        200,
        ctx.http
            .post(ctx.initiate.clone())
            .header("x-api-key", &ctx.api_key)
            .header("x-forwarded-for", &ip)
            .json(&json!({})),
    )
    .await?;
    let request_uri = started["request_uri"]
        .as_str()
        .ok_or("initiate: no request_uri")?;
    let state = started["state"]
        .as_str()
        .ok_or("initiate: no state")?
        .to_owned();
    let resp = ctx
        .http
        .post(request_uri)
        .header("x-forwarded-for", &ip)
        .form(&[("wallet_nonce", format!("wn-{n}"))])
        .send()
        .await?;
    let status = resp.status().as_u16();
    let jar = resp.text().await?;
    if status != 200 {
        return Err(format!("request object: expected 200, got {status}: {jar}").into());
    }
    let req = wallet.open(&jar)?;
    let form = wallet.answer(&req)?;
    let t0 = Instant::now();
    let body = call(
        "response".into(),
        want,
        ctx.http
            .post(&req.response_uri)
            .header("x-forwarded-for", &ip)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form),
    )
    .await?;
    let response = t0.elapsed();
    if want != 200 {
        return Err(body.to_string().into());
    }
    Ok(Flow { state, response })
}

/// The result poll of a finished sign-in: `consumed` with a token pair.
async fn poll(ctx: &Ctx, state: &str) -> Result<()> {
    let v = call(
        "result".into(),
        200,
        ctx.http
            .get(&ctx.result)
            .query(&[("state", state)])
            .header("x-api-key", &ctx.api_key),
    )
    .await?;
    if v["status"] == "consumed" && v["access_token"].is_string() {
        Ok(())
    } else {
        Err(format!("result: expected consumed with tokens, got {v}").into())
    }
}

/// Per-loop tallies.
#[derive(Default)]
struct Tally {
    sd_jwt: Vec<Duration>,
    mdoc: Vec<Duration>,
    flows: Vec<Duration>,
}

fn format_figures(samples: &[Duration], elapsed: f64) -> Value {
    let latency = LatencySummary::of(samples);
    json!({
        "presentations": samples.len(),
        "rps": round3(samples.len() as f64 / elapsed),
        "p50_ms": latency.p50_ms,
        "p99_ms": latency.p99_ms,
        "latency": latency,
    })
}

async fn run(cli: RunArgs) -> Result<Value> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .user_agent("tessera-bench wallet")
        .pool_max_idle_per_host(cli.concurrency)
        .build()?;
    let loops = cli.concurrency.max(1);
    if cli.wallets < loops {
        return Err(format!("--wallets {} is below --concurrency {loops}", cli.wallets).into());
    }
    let root_pem = std::fs::read_to_string(&cli.verifier_root)
        .map_err(|e| format!("reading {}: {e}", cli.verifier_root.display()))?;
    let file: Value = serde_json::from_slice(
        &std::fs::read(&cli.issuers)
            .map_err(|e| format!("reading {}: {e}", cli.issuers.display()))?,
    )?;
    let sd = issuer_from(&file["sd_jwt"])?;
    let md = issuer_from(&file["mdoc"])?;

    // The status list: an entry per SD-JWT wallet (index = wallet number), all valid, and one
    // more, revoked, for the check below.
    let token = Arc::new(Mutex::new(String::new()));
    let (list_base, fetches) = serve_status_list(token.clone()).await?;
    let list_uri = format!("{list_base}{LIST_PATH}");
    let revoked_idx = cli.wallets;
    let mut statuses = vec![0u8; cli.wallets + 1];
    statuses[revoked_idx] = 1;
    let signed = sd.status_list(&list_uri, &statuses, Some(LIST_TTL))?;
    if let Ok(mut t) = token.lock() {
        *t = signed;
    }

    let exp = now() + 86_400;
    let sd_wallet = |i: usize, idx: u64| -> Result<TestWallet> {
        let mut w = TestWallet::new(&root_pem)?;
        let cred = sd.pid_sd_jwt(
            SD_ISSUER,
            &sd_claims(i),
            &w.device.public_key(),
            exp,
            Some((&list_uri, idx)),
        )?;
        w.sd_jwt = Some(cred);
        Ok(w)
    };
    let mut holders = Vec::with_capacity(cli.wallets);
    for i in 0..cli.wallets {
        let holder = if i % 2 == 0 {
            Holder {
                wallet: sd_wallet(i, i as u64)?,
                format: Format::SdJwt,
            }
        } else {
            let mut w = TestWallet::new(&root_pem)?;
            let cred = md.mdoc(PID_DOCTYPE, &mdoc_elements(i), &w.device.public_key(), None)?;
            w.mdocs.push((PID_DOCTYPE.to_owned(), cred));
            Holder {
                wallet: w,
                format: Format::Mdoc,
            }
        };
        holders.push(Arc::new(holder));
    }

    let ctx = Arc::new(Ctx {
        http,
        initiate: format!("{}/v1/auth/eudi/initiate", cli.base).parse()?,
        result: format!("{}/v1/auth/eudi/result", cli.base),
        api_key: cli.api_key.clone(),
    });
    let next_ip = Arc::new(AtomicUsize::new(2_000_000));
    let ip = || next_ip.fetch_add(1, Ordering::Relaxed);

    // Before the load: the status list is really checked (a revoked PID is refused), and a
    // sign-in of each format goes through to the token pair.
    let revoked = sd_wallet(cli.wallets, revoked_idx as u64)?;
    match present(&ctx, &revoked, ip(), 403).await {
        Err(e) if e.to_string().contains("eudi/credential_revoked") => {}
        Err(e) => return Err(format!("the revoked PID: {e}").into()),
        Ok(_) => return Err("the revoked PID was not refused".into()),
    }
    for holder in holders.iter().take(2) {
        let flow = present(&ctx, &holder.wallet, ip(), 200)
            .await
            .map_err(|e| format!("the first {} sign-in: {e}", holder.format.name()))?;
        poll(&ctx, &flow.state)
            .await
            .map_err(|e| format!("the first {} sign-in: {e}", holder.format.name()))?;
    }
    let fetches_before = fetches.load(Ordering::Relaxed);

    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(AtomicUsize::new(0));
    let warmup_errors = Arc::new(AtomicUsize::new(0));
    let first_error = Arc::new(Mutex::new(None::<String>));
    let mut tasks = tokio::task::JoinSet::new();
    for holder in holders.iter().take(loops).cloned() {
        let (ctx, measuring, stop, next_ip, errors, warmup_errors, first_error) = (
            ctx.clone(),
            measuring.clone(),
            stop.clone(),
            next_ip.clone(),
            errors.clone(),
            warmup_errors.clone(),
            first_error.clone(),
        );
        tasks.spawn(async move {
            let mut tally = Tally::default();
            while !stop.load(Ordering::Relaxed) {
                let n = next_ip.fetch_add(1, Ordering::Relaxed);
                let was_measuring = measuring.load(Ordering::Relaxed);
                let started = Instant::now();
                let outcome = present(&ctx, &holder.wallet, n, 200).await;
                let counted = was_measuring && measuring.load(Ordering::Relaxed);
                match outcome {
                    Ok(flow) if counted => {
                        tally.flows.push(started.elapsed());
                        match holder.format {
                            Format::SdJwt => tally.sd_jwt.push(flow.response),
                            Format::Mdoc => tally.mdoc.push(flow.response),
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        let slot = if was_measuring {
                            &errors
                        } else {
                            &warmup_errors
                        };
                        slot.fetch_add(1, Ordering::Relaxed);
                        if let Ok(mut first) = first_error.lock() {
                            first.get_or_insert_with(|| e.to_string());
                        }
                    }
                }
            }
            tally
        });
    }
    tokio::time::sleep(Duration::from_secs_f64(cli.warmup)).await;
    measuring.store(true, Ordering::Relaxed);
    let started = Instant::now();
    let server_before = cli.server_pid.and_then(cpu_ticks);
    let own_before = cpu_ticks(std::process::id());
    tokio::time::sleep(Duration::from_secs_f64(cli.seconds)).await;
    measuring.store(false, Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    let ticks = |before: Option<u64>, pid: Option<u32>| {
        pid.and_then(cpu_ticks)
            .zip(before)
            .map(|(after, before)| after.saturating_sub(before) as f64 / cli.clock_ticks as f64)
    };
    let server_cpu = ticks(server_before, cli.server_pid);
    let own_cpu = ticks(own_before, Some(std::process::id()));
    stop.store(true, Ordering::Relaxed);
    let mut all = Tally::default();
    while let Some(joined) = tasks.join_next().await {
        let t = joined?;
        all.sd_jwt.extend(t.sd_jwt);
        all.mdoc.extend(t.mdoc);
        all.flows.extend(t.flows);
    }
    let responses: Vec<Duration> = all.sd_jwt.iter().chain(&all.mdoc).copied().collect();
    let count = responses.len();
    let latency = LatencySummary::of(&responses);
    let errors = errors.load(Ordering::Relaxed);
    let warmup_errors = warmup_errors.load(Ordering::Relaxed);
    let first_error = first_error.lock().ok().and_then(|e| e.clone());
    let cores = |cpu: Option<f64>| cpu.filter(|_| elapsed > 0.0).map(|c| round3(c / elapsed));
    Ok(json!({
        "rps": round3(count as f64 / elapsed),
        "presentations": count,
        "seconds": round3(elapsed),
        "p50_ms": latency.p50_ms,
        "p99_ms": latency.p99_ms,
        "latency": latency,
        "by_format": {
            Format::SdJwt.name(): format_figures(&all.sd_jwt, elapsed),
            Format::Mdoc.name(): format_figures(&all.mdoc, elapsed),
        },
        "flow_latency": LatencySummary::of(&all.flows),
        "errors": errors + warmup_errors,
        "warmup_errors": warmup_errors,
        "first_error": first_error,
        "server_cpu_cores": cores(server_cpu),
        "server_cpu_ms_per_request": server_cpu
            .filter(|_| count > 0)
            .map(|c| round3(c * 1e3 / count as f64)),
        "generator_cpu_cores": cores(own_cpu),
        "status_list": {
            "uri": list_uri,
            "ttl_s": LIST_TTL,
            "fetches_before_load": fetches_before,
            "fetches_during_load": fetches.load(Ordering::Relaxed) - fetches_before,
        },
        "concurrency": loops,
        "wallets": cli.wallets,
    }))
}
