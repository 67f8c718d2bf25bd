//! `tessera admin outbox list`: the file outbox (the default transport) read back through the
//! admin CLI.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{
    eventually, mode_of, patch_security, SmtpStub, TestServer, UserApi, PASSWORD, USER_PASSWORD,
};

const OWNER: &str = "owner@mail-co.example.com";

fn invite(srv: &TestServer, owner: &crate::support::Session, email: &str) {
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/tenants/mail-co/members",
        owner,
        Some(&json!({"email": email, "role": "viewer"})),
    );
    assert_eq!(r.status(), 201);
    let body: Value = r.json().unwrap();
    assert_eq!(body["status"], "invited");
    assert_eq!(body["email_sent"], true);
}

#[test]
fn the_outbox_lists_sent_mail_newest_first_and_filters_by_tenant() {
    let srv = TestServer::start();
    assert_eq!(srv.admin(&["outbox", "list"], "").json(), json!([]));

    let created = srv
        .admin(
            &[
                "tenant",
                "create",
                "--name",
                "Mail Café",
                "--slug",
                "mail-co",
                "--owner-email",
                OWNER,
            ],
            &format!("{PASSWORD}\n"),
        )
        .json();
    let owner = srv.login(OWNER, PASSWORD);
    invite(&srv, &owner, "first@example.com");
    // Distinct write times, so "newest first" is observable.
    std::thread::sleep(Duration::from_millis(50));
    invite(&srv, &owner, "second@example.com");

    let listed = srv.admin(&["outbox", "list"], "").json();
    let listed = listed.as_array().expect("a JSON array");
    // The owner's address verification, then the two invitations.
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert_eq!(listed[0]["to"], "second@example.com");
    assert_eq!(listed[1]["to"], "first@example.com");
    assert_eq!(listed[2]["to"], OWNER);
    assert_eq!(
        listed[2]["subject"],
        "Confirm your Tessera dashboard address"
    );
    for m in &listed[..2] {
        assert_eq!(m["subject"], "Your invitation to a Tessera dashboard");
        // Invitations are platform mail: no tenant or kind header.
        assert_eq!(m["tenant"], Value::Null);
        assert_eq!(m["kind"], Value::Null);
        let file = m["file"].as_str().unwrap();
        assert!(file.ends_with(".eml"), "{file}");
        assert!(srv.data_dir.join("outbox").join(file).is_file());
        let date = m["date"].as_str().unwrap();
        assert!(
            date.contains('T') && date.ends_with('Z'),
            "RFC 3339: {date}"
        );
    }

    // A filter excludes messages without a tenant header, and other tenants' messages.
    assert_eq!(
        srv.admin(&["outbox", "list", "--tenant", "other"], "")
            .json(),
        json!([])
    );
    assert_eq!(
        srv.admin(&["outbox", "list", "--tenant", "mail-co"], "")
            .json(),
        json!([])
    );

    // A tenant's end-user message: registering sends a verification mail through the postman,
    // tagged with the tenant; its non-ASCII subject is RFC 2047 encoded in the file.
    let api = UserApi {
        base: srv.base.clone(),
        client: srv.client.clone(),
        api_key: created["api_key"].as_str().unwrap().to_owned(),
        slug: "mail-co".into(),
        tenant_id: created["tenant"]["id"].as_str().unwrap().to_owned(),
        owner: OWNER.into(),
    };
    api.register("user@example.com", USER_PASSWORD).expect(200);
    let mut mine = Value::Null;
    assert!(
        eventually(Duration::from_secs(10), || {
            mine = srv
                .admin(&["outbox", "list", "--tenant", "mail-co"], "")
                .json();
            mine.as_array().is_some_and(|a| !a.is_empty())
        }),
        "the verification mail reached the outbox"
    );
    let mine = mine.as_array().unwrap();
    assert_eq!(mine.len(), 1, "{mine:?}");
    let m = &mine[0];
    assert_eq!(m["tenant"], "mail-co");
    assert_eq!(m["kind"], "verify_email");
    assert_eq!(m["to"], "user@example.com");
    assert_eq!(m["subject"], "Confirm your e-mail address for Mail Café");
    let file = srv
        .data_dir
        .join("outbox")
        .join(m["file"].as_str().unwrap());
    let raw = std::fs::read_to_string(file).unwrap();
    assert!(raw.contains("Subject: Confirm your e-mail address for Mail =?utf-8?b?"));
    // The link is whole on its own line: no quoted-printable soft breaks or `=3D`.
    let link = raw
        .split("\r\n")
        .find(|l| l.contains("/verify-email?token="))
        .expect("the link line");
    assert!(link.starts_with("http"), "{link}");
    assert!(!link.contains("=3D") && !link.ends_with('='), "{link}");

    let all = srv.admin(&["outbox", "list"], "").json();
    assert_eq!(all.as_array().unwrap().len(), 4);
    assert_eq!(all[0]["kind"], "verify_email", "newest first");
    assert_eq!(
        srv.admin(&["outbox", "list", "--tenant", "other"], "")
            .json(),
        json!([])
    );
}

