//! The documentation's shell walks, run as a reader would run them: the `sh` blocks of a
//! section are taken from the Markdown as they stand, run by `bash -euo pipefail` against a
//! started server (its address, a local app's and the binary the tests built in place of
//! `http://127.0.0.1:8080`, `http://localhost:5173` and `target/release/tessera`, the only
//! edits), and every answer the text shows under a command
//! (`# {...}`) is compared with the shape of the answer the command printed. A walk that
//! asks the reader to do something in a browser (`Open this link in a browser ...`) gets it
//! done in Chromium, or over plain HTTP as a browser would send it where Chromium is missing.

use std::{
    io::{BufRead, BufReader, Read, Write},
    path::{Path, PathBuf},
    process::{ChildStdin, Command, Stdio},
    sync::mpsc,
    time::Duration,
};

use serde_json::Value;

use crate::{
    browser::{chromium, chromium_here, start_app, Ui},
    hosted::Browser,
    support::{config_file, TestServer},
};

/// The address the documentation's commands call.
const DOC_SERVER: &str = "http://127.0.0.1:8080";
/// The app's address in the documentation.
const DOC_APP: &str = "http://localhost:5173";
/// The binary, as the documentation calls it from the repository's root.
const DOC_BIN: &str = "target/release/tessera";

/// The text of the `sh` blocks from the heading `heading` of `file` up to the heading `until`
/// (or, without one, the next heading of the same or a higher level), in order.
fn sh_blocks_until(file: &str, heading: &str, until: Option<&str>) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let level = heading.chars().take_while(|c| *c == '#').count();
    let mut lines = text.lines();
    lines
        .by_ref()
        .find(|l| *l == heading)
        .unwrap_or_else(|| panic!("no heading {heading:?} in {file}"));
    let mut script = String::new();
    let mut in_sh = false;
    let mut in_other = false;
    for line in lines {
        if !in_sh && !in_other {
            let hashes = line.chars().take_while(|c| *c == '#').count();
            let heading_here = hashes > 0 && line[hashes..].starts_with(' ');
            match until {
                Some(end) if line == end => break,
                None if heading_here && hashes <= level => break,
                _ => {}
            }
            if line == "```sh" {
                in_sh = true;
            } else if line.starts_with("```") {
                in_other = true;
            }
            continue;
        }
        if line.starts_with("```") {
            in_sh = false;
            in_other = false;
            continue;
        }
        if in_sh {
            script.push_str(line);
            script.push('\n');
        }
    }
    assert!(
        !script.is_empty(),
        "no sh block under {heading:?} in {file}"
    );
    script
}

/// The answers a script documents: each comment that starts with `# {`, `# [` or `# "` (a
/// JSON string, such as jq's `.error.code`), with the comment lines that continue it until
/// its brackets close.
fn documented_answers(script: &str) -> Vec<String> {
    let mut answers = Vec::new();
    let mut open: Option<(String, i32)> = None;
    for line in script.lines() {
        let Some(comment) = line.trim_start().strip_prefix('#') else {
            open = None;
            continue;
        };
        let comment = comment.trim();
        let (mut text, mut depth) = match open.take() {
            Some(o) => o,
            None if comment.starts_with(['{', '[', '"']) => (String::new(), 0),
            None => continue,
        };
        depth += bracket_depth(comment);
        text.push_str(comment);
        text.push(' ');
        if depth > 0 {
            open = Some((text, depth));
        } else {
            answers.push(text);
        }
    }
    answers
}

/// How many more brackets `text` opens than it closes, outside strings.
fn bracket_depth(text: &str) -> i32 {
    let mut depth = 0;
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (true, false, '"') => in_string = false,
            (false, _, '"') => in_string = true,
            (false, _, '{' | '[') => depth += 1,
            (false, _, '}' | ']') => depth -= 1,
            _ => {}
        }
    }
    depth
}

