//! `GET /v1/sdk-support-policy`: the operator's policy file served as read at start-up, with
//! an `ETag` and `If-None-Match`; a bad file stops the server.

use std::{path::Path, process::Command};

use serde_json::{json, Value};

use crate::support::{bin, config_file, error_code, spawn, TestServer};

const PATH: &str = "/v1/sdk-support-policy";

fn policy() -> Value {
    json!({
        "schemaVersion": "1.0",
        "generated_at": "2026-11-01T09:30:00Z",
        "valid_until": "2027-05-01",
        "policyUrl": "https://tessera.example/sdk-support",
        "entries": [
            {"package": "@tessera/js", "registry": "npm", "major": 3, "released": "2026-02-02",
             "supportedUntil": "2028-02-02", "status": "active"},
            {"package": "@tessera/js", "registry": "npm", "major": 2, "released": "2024-02-29",
             "supportedUntil": "2026-02-28", "status": "maintenance"},
            {"package": "@tessera/js", "registry": "npm", "major": 1, "released": "2023-01-15",
             "supportedUntil": "2025-01-15", "status": "eol",
             "early_eol_reason": "the token format changed"},
            {"package": "TesseraKit", "registry": "spm", "major": 1, "released": "2025-06-01",
             "supportedUntil": "2027-06-01", "status": "active"},
            {"package": "tessera_flutter", "major": 0, "released": "2026-03-10",
             "supportedUntil": "2026-03-10", "status": "eol"}
        ]
    })
}

/// Writes `doc` as `name` in `dir`; answers its path as a string for the environment.
fn write(dir: &Path, name: &str, doc: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, doc).unwrap();
    path.to_str().unwrap().to_owned()
}

fn serve_policy(doc: &Value) -> (TestServer, tempfile::TempDir) {
    let files = tempfile::tempdir().unwrap();
    let file = write(files.path(), "policy.json", &doc.to_string());
    let srv = TestServer::start_with(&[("TESSERA__SDK__POLICY_FILE", &file)]);
    (srv, files)
}

fn get(srv: &TestServer, if_none_match: &[&str]) -> reqwest::blocking::Response {
    let mut req = srv.client.get(srv.url(PATH));
    for tag in if_none_match {
        req = req.header("if-none-match", *tag);
    }
    req.send().unwrap()
}

fn etag(r: &reqwest::blocking::Response) -> String {
    r.headers()["etag"].to_str().unwrap().to_owned()
}

#[test]
fn the_policy_is_served_with_an_etag_and_answers_304_to_a_matching_if_none_match() {
    let doc = policy();
    let (srv, _files) = serve_policy(&doc);

    let r = get(&srv, &[]);
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    assert_eq!(r.headers()["cache-control"], "public, max-age=300");
    let tag = etag(&r);
    // Strong and quoted.
    assert!(
        tag.len() > 2 && tag.starts_with('"') && tag.ends_with('"') && !tag.starts_with("W/"),
        "{tag}"
    );
    let text = r.text().unwrap();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), doc);
    // The spec's field order, in the document and in each entry.
    for order in [
        [
            "\"schemaVersion\"",
            "\"generated_at\"",
            "\"valid_until\"",
            "\"policyUrl\"",
            "\"entries\"",
        ]
        .as_slice(),
        [
            "\"package\"",
            "\"registry\"",
            "\"major\"",
            "\"released\"",
            "\"supportedUntil\"",
            "\"status\"",
            "\"early_eol_reason\"",
        ]
        .as_slice(),
    ] {
        let at: Vec<usize> = order.iter().map(|k| text.find(k).unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
    }

    // Stable across requests.
    let again = get(&srv, &[]);
    assert_eq!(etag(&again), tag);
    assert_eq!(again.text().unwrap(), text);

    // The client's copy is current: 304, the same validators, no body.
    let weak = format!("W/{tag}");
    let listed = format!("\"stale\", {tag}");
    for inm in [
        vec![tag.as_str()],
        vec![weak.as_str()],
        vec![listed.as_str()],
        vec!["*"],
        vec!["\"stale\"", tag.as_str()],
    ] {
        let r = get(&srv, &inm);
        assert_eq!(r.status(), 304, "{inm:?}");
        assert_eq!(etag(&r), tag, "{inm:?}");
        assert_eq!(r.headers()["cache-control"], "public, max-age=300");
        assert!(r.bytes().unwrap().is_empty(), "{inm:?}");
    }
    // Anything else: the document.
    let truncated = &tag[..tag.len() - 2];
    let unquoted = tag.trim_matches('"');
    for inm in ["\"stale\"", "\"stale\", W/\"other\"", truncated, unquoted] {
        let r = get(&srv, &[inm]);
        assert_eq!(r.status(), 200, "{inm}");
        assert_eq!(r.text().unwrap(), text, "{inm}");
    }

    // No credentials are needed, and none are looked at.
    let r = srv
        .client
        .get(srv.url(PATH))
        .header("x-api-key", "tsk_nonsense")
        .header("authorization", "Bearer nonsense")
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);

    // Another document has another tag.
    let mut other = policy();
    other["entries"][0]["status"] = json!("maintenance");
    let (other_srv, _other_files) = serve_policy(&other);
    let r = get(&other_srv, &[&tag]);
    assert_eq!(r.status(), 200);
    assert_ne!(etag(&r), tag);
    assert_eq!(r.json::<Value>().unwrap(), other);
}

