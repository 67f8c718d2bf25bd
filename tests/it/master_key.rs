//! Master-key rotation through the real binary: `tessera admin master-key rotate` re-seals every
//! sealed value while the server serves (TOTP seeds, dates of birth, signing keys, webhook
//! secrets go on working; refresh tokens and recovery codes, hashed under the hash root, too),
//! the old key no longer starts the data, and a kill -9 at any point of a rotation leaves a
//! directory that starts with one key or the other, everything readable.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Instant,
};

use base64::Engine;
use serde_json::{json, Value};

use crate::{
    support::*,
    webhooks::{assert_signed, create_endpoint, send_test, Receiver, PRIVATE_OK},
};

const ADULT_DOB: &str = "1990-04-05";

/// A new key file (base64 of 32 random bytes, mode 0600, as docs/operators.md says to make
/// one) in `dir`.
fn new_key_file(dir: &Path, name: &str) -> PathBuf {
    let bytes: [u8; 32] = std::array::from_fn(|_| rand::random::<u8>());
    let path = dir.join(name);
    write_owner_only(
        &path,
        format!(
            "{}\n",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        ),
    );
    path
}

fn key_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_owned()
}

fn rotate(srv: &TestServer, file: &Path) -> AdminOutput {
    srv.admin(
        &[
            "master-key",
            "rotate",
            "--new-key-file",
            file.to_str().unwrap(),
        ],
        "",
    )
}

/// A confirmed user with a date of birth (sealed), TOTP (a sealed seed) and a refresh token.
struct Holder {
    email: String,
    mfa: MfaSetup,
    refresh: String,
}

fn holder(api: &UserApi, smtp: &SmtpStub, n: usize) -> Holder {
    let email = format!("holder{n}@example.com");
    api.register_body(&json!({
        "email": email, "password": USER_PASSWORD, "consent": true, "date_of_birth": ADULT_DOB,
    }))
    .expect(200);
    let token = api.verification_token(smtp, &email, 1);
    api.post("/v1/auth/verify-email", &json!({ "token": token }))
        .expect(200);
    let tokens = api.login_ok(&email, USER_PASSWORD);
    let mfa = api.enable_mfa(&tokens.access);
    Holder {
        email,
        mfa,
        refresh: tokens.refresh,
    }
}

/// Signs `h` in with its TOTP (the sealed seed must open) and answers the verified claims
/// (the signing key must open). Once per holder: a step's code is good once, and the set-up
/// used one.
#[track_caller]
fn totp_sign_in(api: &UserApi, h: &Holder) -> UserTokens {
    wait_for_totp_step(h.mfa.step + 1);
    let challenge = api.mfa_challenge(&h.email, USER_PASSWORD);
    let step = settled_totp_step(3.0);
    let r = api.mfa_verify(&challenge, &h.mfa.totp.at_step(step), None);
    let tokens = UserTokens::from_answer(&r);
    let (_, claims) = api.verify_access(&tokens.access);
    assert_eq!(claims["acr"], "aal2", "{claims}");
    tokens
}

/// The date of birth in the user's own export (it is sealed at rest).
fn exported_dob(api: &UserApi, access: &str) -> Value {
    let step_up = api.post_as(
        "/v1/auth/step-up/password",
        Some(access),
        &json!({ "password": USER_PASSWORD }),
    );
    let token = step_up.expect(200)["step_up_token"]
        .as_str()
        .expect("a step-up token")
        .to_owned();
    let r = api.send_with(
        "GET",
        "/v1/users/me/export",
        Some(access),
        None,
        &[(STEP_UP_HEADER, &token)],
    );
    r.expect(200)["date_of_birth"].clone()
}

