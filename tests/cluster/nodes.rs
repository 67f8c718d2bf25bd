//! Two nodes and etcd (`[cluster]`): a tenant is served by the node holding its lease; the
//! other answers 503 naming the owner, and takes the tenant over when the owner dies. The
//! second node's data is a restored backup of the first's (storage is not replicated).
//!
//! Needs the `etcd` binary (Debian's `etcd-server`; `.ci/run` installs it). Without it the
//! two-node test says so on stderr and passes.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use crate::support::*;

/// A single-member etcd on loopback ports of its own, with a temporary data directory;
/// killed on drop.
struct Etcd {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

/// The `etcd` binary: on `PATH`, or where Debian installs it.
fn etcd_binary() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("etcd"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let debian = Path::new("/usr/bin/etcd");
        debian.is_file().then(|| debian.to_path_buf())
    })
}

/// A loopback port nobody listens on now (etcd cannot be told to pick one itself).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Etcd {
    /// Starts etcd, or answers `None` when it is not installed.
    fn start() -> Option<Etcd> {
        let bin = etcd_binary()?;
        let dir = tempfile::tempdir().expect("tempdir");
        let (client, peer) = (free_port(), free_port());
        let url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let log = std::fs::File::create(dir.path().join("etcd.log")).expect("etcd log");
        let child = Command::new(bin)
            .arg("--name")
            .arg("default")
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--listen-client-urls", &url])
            .args(["--advertise-client-urls", &url])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("default={peer_url}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn etcd");
        let etcd = Etcd {
            child,
            url,
            _dir: dir,
        };
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        let health = format!("{}/health", etcd.url);
        assert!(
            eventually(Duration::from_secs(30), || client
                .get(&health)
                .send()
                .is_ok_and(|r| r.status() == 200)),
            "etcd did not become healthy: {}",
            std::fs::read_to_string(etcd._dir.path().join("etcd.log")).unwrap_or_default()
        );
        Some(etcd)
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The environment of a cluster node: etcd at `endpoint`, a two-second lease.
fn cluster_env(endpoint: &str) -> Vec<(String, String)> {
    vec![
        (
            "TESSERA__CLUSTER__ETCD_ENDPOINTS".into(),
            format!("[\"{endpoint}\"]"),
        ),
        ("TESSERA__CLUSTER__LEASE_TTL_SECS".into(), "2".into()),
    ]
}

#[test]
fn a_tenant_moves_to_the_other_node_when_its_owner_dies() {
    let Some(etcd) = Etcd::start() else {
        skip_without("etcd", "Debian's etcd-server; .ci/run installs it");
        return;
    };
    let env = cluster_env(&etcd.url);
    let (smtp, mut a) = start_with_mail(&env_refs(&env));
    let api = UserApi::signup(&a, "Cluster Co", "owner@example.com");
    let session = a.login(&api.owner, PASSWORD);
    // Node A created the tenant and serves it.
    api.send("GET", "/v1/tenant", None, None).expect(200);
    api.verified_user(&smtp, "ada@example.com", USER_PASSWORD);
    let urls = format!("/v1/auth/dashboard/tenants/{}/settings/urls", api.slug);
    assert_eq!(a.dash_json("GET", &urls, &session, None).0, 200);

    // Node B starts on a restored copy of A's data and the same master key.
    let dir = tempfile::tempdir().unwrap();
    let backup = dir.path().join("a.backup");
    let out = a
        .admin(&["backup", "--out", backup.to_str().unwrap()], "")
        .json();
    assert_eq!(out["header"]["tenant_count"], 1, "{out}");
    let b_dir = dir.path().join("b");
    std::fs::create_dir_all(&b_dir).unwrap();
    std::fs::copy(a.data_dir.join("master.key"), b_dir.join("master.key")).unwrap();
    let restored = Command::new(bin())
        .args(["restore", "--from", backup.to_str().unwrap(), "--data-dir"])
        .arg(&b_dir)
        .output()
        .unwrap();
    assert!(
        restored.status.success(),
        "{}",
        String::from_utf8_lossy(&restored.stderr)
    );
    let mut b_env = smtp.env();
    b_env.extend(env.iter().cloned());
    let b = TestServer::start_in(&b_dir, &env_refs(&b_env));
    let mut api_b = api.clone();
    api_b.rebase(&b);

    // B refuses the tenant, by API key and by slug, naming A; it runs no login for it.
    let refused = api_b.send("GET", "/v1/tenant", None, None);
    refused.expect_error(503, "cluster/tenant_elsewhere");
    assert_eq!(
        refused.header("tessera-tenant-owner").as_deref(),
        Some(a.base.as_str())
    );
    assert!(refused.header("retry-after").is_some());
    let login = api_b.login("ada@example.com", USER_PASSWORD);
    login.expect_error(503, "cluster/tenant_elsewhere");
    let (status, body) = b.dash_json("GET", &urls, &session, None);
    assert_eq!(
        (status, error_code(&body)),
        (503, "cluster/tenant_elsewhere"),
        "{body}"
    );
    // A still serves it.
    api.login_ok("ada@example.com", USER_PASSWORD);

    // A dies without a goodbye; once its lease expires, B takes the tenant.
    let killed = Instant::now();
    a.kill();
    let mut last = None;
    let mut refused_until = None;
    let moved = eventually(Duration::from_secs(30), || {
        let r = api_b.send("GET", "/v1/tenant", None, None);
        match (r.status, r.code()) {
            (200, _) => {}
            (503, "cluster/tenant_elsewhere") => refused_until = Some(killed.elapsed()),
            _ => panic!(
                "unexpected answer while the tenant moves: {} {}",
                r.status, r.body
            ),
        }
        let done = r.status == 200;
        last = Some((r.status, r.body));
        done
    });
    assert!(moved, "B never took the tenant over: {last:?}");
    // Not while A's lease could still be alive: A renewed it every third of its two seconds,
    // so it lived at least 2 - 2/3 s after the kill, and B kept saying the tenant was
    // elsewhere until then.
    let held = Duration::from_millis(2000 - 2000 / 3);
    let took = killed.elapsed();
    assert!(
        took >= held,
        "B took a lease that could be live, {took:?} after the kill"
    );
    let refused_until = refused_until.expect("B refused while A's lease lived");
    assert!(
        refused_until + Duration::from_millis(500) >= held,
        "B stopped refusing {refused_until:?} after the kill, before the lease could expire"
    );
    let tokens = api_b.login_ok("ada@example.com", USER_PASSWORD);
    assert_eq!(
        api_b.me(&tokens.access).expect(200)["email"],
        "ada@example.com"
    );
    let (status, _) = b.dash_json("GET", &urls, &session, None);
    assert_eq!(status, 200);
    let served = api_b.send("GET", "/v1/tenant", None, None);
    assert_eq!(served.header("tessera-tenant-owner"), None);
    assert_eq!(served.expect(200)["slug"], api.slug.as_str());
}

#[test]
fn a_cluster_node_does_not_start_without_etcd() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on this port: the node must refuse to start rather than serve alone.
    let env = cluster_env(&format!("http://127.0.0.1:{}", free_port()));
    let (status, log) = match spawn(&dir.path().join("data"), &env, &dir.path().join("log")) {
        Ok((mut child, _)) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("a cluster node without etcd must not start");
        }
        Err(failed) => failed,
    };
    assert!(!status.success());
    assert!(log.contains("cannot reach etcd"), "{log}");
}
