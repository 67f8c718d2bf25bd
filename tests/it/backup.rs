//! Online backup, its check, the restore and `check-data`, through the real binary: a backup
//! taken while registrations stream in holds every one acknowledged before it began, and
//! survives the server's kill -9; the restore refuses what it must (a non-empty directory, a
//! wrong master key, a newer format, a damaged file).

use std::{
    path::Path,
    process::{Command, Output},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use serde_json::{json, Value};

use crate::support::*;

fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .output()
        .expect("run tessera")
}

#[track_caller]
fn run_ok(args: &[&str]) -> Value {
    let out = run(args);
    assert!(
        out.status.success(),
        "tessera {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

#[track_caller]
fn run_err(args: &[&str]) -> String {
    let out = run(args);
    assert!(!out.status.success(), "tessera {args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every user address of the tenant, through the dashboard's users list.
fn user_emails(srv: &TestServer, s: &Session, slug: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cursor = String::new();
    loop {
        let (st, page) = srv.dash_json(
            "GET",
            &format!("/v1/auth/dashboard/tenants/{slug}/users?limit=200{cursor}"),
            s,
            None,
        );
        assert_eq!(st, 200, "{page}");
        for u in page["data"].as_array().unwrap() {
            out.push(u["email"].as_str().unwrap_or_default().to_owned());
        }
        match page["pagination"]["next_cursor"].as_str() {
            Some(c) if page["pagination"]["has_more"] == true => cursor = format!("&cursor={c}"),
            _ => return out,
        }
    }
}

fn copy_key(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    std::fs::copy(from.join("master.key"), to.join("master.key")).unwrap();
}

#[test]
fn a_backup_under_load_holds_every_acknowledged_write_and_restores_after_a_kill_9() {
    let (smtp, mut srv, api, s) = user_setup("Backup Co", &[]);
    // Before the backup: a setting, a confirmed user with a session.
    let (st, _) = srv.dash_json(
        "PUT",
        &format!("/v1/auth/dashboard/tenants/{}/settings/urls", api.slug),
        &s,
        Some(&json!({"site_url": "https://app.backup.example/", "redirect_urls": []})),
    );
    assert_eq!(st, 200);
    let ada = api.verified_user(&smtp, "ada@example.com", USER_PASSWORD);

    // Registrations stream in from two clients while the backup is taken.
    let acked: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (api, acked, stop) = (api.clone(), acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let email = format!("load-{w}-{i}@example.com");
                    // Errors are expected once the server is killed.
                    let sent = api
                        .client
                        .post(api.url("/v1/auth/register"))
                        .header("x-api-key", &api.api_key)
                        .header("x-forwarded-for", fresh_client_ip())
                        .json(&json!({
                            "email": email, "password": USER_PASSWORD, "consent": true,
                        }))
                        .send();
                    if sent.is_ok_and(|r| r.status() == 200) {
                        acked.lock().unwrap().push((email, Instant::now()));
                    }
                    i += 1;
                }
            })
        })
        .collect();
    assert!(
        eventually(Duration::from_secs(20), || acked.lock().unwrap().len()
            >= 20),
        "the load reached the server"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tessera.backup");
    let file_s = file.to_str().unwrap();
    let began = Instant::now();
    let out = srv.admin(&["backup", "--out", file_s], "").json();
    assert_eq!(out["header"]["master_key_included"], false, "{out}");
    assert!(out["master_key"]
        .as_str()
        .unwrap()
        .contains("not in the backup"));
    assert_eq!(out["header"]["tenant_count"], 1);
    // More writes after it, then the server dies without a goodbye.
    let after = acked.lock().unwrap().len();
    assert!(eventually(Duration::from_secs(20), || acked
        .lock()
        .unwrap()
        .len()
        > after + 5));
    srv.kill();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let before: Vec<String> = acked
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, at)| *at < began)
        .map(|(e, _)| e.clone())
        .collect();
    assert!(before.len() >= 20);

    // The file checks out, and the same file is refused as an output.
    let verified = run_ok(&["admin", "backup", "--verify", file_s]);
    assert_eq!(verified["verified"], true);
    assert_eq!(verified["header"]["entries"], out["header"]["entries"]);

    // Restore into a new directory with the key file, and serve from it.
    let restored = dir.path().join("restored");
    copy_key(&srv.data_dir, &restored);
    let r = run_ok(&[
        "restore",
        "--from",
        file_s,
        "--data-dir",
        restored.to_str().unwrap(),
    ]);
    assert_eq!(r["restored"], true);
    let report = run_ok(&["check-data", "--data-dir", restored.to_str().unwrap()]);
    assert_eq!(report["format"], 1);
    assert_eq!(report["tenants"], 1);
    assert_eq!(report["migration_pending"], false);
    let env = smtp.env();
    let srv2 = TestServer::start_in(&restored, &env_refs(&env));
    let mut api2 = api.clone();
    api2.rebase(&srv2);

    // Every acknowledged registration before the backup is there, each found by its address.
    let emails = user_emails(&srv2, &s, &api.slug);
    for e in &before {
        assert!(emails.contains(e), "{e} was acknowledged before the backup");
    }
    assert_eq!(report["users"].as_u64().unwrap() as usize, emails.len());
    // The dashboard session, the user's session and the setting survived.
    let (st, urls) = srv2.dash_json(
        "GET",
        &format!("/v1/auth/dashboard/tenants/{}/settings/urls", api.slug),
        &s,
        None,
    );
    assert_eq!(st, 200);
    assert_eq!(urls["site_url"], "https://app.backup.example/");
    // (Access tokens name the old listener in `iss`; the session's refresh token goes on.)
    let pair = api2.refresh(&ada.refresh).expect(200).clone();
    let access = pair["access_token"].as_str().unwrap();
    assert_eq!(api2.me(access).expect(200)["email"], "ada@example.com");
    api2.login_ok("ada@example.com", USER_PASSWORD);
}

