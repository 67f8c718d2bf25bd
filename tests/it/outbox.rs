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
