//! The links mailed to an account: address verification and password reset, limited per
//! account and address, answered alike for unknown addresses (a decoy written), single use,
//! bound to the account's epoch; and what redeeming each does.

use std::time::Instant;

use tessera_storage::{random_token, sha256, Kind, PlatformBatch};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    directory::{
        messages::{AccountCredential, AccountReset, AccountTarget, MailedToken},
        state::DirectoryState,
    },
    error::DirectoryError,
    records::{AccountEmailIndex, AccountTokenPurpose, AccountTokenRecord, DashboardAccount},
    throttle::throttle_ip,
};

/// How long an address-verification link works.
pub(in crate::directory) const VERIFY_TTL: time::Duration = time::Duration::days(2);
/// How long a password-reset link works.
const RESET_TTL: time::Duration = time::Duration::hours(1);
/// Mails of one purpose (verification, reset) one account may be sent an hour.
pub const ACCOUNT_MAILS_PER_HOUR: u32 = 5;
/// The key of the decoy a reset of an unknown address writes (tokens are keyed by 32-byte
/// hashes, so none is ever this).
pub(super) const DECOY_KEY: &[u8] = b"decoy";
/// Password-reset requests one client address may make an hour.
pub const RESETS_PER_IP_HOUR: u32 = 20;

impl DirectoryState {
    /// A token mailed to a dashboard account: a verification link for `Verify` (the account
    /// by id, only while unverified), a password reset for `Reset` (the account by address).
    /// `None` when there is nothing to mail; callers answer alike either way. Limited per
    /// account; the answer (but a rate limit's) is to be sent after the group commit in every
    /// case, so an unknown address answers as late as a known one.
    pub(in crate::directory) fn issue_account_token(
        &mut self,
        target: AccountTarget,
        purpose: AccountTokenPurpose,
    ) -> Result<Option<MailedToken>, DirectoryError> {
        // A reset asked for by address writes one record whatever happens (the token, or a
        // decoy of its size) and answers after the same group commit, so neither the answer
        // nor its time tells whether the address has an account.
        let decoy_len = match &target {
            AccountTarget::Email { email, .. } => Some(email.len()),
            AccountTarget::Id(_) => None,
        };
        match (self.mail_token_for(target, purpose), decoy_len) {
            (Ok(None), Some(len)) => self.write_decoy(len).map(|()| None),
            (other, _) => other,
        }
    }

    /// The token `issue_account_token` mails, if the target has an account that may be sent
    /// one now.
    fn mail_token_for(
        &mut self,
        target: AccountTarget,
        purpose: AccountTokenPurpose,
    ) -> Result<Option<MailedToken>, DirectoryError> {
        if let AccountTarget::Email { ip, .. } = &target {
            // Checked before any lookup: the same answer for every address.
            self.reset_ip_window
                .hit(&throttle_ip(*ip), Instant::now())
                .map_err(|retry_after_secs| DirectoryError::RateLimited { retry_after_secs })?;
        }
        let account = match target {
            AccountTarget::Id(id) => self.platform.get::<DashboardAccount>(id.as_bytes())?,
            AccountTarget::Email { email, .. } => self.account_by_email(&email.to_lowercase())?,
        };
        let Some(account) = account else {
            return Ok(None);
        };
        if purpose == AccountTokenPurpose::Verify && account.email_verified {
            return Ok(None);
        }
        if let Err(retry_after_secs) = self
            .account_mail_window
            .hit(&(account.id, purpose), Instant::now())
        {
            // A verification mail is asked for by the account's own session, which may be
            // told to wait; a reset asked for by address answers alike whatever happens.
            return match purpose {
                AccountTokenPurpose::Verify => {
                    Err(DirectoryError::RateLimited { retry_after_secs })
                }
                AccountTokenPurpose::Reset => Ok(None),
            };
        }
        let mut token = self.account_token(&account, purpose)?;
        if purpose == AccountTokenPurpose::Reset {
            token.detaches = self.unproven_memberships(&account);
        }
        Ok(Some(token))
    }

    /// Writes a record of the size of a reset token's, under a key no token hashes to,
    /// overwritten each time and never valid (expired at the epoch).
    fn write_decoy(&self, email_len: usize) -> Result<(), DirectoryError> {
        let mut batch = PlatformBatch::default();
        batch.put(
            DECOY_KEY,
            &AccountTokenRecord {
                account: Uuid::now_v7(),
                email: "x".repeat(email_len),
                purpose: AccountTokenPurpose::Reset,
                epoch: 0,
                expires_at: OffsetDateTime::UNIX_EPOCH,
            },
        )?;
        self.platform.apply(batch)?;
        Ok(())
    }