/// The documented shape as JSON: a bare `...` as a value becomes `"..."` (any value); in
/// place of a key in an object, the key `"..."` (more keys allowed); in an array, the element
/// `"..."` (more elements allowed).
fn shape(documented: &str) -> Value {
    let mut out = String::new();
    let mut stack = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = documented;
    while let Some(c) = rest.chars().next() {
        if !in_string && rest.starts_with("...") {
            let value = out.trim_end().ends_with(':');
            out.push_str(if stack.last() == Some(&'{') && !value {
                "\"...\": \"...\""
            } else {
                "\"...\""
            });
            rest = &rest[3..];
            continue;
        }
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (true, false, '"') => in_string = false,
            (false, _, '"') => in_string = true,
            (false, _, '{' | '[') => stack.push(c),
            (false, _, '}' | ']') => {
                stack.pop();
            }
            _ => {}
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("the documented answer {documented:?} is not JSON: {e}"))
}

/// Whether `actual` has the documented shape: `"..."` is any value, and in any other string
/// each `...` stands for any text; an object without the key `"..."` has exactly the documented keys, an array
/// without the element `"..."` exactly the documented elements; anything else is equal.
fn matches(doc: &Value, actual: &Value) -> Result<(), String> {
    match (doc, actual) {
        (Value::String(d), _) if d == "..." => Ok(()),
        (Value::String(d), Value::String(a)) if d.contains("...") => {
            glob(d, a).ok_or_else(|| format!("{a:?} is not {d:?}"))
        }
        (Value::Object(d), Value::Object(a)) => {
            for (k, v) in d.iter().filter(|(k, _)| *k != "...") {
                let got = a.get(k).ok_or_else(|| format!("no {k:?} in {actual}"))?;
                matches(v, got).map_err(|e| format!("{k}: {e}"))?;
            }
            if !d.contains_key("...") {
                if let Some(extra) = a.keys().find(|k| !d.contains_key(*k)) {
                    return Err(format!("{extra:?} is not documented in {actual}"));
                }
            }
            Ok(())
        }
        (Value::Array(d), Value::Array(a)) => {
            let open = d.last().and_then(Value::as_str) == Some("...");
            let listed = if open { &d[..d.len() - 1] } else { &d[..] };
            if a.len() < listed.len() || !open && a.len() != listed.len() {
                return Err(format!("{} elements, documented {}", a.len(), d.len()));
            }
            for (i, (dv, av)) in listed.iter().zip(a).enumerate() {
                matches(dv, av).map_err(|e| format!("[{i}]: {e}"))?;
            }
            Ok(())
        }
        _ if doc == actual => Ok(()),
        _ => Err(format!("{actual} where the text says {doc}")),
    }
}

/// Whether `actual` is `doc` with each `...` standing for any text.
fn glob(doc: &str, actual: &str) -> Option<()> {
    let mut parts = doc.split("...");
    let first = parts.next().unwrap_or_default();
    let mut rest = actual.strip_prefix(first)?;
    let mut parts: Vec<&str> = parts.collect();
    let last = parts.pop().unwrap_or_default();
    for part in parts {
        let at = rest.find(part)?;
        rest = &rest[at + part.len()..];
    }
    rest.ends_with(last).then_some(())
}

/// The JSON objects, arrays and strings in what a script printed, in order; lines of other
/// text are passed over.
fn printed_values(stdout: &str) -> Vec<Value> {
    let mut values = Vec::new();
    let mut rest = stdout.trim_start();
    while !rest.is_empty() {
        if rest.starts_with(['{', '[', '"']) {
            let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
            if let Some(Ok(v)) = stream.next() {
                values.push(v);
                rest = rest[stream.byte_offset()..].trim_start();
                continue;
            }
        }
        rest = rest.split_once('\n').map_or("", |(_, r)| r).trim_start();
    }
    values
}

/// What a walk printed.
struct Ran {
    /// The script as it ran (the addresses replaced).
    script: String,
    stdout: String,
}