#[test]
fn with_smtp_the_outbox_is_empty() {
    let smtp = SmtpStub::start();
    let env = smtp.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let srv = TestServer::start_with(&env);
    // A mail goes out through SMTP (the stub receives it) and leaves nothing in the outbox.
    let api = UserApi::signup(&srv, "Smtp Co", OWNER);
    api.register("reader@example.com", USER_PASSWORD)
        .expect(200);
    let mail = smtp.wait_for(&api.slug, "verify_email", "reader@example.com", 1);
    assert!(mail.token().is_some(), "{}", mail.text);
    let out = srv.admin(&["outbox", "list"], "");
    assert_eq!(out.json(), json!([]));
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    assert!(
        !srv.data_dir.join("outbox").exists()
            || std::fs::read_dir(srv.data_dir.join("outbox"))
                .unwrap()
                .next()
                .is_none(),
        "the file outbox holds something"
    );
}

/// Outbox files carry links with tokens and sign-in codes: under a permissive umask (022), and
/// with outboxes outside the data directory, each file is its owner's alone (0600) and a
/// directory the server makes for them is too (0700).
#[test]
fn outbox_files_are_their_owners_alone_under_a_permissive_umask() {
    let tmp = tempfile::tempdir().unwrap();
    let (mail_dir, sms_dir) = (tmp.path().join("out/mail"), tmp.path().join("out/sms"));
    let (mail_s, sms_s) = (
        mail_dir.to_str().unwrap().to_owned(),
        sms_dir.to_str().unwrap().to_owned(),
    );
    let srv = TestServer::start_under_umask(
        0o022,
        &[
            ("TESSERA__MAIL__OUTBOX_DIR", &mail_s),
            ("TESSERA__SMS__OUTBOX_DIR", &sms_s),
        ],
    );
    assert_eq!(mode_of(&mail_dir), 0o700);
    assert_eq!(mode_of(&sms_dir), 0o700);
    // The owner's address verification, a link with a token, goes to the mail outbox.
    srv.admin(
        &[
            "tenant",
            "create",
            "--name",
            "Modes Co",
            "--slug",
            "modes-co",
            "--owner-email",
            OWNER,
        ],
        &format!("{PASSWORD}\n"),
    )
    .json();
    let owner = srv.login(OWNER, PASSWORD);
    patch_security(
        &srv,
        &owner,
        "modes-co",
        json!({ "sms_otp_monthly_cap": 1000 }),
    );
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/sms-test",
        &owner,
        Some(&json!({ "tenantSlug": "modes-co", "phone": "+33612000001" })),
    );
    assert_eq!(r.status(), 200);
    let files = |dir: &std::path::Path, ext: &str| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect()
    };
    assert!(
        eventually(Duration::from_secs(10), || !files(&mail_dir, "eml")
            .is_empty()
            && !files(&sms_dir, "json").is_empty()),
        "a mail and a text message reached their outboxes"
    );
    for file in files(&mail_dir, "eml")
        .into_iter()
        .chain(files(&sms_dir, "json"))
    {
        assert_eq!(mode_of(&file), 0o600, "{}", file.display());
    }
    assert!(
        srv.data_dir.join("outbox").read_dir().is_err(),
        "the mail went where the configuration says"
    );
}

