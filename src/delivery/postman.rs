//! The postman: delivers the [`MailJob`]s tenant actors submit through
//! [`tessera_actors::outbound::ChannelOutbound`], and reports each outcome back.
//!
//! Tenant actors persist every job before submitting it and resubmit their whole queue after a
//! restart, so delivery is at least once and the postman keeps nothing on disk. What it does:
//!
//! - ignores a job whose id is already in flight (a resubmitted queue would otherwise send the
//!   same message twice at once): the jobs in flight are its [`Backlog`], which the metrics
//!   read;
//! - sends at most [`CONCURRENCY`] messages at a time, so a burst of sign-ups cannot open
//!   hundreds of SMTP connections;
//! - retries transient failures with exponential backoff (1 s, 2 s, 4 s ... at most 5 min
//!   apart, for about a day: as long as a verification link lives), each job on its own task,
//!   so one failing message never delays the others and an SMTP outage loses nothing;
//! - reports through [`Settle`]: delivered, or given up (permanent failure or last attempt).
//!
//! When the channel closes, jobs waiting for a retry stop without being settled: they stay in
//! their tenant's queue and are submitted again at the next start. At shutdown the server
//! aborts the postman: a message cut off mid-send stays queued and may be sent twice (its
//! Message-ID is stable, so receivers can fold the copies).
//!
//! Logs carry the job id, its kind and the attempt, never the address or the link.

use std::{sync::Arc, time::Duration};

use tessera_actors::outbound::{MailJob, Withdrawn};
use tokio::{sync::mpsc::UnboundedReceiver, task::JoinSet};

use super::{
    backlog::{Backlog, Entry},
    mail::{Mailer, SendError},
    retry::{self, Backoff, Job, Lane, Outcome, Words},
};

/// Messages sent at the same time, at most.
pub const CONCURRENCY: usize = 8;

/// Where outcomes go: in the server, a message to the job's tenant actor, which removes the
/// job from its queue. Called from a delivery task, so it must return quickly (a channel send
/// or an actor cast, not a storage write awaited here).
pub trait Settle: Send + Sync + 'static {
    /// `delivered` is true when the transport accepted the message, false when the postman
    /// gave up on it.
    fn settled(&self, job: &MailJob, delivered: bool);
}

/// 1 s, 2 s, 4 s ... capped at 5 minutes; 295 attempts: 8 doubling waits (511 s), then 286
/// of 5 minutes, about 24 hours in all.
const BACKOFF: Backoff = Backoff {
    first: Duration::from_secs(1),
    cap: Duration::from_secs(5 * 60),
    attempts: 295,
};

/// Delivers jobs from `rx` until it closes, then returns once the sends under way are done.
/// A message in `withdrawn` is not attempted again (it settles undelivered). `in_flight`
/// holds each job from its arrival until its task ends.
pub async fn run(
    mailer: Arc<Mailer>,
    rx: UnboundedReceiver<MailJob>,
    settle: Arc<dyn Settle>,
    withdrawn: Withdrawn,
    in_flight: Backlog,
) {
    run_with(mailer, rx, settle, BACKOFF, withdrawn, in_flight).await;
}

async fn run_with(
    mailer: Arc<Mailer>,
    mut rx: UnboundedReceiver<MailJob>,
    settle: Arc<dyn Settle>,
    backoff: Backoff,
    withdrawn: Withdrawn,
    in_flight: Backlog,
) {
    // `stopping` is flipped when the channel closes: it tells tasks waiting for a retry to
    // stop.
    let (lane, stopping) = Lane::new(CONCURRENCY, backoff, &WORDS);
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            job = rx.recv() => {
                let Some(job) = job else { break };
                // Held until the task ends, however it ends: a later submission of the same
                // job is then sent again.
                let Some(entry) = in_flight.enter(job.id) else {
                    tracing::debug!(job = %job.id, kind = job.kind.name(), "already in flight");
                    continue;
                };
                tasks.spawn(deliver(
                    job,
                    mailer.clone(),
                    settle.clone(),
                    lane.clone(),
                    withdrawn.clone(),
                    entry,
                ));
            }
            Some(done) = tasks.join_next() => failed(done),
        }
    }
    let _ = stopping.send(true);
    while let Some(done) = tasks.join_next().await {
        failed(done);
    }
    tracing::info!("mail delivery stopped");
}

