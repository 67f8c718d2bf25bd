//! Argon2id password hashing, always off the actors and the async workers.
//!
//! Hashing runs in `spawn_blocking`, gated by a semaphore with one permit per core so a burst of
//! logins queues instead of starving every other task. The queue is bounded: once `queue_max`
//! requests wait for a core, the next one is refused at once ([`HashError::Busy`], HTTP 503
//! with `Retry-After`) rather than waiting seconds behind the others.

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
};

use argon2::{
    password_hash::{
        rand_core::OsRng, PasswordHash, PasswordHasher as _, PasswordVerifier, SaltString,
    },
    Algorithm, Argon2, Params, Version,
};
use tokio::sync::Semaphore;
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
    permits: Arc<Semaphore>,
    /// Requests waiting for a core now, and the most that may.
    waiting: Arc<AtomicUsize>,
    queue_max: usize,
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
        let permits = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        let dummy = hash_blocking(&params, tessera_storage::random_token(24).as_bytes())?;
        Ok(PasswordHasher {
            params,
            permits: Arc::new(Semaphore::new(permits)),
            waiting: Arc::new(AtomicUsize::new(0)),
            queue_max,
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

    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, HashError> {
        let closed = |_| HashError::Failed("the hashing pool is closed".into());
        let _permit = match self.permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(tokio::sync::TryAcquireError::Closed) => return Err(closed(())),
            Err(tokio::sync::TryAcquireError::NoPermits) => {
                let queued = Queued::enter(&self.waiting, self.queue_max)?;
                let permit = self
                    .permits
                    .clone()
                    .acquire_owned()
                    .await
                    .map_err(|_| closed(()));
                drop(queued);
                permit?
            }
        };
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| HashError::Failed(format!("hashing task failed: {e}")))
    }
}

/// A place in the hashing queue, given back when dropped (also when the request is cancelled).
struct Queued<'a>(&'a AtomicUsize);

impl<'a> Queued<'a> {
    fn enter(waiting: &'a AtomicUsize, max: usize) -> Result<Self, HashError> {
        waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .map(|_| Queued(waiting))
            .map_err(|_| HashError::Busy)
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
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
