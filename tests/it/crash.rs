//! Crash durability under load. Client threads register accounts, rotate refresh tokens and
//! consume texted login codes while the server is SIGKILLed at a random moment; after each
//! restart on the same data directory every acknowledged write is there and nothing consumed
//! came back. Three kill cycles on one directory: what was acknowledged accumulates and is
//! checked whole after every restart.
//!
//! What an acknowledgement guarantees, and so what is checked:
//! - a registration answered 200: the account exists with its password (a login answers 403
//!   `auth/email_not_verified`; a lost account would answer 401 `auth/invalid_credentials`);
//! - a refresh answered 200: the server's generation is at least the one it handed out. The
//!   last acknowledged token answers 200 again: it is current, or (when a later rotation was
//!   in flight at the kill and made it to disk unacknowledged) the previous one within the
//!   reuse grace, which answers the current pair. A token two generations behind the last
//!   acknowledged one is never current nor within the grace: it is reuse;
//! - an SMS code whose verify answered 200 is consumed for good (401
//!   `invalid_or_expired_token`), and the session it opened is alive.
//!
//! The kill delays come from a seed (the clock's, or `TESSERA_CRASH_SEED`), named in every
//! failure.

use std::{
    collections::{HashMap, HashSet},
    ffi::OsString,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, AtomicU32, Ordering},
        Mutex,
    },
    time::{Duration, Instant},
};

use reqwest::blocking::Client;
use serde_json::{json, Value};

use crate::support::{
    fr, fresh_client_ip, patch_security, six_digit_code, user_setup, AuthAnswer, UserApi,
    USER_PASSWORD,
};

const REGISTER: &str = "/v1/auth/register";
const LOGIN: &str = "/v1/auth/login";
const REFRESH: &str = "/v1/auth/refresh";
const SMS_OTP: &str = "/v1/auth/sms-otp";
const SMS_VERIFY: &str = "/v1/auth/sms-otp/verify";

/// The server's `tokens.refresh_reuse_grace_secs` (the default).
const REUSE_GRACE: Duration = Duration::from_secs(10);
/// Kill cycles on the one data directory.
const CYCLES: usize = 3;
/// Users made before the first cycle, and sessions each (the ones the refresh threads rotate).
const USERS: usize = 4;
const SESSIONS_PER_USER: usize = 2;
const REGISTER_THREADS: usize = 2;
const REFRESH_THREADS: usize = 2;
const OTP_THREADS: usize = 2;

/// splitmix64: a small, seedable generator (the kill delays must be reproducible from the seed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn seed() -> u64 {
    if let Ok(s) = std::env::var("TESSERA_CRASH_SEED") {
        let s = s.trim().trim_start_matches("0x");
        return u64::from_str_radix(s, 16).expect("TESSERA_CRASH_SEED is hex");
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// The tenant's API with a client of its own (each thread has one).
fn own_client(api: &UserApi) -> UserApi {
    UserApi {
        client: Client::builder()
            .timeout(Duration::from_secs(10))
            .user_agent("tessera-tests crash")
            .build()
            .expect("client"),
        ..api.clone()
    }
}

/// `POST path` with the API key, from an address of its own. `Err` when no whole answer came
/// back (the connection failed, or the body was cut off): that request was not acknowledged.
fn post(api: &UserApi, path: &str, body: &Value) -> Result<AuthAnswer, String> {
    let r = api
        .client
        .post(api.url(path))
        .header("x-api-key", &api.api_key)
        .header("x-forwarded-for", fresh_client_ip())
        .json(body)
        .send()
        .map_err(|e| format!("{e:?}"))?;
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let text = r.text().map_err(|e| format!("{e:?}"))?;
    let body = if text.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).map_err(|e| format!("{status} {text:?}: {e}"))?
    };
    Ok(AuthAnswer {
        status,
        headers,
        body,
    })
}

