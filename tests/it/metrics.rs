//! The operators' metrics on `/metrics` (group commit latency, the delivery backlogs, the
//! password hashing queues, the database's size) follow the load, and the files of `deploy/`
//! and the operators' guide (`docs/operators.md`) name only metrics the server exports.

use std::{
    collections::BTreeSet,
    path::Path,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use serde_json::{json, Value};

use crate::stub::{Route, StubResponse, StubServer};
use crate::support::{
    env_refs, fresh_client_ip, patch_security, SmtpStub, TestServer, UserApi, PASSWORD,
    USER_PASSWORD,
};

/// The metrics this file is about, with their types.
const OPERATOR_METRICS: &[(&str, &str)] = &[
    ("tessera_storage_group_commit_duration_seconds", "histogram"),
    ("tessera_storage_size_on_disk_bytes", "gauge"),
    ("tessera_mail_queue_depth", "gauge"),
    ("tessera_mail_queue_oldest_age_seconds", "gauge"),
    ("tessera_sms_queue_depth", "gauge"),
    ("tessera_sms_queue_oldest_age_seconds", "gauge"),
    ("tessera_password_hash_queue_depth", "gauge"),
    ("tessera_password_hash_queue_capacity", "gauge"),
];

fn scrape(srv: &TestServer) -> String {
    let r = srv.get("/metrics", None);
    assert_eq!(r.status(), 200);
    r.text().unwrap()
}

use crate::support::series_value as value;

#[track_caller]
fn must(text: &str, series: &str) -> f64 {
    value(text, series).unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

/// Polls the metrics until `ok` holds for `series`; answers the last text.
#[track_caller]
fn wait_for(srv: &TestServer, series: &str, ok: impl Fn(f64) -> bool, what: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let text = scrape(srv);
        if value(&text, series).is_some_and(&ok) {
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: {series} is {:?}",
            value(&text, series)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A text message provider that answers 503 until it is opened, then 201 with a message sid.
struct ProviderGate {
    url: String,
    open: Arc<AtomicBool>,
    refused: Arc<AtomicUsize>,
    accepted: Arc<AtomicUsize>,
    _server: StubServer,
}

impl ProviderGate {
    fn start() -> Self {
        let (open, refused, accepted) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        let (is_open, refusals, acceptances) = (open.clone(), refused.clone(), accepted.clone());
        let server = StubServer::start(vec![Route::any(move |_| {
            if is_open.load(Ordering::SeqCst) {
                acceptances.fetch_add(1, Ordering::SeqCst);
                StubResponse::json(201, &json!({"sid": "SM00000000000000000000000000000001"}))
            } else {
                refusals.fetch_add(1, Ordering::SeqCst);
                StubResponse::json(503, &json!({"code": 20503, "message": "later"}))
            }
        })]);
        ProviderGate {
            url: server.url().to_owned(),
            open,
            refused,
            accepted,
            _server: server,
        }
    }
}

/// One server under some load: each operator metric is exported with its help line, and moves
/// the way the load says it must.
#[test]
fn operator_metrics_follow_group_commits_queues_and_the_database() {
    let smtp = SmtpStub::start_closed();
    let provider = ProviderGate::start();
    let mut env = smtp.env();
    env.extend(
        [
            ("TESSERA__SMS__TRANSPORT", "http"),
            ("TESSERA__SMS__BASE_URL", &provider.url),
            ("TESSERA__SMS__ACCOUNT_SID", "ACmetrics"),
            ("TESSERA__SMS__AUTH_TOKEN", "metrics-token"),
            ("TESSERA__SMS__MESSAGING_SERVICE_SID", "MGmetrics"),
            ("TESSERA__SERVER__TRUSTED_PROXIES", r#"["127.0.0.1/32"]"#),
            // One hashing thread and hashes slow enough for jobs to wait behind each other.
            ("TESSERA__SECURITY__HASHING_THREADS", "1"),
            ("TESSERA__SECURITY__ARGON2_M_COST_KIB", "32768"),
            ("TESSERA__SECURITY__ARGON2_T_COST", "2"),
            ("TESSERA__SECURITY__HASHING_QUEUE_MAX", "16"),
            ("TESSERA__SECURITY__HASHING_NEW_QUEUE_MAX", "8"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let srv = TestServer::start_with(&env_refs(&env));

    // At rest: every metric is there, described, and says nothing is waiting.
    let text = scrape(&srv);
    for (name, kind) in OPERATOR_METRICS {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("# HELP {name} ")) && l.len() > name.len() + 20),
            "no help line for {name}:\n{text}"
        );
        assert!(
            text.contains(&format!("# TYPE {name} {kind}\n")),
            "{name} is not a {kind}:\n{text}"
        );
    }
    assert!(must(&text, "tessera_storage_size_on_disk_bytes") > 0.0);
    for q in ["mail", "sms"] {
        assert_eq!(must(&text, &format!("tessera_{q}_queue_depth")), 0.0);
        assert_eq!(
            must(&text, &format!("tessera_{q}_queue_oldest_age_seconds")),
            0.0
        );
    }
    let capacity =
        |queue: &str| format!("tessera_password_hash_queue_capacity{{queue=\"{queue}\"}}");
    let waiting = |queue: &str| format!("tessera_password_hash_queue_depth{{queue=\"{queue}\"}}");
    assert_eq!(must(&text, &capacity("verify")), 16.0);
    assert_eq!(must(&text, &capacity("new")), 8.0);
    assert_eq!(must(&text, &waiting("verify")), 0.0);
    assert_eq!(must(&text, &waiting("new")), 0.0);

    // Acknowledged writes wait for group commits, and each one is timed.
    let commits = "tessera_storage_group_commit_duration_seconds_count";
    let before = must(&text, commits);
    let api = UserApi::signup(&srv, "Metrics Co", "owner@example.com");
    let text = scrape(&srv);
    let after = must(&text, commits);
    assert!(after > before, "group commits {before} -> {after}");
    assert!(must(&text, "tessera_storage_group_commit_duration_seconds_sum") > 0.0);
    assert_eq!(
        must(
            &text,
            "tessera_storage_group_commit_duration_seconds_bucket{le=\"+Inf\"}"
        ),
        after
    );

    // A registration's verification mail waits while the mail server refuses it, and ages.
    api.register("ada@example.com", USER_PASSWORD).expect(200);
    wait_for(
        &srv,
        "tessera_mail_queue_depth",
        |v| v == 1.0,
        "one mail queued",
    );
    let text = wait_for(
        &srv,
        "tessera_mail_queue_oldest_age_seconds",
        |v| v >= 1.0,
        "the queued mail ages",
    );
    assert!(must(&text, "tessera_mail_queue_oldest_age_seconds") < 60.0);
    assert_eq!(must(&text, "tessera_mail_queue_depth"), 1.0);
    assert!(smtp.refused() >= 1, "mail was attempted");
    assert_eq!(smtp.count(), 0);
    // Delivered at its next attempt, it leaves the queue.
    smtp.open();
    let text = wait_for(
        &srv,
        "tessera_mail_queue_depth",
        |v| v == 0.0,
        "mail delivered",
    );
    assert_eq!(must(&text, "tessera_mail_queue_oldest_age_seconds"), 0.0);
    assert_eq!(smtp.count(), 1);

    // The same for a texted code while the provider answers 503.
    let owner = srv.login(&api.owner, PASSWORD);
    let out = patch_security(&srv, &owner, &api.slug, json!({ "sms_otp_enabled": true }));
    assert_eq!(out["sms_otp_enabled"], true, "{out}");
    let sent = api.post_as(
        "/v1/auth/sms-otp",
        None,
        &json!({ "phone": "+33612000001", "mode": "login_or_create" }),
    );
    assert_eq!(sent.status, 202, "{}", sent.body);
    wait_for(
        &srv,
        "tessera_sms_queue_depth",
        |v| v == 1.0,
        "one text queued",
    );
    wait_for(
        &srv,
        "tessera_sms_queue_oldest_age_seconds",
        |v| (1.0..60.0).contains(&v),
        "the queued text ages",
    );
    assert!(
        provider.refused.load(Ordering::SeqCst) >= 1,
        "text attempted"
    );
    provider.open.store(true, Ordering::SeqCst);
    let text = wait_for(&srv, "tessera_sms_queue_depth", |v| v == 0.0, "text sent");
    assert_eq!(must(&text, "tessera_sms_queue_oldest_age_seconds"), 0.0);
    assert_eq!(provider.accepted.load(Ordering::SeqCst), 1);

    // Sign-ups at once on one hashing thread: the new passwords' queue fills, then drains.
    let seen = AtomicBool::new(false);
    let done = AtomicUsize::new(0);
    const SIGNUPS: usize = 6;
    std::thread::scope(|s| {
        for i in 0..SIGNUPS {
            let (api, done) = (&api, &done);
            s.spawn(move || {
                let r = api.register_from(
                    &json!({
                        "email": format!("rush{i}@example.com"),
                        "password": USER_PASSWORD,
                        "consent": true
                    }),
                    &fresh_client_ip(),
                );
                done.fetch_add(1, Ordering::SeqCst);
                r.expect(200);
            });
        }
        while done.load(Ordering::SeqCst) < SIGNUPS {
            let text = scrape(&srv);
            if value(&text, &waiting("new")).is_some_and(|v| v >= 1.0) {
                seen.store(true, Ordering::SeqCst);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    assert!(seen.load(Ordering::SeqCst), "no hash was ever seen waiting");
    let text = scrape(&srv);
    assert_eq!(must(&text, &waiting("new")), 0.0);
    assert_eq!(must(&text, &waiting("verify")), 0.0);
    assert!(must(&text, commits) > after);
}

/// The series names a scrape shows (`tessera_http_requests_total`, `..._bucket`, ...).
fn exported(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_owned)
        .collect()
}

const PROMQL_WORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "offset",
    "bool",
    "and",
    "or",
    "unless",
    "sum",
    "min",
    "max",
    "avg",
    "count",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
    "group",
    "atan2",
    "inf",
    "nan",
];

/// The metric names a PromQL expression selects: identifiers outside strings, label matchers,
/// ranges and grouping lists that are neither a function called nor a keyword.
fn metric_names(expr: &str) -> Vec<String> {
    // Blank out strings, `{...}` and `[...]`.
    let mut plain = String::new();
    let (mut quote, mut nest) = (None::<char>, 0usize);
    for c in expr.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'' | '`') => quote = Some(c),
            (None, '{' | '[') => nest += 1,
            (None, '}' | ']') => nest = nest.saturating_sub(1),
            (None, c) if nest == 0 => plain.push(c),
            _ => {}
        }
        if quote.is_some() || nest > 0 {
            plain.push(' ');
        }
    }
    let chars: Vec<char> = plain.chars().collect();
    let mut names = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let starts = (c.is_ascii_alphabetic() || c == '_' || c == ':')
            && (i == 0 || !(chars[i - 1].is_ascii_alphanumeric() || chars[i - 1] == '_'));
        if !starts {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && (chars[i].is_ascii_alphanumeric() || "_:".contains(chars[i])) {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        let mut next = i;
        while next < chars.len() && chars[next].is_whitespace() {
            next += 1;
        }
        let called = chars.get(next) == Some(&'(');
        let lower = word.to_ascii_lowercase();
        if [
            "by",
            "without",
            "on",
            "ignoring",
            "group_left",
            "group_right",
        ]
        .contains(&lower.as_str())
            && called
        {
            // A list of label names: skip to its `)`.
            while next < chars.len() && chars[next] != ')' {
                next += 1;
            }
            i = next;
        } else if !called && !PROMQL_WORDS.contains(&lower.as_str()) {
            names.push(word);
        }
    }
    names
}

/// The `expr:` of every rule in a Prometheus rule file: inline, or a block (`|`, `>`) of the
/// lines indented below it.
fn rule_exprs(yaml: &str) -> Vec<String> {
    let lines: Vec<&str> = yaml.lines().collect();
    let mut out = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix("expr:") else {
            continue;
        };
        let indent = line.len() - line.trim_start().len();
        let rest = rest.trim();
        if rest.starts_with('|') || rest.starts_with('>') {
            let block: Vec<&str> = lines[n + 1..]
                .iter()
                .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > indent)
                .copied()
                .collect();
            out.push(block.join("\n"));
        } else {
            out.push(rest.trim_matches(['"', '\'']).to_owned());
        }
    }
    out
}

/// Every `expr` of a Grafana dashboard's panels, and the metric of each `label_values(...)`
/// variable query.
fn dashboard_exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                match (k.as_str(), x) {
                    ("expr", Value::String(e)) => out.push(e.clone()),
                    ("query" | "definition", Value::String(q)) => {
                        if let Some(args) = q.strip_prefix("label_values(") {
                            out.push(args.split([',', ')']).next().unwrap_or("").to_owned());
                        }
                    }
                    _ => dashboard_exprs(x, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|x| dashboard_exprs(x, out)),
        _ => {}
    }
}

/// The alert rules and the dashboard select only series the server exports (or Prometheus's
/// own `up`), and the production section of `docs/operators.md` lists every metric family.
#[test]
fn deploy_files_and_the_operators_guide_name_only_exported_metrics() {
    let srv = TestServer::start();
    // Requests make the per-route series appear.
    assert_eq!(srv.get("/healthz", None).status(), 200);
    let text = scrape(&srv);
    let exported = exported(&text);
    assert!(exported.contains("tessera_http_requests_total"), "{text}");
    assert!(
        exported.contains("tessera_storage_group_commit_duration_seconds_bucket"),
        "{text}"
    );

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let alerts = std::fs::read_to_string(root.join("deploy/prometheus/alerts.yml")).unwrap();
    let exprs = rule_exprs(&alerts);
    let rules = alerts
        .lines()
        .filter(|l| l.trim_start().starts_with("- alert:"))
        .count();
    assert!(rules >= 8, "{rules} alert rules");
    assert_eq!(exprs.len(), rules, "every rule's expr is read: {exprs:#?}");

    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("deploy/grafana/tessera-dashboard.json")).unwrap(),
    )
    .expect("the dashboard is JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    for p in panels.iter().filter(|p| p["type"] != "row") {
        assert!(
            p["targets"].as_array().is_some_and(|t| !t.is_empty()),
            "panel {} has no query",
            p["title"]
        );
    }
    let mut dash_exprs = Vec::new();
    dashboard_exprs(&dashboard, &mut dash_exprs);

    let mut referenced = BTreeSet::new();
    for (file, exprs) in [
        ("alerts.yml", &exprs),
        ("tessera-dashboard.json", &dash_exprs),
    ] {
        for e in exprs {
            let names = metric_names(e);
            assert!(!names.is_empty(), "{file}: no metric in {e:?}");
            for name in names {
                assert!(
                    name == "up" || exported.contains(&name),
                    "{file} uses {name}, which /metrics does not export (in {e:?})"
                );
                referenced.insert(name);
            }
        }
    }
    // The files watch what they are for.
    for needed in [
        "tessera_http_requests_total",
        "tessera_http_request_duration_seconds_bucket",
        "tessera_storage_group_commit_duration_seconds_bucket",
        "tessera_storage_size_on_disk_bytes",
        "tessera_mail_queue_depth",
        "tessera_mail_queue_oldest_age_seconds",
        "tessera_sms_queue_oldest_age_seconds",
        "tessera_password_hash_queue_depth",
        "tessera_password_hash_queue_capacity",
        "up",
    ] {
        assert!(referenced.contains(needed), "nothing uses {needed}");
    }

    // The production section of docs/operators.md lists every family the server exports.
    let guide = std::fs::read_to_string(root.join("docs/operators.md")).unwrap();
    let start = guide
        .find("## Running in production")
        .expect("a production section");
    let section = &guide[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut parts = rest.split(' ');
        let (name, kind) = (parts.next().unwrap(), parts.next().unwrap());
        let listed = if kind == "counter" {
            format!("`{name}_total`")
        } else {
            format!("`{name}`")
        };
        assert!(
            section.contains(&listed),
            "the production section of docs/operators.md does not list {listed}"
        );
    }
}

#[test]
fn promql_names_are_told_from_functions_keywords_and_labels() {
    assert_eq!(
        metric_names(
            r#"histogram_quantile(0.99, sum by (instance, le) (rate(a_bucket{x="y", z=~"5.."}[5m])))
               / on (instance) group_left b_total offset 1d > 1e9 and up{job="t"} == 0"#
        ),
        ["a_bucket", "b_total", "up"]
    );
    assert_eq!(
        rule_exprs("  - alert: A\n    expr: x > 1\n  - alert: B\n    expr: |\n      sum(y)\n        / z\n    for: 5m\n"),
        ["x > 1", "      sum(y)\n        / z"]
    );
}
