//! Dashboard accounts' second factor: TOTP and recovery codes (the end users' parameters,
//! [`crate::second_factor`]), set up with a code and taken off by the holder or the operator,
//! and the second step of a login that then needs it.
//!
//! - Only an account whose address is verified may set one up (an unverified account is its
//!   address owner's to take over, and a takeover clears any factor: `members.rs`).
//! - A login whose password is right answers a challenge instead of a session: single use,
//!   5 minutes, 5 codes at most, kept in memory (a restart only means typing the password
//!   again). A wrong code counts as a failed login of the account from that address, on disk,
//!   so the lockout covers guessing codes as it covers guessing passwords; an unknown
//!   challenge counts against the address ([`MFA_MISSES_PER_ADDRESS`] in 15 minutes).

use std::{net::IpAddr, time::Instant};

use tessera_storage::{random_token, sha256, PlatformBatch};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::{
    directory::{
        messages::{LoginStep, NewSession, TotpSecret},
        state::DirectoryState,
    },
    error::DirectoryError,
    login_guard::{Attempt, Captcha, Refusal},
    records::{DashboardAccount, DashboardTotp},
    second_factor::{is_totp_code, new_recovery_codes, new_seed, recovery_index, totp, totp_step},
    throttle::throttle_ip,
};

/// How long the second step of a login may take.
pub const MFA_LOGIN_TTL: Duration = Duration::minutes(5);
/// Codes one challenge takes before it dies.
const MFA_LOGIN_TRIES: u8 = 5;
/// Second steps with an unknown, used or expired challenge one client address (IPv6: its
/// /64) may send in 15 minutes; past it, 429 until the window ends.
pub const MFA_MISSES_PER_ADDRESS: u32 = 30;
/// The issuer an authenticator app shows beside the account.
const ISSUER: &str = "Tessera dashboard";

/// A login waiting for its second factor.
pub(in crate::directory) struct PendingMfa {
    account_id: Uuid,
    epoch: u32,
    device: Option<Uuid>,
    expires_at: OffsetDateTime,
    tries: u8,
}

fn seed_aad(account: Uuid) -> Vec<u8> {
    let mut aad = b"dashboard-totp/".to_vec();
    aad.extend_from_slice(account.as_bytes());
    aad
}

fn now_unix() -> u64 {
    u64::try_from(OffsetDateTime::now_utc().unix_timestamp()).unwrap_or(0)
}

impl DirectoryState {
    fn account(&self, id: Uuid) -> Result<DashboardAccount, DirectoryError> {
        self.platform
            .get::<DashboardAccount>(id.as_bytes())?
            .ok_or(DirectoryError::SessionInvalid)
    }

    /// A login whose password was just verified from `ip`: a session, or, when the account
    /// has a second factor, the challenge for it.
    pub(in crate::directory) fn password_accepted(
        &mut self,
        account_id: Uuid,
        ip: IpAddr,
        device: Option<Uuid>,
    ) -> Result<LoginStep, DirectoryError> {
        let account = self.account(account_id)?;
        if account.totp.is_none() {
            return Ok(LoginStep::Session(
                self.create_session(account_id, ip, device)?,
            ));
        }
        let token = random_token(32);
        let now = OffsetDateTime::now_utc();
        self.mfa_logins.retain(|_, p| p.expires_at > now);
        self.mfa_logins.insert(
            sha256(token.as_bytes()),
            PendingMfa {
                account_id,
                epoch: account.epoch,
                device,
                expires_at: now + MFA_LOGIN_TTL,
                tries: 0,
            },
        );
        Ok(LoginStep::Mfa {
            challenge: token,
            expires_in: MFA_LOGIN_TTL.whole_seconds(),
        })
    }

    /// The second step of a login: a TOTP code (of a later step than the last accepted) or
    /// an unused recovery code. A wrong code is a failed login of the account from `ip`
    /// (`InvalidCredentials`); an unknown, used or expired challenge, or one whose account
    /// changed since, is `TokenInvalid`.
    pub(in crate::directory) fn mfa_login(
        &mut self,
        challenge: &str,
        code: &str,
        ip: IpAddr,
    ) -> Result<NewSession, DirectoryError> {
        let key = sha256(challenge.as_bytes());
        let now = OffsetDateTime::now_utc();
        let Some(pending) = self.mfa_logins.get(&key).filter(|p| p.expires_at > now) else {
            // Guessing challenges is bounded per address, as guessing codes is per account.
            return Err(self
                .mfa_misses
                .hit(&throttle_ip(ip), Instant::now())
                .map_or_else(
                    |retry_after_secs| DirectoryError::RateLimited { retry_after_secs },
                    |()| DirectoryError::TokenInvalid,
                ));
        };
        let (account_id, device, epoch) = (pending.account_id, pending.device, pending.epoch);
        let mut account = self
            .account(account_id)
            .ok()
            .filter(|a| a.epoch == epoch)
            .ok_or(DirectoryError::TokenInvalid)?;
        let attempt = Attempt {
            device,
            ..Attempt::new(&account.email, ip, Captcha::Off)
        };
        if let Err(Refusal::Throttled { retry_after, .. }) = self.login.check(&attempt) {
            return Err(DirectoryError::RateLimited {
                retry_after_secs: retry_after,
            });
        }
        let Some(totp) = account.totp.as_mut() else {
            self.mfa_logins.remove(&key);
            return Err(DirectoryError::TokenInvalid);
        };
        let proved = if is_totp_code(code) {
            let seed = self.master_key.open(&seed_aad(account_id), &totp.seed)?;
            totp_step(&seed, code, now_unix(), totp.last_step).map(|step| {
                totp.last_step = step;
                "totp"
            })
        } else {
            recovery_index(&self.recovery_hasher, &totp.recovery_codes, code).map(|i| {
                totp.recovery_codes.remove(i);
                "recovery_code"
            })
        };
        let Some(method) = proved else {
            if let Some(p) = self.mfa_logins.get_mut(&key) {
                p.tries += 1;
                if p.tries >= MFA_LOGIN_TRIES {
                    self.mfa_logins.remove(&key);
                }
            }
            self.login_failed(&account.email, ip, device);
            return Err(DirectoryError::InvalidCredentials);
        };
        self.mfa_logins.remove(&key);
        let mut batch = PlatformBatch::default();
        batch.put(account_id.as_bytes(), &account)?;
        self.platform.apply(batch)?;
        tracing::info!(account = %account_id, method, "dashboard login: second factor accepted");
        self.create_session(account_id, ip, device)
    }

