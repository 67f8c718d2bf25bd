//! `ceilings`: what this machine can do at most for the server's expensive steps, measured with
//! the same crates, versions and features the server uses. `bench/run.sh` divides the server's
//! throughput by these figures.
//!
//! - `ceilings measure --m-cost M --t-cost T --p-cost P`: Argon2id verifications of a PHC hash
//!   made with those parameters (one thread, then one thread per core), ES256 signing and
//!   verification of an access-token-shaped JWT with `jsonwebtoken` on aws-lc-rs (one thread,
//!   then all cores), and sled `insert` + `flush()` (one thread, in a temporary directory; also
//!   `insert` + `flush()` + `fdatasync` of sled's data file, which is what the server's group
//!   commit does), and the password policy's weakness check. One JSON document on stdout.
//! - `ceilings hash --m-cost M --t-cost T --p-cost P`: the PHC string of the password read from
//!   stdin (one line), for `tessera admin user import`.

use std::{
    io::Read,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use argon2::{
    password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString},
    Algorithm, Argon2, Params, Version,
};
use aws_lc_rs::{
    rand::SystemRandom,
    signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING},
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use clap::{Parser, Subcommand};
use jsonwebtoken::{DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tessera_actors::policy::is_weak_password;
use tessera_bench::{round3, LatencySummary, Result};

#[derive(Parser)]
#[command(
    name = "ceilings",
    about = "Hardware ceilings of the server's expensive steps"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone, Copy)]
struct Argon2Args {
    /// Argon2id memory cost in KiB (config: security.argon2_m_cost_kib).
    #[arg(long)]
    m_cost: u32,
    /// Argon2id iterations (security.argon2_t_cost).
    #[arg(long)]
    t_cost: u32,
    /// Argon2id lanes (security.argon2_p_cost).
    #[arg(long)]
    p_cost: u32,
}

#[derive(Subcommand)]
enum Command {
    /// Measures every ceiling; prints JSON.
    Measure {
        #[command(flatten)]
        argon2: Argon2Args,
        /// Seconds for each Argon2 measurement.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
        /// Seconds for each ES256 and sled measurement.
        #[arg(long, default_value_t = 1.0)]
        short_seconds: f64,
        /// Where sled's temporary database goes (default: the system temp directory).
        #[arg(long)]
        tmp_dir: Option<PathBuf>,
    },
    /// Prints the PHC string of the password read from stdin.
    Hash {
        #[command(flatten)]
        argon2: Argon2Args,
    },
}

fn main() -> std::process::ExitCode {
    match run(Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ceilings: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Hash { argon2 } => {
            let mut input = String::new();
            std::io::stdin().read_to_string(&mut input)?;
            let password = input.trim_end_matches(['\r', '\n']);
            if password.is_empty() {
                return Err("no password on stdin".into());
            }
            println!("{}", hash(argon2, password)?);
            Ok(())
        }
        Command::Measure {
            argon2,
            seconds,
            short_seconds,
            tmp_dir,
        } => {
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            let long = Duration::from_secs_f64(seconds);
            let short = Duration::from_secs_f64(short_seconds);
            let argon = measure_argon2(argon2, threads, long)?;
            let es256 = measure_es256(threads, short)?;
            let webauthn = measure_webauthn(short)?;
            let dir = tmp_dir.unwrap_or_else(std::env::temp_dir);
            let sled = measure_sled(&dir, short)?;
            let weak = measure_weak_password(short)?;
            let out = json!({
                "threads": threads,
                "argon2id": argon,
                "es256": es256,
                "webauthn": webauthn,
                "sled": sled,
                "weak_password_check": weak,
            });
            println!("{}", serde_json::to_string_pretty(&out)?);
            Ok(())
        }
    }
}

fn params(a: Argon2Args) -> Result<Params> {
    Params::new(a.m_cost, a.t_cost, a.p_cost, None)
        .map_err(|e| format!("argon2 params: {e}").into())
}

/// As the server's `hash_blocking`: Argon2id v19, a random salt, the given parameters.
fn hash(a: Argon2Args, password: &str) -> Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params(a)?)
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| format!("hashing: {e}").into())
}

/// As the server's `verify`: the parameters come from the PHC string.
fn verify(phc: &str, password: &[u8]) -> bool {
    PasswordHash::new(phc)
        .map(|parsed| Argon2::default().verify_password(password, &parsed).is_ok())
        .unwrap_or(false)
}

