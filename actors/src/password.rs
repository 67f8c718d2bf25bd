//! Argon2id password hashing, always off the actors and the async workers.
//!
//! Hashing runs in `spawn_blocking`, gated by a semaphore with one permit per core so a burst of
//! logins queues instead of starving every other task.

use std::sync::Arc;

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

/// Hashes and verifies passwords with the configured Argon2id parameters.
#[derive(Clone)]
pub struct PasswordHasher {
    params: Params,
    permits: Arc<Semaphore>,
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
    pub fn new(m_cost_kib: u32, t_cost: u32, p_cost: u32) -> Result<Self, String> {
        let params = Params::new(m_cost_kib, t_cost, p_cost, None).map_err(|e| e.to_string())?;
        let permits = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        let dummy = hash_blocking(&params, tessera_storage::random_token(24).as_bytes())?;
        Ok(PasswordHasher {
            params,
            permits: Arc::new(Semaphore::new(permits)),
            dummy: Arc::new(dummy),
        })
    }

    /// The PHC string of `password`.
    pub async fn hash(&self, password: &Password) -> Result<String, String> {
        let params = self.params.clone();
        let pw = password.0.clone();
        self.run(move || hash_blocking(&params, pw.as_bytes()))
            .await?
    }

    /// Whether `password` matches `phc`; with `None`, burns the same time and answers false.
    pub async fn verify(&self, password: &Password, phc: Option<&str>) -> bool {
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
            .await
            .unwrap_or(false);
        ok && real
    }

    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, String> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| "the hashing pool is closed".to_string())?;
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| format!("hashing task failed: {e}"))
    }
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
        let h = PasswordHasher::new(1024, 1, 1).unwrap();
        let pw = Password::new("correct horse battery".into());
        let phc = h.hash(&pw).await.unwrap();
        assert!(phc.starts_with("$argon2id$v=19$m=1024,t=1,p=1$"), "{phc}");
        assert!(h.verify(&pw, Some(&phc)).await);
        assert!(!h.verify(&Password::new("wrong".into()), Some(&phc)).await);
        assert!(!h.verify(&pw, None).await);
        assert_eq!(format!("{pw:?}"), "Password(<redacted>)");
    }
}
