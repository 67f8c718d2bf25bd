//! Dashboard sessions: opened for a verified password, authenticated by token and CSRF
//! value (stored as SHA-256) within their idle and absolute ends, ended, and marked
//! re-authenticated; and what a session shows of its account and memberships.

use std::net::IpAddr;

use tessera_storage::{random_token, sha256, Kind, PlatformBatch};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    directory::{
        messages::{MemberOf, NewSession, SessionInfo},
        state::DirectoryState,
    },
    error::DirectoryError,
    login_guard::{Attempt, Captcha},
    records::{DashboardAccount, DashboardSession},
};

impl DirectoryState {
    pub(super) fn memberships_of(&self, account: &DashboardAccount) -> Vec<MemberOf> {
        self.tenants_of(account, |m| account.may_use(&m.tenant))
            .into_iter()
            .map(|(t, m)| MemberOf {
                tenant: t.id,
                slug: t.slug.clone(),
                name: t.name.clone(),
                role: m.role,
            })
            .collect()
    }

    fn info(&self, account: &DashboardAccount, session: &DashboardSession) -> SessionInfo {
        SessionInfo {
            account_id: account.id,
            email: account.email.clone(),
            email_verified: account.email_verified,
            mfa_enabled: account.totp.is_some(),
            recovery_codes_left: Self::recovery_codes_left(account).unwrap_or(0),
            csrf_hash: session.csrf_hash,
            reauth_at: session.reauth_at,
            expires_at: self.expiry(session),
            memberships: self.memberships_of(account),
        }
    }

    /// The clock dashboard sessions are created, touched and expired by: the wall clock plus
    /// the fault drills' `clock_offset` (zero in production), so a drill can move a session
    /// past its idle or absolute end without waiting.
    pub(super) fn session_clock(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc() + self.runtime.clock_offset
    }

    fn expiry(&self, s: &DashboardSession) -> OffsetDateTime {
        let idle = s.last_seen_at + self.session_policy.idle;
        let absolute = s.created_at + self.session_policy.absolute;
        idle.min(absolute)
    }

    /// A session for an account whose password was just verified from `ip`, on the known
    /// `device` or a new one (whose token the answer carries): the pair's failures and the
    /// device's, or else the account's, are forgiven.
    pub(in crate::directory) fn create_session(
        &mut self,
        account_id: Uuid,
        ip: IpAddr,
        device: Option<Uuid>,
    ) -> Result<NewSession, DirectoryError> {
        let account = self
            .platform
            .get::<DashboardAccount>(account_id.as_bytes())?
            .ok_or(DirectoryError::SessionInvalid)?;
        self.login.succeed(&Attempt {
            device,
            ..Attempt::new(&account.email, ip, Captcha::Off)
        });
        let mut batch = PlatformBatch::default();
        let device_token = match device {
            Some(_) => None,
            None => Some(self.issue_dashboard_device(
                &mut batch,
                account_id,
                OffsetDateTime::now_utc(),
            )?),
        };
        let now = self.session_clock();
        let token = random_token(32);
        let csrf = random_token(32);
        let session = DashboardSession {
            account_id,
            csrf_hash: sha256(csrf.as_bytes()),
            created_at: now,
            last_seen_at: now,
            // Sensitive changes ask for an explicit re-authentication, even right after
            // login: the password is typed again on purpose, for that change.
            reauth_at: None,
            epoch: account.epoch,
        };
        batch.put(&sha256(token.as_bytes()), &session)?;
        self.platform.apply(batch)?;
        let info = self.info(&account, &session);
        Ok(NewSession {
            token,
            csrf,
            info,
            device_token,
        })
    }

    /// The session stored under `key` (a token's hash), expired or not.
    fn stored_session(&self, key: &[u8; 32]) -> Result<DashboardSession, DirectoryError> {
        self.platform
            .get::<DashboardSession>(key)?
            .ok_or(DirectoryError::SessionInvalid)
    }

    /// The account a session belongs to, unless its password was replaced since the session
    /// began (`epoch`).
    fn session_account(
        &self,
        session: &DashboardSession,
    ) -> Result<DashboardAccount, DirectoryError> {
        self.platform
            .get::<DashboardAccount>(session.account_id.as_bytes())?
            .filter(|a| a.epoch == session.epoch)
            .ok_or(DirectoryError::SessionInvalid)
    }

    /// The live session for `token`; touches its idle timer. An expired one is deleted.
    pub(in crate::directory) fn authenticate(
        &mut self,
        token: &str,
    ) -> Result<SessionInfo, DirectoryError> {
        let key = sha256(token.as_bytes());
        let mut session = self.stored_session(&key)?;
        let now = self.session_clock();
        let mut batch = PlatformBatch::default();
        if now >= self.expiry(&session) {
            batch.remove(Kind::DashboardSession, &key);
            self.platform.apply(batch)?;
            return Err(DirectoryError::SessionInvalid);
        }
        let account = self.session_account(&session)?;
        // Touch at most once a minute: the idle timer needs no finer grain, and most requests
        // then write nothing.
        if now - session.last_seen_at > time::Duration::minutes(1) {
            session.last_seen_at = now;
            batch.put(&key, &session)?;
            self.platform.apply(batch)?;
        }
        Ok(self.info(&account, &session))
    }

    pub(in crate::directory) fn logout(&mut self, token: &str) -> Result<(), DirectoryError> {
        let mut batch = PlatformBatch::default();
        batch.remove(Kind::DashboardSession, &sha256(token.as_bytes()));
        self.platform.apply(batch)?;
        Ok(())
    }

    pub(in crate::directory) fn mark_reauth(
        &mut self,
        token: &str,
    ) -> Result<OffsetDateTime, DirectoryError> {
        let key = sha256(token.as_bytes());
        let mut session = self.stored_session(&key)?;
        let now = self.session_clock();
        if now >= self.expiry(&session) {
            return Err(DirectoryError::SessionInvalid);
        }
        let account = self.session_account(&session)?;
        self.login.forgive_account(&account.email);
        // The recent-re-authentication check reads the wall clock.
        session.reauth_at = Some(OffsetDateTime::now_utc());
        session.last_seen_at = now;
        let mut batch = PlatformBatch::default();
        batch.put(&key, &session)?;
        self.platform.apply(batch)?;
        Ok(now)
    }
}
