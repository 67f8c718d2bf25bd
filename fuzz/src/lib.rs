//! What the fuzz targets share: a private data directory per fuzzing process, a real Tessera
//! server started in-process with [`tessera::run`] (the entry point the binary and the
//! black-box tests use), and a small blocking HTTP/1.1 client that keeps one connection open.
//!
//! The oracles live in modules the integration tests also include by path, to replay the
//! seeds on stable: [`bodies`] (`request_bodies`), [`jwt`] and [`admin`] (`admin_protocol`).
//!
//! Setup failures are not findings: they print why and exit with status 2, so libFuzzer
//! never saves a crash input for a harness that could not start.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use tessera::config::{Config, Overrides};

pub mod admin;
pub mod bodies;
pub mod jwt;

/// Prints `what` and ends the process without a crash report: the harness, not the input,
/// is at fault.
pub fn setup_failed(what: impl std::fmt::Display) -> ! {
    eprintln!("fuzz harness setup failed: {what}");
    std::process::exit(2)
}

/// With `TESSERA_FUZZ_LOG` set (a tracing filter such as `info` or `tessera=debug`), the
/// server logs to stderr: the cause of an internal error is only logged. Off by default, as
/// logging every request slows fuzzing down.
pub fn init_logging() {
    if let Ok(filter) = std::env::var("TESSERA_FUZZ_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .try_init();
    }
}

