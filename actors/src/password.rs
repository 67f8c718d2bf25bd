//! Argon2id password hashing, always off the actors and the async workers.
//!
//! Hashing runs on a pool of its own, one thread per core, so a burst of logins never takes the
//! async workers' threads. The pool's threads run at a lower scheduling priority (nice 9): when
//! the cores are contended, the cheap requests (token checks, refreshes, a 503) go first and
//! argon2 takes the rest, instead of every request waiting behind a 25 ms hash. Its queue is
//! bounded: once `queue_max` requests wait for a thread, the next one is refused at once
//! ([`HashError::Busy`], HTTP 503 with `Retry-After`) rather than waiting seconds behind the
//! others.

use std::{panic::AssertUnwindSafe, sync::Arc};

use argon2::{
    password_hash::{
        rand_core::OsRng, PasswordHash, PasswordHasher as _, PasswordVerifier, SaltString,
    },
    Algorithm, Argon2, Params, Version,
};
use crossbeam_channel::{Receiver, Sender, TrySendError};
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

/// Hashes and verifies passwords with the configured Argon2id parameters.
#[derive(Clone)]
pub struct PasswordHasher {
    params: Params,
    /// The pool's queue: jobs waiting for a hashing thread (at most `queue_max`).
    jobs: Sender<Job>,
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
    /// At most `queue_max` requests wait for a core; beyond that, [`HashError::Busy`].
    pub fn new(
        m_cost_kib: u32,
        t_cost: u32,
        p_cost: u32,
        queue_max: usize,
    ) -> Result<Self, String> {
        let params = Params::new(m_cost_kib, t_cost, p_cost, None).map_err(|e| e.to_string())?;
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        let dummy = hash_blocking(&params, tessera_storage::random_token(24).as_bytes())?;
        let (jobs, queue) = crossbeam_channel::bounded(queue_max);
        for n in 0..threads {
            let queue = queue.clone();
            std::thread::Builder::new()
                .name(format!("tessera-hash-{n}"))
                .spawn(move || hashing_thread(queue))
                .map_err(|e| format!("cannot start a hashing thread: {e}"))?;
        }
        Ok(PasswordHasher {
            params,
            jobs,
            dummy: Arc::new(dummy),
        })
    }

    /// The PHC string of `password`.
    pub async fn hash(&self, password: &Password) -> Result<String, HashError> {
        let params = self.params.clone();
        let pw = password.0.clone();
        self.run(move || hash_blocking(&params, pw.as_bytes()))
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
            .run(move || {
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

    /// Runs `f` on a hashing thread; [`HashError::Busy`] at once when the queue is full.
    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, HashError> {
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
        self.jobs.try_send(job).map_err(|e| match e {
            TrySendError::Full(_) => HashError::Busy,
            TrySendError::Disconnected(_) => HashError::Failed("the hashing pool is gone".into()),
        })?;
        rx.await
            .map_err(|_| HashError::Failed("a hashing job failed".into()))
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// A hashing thread: lowers its own priority, then runs jobs until every hasher is dropped.
fn hashing_thread(queue: Receiver<Job>) {
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
    while let Ok(job) = queue.recv() {
        job();
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
    async fn hashes_are_argon2id_with_the_given_parameters_and_verify() {
        let h = PasswordHasher::new(1024, 1, 1, 8).unwrap();
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