/// One session's refresh tokens as the client holds them.
struct Session {
    label: String,
    /// Every acknowledged refresh token, oldest first (the last one is the one to use).
    tokens: Vec<String>,
    /// When a refresh of the last token was sent whose answer was lost (in flight at the kill).
    in_flight: Option<Instant>,
    /// The refresh threads rotate it (the sessions made before the first cycle).
    rotate: bool,
    /// Revoked by a check: no longer followed.
    gone: bool,
}

impl Session {
    fn new(label: String, token: String, rotate: bool) -> Self {
        Session {
            label,
            tokens: vec![token],
            in_flight: None,
            rotate,
            gone: false,
        }
    }
}

impl Session {
    fn latest(&self) -> &str {
        self.tokens.last().expect("a session has a token")
    }
}

/// A texted code whose verify was acknowledged.
struct Consumed {
    phone: String,
    code: String,
}

/// Everything acknowledged so far, across cycles.
#[derive(Default)]
struct Ledger {
    /// e-mail -> user id.
    registered: Vec<(String, String)>,
    consumed: Vec<Consumed>,
    sessions: Vec<Session>,
}

/// The SMS outbox read from its directory: each new `<id>.json` is read once.
struct Texts {
    dir: PathBuf,
    seen: HashSet<OsString>,
    codes: HashMap<String, String>,
}

impl Texts {
    fn new(dir: &Path) -> Self {
        Texts {
            dir: dir.to_path_buf(),
            seen: HashSet::new(),
            codes: HashMap::new(),
        }
    }

    /// The code texted to `phone`, if its message is in the outbox yet.
    fn code_for(&mut self, phone: &str) -> Option<String> {
        if let Some(c) = self.codes.get(phone) {
            return Some(c.clone());
        }
        let entries = std::fs::read_dir(&self.dir).ok()?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let s = name.to_string_lossy();
            if s.starts_with('.') || !s.ends_with(".json") || self.seen.contains(&name) {
                continue;
            }
            // Written whole, then renamed: a listed file is complete.
            let Ok(bytes) = std::fs::read(entry.path()) else {
                continue;
            };
            let Ok(m) = serde_json::from_slice::<Value>(&bytes) else {
                continue;
            };
            self.seen.insert(name);
            let (Some(to), Some(code)) = (
                m["to"].as_str(),
                six_digit_code(m["body"].as_str().unwrap_or_default()),
            ) else {
                continue;
            };
            self.codes.insert(to.to_owned(), code);
        }
        self.codes.get(phone).cloned()
    }
}

/// Waits for the code texted to `phone`; `None` once `stop` is set (the server was killed: the
/// message may never be written) or after 15 s (noted in `unexpected`).
fn wait_code(
    texts: &Mutex<Texts>,
    phone: &str,
    stop: &AtomicBool,
    unexpected: &Mutex<Vec<String>>,
) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(code) = texts.lock().unwrap().code_for(phone) {
            return Some(code);
        }
        if stop.load(Ordering::SeqCst) {
            return None;
        }
        if Instant::now() > deadline {
            unexpected
                .lock()
                .unwrap()
                .push(format!("no text to {phone} within 15 s of its 202"));
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What one cycle's threads were acknowledged, and how many requests the kill cut off.
#[derive(Default)]
struct Run {
    registered: Vec<(String, String)>,
    consumed: Vec<Consumed>,
    sms_sessions: Vec<Session>,
    rotations: usize,
    lost: usize,
}

/// What the client threads share across cycles.
struct Load<'a> {
    api: &'a UserApi,
    texts: &'a Mutex<Texts>,
    /// The next phone number (each is used once).
    next_phone: &'a AtomicU32,
    /// Answers that are neither success nor a cut-off connection.
    unexpected: &'a Mutex<Vec<String>>,
}