/// Nanoseconds this thread has spent on a CPU (the first field of
/// `/proc/thread-self/schedstat`); `None` where the kernel does not say.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Runs `op` on one thread until `time` has passed (and at least `min` times); answers the
/// rate and the time of each call.
fn timed_loop(time: Duration, min: usize, mut op: impl FnMut() -> Result<()>) -> Result<Timed> {
    let cpu0 = thread_cpu_ns();
    let started = Instant::now();
    let mut samples = Vec::new();
    while started.elapsed() < time || samples.len() < min {
        let t = Instant::now();
        op()?;
        samples.push(t.elapsed());
    }
    let elapsed = started.elapsed();
    let cpu = cpu0.zip(thread_cpu_ns()).map(|(a, b)| b.saturating_sub(a));
    Ok(Timed::new(samples, elapsed, 1, cpu))
}

struct Timed {
    per_s: f64,
    samples: Vec<Duration>,
    /// The share of `threads` cores the loop's threads were on a CPU: well under 1 when other
    /// processes took the machine during the measurement.
    cpu_share: Option<f64>,
    /// CPU time per call, in milliseconds.
    cpu_ms_per_op: Option<f64>,
}

impl Timed {
    fn new(samples: Vec<Duration>, elapsed: Duration, threads: usize, cpu_ns: Option<u64>) -> Self {
        let n = samples.len().max(1) as f64;
        let wall_ns = elapsed.as_nanos() as f64 * threads as f64;
        Timed {
            per_s: samples.len() as f64 / elapsed.as_secs_f64(),
            cpu_share: cpu_ns.map(|c| round3(c as f64 / wall_ns)),
            cpu_ms_per_op: cpu_ns.map(|c| round3(c as f64 / 1e6 / n)),
            samples,
        }
    }
}