#[test]
fn a_rotation_reseals_everything_while_serving_and_the_old_key_opens_nothing() {
    let receiver = Receiver::start();
    let (smtp, mut srv, mut api, s) = user_setup("Rotate Co", &[PRIVATE_OK]);
    srv.reauth(&s, PASSWORD);
    let hook = create_endpoint(&srv, &s, &api.slug, &receiver.url, &["user.created"]);
    let h = holder(&api, &smtp, 1);
    let kid_before = api.jwks()["keys"][0]["kid"].clone();
    let key_path = srv.data_dir.join("master.key");
    let old_key = key_text(&key_path);
    let keys = tempfile::tempdir().unwrap();

    // A bad file is named before the server is asked; the current key is refused by it.
    let bad = keys.path().join("bad.key");
    write_owner_only(&bad, "not a key");
    let out = rotate(&srv, &bad);
    assert!(!out.status.success());
    assert!(out.stderr.contains("bad.key"), "{}", out.stderr);
    let same = keys.path().join("same.key");
    write_owner_only(&same, format!("{old_key}\n"));
    let out = rotate(&srv, &same);
    assert!(!out.status.success(), "{}", out.stdout);
    assert!(
        out.stderr.contains("admin/rotation_failed") && out.stderr.contains("current key"),
        "{}",
        out.stderr
    );
    assert_eq!(key_text(&key_path), old_key);

    let new = new_key_file(keys.path(), "new.key");
    let report = rotate(&srv, &new).json();
    // The tenant's signing key, the holder's date of birth and TOTP seed, the webhook secret.
    assert_eq!(report["by_field"]["signing_keys"], 1, "{report}");
    assert_eq!(report["by_field"]["user_fields"], 2, "{report}");
    assert_eq!(report["by_field"]["webhook_secrets"], 1, "{report}");
    assert!(report["sealed_values"].as_u64().unwrap() >= 4, "{report}");
    assert_eq!(
        key_text(&key_path),
        key_text(&new),
        "the key file is the new key"
    );
    assert!(!srv.data_dir.join("master.key.new").exists());

    // Without a restart: every kind of secret opens under the new key.
    let tokens = totp_sign_in(&api, &h);
    assert_eq!(exported_dob(&api, &tokens.access), ADULT_DOB);
    assert_eq!(
        api.jwks()["keys"][0]["kid"],
        kid_before,
        "the same signing key"
    );
    let refreshed = api.refresh(&h.refresh);
    UserTokens::from_answer(&refreshed);
    let delivery = send_test(&srv, &s, &api.slug, &hook.id);
    let got = receiver.wait_for("webhook.test", 1);
    assert_eq!(got[0].header("webhook-id"), Some(delivery.as_str()));
    assert_signed(&got[0], &hook.secret);
    // A recovery code (hashed under the hash root, which a rotation keeps) still works.
    let challenge = api.mfa_challenge(&h.email, USER_PASSWORD);
    let r = api.mfa_verify(&challenge, &h.mfa.recovery_codes[0], None);
    UserTokens::from_answer(&r);

    // After a restart, with the new key file (the crash test signs in with TOTP after each).
    srv.restart();
    api.rebase(&srv);
    let challenge = api.mfa_challenge(&h.email, USER_PASSWORD);
    let tokens =
        UserTokens::from_answer(&api.mfa_verify(&challenge, &h.mfa.recovery_codes[1], None));
    assert_eq!(exported_dob(&api, &tokens.access), ADULT_DOB);

    // The old key does not start the data any more.
    srv.kill();
    std::fs::write(&key_path, format!("{old_key}\n")).unwrap();
    let log = srv.data_dir.with_extension("old-key.log");
    match spawn(&srv.data_dir, &[], &log) {
        Ok((mut child, _)) => {
            let _ = child.kill();
            panic!("the server started with the old key");
        }
        Err((status, err)) => {
            assert!(!status.success());
            assert!(err.contains("does not match"), "{err}");
        }
    }
}

/// Twenty rotations, each killed (SIGKILL) at another point: from before the command reaches
/// the server to after it answered. Each time the data starts with exactly one of the two
/// keys, the pending file is gone, and a user signs in and reads sealed data.
#[test]
fn a_kill_9_at_any_point_of_a_rotation_leaves_data_that_starts_with_one_key() {
    const RUNS: usize = 20;
    let (smtp, mut srv, mut api, _s) = user_setup("Rotate Crash", &[]);
    // One holder per run: each run signs in with a fresh TOTP code of its own.
    let holders: Vec<Holder> = (0..RUNS).map(|n| holder(&api, &smtp, n)).collect();
    let key_path = srv.data_dir.join("master.key");
    let pending = srv.data_dir.join("master.key.new");
    let keys = tempfile::tempdir().unwrap();

    // How long a whole rotation takes from the command line, to spread the kills over it.
    let started = Instant::now();
    let first = new_key_file(keys.path(), "first.key");
    rotate(&srv, &first).json();
    let whole = started.elapsed();

    let (mut committed, mut kept) = (0, 0);
    for (run, h) in holders.iter().enumerate() {
        let before = key_text(&key_path);
        let new = new_key_file(keys.path(), &format!("run{run}.key"));
        let mut cli = Command::new(bin())
            .args(["admin", "--socket"])
            .arg(&srv.socket)
            .args(["master-key", "rotate", "--new-key-file"])
            .arg(&new)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        if run == RUNS - 1 {
            // The last kill comes once the command has answered, however slow the machine:
            // the commit is behind it.
            assert!(
                cli.wait().unwrap().success(),
                "run {run}: the rotation failed"
            );
        } else {
            // From before the command reaches the server (the first run) to well into the
            // time a whole rotation took.
            let delay = whole.mul_f64(1.6 * run as f64 / (RUNS - 1) as f64);
            std::thread::sleep(delay);
        }
        srv.kill();
        let _ = cli.wait();

        srv.restart();
        api.rebase(&srv);
        let now = key_text(&key_path);
        assert!(
            now == before || now == key_text(&new),
            "run {run}: the key file is neither key"
        );
        if now == before {
            kept += 1;
        } else {
            committed += 1;
        }
        assert!(
            !pending.exists(),
            "run {run}: the pending key file was left"
        );
        let tokens = totp_sign_in(&api, h);
        assert_eq!(exported_dob(&api, &tokens.access), ADULT_DOB, "run {run}");
        UserTokens::from_answer(&api.refresh(&h.refresh));
    }
    eprintln!("rotation kills: {committed} after the commit, {kept} before (a whole rotation took {whole:?})");
    // The kills fell on both sides of the commit.
    assert!(
        committed > 0 && kept > 0,
        "committed {committed}, kept {kept} (a whole rotation took {whole:?})"
    );
}

