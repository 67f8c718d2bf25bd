//! The test harness: the real `tessera` binary on 127.0.0.1:0 with a temporary data directory,
//! talked to over HTTP and the admin socket, as operators and clients do.

#![allow(dead_code)]

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use reqwest::blocking::{Client, Response};
use serde_json::{json, Value};

use crate::stub::{Route, StubResponse, StubServer};

pub const PASSWORD: &str = "correct horse battery staple";

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_tessera")
}

pub fn config_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config.toml")
}

/// The binary, run with `umask` set first when one is given (through `sh`: the test process's
/// own umask is shared by every test running beside it), so a test sees the modes of what the
/// command creates under a permissive umask.
pub fn tessera_under(umask: Option<u32>) -> Command {
    match umask {
        None => Command::new(bin()),
        Some(mask) => {
            let mut cmd = Command::new("sh");
            cmd.arg("-c")
                .arg(format!("umask {mask:03o} && exec \"$0\" \"$@\""))
                .arg(bin());
            cmd
        }
    }
}

/// Writes a new file (or replaces one) only its owner may read or write, as a key file must
/// be.
pub fn write_owner_only(path: &Path, contents: impl AsRef<[u8]>) {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let _ = std::fs::remove_file(path);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(contents.as_ref()))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

/// The permission bits of `path`.
pub fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// A running server. Killed on drop.
pub struct TestServer {
    child: Option<Child>,
    pub base: String,
    /// Every line the server wrote on stdout (the listening line first).
    pub stdout: StdoutLines,
    pub data_dir: PathBuf,
    pub socket: PathBuf,
    pub log: PathBuf,
    pub client: Client,
    env: Vec<(String, String)>,
    /// The umask the server runs under, when not the test process's.
    umask: Option<u32>,
    _tmp: Option<tempfile::TempDir>,
}

/// Starts the binary on `data_dir` with extra environment; answers the child and its address,
/// or the child's exit status and stderr when it did not come up.
pub fn spawn(
    data_dir: &Path,
    env: &[(String, String)],
    log: &Path,
) -> Result<(Child, String), (ExitStatus, String)> {
    spawn_on("127.0.0.1:0", data_dir, env, log).map(|(child, base, _)| (child, base))
}

/// Lines the server wrote on stdout so far.
pub type StdoutLines = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// Like [`spawn`], listening on `listen` (`--listen`), and also answers every line the server
/// writes on stdout, as it comes.
pub fn spawn_on(
    listen: &str,
    data_dir: &Path,
    env: &[(String, String)],
    log: &Path,
) -> Result<(Child, String, StdoutLines), (ExitStatus, String)> {
    spawn_under(None, listen, data_dir, env, log)
}

/// Like [`spawn_on`], under `umask` when one is given ([`tessera_under`]).
pub fn spawn_under(
    umask: Option<u32>,
    listen: &str,
    data_dir: &Path,
    env: &[(String, String)],
    log: &Path,
) -> Result<(Child, String, StdoutLines), (ExitStatus, String)> {
    let log_file = std::fs::File::create(log).expect("log file");
    let mut child = tessera_under(umask)
        .args(["serve", "--listen", listen, "--config"])
        .arg(config_file())
        .arg("--data-dir")
        .arg(data_dir)
        .env("TESSERA__LOG__LEVEL", "info")
        // Tests need speed, not password-cracking resistance.
        .env("TESSERA__SECURITY__ARGON2_M_COST_KIB", "1024")
        .env("TESSERA__SECURITY__ARGON2_T_COST", "1")
        // Tests sign up many tenants from 127.0.0.1; `onboarding::` tests the limit itself.
        .env("TESSERA__SECURITY__ONBOARDING_PER_IP_HOURLY", "100000")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log_file))
        .spawn()
        .expect("spawn tessera");
    let stdout = child.stdout.take().expect("stdout");
    let lines = StdoutLines::default();
    let seen = lines.clone();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            seen.lock().unwrap().push(line.clone());
            let _ = tx.send(line);
        }
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(line) => {
            let addr = line
                .split("http://")
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .expect("address in the listening line")
                .to_owned();
            Ok((child, format!("http://{addr}"), lines))
        }
        Err(_) => {
            let status = child.wait().expect("wait");
            Err((status, std::fs::read_to_string(log).unwrap_or_default()))
        }
    }
}

