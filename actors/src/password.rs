//! Argon2id password hashing, always off the actors and the async workers.
//!
//! Hashing runs on a pool of its own (one thread per core unless configured), so a burst of
//! logins never takes the async workers' threads. The pool's threads run at a lower scheduling
//! priority (nice 9): when the cores are contended, the cheap requests (token checks,
//! refreshes, a 503) go first and argon2 takes the rest, instead of every request waiting
//! behind a 25 ms hash.
//!
//! Two bounded queues feed it. Checks of existing passwords (logins, step-ups,
//! re-authentications: [`PasswordHasher::verify`]) have one, and a thread always takes from
//! it first; hashes of new passwords (sign-ups, registrations, resets, changes:
//! [`PasswordHasher::hash`]) have the other, with a bound of their own. A flood of new accounts
//! therefore fills only its own queue and is refused there, while logins wait at most for the
//! hashes already running. Once a queue holds its bound, the next job is refused at once
//! ([`HashError::Busy`], HTTP 503 with `Retry-After`) rather than waiting seconds behind the
//! others.

use std::{panic::AssertUnwindSafe, sync::Arc};

use argon2::{
    password_hash::{
        rand_core::OsRng, PasswordHash, PasswordHasher as _, PasswordVerifier, SaltString,
    },
    Algorithm, Argon2, Params, Version,
};
use crossbeam_channel::{Receiver, Sender, TryRecvError, TrySendError};
use zeroize::Zeroizing;

/// A password in memory: zeroed on drop, never printed.
#[derive(Clone)]
pub struct Password(Zeroizing<String>);

impl Password {
    pub fn new(s: String) -> Self {
        Password(Zeroizing::new(s))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

/// Why a hash or a verification did not happen.
#[derive(Debug, thiserror::Error)]
pub enum HashError {
    /// Every core is hashing and the queue is full: retry shortly.
    #[error("the password hashing queue is full")]
    Busy,
    #[error("{0}")]
    Failed(String),
}

/// The size of the hashing pool and the bounds of its two queues.
#[derive(Clone, Copy, Debug)]
pub struct PoolLimits {
    /// Hashing threads; 0: one per core.
    pub threads: usize,
    /// Checks of existing passwords that may wait for a thread.
    pub verify_queue_max: usize,
    /// Hashes of new passwords that may wait for a thread.
    pub hash_queue_max: usize,
}

/// The hashing queues at one moment (see [`PasswordHasher::queue_load`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueLoad {
    /// Checks of existing passwords waiting for a thread.
    pub verify_waiting: usize,
    /// Their bound (`security.hashing_queue_max`).
    pub verify_max: usize,
    /// Hashes of new passwords waiting for a thread.
    pub new_waiting: usize,
    /// Their bound (`security.hashing_new_queue_max`).
    pub new_max: usize,
}

/// Hashes and verifies passwords with the configured Argon2id parameters.
#[derive(Clone)]
pub struct PasswordHasher {
    params: Params,
    /// Checks of existing passwords waiting for a thread (taken first).
    verifies: Sender<Job>,
    /// Hashes of new passwords waiting for a thread.
    hashes: Sender<Job>,
    /// A real hash of a random password, verified against when an account does not exist so
    /// that "no such account" takes as long as "wrong password".
    dummy: Arc<String>,
}

impl std::fmt::Debug for PasswordHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordHasher")
            .field("params", &self.params)
            .finish()
    }
}