    /// Writes a new mailed token for `account` and answers it.
    fn account_token(
        &self,
        account: &DashboardAccount,
        purpose: AccountTokenPurpose,
    ) -> Result<MailedToken, DirectoryError> {
        let mut batch = PlatformBatch::default();
        let token = random_token(32);
        let ttl = match purpose {
            AccountTokenPurpose::Verify => VERIFY_TTL,
            AccountTokenPurpose::Reset => RESET_TTL,
        };
        batch.put(
            &sha256(token.as_bytes()),
            &AccountTokenRecord {
                account: account.id,
                email: account.email.clone(),
                purpose,
                epoch: account.epoch,
                expires_at: OffsetDateTime::now_utc() + ttl,
            },
        )?;
        self.platform.apply(batch)?;
        Ok(MailedToken {
            token,
            email: account.email.clone(),
            detaches: Vec::new(),
        })
    }

    /// The account a live mailed token of `purpose` stands for. A token is void once expired,
    /// once the account's address changed or once its password was replaced by a mailbox
    /// proof (`epoch`).
    fn redeem_account_token(
        &self,
        token: &str,
        purpose: AccountTokenPurpose,
    ) -> Result<DashboardAccount, DirectoryError> {
        let key = sha256(token.as_bytes());
        let rec = self
            .platform
            .get::<AccountTokenRecord>(&key)?
            .filter(|r| r.purpose == purpose && OffsetDateTime::now_utc() < r.expires_at)
            .ok_or(DirectoryError::TokenInvalid)?;
        let account = self
            .platform
            .get::<DashboardAccount>(rec.account.as_bytes())?
            .filter(|a| a.email == rec.email && a.epoch == rec.epoch)
            .ok_or(DirectoryError::TokenInvalid)?;
        Ok(account)
    }

    /// Whether a mailed token of `purpose` is live (checked again when it is used).
    pub(in crate::directory) fn check_account_token(
        &self,
        token: &str,
        purpose: AccountTokenPurpose,
    ) -> Result<(), DirectoryError> {
        self.redeem_account_token(token, purpose).map(|_| ())
    }

    /// Marks the account verified: the mailed token together with the account's own session
    /// (so a link clicked by the mailbox's real holder never vouches for someone else's
    /// password).
    pub(in crate::directory) fn verify_account(
        &mut self,
        token: &str,
        account_id: Uuid,
    ) -> Result<(), DirectoryError> {
        let mut account = self.redeem_account_token(token, AccountTokenPurpose::Verify)?;
        if account.id != account_id {
            return Err(DirectoryError::TokenInvalid);
        }
        let mut batch = PlatformBatch::default();
        batch.remove(Kind::DashboardAccountToken, &sha256(token.as_bytes()));
        account.email_verified = true;
        batch.put(account.id.as_bytes(), &account)?;
        self.platform.apply(batch)?;
        Ok(())
    }

    /// Sets a new password through a mailed reset token: the mailbox is proven, so the
    /// account is verified, and every session and mailed token of it ends. An account never
    /// verified is taken over: its memberships are detached in the same batch.
    pub(in crate::directory) fn reset_password(
        &mut self,
        token: &str,
        password_hash: String,
    ) -> Result<AccountReset, DirectoryError> {
        let mut account = self.redeem_account_token(token, AccountTokenPurpose::Reset)?;
        let was_verified = account.email_verified;
        let mut batch = PlatformBatch::default();
        batch.remove(Kind::DashboardAccountToken, &sha256(token.as_bytes()));
        let detached = if was_verified {
            Vec::new()
        } else {
            self.detach_unproven(&mut batch, &mut account)
        };
        account.password_hash = password_hash;
        account.email_verified = true;
        account.epoch = account.epoch.wrapping_add(1);
        batch.put(account.id.as_bytes(), &account)?;
        self.platform.apply(batch)?;
        self.login.forgive_account(&account.email);
        Self::log_detached(account.id, &detached);
        Ok(AccountReset {
            account_id: account.id,
            slugs: self
                .memberships_of(&account)
                .into_iter()
                .map(|m| m.slug)
                .collect(),
            reclaimed: !was_verified,
            detached,
        })
    }

    /// The credential of the account with this address, for verification off the actor.
    pub(in crate::directory) fn find_account(&self, email: &str) -> Option<AccountCredential> {
        let idx = self
            .platform
            .get::<AccountEmailIndex>(email.to_lowercase().as_bytes())
            .ok()??;
        let acct = self
            .platform
            .get::<DashboardAccount>(idx.account.as_bytes())
            .ok()??;
        Some(AccountCredential {
            account_id: acct.id,
            password_hash: acct.password_hash,
            device: None,
        })
    }
}