/// A fresh directory for this process under `$TESSERA_FUZZ_STATE` (default
/// `$TMPDIR/tessera-fuzz`), named `<target>-<pid>`. Directories left by processes that are no
/// longer running are removed first: libFuzzer ends with `exit()`, so nothing is cleaned up
/// on the way out.
pub fn state_dir(target: &str) -> PathBuf {
    let root = std::env::var_os("TESSERA_FUZZ_STATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("tessera-fuzz"));
    if let Ok(entries) = std::fs::read_dir(&root) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let pid = name
                .to_str()
                .and_then(|n| n.rsplit_once('-'))
                .and_then(|(_, pid)| pid.parse::<u32>().ok());
            if let Some(pid) = pid {
                if !Path::new(&format!("/proc/{pid}")).exists() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
    }
    let dir = root.join(format!("{target}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        setup_failed(format!("cannot create {}: {e}", dir.display()));
    }
    dir
}

/// A Tessera server running in this process on its own runtime (two worker threads).
pub struct Server {
    pub addr: SocketAddr,
    pub data_dir: PathBuf,
}

impl Server {
    /// Starts `tessera::run` with a configuration fit for fuzzing (see [`fuzz_config`]) and
    /// waits until `/healthz` answers.
    pub fn start(target: &str) -> Server {
        init_logging();
        let data_dir = state_dir(target).join("data");
        // The port of a listener bound and dropped at once: run() binds its own listener and
        // only prints the address it got.
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| setup_failed(format!("no free port: {e}")));
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let config = fuzz_config(&data_dir, addr);
        std::thread::Builder::new()
            .name("tessera-server".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap_or_else(|e| setup_failed(format!("tokio runtime: {e}")));
                let result = runtime.block_on(tessera::run(config, std::future::pending::<()>()));
                match result {
                    Ok(()) => setup_failed("the server stopped"),
                    Err(e) => setup_failed(format!("the server did not start: {e}")),
                }
            })
            .unwrap_or_else(|e| setup_failed(format!("server thread: {e}")));
        let server = Server { addr, data_dir };
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut http = server.client();
        loop {
            if let Ok(r) = http.send("GET", "/healthz", &[], b"") {
                if r.status == 200 {
                    break;
                }
            }
            if Instant::now() > deadline {
                setup_failed("the server did not answer /healthz within 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    pub fn client(&self) -> Http {
        Http {
            addr: self.addr,
            conn: None,
        }
    }

    /// The admin socket `run` binds in the data directory.
    pub fn admin_socket(&self) -> PathBuf {
        self.data_dir.join("admin.sock")
    }
}

/// The shipped defaults, changed only where fuzzing needs it: cheap Argon2 (m=8 KiB, t=1) so
/// a valid password costs microseconds, writes acknowledged without waiting for the disk,
/// the loopback peer trusted as a proxy so each request can name its own client address in
/// `X-Forwarded-For` (per-address rate limits would otherwise answer 429 before most
/// handlers look at the body), tokens and dashboard sessions that outlive a run, and the
/// text-message provider on a closed local port (a tenant with its own provider account
/// always sends through it), so nothing leaves the machine: CAPTCHA is off and mail goes to
/// files by default.
pub fn fuzz_config(data_dir: &Path, addr: SocketAddr) -> Config {
    let toml = r#"
[server]
trusted_proxies = ["127.0.0.1/32"]

[storage]
sync_writes = false
cache_capacity_mb = 32

[security]
argon2_m_cost_kib = 8
argon2_t_cost = 1
argon2_p_cost = 1
# Sign-ups go past validation into the directory however many a run sends.
onboarding_per_ip_hourly = 1000000

[tokens]
access_ttl_secs = 604800

[sms]
base_url = "http://127.0.0.1:9"
timeout_ms = 1000

[dashboard]
idle_timeout_secs = 604800
absolute_timeout_secs = 604800
"#;
    let overrides = Overrides {
        listen: Some(addr.to_string()),
        data_dir: Some(data_dir.to_path_buf()),
    };
    Config::from_toml_str(toml, &overrides)
        .unwrap_or_else(|e| setup_failed(format!("configuration: {e}")))
}

/// One HTTP response: status, lower-cased header names, body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// A blocking HTTP/1.1 client on one kept-alive connection, reopened when the server closes
/// it. Requests are framed here (the body is the only free part), so every byte the fuzzer
/// chooses reaches the server as a body.
pub struct Http {
    addr: SocketAddr,
    conn: Option<BufReader<TcpStream>>,
}

/// Longest answer read: far above anything the server sends.
const MAX_RESPONSE: usize = 16 << 20;

impl Http {
    /// Sends one request; on an error with a reused connection (the server may have closed
    /// it between requests), retries once on a new one.
    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<Response> {
        let reused = self.conn.is_some();
        match self.send_once(method, path, headers, body) {
            Ok(r) => Ok(r),
            Err(_) if reused => {
                self.conn = None;
                self.send_once(method, path, headers, body)
            }
            Err(e) => Err(e),
        }
    }

    fn send_once(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<Response> {
        let result = self.exchange(method, path, headers, body);
        match &result {
            Ok(r)
                if r.header("connection")
                    .is_some_and(|c| c.eq_ignore_ascii_case("close")) =>
            {
                self.conn = None
            }
            Ok(_) => {}
            Err(_) => self.conn = None,
        }
        result
    }

    fn exchange(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<Response> {
        if self.conn.is_none() {
            let stream = TcpStream::connect(self.addr)?;
            stream.set_nodelay(true)?;
            // Above the server's 30 s request timeout: a request still unanswered by then hangs.
            stream.set_read_timeout(Some(Duration::from_secs(45)))?;
            self.conn = Some(BufReader::new(stream));
        }
        let conn = self
            .conn
            .as_mut()
            .ok_or_else(|| std::io::Error::other("no connection"))?;
        let mut head = format!("{method} {path} HTTP/1.1\r\nhost: {}\r\n", self.addr);
        for (k, v) in headers {
            head.push_str(k);
            head.push_str(": ");
            head.push_str(v);
            head.push_str("\r\n");
        }
        head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
        let mut request = head.into_bytes();
        request.extend_from_slice(body);
        conn.get_mut().write_all(&request)?;
        read_response(conn)
    }
}

fn bad(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned())
}

fn read_line(r: &mut impl BufRead) -> std::io::Result<String> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed",
        ));
    }
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

fn read_response(r: &mut BufReader<TcpStream>) -> std::io::Result<Response> {
    let status_line = read_line(r)?;
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| bad("bad status line"))?;
    let mut headers = Vec::new();
    loop {
        let line = read_line(r)?;
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':').ok_or_else(|| bad("bad header"))?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if let Some(len) = find("content-length") {
        let len: usize = len.parse().map_err(|_| bad("bad content-length"))?;
        if len > MAX_RESPONSE {
            return Err(bad("response too large"));
        }
        body.resize(len, 0);
        r.read_exact(&mut body)?;
    } else if find("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        loop {
            let size_line = read_line(r)?;
            let size = usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| bad("bad chunk size"))?;
            if size == 0 {
                // Trailers, then the blank line.
                while !read_line(r)?.is_empty() {}
                break;
            }
            if body.len() + size > MAX_RESPONSE {
                return Err(bad("response too large"));
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..])?;
            read_line(r)?;
        }
    } else if !(status == 204 || status == 304 || (100..200).contains(&status)) {
        // No length: the body runs to the end of the connection.
        r.take(MAX_RESPONSE as u64).read_to_end(&mut body)?;
        headers.push(("connection".into(), "close".into()));
    }
    Ok(Response {
        status,
        headers,
        body,
    })
}

/// A client address for each request, so per-address limits do not answer every request
/// with 429: 10.0.0.1, 10.0.0.2, ... cycling through 10.0.0.0/8.
pub struct Addresses(u32);

impl Addresses {
    pub fn new() -> Self {
        Addresses(0)
    }

    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> String {
        self.0 = (self.0 + 1) % 0x00ff_fffe;
        let n = self.0 + 1;
        format!("10.{}.{}.{}", (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff)
    }
}

impl Default for Addresses {
    fn default() -> Self {
        Self::new()
    }
}