/// Runs the client threads against `srv`, SIGKILLs it after `delay` while they are sending, and
/// answers what was acknowledged (refresh results go straight into `sessions`). `tag` makes
/// this cycle's e-mail addresses unique.
fn run_and_kill(
    srv: &mut crate::support::TestServer,
    load: &Load,
    sessions: &mut [&mut Session],
    tag: &str,
    delay: Duration,
) -> (Run, Instant) {
    let Load {
        api,
        texts,
        next_phone,
        unexpected,
    } = *load;
    let stop = AtomicBool::new(false);
    let lost = AtomicU32::new(0);
    let rotations = AtomicU32::new(0);
    let stop = &stop;
    let lost = &lost;
    let rotations = &rotations;
    let per_thread = sessions.len().div_ceil(REFRESH_THREADS);
    std::thread::scope(|sc| {
        let mut registrations = Vec::new();
        for t in 0..REGISTER_THREADS {
            let api = own_client(api);
            registrations.push(sc.spawn(move || {
                let mut mine = Vec::new();
                for n in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let email = format!("crash-{tag}-r{t}-{n}@example.com");
                    let body = json!({"email": email, "password": USER_PASSWORD, "consent": true});
                    match post(&api, REGISTER, &body) {
                        Err(_) => {
                            lost.fetch_add(1, Ordering::SeqCst);
                            break;
                        }
                        Ok(a) if a.status == 200 && a.body["user"]["id"].is_string() => {
                            let id = a.body["user"]["id"].as_str().unwrap_or_default();
                            mine.push((email, id.to_owned()));
                        }
                        Ok(a) => {
                            unexpected
                                .lock()
                                .unwrap()
                                .push(format!("register {email}: {} {}", a.status, a.body));
                            break;
                        }
                    }
                }
                mine
            }));
        }
        for chunk in sessions.chunks_mut(per_thread.max(1)) {
            let api = own_client(api);
            sc.spawn(move || {
                for i in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let n = chunk.len();
                    let s = &mut *chunk[i % n];
                    let sent = Instant::now();
                    match post(&api, REFRESH, &json!({"refresh_token": s.latest()})) {
                        Err(_) => {
                            s.in_flight = Some(sent);
                            lost.fetch_add(1, Ordering::SeqCst);
                            break;
                        }
                        Ok(a) if a.status == 200 && a.body["refresh_token"].is_string() => {
                            let t = a.body["refresh_token"].as_str().unwrap_or_default();
                            s.tokens.push(t.to_owned());
                            rotations.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok(a) => {
                            unexpected.lock().unwrap().push(format!(
                                "refresh of {} (generation {} as the client counts): {} {}",
                                s.label,
                                s.tokens.len() - 1,
                                a.status,
                                a.body
                            ));
                            break;
                        }
                    }
                }
            });
        }
        let mut otps = Vec::new();
        for _ in 0..OTP_THREADS {
            let api = own_client(api);
            otps.push(sc.spawn(move || {
                let mut consumed = Vec::new();
                let mut opened = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let phone = fr(next_phone.fetch_add(1, Ordering::SeqCst));
                    let body = json!({"phone": phone, "mode": "login_or_create"});
                    match post(&api, SMS_OTP, &body) {
                        Err(_) => {
                            lost.fetch_add(1, Ordering::SeqCst);
                            break;
                        }
                        Ok(a) if a.status == 202 => {}
                        Ok(a) => {
                            unexpected.lock().unwrap().push(format!(
                                "SMS code request for {phone}: {} {}",
                                a.status, a.body
                            ));
                            break;
                        }
                    }
                    let Some(code) = wait_code(texts, &phone, stop, unexpected) else {
                        break;
                    };
                    match post(&api, SMS_VERIFY, &json!({"phone": phone, "code": code})) {
                        Err(_) => {
                            lost.fetch_add(1, Ordering::SeqCst);
                            break;
                        }
                        Ok(a) if a.status == 200 && a.body["refresh_token"].is_string() => {
                            let t = a.body["refresh_token"].as_str().unwrap_or_default();
                            opened.push(Session::new(
                                format!("the SMS session of {phone}"),
                                t.to_owned(),
                                false,
                            ));
                            consumed.push(Consumed { phone, code });
                        }
                        Ok(a) => {
                            unexpected
                                .lock()
                                .unwrap()
                                .push(format!("SMS verify of {phone}: {} {}", a.status, a.body));
                            break;
                        }
                    }
                }
                (consumed, opened)
            }));
        }

        std::thread::sleep(delay);
        let killed_at = Instant::now();
        srv.kill();
        stop.store(true, Ordering::SeqCst);

        let mut run = Run::default();
        for h in registrations {
            run.registered
                .extend(h.join().expect("a registration thread"));
        }
        for h in otps {
            let (consumed, opened) = h.join().expect("an SMS thread");
            run.consumed.extend(consumed);
            run.sms_sessions.extend(opened);
        }
        run.rotations = rotations.load(Ordering::SeqCst) as usize;
        run.lost = lost.load(Ordering::SeqCst) as usize;
        (run, killed_at)
    })
}

