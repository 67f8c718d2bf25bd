//! `[security]`: the master key file, password hashing and its queues, and the sign-up and
//! sign-in limits per client address.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::error::{positive, ConfigError};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecurityConfig {
    /// The master key file; relative paths are under the data directory. Created 0600 on first
    /// start when absent.
    pub master_key_file: PathBuf,
    /// Use a master key file that group or others may read or write, with a warning at start,
    /// instead of refusing to start. For a key deliberately shared with a group (a backup
    /// agent's, say); anyone who can read the file can open every sealed secret.
    pub allow_insecure_master_key_file_mode: bool,
    pub argon2_m_cost_kib: u32,
    pub argon2_t_cost: u32,
    pub argon2_p_cost: u32,
    /// Checks of existing passwords (logins, step-ups, re-authentications) that may wait for a
    /// hashing thread; past it, 503. Threads take these before any new password's hash.
    pub hashing_queue_max: usize,
    /// Hashes of new passwords (sign-ups, registrations, resets, changes, invitations) that
    /// may wait for a hashing thread; past it, 503. Separate from `hashing_queue_max`, so a
    /// flood of sign-ups cannot refuse logins.
    pub hashing_new_queue_max: usize,
    /// Threads hashing passwords; 0: one per core.
    pub hashing_threads: usize,
    /// Onboarding sign-ups (`POST /v1/onboarding/signup`) per client address (IPv6: per /64)
    /// per hour, counted before any hashing; past it, 429 `auth/rate_limited`.
    pub onboarding_per_ip_hourly: u32,
    /// Failed sign-ins (passwords and sign-in codes, end users' and the dashboard's) one
    /// client address (IPv6: per /64) may make over all accounts per 15 minutes; past it,
    /// attempts from a device without a device token are refused (429
    /// `auth/too_many_attempts`), or asked for a CAPTCHA (429 `auth/captcha_required`) when
    /// `[captcha]` is configured. High, because an office, a school or a carrier's NAT puts
    /// many people behind one address; one person's typos are counted per (address, account).
    pub login_failures_per_address: u32,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        SecurityConfig {
            master_key_file: PathBuf::from("master.key"),
            allow_insecure_master_key_file_mode: false,
            argon2_m_cost_kib: 19456,
            argon2_t_cost: 2,
            argon2_p_cost: 1,
            hashing_queue_max: 128,
            hashing_new_queue_max: 32,
            hashing_threads: 0,
            onboarding_per_ip_hourly: 5,
            login_failures_per_address: tessera_actors::login_guard::DEFAULT_FAILURES_PER_ADDRESS,
        }
    }
}

impl SecurityConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        argon2::Params::new(
            self.argon2_m_cost_kib,
            self.argon2_t_cost,
            self.argon2_p_cost,
            None,
        )
        .map_err(|e| ConfigError::Key {
            key: "security.argon2_m_cost_kib",
            reason: format!(
                "argon2 refuses m={}, t={}, p={}: {e}",
                self.argon2_m_cost_kib, self.argon2_t_cost, self.argon2_p_cost
            ),
        })?;
        if self.hashing_threads > 1024 {
            return Err(ConfigError::Key {
                key: "security.hashing_threads",
                reason: "must be 0 (one per core) to 1024".into(),
            });
        }
        positive(
            "security.onboarding_per_ip_hourly",
            u64::from(self.onboarding_per_ip_hourly),
        )?;
        positive(
            "security.login_failures_per_address",
            u64::from(self.login_failures_per_address),
        )
    }
}
