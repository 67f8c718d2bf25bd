//! Crashes, restarts, shutdown, the data-directory lock, configuration errors and logs.

use std::{process::Command, time::Duration};

use serde_json::Value;

use crate::support::{
    config_file, error_code, eventually, spawn, write_owner_only, TestServer, PASSWORD,
};

#[test]
fn an_acknowledged_signup_survives_sigkill() {
    let mut srv = TestServer::start();
    let t = srv.signup("Durable", "durable@example.com");
    let key = t["api_key"].as_str().unwrap().to_owned();
    srv.kill();
    srv.restart();
    let me: Value = srv.get("/v1/tenant", Some(&key)).json().unwrap();
    assert_eq!(me["slug"], "durable");
    let show = srv.admin(&["tenant", "show", "durable"], "").json();
    assert_eq!(show["owners"], serde_json::json!(["durable@example.com"]));
    // The owner's account survived with its password: the dashboard login works.
    let login = srv.post_json(
        "/v1/auth/dashboard/login",
        &serde_json::json!({"email": "durable@example.com", "password": PASSWORD}),
    );
    assert_eq!(login.status(), 200);
}

#[test]
fn a_crashed_tenant_is_restarted_and_others_never_notice() {
    let srv = TestServer::start_with(&[("TESSERA__TESTING__FAULT_INJECTION", "true")]);
    let a = srv.signup("Crashy", "crashy@example.com");
    let b = srv.signup("Steady", "steady@example.com");
    let key_a = a["api_key"].as_str().unwrap();
    let key_b = b["api_key"].as_str().unwrap();
    assert_eq!(srv.get("/v1/tenant", Some(key_a)).status(), 200);
    assert_eq!(srv.get("/v1/tenant", Some(key_b)).status(), 200);

    let out = srv.admin(&["fault", "panic-tenant", "crashy"], "").json();
    assert_eq!(out["panicked"], true);
    // The next request for the crashed tenant succeeds: it was restarted from sled.
    let me: Value = srv.get("/v1/tenant", Some(key_a)).json().unwrap();
    assert_eq!(me["slug"], "crashy");
    assert_eq!(srv.get("/v1/tenant", Some(key_b)).status(), 200);

    // A tenant that keeps crashing is cut off with 503 after its restart budget...
    for _ in 0..6 {
        srv.admin(&["fault", "panic-tenant", "crashy"], "").json();
    }
    let r = srv.get("/v1/tenant", Some(key_a));
    assert_eq!(r.status(), 503);
    assert!(r.headers().contains_key("retry-after"));
    assert_eq!(error_code(&r.json().unwrap()), "service/unavailable");
    // ...and the other tenant still never notices.
    for _ in 0..5 {
        assert_eq!(srv.get("/v1/tenant", Some(key_b)).status(), 200);
    }
    assert!(srv.log_text().contains("tenant actor crashed"));
}

#[test]
fn fault_injection_is_off_by_default() {
    let srv = TestServer::start();
    srv.signup("Safe", "safe@example.com");
    let out = srv.admin(&["fault", "panic-tenant", "safe"], "");
    assert!(!out.status.success());
    assert!(out.stderr.contains("fault_injection"), "{}", out.stderr);
}

#[test]
fn a_second_server_on_the_same_data_directory_refuses_to_start() {
    let srv = TestServer::start();
    let log = srv.data_dir.with_extension("second.log");
    match spawn(&srv.data_dir, &[], &log) {
        Ok((mut child, _)) => {
            let _ = child.kill();
            panic!("a second server started on the same data directory");
        }
        Err((status, stderr)) => {
            assert!(!status.success());
            assert!(
                stderr.contains("data directory") && stderr.contains("in use"),
                "{stderr}"
            );
        }
    }
    // The first one is unharmed.
    assert_eq!(srv.get("/readyz", None).status(), 200);
}

#[test]
fn sigterm_drains_flushes_and_exits_zero() {
    let mut srv = TestServer::start();
    let t = srv.signup("Graceful", "graceful@example.com");
    let key = t["api_key"].as_str().unwrap().to_owned();
    let status = srv.terminate();
    assert!(status.success(), "{status}");
    assert!(
        !srv.socket.exists(),
        "the admin socket is removed on shutdown"
    );
    srv.restart();
    assert_eq!(srv.get("/v1/tenant", Some(&key)).status(), 200);
}

fn serve_with(config: &str, env: &[(&str, &str)]) -> (bool, String) {
    serve_on("127.0.0.1:0", config, env)
}

