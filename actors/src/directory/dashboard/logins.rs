//! Dashboard logins: the end users' sign-in rules applied to them (throttles per address,
//! account and known device, without a CAPTCHA), the throttles kept on disk, and the
//! known devices a password sign-in issues.

use std::net::IpAddr;

use tessera_storage::{Kind, PlatformBatch};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    directory::{messages::LoginGate, state::DirectoryState},
    error::DirectoryError,
    known_devices,
    login_guard::{Attempt, Captcha, Refusal},
    records::DashboardDevice,
    throttle::{Clocks, PlatformThrottleRecord},
};

/// The record key of `account`'s known device `id`.
pub(super) fn dashboard_device_key(account: Uuid, id: Uuid) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    out.extend_from_slice(account.as_bytes());
    out.extend_from_slice(id.as_bytes());
    out
}

impl DirectoryState {
    /// The sign-in rules of end users ([`crate::login_guard`]) apply to dashboard logins,
    /// known devices included, without a CAPTCHA: past the address's count, a refusal. The
    /// answer's credential names the known device `device_token` is, if it is a live one of
    /// the account.
    pub(in crate::directory) fn begin_login(
        &self,
        email: &str,
        ip: IpAddr,
        device_token: Option<&str>,
    ) -> LoginGate {
        let email = email.to_lowercase();
        let mut cred = self.find_account(&email);
        if let (Some(c), Some(token)) = (cred.as_mut(), device_token) {
            c.device = self.known_dashboard_device(c.account_id, token);
        }
        let attempt = Attempt {
            device: cred.as_ref().and_then(|c| c.device),
            ..Attempt::new(&email, ip, Captcha::Off)
        };
        match self.login.check(&attempt) {
            Err(Refusal::Throttled { retry_after, .. }) => LoginGate::Throttled {
                retry_after_secs: retry_after,
            },
            // Not answered without a CAPTCHA; counted as the address's refusal.
            Err(Refusal::CaptchaRequired) => LoginGate::Throttled {
                retry_after_secs: 1,
            },
            Ok(()) => LoginGate::Proceed(cred),
        }
    }

    /// Counts a failed password check against `email` and `ip` (or the known `device`), and
    /// writes the counts: the failure is answered once they are durable, so a restart forgives
    /// nothing. Each rule it makes refuse is logged (the dashboard's audit is per tenant, and
    /// a login names none).
    pub(in crate::directory) fn login_failed(
        &mut self,
        email: &str,
        ip: IpAddr,
        device: Option<Uuid>,
    ) {
        let email = email.to_lowercase();
        let attempt = Attempt {
            device,
            ..Attempt::new(&email, ip, Captcha::Off)
        };
        for (rule, retry_after) in self.login.fail(&attempt) {
            tracing::warn!(
                rule = rule.as_str(),
                retry_after,
                "dashboard logins locked by a sign-in rule"
            );
        }
        self.persist_throttles_logged();
    }

    /// Forgets the login throttles' entries that have run out.
    pub(in crate::directory) fn sweep_throttles(&mut self) {
        self.login.sweep();
    }

    /// The device `token` names, when it is a live device token of `account`.
    fn known_dashboard_device(&self, account: Uuid, token: &str) -> Option<Uuid> {
        let (id, secret) = known_devices::parse(token)?;
        let record = self
            .platform
            .get::<DashboardDevice>(&dashboard_device_key(account, id))
            .ok()??;
        record
            .device
            .holds(secret, OffsetDateTime::now_utc())
            .then_some(id)
    }

    /// `account`'s known devices, oldest first.
    pub(super) fn dashboard_devices(
        &self,
        account: Uuid,
    ) -> Result<Vec<DashboardDevice>, DirectoryError> {
        let mut out = Vec::new();
        for item in self
            .platform
            .scan_prefix::<DashboardDevice>(account.as_bytes())
        {
            out.push(item?.1);
        }
        Ok(out)
    }

    /// A new device token for `account`, its record into `batch`; expired ones and, past the
    /// cap, the oldest go.
    pub(super) fn issue_dashboard_device(
        &self,
        batch: &mut PlatformBatch,
        account: Uuid,
        now: OffsetDateTime,
    ) -> Result<String, DirectoryError> {
        let held = self.dashboard_devices(account)?;
        let new = known_devices::issue(held.iter().map(|d| &d.device), now);
        for old in new.evict {
            batch.remove(Kind::DashboardDevice, &dashboard_device_key(account, old));
        }
        let record = DashboardDevice {
            account_id: account,
            device: new.device,
        };
        batch.put(&dashboard_device_key(account, record.device.id), &record)?;
        Ok(new.token)
    }

    /// Loads the dashboard throttles' entries written by earlier runs; expired or unreadable
    /// ones are deleted.
    pub(in crate::directory) fn restore_throttles(&mut self) -> Result<(), DirectoryError> {
        let clocks = Clocks::at(self.session_clock());
        let mut stale = PlatformBatch::default();
        let mut any_stale = false;
        for item in self.platform.scan_prefix::<PlatformThrottleRecord>(b"") {
            let (key, PlatformThrottleRecord(saved)) = item?;
            let kept = self.login.restore(&key, &saved, clocks);
            if !kept {
                stale.remove(Kind::PlatformThrottle, &key);
                any_stale = true;
            }
        }
        if any_stale {
            self.platform.apply(stale)?;
        }
        Ok(())
    }

    /// Writes the throttle changes (a login that went through resets its account's count;
    /// sweeps forget); a failure is logged, and the counts stay in memory.
    pub(in crate::directory) fn persist_throttles_logged(&mut self) {
        if let Err(e) = self.persist_throttles() {
            tracing::error!(error = %e, "cannot write dashboard throttle state");
        }
    }

    /// Writes (or deletes) the dashboard throttle entries changed since the last time, in
    /// one batch.
    fn persist_throttles(&mut self) -> Result<(), DirectoryError> {
        if !self.login.has_changes() {
            return Ok(());
        }
        let mut batch = PlatformBatch::default();
        for (key, saved) in self.login.take_changes(Clocks::at(self.session_clock())) {
            match saved {
                Some(saved) => batch.put(&key, &PlatformThrottleRecord(saved))?,
                None => batch.remove(Kind::PlatformThrottle, &key),
            }
        }
        self.platform.apply(batch)?;
        Ok(())
    }
}