/// Checks everything in `ledger` against the restarted server; answers the failures. In the
/// `last` cycle, sessions with three or more acknowledged tokens at odd positions are checked
/// for reuse instead (which revokes them).
fn check(
    api: &UserApi,
    ledger: &mut Ledger,
    killed_at: Instant,
    last: bool,
    reuse_checks: &mut usize,
) -> Vec<String> {
    let failures = Mutex::new(Vec::new());
    let fail = |s: String| failures.lock().unwrap().push(s);

    // Sessions first, those with a refresh lost at the kill first of all: a rotation that made
    // it to disk unanswered leaves the client's token answering only within the reuse grace.
    let api1 = own_client(api);
    let mut order: Vec<usize> = (0..ledger.sessions.len())
        .filter(|&i| !ledger.sessions[i].gone)
        .collect();
    order.sort_by_key(|&i| ledger.sessions[i].in_flight.is_none());
    for i in order {
        let s = &mut ledger.sessions[i];
        let n = s.tokens.len();
        if last && i % 2 == 1 && n >= 3 {
            let old = &s.tokens[n - 3];
            match post(&api1, REFRESH, &json!({"refresh_token": old})) {
                Ok(a) if (a.status, a.code()) == (401, "auth/refresh_token_reused") => {}
                Ok(a) => fail(format!(
                    "{}: the token two generations before the last acknowledged one (of {n}) \
                     answered {} {} (a rotated-away token came back, or the session is gone)",
                    s.label, a.status, a.body
                )),
                Err(e) => fail(format!("{}: refresh of an old token: {e}", s.label)),
            }
            s.gone = true;
            *reuse_checks += 1;
            continue;
        }
        let since_kill = killed_at.elapsed();
        // The unanswered rotation, if any, happened after its request was sent.
        let since_sent = s.in_flight.map(|at| at.elapsed());
        match post(&api1, REFRESH, &json!({"refresh_token": s.latest()})) {
            Ok(a) if a.status == 200 && a.body["refresh_token"].is_string() => {
                let t = a.body["refresh_token"].as_str().unwrap_or_default();
                s.tokens.push(t.to_owned());
            }
            // A rotation in flight at the kill that reached the disk leaves the last
            // acknowledged token answering only within the grace; past it, it is reuse.
            Ok(a)
                if since_sent.is_some_and(|d| d + Duration::from_millis(500) >= REUSE_GRACE)
                    && (a.status, a.code()) == (401, "auth/refresh_token_reused") =>
            {
                eprintln!(
                    "note: {} checked {since_sent:?} after its lost refresh was sent, past the \
                     reuse grace: that rotation had reached the disk",
                    s.label
                );
                s.gone = true;
            }
            Ok(a) => fail(format!(
                "{}: the last acknowledged refresh token (generation {} as the client counts, \
                 {} in flight at the kill, checked {since_kill:?} after it) answered {} {}",
                s.label,
                n - 1,
                if s.in_flight.is_some() {
                    "a refresh"
                } else {
                    "nothing"
                },
                a.status,
                a.body
            )),
            Err(e) => fail(format!("{}: refresh: {e}", s.label)),
        }
        s.in_flight = None;
    }

    // Consumed codes stay consumed; registrations exist. Checked from a few threads.
    std::thread::scope(|sc| {
        let fail = &fail;
        for chunk in ledger
            .consumed
            .chunks(ledger.consumed.len().div_ceil(3).max(1))
        {
            let api = own_client(api);
            sc.spawn(move || {
                for c in chunk {
                    let body = json!({"phone": c.phone, "code": c.code});
                    match post(&api, SMS_VERIFY, &body) {
                        Ok(a) if (a.status, a.code()) == (401, "invalid_or_expired_token") => {}
                        Ok(a) => fail(format!(
                            "the consumed code {} of {} answered {} {}",
                            c.code, c.phone, a.status, a.body
                        )),
                        Err(e) => fail(format!("verify of {}: {e}", c.phone)),
                    }
                }
            });
        }
        for chunk in ledger
            .registered
            .chunks(ledger.registered.len().div_ceil(4).max(1))
        {
            let api = own_client(api);
            sc.spawn(move || {
                for (email, id) in chunk {
                    let body = json!({"email": email, "password": USER_PASSWORD});
                    match post(&api, LOGIN, &body) {
                        Ok(a) if (a.status, a.code()) == (403, "auth/email_not_verified") => {}
                        Ok(a) => fail(format!(
                            "the acknowledged registration of {email} (user {id}): login \
                             answered {} {}",
                            a.status, a.body
                        )),
                        Err(e) => fail(format!("login of {email}: {e}")),
                    }
                }
            });
        }
    });
    failures.into_inner().unwrap()
}

