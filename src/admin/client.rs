//! `tessera admin ...`: sends one command over the socket, prints the JSON answer on stdout
//! (exit 0) or the error on stderr (exit 1).

use std::{
    io::{BufRead, BufReader, Write},
    os::unix::net::UnixStream,
    path::Path,
    time::Duration,
};

use tessera_actors::tenant::import::{ImportOutcome, MAX_IMPORT_BATCH};

use super::protocol::{AdminRequest, AdminResponse, ImportLine};

/// Runs one command; returns the process exit code.
pub fn run(socket: &Path, req: &AdminRequest) -> i32 {
    match exchange(socket, req) {
        Ok(resp) if resp.ok => {
            let out = resp.result.unwrap_or(serde_json::Value::Null);
            match serde_json::to_string_pretty(&out) {
                Ok(s) => {
                    println!("{s}");
                    0
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    1
                }
            }
        }
        Ok(resp) => {
            match resp.error {
                Some(e) => {
                    let details = e.details.map(|d| format!(" {d}")).unwrap_or_default();
                    eprintln!("error: {} ({}){details}", e.message, e.code);
                }
                None => eprintln!("error: the server answered without a result"),
            }
            1
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// Largest batch sent in one request: well under the socket's 64 KiB line limit.
const IMPORT_BATCH_BYTES: usize = 48 * 1024;

/// `tessera admin user import`: reads JSON Lines from `input`, checks each line's shape, then
/// sends them in batches (each written whole or not at all). Prints the totals; on an error,
/// says which lines the failed batch held and how many were imported before it.
pub fn import(socket: &Path, tenant: &str, input: impl BufRead) -> i32 {
    let mut lines = Vec::new();
    for (n, line) in input.lines().enumerate() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: reading line {}: {e}", n + 1);
                return 2;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<ImportLine>(&line) {
            Ok(user) => lines.push((n + 1, line.len(), user)),
            Err(e) => {
                eprintln!("error: line {}: {e}", n + 1);
                return 2;
            }
        }
    }
    let mut totals = ImportOutcome::default();
    let mut rest = lines.as_slice();
    while !rest.is_empty() {
        let mut bytes = 0;
        let take = rest
            .iter()
            .take(MAX_IMPORT_BATCH)
            .take_while(|(_, len, _)| {
                bytes += len + 1;
                bytes <= IMPORT_BATCH_BYTES
            })
            .count()
            .max(1);
        let (batch, after) = rest.split_at(take);
        let first = batch.first().map_or(0, |b| b.0);
        let last = batch.last().map_or(0, |b| b.0);
        let req = AdminRequest::UserImport {
            tenant: tenant.to_owned(),
            users: batch.iter().map(|(_, _, u)| u.clone()).collect(),
        };
        let failed = |msg: String| {
            eprintln!(
                "error: lines {first}-{last}: {msg}; {} users were imported before them (running the import again skips them)",
                totals.imported
            );
            1
        };
        match exchange(socket, &req) {
            Ok(resp) if resp.ok => {
                let outcome = resp
                    .result
                    .and_then(|v| serde_json::from_value::<ImportOutcome>(v).ok());
                let Some(outcome) = outcome else {
                    return failed("the server answered without a result".into());
                };
                totals.imported += outcome.imported;
                totals.skipped_existing += outcome.skipped_existing;
            }
            Ok(resp) => {
                let msg = resp.error.map_or_else(
                    || "the server answered without a result".to_owned(),
                    |e| {
                        let details = e.details.map(|d| format!(" {d}")).unwrap_or_default();
                        format!("{} ({}){details}", e.message, e.code)
                    },
                );
                return failed(msg);
            }
            Err(e) => return failed(e),
        }
        rest = after;
    }
    match serde_json::to_string_pretty(&totals) {
        Ok(s) => {
            println!("{s}");
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

fn exchange(socket: &Path, req: &AdminRequest) -> Result<AdminResponse, String> {
    let mut stream = UnixStream::connect(socket).map_err(|e| {
        format!(
            "cannot connect to the admin socket {}: {e} (is `tessera serve` running on this data directory?)",
            socket.display()
        )
    })?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    let mut line = serde_json::to_vec(req).map_err(|e| e.to_string())?;
    line.push(b'\n');
    stream.write_all(&line).map_err(|e| e.to_string())?;
    let mut answer = String::new();
    BufReader::new(stream)
        .read_line(&mut answer)
        .map_err(|e| format!("reading the answer: {e}"))?;
    serde_json::from_str(&answer).map_err(|e| format!("unreadable answer: {e}"))
}