/// Starts the server on `listen` with `config` and `env`, expecting it to refuse to start:
/// answers whether it exited successfully, and what it said.
pub(crate) fn serve_on(listen: &str, config: &str, env: &[(&str, &str)]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(&path, config).unwrap();
    let mut child = Command::new(crate::support::bin())
        .args(["serve", "--listen", listen, "--config"])
        .arg(&path)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A configuration that is wrongly accepted would serve forever: stop it and fail.
    let exited = eventually(Duration::from_secs(20), || {
        child.try_wait().unwrap().is_some()
    });
    if !exited {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        exited,
        "the server accepted the configuration {config:?} {env:?}"
    );
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_configuration_is_a_clear_error_naming_the_key() {
    let (ok, err) = serve_with("[server]\nmax_body_bytes = \"lots\"\n", &[]);
    assert!(!ok);
    assert!(err.contains("server.max_body_bytes"), "{err}");
    // check-config reads the environment like serve does.
    let out = Command::new(crate::support::bin())
        .args(["check-config", "--config"])
        .arg(config_file())
        .env("TESSERA__SERVER__LISTEN", "nowhere")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("server.listen"));
    let (ok, err) = serve_with("[storage]\ncache_capacity_mb = \"big\"\n", &[]);
    assert!(!ok);
    assert!(err.contains("cache_capacity_mb"), "{err}");
    let (ok, err) = serve_with("[security]\nmaster_kee_file = \"x\"\n", &[]);
    assert!(!ok);
    assert!(err.contains("master_kee_file"), "{err}");
    let (ok, err) = serve_with("this is not toml [", &[]);
    assert!(!ok);
    assert!(err.contains("error"), "{err}");
    // The environment is checked like the file.
    let (ok, err) = serve_with("", &[("TESSERA__SECURITY__ARGON2_T_COST", "zero")]);
    assert!(!ok);
    assert!(
        err.to_lowercase().contains("security.argon2_t_cost"),
        "{err}"
    );
    let (ok, err) = serve_with("", &[("TESSERA__SERVER__BASE_URL", "ftp://x")]);
    assert!(!ok);
    assert!(err.contains("server.base_url"), "{err}");
    // A missing file.
    let out = Command::new(crate::support::bin())
        .args(["serve", "--config", "/nonexistent/tessera.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/tessera.toml"));
    // No panic anywhere.
    assert!(!err.contains("panicked"));
}

