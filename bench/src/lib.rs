//! Shared pieces of the benchmark programs (`ceilings`, `probe`, `seed`, `passkeys`): the error
//! type and latency statistics (the software WebAuthn authenticator and the test wallet they
//! drive are `tessera-testkit`'s). The programs print one JSON document on stdout;
//! `bench/run.sh` reads it.

use std::{path::Path, time::Duration};

use serde_json::Value;

/// Any failure of a benchmark program: printed on stderr, exit status 1.
pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, Error>;

/// Runs a program's async body on a one-thread runtime: its JSON answer on stdout (exit 0), or
/// the error on stderr, prefixed with the program's name (exit 1).
pub fn main_with<F>(name: &str, body: F) -> std::process::ExitCode
where
    F: std::future::Future<Output = Result<serde_json::Value>>,
{
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::from)
        .and_then(|runtime| runtime.block_on(body));
    match outcome {
        Ok(out) => {
            println!("{out}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Nearest-rank percentile (`q` in 0..=1) of `sorted` (ascending); `None` when empty.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

/// Latency figures of a set of samples, in milliseconds.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct LatencySummary {
    pub count: usize,
    pub mean_ms: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

impl LatencySummary {
    pub fn of(samples: &[Duration]) -> Self {
        let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        let mean = (!ms.is_empty()).then(|| ms.iter().sum::<f64>() / ms.len() as f64);
        LatencySummary {
            count: ms.len(),
            mean_ms: mean.map(round3),
            p50_ms: percentile(&ms, 0.50).map(round3),
            p90_ms: percentile(&ms, 0.90).map(round3),
            p99_ms: percentile(&ms, 0.99).map(round3),
            max_ms: ms.last().copied().map(round3),
        }
    }
}

/// Three decimals: enough for milliseconds, short in JSON.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The tab-separated fields of every non-empty line, each line with at least `min` fields.
pub fn read_rows(path: &Path, min: usize) -> Result<Vec<Vec<String>>> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let row: Vec<String> = line.split('\t').map(str::to_owned).collect();
        if row.len() < min {
            return Err(format!(
                "{}:{}: expected {min} tab-separated fields",
                path.display(),
                i + 1
            )
            .into());
        }
        rows.push(row);
    }
    Ok(rows)
}

pub fn field(row: &[String], i: usize) -> Result<&str> {
    row.get(i)
        .map(String::as_str)
        .ok_or_else(|| "missing field".into())
}

/// A client address of its own for request `n` (198.18.0.0/15 is for benchmarks), so the
/// per-address limits on registration never bite.
pub fn client_ip(n: usize) -> String {
    format!(
        "198.{}.{}.{}",
        18 + (n / 62500) % 2,
        (n / 250) % 250,
        n % 250 + 1
    )
}

/// Sends `req` and answers its body (JSON, or the text as a string) when the status is `want`;
/// otherwise an error naming `what`.
pub async fn call(what: String, want: u16, req: reqwest::RequestBuilder) -> Result<Value> {
    let resp = req.send().await?;
    let status = resp.status().as_u16();
    let text = resp.text().await?;
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    if status == want {
        Ok(body)
    } else {
        Err(format!("{what}: expected {want}, got {status}: {body}").into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), Some(50.0));
        assert_eq!(percentile(&v, 0.99), Some(99.0));
        assert_eq!(percentile(&v, 1.0), Some(100.0));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&[7.0], 0.99), Some(7.0));
    }
}