/// Logs a delivery task that panicked. Only a panicking `Settle` can get here; the job stays
/// in its tenant's queue and comes back with the next restart of that tenant.
fn failed(done: Result<(), tokio::task::JoinError>) {
    if let Err(e) = done {
        tracing::error!(error = %e, "a mail delivery task failed");
    }
}

/// What the postman's log lines say.
const WORDS: Words = Words {
    delivered: "mail delivered",
    refused: "mail refused; not retrying",
    gave_up: "mail not delivered; giving up",
    will_retry: "mail not delivered yet; will retry",
    stopped: "stopping; the message stays queued",
};

/// Delivers one job (see [`retry::deliver`]) and settles it, unless delivery stopped first;
/// `_entry` keeps it in the postman's backlog meanwhile.
async fn deliver(
    job: MailJob,
    mailer: Arc<Mailer>,
    settle: Arc<dyn Settle>,
    lane: Lane,
    withdrawn: Withdrawn,
    _entry: Entry,
) {
    let which = Job {
        id: job.id,
        kind: job.kind.name(),
    };
    let attempt = || async {
        if withdrawn.take(job.id) {
            return Err(SendError::Permanent(
                "the message was withdrawn (its account was erased)".into(),
            ));
        }
        mailer.send_job(&job).await
    };
    match retry::deliver(which, lane, attempt).await {
        Outcome::Delivered => settle.settled(&job, true),
        Outcome::Refused | Outcome::GaveUp => settle.settled(&job, false),
        Outcome::Stopped => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::{
        collections::VecDeque,
        sync::{
            atomic::{AtomicUsize, Ordering},
            Mutex,
        },
    };

    use tessera_actors::outbound::MailKind;
    use tessera_storage::TenantId;
    use tokio::{
        io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
        net::TcpListener,
        sync::{mpsc, Notify},
    };
    use uuid::Uuid;

    use super::*;
    use crate::config::{Config, Overrides};

    #[test]
    fn the_backoff_doubles_from_one_second_caps_at_five_minutes_and_lasts_a_day() {
        let waits: Vec<Option<u64>> = (1..=10)
            .map(|a| BACKOFF.delay(a).map(|d| d.as_secs()))
            .collect();
        assert_eq!(
            waits,
            vec![
                Some(1),
                Some(2),
                Some(4),
                Some(8),
                Some(16),
                Some(32),
                Some(64),
                Some(128),
                Some(256),
                Some(300)
            ]
        );
        assert_eq!(BACKOFF.delay(294), Some(Duration::from_secs(300)));
        assert_eq!(BACKOFF.delay(295), None);
        let total: u64 = (1..BACKOFF.attempts)
            .filter_map(|a| BACKOFF.delay(a))
            .map(|d| d.as_secs())
            .sum();
        assert!((23 * 3600..=25 * 3600).contains(&total), "{total}");
    }

    /// A scripted SMTP server: each transaction's RCPT gets the next scripted reply (then
    /// `250`); each accepted DATA is kept.
    struct Stub {
        port: u16,
        rcpts: Arc<AtomicUsize>,
        messages: Arc<Mutex<Vec<String>>>,
        busy: Arc<AtomicUsize>,
        max_busy: Arc<AtomicUsize>,
        seen: Arc<Notify>,
    }

    impl Stub {
        async fn start(script: &[&'static str], data_delay: Duration) -> Stub {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let script = Arc::new(Mutex::new(
                script.iter().copied().collect::<VecDeque<&str>>(),
            ));
            let stub = Stub {
                port,
                rcpts: Arc::default(),
                messages: Arc::default(),
                busy: Arc::default(),
                max_busy: Arc::default(),
                seen: Arc::default(),
            };
            let (rcpts, messages, busy, max_busy, seen) = (
                stub.rcpts.clone(),
                stub.messages.clone(),
                stub.busy.clone(),
                stub.max_busy.clone(),
                stub.seen.clone(),
            );
            tokio::spawn(async move {
                loop {
                    let (stream, _) = listener.accept().await.unwrap();
                    let (script, rcpts, messages, busy, max_busy, seen) = (
                        script.clone(),
                        rcpts.clone(),
                        messages.clone(),
                        busy.clone(),
                        max_busy.clone(),
                        seen.clone(),
                    );
                    tokio::spawn(async move {
                        let (read, mut write) = stream.into_split();
                        let mut lines = BufReader::new(read).lines();
                        write.write_all(b"220 stub ESMTP\r\n").await.unwrap();
                        while let Ok(Some(line)) = lines.next_line().await {
                            let cmd = line.to_ascii_uppercase();
                            let reply: String = if cmd.starts_with("EHLO") {
                                "250-stub\r\n250 8BITMIME".into()
                            } else if cmd.starts_with("RCPT") {
                                rcpts.fetch_add(1, Ordering::SeqCst);
                                seen.notify_waiters();
                                script
                                    .lock()
                                    .unwrap()
                                    .pop_front()
                                    .unwrap_or("250 ok")
                                    .into()
                            } else if cmd.starts_with("DATA") {
                                let now = busy.fetch_add(1, Ordering::SeqCst) + 1;
                                max_busy.fetch_max(now, Ordering::SeqCst);
                                write.write_all(b"354 go ahead\r\n").await.unwrap();
                                let mut data = String::new();
                                while let Ok(Some(l)) = lines.next_line().await {
                                    if l == "." {
                                        break;
                                    }
                                    data.push_str(&l);
                                    data.push_str("\r\n");
                                }
                                tokio::time::sleep(data_delay).await;
                                messages.lock().unwrap().push(data);
                                busy.fetch_sub(1, Ordering::SeqCst);
                                "250 queued".into()
                            } else if cmd.starts_with("QUIT") {
                                let _ = write.write_all(b"221 bye\r\n").await;
                                return;
                            } else {
                                "250 ok".into()
                            };
                            if write
                                .write_all(format!("{reply}\r\n").as_bytes())
                                .await
                                .is_err()
                            {
                                return;
                            }
                        }
                    });
                }
            });
            stub
        }

        fn mailer(&self) -> Arc<Mailer> {
            let config = Config::from_toml_str(
                &format!(
                    "[mail]\ntransport = \"smtp\"\n[mail.smtp]\nhost = \"127.0.0.1\"\n\
                     port = {}\ntls = \"none\"\n",
                    self.port
                ),
                &Overrides::default(),
            )
            .unwrap();
            Arc::new(Mailer::from_config(&config).unwrap())
        }
    }

    /// Records outcomes and wakes the test on each.
    #[derive(Default)]
    struct Recorder {
        outcomes: Mutex<Vec<(Uuid, bool)>>,
        changed: Notify,
    }

    impl Settle for Recorder {
        fn settled(&self, job: &MailJob, delivered: bool) {
            self.outcomes.lock().unwrap().push((job.id, delivered));
            self.changed.notify_waiters();
        }
    }

    impl Recorder {
        async fn wait_for(&self, n: usize) -> Vec<(Uuid, bool)> {
            tokio::time::timeout(Duration::from_secs(20), async {
                loop {
                    let notified = self.changed.notified();
                    {
                        let o = self.outcomes.lock().unwrap();
                        if o.len() >= n {
                            return o.clone();
                        }
                    }
                    notified.await;
                }
            })
            .await
            .expect("jobs settled in time")
        }
    }

    fn job(to: &str, link: &str) -> MailJob {
        MailJob {
            id: Uuid::now_v7(),
            tenant: TenantId::new(),
            tenant_slug: "acme".into(),
            tenant_name: "Acme".into(),
            to: to.into(),
            locale: "en".into(),
            kind: MailKind::PasswordReset { link: link.into() },
        }
    }

    const FAST: Backoff = Backoff {
        first: Duration::from_millis(20),
        cap: Duration::from_millis(100),
        attempts: 10,
    };

    /// A postman sending through `stub`, each job's outcome recorded: the recorder, the
    /// sender of its jobs (dropping it stops the postman) and the postman's task.
    fn start_postman(
        stub: &Stub,
        backoff: Backoff,
        in_flight: Backlog,
    ) -> (
        Arc<Recorder>,
        mpsc::UnboundedSender<MailJob>,
        tokio::task::JoinHandle<()>,
    ) {
        let recorder = Arc::new(Recorder::default());
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(run_with(
            stub.mailer(),
            rx,
            recorder.clone(),
            backoff,
            Withdrawn::default(),
            in_flight,
        ));
        (recorder, tx, task)
    }

    /// Log lines written while the test runs (current-thread runtime: every task logs on
    /// this thread).
    #[derive(Clone, Default)]
    struct Logs(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Logs {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Logs {
        fn capture(&self) -> tracing::subscriber::DefaultGuard {
            let logs = self.clone();
            let subscriber = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_ansi(false)
                .with_writer(move || logs.clone())
                .finish();
            tracing::subscriber::set_default(subscriber)
        }

        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
        }
    }

    #[tokio::test]
    async fn a_transient_refusal_is_retried_then_delivered_once() {
        let logs = Logs::default();
        let _guard = logs.capture();
        let stub = Stub::start(&["451 4.3.0 try again later"], Duration::ZERO).await;
        let (recorder, tx, postman) = start_postman(&stub, FAST, Backlog::default());

        let link = format!(
            "https://accounts.example.com/t/acme/reset?token={}",
            "Tok3n_-".repeat(15)
        );
        let j = job("secret.user@example.com", &link);
        tx.send(j.clone()).unwrap();
        // The same job again while it waits for its retry: ignored.
        tx.send(j.clone()).unwrap();

        let outcomes = recorder.wait_for(1).await;
        assert_eq!(outcomes, vec![(j.id, true)]);
        assert_eq!(
            stub.rcpts.load(Ordering::SeqCst),
            2,
            "one refusal, one success"
        );
        let messages = stub.messages.lock().unwrap().clone();
        assert_eq!(messages.len(), 1);
        let data = &messages[0];
        assert!(data.contains("X-Tessera-Tenant: acme\r\n"), "{data}");
        assert!(data.contains("X-Tessera-Kind: password_reset\r\n"));
        assert!(data.contains("multipart/alternative"));
        // Verbatim and alone on its line: no quoted-printable wrapping or `=3D`.
        assert!(data.contains(&format!("\r\n{link}\r\n")), "{data}");

        drop(tx);
        tokio::time::timeout(Duration::from_secs(10), postman)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(recorder.outcomes.lock().unwrap().len(), 1);
        let logs = logs.text();
        assert!(logs.contains(&j.id.to_string()), "{logs}");
        assert!(logs.contains("451"), "{logs}");
        assert!(!logs.contains("secret.user"), "{logs}");
        assert!(!logs.contains("Tok3n"), "{logs}");
    }

    #[tokio::test]
    async fn a_permanent_refusal_settles_undelivered_after_one_attempt() {
        let logs = Logs::default();
        let _guard = logs.capture();
        // Servers quote the recipient in their reply; it must not reach the log.
        let stub = Stub::start(
            &["550 5.1.1 <gone.user@example.com>: no such user"],
            Duration::ZERO,
        )
        .await;
        let (recorder, tx, postman) = start_postman(&stub, FAST, Backlog::default());

        let j = job("gone.user@example.com", "https://a.example.com/r?token=abc");
        tx.send(j.clone()).unwrap();
        assert_eq!(recorder.wait_for(1).await, vec![(j.id, false)]);
        // Past a retry's wait: still one attempt.
        tokio::time::sleep(FAST.first * 3).await;
        assert_eq!(stub.rcpts.load(Ordering::SeqCst), 1);
        assert!(stub.messages.lock().unwrap().is_empty());

        drop(tx);
        postman.await.unwrap();
        let logs = logs.text();
        assert!(logs.contains(&j.id.to_string()), "{logs}");
        assert!(logs.contains("password_reset"), "{logs}");
        assert!(logs.contains("550"), "{logs}");
        assert!(!logs.contains("gone.user"), "{logs}");
        assert!(!logs.contains("token"), "{logs}");
    }

    #[tokio::test]
    async fn the_last_transient_failure_settles_undelivered() {
        let stub = Stub::start(&["421 busy"; 3], Duration::ZERO).await;
        let three = Backoff {
            attempts: 3,
            ..FAST
        };
        let (recorder, tx, postman) = start_postman(&stub, three, Backlog::default());
        let j = job("u@example.com", "https://a.example.com/r?token=abc");
        tx.send(j.clone()).unwrap();
        assert_eq!(recorder.wait_for(1).await, vec![(j.id, false)]);
        assert_eq!(stub.rcpts.load(Ordering::SeqCst), 3);
        drop(tx);
        postman.await.unwrap();
    }

    #[tokio::test]
    async fn a_retrying_job_does_not_hold_up_others_and_stops_at_shutdown() {
        let stub = Stub::start(&["451 later"], Duration::ZERO).await;
        // A retry far in the future.
        let slow = Backoff {
            first: Duration::from_secs(600),
            cap: Duration::from_secs(600),
            attempts: 10,
        };
        let in_flight = Backlog::default();
        let (recorder, tx, postman) = start_postman(&stub, slow, in_flight.clone());

        let waiting = job("a@example.com", "https://a.example.com/r?token=a");
        let seen = stub.seen.notified();
        tx.send(waiting.clone()).unwrap();
        seen.await;
        let other = job("b@example.com", "https://a.example.com/r?token=b");
        tx.send(other.clone()).unwrap();
        assert_eq!(recorder.wait_for(1).await, vec![(other.id, true)]);
        // The delivered job has left the backlog (its task ended right after settling it);
        // the waiting one is still there, counted once though it was sent twice.
        tx.send(waiting.clone()).unwrap();
        tokio::time::timeout(Duration::from_secs(10), async {
            while in_flight.depth(std::time::SystemTime::now()).messages != 1 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("only the waiting job is held");

        // Closing the channel ends the wait at once; the waiting job is not settled (its
        // tenant keeps it queued for the next start).
        drop(tx);
        tokio::time::timeout(Duration::from_secs(10), postman)
            .await
            .expect("the postman stops without waiting for the retry")
            .unwrap();
        assert_eq!(recorder.outcomes.lock().unwrap().len(), 1);
        assert_eq!(in_flight.depth(std::time::SystemTime::now()).messages, 0);
    }

    #[tokio::test]
    async fn at_most_eight_messages_are_sent_at_once() {
        let stub = Stub::start(&[], Duration::from_millis(100)).await;
        let (recorder, tx, postman) = start_postman(&stub, FAST, Backlog::default());
        for i in 0..20 {
            tx.send(job(
                &format!("u{i}@example.com"),
                "https://a.example.com/?token=x",
            ))
            .unwrap();
        }
        let outcomes = recorder.wait_for(20).await;
        assert!(outcomes.iter().all(|(_, delivered)| *delivered));
        let max = stub.max_busy.load(Ordering::SeqCst);
        assert!((2..=CONCURRENCY).contains(&max), "{max} at once");
        drop(tx);
        postman.await.unwrap();
    }
}