#[test]
fn the_shipped_config_is_valid() {
    let out = Command::new(crate::support::bin())
        .args(["check-config", "--config"])
        .arg(config_file())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_missing_or_different_master_key_is_refused_once_data_exists() {
    let mut srv = TestServer::start();
    srv.signup("Keyed Co", "keyed@example.com");
    srv.kill();
    let key = srv.data_dir.join("master.key");
    let original = std::fs::read(&key).unwrap();
    std::fs::remove_file(&key).unwrap();
    let log = srv.data_dir.with_extension("nokey.log");
    let (status, err) = spawn(&srv.data_dir, &[], &log).map(|_| ()).unwrap_err();
    assert!(!status.success());
    assert!(
        err.contains("master.key") && err.contains("restore"),
        "{err}"
    );
    assert!(!key.exists(), "no new key is made for existing data");
    // Another key is refused too.
    write_owner_only(&key, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n");
    let (_, err) = spawn(&srv.data_dir, &[], &log).map(|_| ()).unwrap_err();
    assert!(err.contains("does not match"), "{err}");
    std::fs::write(&key, original).unwrap();
    srv.restart();
    assert_eq!(srv.get("/readyz", None).status(), 200);
}

#[test]
fn the_master_key_file_is_created_0600_once() {
    use std::os::unix::fs::PermissionsExt;
    let mut srv = TestServer::start();
    let path = srv.data_dir.join("master.key");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let before = std::fs::read(&path).unwrap();
    srv.restart();
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn logs_carry_requests_but_never_secrets() {
    let srv = TestServer::start_with(&[("TESSERA__LOG__FORMAT", "json")]);
    let t = srv.signup("Quiet Co", "secret.person@example.com");
    let key = t["api_key"].as_str().unwrap();
    srv.get("/v1/tenant", Some(key));
    let mut bad = crate::support::signup_body("Quiet Co", "secret.person@example.com");
    bad["password"] = serde_json::json!("short");
    srv.post_json("/v1/onboarding/signup", &bad);
    assert!(eventually(Duration::from_secs(5), || srv
        .log_text()
        .contains("/v1/tenant")));
    let log = srv.log_text();
    // Structured request lines: method, route, status, latency, request id, tenant.
    let line = log
        .lines()
        .find(|l| l.contains("\"/v1/tenant\"") && l.contains("\"status\""))
        .expect("a request line for /v1/tenant");
    let v: Value = serde_json::from_str(line).unwrap();
    let span = &v["span"];
    assert_eq!(span["method"], "GET");
    assert_eq!(span["tenant"], "quiet-co");
    assert!(span["request_id"].is_string());
    assert_eq!(v["status"], 200);
    assert!(v["latency_ms"].is_number());
    for secret in [PASSWORD, key, "secret.person@example.com", "secret.person"] {
        assert!(!log.contains(secret), "the log contains {secret:?}");
    }
}

#[test]
fn a_slow_tenant_answers_503_within_the_actor_timeout_not_a_hang() {
    // The bounds leave a loaded machine room: a 1 s actor timeout against an 8 s stall, the
    // refusal due well before the stall ends, and the other tenant given the stall's length.
    const STALL: Duration = Duration::from_secs(8);
    let mut srv = TestServer::start_with(&[("TESSERA__TESTING__FAULT_INJECTION", "true")]);
    let a = srv.signup("Slow", "slow@example.com");
    let b = srv.signup("Fast", "fast@example.com");
    let key_a = a["api_key"].as_str().unwrap();
    let key_b = b["api_key"].as_str().unwrap();
    // A short actor timeout only once both tenants exist (a sign-up waits for its disk sync)
    // and their actors run, so only the stall can exceed it.
    srv.restart_with(&[("TESSERA__SERVER__ACTOR_TIMEOUT_MS", "1000")]);
    for key in [key_a, key_b] {
        assert!(eventually(Duration::from_secs(10), || srv
            .get("/v1/tenant", Some(key))
            .status()
            == 200));
    }
    let stalled = std::time::Instant::now();
    let out = srv
        .admin(
            &[
                "fault",
                "stall-tenant",
                "slow",
                "--ms",
                &STALL.as_millis().to_string(),
            ],
            "",
        )
        .json();
    assert_eq!(out["stalled_ms"], 8000);
    // The mailbox is held: the call gives up at the actor timeout, not when the stall ends.
    let started = std::time::Instant::now();
    let r = srv.get("/v1/tenant", Some(key_a));
    assert_eq!(r.status(), 503);
    assert_eq!(error_code(&r.json().unwrap()), "service/unavailable");
    assert!(started.elapsed() < STALL / 2, "{:?}", started.elapsed());
    // Another tenant is served meanwhile.
    assert!(eventually(STALL / 2, || srv
        .get("/v1/tenant", Some(key_b))
        .status()
        == 200));
    assert!(
        stalled.elapsed() < STALL,
        "the other tenant was served only after the stall ({:?})",
        stalled.elapsed()
    );
    // Once the stall ends, the tenant answers again.
    assert!(eventually(Duration::from_secs(15), || srv
        .get("/v1/tenant", Some(key_a))
        .status()
        == 200));
}

/// A build without the `cluster` feature (the default: no protoc needed) refuses to start a
/// cluster node, and says which build can.
#[cfg(not(feature = "cluster"))]
#[test]
fn a_build_without_the_cluster_feature_refuses_cluster_mode_and_says_how_to_build_one() {
    let tmp = tempfile::tempdir().unwrap();
    let env = vec![(
        "TESSERA__CLUSTER__ETCD_ENDPOINTS".to_owned(),
        "[\"http://127.0.0.1:2379\"]".to_owned(),
    )];
    let started = spawn(&tmp.path().join("data"), &env, &tmp.path().join("log"));
    let Err((status, log)) = started else {
        panic!("a build without the cluster feature served a cluster node");
    };
    assert!(!status.success(), "{status}");
    assert!(
        log.contains("--features cluster") && log.contains("no cluster support"),
        "the refusal does not say how to build a cluster node:\n{log}"
    );
}

/// `tessera` finds its config file by `--config`, then `TESSERA_CONFIG`, then `./config.toml`,
/// then `/etc/tessera/config.toml`, and says where it looked when there is none; `tessera
/// admin` without `--socket` or a config says how to name the socket.
#[test]
fn the_config_file_is_found_by_flag_environment_or_the_current_directory() {
    let check = |dir: &std::path::Path, args: &[&str], env: Option<&std::path::Path>| {
        let mut cmd = Command::new(crate::support::bin());
        cmd.current_dir(dir).args(args).env_remove("TESSERA_CONFIG");
        if let Some(path) = env {
            cmd.env("TESSERA_CONFIG", path);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let empty = tempfile::tempdir().unwrap();
    let shipped = config_file();

    // Nowhere to be found: exit 2, naming every place looked at.
    if !std::path::Path::new("/etc/tessera/config.toml").exists() {
        let (code, _, err) = check(empty.path(), &["check-config"], None);
        assert_eq!(code, Some(2), "{err}");
        for place in [
            "--config",
            "TESSERA_CONFIG",
            "./config.toml",
            "/etc/tessera/config.toml",
        ] {
            assert!(err.contains(place), "{place} is not named: {err}");
        }
        let (code, _, err) = check(empty.path(), &["admin", "tenant", "list"], None);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("--socket"), "{err}");
    }

    // TESSERA_CONFIG.
    let (code, out, err) = check(empty.path(), &["check-config"], Some(&shipped));
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(&shipped.display().to_string()), "{out}");

    // ./config.toml in the current directory.
    let here = tempfile::tempdir().unwrap();
    std::fs::copy(&shipped, here.path().join("config.toml")).unwrap();
    let (code, out, err) = check(here.path(), &["check-config"], None);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("config.toml is valid"), "{out}");

    // --config wins over the environment.
    let (code, _, err) = check(
        here.path(),
        &["check-config", "--config", "missing.toml"],
        Some(&shipped),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("missing.toml"), "{err}");
}