#[test]
fn without_a_policy_file_the_route_is_404_and_documented() {
    let srv = TestServer::start();
    for inm in [None, Some("*")] {
        let mut req = srv.client.get(srv.url(PATH));
        if let Some(v) = inm {
            req = req.header("if-none-match", v);
        }
        let r = req.send().unwrap();
        assert_eq!(r.status(), 404);
        assert!(r.headers().get("etag").is_none());
        assert_eq!(error_code(&r.json().unwrap()), "sdk_policy/not_configured");
    }
    let doc: Value = srv.get("/v1/openapi.json", None).json().unwrap();
    let op = &doc["paths"][PATH]["get"];
    assert_eq!(op["tags"], json!(["platform"]));
    assert!(op.get("security").is_none(), "{op}");
    for status in ["200", "304", "404"] {
        assert!(op["responses"].get(status).is_some(), "no {status}: {op}");
    }
    assert_eq!(
        op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/SdkPolicy"
    );
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["SdkPolicy"]["required"],
        json!([
            "schemaVersion",
            "generated_at",
            "valid_until",
            "policyUrl",
            "entries"
        ])
    );
    assert_eq!(schemas["Registry"]["enum"], json!(["npm", "spm", "pubdev"]));
    assert_eq!(
        schemas["SupportStatus"]["enum"],
        json!(["active", "maintenance", "eol"])
    );
    assert_eq!(schemas["SdkEntry"]["additionalProperties"], json!(false));
}

#[test]
fn a_relative_policy_file_is_under_the_data_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    write(&data, "sdk-policy.json", &policy().to_string());
    let srv = TestServer::start_in(&data, &[("TESSERA__SDK__POLICY_FILE", "sdk-policy.json")]);
    let r = get(&srv, &[]);
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().unwrap(), policy());
}

/// Starts the server with `doc` as its policy file; answers its exit code and stderr, or
/// panics when it started.
fn refused(doc: &str) -> (Option<i32>, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "policy.json", doc);
    let env = vec![("TESSERA__SDK__POLICY_FILE".to_owned(), file.clone())];
    match spawn(&tmp.path().join("data"), &env, &tmp.path().join("log")) {
        Ok((mut child, _)) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server started with the policy {doc}");
        }
        Err((status, log)) => (status.code(), log, file),
    }
}