/// Runs `script` in `dir` (where the server's data directory is `data`) against `srv`, with
/// `app` for the documentation's app address. Each line the script prints goes to `step`
/// with the script's standard input, so the test can act where the reader would; the walk
/// must end with status 0 within two minutes.
fn run(
    script: &str,
    dir: &Path,
    srv: &TestServer,
    app: &str,
    mut step: impl FnMut(&str, &mut ChildStdin),
) -> Ran {
    let script = script
        .replace(DOC_SERVER, &srv.base)
        .replace(DOC_APP, app)
        .replace(DOC_BIN, env!("CARGO_BIN_EXE_tessera"));
    // The reader is at the repository's root, where `tessera admin` finds `config.toml` and,
    // through its data directory (`data`, the server's here), the admin socket.
    std::fs::copy(config_file(), dir.join("config.toml")).unwrap();
    // `tessera` on the PATH, as `cargo install` puts it.
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_tessera")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .env("PATH", path)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut printed = String::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                step(&line, &mut stdin);
                printed.push_str(&line);
                printed.push('\n');
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!("the walk did not end in 2 minutes; it printed:\n{printed}");
            }
        }
    }
    drop(stdin);
    let status = child.wait().unwrap();
    let stderr = err.join().unwrap();
    assert!(
        status.success(),
        "the walk failed ({status}):\n{script}\nprinted:\n{printed}\nstderr:\n{stderr}"
    );
    Ran {
        script,
        stdout: printed,
    }
}

/// Every answer the walk's text documents has the shape of the answer printed in its place.
#[track_caller]
fn answers_as_documented(ran: &Ran) {
    let documented = documented_answers(&ran.script);
    let printed = printed_values(&ran.stdout);
    assert_eq!(
        documented.len(),
        printed.len(),
        "the text documents {} answers, the walk printed {}:\n{documented:#?}\n{}",
        documented.len(),
        printed.len(),
        ran.stdout
    );
    for (doc, actual) in documented.iter().zip(&printed) {
        if let Err(e) = matches(&shape(doc), actual) {
            panic!("documented {doc}\nprinted {actual}\n{e}");
        }
    }
}

/// The line a walk prints where the reader opens a link in a browser.
const OPEN_LINK: &str = "Open this link in a browser and press its button:";

/// What the reader does with a link a walk prints: opens it in Chromium (over plain HTTP
/// without it), presses the page's button and follows it to the app. Answers what the reader
/// types next: the `code` of the app's address after a login link, nothing after a
/// confirmation.
struct Reader<'a> {
    srv: &'a TestServer,
    app: String,
    dir: &'a Path,
    opened: usize,
}

impl Reader<'_> {
    fn step(&mut self, line: &str, stdin: &mut ChildStdin) {
        let Some(link) = line.split_once(OPEN_LINK).map(|(_, l)| l.trim()) else {
            return;
        };
        let typed = if chromium_here() {
            let (_driver, ui) = chromium(self.dir);
            self.in_chromium(&ui, link)
        } else {
            self.over_http(link)
        };
        self.opened += 1;
        stdin.write_all(format!("{typed}\n").as_bytes()).unwrap();
    }

    fn in_chromium(&self, ui: &Ui, link: &str) -> String {
        ui.goto("open-link", link);
        ui.expect_text("link-page", "Acme");
        ui.click("press", "button[type=submit]");
        if link.contains("/verify-email?") {
            ui.expect_text("confirmed", "Address confirmed");
            ui.click("back-to-app", &format!("a[href=\"{}/callback\"]", self.app));
            ui.expect_text("app-page", "callback received");
            String::new()
        } else {
            ui.expect_text("app-page", "callback received");
            self.code_in(&ui.url("app-url"))
        }
    }

    fn over_http(&self, link: &str) -> String {
        let mut browser = Browser::new(self.srv);
        let path = link.strip_prefix(&self.srv.base).unwrap();
        let page = browser.get(path, None);
        page.expect(200);
        assert!(page.body.contains("Acme"), "{}", page.body);
        let done = browser.post(path, &[("csrf", &page.csrf_field())]);
        if link.contains("/verify-email?") {
            done.expect(200);
            assert!(done.body.contains("Address confirmed"), "{}", done.body);
            let back = format!("href=\"{}/callback\"", self.app);
            assert!(done.body.contains(&back), "{}", done.body);
            String::new()
        } else {
            done.expect(303);
            self.code_in(done.header("location"))
        }
    }

    /// The `code` of an address of the app's callback.
    fn code_in(&self, url: &str) -> String {
        let prefix = format!("{}/callback?code=", self.app);
        let code = url.strip_prefix(&prefix).unwrap_or_else(|| panic!("{url}"));
        code.split('&').next().unwrap().to_owned()
    }
}

