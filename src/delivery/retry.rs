//! The one retry loop of outbound delivery, used by the postman (mail) and the courier (text
//! messages): each attempt holds a permit of the channel's semaphore (so at most that many
//! sends are under way), a permanent failure ends the job at once, a transient one waits its
//! turn in the [`Backoff`] schedule (unless delivery is stopping), and the schedule's last
//! attempt gives up. Log lines carry the job id, its kind and the attempt, and the failure as
//! the channel's error type describes it (never an address, a number or a message's content).

use std::{fmt::Display, future::Future, sync::Arc, time::Duration};

use tokio::sync::{watch, Semaphore};
use uuid::Uuid;

/// A retry schedule: the wait after the first failed attempt, doubling up to `cap`, for
/// `attempts` attempts in all (the first included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    pub first: Duration,
    pub cap: Duration,
    pub attempts: u32,
}

impl Backoff {
    /// The wait after failed attempt `attempt` (1 for the first), or `None` when it was the
    /// last one.
    pub fn delay(&self, attempt: u32) -> Option<Duration> {
        if attempt >= self.attempts {
            return None;
        }
        let factor = 1u32
            .checked_shl(attempt.saturating_sub(1))
            .unwrap_or(u32::MAX);
        Some(self.first.saturating_mul(factor).min(self.cap))
    }
}

/// The failure of one attempt: whether sending again would fail the same way. Its `Display`
/// is what the log says, so it must not quote an address, a number or the content.
pub trait Failure: Display {
    fn is_permanent(&self) -> bool;
}

/// How a job's delivery ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Delivered,
    /// A permanent failure: not tried again.
    Refused,
    /// The schedule's last attempt failed.
    GaveUp,
    /// Delivery stopped while the job waited for its next attempt.
    Stopped,
}

/// What a channel's log lines say.
pub struct Words {
    pub delivered: &'static str,
    pub refused: &'static str,
    pub gave_up: &'static str,
    pub will_retry: &'static str,
    pub stopped: &'static str,
}

/// One job to deliver: its id and kind for the logs.
pub struct Job {
    pub id: Uuid,
    pub kind: &'static str,
}

/// One channel's way of delivering: how many sends at once (`permits`), the schedule, the
/// signal that delivery is stopping, and what its log lines say. Cloned into each job's task.
#[derive(Clone)]
pub struct Lane {
    pub permits: Arc<Semaphore>,
    pub backoff: Backoff,
    pub stop: watch::Receiver<bool>,
    pub words: &'static Words,
}

impl Lane {
    /// A lane of `concurrency` sends at once; answers it and the sender that stops it.
    pub fn new(
        concurrency: usize,
        backoff: Backoff,
        words: &'static Words,
    ) -> (Self, watch::Sender<bool>) {
        let (stopping, stop) = watch::channel(false);
        let lane = Lane {
            permits: Arc::new(Semaphore::new(concurrency)),
            backoff,
            stop,
            words,
        };
        (lane, stopping)
    }
}

/// Attempts `send` for `job` until it is delivered, fails permanently, or the lane's schedule
/// ends; each attempt holds one of the lane's permits, and a wait between attempts ends early
/// when the lane stops.
pub async fn deliver<E, Fut>(job: Job, lane: Lane, mut send: impl FnMut() -> Fut) -> Outcome
where
    E: Failure,
    Fut: Future<Output = Result<(), E>>,
{
    let Lane {
        permits,
        backoff,
        mut stop,
        words,
    } = lane;
    let Job { id, kind } = job;
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let result = {
            // The semaphore is never closed; should it be, the job stays queued.
            let Ok(_permit) = permits.acquire().await else {
                return Outcome::Stopped;
            };
            send().await
        };
        let error = match result {
            Ok(()) => {
                tracing::info!(job = %id, kind, attempt, "{}", words.delivered);
                return Outcome::Delivered;
            }
            Err(e) if e.is_permanent() => {
                tracing::warn!(job = %id, kind, attempt, error = %e, "{}", words.refused);
                return Outcome::Refused;
            }
            Err(e) => e,
        };
        let Some(wait) = backoff.delay(attempt) else {
            tracing::warn!(job = %id, kind, attempt, error = %error, "{}", words.gave_up);
            return Outcome::GaveUp;
        };
        tracing::info!(
            job = %id,
            kind,
            attempt,
            error = %error,
            retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            "{}",
            words.will_retry
        );
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|stopping| *stopping) => {
                tracing::info!(job = %id, kind, "{}", words.stopped);
                return Outcome::Stopped;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_from_the_first_up_to_the_cap_until_the_last_attempt() {
        let b = Backoff {
            first: Duration::from_millis(100),
            cap: Duration::from_millis(500),
            attempts: 6,
        };
        let waits: Vec<_> = (1..=7).map(|a| b.delay(a).map(|d| d.as_millis())).collect();
        assert_eq!(
            waits,
            vec![
                Some(100),
                Some(200),
                Some(400),
                Some(500),
                Some(500),
                None,
                None
            ]
        );
        let one = Backoff { attempts: 1, ..b };
        assert_eq!(one.delay(1), None);
    }

    #[test]
    fn a_huge_attempt_number_saturates_at_the_cap() {
        let b = Backoff {
            first: Duration::from_secs(1),
            cap: Duration::from_secs(300),
            attempts: u32::MAX,
        };
        assert_eq!(b.delay(40), Some(Duration::from_secs(300)));
        assert_eq!(b.delay(u32::MAX - 1), Some(Duration::from_secs(300)));
    }
}