#[test]
fn a_bad_policy_file_stops_the_server_naming_the_file_and_the_problem() {
    type Change = fn(&mut Value);
    let cases: [(&str, Change, &str); 17] = [
        (
            "a status outside the enum",
            |v| v["entries"][0]["status"] = json!("deprecated"),
            "entries[0].status",
        ),
        (
            "a registry outside the enum",
            |v| v["entries"][3]["registry"] = json!("cocoapods"),
            "entries[3].registry",
        ),
        (
            "a null registry",
            |v| v["entries"][3]["registry"] = Value::Null,
            "entries[3].registry",
        ),
        (
            "a date that is not YYYY-MM-DD",
            |v| v["entries"][1]["released"] = json!("29/02/2024"),
            "entries[1].released",
        ),
        (
            "a day that is not in the calendar",
            |v| v["entries"][1]["supportedUntil"] = json!("2025-02-29"),
            "not a calendar date",
        ),
        (
            "a valid_until that is not a date",
            |v| v["valid_until"] = json!("soon"),
            "valid_until",
        ),
        (
            "supportedUntil before released",
            |v| v["entries"][0]["supportedUntil"] = json!("2026-02-01"),
            "supportedUntil 2026-02-01 is before released 2026-02-02",
        ),
        (
            "an early_eol_reason without eol",
            |v| v["entries"][0]["early_eol_reason"] = json!("we felt like it"),
            "early_eol_reason is only allowed with status \"eol\"",
        ),
        (
            "an empty early_eol_reason",
            |v| v["entries"][2]["early_eol_reason"] = json!(""),
            "early_eol_reason must not be empty",
        ),
        (
            "an unknown field in an entry",
            |v| v["entries"][0]["lts"] = json!(true),
            "unknown field `lts`",
        ),
        (
            "an unknown field in the document",
            |v| v["policy_url"] = json!("https://x.example"),
            "unknown field `policy_url`",
        ),
        (
            "a missing field in the document",
            |v| {
                v.as_object_mut().unwrap().remove("schemaVersion");
            },
            "missing field `schemaVersion`",
        ),
        (
            "a missing field in an entry",
            |v| {
                v["entries"][4]
                    .as_object_mut()
                    .unwrap()
                    .remove("supportedUntil");
            },
            "missing field `supportedUntil`",
        ),
        (
            "a negative major",
            |v| v["entries"][0]["major"] = json!(-3),
            "entries[0].major",
        ),
        (
            "a major that is not an integer",
            |v| v["entries"][0]["major"] = json!(3.5),
            "entries[0].major",
        ),
        (
            "an empty package",
            |v| v["entries"][3]["package"] = json!(" "),
            "entries[3].package: must not be empty",
        ),
        (
            "a repeated package, registry and major",
            |v| v["entries"][1]["major"] = json!(3),
            "same package, registry and major",
        ),
    ];
    for (what, change, says) in cases {
        let mut doc = policy();
        change(&mut doc);
        let (code, log, file) = refused(&doc.to_string());
        assert_eq!(code, Some(2), "{what}: {log}");
        assert!(log.contains("sdk.policy_file"), "{what}: {log}");
        assert!(log.contains(&file), "{what}: the file is not named: {log}");
        assert!(log.contains(says), "{what}: expected {says:?} in {log}");
        assert!(!log.contains("panicked"), "{what}: {log}");
    }
    // Not JSON, or more than one document.
    let (code, log, _) = refused("{\"schemaVersion\": ");
    assert_eq!(code, Some(2), "{log}");
    let (code, log, _) = refused(&format!("{} {{}}", policy()));
    assert_eq!(code, Some(2), "{log}");
    // A file that is not there.
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nowhere.json");
    let env = vec![(
        "TESSERA__SDK__POLICY_FILE".to_owned(),
        missing.to_str().unwrap().to_owned(),
    )];
    let Err((status, log)) = spawn(&tmp.path().join("data"), &env, &tmp.path().join("log")) else {
        panic!("the server started with a missing policy file");
    };
    assert_eq!(status.code(), Some(2), "{log}");
    assert!(
        log.contains("cannot read") && log.contains("nowhere.json"),
        "{log}"
    );
}

#[test]
fn check_config_checks_the_policy_file_too() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = policy();
    doc["entries"][1]["status"] = json!("retired");
    let bad = write(tmp.path(), "bad.json", &doc.to_string());
    let good = write(tmp.path(), "good.json", &policy().to_string());
    let check = |file: &str| {
        Command::new(bin())
            .args(["check-config", "--config"])
            .arg(config_file())
            .env("TESSERA__SDK__POLICY_FILE", file)
            .output()
            .unwrap()
    };
    let out = check(&bad);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&bad) && err.contains("entries[1].status"),
        "{err}"
    );
    let out = check(&good);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