/// The tools the walks call, besides bash.
const TOOLS: [&str; 4] = ["curl", "jq", "openssl", "python3"];

/// Whether the walks' tools are here. Without one a walk says so loudly and is not run,
/// unless `TESSERA_TEST_REQUIRE_TOOLS` is set (`.ci/run` sets it): then it fails.
fn tools_here() -> bool {
    let missing: Vec<&str> = TOOLS
        .into_iter()
        .filter(|t| {
            !Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    crate::support::skip_without(
        &format!("{missing:?}, which the documentation's walks call"),
        "Debian's curl, jq, openssl and python3; .ci/run installs them",
    );
    false
}

/// Runs the walk `script` against a new server with a local app, the reader's browser steps
/// done by [`Reader`]; answers how many links the reader opened.
fn walk(script: &str) -> usize {
    let tmp = tempfile::tempdir().unwrap();
    let srv = TestServer::start_in(&tmp.path().join("data"), &[]);
    let (app, _visits) = start_app("/callback");
    let mut reader = Reader {
        srv: &srv,
        app: app.clone(),
        dir: tmp.path(),
        opened: 0,
    };
    let ran = run(script, tmp.path(), &srv, &app, |line, stdin| {
        reader.step(line, stdin)
    });
    answers_as_documented(&ran);
    reader.opened
}

/// A part of a Markdown file: from a heading up to another (or, without one, to the next
/// heading of the same or a higher level).
type Part = (&'static str, &'static str, Option<&'static str>);

/// The README's quickstart.
const QUICKSTART: [Part; 1] = [(
    "README.md",
    "## Quickstart: from nothing to a signed-in user",
    None,
)];
/// The app developers' walk.
const APP_DEVELOPERS: [Part; 1] = [(
    "docs/app-developers.md",
    "## A walk through, with curl",
    Some("### Your users' rights: export and erasure"),
)];
const DASHBOARD: [Part; 1] = [("docs/dashboard.md", "# The dashboard API", None)];
const WALLET: [Part; 1] = [(
    "docs/wallet.md",
    "# EU wallet sign-in and age verification",
    None,
)];
const MINORS: [Part; 1] = [(
    "docs/minors.md",
    "# Minor protection and guardian consent",
    None,
)];
/// Up to the MCP walk, which is a walk of its own, run by the interop suite.
const OAUTH: [Part; 1] = [(
    "docs/oauth-oidc-mcp.md",
    "# OAuth, OpenID Connect, agents and MCP",
    Some("## Protect an MCP server with Tessera"),
)];
const OPERATORS: [Part; 1] = [(
    "docs/operators.md",
    "## Backup and restore",
    Some("## The SDK support policy"),
)];
const WEBHOOKS: [Part; 1] = [("docs/webhooks.md", "# Webhooks", None)];

/// The `sh` blocks no walk here runs, and why.
const ELSEWHERE: [(Part, &str); 3] = [
    (
        ("README.md", "## Two commands on a fresh machine", None),
        "the commands that build, serve and test",
    ),
    (
        ("docs/testing.md", "## Running the tests", None),
        "the test command itself",
    ),
    (
        (
            "docs/oauth-oidc-mcp.md",
            "## Protect an MCP server with Tessera",
            None,
        ),
        "the MCP walk, run by the interop suite (interop/test/mcp.test.mjs)",
    ),
];

/// The `sh` blocks of `parts`, in order, as one script.
fn script_of(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|(file, from, until)| sh_blocks_until(file, from, *until))
        .collect()
}

/// Runs the walk of `parts` (unless its tools are missing) and checks how many links the
/// reader opened.
fn walk_parts(parts: &[Part], links: usize) {
    if !tools_here() {
        return;
    }
    assert_eq!(walk(&script_of(parts)), links, "links the reader opens");
}

#[test]
fn the_readme_quickstart_signs_a_user_in() {
    walk_parts(&QUICKSTART, 1);
}

#[test]
fn the_app_developers_walk_runs_as_documented() {
    walk_parts(&APP_DEVELOPERS, 1);
}

#[test]
fn the_dashboard_walk_runs_as_documented() {
    walk_parts(&DASHBOARD, 0);
}

#[test]
fn the_wallet_walk_runs_as_documented() {
    walk_parts(&WALLET, 0);
}

#[test]
fn the_minors_walk_runs_as_documented() {
    walk_parts(&MINORS, 0);
}

#[test]
fn the_oauth_walk_runs_as_documented() {
    walk_parts(&OAUTH, 0);
}

#[test]
fn the_operators_walk_runs_as_documented() {
    walk_parts(&OPERATORS, 0);
}

#[test]
fn the_webhooks_walk_runs_as_documented() {
    walk_parts(&WEBHOOKS, 0);
}

/// Every `sh` block of the README and of `docs/` is run by a walk above, or named in
/// [`ELSEWHERE`] with the reason: a new block cannot slip past the tests.
#[test]
fn every_shell_block_of_the_documentation_is_run_somewhere() {
    let walks = [
        &QUICKSTART[..],
        &APP_DEVELOPERS,
        &DASHBOARD,
        &WALLET,
        &MINORS,
        &OAUTH,
        &OPERATORS,
        &WEBHOOKS,
    ];
    let mut covered: String = walks.iter().map(|parts| script_of(parts)).collect();
    for (part, _why) in ELSEWHERE {
        covered.push_str(&script_of(&[part]));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        // The documents, not their pictures.
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let mut orphans = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut block: Option<String> = None;
        for line in text.lines() {
            match &mut block {
                None if line == "```sh" => block = Some(String::new()),
                Some(b) if line.starts_with("```") => {
                    if !covered.contains(b.as_str()) {
                        orphans.push(format!("{}:\n{b}", path.display()));
                    }
                    block = None;
                }
                Some(b) => {
                    b.push_str(line);
                    b.push('\n');
                }
                None => {}
            }
        }
    }
    assert!(
        orphans.is_empty(),
        "sh blocks no walk runs (add them to a walk, or to ELSEWHERE with the reason):\n{}",
        orphans.join("\n")
    );
}

#[test]
fn documented_shapes_are_read_and_compared() {
    let script =
        "curl x\n# {\"a\": \"tsk_...\", \"b\": [1, ...], \"n\": ...,\n#   ...}\necho\n# [\"x\"]\n";
    let answers = documented_answers(script);
    assert_eq!(answers.len(), 2, "{answers:?}");
    let doc = shape(&answers[0]);
    let ok: Value = serde_json::json!({"a": "tsk_1", "b": [1, 2], "n": 0.4, "c": true});
    assert_eq!(matches(&doc, &ok), Ok(()));
    let wrong_prefix = serde_json::json!({"a": "x", "b": [1], "n": 1});
    assert!(matches(&doc, &wrong_prefix).is_err());
    let missing = serde_json::json!({"b": [1], "n": 1});
    assert!(matches(&doc, &missing).is_err());
    assert_eq!(glob("a...c...e", "abcde"), Some(()));
    assert_eq!(glob("a...c...e", "abcd"), None);
    assert_eq!(glob("tsk_...", "tsk_"), Some(()));
    let closed = shape(&answers[1]);
    assert!(matches(&closed, &serde_json::json!(["x", "y"])).is_err());
    assert_eq!(matches(&closed, &serde_json::json!(["x"])), Ok(()));
    let printed = printed_values("{\"a\":1}Open this\n[1,\n 2]\ntext {\n{\"b\":2}");
    assert_eq!(
        printed,
        vec![
            serde_json::json!({"a": 1}),
            serde_json::json!([1, 2]),
            serde_json::json!({"b": 2})
        ]
    );
}