/// The meta tree of a stopped server's data directory (no background flusher, so the lock goes
/// with the handle).
fn meta_of(data_dir: &Path) -> (sled::Db, sled::Tree) {
    let db = sled::Config::new()
        .path(tessera_storage::store::db_path(data_dir))
        .flush_every_ms(None)
        .open()
        .unwrap();
    let meta = db.open_tree("meta").unwrap();
    (db, meta)
}

/// The data's hash root, opened with the key file's key.
fn hash_root_of(data_dir: &Path, key_file: &Path) -> Vec<u8> {
    let (_db, meta) = meta_of(data_dir);
    let sealed: tessera_storage::Sealed =
        serde_json::from_slice(&meta.get("hash_root").unwrap().expect("a hash root")).unwrap();
    tessera_storage::MasterKey::load(key_file)
        .unwrap()
        .open(b"tessera/hash-root", &sealed)
        .expect("the hash root opens with the key file's key")
        .to_vec()
}

#[test]
fn a_directory_from_before_the_hash_root_keeps_its_hashes_through_upgrade_and_rotation() {
    // The directory an earlier build left at its first start: the format record and the key's
    // check value, no hash root (its keyed hashes were made under the key's own bytes).
    let tmp = tempfile::tempdir().unwrap();
    let data_dir = tmp.path().join("data");
    std::fs::create_dir_all(&data_dir).unwrap();
    let key_path = data_dir.join("master.key");
    let key_file = new_key_file(&data_dir, "master.key");
    assert_eq!(key_file, key_path);
    let old_bytes = base64::engine::general_purpose::STANDARD
        .decode(key_text(&key_path))
        .unwrap();
    {
        let (db, meta) = meta_of(&data_dir);
        meta.insert("format", &b"{\"version\":1}"[..]).unwrap();
        let check = tessera_storage::MasterKey::load(&key_path)
            .unwrap()
            .check_value();
        meta.insert("key_check", &check[..]).unwrap();
        db.flush().unwrap();
    }
    let report: Value = serde_json::from_slice(
        &Command::new(bin())
            .args(["check-data", "--data-dir"])
            .arg(&data_dir)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(
        (
            &report["format"],
            &report["migration_pending"],
            &report["master_key_bound"]
        ),
        (&json!(1), &json!(false), &json!(true)),
        "{report}"
    );

    // This build starts on it and keeps the key's bytes as the root, so the hashes an earlier
    // build stored stay valid.
    let smtp = SmtpStub::start();
    let env = smtp.env();
    let mut srv = TestServer::start_in(&data_dir, &env_refs(&env));
    let mut api = UserApi::signup(&srv, "Upgraded Co", "owner@upgraded.example.com");
    let h = holder(&api, &smtp, 1);
    assert!(srv.terminate().success());
    assert_eq!(hash_root_of(&data_dir, &key_path), old_bytes);

    // A rotation re-seals the root under the new key and keeps it.
    srv.restart();
    api.rebase(&srv);
    let keys = tempfile::tempdir().unwrap();
    rotate(&srv, &new_key_file(keys.path(), "new.key")).json();
    UserTokens::from_answer(&api.refresh(&h.refresh));
    assert!(srv.terminate().success());
    let now_bytes = base64::engine::general_purpose::STANDARD
        .decode(key_text(&key_path))
        .unwrap();
    assert_ne!(now_bytes, old_bytes, "the key file holds the new key");
    assert_eq!(hash_root_of(&data_dir, &key_path), old_bytes);
    srv.restart();
    api.rebase(&srv);
    let tokens = totp_sign_in(&api, &h);
    assert_eq!(exported_dob(&api, &tokens.access), ADULT_DOB);
}

const ALLOW_SHARED_KEY: &str = "TESSERA__SECURITY__ALLOW_INSECURE_MASTER_KEY_FILE_MODE";

/// A master key file that group or others may read or write stops the start (the message names
/// the file, its mode and the fix), unless the configuration allows it, which the log then says
/// at every start; a 0600 file starts as always. A new key file for a rotation is held to the
/// same rule.
#[test]
fn a_master_key_file_open_to_others_stops_the_start_unless_allowed() {
    let mut srv = TestServer::start();
    let key = srv.data_dir.join("master.key");
    assert_eq!(mode_of(&key), 0o600, "made 0600 at the first start");
    assert!(!srv.log_text().contains("INSECURE"));
    srv.kill();
    let shown = key.display().to_string();
    let log = srv.data_dir.with_extension("shared-key.log");
    let set = |mode: u32| {
        std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap()
    };

    for mode in [0o644, 0o640, 0o620] {
        set(mode);
        let (status, err) = match spawn(&srv.data_dir, &[], &log) {
            Err(failed) => failed,
            Ok((mut child, _)) => {
                let _ = child.kill();
                panic!("the server started with a key file of mode {mode:o}");
            }
        };
        assert!(!status.success());
        assert!(
            err.contains(&format!("{shown} has mode 0{mode:o}"))
                && err.contains(&format!("chmod 600 {shown}"))
                && err.contains("security.allow_insecure_master_key_file_mode"),
            "{err}"
        );
        assert_eq!(mode_of(&key), mode, "the server changes no mode itself");
    }

    // Allowed: it starts and serves, and says why that is unsafe.
    set(0o644);
    let allowed = vec![(ALLOW_SHARED_KEY.to_owned(), "true".to_owned())];
    let (mut child, base) = spawn(&srv.data_dir, &allowed, &log)
        .unwrap_or_else(|(status, err)| panic!("refused though allowed ({status}): {err}"));
    let ready = reqwest::blocking::get(format!("{base}/readyz")).map(|r| r.status().as_u16());
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(ready.ok(), Some(200));
    let text = std::fs::read_to_string(&log).unwrap();
    let warning = text
        .lines()
        .find(|l| l.contains("INSECURE"))
        .unwrap_or_else(|| panic!("no warning in the log:\n{text}"));
    assert!(
        warning.contains("WARN") && warning.contains(&shown) && warning.contains("0644"),
        "{warning}"
    );

    // 0600 again: a start like any other.
    set(0o600);
    srv.restart();
    assert_eq!(srv.get("/readyz", None).status(), 200);
    assert!(!srv.log_text().contains("INSECURE"), "{}", srv.log_text());

    // A rotation's new key file: refused while others may read it (the key may be known
    // already), used with a warning when the configuration the command reads allows it.
    let keys = tempfile::tempdir().unwrap();
    let new = new_key_file(keys.path(), "new.key");
    std::fs::set_permissions(&new, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let before = key_text(&key);
    let out = rotate(&srv, &new);
    assert!(!out.status.success(), "{}", out.stdout);
    let new_shown = new.display().to_string();
    assert!(
        out.stderr.contains(&format!("{new_shown} has mode 0644"))
            && out.stderr.contains(&format!("chmod 600 {new_shown}")),
        "{}",
        out.stderr
    );
    assert_eq!(key_text(&key), before, "nothing rotated");
    let config = keys.path().join("allow.toml");
    std::fs::write(
        &config,
        "[security]\nallow_insecure_master_key_file_mode = true\n",
    )
    .unwrap();
    let out = srv.admin(
        &[
            "--config",
            config.to_str().unwrap(),
            "master-key",
            "rotate",
            "--new-key-file",
            &new_shown,
        ],
        "",
    );
    assert!(out.status.success(), "{}", out.stderr);
    assert!(out.stderr.contains("warning"), "{}", out.stderr);
    assert_eq!(key_text(&key), key_text(&new));
    assert_eq!(mode_of(&key), 0o600, "the server writes its key file 0600");
}
