//! `tessera admin outbox list`: the file outbox (the default transport) read back through the
//! admin CLI.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{SmtpStub, TestServer, PASSWORD};

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

    srv.admin(
        &[
            "tenant",
            "create",
            "--name",
            "Mail Co",
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
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0]["to"], "second@example.com");
    assert_eq!(listed[1]["to"], "first@example.com");
    for m in listed {
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

    // A tenant's end-user message, as `Mailer::send_job` writes it (an encoded subject).
    std::thread::sleep(Duration::from_millis(50));
    let eml = "From: Tessera <no-reply@localhost>\r\n\
               To: user@example.com\r\n\
               Subject: =?utf-8?b?Q29uZmlybSB5b3VyIGUtbWFpbCBhZGRyZXNzIGZvciBDYWbDqQ==?=\r\n\
               X-Tessera-Tenant: mail-co\r\n\
               X-Tessera-Kind: verify_email\r\n\
               Date: Tue, 03 Mar 2026 10:00:00 +0000\r\n\
               MIME-Version: 1.0\r\n\
               Content-Type: text/plain; charset=utf-8\r\n\
               \r\n\
               body\r\n";
    let name = "0195f0c2-0000-7000-8000-000000000001.eml";
    std::fs::write(srv.data_dir.join("outbox").join(name), eml).unwrap();
    let mine = srv
        .admin(&["outbox", "list", "--tenant", "mail-co"], "")
        .json();
    assert_eq!(
        mine,
        json!([{
            "file": name,
            "tenant": "mail-co",
            "kind": "verify_email",
            "to": "user@example.com",
            "subject": "Confirm your e-mail address for Café",
            "date": "2026-03-03T10:00:00Z",
        }])
    );
    let all = srv.admin(&["outbox", "list"], "").json();
    assert_eq!(all.as_array().unwrap().len(), 3);
    assert_eq!(all[0]["file"], name);
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
    let out = srv.admin(&["outbox", "list"], "");
    assert_eq!(out.json(), json!([]));
    assert!(out.stderr.is_empty(), "{}", out.stderr);
}
