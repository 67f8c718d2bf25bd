//! `tessera admin ...`: sends one command over the socket, prints the JSON answer on stdout
//! (exit 0) or the error on stderr (exit 1).

use std::{
    io::{BufRead, BufReader, Write},
    os::unix::net::UnixStream,
    path::Path,
    time::Duration,
};

use super::protocol::{AdminRequest, AdminResponse};

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