impl PasswordHasher {
    /// `m_cost_kib`, `t_cost`, `p_cost` as in RFC 9106; fails on values argon2 refuses.
    /// Each queue holds at most its bound in `limits`; beyond that, [`HashError::Busy`].
    pub fn new(
        m_cost_kib: u32,
        t_cost: u32,
        p_cost: u32,
        limits: PoolLimits,
    ) -> Result<Self, String> {
        let params = Params::new(m_cost_kib, t_cost, p_cost, None).map_err(|e| e.to_string())?;
        let threads = match limits.threads {
            0 => std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
            n => n,
        };
        let dummy = hash_blocking(&params, tessera_storage::random_token(24).as_bytes())?;
        let (verifies, verify_queue) = crossbeam_channel::bounded(limits.verify_queue_max);
        let (hashes, hash_queue) = crossbeam_channel::bounded(limits.hash_queue_max);
        for n in 0..threads {
            let (verify_queue, hash_queue) = (verify_queue.clone(), hash_queue.clone());
            std::thread::Builder::new()
                .name(format!("tessera-hash-{n}"))
                .spawn(move || hashing_thread(verify_queue, hash_queue))
                .map_err(|e| format!("cannot start a hashing thread: {e}"))?;
        }
        Ok(PasswordHasher {
            params,
            verifies,
            hashes,
            dummy: Arc::new(dummy),
        })
    }

    /// The PHC string of `password`.
    pub async fn hash(&self, password: &Password) -> Result<String, HashError> {
        let params = self.params.clone();
        let pw = password.0.clone();
        self.run(&self.hashes, move || hash_blocking(&params, pw.as_bytes()))
            .await?
            .map_err(HashError::Failed)
    }

    /// Whether `password` matches `phc`; with `None`, burns the same time and answers false.
    /// Only a full queue is an error: a hash that cannot be read simply does not match.
    pub async fn verify(&self, password: &Password, phc: Option<&str>) -> Result<bool, HashError> {
        let (phc, real) = match phc {
            Some(p) => (p.to_owned(), true),
            None => ((*self.dummy).clone(), false),
        };
        let pw = password.0.clone();
        let ok = self
            .run(&self.verifies, move || {
                let Ok(parsed) = PasswordHash::new(&phc) else {
                    return false;
                };
                Argon2::default()
                    .verify_password(pw.as_bytes(), &parsed)
                    .is_ok()
            })
            .await;
        match ok {
            Ok(ok) => Ok(ok && real),
            Err(HashError::Busy) => Err(HashError::Busy),
            Err(HashError::Failed(_)) => Ok(false),
        }
    }

    /// How many jobs wait for a thread in each queue now, beside each queue's bound (a job
    /// past it is refused): what the metrics show. Jobs being hashed are not counted.
    pub fn queue_load(&self) -> QueueLoad {
        QueueLoad {
            verify_waiting: self.verifies.len(),
            verify_max: self.verifies.capacity().unwrap_or(0),
            new_waiting: self.hashes.len(),
            new_max: self.hashes.capacity().unwrap_or(0),
        }
    }

    /// Runs `f` on a hashing thread through `queue`; [`HashError::Busy`] at once when that
    /// queue is full.
    async fn run<T: Send + 'static>(
        &self,
        queue: &Sender<Job>,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, HashError> {
        submit(queue, f)?
            .await
            .map_err(|_| HashError::Failed("a hashing job failed".into()))
    }
}

/// Queues `f` at once ([`HashError::Busy`] when `queue` is full); the receiver gets its result.
fn submit<T: Send + 'static>(
    queue: &Sender<Job>,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<tokio::sync::oneshot::Receiver<T>, HashError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        // A request that went away (timeout, closed connection) costs no hash.
        if tx.is_closed() {
            return;
        }
        if let Ok(out) = std::panic::catch_unwind(AssertUnwindSafe(f)) {
            let _ = tx.send(out);
        }
    });
    queue.try_send(job).map_err(|e| match e {
        TrySendError::Full(_) => HashError::Busy,
        TrySendError::Disconnected(_) => HashError::Failed("the hashing pool is gone".into()),
    })?;
    Ok(rx)
}

type Job = Box<dyn FnOnce() + Send>;