#[test]
fn restore_and_verify_refuse_what_they_must() {
    let (_smtp, mut srv, _api, _s) = user_setup("Refusal Co", &[]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("b.backup");
    let file_s = file.to_str().unwrap();
    srv.admin(&["backup", "--out", file_s], "").json();
    // An existing file is never overwritten.
    let again = srv.admin(&["backup", "--out", file_s], "");
    assert!(!again.status.success());
    assert!(again.stderr.contains("exists"), "{}", again.stderr);
    // check-data needs the server stopped.
    let busy = run_err(&["check-data", "--data-dir", srv.data_dir.to_str().unwrap()]);
    assert!(busy.contains("a server is running"), "{busy}");
    srv.kill();

    // A directory holding anything but the key file.
    let full = dir.path().join("full");
    copy_key(&srv.data_dir, &full);
    std::fs::write(full.join("stray"), b"x").unwrap();
    let e = run_err(&[
        "restore",
        "--from",
        file_s,
        "--data-dir",
        full.to_str().unwrap(),
    ]);
    assert!(e.contains("not empty"), "{e}");
    // Without the key file, or with another key.
    let keyless = dir.path().join("keyless");
    let e = run_err(&[
        "restore",
        "--from",
        file_s,
        "--data-dir",
        keyless.to_str().unwrap(),
    ]);
    assert!(e.contains("master key"), "{e}");
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    write_owner_only(
        &other.join("master.key"),
        format!("{}\n", "A".repeat(43) + "="),
    );
    let e = run_err(&[
        "restore",
        "--from",
        file_s,
        "--data-dir",
        other.to_str().unwrap(),
    ]);
    assert!(e.contains("does not match"), "{e}");
    assert!(!other.join("db").exists(), "nothing written");

    // A newer backup format, a newer storage format: refused.
    let bytes = std::fs::read(&file).unwrap();
    let text = String::from_utf8_lossy(&bytes[..4096]).into_owned();
    let edited = |from: &str, to: &str, name: &str| {
        assert!(text.contains(from), "{text}");
        let mut b = bytes.clone();
        b[..4096].copy_from_slice(text.replacen(from, to, 1).as_bytes());
        let p = dir.path().join(name);
        std::fs::write(&p, b).unwrap();
        p
    };
    let newer = edited("\"backup_format\":1", "\"backup_format\":9", "newer.backup");
    let e = run_err(&["admin", "backup", "--verify", newer.to_str().unwrap()]);
    assert!(e.contains("newer"), "{e}");
    let newer_data = edited(
        "\"storage_format\":1",
        "\"storage_format\":9",
        "newer-data.backup",
    );
    let fresh = dir.path().join("fresh");
    copy_key(&srv.data_dir, &fresh);
    let e = run_err(&[
        "restore",
        "--from",
        newer_data.to_str().unwrap(),
        "--data-dir",
        fresh.to_str().unwrap(),
    ]);
    assert!(e.contains("newer"), "{e}");
    // A damaged body: found by the check and by the restore, which leaves nothing behind.
    let mut damaged = bytes.clone();
    let at = damaged.len() - 10;
    damaged[at] ^= 0x55;
    let bad = dir.path().join("damaged.backup");
    std::fs::write(&bad, damaged).unwrap();
    let e = run_err(&["admin", "backup", "--verify", bad.to_str().unwrap()]);
    assert!(e.contains("damaged") || e.contains("cannot be read"), "{e}");
    let e = run_err(&[
        "restore",
        "--from",
        bad.to_str().unwrap(),
        "--data-dir",
        fresh.to_str().unwrap(),
    ]);
    assert!(e.contains("damaged") || e.contains("cannot be read"), "{e}");
    assert!(
        !fresh.join("db").exists(),
        "a failed restore leaves no database"
    );
    // Not a backup at all.
    let e = run_err(&[
        "admin",
        "backup",
        "--verify",
        fresh.join("master.key").to_str().unwrap(),
    ]);
    assert!(e.contains("not a Tessera backup"), "{e}");
    // And the good file restores.
    run_ok(&[
        "restore",
        "--from",
        file_s,
        "--data-dir",
        fresh.to_str().unwrap(),
    ]);
}

/// Sets the data directory's format record as another build would have left it.
fn stamp_format(data_dir: &Path, version: u32) {
    let db = sled::Config::new()
        .path(tessera_storage::store::db_path(data_dir))
        .open()
        .unwrap();
    db.open_tree("meta")
        .unwrap()
        .insert(b"format", format!("{{\"version\":{version}}}").as_bytes())
        .unwrap();
    db.flush().unwrap();
}

#[test]
fn check_data_reports_the_format_and_serve_refuses_what_it_cannot_read() {
    let (_smtp, mut srv, api, s) = user_setup("Upgrade Co", &[]);
    api.register("ada@example.com", USER_PASSWORD).expect(200);
    srv.terminate();
    let dir = srv.data_dir.to_str().unwrap().to_owned();
    let report = run_ok(&["check-data", "--data-dir", &dir]);
    assert_eq!(report["format"], 1);
    assert_eq!(report["build_format"], 1);
    assert_eq!(report["migration_pending"], false);
    assert_eq!(report["newer_than_build"], false);
    assert_eq!(report["tenants"], 1);
    assert_eq!(report["users"], 1);
    assert_eq!(report["master_key_bound"], true);
    // check-data wrote nothing: the same report again, and the server starts as before.
    assert_eq!(run_ok(&["check-data", "--data-dir", &dir]), report);

    // A directory a newer build wrote: reported, and refused by serve (nothing is misread).
    stamp_format(&srv.data_dir, 2);
    let newer = run_ok(&["check-data", "--data-dir", &dir]);
    assert_eq!(newer["newer_than_build"], true);
    assert_eq!(newer["migration_pending"], false);
    let log_file = srv.data_dir.parent().unwrap().join("refused.log");
    let (status, log) = match spawn(&srv.data_dir, &[], &log_file) {
        Err(failed) => failed,
        Ok(_) => panic!("serve started on a newer format"),
    };
    assert!(!status.success());
    assert!(log.contains("newer than this build"), "{log}");

    // An older format with no migration to it: pending, and refused until one exists.
    stamp_format(&srv.data_dir, 0);
    let older = run_ok(&["check-data", "--data-dir", &dir]);
    assert_eq!(older["migration_pending"], true);
    let (_, log) = match spawn(&srv.data_dir, &[], &log_file) {
        Err(failed) => failed,
        Ok(_) => panic!("serve started without its migration"),
    };
    assert!(log.contains("no migration from format 0"), "{log}");

    // Back to this build's format: it serves the same data.
    stamp_format(&srv.data_dir, 1);
    srv.restart();
    let mut api = api.clone();
    api.rebase(&srv);
    let (st, _) = srv.dash_json(
        "GET",
        &format!("/v1/auth/dashboard/tenants/{}/users", api.slug),
        &s,
        None,
    );
    assert_eq!(st, 200);
}

/// A backup holds every user, password hash and audit event, and a restored directory the
/// whole database: both are their owner's alone whatever the umask of the server and of the
/// restore (022 here, under which a file is 0644 and a directory 0755 unless made otherwise).
#[test]
fn a_backup_and_a_restored_directory_are_their_owners_alone_under_a_permissive_umask() {
    let mut srv = TestServer::start_under_umask(0o022, &[]);
    srv.signup("Private Co", "private@example.com");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("private.backup");
    srv.admin(&["backup", "--out", file.to_str().unwrap()], "")
        .json();
    assert_eq!(mode_of(&file), 0o600, "the backup file");
    assert!(!dir.path().join("private.backup.partial").exists());
    assert_eq!(mode_of(&srv.data_dir), 0o700, "the data directory");
    srv.kill();
    let key = srv.data_dir.join("master.key");

    let restore = |data_dir: &Path, key_file: Option<&Path>| {
        let mut cmd = tessera_under(Some(0o022));
        cmd.args(["restore", "--from", file.to_str().unwrap(), "--data-dir"])
            .arg(data_dir);
        if let Some(k) = key_file {
            cmd.arg("--master-key-file").arg(k);
        }
        cmd.output().unwrap()
    };
    // A key file others may read is refused before anything is written.
    let shared = dir.path().join("shared");
    copy_key(&srv.data_dir, &shared);
    std::fs::set_permissions(
        shared.join("master.key"),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let out = restore(&shared, None);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let shown = shared.join("master.key").display().to_string();
    assert!(
        err.contains(&format!("{shown} has mode 0644"))
            && err.contains(&format!("chmod 600 {shown}")),
        "{err}"
    );
    assert!(!shared.join("db").exists(), "nothing written");

    // Into a directory made beforehand, open to all, that holds the key file; and into a new
    // one, the key read from elsewhere.
    let made = dir.path().join("made");
    copy_key(&srv.data_dir, &made);
    std::fs::set_permissions(&made, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let fresh = dir.path().join("fresh").join("data");
    for (data_dir, key_file) in [(&made, None), (&fresh, Some(key.as_path()))] {
        let out = restore(data_dir, key_file);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(mode_of(data_dir), 0o700, "{}", data_dir.display());
        let db = tessera_storage::store::db_path(data_dir);
        assert_eq!(mode_of(&db), 0o700, "{}", db.display());
    }
}