impl TestServer {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    pub fn start_with(env: &[(&str, &str)]) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let data_dir = tmp.path().join("data");
        let mut s = Self::start_in(&data_dir, env);
        s._tmp = Some(tmp);
        s
    }

    /// Starts a server on an existing (or new) data directory the caller keeps.
    pub fn start_in(data_dir: &Path, env: &[(&str, &str)]) -> Self {
        Self::start_on("127.0.0.1:0", data_dir, env)
    }

    /// Starts a server under `umask` (a restart keeps it) with a temporary data directory.
    pub fn start_under_umask(umask: u32, env: &[(&str, &str)]) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let data_dir = tmp.path().join("data");
        let mut s = Self::start_full(Some(umask), "127.0.0.1:0", &data_dir, env);
        s._tmp = Some(tmp);
        s
    }

    /// Starts a server listening on `listen` (such as `[::]:0`, dual-stack) with a temporary
    /// data directory.
    pub fn start_listening(listen: &str, env: &[(&str, &str)]) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let data_dir = tmp.path().join("data");
        let mut s = Self::start_on(listen, &data_dir, env);
        s._tmp = Some(tmp);
        s
    }

    fn start_on(listen: &str, data_dir: &Path, env: &[(&str, &str)]) -> Self {
        Self::start_full(None, listen, data_dir, env)
    }

    fn start_full(umask: Option<u32>, listen: &str, data_dir: &Path, env: &[(&str, &str)]) -> Self {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let log = data_dir.with_extension(format!("{}.log", rand_suffix()));
        let (child, base, stdout) = spawn_under(umask, listen, data_dir, &env, &log)
            .unwrap_or_else(|(status, err)| panic!("server did not start ({status}):\n{err}"));
        TestServer {
            child: Some(child),
            base,
            stdout,
            data_dir: data_dir.to_path_buf(),
            socket: data_dir.join("admin.sock"),
            log,
            client: Client::builder()
                .timeout(Duration::from_secs(30))
                .user_agent("tessera-tests reqwest")
                .build()
                .expect("client"),
            env,
            umask,
            _tmp: None,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn get(&self, path: &str, api_key: Option<&str>) -> Response {
        let mut req = self.client.get(self.url(path));
        if let Some(k) = api_key {
            req = req.header("x-api-key", k);
        }
        req.send().expect("GET")
    }

    pub fn post_json(&self, path: &str, body: &Value) -> Response {
        self.client
            .post(self.url(path))
            .json(body)
            .send()
            .expect("POST")
    }

    /// Signs up a tenant through onboarding; answers the whole 201 body.
    pub fn signup(&self, tenant_name: &str, email: &str) -> Value {
        let resp = self.post_json("/v1/onboarding/signup", &signup_body(tenant_name, email));
        assert_eq!(resp.status(), 201, "signup failed");
        resp.json().expect("signup body")
    }

    /// Runs `tessera admin --socket <this server's socket> ARGS`, with `stdin` piped in.
    pub fn admin(&self, args: &[&str], stdin: &str) -> AdminOutput {
        admin_at(&self.socket, args, stdin)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// SIGKILL, and wait for the process to be gone.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM; answers the exit status.
    pub fn terminate(&mut self) -> ExitStatus {
        let mut c = self.child.take().expect("running");
        let ok = Command::new("kill")
            .args(["-TERM", &c.id().to_string()])
            .status()
            .expect("kill -TERM");
        assert!(ok.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = c.try_wait().expect("try_wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "server did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits up to `timeout` for the server to exit on its own; answers its exit status, or
    /// None while it still runs.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            let c = self.child.as_mut()?;
            if let Some(status) = c.try_wait().expect("try_wait") {
                self.child = None;
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts again on the same data directory with the same environment.
    pub fn restart(&mut self) {
        self.kill();
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut fresh = TestServer::start_full(self.umask, "127.0.0.1:0", &self.data_dir, &env);
        self.child = fresh.child.take();
        self.base = fresh.base.clone();
        self.stdout = fresh.stdout.clone();
        self.log = fresh.log.clone();
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn rand_suffix() -> String {
    format!(
        "{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    )
}

pub struct AdminOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl AdminOutput {
    pub fn json(&self) -> Value {
        assert!(
            self.status.success(),
            "admin failed: {}\n{}",
            self.status,
            self.stderr
        );
        serde_json::from_str(&self.stdout).expect("admin stdout is one JSON document")
    }
}

pub fn admin_at(socket: &Path, args: &[&str], stdin: &str) -> AdminOutput {
    let mut child = Command::new(bin())
        .arg("admin")
        .arg("--socket")
        .arg(socket)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn admin");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("admin output");
    AdminOutput {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn signup_body(tenant_name: &str, email: &str) -> Value {
    json!({
        "email": email,
        "password": PASSWORD,
        "tenant_name": tenant_name,
        "consent_terms": true,
        "consent_privacy": true,
    })
}

/// The error code of an error response.
pub fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("<none>")
}

/// A TCP connection to `addr` from the local address `from` (any 127.x.y.z is this host), so
/// one test can be several clients.
pub fn connect_from(from: std::net::IpAddr, addr: std::net::SocketAddr) -> std::net::TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let stream = rt
        .block_on(async {
            let socket = match from {
                std::net::IpAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
                std::net::IpAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
            };
            socket.bind(std::net::SocketAddr::new(from, 0))?;
            socket.connect(addr).await?.into_std()
        })
        .expect("connect");
    stream.set_nonblocking(false).expect("blocking");
    stream
}

/// An HTTP client whose connections come from the local address `from`.
pub fn client_from(from: std::net::IpAddr) -> Client {
    Client::builder()
        .timeout(Duration::from_secs(30))
        .local_address(from)
        .user_agent("tessera-tests reqwest")
        .build()
        .expect("client")
}

/// The port of a base URL such as `http://127.0.0.1:8080` or `http://[::]:8080`.
pub fn port_of(base: &str) -> u16 {
    base.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port")
}

/// Polls `f` until it holds or `timeout` passes.
pub fn eventually(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A local stand-in for a Turnstile-compatible siteverify endpoint: takes the real form POST
/// (`secret`, `response`, `remoteip`) and answers `{"success": true}` for the token `good`.
pub struct CaptchaStub {
    pub url: String,
    /// The widget's script: as the provider's, it renders into each `cf-turnstile` element
    /// and adds the solved token (`good`) to the form as `cf-turnstile-response`.
    pub script_url: String,
    pub seen: std::sync::Arc<std::sync::Mutex<Vec<std::collections::HashMap<String, String>>>>,
    _server: StubServer,
}

/// The stub widget's script (what the provider's does once a person solved it).
const WIDGET_SCRIPT: &str = "document.querySelectorAll('.cf-turnstile').forEach(function (el) {\n\
  var input = document.createElement('input');\n\
  input.type = 'hidden'; input.name = 'cf-turnstile-response'; input.value = 'good';\n\
  el.appendChild(input);\n\
  var done = document.createElement('p'); done.textContent = 'Verified: a person';\n\
  el.appendChild(done);\n\
});\n";

impl CaptchaStub {
    pub fn start() -> Self {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = seen.clone();
        let server = StubServer::start(vec![
            Route::get("/api.js", |_| {
                StubResponse::text(200, "text/javascript", WIDGET_SCRIPT)
            }),
            Route::post("/siteverify", move |req| {
                let form: std::collections::HashMap<String, String> =
                    req.form().into_iter().collect();
                let ok = form.get("response").map(String::as_str) == Some("good")
                    && form.get("secret").map(String::as_str) == Some("stub-secret");
                record.lock().unwrap().push(form);
                StubResponse::json(200, &json!({"success": ok, "error-codes": []}))
            }),
        ]);
        CaptchaStub {
            url: format!("{}/siteverify", server.url()),
            script_url: format!("{}/api.js", server.url()),
            seen,
            _server: server,
        }
    }
}

/// A local SMTP server speaking enough of RFC 5321 for lettre: it accepts every message and
/// keeps its DATA. One started closed ([`SmtpStub::start_closed`]) refuses every recipient
/// with a transient 451 until [`SmtpStub::open`].
pub struct SmtpStub {
    pub port: u16,
    pub messages: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    accepting: std::sync::Arc<std::sync::atomic::AtomicBool>,
    refused: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl SmtpStub {
    pub fn start() -> Self {
        Self::start_accepting(true)
    }

    /// A stub that answers every recipient `451 try again later` until it is opened.
    pub fn start_closed() -> Self {
        Self::start_accepting(false)
    }

    /// From now on, recipients are accepted.
    pub fn open(&self) {
        self.accepting
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// How many recipients were refused while the stub was closed.
    pub fn refused(&self) -> usize {
        self.refused.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn start_accepting(accepting: bool) -> Self {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let messages = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let accepting = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(accepting));
        let refused = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let store = messages.clone();
        let (gate, refusals) = (accepting.clone(), refused.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let store = store.clone();
                let (gate, refusals) = (gate.clone(), refusals.clone());
                std::thread::spawn(move || {
                    let mut out = stream.try_clone().unwrap();
                    let mut reader = BufReader::new(stream);
                    let _ = out.write_all(b"220 stub ESMTP\r\n");
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let cmd = line.trim_end().to_ascii_uppercase();
                        if cmd.starts_with("EHLO") || cmd.starts_with("HELO") {
                            let _ = out.write_all(b"250-stub\r\n250 8BITMIME\r\n");
                        } else if cmd.starts_with("RCPT") && !gate.load(Ordering::SeqCst) {
                            refusals.fetch_add(1, Ordering::SeqCst);
                            let _ = out.write_all(b"451 4.3.0 try again later\r\n");
                        } else if cmd.starts_with("DATA") {
                            let _ = out.write_all(b"354 go ahead\r\n");
                            let mut data = String::new();
                            loop {
                                let mut l = String::new();
                                if reader.read_line(&mut l).unwrap_or(0) == 0 {
                                    return;
                                }
                                if l == ".\r\n" || l == ".\n" {
                                    break;
                                }
                                data.push_str(&l);
                            }
                            store.lock().unwrap().push(data);
                            let _ = out.write_all(b"250 queued\r\n");
                        } else if cmd.starts_with("QUIT") {
                            let _ = out.write_all(b"221 bye\r\n");
                            return;
                        } else {
                            let _ = out.write_all(b"250 ok\r\n");
                        }
                    }
                });
            }
        });
        SmtpStub {
            port,
            messages,
            accepting,
            refused,
        }
    }

    /// Environment for a server that sends through this stub.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("TESSERA__MAIL__TRANSPORT".into(), "smtp".into()),
            ("TESSERA__MAIL__SMTP__HOST".into(), "127.0.0.1".into()),
            ("TESSERA__MAIL__SMTP__PORT".into(), self.port.to_string()),
            ("TESSERA__MAIL__SMTP__TLS".into(), "none".into()),
        ]
    }

    /// The value of `name=` in the last message, undoing quoted-printable soft breaks.
    pub fn last_param(&self, name: &str) -> Option<String> {
        let msgs = self.messages.lock().unwrap();
        let text = msgs.last()?.replace("=\r\n", "").replace("=3D", "=");
        let start = text.find(&format!("{name}="))? + name.len() + 1;
        Some(
            text[start..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect(),
        )
    }
}

/// A dashboard session.
pub struct Session {
    pub token: String,
    pub csrf: String,
    pub body: Value,
    pub set_cookie: String,
}

impl TestServer {
    pub fn login(&self, email: &str, password: &str) -> Session {
        let r = self.post_json(
            "/v1/auth/dashboard/login",
            &json!({"email": email, "password": password}),
        );
        assert_eq!(r.status(), 200, "login of {email}");
        let set_cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
        let body: Value = r.json().unwrap();
        Session {
            token: body["session_token"].as_str().unwrap().to_owned(),
            csrf: body["csrf_token"].as_str().unwrap().to_owned(),
            body,
            set_cookie,
        }
    }

    /// A dashboard request with the session as a bearer token.
    pub fn dash(
        &self,
        method: &str,
        path: &str,
        session: &Session,
        body: Option<&Value>,
    ) -> Response {
        let mut req = self
            .client
            .request(method.parse().unwrap(), self.url(path))
            .bearer_auth(&session.token);
        if let Some(b) = body {
            req = req.json(b);
        }
        req.send().unwrap()
    }

    /// A dashboard request; answers the status and the body (`null` when empty).
    pub fn dash_json(
        &self,
        method: &str,
        path: &str,
        session: &Session,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let r = self.dash(method, path, session, body);
        let status = r.status().as_u16();
        let text = r.text().unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Accepts the invitation in the `n`-th mail to `to` with a link to it, with `password`.
    pub fn accept_mailed_invite(&self, smtp: &SmtpStub, to: &str, n: usize, password: &str) {
        let token = smtp.wait_for_link(to, "/dashboard/accept-invite", n);
        let r = self.post_json(
            "/v1/auth/dashboard/accept-invite",
            &json!({"token": token, "password": password}),
        );
        assert_eq!(r.status(), 200, "accepting the invitation of {to}");
    }

    /// A viewer of tenant `slug`'s dashboard, at `viewer@example.com` with the shared password: invited by `owner`'s session and accepted from the first mail.
    pub fn add_viewer(&self, smtp: &SmtpStub, owner: &Session, slug: &str) {
        let r = self.dash(
            "POST",
            &format!("/v1/auth/dashboard/tenants/{slug}/members"),
            owner,
            Some(&json!({"email": "viewer@example.com", "role": "viewer"})),
        );
        assert_eq!(r.status(), 201);
        self.accept_mailed_invite(smtp, "viewer@example.com", 1, PASSWORD);
    }

    /// Re-authenticates the session with its password.
    pub fn reauth(&self, session: &Session, password: &str) {
        let r = self.dash(
            "POST",
            "/v1/auth/dashboard/reauth",
            session,
            Some(&json!({"password": password})),
        );
        assert_eq!(r.status(), 200);
    }
}

impl TestServer {
    /// Stops the server and checks that `needle` appears in no file of the data directory.
    pub fn kill_and_check_absent(&mut self, needle: &str) {
        self.kill();
        fn walk(dir: &Path, needle: &[u8]) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, needle);
                } else if let Ok(bytes) = std::fs::read(&path) {
                    assert!(
                        !bytes.windows(needle.len()).any(|w| w == needle),
                        "{} holds the secret in clear",
                        path.display()
                    );
                }
            }
        }
        walk(&self.data_dir, needle.as_bytes());
    }
}

// ---------------------------------------------------------------------------------------------
// End-user accounts (`/v1/auth/...`): a tenant-scoped client, mail read back from the SMTP stub,
// and access tokens checked the way an application would.
// ---------------------------------------------------------------------------------------------

/// An end user's password that is on no common-password list.
pub const USER_PASSWORD: &str = "tessera user passphrase";
/// Another acceptable password, for changes and resets.
pub const NEW_USER_PASSWORD: &str = "a brand new passphrase 7";

/// `(name, value)` pairs borrowed the way `TestServer::start_with` takes them.
pub fn env_refs(pairs: &[(String, String)]) -> Vec<(&str, &str)> {
    pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// A server that sends its mail through a fresh SMTP stub and believes `X-Forwarded-For` from
/// 127.0.0.1 (so tests can act as many client addresses), plus `extra` environment.
pub fn start_with_mail(extra: &[(&str, &str)]) -> (SmtpStub, TestServer) {
    let smtp = SmtpStub::start();
    let srv = TestServer::start_with(&env_refs(&mail_env(&smtp, extra)));
    (smtp, srv)
}

/// [`start_with_mail`] listening on `listen`.
pub fn start_with_mail_on(listen: &str, extra: &[(&str, &str)]) -> (SmtpStub, TestServer) {
    let smtp = SmtpStub::start();
    let srv = TestServer::start_listening(listen, &env_refs(&mail_env(&smtp, extra)));
    (smtp, srv)
}

/// The environment of [`start_with_mail`]: mail through `smtp`, `X-Forwarded-For` believed
/// from 127.0.0.1, and `extra`.
pub fn mail_env(smtp: &SmtpStub, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env = smtp.env();
    env.push((
        "TESSERA__SERVER__TRUSTED_PROXIES".into(),
        "[\"127.0.0.1/32\"]".into(),
    ));
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
}

static NEXT_CLIENT_IP: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

/// A client address no other request of this test run has used (198.18.0.0/15 is for tests).
pub fn fresh_client_ip() -> String {
    let n = NEXT_CLIENT_IP.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!(
        "198.{}.{}.{}",
        18 + (n / 62500) % 2,
        (n / 250) % 250,
        n % 250 + 1
    )
}

/// One mail as the SMTP stub received it: unfolded headers (names lowercased) and the decoded
/// text of every part (quoted-printable and base64 undone, SMTP dot-stuffing removed).
#[derive(Clone, Debug)]
pub struct ReceivedMail {
    pub headers: Vec<(String, String)>,
    pub text: String,
}

impl ReceivedMail {
    pub fn parse(raw: &str) -> Self {
        let raw = raw.replace("\r\n", "\n");
        let raw: String = raw
            .split('\n')
            .map(|l| if l.starts_with("..") { &l[1..] } else { l })
            .collect::<Vec<_>>()
            .join("\n");
        let (headers, body) = mime_split(&raw);
        let text = mime_decode(&headers, body);
        ReceivedMail { headers, text }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        mime_header(&self.headers, name)
    }

    /// `X-Tessera-Kind`.
    pub fn kind(&self) -> Option<&str> {
        self.header("x-tessera-kind")
    }

    /// `X-Tessera-Tenant`.
    pub fn tenant(&self) -> Option<&str> {
        self.header("x-tessera-tenant")
    }

    /// Whether `To:` is exactly `email` (bare or in angle brackets, any case).
    pub fn is_to(&self, email: &str) -> bool {
        self.header("to").is_some_and(|to| {
            to.split(',').any(|one| {
                let one = one.trim();
                let addr = match (one.find('<'), one.rfind('>')) {
                    (Some(a), Some(b)) if a < b => &one[a + 1..b],
                    _ => one,
                };
                addr.trim().eq_ignore_ascii_case(email)
            })
        })
    }

    /// The base64url token right after `prefix` (e.g. `http://.../verify-email?token=`).
    pub fn token_after(&self, prefix: &str) -> Option<String> {
        let start = self.text.find(prefix)? + prefix.len();
        let token: String = self.text[start..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        (!token.is_empty()).then_some(token)
    }

    /// The value of the first `token=` in the text.
    pub fn token(&self) -> Option<String> {
        self.token_after("token=")
    }
}

fn mime_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Splits an entity (with `\n` line ends) into unfolded headers and its body.
fn mime_split(s: &str) -> (Vec<(String, String)>, &str) {
    if let Some(body) = s.strip_prefix('\n') {
        return (Vec::new(), body);
    }
    let (head, body) = match s.find("\n\n") {
        Some(i) => (&s[..i], &s[i + 2..]),
        None => (s, ""),
    };
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in head.lines() {
        if line.starts_with(' ') || line.starts_with('\t') {
            if let Some(last) = headers.last_mut() {
                last.1.push(' ');
                last.1.push_str(line.trim());
            }
        } else if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    (headers, body)
}

fn mime_decode(headers: &[(String, String)], body: &str) -> String {
    let ctype = mime_header(headers, "content-type").unwrap_or("text/plain");
    let lower = ctype.to_ascii_lowercase();
    if lower.starts_with("multipart/") {
        let Some(i) = lower.find("boundary=") else {
            return body.to_owned();
        };
        let boundary = ctype[i + "boundary=".len()..]
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"');
        let delimiter = format!("--{boundary}");
        let mut out = String::new();
        for part in body.split(delimiter.as_str()).skip(1) {
            if part.starts_with("--") {
                break;
            }
            let part = part.strip_prefix('\n').unwrap_or(part);
            let (h, b) = mime_split(part);
            out.push_str(&mime_decode(&h, b));
            out.push('\n');
        }
        return out;
    }
    let encoding = mime_header(headers, "content-transfer-encoding")
        .unwrap_or("7bit")
        .to_ascii_lowercase();
    match encoding.as_str() {
        "base64" => {
            use base64::Engine;
            let compact: String = body.chars().filter(|c| !c.is_whitespace()).collect();
            base64::engine::general_purpose::STANDARD
                .decode(compact)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_else(|_| body.to_owned())
        }
        "quoted-printable" => {
            let joined = body.replace("=\n", "");
            let bytes = joined.as_bytes();
            let mut out = Vec::with_capacity(bytes.len());
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i] == b'=' && i + 3 <= bytes.len() {
                    if let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                        .ok()
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                    {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                }
                out.push(bytes[i]);
                i += 1;
            }
            String::from_utf8_lossy(&out).into_owned()
        }
        _ => body.to_owned(),
    }
}

impl SmtpStub {
    /// Every message so far, parsed, in arrival order.
    pub fn mails(&self) -> Vec<ReceivedMail> {
        self.messages
            .lock()
            .unwrap()
            .iter()
            .map(|m| ReceivedMail::parse(m))
            .collect()
    }

    pub fn count(&self) -> usize {
        self.messages.lock().unwrap().len()
    }

    /// Messages of `kind` to `to` from tenant `slug`, in arrival order.
    pub fn mails_of(&self, slug: &str, kind: &str, to: &str) -> Vec<ReceivedMail> {
        self.mails()
            .into_iter()
            .filter(|m| m.tenant() == Some(slug) && m.kind() == Some(kind) && m.is_to(to))
            .collect()
    }

    /// Messages of any kind and tenant to `to`.
    pub fn mails_to(&self, to: &str) -> Vec<ReceivedMail> {
        self.mails().into_iter().filter(|m| m.is_to(to)).collect()
    }

    /// Waits (up to 15 s) for the `n`-th (1-based) message to `to` holding a link to `path`
    /// (a dashboard mail: no tenant or kind header); answers the link's token.
    #[track_caller]
    pub fn wait_for_link(&self, to: &str, path: &str, n: usize) -> String {
        let prefix = format!("{path}?token=");
        let with_link = || -> Vec<String> {
            self.mails_to(to)
                .iter()
                .filter_map(|m| m.token_after(&prefix))
                .collect()
        };
        let arrived = eventually(Duration::from_secs(15), || with_link().len() >= n);
        assert!(arrived, "no message #{n} to {to} with a link to {path}");
        with_link().swap_remove(n - 1)
    }

    /// Waits (up to 15 s) for the `n`-th (1-based) message of `kind` to `to` from tenant `slug`.
    #[track_caller]
    pub fn wait_for(&self, slug: &str, kind: &str, to: &str, n: usize) -> ReceivedMail {
        let arrived = eventually(Duration::from_secs(15), || {
            self.mails_of(slug, kind, to).len() >= n
        });
        if !arrived {
            let seen: Vec<String> = self
                .mails()
                .iter()
                .map(|m| {
                    format!(
                        "{:?}/{:?}/{:?}",
                        m.tenant(),
                        m.kind(),
                        m.header("to").unwrap_or("?")
                    )
                })
                .collect();
            panic!("no {kind} message #{n} to {to} from {slug}; received: {seen:?}");
        }
        self.mails_of(slug, kind, to).swap_remove(n - 1)
    }
}

/// An HTTP answer, read whole: status, headers and the JSON body (`null` when empty).
pub struct AuthAnswer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl AuthAnswer {
    pub fn read(r: Response) -> Self {
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let text = r.text().unwrap_or_default();
        let body = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        AuthAnswer {
            status,
            headers,
            body,
        }
    }

    pub fn code(&self) -> &str {
        error_code(&self.body)
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap_or("<not ascii>").to_owned())
    }

    /// Asserts the status; answers the body.
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Value {
        assert_eq!(self.status, status, "unexpected answer: {}", self.body);
        &self.body
    }

    /// Asserts an error answer with its status and code.
    #[track_caller]
    pub fn expect_error(&self, status: u16, code: &str) {
        assert_eq!(
            (self.status, self.code()),
            (status, code),
            "unexpected answer: {}",
            self.body
        );
    }
}

/// The token pair of a successful login or refresh.
#[derive(Clone, Debug)]
pub struct UserTokens {
    pub access: String,
    pub refresh: String,
    pub body: Value,
}

impl UserTokens {
    /// Asserts a 200 token-pair answer and takes its tokens.
    #[track_caller]
    pub fn from_answer(a: &AuthAnswer) -> Self {
        let body = a.expect(200);
        let access = body["access_token"].as_str();
        let refresh = body["refresh_token"].as_str();
        assert!(
            access.is_some() && refresh.is_some(),
            "no token pair in {body}"
        );
        UserTokens {
            access: access.unwrap().to_owned(),
            refresh: refresh.unwrap().to_owned(),
            body: body.clone(),
        }
    }

    /// The access token's claims, read without verification.
    pub fn claims(&self) -> Value {
        jwt_part(&self.access, 1)
    }

    /// The `sid` claim.
    pub fn sid(&self) -> String {
        self.claims()["sid"]
            .as_str()
            .unwrap_or("<no sid>")
            .to_owned()
    }
}

/// Part `index` (0 header, 1 claims) of a JWT as JSON, without verification.
pub fn jwt_part(token: &str, index: usize) -> Value {
    use base64::Engine;
    let part = token.split('.').nth(index).unwrap_or("");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

/// base64url without padding, as JWTs use.
pub fn b64url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// One tenant's end-user API, as an application calls it (`X-API-Key` on every call). Owns its
/// client and base URL, so it outlives a `restart` (call `rebase` afterwards).
#[derive(Clone)]
pub struct UserApi {
    pub base: String,
    pub client: Client,
    pub api_key: String,
    pub slug: String,
    pub tenant_id: String,
    /// The tenant owner's (dashboard) e-mail; the password is `PASSWORD`.
    pub owner: String,
}

impl UserApi {
    /// Onboards a tenant and answers its end-user API.
    pub fn signup(srv: &TestServer, tenant_name: &str, owner: &str) -> Self {
        Self::from_signup(srv, &srv.signup(tenant_name, owner), owner)
    }

    /// The API of the tenant that `body` (a sign-up's 201 answer) made for `owner`.
    pub fn from_signup(srv: &TestServer, body: &Value, owner: &str) -> Self {
        UserApi {
            base: srv.base.clone(),
            client: srv.client.clone(),
            api_key: body["api_key"].as_str().expect("api_key").to_owned(),
            slug: body["tenant"]["slug"].as_str().expect("slug").to_owned(),
            tenant_id: body["tenant"]["id"].as_str().expect("id").to_owned(),
            owner: owner.to_owned(),
        }
    }

    /// Points at `srv` again (its address changes on restart).
    pub fn rebase(&mut self, srv: &TestServer) {
        self.base = srv.base.clone();
        self.client = srv.client.clone();
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// One request with an explicit API key (or none), bearer, body and `X-Forwarded-For`.
    pub fn send_as(
        &self,
        api_key: Option<&str>,
        method: &str,
        path: &str,
        bearer: Option<&str>,
        body: Option<&Value>,
        forwarded_for: Option<&str>,
    ) -> AuthAnswer {
        let mut req = self
            .client
            .request(method.parse().expect("method"), self.url(path));
        if let Some(k) = api_key {
            req = req.header("x-api-key", k);
        }
        if let Some(t) = bearer {
            req = req.bearer_auth(t);
        }
        if let Some(ip) = forwarded_for {
            req = req.header("x-forwarded-for", ip);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        AuthAnswer::read(req.send().expect("request"))
    }

    /// One request with this tenant's API key.
    pub fn send(
        &self,
        method: &str,
        path: &str,
        bearer: Option<&str>,
        body: Option<&Value>,
    ) -> AuthAnswer {
        self.send_as(Some(&self.api_key), method, path, bearer, body, None)
    }

    pub fn post(&self, path: &str, body: &Value) -> AuthAnswer {
        self.send("POST", path, None, Some(body))
    }

    /// Registers with consent, from an address of its own (never hits the per-IP limit).
    pub fn register(&self, email: &str, password: &str) -> AuthAnswer {
        self.register_body(&json!({"email": email, "password": password, "consent": true}))
    }

    /// Posts `body` to `/v1/auth/register` from an address of its own.
    pub fn register_body(&self, body: &Value) -> AuthAnswer {
        self.register_from(body, &fresh_client_ip())
    }

    pub fn register_from(&self, body: &Value, client_ip: &str) -> AuthAnswer {
        self.send_as(
            Some(&self.api_key),
            "POST",
            "/v1/auth/register",
            None,
            Some(body),
            Some(client_ip),
        )
    }

    pub fn login(&self, email: &str, password: &str) -> AuthAnswer {
        self.post(
            "/v1/auth/login",
            &json!({"email": email, "password": password}),
        )
    }

    pub fn login_from(&self, email: &str, password: &str, client_ip: &str) -> AuthAnswer {
        self.send_as(
            Some(&self.api_key),
            "POST",
            "/v1/auth/login",
            None,
            Some(&json!({"email": email, "password": password})),
            Some(client_ip),
        )
    }

    /// Logs in and asserts a token pair.
    #[track_caller]
    pub fn login_ok(&self, email: &str, password: &str) -> UserTokens {
        UserTokens::from_answer(&self.login(email, password))
    }

    pub fn me(&self, access: &str) -> AuthAnswer {
        self.send("GET", "/v1/auth/me", Some(access), None)
    }

    pub fn refresh(&self, refresh: &str) -> AuthAnswer {
        self.post("/v1/auth/refresh", &json!({"refresh_token": refresh}))
    }

    pub fn logout(&self, access: &str, body: Option<&Value>) -> AuthAnswer {
        self.send("POST", "/v1/auth/logout", Some(access), body)
    }

    pub fn sessions(&self, access: &str) -> AuthAnswer {
        self.send("GET", "/v1/auth/sessions", Some(access), None)
    }

    pub fn delete_session(&self, access: &str, id: &str) -> AuthAnswer {
        self.send(
            "DELETE",
            &format!("/v1/auth/sessions/{id}"),
            Some(access),
            None,
        )
    }

    /// The link prefix of a mail of this server (accounts URL = base URL by default).
    pub fn link(&self, route: &str) -> String {
        format!("{}/{route}?token=", self.base)
    }

    /// Waits for the `n`-th verification mail to `email` and answers its token.
    #[track_caller]
    pub fn verification_token(&self, smtp: &SmtpStub, email: &str, n: usize) -> String {
        let mail = smtp.wait_for(&self.slug, "verify_email", email, n);
        mail.token_after(&self.link("verify-email"))
            .unwrap_or_else(|| panic!("no verify-email link in {}", mail.text))
    }

    /// Registers `email`, confirms it from the mail and logs in.
    #[track_caller]
    pub fn verified_user(&self, smtp: &SmtpStub, email: &str, password: &str) -> UserTokens {
        self.register(email, password).expect(200);
        let token = self.verification_token(smtp, email, 1);
        let r = self.post("/v1/auth/verify-email", &json!({"token": token}));
        assert_eq!(r.expect(200)["verified"], true, "{}", r.body);
        self.login_ok(email, password)
    }

    /// `iss` of this tenant's tokens.
    pub fn issuer(&self) -> String {
        format!("{}/v1/tenants/{}", self.base, self.slug)
    }

    /// The published JWKS (no API key).
    #[track_caller]
    pub fn jwks(&self) -> Value {
        let r = self.send_as(
            None,
            "GET",
            &format!("/v1/tenants/{}/.well-known/jwks.json", self.slug),
            None,
            None,
            None,
        );
        r.expect(200).clone()
    }

    /// Verifies an access token as an application would: the JWKS key named by `kid`, ES256,
    /// this tenant's issuer and audience. Answers the header and the claims.
    #[track_caller]
    pub fn verify_access(&self, token: &str) -> (jsonwebtoken::Header, Value) {
        self.verify_jwt(token, "access", Some(&self.issuer()), Some(&self.slug))
    }

    /// Verifies `token` (a `what` token) as a resource server would: the tenant JWKS key named
    /// by `kid`, ES256, the signature and expiry, and, when given, the issuer and audience.
    /// Answers the header and the claims.
    #[track_caller]
    pub fn verify_jwt(
        &self,
        token: &str,
        what: &str,
        issuer: Option<&str>,
        audience: Option<&str>,
    ) -> (jsonwebtoken::Header, Value) {
        use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};
        let header = decode_header(token).expect("a JWT header");
        let kid = header.kid.clone().expect("a kid in the header");
        let jwks = self.jwks();
        let key = jwks["keys"]
            .as_array()
            .expect("keys")
            .iter()
            .find(|k| k["kid"] == kid.as_str())
            .unwrap_or_else(|| panic!("kid {kid} is not in the JWKS {jwks}"));
        let key = DecodingKey::from_ec_components(
            key["x"].as_str().expect("x"),
            key["y"].as_str().expect("y"),
        )
        .expect("an EC key");
        let mut validation = Validation::new(Algorithm::ES256);
        if let Some(issuer) = issuer {
            validation.set_issuer(&[issuer]);
        }
        match audience {
            Some(audience) => validation.set_audience(&[audience]),
            None => validation.validate_aud = false,
        }
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = decode::<Value>(token, &key, &validation)
            .unwrap_or_else(|e| panic!("the {what} token does not verify: {e}"));
        (header, data.claims)
    }
}

/// The tenant's audit events of one type (newest first), read by a dashboard member.
#[track_caller]
pub fn audit_events(srv: &TestServer, s: &Session, slug: &str, event_type: &str) -> Vec<Value> {
    let r = srv.dash(
        "GET",
        &format!("/v1/auth/dashboard/tenants/{slug}/audit-events?type={event_type}&limit=200"),
        s,
        None,
    );
    assert_eq!(r.status(), 200);
    let list: Value = r.json().unwrap();
    list["data"].as_array().cloned().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// MFA and step-up: TOTP codes computed independently of the server, the MFA and step-up routes,
// the account-linking gate, and restarts with another environment.
// ---------------------------------------------------------------------------------------------

impl TestServer {
    /// Starts again on the same data directory with the same environment, except `overrides`
    /// (which replace a variable of the same name, or are added).
    pub fn restart_with(&mut self, overrides: &[(&str, &str)]) {
        for (k, v) in overrides {
            match self.env.iter_mut().find(|(name, _)| name == k) {
                Some(pair) => pair.1 = v.to_string(),
                None => self.env.push((k.to_string(), v.to_string())),
            }
        }
        self.restart();
    }
}

/// RFC 4648 base32 (the upper-case alphabet; padding and lower case tolerated), or `None` for
/// any other character.
pub fn base32_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let (mut buffer, mut bits) = (0u64, 0u32);
    for c in s.trim_end_matches('=').chars() {
        let v = match c.to_ascii_uppercase() {
            c @ 'A'..='Z' => c as u64 - 'A' as u64,
            c @ '2'..='7' => c as u64 - '2' as u64 + 26,
            _ => return None,
        };
        buffer = (buffer << 5) | v;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

/// The current 30-second TOTP time step.
pub fn totp_step_now() -> u64 {
    (unix_now() / 30.0) as u64
}

/// The current TOTP step, first waiting for the next one to begin when fewer than `margin`
/// seconds of this one are left (so a code computed now is still current when it arrives).
pub fn settled_totp_step(margin: f64) -> u64 {
    let now = unix_now();
    let left = 30.0 - now % 30.0;
    if left < margin {
        std::thread::sleep(Duration::from_secs_f64(left + 0.2));
    }
    totp_step_now()
}

/// Waits until the current TOTP step is at least `step`.
pub fn wait_for_totp_step(step: u64) {
    while totp_step_now() < step {
        let left = 30.0 - unix_now() % 30.0;
        std::thread::sleep(Duration::from_secs_f64(left.min(30.0) + 0.1));
    }
}

/// An authenticator app: TOTP (SHA-1, 6 digits, 30 s) over the secret the server handed out.
#[derive(Clone, Debug)]
pub struct Totp {
    /// The base32 secret as the server gave it.
    pub secret: String,
    key: Vec<u8>,
}

impl Totp {
    #[track_caller]
    pub fn new(secret: &str) -> Self {
        let key = base32_decode(secret).unwrap_or_else(|| panic!("{secret:?} is not base32"));
        Totp {
            secret: secret.to_owned(),
            key,
        }
    }

    /// The code of TOTP time step `step`.
    pub fn at_step(&self, step: u64) -> String {
        totp_lite::totp_custom::<totp_lite::Sha1>(30, 6, &self.key, step * 30)
    }

    /// A six-digit code that is the code of no step within two of `step`.
    pub fn wrong_at(&self, step: u64) -> String {
        let valid: Vec<String> = (step.saturating_sub(2)..=step + 2)
            .map(|s| self.at_step(s))
            .collect();
        ["000000", "111111", "222222", "123456", "987654", "555555"]
            .iter()
            .map(|c| c.to_string())
            .find(|c| !valid.contains(c))
            .expect("one of six codes is wrong")
    }

    /// A code that is wrong now (and for a minute either side).
    pub fn wrong(&self) -> String {
        self.wrong_at(totp_step_now())
    }
}

/// MFA turned on for a user: the authenticator, the recovery codes and the step whose code
/// confirmed the set-up.
#[derive(Clone, Debug)]
pub struct MfaSetup {
    pub totp: Totp,
    pub recovery_codes: Vec<String>,
    pub step: u64,
}

/// The `X-Step-Up-Token` header of the account-linking gate.
pub const STEP_UP_HEADER: &str = "x-step-up-token";

impl UserApi {
    /// A request with extra headers (and optionally `X-Forwarded-For`).
    pub fn send_with(
        &self,
        method: &str,
        path: &str,
        bearer: Option<&str>,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> AuthAnswer {
        let mut req = self
            .client
            .request(method.parse().expect("method"), self.url(path))
            .header("x-api-key", &self.api_key);
        if let Some(t) = bearer {
            req = req.bearer_auth(t);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        AuthAnswer::read(req.send().expect("request"))
    }

    /// `POST path` with `bearer` and `body`, from an address of its own.
    pub fn post_as(&self, path: &str, bearer: Option<&str>, body: &Value) -> AuthAnswer {
        self.send_as(
            Some(&self.api_key),
            "POST",
            path,
            bearer,
            Some(body),
            Some(&fresh_client_ip()),
        )
    }

    /// A password step-up token (`USER_PASSWORD`) of the session of `access`.
    #[track_caller]
    pub fn password_step_up(&self, access: &str) -> String {
        let r = self.post_as(
            "/v1/auth/step-up/password",
            Some(access),
            &json!({ "password": USER_PASSWORD }),
        );
        r.expect(200)["step_up_token"]
            .as_str()
            .expect("step_up_token")
            .to_owned()
    }

    /// `POST /v1/auth/mfa/setup` with an empty JSON object. With an access token (a JWT) it
    /// first steps up with `USER_PASSWORD` and sends the step-up token, as setup requires;
    /// when that step-up is refused (a guest) it sends none.
    pub fn mfa_setup(&self, bearer: &str) -> AuthAnswer {
        let step_up = if bearer.contains('.') {
            let r = self.post_as(
                "/v1/auth/step-up/password",
                Some(bearer),
                &json!({ "password": USER_PASSWORD }),
            );
            r.body["step_up_token"].as_str().map(str::to_owned)
        } else {
            None
        };
        self.mfa_setup_with(bearer, step_up.as_deref())
    }

    /// `POST /v1/auth/mfa/setup` with an empty JSON object and the step-up token, if any.
    pub fn mfa_setup_with(&self, bearer: &str, step_up: Option<&str>) -> AuthAnswer {
        let headers: Vec<(&str, &str)> = step_up.map(|t| (STEP_UP_HEADER, t)).into_iter().collect();
        self.send_with(
            "POST",
            "/v1/auth/mfa/setup",
            Some(bearer),
            Some(&json!({})),
            &headers,
        )
    }

    pub fn mfa_verify_setup(&self, bearer: &str, code: &str) -> AuthAnswer {
        self.post_as(
            "/v1/auth/mfa/verify-setup",
            Some(bearer),
            &json!({ "code": code }),
        )
    }

    /// Sets MFA up for the holder of `bearer` and confirms it with the current code.
    #[track_caller]
    pub fn enable_mfa(&self, bearer: &str) -> MfaSetup {
        let r = self.mfa_setup(bearer);
        let secret = r.expect(200)["secret"]
            .as_str()
            .unwrap_or_else(|| panic!("no secret in {}", r.body))
            .to_owned();
        let totp = Totp::new(&secret);
        let step = settled_totp_step(3.0);
        let r = self.mfa_verify_setup(bearer, &totp.at_step(step));
        let codes: Vec<String> = r.expect(200)["recovery_codes"]
            .as_array()
            .unwrap_or_else(|| panic!("no recovery_codes in {}", r.body))
            .iter()
            .map(|c| c.as_str().expect("a recovery code is a string").to_owned())
            .collect();
        MfaSetup {
            totp,
            recovery_codes: codes,
            step,
        }
    }

    /// `POST /v1/auth/mfa/verify`, from an address of its own.
    pub fn mfa_verify(&self, challenge: &str, code: &str, bearer: Option<&str>) -> AuthAnswer {
        self.post_as(
            "/v1/auth/mfa/verify",
            bearer,
            &json!({ "mfa_challenge_token": challenge, "code": code }),
        )
    }

    /// Logs in (from an address of its own) a user with MFA: asserts the challenge answer and
    /// answers its token.
    #[track_caller]
    pub fn mfa_challenge(&self, email: &str, password: &str) -> String {
        let r = self.login_from(email, password, &fresh_client_ip());
        let body = r.expect(200);
        assert_eq!(body["mfa_required"], true, "no MFA challenge in {body}");
        assert!(
            body.get("access_token").is_none() && body.get("refresh_token").is_none(),
            "tokens before the second factor: {body}"
        );
        body["mfa_challenge_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no mfa_challenge_token in {body}"))
            .to_owned()
    }

    /// `POST /v1/users/me/link/{provider}` with `{}`, and the step-up token when given.
    pub fn link_gate(&self, provider: &str, bearer: &str, step_up: Option<&str>) -> AuthAnswer {
        let headers: Vec<(&str, &str)> = step_up.map(|t| (STEP_UP_HEADER, t)).into_iter().collect();
        self.send_with(
            "POST",
            &format!("/v1/users/me/link/{provider}"),
            Some(bearer),
            Some(&json!({})),
            &headers,
        )
    }

    /// Verifies a step-up token as an application would: the JWKS key named by `kid`, ES256,
    /// the signature and expiry (issuer and audience are left to the caller's assertions).
    /// Answers the header and the claims.
    #[track_caller]
    pub fn verify_step_up(&self, token: &str) -> (jsonwebtoken::Header, Value) {
        self.verify_jwt(token, "step-up", None, None)
    }
}

/// PATCHes the tenant's security settings as `s`; asserts 200 and answers the settings.
#[track_caller]
pub fn patch_security(srv: &TestServer, s: &Session, slug: &str, body: Value) -> Value {
    let r = srv.dash(
        "PATCH",
        &format!("/v1/auth/dashboard/tenants/{slug}/settings/security"),
        s,
        Some(&body),
    );
    let status = r.status().as_u16();
    let out: Value = r.json().unwrap_or(Value::Null);
    assert_eq!(status, 200, "{body} refused: {out}");
    out
}

/// The first run of exactly six digits in `text` that is a word of its own (not part of a
/// longer number, a word or a `#rrggbb` colour).
pub fn six_digit_code(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let before = start.checked_sub(1).map(|j| chars[j]);
            let after = chars.get(i).copied();
            let word_before = before.is_some_and(|c| c.is_alphanumeric() || c == '#' || c == '_');
            let word_after = after.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if i - start == 6 && !word_before && !word_after {
                return Some(chars[start..i].iter().collect());
            }
        } else {
            i += 1;
        }
    }
    None
}

/// A server (mail through a stub, `X-Forwarded-For` believed) with `extra` environment, one
/// tenant and its owner's dashboard session.
pub fn user_setup(
    tenant: &str,
    extra: &[(&str, &str)],
) -> (SmtpStub, TestServer, UserApi, Session) {
    let (smtp, srv) = start_with_mail(extra);
    let api = UserApi::signup(&srv, tenant, "owner@example.com");
    let session = srv.login(&api.owner, PASSWORD);
    (smtp, srv, api, session)
}

/// A server without mail, one tenant `tenant` signed up by `owner@example.com`, the owner's
/// dashboard session and the sign-up's answer.
pub fn owner_setup(tenant: &str) -> (TestServer, Session, Value) {
    let srv = TestServer::start();
    let signup = srv.signup(tenant, "owner@example.com");
    let session = srv.login("owner@example.com", PASSWORD);
    (srv, session, signup)
}

/// The keys of a JSON object.
#[track_caller]
pub fn json_keys(v: &Value) -> std::collections::BTreeSet<String> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .cloned()
        .collect()
}

pub fn name_set(names: &[&str]) -> std::collections::BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

// ---------------------------------------------------------------------------------------------
// Delivery caught up: what shows that a message was never sent
// ---------------------------------------------------------------------------------------------

/// The value of one series (`name` or `name{labels}`, exactly as exported) in a `/metrics`
/// text.
pub fn series_value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(series)?.strip_prefix(' ')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The value of the series `name` in the server's `/metrics`, if it is there.
pub fn metric_value(srv: &TestServer, name: &str) -> Option<f64> {
    series_value(&srv.get("/metrics", None).text().ok()?, name)
}

/// Waits (up to 15 s) until delivery holds no message of `channel` (`mail`: the postman,
/// `sms`: the courier), that is until every message handed to it so far was sent or given up
/// (`tessera_<channel>_queue_depth` reads 0). Both send several messages at once, so the
/// arrival of one says nothing of another handed over just before it; this does.
#[track_caller]
pub fn wait_for_idle_delivery(srv: &TestServer, channel: &str) {
    let series = format!("tessera_{channel}_queue_depth");
    let idle = eventually(Duration::from_secs(15), || {
        metric_value(srv, &series) == Some(0.0)
    });
    assert!(
        idle,
        "{series} is still {:?} after 15 s",
        metric_value(srv, &series)
    );
}

/// Numbers the accounts [`mail_caught_up`] registers.
static LATER_MAIL: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Returns once every message queued by a request answered before the call was delivered: an
/// account registered now gets its confirmation mail (a later message through the same
/// postman, whose writes are made durable after theirs), then the postman holds nothing, so
/// no message handed to it earlier is still on its way.
#[track_caller]
pub fn mail_caught_up(smtp: &SmtpStub, srv: &TestServer, api: &UserApi) {
    let later = format!(
        "later-{}@example.com",
        LATER_MAIL.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    // An adult's birth date, so a tenant that protects minors takes the registration too.
    api.register_body(&json!({
        "email": later, "password": USER_PASSWORD, "consent": true, "date_of_birth": "1980-01-01"
    }))
    .expect(200);
    smtp.wait_for(&api.slug, "verify_email", &later, 1);
    wait_for_idle_delivery(srv, "mail");
}

/// Asserts the requests answered so far mailed nothing to any of `emails` (checked once mail
/// asked for later has arrived, see `mail_caught_up`).
#[track_caller]
pub fn assert_no_mail(smtp: &SmtpStub, srv: &TestServer, api: &UserApi, emails: &[&str]) {
    mail_caught_up(smtp, srv, api);
    assert_none_mailed(smtp, emails);
}

/// Asserts nothing was mailed to any of `emails` by the requests answered before the last one
/// whose mail the caller already waited for: the postman is waited for until it holds nothing
/// (it sends several at once, so one arrival alone says nothing of another handed over before
/// it), then the mailbox is read.
#[track_caller]
pub fn assert_none_mailed_since(smtp: &SmtpStub, srv: &TestServer, emails: &[&str]) {
    wait_for_idle_delivery(srv, "mail");
    assert_none_mailed(smtp, emails);
}

#[track_caller]
fn assert_none_mailed(smtp: &SmtpStub, emails: &[&str]) {
    for email in emails {
        let got: Vec<String> = smtp
            .mails_to(email)
            .iter()
            .map(|m| format!("{:?}/{:?}", m.tenant(), m.kind()))
            .collect();
        assert!(got.is_empty(), "mail to {email}: {got:?}");
    }
}

/// The clock offset (`TESSERA__TESTING__CLOCK_OFFSET_SECS`) that makes what was issued at
/// `issued` or later at most `age` seconds old now on the server's offset clock (and what was
/// issued right then at least `age - 1`): `age` less the whole seconds already gone, rounded up.
/// A restart with it ages it further only by the time the restart itself takes.
pub fn offset_for_age(issued: Instant, age: u64) -> String {
    let gone = issued.elapsed().as_secs() + 1;
    assert!(
        gone < age,
        "{gone} s went by since the issue, more than the age {age} s"
    );
    (age - gone).to_string()
}

/// Says that the calling test cannot run because `missing` is not installed (`how`: what
/// installs it). With `TESSERA_TEST_REQUIRE_TOOLS` set (`.ci/run` sets it) that is a failure;
/// elsewhere a skip, written straight to the terminal: the test harness captures `eprintln!`
/// of a test that passes, so a skip said that way would never be seen.
#[track_caller]
pub fn skip_without(missing: &str, how: &str) {
    assert!(
        std::env::var_os("TESSERA_TEST_REQUIRE_TOOLS").is_none(),
        "{missing} is missing ({how}); TESSERA_TEST_REQUIRE_TOOLS is set, so this test fails \
         instead of skipping"
    );
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED {test}: {missing} is missing ({how}) ***"
    );
}

// ---------------------------------------------------------------------------------------------
// Small helpers the modules share
// ---------------------------------------------------------------------------------------------

/// A client that follows no redirect, so a test reads each `Location` itself.
pub fn http() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// A tenant name as a lower-case, hyphenated slug-like word (`"Guest Co"` → `guest-co`).
pub fn slugish(name: &str) -> String {
    name.to_ascii_lowercase().replace(' ', "-")
}

/// Whether `s` is a UUID.
pub fn is_uuid(s: &str) -> bool {
    uuid::Uuid::parse_str(s).is_ok()
}

/// The user id of a sign-in's answer.
#[track_caller]
pub fn user_id(t: &UserTokens) -> String {
    t.body["user"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no user id in {}", t.body))
        .to_owned()
}

/// A six-digit code other than `code`.
pub fn other_code(code: &str) -> String {
    if code == "000000" { "111111" } else { "000000" }.to_owned()
}

/// A French mobile number (E.164), distinct for each `n` below a million.
pub fn fr(n: u32) -> String {
    format!("+33612{n:06}")
}

/// Asserts the plain 202 answer `{"accepted": true}`.
#[track_caller]
pub fn assert_accepted(a: &AuthAnswer, what: &str) {
    assert_eq!(a.status, 202, "{what}: {}", a.body);
    assert_eq!(a.body, json!({"accepted": true}), "{what}");
}

/// Asserts an error answer, naming the case.
#[track_caller]
pub fn assert_error(a: &AuthAnswer, status: u16, code: &str, what: &str) {
    assert_eq!((a.status, a.code()), (status, code), "{what}: {}", a.body);
}

/// Changes the tenant's guest settings by `body` (with the confirmation a privileged default
/// role needs) and answers the settings after.
#[track_caller]
pub fn guest_settings(srv: &TestServer, s: &Session, slug: &str, body: Value) -> Value {
    let r = srv
        .client
        .patch(srv.url(&format!(
            "/v1/auth/dashboard/tenants/{slug}/settings/anonymous"
        )))
        .bearer_auth(&s.token)
        .header("x-service-confirm", "privileged-default-role")
        .json(&body)
        .send()
        .expect("PATCH settings/anonymous");
    let status = r.status().as_u16();
    let out: Value = r.json().unwrap_or(Value::Null);
    assert_eq!(status, 200, "{body} refused: {out}");
    out
}

/// Turns guest sign-ins on.
#[track_caller]
pub fn enable_guests(srv: &TestServer, s: &Session, slug: &str) {
    let out = guest_settings(srv, s, slug, json!({"anonymous_signins_enabled": true}));
    assert_eq!(out["anonymous_signins_enabled"], true, "{out}");
}

/// A step-up token for `user`'s session, proven by `password`.
#[track_caller]
pub fn password_step_up(api: &UserApi, user: &UserTokens, password: &str) -> String {
    let r = api.post_as(
        "/v1/auth/step-up/password",
        Some(&user.access),
        &json!({ "password": password }),
    );
    r.expect(200)["step_up_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no step_up_token in {}", r.body))
        .to_owned()
}

/// The six-digit code of the `n`-th mail of `kind` to `email`; asserts the mail's kind and
/// tenant.
#[track_caller]
pub fn mailed_code(smtp: &SmtpStub, api: &UserApi, kind: &str, email: &str, n: usize) -> String {
    let mail = smtp.wait_for(&api.slug, kind, email, n);
    assert_eq!(mail.kind(), Some(kind));
    assert_eq!(mail.tenant(), Some(api.slug.as_str()));
    six_digit_code(&mail.text).unwrap_or_else(|| panic!("no six-digit code in {}", mail.text))
}

/// The token of the `n`-th mail of `kind` to `email`, linked as
/// `{accounts_url}/<page>?token=<token>`; asserts the mail's kind and tenant and that the whole
/// link is a line of its own.
#[track_caller]
pub fn mailed_link_token(
    smtp: &SmtpStub,
    api: &UserApi,
    kind: &str,
    page: &str,
    email: &str,
    n: usize,
) -> String {
    let mail = smtp.wait_for(&api.slug, kind, email, n);
    assert_eq!(mail.kind(), Some(kind));
    assert_eq!(mail.tenant(), Some(api.slug.as_str()));
    let prefix = api.link(page);
    let token = mail
        .token_after(&prefix)
        .unwrap_or_else(|| panic!("no {prefix}<TOKEN> in {}", mail.text));
    let whole = format!("{prefix}{token}");
    assert!(
        mail.text.lines().any(|l| l.trim() == whole),
        "the link {whole} is not on a line of its own in {}",
        mail.text
    );
    token
}

/// A guest: its id and token pair.
#[derive(Clone, Debug)]
pub struct Guest {
    pub id: String,
    pub tokens: UserTokens,
}

impl Guest {
    /// Takes a 201 guest answer.
    #[track_caller]
    pub fn from_answer(a: &AuthAnswer) -> Self {
        let body = a.expect(201);
        let field = |v: &Value| {
            v.as_str()
                .unwrap_or_else(|| panic!("no token pair and user id in {body}"))
                .to_owned()
        };
        Guest {
            id: field(&body["user"]["id"]),
            tokens: UserTokens {
                access: field(&body["access_token"]),
                refresh: field(&body["refresh_token"]),
                body: body.clone(),
            },
        }
    }
}

/// Makes a guest (from an address of its own, with `body`, none at all when `None`) and
/// asserts the 201.
#[track_caller]
pub fn new_guest(api: &UserApi, body: Option<&Value>) -> Guest {
    Guest::from_answer(&api.send_as(
        Some(&api.api_key),
        "POST",
        "/v1/auth/anonymous",
        None,
        body,
        Some(&fresh_client_ip()),
    ))
}

/// Asserts a sign-in's token pair (exactly the token-pair fields, plus `redirect_to` when
/// `redirect_to` is given, with that value) for `user_id` whose access token verifies against
/// the JWKS with AAL1 and `amr`.
#[track_caller]
pub fn assert_sign_in_tokens(
    api: &UserApi,
    a: &AuthAnswer,
    user_id: Option<&str>,
    amr: Value,
    redirect_to: Option<&str>,
) -> UserTokens {
    let t = UserTokens::from_answer(a);
    let mut expected = vec![
        "access_token",
        "refresh_token",
        "expires_in",
        "token_type",
        "user",
    ];
    if redirect_to.is_some() {
        expected.push("redirect_to");
    }
    assert_eq!(json_keys(&t.body), name_set(&expected), "{}", t.body);
    if let Some(r) = redirect_to {
        assert_eq!(t.body["redirect_to"], r, "{}", t.body);
    }
    assert_eq!(t.body["token_type"], "Bearer", "{}", t.body);
    let expires_in = t.body["expires_in"].as_u64().expect("expires_in");
    assert!((1..=900).contains(&expires_in), "{expires_in}");
    let (header, claims) = api.verify_access(&t.access);
    assert_eq!(header.alg, jsonwebtoken::Algorithm::ES256);
    assert_eq!(header.typ.as_deref(), Some("at+jwt"));
    let sub = claims["sub"].as_str().expect("sub").to_owned();
    assert_eq!(t.body["user"]["id"], sub.as_str(), "{}", t.body);
    if let Some(id) = user_id {
        assert_eq!(sub, id, "{claims}");
    }
    assert_eq!(claims["tid"], api.tenant_id.as_str(), "{claims}");
    assert!(claims["sid"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(claims["aal"], "AAL1", "{claims}");
    assert_eq!(claims["acr"], "aal1", "{claims}");
    assert_eq!(claims["amr"], amr, "{claims}");
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let iat = claims["iat"].as_i64().expect("iat");
    assert!((iat - now).abs() < 60, "iat {iat} vs now {now}");
    t
}

/// A request with `Authorization: Bearer <key>` and nothing else.
pub fn with_key(
    srv: &TestServer,
    key: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> AuthAnswer {
    let mut req = srv
        .client
        .request(method.parse().unwrap(), srv.url(path))
        .bearer_auth(key);
    if let Some(b) = body {
        req = req.json(b);
    }
    AuthAnswer::read(req.send().unwrap())
}