/// Runs `op` on `threads` threads at once until `time` has passed; answers the total rate and
/// every call's time.
fn parallel_loop<F>(threads: usize, time: Duration, op: F) -> Result<Timed>
where
    F: Fn() -> Result<()> + Sync,
{
    type ThreadOut = (Vec<Duration>, Option<u64>);
    let started = Instant::now();
    let results: Vec<Result<ThreadOut>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| -> Result<ThreadOut> {
                    let cpu0 = thread_cpu_ns();
                    let mut samples = Vec::new();
                    while started.elapsed() < time || samples.is_empty() {
                        let t = Instant::now();
                        op()?;
                        samples.push(t.elapsed());
                    }
                    let cpu = cpu0.zip(thread_cpu_ns()).map(|(a, b)| b.saturating_sub(a));
                    Ok((samples, cpu))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    let elapsed = started.elapsed();
    let mut samples = Vec::new();
    let mut cpu = Some(0u64);
    for r in results {
        let (s, c) = r?;
        samples.extend(s);
        cpu = cpu.zip(c).map(|(a, b)| a + b);
    }
    Ok(Timed::new(samples, elapsed, threads, cpu))
}

fn measure_argon2(a: Argon2Args, threads: usize, time: Duration) -> Result<serde_json::Value> {
    let password = "bench password for the ceilings";
    let phc = hash(a, password)?;
    let check = || -> Result<()> {
        if verify(&phc, password.as_bytes()) {
            Ok(())
        } else {
            Err("argon2 verification failed".into())
        }
    };
    let single = timed_loop(time, 3, check)?;
    let all = parallel_loop(threads, time, check)?;
    Ok(json!({
        "m_cost_kib": a.m_cost,
        "t_cost": a.t_cost,
        "p_cost": a.p_cost,
        "single_thread": {
            "verifications_per_s": round3(single.per_s),
            "latency": LatencySummary::of(&single.samples),
            "cpu_ms_per_verification": single.cpu_ms_per_op,
            "cpu_share": single.cpu_share,
        },
        "all_cores": {
            "threads": threads,
            "verifications_per_s": round3(all.per_s),
            "latency": LatencySummary::of(&all.samples),
            "cpu_ms_per_verification": all.cpu_ms_per_op,
            "cpu_share": all.cpu_share,
        },
    }))
}

/// The server's `AccessClaims`, field for field, so tokens have the same size.
#[derive(Serialize, Deserialize)]
struct AccessClaims {
    iss: String,
    sub: String,
    aud: String,
    exp: i64,
    iat: i64,
    jti: String,
    sid: String,
    tid: String,
    is_anonymous: bool,
    aal: String,
    acr: String,
    amr: Vec<String>,
}

fn measure_es256(threads: usize, time: Duration) -> Result<serde_json::Value> {
    // As the server's key ring: a PKCS#8 P-256 key from aws-lc-rs, the private half as DER,
    // the public half as JWK coordinates.
    let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
        .map_err(|_| "generating a P-256 key")?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref())
        .map_err(|_| "reading the P-256 key")?;
    let point = pair.public_key().as_ref();
    let (Some(x), Some(y)) = (point.get(1..33), point.get(33..65)) else {
        return Err("unexpected public key encoding".into());
    };
    let (x, y) = (URL_SAFE_NO_PAD.encode(x), URL_SAFE_NO_PAD.encode(y));
    let encoding = EncodingKey::from_ec_der(doc.as_ref());
    let decoding = DecodingKey::from_ec_components(&x, &y)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let now = i64::try_from(now)?;
    let issuer = "http://127.0.0.1:8080/v1/tenants/bench-tenant";
    let claims = AccessClaims {
        iss: issuer.into(),
        sub: "0195f3a0-6b1c-7c3e-9d7a-3b2f1e0d9c8b".into(),
        aud: "bench-tenant".into(),
        exp: now + 900,
        iat: now,
        jti: "0195f3a0-6b1c-7c3e-9d7a-3b2f1e0d9c8c".into(),
        sid: "0195f3a0-6b1c-7c3e-9d7a-3b2f1e0d9c8d".into(),
        tid: "0195f3a0-6b1c-7c3e-9d7a-3b2f1e0d9c8e".into(),
        is_anonymous: false,
        aal: "AAL1".into(),
        acr: "aal1".into(),
        amr: vec!["pwd".into()],
    };
    let mut header = Header::new(jsonwebtoken::Algorithm::ES256);
    header.typ = Some("at+jwt".into());
    header.kid = Some(format!("{x}{y}").chars().take(43).collect());
    let sign = || -> Result<String> { Ok(jsonwebtoken::encode(&header, &claims, &encoding)?) };
    let token = sign()?;
    let mut validation = Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.leeway = 0;
    validation.validate_nbf = false;
    validation.set_issuer(&[issuer]);
    validation.set_audience(&["bench-tenant"]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let check = || -> Result<()> {
        jsonwebtoken::decode_header(&token)?;
        jsonwebtoken::decode::<AccessClaims>(&token, &decoding, &validation)?;
        Ok(())
    };
    check()?;
    let sign_one = timed_loop(time, 10, || sign().map(drop))?;
    let verify_one = timed_loop(time, 10, check)?;
    let sign_all = parallel_loop(threads, time, || sign().map(drop))?;
    let verify_all = parallel_loop(threads, time, check)?;
    Ok(json!({
        "token_bytes": token.len(),
        "sign_per_s_single_thread": round3(sign_one.per_s),
        "verify_per_s_single_thread": round3(verify_one.per_s),
        "sign_per_s_all_cores": round3(sign_all.per_s),
        "verify_per_s_all_cores": round3(verify_all.per_s),
        "cpu_share_all_cores": {"sign": sign_all.cpu_share, "verify": verify_all.cpu_share},
        "sign_latency_single_thread": LatencySummary::of(&sign_one.samples),
        "verify_latency_single_thread": LatencySummary::of(&verify_one.samples),
    }))
}

/// A passkey assertion checked as the server checks it: `webauthn-rs-core`'s
/// `authenticate_single_credential` over an ES256 credential of the bench's software
/// authenticator (client data, authenticator data, the P-256 signature). One thread; the
/// assertions are made beforehand, one fresh challenge each.
fn measure_webauthn(time: Duration) -> Result<serde_json::Value> {
    use tessera_testkit::webauthn::SoftAuthenticator;
    use webauthn_rs_core::{
        proto::{
            AuthenticationState, COSEAlgorithm, PublicKeyCredential, RegisterPublicKeyCredential,
            UserVerificationPolicy,
        },
        WebauthnCore,
    };
    const ORIGIN: &str = "https://bench.example";
    let rp = WebauthnCore::new_unsafe_experts_only(
        "bench",
        "bench.example",
        vec![url::Url::parse(ORIGIN)?],
        Duration::from_secs(300),
        Some(true),
        Some(false),
    );
    let builder = rp
        .new_challenge_register_builder(&[7; 16], "bench", "bench")?
        .credential_algorithms(vec![COSEAlgorithm::ES256])
        .require_resident_key(true)
        .user_verification_policy(UserVerificationPolicy::Preferred);
    let (ccr, reg_state) = rp.generate_challenge_register(builder)?;
    let mut authenticator = SoftAuthenticator::device_bound();
    let created = authenticator.create(&serde_json::to_value(&ccr.public_key)?, ORIGIN)?;
    let created: RegisterPublicKeyCredential = serde_json::from_value(created)?;
    let credential = rp.register_credential(&created, &reg_state, None)?;
    let mut make = || -> Result<(AuthenticationState, PublicKeyCredential)> {
        let builder = rp.new_challenge_authenticate_builder(
            vec![credential.clone()],
            Some(UserVerificationPolicy::Required),
        )?;
        let (rcr, state) = rp.generate_challenge_authenticate(builder)?;
        let assertion = authenticator.get(&serde_json::to_value(&rcr.public_key)?, ORIGIN)?;
        Ok((state, serde_json::from_value(assertion)?))
    };
    // Made beforehand (signing them is not what is measured); the loop stops at `time` or
    // when they run out, whichever comes first.
    let prepared: Vec<_> = (0..10_000).map(|_| make()).collect::<Result<_>>()?;
    let started = Instant::now();
    let mut samples = Vec::new();
    for (state, assertion) in &prepared {
        if started.elapsed() >= time {
            break;
        }
        let t = Instant::now();
        rp.authenticate_single_credential(assertion, state, &credential)?;
        samples.push(t.elapsed());
    }
    let verify_one = Timed::new(samples, started.elapsed(), 1, None);
    Ok(json!({
        "assertion_verify_per_s_single_thread": round3(verify_one.per_s),
        "assertion_verify_latency_single_thread": LatencySummary::of(&verify_one.samples),
    }))
}

/// Removes the temporary database however the measurement ends.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The password policy's weakness check (the common-password list, its stems, repeats and digit
/// runs), which every new password passes through before it is hashed: one thread.
fn measure_weak_password(time: Duration) -> Result<serde_json::Value> {
    let samples = [
        "password1234!",
        "vT7#qL9!mZ2@",
        "correct horse battery staple 2024",
        "Qwertyuiop2024",
    ];
    let mut i = 0usize;
    let timed = timed_loop(time, 100, || {
        i = i.wrapping_add(1);
        std::hint::black_box(is_weak_password(std::hint::black_box(
            samples[i % samples.len()],
        )));
        Ok(())
    })?;
    Ok(json!({
        "checks_per_s": round3(timed.per_s),
        "latency": LatencySummary::of(&timed.samples),
    }))
}

fn measure_sled(parent: &Path, time: Duration) -> Result<serde_json::Value> {
    let dir = TempDir(parent.join(format!(
        "tessera-ceilings-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    )));
    let db = sled::Config::new()
        .path(&dir.0)
        .cache_capacity(256 << 20)
        .open()?;
    let tree = db.open_tree("bench")?;
    // A refresh-token rotation writes a few hundred bytes.
    let value = vec![b'x'; 256];
    let mut n: u64 = 0;
    let mut insert = |sync_data: bool| -> Result<()> {
        n += 1;
        tree.insert(n.to_be_bytes(), value.as_slice())?;
        db.flush()?;
        if sync_data {
            // The server's flusher follows sled's flush with fdatasync of sled's data file.
            std::fs::File::open(dir.0.join("db"))?.sync_data()?;
        }
        Ok(())
    };
    let flush = timed_loop(time, 10, || insert(false))?;
    let flush_sync = timed_loop(time, 10, || insert(true))?;
    drop(tree);
    drop(db);
    Ok(json!({
        "value_bytes": value.len(),
        "insert_flush_per_s": round3(flush.per_s),
        "insert_flush_latency": LatencySummary::of(&flush.samples),
        "insert_flush_fdatasync_per_s": round3(flush_sync.per_s),
        "insert_flush_fdatasync_latency": LatencySummary::of(&flush_sync.samples),
    }))
}