    /// Starts (or restarts) setting up TOTP: a new pending seed, its secret and URI.
    pub(in crate::directory) fn totp_setup(
        &mut self,
        account_id: Uuid,
    ) -> Result<TotpSecret, DirectoryError> {
        let mut account = self.account(account_id)?;
        if !account.email_verified {
            return Err(DirectoryError::EmailUnverified);
        }
        if account.totp.is_some() {
            return Err(DirectoryError::MfaAlreadyEnabled);
        }
        let seed = new_seed();
        account.totp_pending = Some(self.master_key.seal(&seed_aad(account_id), &seed[..])?);
        let t = totp(&seed[..], ISSUER, &account.email);
        let mut batch = PlatformBatch::default();
        batch.put(account_id.as_bytes(), &account)?;
        self.platform.apply(batch)?;
        Ok(TotpSecret {
            secret: t.get_secret_base32(),
            otpauth_uri: t.get_url(),
        })
    }

    /// Confirms the pending seed with a current code: TOTP is on, and the recovery codes
    /// are answered (shown once).
    pub(in crate::directory) fn totp_confirm(
        &mut self,
        account_id: Uuid,
        code: &str,
    ) -> Result<Vec<String>, DirectoryError> {
        let mut account = self.account(account_id)?;
        if account.totp.is_some() {
            return Err(DirectoryError::MfaAlreadyEnabled);
        }
        let sealed = account
            .totp_pending
            .take()
            .ok_or(DirectoryError::MfaNotPending)?;
        let seed = self.master_key.open(&seed_aad(account_id), &sealed)?;
        let step = is_totp_code(code)
            .then(|| totp_step(&seed, code, now_unix(), 0))
            .flatten()
            .ok_or(DirectoryError::InvalidCode)?;
        let (plain, hashes) = new_recovery_codes(&self.recovery_hasher);
        account.totp = Some(DashboardTotp {
            seed: sealed,
            last_step: step,
            recovery_codes: hashes,
            enabled_at: OffsetDateTime::now_utc(),
        });
        let mut batch = PlatformBatch::default();
        batch.put(account_id.as_bytes(), &account)?;
        self.platform.apply(batch)?;
        tracing::info!(account = %account_id, "dashboard account: TOTP set up");
        Ok(plain)
    }

    /// Takes the second factor off (and any setup in progress). `false`: there was none.
    pub(in crate::directory) fn totp_remove(
        &mut self,
        account_id: Uuid,
    ) -> Result<bool, DirectoryError> {
        let mut account = self.account(account_id)?;
        let had = account.totp.take().is_some();
        account.totp_pending = None;
        let mut batch = PlatformBatch::default();
        batch.put(account_id.as_bytes(), &account)?;
        self.platform.apply(batch)?;
        // Logins waiting for a code of the factor now gone must start again.
        self.mfa_logins.retain(|_, p| p.account_id != account_id);
        if had {
            tracing::info!(account = %account_id, "dashboard account: TOTP removed");
        }
        Ok(had)
    }

    /// The operator's recovery for a lost authenticator (`tessera admin dashboard
    /// reset-mfa`): the factor of the account with this address goes. `NotFound` when no
    /// account has it.
    pub(in crate::directory) fn reset_account_mfa(
        &mut self,
        email: &str,
    ) -> Result<bool, DirectoryError> {
        let account = self
            .account_by_email(email)?
            .ok_or(DirectoryError::NotFound)?;
        self.totp_remove(account.id)
    }

    /// Forgets second steps that ran out.
    pub(in crate::directory) fn sweep_mfa_logins(&mut self) {
        let now = OffsetDateTime::now_utc();
        self.mfa_logins.retain(|_, p| p.expires_at > now);
    }

    /// How many unused recovery codes `account` has, when it has a second factor.
    pub(super) fn recovery_codes_left(account: &DashboardAccount) -> Option<usize> {
        account.totp.as_ref().map(|t| t.recovery_codes.len())
    }
}