#[test]
fn acknowledged_writes_survive_sigkill_under_load_and_consumed_codes_stay_consumed() {
    let started = Instant::now();
    let seed = seed();
    let mut rng = Rng(seed);
    let delays: Vec<Duration> = (0..CYCLES)
        .map(|_| Duration::from_millis(200 + rng.next() % 1301))
        .collect();
    let about = format!("seed {seed:#x} (TESSERA_CRASH_SEED={seed:x}), kill delays {delays:?}");
    // Past the harness's capture: the seed is in the output of every run, passing or not.
    {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "crash: {about}");
    }

    let (smtp, mut srv, mut api, s) = user_setup("Crash Co", &[]);
    // The platform account's ceiling of an enterprise tenant allows the largest cap.
    srv.admin(&["tenant", "set-tier", &api.slug, "enterprise"], "")
        .json();
    let out = patch_security(
        &srv,
        &s,
        &api.slug,
        json!({ "sms_otp_enabled": true, "sms_otp_monthly_cap": 100_000 }),
    );
    assert_eq!(out["sms_otp_enabled"], true, "{out}");

    let mut ledger = Ledger::default();
    for u in 0..USERS {
        let email = format!("crash-user{u}@example.com");
        let first = api.verified_user(&smtp, &email, USER_PASSWORD);
        ledger.sessions.push(Session::new(
            format!("{email} session 0"),
            first.refresh,
            true,
        ));
        for k in 1..SESSIONS_PER_USER {
            let t = api.login_ok(&email, USER_PASSWORD);
            ledger.sessions.push(Session::new(
                format!("{email} session {k}"),
                t.refresh,
                true,
            ));
        }
    }
    // The check tells an account that exists from one that does not.
    let probe = own_client(&api);
    api.register("crash-probe@example.com", USER_PASSWORD)
        .expect(200);
    let a = post(
        &probe,
        LOGIN,
        &json!({"email": "crash-probe@example.com", "password": USER_PASSWORD}),
    )
    .expect("login answer");
    a.expect_error(403, "auth/email_not_verified");
    let a = post(
        &probe,
        LOGIN,
        &json!({"email": "crash-nobody@example.com", "password": USER_PASSWORD}),
    )
    .expect("login answer");
    a.expect_error(401, "auth/invalid_credentials");

    // One texted login before the load: it checks the way codes are read back, and gets the
    // server's first phone-number parse (slow in a debug build: the metadata is built then,
    // holding a runtime worker) out of the way of the first kill.
    let texts = Mutex::new(Texts::new(&srv.data_dir.join("sms_outbox")));
    let next_phone = AtomicU32::new((seed % 1000) as u32 * 100);
    let unexpected = Mutex::new(Vec::new());
    let phone = fr(next_phone.fetch_add(1, Ordering::SeqCst));
    post(
        &probe,
        SMS_OTP,
        &json!({"phone": phone, "mode": "login_or_create"}),
    )
    .expect("SMS answer")
    .expect(202);
    let code = wait_code(&texts, &phone, &AtomicBool::new(false), &unexpected)
        .unwrap_or_else(|| panic!("no text to {phone}: {:?}", unexpected.lock().unwrap()));
    let a = post(&probe, SMS_VERIFY, &json!({"phone": phone, "code": code})).expect("answer");
    let refresh = a.expect(200)["refresh_token"]
        .as_str()
        .expect("refresh_token")
        .to_owned();
    ledger.sessions.push(Session::new(
        format!("the SMS session of {phone}"),
        refresh,
        false,
    ));
    ledger.consumed.push(Consumed { phone, code });
    eprintln!("crash: set up in {:?}", started.elapsed());
    let (mut total_reg, mut total_rot, mut total_otp, mut reuse_checks) = (0, 0, 0, 0);
    for (cycle, delay) in delays.iter().enumerate() {
        let cycle_start = Instant::now();
        let tag = format!("{seed:x}-c{cycle}");
        let mut rotating: Vec<&mut Session> = ledger
            .sessions
            .iter_mut()
            .filter(|s| s.rotate && !s.gone)
            .collect();
        let load = Load {
            api: &api,
            texts: &texts,
            next_phone: &next_phone,
            unexpected: &unexpected,
        };
        let (run, killed_at) = run_and_kill(&mut srv, &load, &mut rotating, &tag, *delay);
        let unexpected_now = unexpected.lock().unwrap().clone();
        assert!(
            unexpected_now.is_empty(),
            "cycle {cycle}, {about}: unexpected answers before the kill: {unexpected_now:#?}"
        );
        eprintln!(
            "crash: cycle {cycle}: killed after {delay:?} with {} registrations, {} rotations, \
             {} SMS logins acknowledged and {} requests cut off",
            run.registered.len(),
            run.rotations,
            run.consumed.len(),
            run.lost
        );
        total_reg += run.registered.len();
        total_rot += run.rotations;
        total_otp += run.consumed.len();
        ledger.registered.extend(run.registered);
        ledger.consumed.extend(run.consumed);
        ledger.sessions.extend(run.sms_sessions);

        // It starts cleanly on the same directory: the store opens.
        srv.restart();
        api.rebase(&srv);
        let ready = srv.get("/readyz", None).status();
        assert_eq!(
            ready, 200,
            "cycle {cycle}, {about}: not ready after restart"
        );
        let restarted = killed_at.elapsed();

        let last = cycle + 1 == CYCLES;
        let failures = check(&api, &mut ledger, killed_at, last, &mut reuse_checks);
        assert!(
            failures.is_empty(),
            "cycle {cycle}, {about}: {} of the acknowledged writes ({} registrations, {} \
             consumed codes, {} sessions) did not survive the kill:\n{}",
            failures.len(),
            ledger.registered.len(),
            ledger.consumed.len(),
            ledger.sessions.iter().filter(|s| !s.gone).count(),
            failures.join("\n")
        );
        eprintln!(
            "crash: cycle {cycle}: restarted {restarted:?} after the kill; checked {} \
             registrations, {} consumed codes, {} sessions; cycle took {:?}",
            ledger.registered.len(),
            ledger.consumed.len(),
            ledger.sessions.iter().filter(|s| !s.gone).count(),
            cycle_start.elapsed()
        );
    }
    // Not vacuous: the load did reach the server.
    assert!(
        total_reg > 0 && total_rot > 0 && total_otp > 0 && reuse_checks > 0,
        "{about}: nothing acknowledged ({total_reg} registrations, {total_rot} rotations, \
         {total_otp} SMS logins, {reuse_checks} old tokens tried)"
    );
    eprintln!(
        "crash: done in {:?}: {total_reg} registrations, {total_rot} rotations, {total_otp} SMS \
         logins acknowledged under load; {reuse_checks} rotated-away tokens refused at the end",
        started.elapsed()
    );
}