/// A hashing thread: lowers its own priority, then runs jobs until every hasher is dropped,
/// always a waiting check of an existing password before a new password's hash.
fn hashing_thread(verifies: Receiver<Job>, hashes: Receiver<Job>) {
    use thread_priority::{set_current_thread_priority, ThreadPriority, ThreadPriorityValue};
    // 25 of 0..=99 is nice 9 on Linux. Not being able to lower it is harmless: log and go on.
    let lowered = ThreadPriorityValue::try_from(25u8)
        .map_err(|e| e.to_string())
        .and_then(|v| {
            set_current_thread_priority(ThreadPriority::Crossplatform(v)).map_err(|e| e.to_string())
        });
    if let Err(e) = lowered {
        tracing::warn!(error = %e, "cannot lower the priority of a hashing thread");
    }
    loop {
        match verifies.try_recv() {
            Ok(job) => {
                job();
                continue;
            }
            Err(TryRecvError::Disconnected) => return,
            Err(TryRecvError::Empty) => {}
        }
        // Nothing to verify: wait for either queue, still preferring a check when both
        // have a job by the time this thread wakes.
        let job = crossbeam_channel::select_biased! {
            recv(verifies) -> job => job,
            recv(hashes) -> job => job,
        };
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

/// Whether `phc` is an Argon2id (version 19) PHC string with parameters argon2 accepts: the
/// only hashes an import may bring, so every stored hash verifies the same way.
pub fn is_argon2id_phc(phc: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(phc) else {
        return false;
    };
    parsed.algorithm == Algorithm::Argon2id.ident()
        && parsed.version == Some(0x13)
        && parsed.hash.is_some()
        && Params::try_from(&parsed).is_ok()
}

fn hash_blocking(params: &Params, password: &[u8]) -> Result<String, String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params.clone())
        .hash_password(password, &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn checks_of_existing_passwords_go_first_and_new_hashes_have_their_own_bound() {
        let h = PasswordHasher::new(
            1024,
            1,
            1,
            PoolLimits {
                threads: 1,
                verify_queue_max: 4,
                hash_queue_max: 2,
            },
        )
        .unwrap();
        // Hold the one thread until every job below is queued.
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let busy = submit(&h.hashes, move || {
            started_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        })
        .unwrap();
        started_rx.recv().unwrap();
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let job = |name: &'static str| {
            let order = order.clone();
            move || order.lock().unwrap().push(name)
        };
        let hashes = [
            submit(&h.hashes, job("hash 1")).unwrap(),
            submit(&h.hashes, job("hash 2")).unwrap(),
        ];
        // The new hashes' queue is full; checks still have room.
        assert!(matches!(
            submit(&h.hashes, job("hash 3")),
            Err(HashError::Busy)
        ));
        let check = submit(&h.verifies, job("check")).unwrap();
        assert_eq!(
            h.queue_load(),
            QueueLoad {
                verify_waiting: 1,
                verify_max: 4,
                new_waiting: 2,
                new_max: 2,
            }
        );
        release_tx.send(()).unwrap();
        busy.await.unwrap();
        check.await.unwrap();
        for r in hashes {
            r.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), ["check", "hash 1", "hash 2"]);
        assert_eq!(
            h.queue_load().verify_waiting + h.queue_load().new_waiting,
            0
        );
    }

    #[tokio::test]
    async fn hashes_are_argon2id_with_the_given_parameters_and_verify() {
        let h = PasswordHasher::new(
            1024,
            1,
            1,
            PoolLimits {
                threads: 2,
                verify_queue_max: 8,
                hash_queue_max: 8,
            },
        )
        .unwrap();
        let pw = Password::new("correct horse battery".into());
        let phc = h.hash(&pw).await.unwrap();
        assert!(phc.starts_with("$argon2id$v=19$m=1024,t=1,p=1$"), "{phc}");
        assert!(h.verify(&pw, Some(&phc)).await.unwrap());
        assert!(!h
            .verify(&Password::new("wrong".into()), Some(&phc))
            .await
            .unwrap());
        assert!(!h.verify(&pw, None).await.unwrap());
        assert_eq!(format!("{pw:?}"), "Password(<redacted>)");
        assert!(is_argon2id_phc(&phc));
        assert!(!is_argon2id_phc(&phc.replace("argon2id", "argon2i")));
        assert!(!is_argon2id_phc(&phc.replace("v=19", "v=16")));
        assert!(!is_argon2id_phc(
            "$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ"
        ));
        assert!(!is_argon2id_phc("$2b$12$abcdefghijklmnopqrstuv"));
        assert!(!is_argon2id_phc(""));
    }
}