/// `outbox show` prints one message whole: its headers, its text and the links in it; it
/// names a message by the listing's file or its UUID, and nothing else.
#[test]
fn the_outbox_shows_a_messages_text_and_links() {
    let srv = TestServer::start();
    srv.signup("Show Co", OWNER);
    let listed = srv.admin(&["outbox", "list"], "").json();
    let file = listed[0]["file"].as_str().unwrap().to_owned();
    let shown = srv.admin(&["outbox", "show", &file], "").json();
    assert_eq!(shown["file"], file.as_str());
    assert_eq!(shown["to"], OWNER);
    assert_eq!(shown["subject"], "Confirm your Tessera dashboard address");
    let text = shown["text"].as_str().unwrap();
    assert!(text.contains("Signed in to the dashboard"), "{text}");
    // The verification link, then the reset link the mail offers instead.
    let links: Vec<&str> = shown["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(links.len(), 2, "{links:?}");
    assert!(
        links[0].starts_with(&format!("{}/dashboard/verify-email?token=", srv.base)),
        "{links:?}"
    );
    assert_eq!(links[1], format!("{}/dashboard/forgot-password", srv.base));
    assert!(text.contains(links[0]), "{text}");
    let uuid = file.trim_end_matches(".eml");
    assert_eq!(srv.admin(&["outbox", "show", uuid], "").json(), shown);

    let missing = uuid::Uuid::now_v7().to_string();
    for id in [missing.as_str(), "../master.key", "admin.sock"] {
        let out = srv.admin(&["outbox", "show", id], "");
        assert!(!out.status.success(), "{id}: {}", out.stdout);
        assert!(out.stderr.contains("not_found"), "{id}: {}", out.stderr);
    }
}

/// The development viewer is off unless asked for, and then refused anywhere but on a
/// loopback listener: its pages show every message with live links.
#[test]
fn the_mail_viewer_is_off_by_default_and_refused_on_a_public_listener() {
    let srv = TestServer::start();
    assert_eq!(srv.get("/dev/mail", None).status(), 404);
    drop(srv);
    let (ok, err) =
        crate::faults::serve_on("0.0.0.0:0", "", &[("TESSERA__MAIL__DEV_VIEWER", "true")]);
    assert!(!ok);
    assert!(err.contains("mail.dev_viewer"), "{err}");
    assert!(err.contains("loopback"), "{err}");
    // With SMTP there is no outbox to show.
    let smtp = SmtpStub::start();
    let mut env = smtp.env();
    env.push(("TESSERA__MAIL__DEV_VIEWER".into(), "true".into()));
    let out = std::process::Command::new(crate::support::bin())
        .args(["check-config"])
        .envs(env)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mail.dev_viewer"), "{err}");
}

/// On loopback, `/dev/mail` lists what was sent, newest first, each message a page of its
/// text with its links to follow.
#[test]
fn the_mail_viewer_lists_messages_and_shows_their_links() {
    let srv = TestServer::start_with(&[("TESSERA__MAIL__DEV_VIEWER", "true")]);
    let page = srv.get("/dev/mail", None);
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("default-src 'none'"));
    let body = page.text().unwrap();
    assert!(body.contains("No mail has been sent yet"), "{body}");

    srv.signup("Viewer Co", OWNER);
    let listed = srv.admin(&["outbox", "list"], "").json();
    let file = listed[0]["file"].as_str().unwrap();
    let body = srv.get("/dev/mail", None).text().unwrap();
    assert!(
        body.contains(&format!("<a href=\"/dev/mail/{file}\">")),
        "{body}"
    );
    assert!(
        body.contains("Confirm your Tessera dashboard address"),
        "{body}"
    );

    let shown = srv.admin(&["outbox", "show", file], "").json();
    let page = srv.get(&format!("/dev/mail/{file}"), None);
    assert_eq!(page.status(), 200);
    let body = page.text().unwrap();
    assert!(body.contains(&format!("To: {OWNER}")), "{body}");
    assert!(body.contains("<pre class=\"message\">"), "{body}");
    for link in shown["links"].as_array().unwrap() {
        let href = link.as_str().unwrap().replace('&', "&amp;");
        assert!(body.contains(&format!("<a href=\"{href}\">")), "{body}");
    }
    // The link opens its page.
    let verify = shown["links"][0].as_str().unwrap();
    let page = srv.client.get(verify).send().unwrap();
    assert_eq!(page.status(), 200);
    assert!(page
        .text()
        .unwrap()
        .contains("Confirm your dashboard address"));
    for missing in ["nothing", "0192f0c4-7a1e-7cc0-9b7e-3f2a1d4c5b6a.eml"] {
        let r = srv.get(&format!("/dev/mail/{missing}"), None);
        assert_eq!(r.status(), 404);
        assert!(r.text().unwrap().contains("No such message"));
    }
}
