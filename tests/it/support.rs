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

pub const PASSWORD: &str = "correct horse battery staple";

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_tessera")
}

pub fn config_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config.toml")
}

/// A running server. Killed on drop.
pub struct TestServer {
    child: Option<Child>,
    pub base: String,
    pub data_dir: PathBuf,
    pub socket: PathBuf,
    pub log: PathBuf,
    pub client: Client,
    env: Vec<(String, String)>,
    _tmp: Option<tempfile::TempDir>,
}

/// Starts the binary on `data_dir` with extra environment; answers the child and its address,
/// or the child's exit status and stderr when it did not come up.
pub fn spawn(
    data_dir: &Path,
    env: &[(String, String)],
    log: &Path,
) -> Result<(Child, String), (ExitStatus, String)> {
    let log_file = std::fs::File::create(log).expect("log file");
    let mut child = Command::new(bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(config_file())
        .arg("--data-dir")
        .arg(data_dir)
        .env("TESSERA__LOG__LEVEL", "info")
        // Tests need speed, not password-cracking resistance.
        .env("TESSERA__SECURITY__ARGON2_M_COST_KIB", "1024")
        .env("TESSERA__SECURITY__ARGON2_T_COST", "1")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log_file))
        .spawn()
        .expect("spawn tessera");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(line)) = lines.next() {
            let _ = tx.send(line);
        }
        for _ in lines {}
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(line) => {
            let addr = line
                .split("http://")
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .expect("address in the listening line")
                .to_owned();
            Ok((child, format!("http://{addr}")))
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
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let log = data_dir.with_extension(format!("{}.log", rand_suffix()));
        let (child, base) = spawn(data_dir, &env, &log)
            .unwrap_or_else(|(status, err)| panic!("server did not start ({status}):\n{err}"));
        TestServer {
            child: Some(child),
            base,
            data_dir: data_dir.to_path_buf(),
            socket: data_dir.join("admin.sock"),
            log,
            client: Client::builder()
                .timeout(Duration::from_secs(30))
                .user_agent("tessera-tests reqwest")
                .build()
                .expect("client"),
            env,
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

    /// Starts again on the same data directory with the same environment.
    pub fn restart(&mut self) {
        self.kill();
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut fresh = TestServer::start_in(&self.data_dir, &env);
        self.child = fresh.child.take();
        self.base = fresh.base.clone();
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
    pub seen: std::sync::Arc<std::sync::Mutex<Vec<std::collections::HashMap<String, String>>>>,
}

impl CaptchaStub {
    pub fn start() -> Self {
        use std::io::Read;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/siteverify", listener.local_addr().unwrap());
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    let l = line.trim_end();
                    if l.is_empty() {
                        break;
                    }
                    if let Some(v) = l.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0u8; len];
                let _ = reader.read_exact(&mut body);
                let form: std::collections::HashMap<String, String> =
                    url_decode_form(&String::from_utf8_lossy(&body));
                let ok = form.get("response").map(String::as_str) == Some("good")
                    && form.get("secret").map(String::as_str) == Some("stub-secret");
                record.lock().unwrap().push(form);
                let answer = format!("{{\"success\": {ok}, \"error-codes\": []}}");
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{}",
                    answer.len(),
                    answer
                );
            }
        });
        CaptchaStub { url, seen }
    }
}

fn url_decode_form(s: &str) -> std::collections::HashMap<String, String> {
    s.split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 3 <= bytes.len() => {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap_or(b'?'));
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A local SMTP server speaking enough of RFC 5321 for lettre: it accepts every message and
/// keeps its DATA.
pub struct SmtpStub {
    pub port: u16,
    pub messages: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl SmtpStub {
    pub fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let messages = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let store = messages.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let store = store.clone();
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
        SmtpStub { port, messages }
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
