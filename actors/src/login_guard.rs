//! The rules in front of a password or sign-in code check, shared by end-user sign-ins (the
//! tenant actor) and dashboard logins (the directory): which failures count where, and which
//! rule refuses an attempt.
//!
//! - **Pair** (client address, account): a few consecutive failures, then blocks doubling to
//!   15 minutes. One person's typos block only that person on that network.
//! - **Account**: more consecutive failures from anywhere, then blocks doubling to 15 minutes:
//!   a guess spread over many addresses is still limited (NIST SP 800-63B 5.2.2).
//! - **Address** alone: a high count per window (`security.login_failures_per_address` per
//!   15 minutes), so an office, a school or a carrier's NAT is not refused for its users'
//!   typos, while a spray of one password over many accounts is refused once it is spent. Past
//!   it, when the server verifies CAPTCHAs, an attempt with a solved one goes on (its failure
//!   still counts); without one the answer asks for it.
//! - **Device**: an attempt presenting a valid device token of the account (set by an earlier
//!   sign-in to that account) is held to its own, stricter count instead of the three above: an
//!   attacker elsewhere cannot lock the owner out of a device they used before, and a stolen
//!   device token guesses no faster than a person.
//!
//! Every throttle here is persisted by its owner (records numbered by [`LoginThrottles::restore`]
//! and [`LoginThrottles::take_changes`]), so a restart forgives nothing. Refusals are counted
//! per rule for the metrics ([`refusals`]).

use std::{
    net::IpAddr,
    sync::atomic::{AtomicU64, Ordering},
    time::{Duration, Instant},
};

use serde::Serialize;
use uuid::Uuid;

use crate::throttle::{saved_key, throttle_ip, Clocks, SavedCount, Throttle, ThrottleKey};

/// Consecutive failures per (address, account) before the first block.
pub const FREE_PAIR_FAILURES: u32 = 5;
/// Consecutive failures per account, from any address, before the first block.
pub const FREE_ACCOUNT_FAILURES: u32 = 10;
/// Consecutive failures per device token before the first block: stricter than the pair's.
pub const FREE_DEVICE_FAILURES: u32 = 3;
/// The first block of the doubling rules; each further failure doubles it.
pub const FIRST_BLOCK: Duration = Duration::from_secs(15);
/// The longest block of the doubling rules.
pub const MAX_BLOCK: Duration = Duration::from_secs(15 * 60);
/// The window of the per-address count.
pub const ADDRESS_WINDOW: Duration = Duration::from_secs(15 * 60);
/// The default of `security.login_failures_per_address`.
pub const DEFAULT_FAILURES_PER_ADDRESS: u32 = 100;

/// The record numbers of the throttles (never renumber: they are in stored keys). 1 and 2 are
/// the numbers the account and address throttles always had; 3 is the tenant's step-up codes.
const ACCOUNTS: u8 = 1;
const ADDRESSES: u8 = 2;
const PAIRS: u8 = 4;
const DEVICES: u8 = 5;

/// The rule that refused an attempt, in audit events and the metrics' `rule` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoginRule {
    /// The (address, account) pair's consecutive failures.
    Pair,
    /// The account's consecutive failures from every address.
    Account,
    /// The address's failures in the window (no CAPTCHA configured).
    Address,
    /// The address's failures in the window, with a CAPTCHA configured and none solved.
    Captcha,
    /// The device token's consecutive failures.
    Device,
}

impl LoginRule {
    pub const ALL: [LoginRule; 5] = [
        LoginRule::Pair,
        LoginRule::Account,
        LoginRule::Address,
        LoginRule::Captcha,
        LoginRule::Device,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LoginRule::Pair => "pair",
            LoginRule::Account => "account",
            LoginRule::Address => "address",
            LoginRule::Captcha => "captcha",
            LoginRule::Device => "device",
        }
    }
}

/// Attempts refused per rule since the process started, for the metrics (one process, one
/// count, over every tenant and the dashboard).
static REFUSALS: [AtomicU64; 5] = [
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
];

/// The refusals so far, per rule.
pub fn refusals() -> [(LoginRule, u64); 5] {
    LoginRule::ALL.map(|rule| (rule, REFUSALS[rule as usize].load(Ordering::Relaxed)))
}

fn count_refusal(rule: LoginRule) {
    REFUSALS[rule as usize].fetch_add(1, Ordering::Relaxed);
}

/// What the server knows of a CAPTCHA for this attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Captcha {
    /// The server verifies none: past the address's count, attempts are refused.
    #[default]
    Off,
    /// One is configured and the attempt carries none.
    Unsolved,
    /// The attempt carried one the verifier accepted.
    Solved,
}

/// One attempt: its account key (a normalised e-mail address, or a phone number), its client
/// address, the device the caller found valid for that account, and its CAPTCHA.
#[derive(Clone, Debug)]
pub struct Attempt<'a> {
    pub account: &'a str,
    pub ip: IpAddr,
    pub device: Option<Uuid>,
    pub captcha: Captcha,
}

impl<'a> Attempt<'a> {
    /// An attempt without a device token, whose CAPTCHA is `captcha`.
    pub fn new(account: &'a str, ip: IpAddr, captcha: Captcha) -> Self {
        Attempt {
            account,
            ip,
            device: None,
            captcha,
        }
    }
}

/// Why an attempt may not be checked now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Blocked by `rule` for `retry_after` seconds.
    Throttled { rule: LoginRule, retry_after: u64 },
    /// Past the address's count: a solved CAPTCHA lets it through.
    CaptchaRequired,
}

impl Refusal {
    pub fn rule(self) -> LoginRule {
        match self {
            Refusal::Throttled { rule, .. } => rule,
            Refusal::CaptchaRequired => LoginRule::Captcha,
        }
    }
}

/// The four throttles of one login surface.
#[derive(Debug)]
pub struct LoginThrottles {
    pairs: Throttle<(IpAddr, String)>,
    accounts: Throttle<String>,
    addresses: Throttle<IpAddr>,
    devices: Throttle<Uuid>,
}

impl LoginThrottles {
    /// The rules above, with `per_address` failures per address per [`ADDRESS_WINDOW`].
    pub fn new(per_address: u32) -> Self {
        LoginThrottles {
            pairs: Throttle::new(FREE_PAIR_FAILURES, FIRST_BLOCK, MAX_BLOCK),
            accounts: Throttle::new(FREE_ACCOUNT_FAILURES, FIRST_BLOCK, MAX_BLOCK),
            addresses: Throttle::per_window(per_address, ADDRESS_WINDOW),
            devices: Throttle::new(FREE_DEVICE_FAILURES, FIRST_BLOCK, MAX_BLOCK),
        }
    }

    fn pair(attempt: &Attempt<'_>) -> (IpAddr, String) {
        (throttle_ip(attempt.ip), attempt.account.to_owned())
    }

    /// Whether `attempt` may be checked now; a refusal is counted for the metrics.
    pub fn check(&self, attempt: &Attempt<'_>) -> Result<(), Refusal> {
        let refusal = self.refusal(attempt, Instant::now());
        match refusal {
            Some(r) => {
                count_refusal(r.rule());
                Err(r)
            }
            None => Ok(()),
        }
    }

    fn refusal(&self, attempt: &Attempt<'_>, now: Instant) -> Option<Refusal> {
        if let Some(device) = attempt.device {
            return self
                .devices
                .blocked(&device, now)
                .map(|retry_after| Refusal::Throttled {
                    rule: LoginRule::Device,
                    retry_after,
                });
        }
        let blocked = [
            (
                LoginRule::Pair,
                self.pairs.blocked(&Self::pair(attempt), now),
            ),
            (
                LoginRule::Account,
                self.accounts.blocked(&attempt.account.to_owned(), now),
            ),
        ]
        .into_iter()
        .filter_map(|(rule, wait)| wait.map(|retry_after| (rule, retry_after)))
        .max_by_key(|(_, retry_after)| *retry_after);
        if let Some((rule, retry_after)) = blocked {
            return Some(Refusal::Throttled { rule, retry_after });
        }
        let retry_after = self.addresses.blocked(&throttle_ip(attempt.ip), now)?;
        match attempt.captcha {
            Captcha::Solved => None,
            Captcha::Unsolved => Some(Refusal::CaptchaRequired),
            Captcha::Off => Some(Refusal::Throttled {
                rule: LoginRule::Address,
                retry_after,
            }),
        }
    }

    /// Counts a failed check of `attempt`; answers the rules it made refuse, each with its
    /// block in seconds (for the audit event).
    pub fn fail(&mut self, attempt: &Attempt<'_>) -> Vec<(LoginRule, u64)> {
        let now = Instant::now();
        let mut began = Vec::new();
        if let Some(device) = attempt.device {
            if let Some(secs) = self.devices.fail(&device, now) {
                began.push((LoginRule::Device, secs));
            }
            return began;
        }
        if let Some(secs) = self.pairs.fail(&Self::pair(attempt), now) {
            began.push((LoginRule::Pair, secs));
        }
        if let Some(secs) = self.accounts.fail(&attempt.account.to_owned(), now) {
            began.push((LoginRule::Account, secs));
        }
        let captcha = attempt.captcha;
        if let Some(secs) = self.addresses.fail(&throttle_ip(attempt.ip), now) {
            let rule = if captcha == Captcha::Off {
                LoginRule::Address
            } else {
                LoginRule::Captcha
            };
            began.push((rule, secs));
        }
        began
    }

    /// A successful check of `attempt`: the pair's failures are forgiven, and the device's
    /// (with a device token) or else the account's. A known device's success leaves the
    /// account's count alone: otherwise each of the owner's sign-ins would give someone
    /// guessing elsewhere a fresh set of tries. The address's are never forgiven: one account
    /// of an attacker's own must not launder failures sprayed over other accounts.
    pub fn succeed(&mut self, attempt: &Attempt<'_>) {
        self.pairs.reset(&Self::pair(attempt));
        match attempt.device {
            Some(device) => self.devices.reset(&device),
            None => self.accounts.reset(&attempt.account.to_owned()),
        }
    }

    /// Forgives `account`'s consecutive failures (its owner proved it another way: a reset
    /// link, a guardian's consent).
    pub fn forgive_account(&mut self, account: &str) {
        self.accounts.reset(&account.to_owned());
    }

    /// Forgets everything counted of `account` (its own count and every address's pair with
    /// it): the address leaves the throttles with an erasure or a change of address.
    pub fn forget_account(&mut self, account: &str) {
        self.accounts.reset(&account.to_owned());
        self.pairs.reset_where(|(_, a)| a == account);
    }

    /// Seconds until `account` may be tried again from an address without a device token of
    /// it, if it is blocked now (the check of a signed-in user's own password, which has no
    /// address rule).
    pub fn account_blocked(&self, account: &str) -> Option<u64> {
        self.accounts.blocked(&account.to_owned(), Instant::now())
    }

    /// Counts a failure against `account` alone (a signed-in user's wrong current password).
    pub fn fail_account(&mut self, account: &str) {
        self.accounts.fail(&account.to_owned(), Instant::now());
    }

    /// Whether the client address is within its count (a passkey sign-in, whose refusals count
    /// against the address alone: a signature is no guess at an account's secret).
    pub fn address_gate(&self, ip: IpAddr) -> Result<(), Refusal> {
        match self.addresses.blocked(&throttle_ip(ip), Instant::now()) {
            Some(retry_after) => {
                count_refusal(LoginRule::Address);
                Err(Refusal::Throttled {
                    rule: LoginRule::Address,
                    retry_after,
                })
            }
            None => Ok(()),
        }
    }

    /// Whether a known device may try now (the second step after its password step).
    pub fn device_gate(&self, device: Uuid) -> Result<(), Refusal> {
        match self.devices.blocked(&device, Instant::now()) {
            Some(retry_after) => {
                count_refusal(LoginRule::Device);
                Err(Refusal::Throttled {
                    rule: LoginRule::Device,
                    retry_after,
                })
            }
            None => Ok(()),
        }
    }

    /// Counts a failure against a known device alone.
    pub fn fail_device(&mut self, device: Uuid) {
        self.devices.fail(&device, Instant::now());
    }

    /// Forgives a known device's failures (its sign-in went through).
    pub fn device_succeeded(&mut self, device: Uuid) {
        self.devices.reset(&device);
    }

    /// Counts a failure against the client address alone.
    pub fn fail_address(&mut self, ip: IpAddr) {
        self.addresses.fail(&throttle_ip(ip), Instant::now());
    }

    /// Loads a stored entry keyed `key` (its record key: throttle number, then the key);
    /// false when it is not one of these throttles' or has nothing left to hold.
    pub fn restore(&mut self, key: &[u8], saved: &SavedCount, clocks: Clocks) -> bool {
        match key.split_first() {
            Some((&ACCOUNTS, k)) => {
                String::from_key_bytes(k).is_some_and(|k| self.accounts.restore(k, saved, clocks))
            }
            Some((&ADDRESSES, k)) => {
                IpAddr::from_key_bytes(k).is_some_and(|k| self.addresses.restore(k, saved, clocks))
            }
            Some((&PAIRS, k)) => <(IpAddr, String)>::from_key_bytes(k)
                .is_some_and(|k| self.pairs.restore(k, saved, clocks)),
            Some((&DEVICES, k)) => {
                Uuid::from_key_bytes(k).is_some_and(|k| self.devices.restore(k, saved, clocks))
            }
            _ => false,
        }
    }

    /// Whether an entry changed since the changes were last taken.
    pub fn has_changes(&self) -> bool {
        self.pairs.has_changes()
            || self.accounts.has_changes()
            || self.addresses.has_changes()
            || self.devices.has_changes()
    }

    /// The entries changed since the last call, by record key (`None`: delete the record).
    pub fn take_changes(&mut self, clocks: Clocks) -> Vec<(Vec<u8>, Option<SavedCount>)> {
        let mut out = Vec::new();
        keyed(&mut out, PAIRS, self.pairs.take_changes(clocks));
        keyed(&mut out, ACCOUNTS, self.accounts.take_changes(clocks));
        keyed(&mut out, ADDRESSES, self.addresses.take_changes(clocks));
        keyed(&mut out, DEVICES, self.devices.take_changes(clocks));
        out
    }

    /// Forgets the entries with nothing left to hold.
    pub fn sweep(&mut self) {
        let now = Instant::now();
        self.pairs.sweep(now);
        self.accounts.sweep(now);
        self.addresses.sweep(now);
        self.devices.sweep(now);
    }
}

fn keyed<K: ThrottleKey>(
    out: &mut Vec<(Vec<u8>, Option<SavedCount>)>,
    throttle: u8,
    changes: Vec<(K, Option<SavedCount>)>,
) {
    out.extend(
        changes
            .into_iter()
            .map(|(k, saved)| (saved_key(throttle, &k), saved)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn office() -> IpAddr {
        "198.51.100.7".parse().unwrap()
    }

    #[test]
    fn colleagues_typos_do_not_block_each_other() {
        let mut t = LoginThrottles::new(100);
        let names: Vec<String> = (0..50).map(|i| format!("u{i}@example.com")).collect();
        for name in &names {
            let a = Attempt::new(name, office(), Captcha::Off);
            assert_eq!(t.check(&a), Ok(()));
            assert!(t.fail(&a).is_empty());
        }
        for name in &names {
            assert_eq!(t.check(&Attempt::new(name, office(), Captcha::Off)), Ok(()));
        }
    }

    #[test]
    fn one_address_over_the_window_is_refused_or_asked_for_a_captcha() {
        let mut t = LoginThrottles::new(20);
        for i in 0..20 {
            let name = format!("v{i}@example.com");
            t.fail(&Attempt::new(&name, office(), Captcha::Off));
        }
        let next = Attempt::new("w@example.com", office(), Captcha::Off);
        assert!(matches!(
            t.check(&next),
            Err(Refusal::Throttled {
                rule: LoginRule::Address,
                retry_after
            }) if retry_after > 800
        ));
        let unsolved = Attempt::new("w@example.com", office(), Captcha::Unsolved);
        assert_eq!(t.check(&unsolved), Err(Refusal::CaptchaRequired));
        let solved = Attempt::new("w@example.com", office(), Captcha::Solved);
        assert_eq!(t.check(&solved), Ok(()));
        // Another address is not concerned.
        let elsewhere = Attempt::new(
            "w@example.com",
            "203.0.113.9".parse().unwrap(),
            Captcha::Off,
        );
        assert_eq!(t.check(&elsewhere), Ok(()));
    }

    #[test]
    fn a_known_device_passes_a_locked_account_and_has_its_own_stricter_count() {
        let mut t = LoginThrottles::new(100);
        for i in 0..50u8 {
            let ip = IpAddr::from([203, 0, 113, i]);
            t.fail(&Attempt::new("owner@example.com", ip, Captcha::Off));
        }
        let home = IpAddr::from([192, 0, 2, 1]);
        let new_device = Attempt::new("owner@example.com", home, Captcha::Off);
        assert!(matches!(
            t.check(&new_device),
            Err(Refusal::Throttled {
                rule: LoginRule::Account,
                ..
            })
        ));
        let device = Uuid::now_v7();
        let known = Attempt {
            device: Some(device),
            ..new_device.clone()
        };
        assert_eq!(t.check(&known), Ok(()));
        // The owner's success on the device does not unlock the account for others.
        t.succeed(&known);
        assert!(t.check(&new_device).is_err());
        for _ in 0..FREE_DEVICE_FAILURES - 1 {
            assert!(t.fail(&known).is_empty());
        }
        assert_eq!(t.fail(&known), vec![(LoginRule::Device, 15)]);
        assert!(matches!(
            t.check(&known),
            Err(Refusal::Throttled {
                rule: LoginRule::Device,
                ..
            })
        ));
    }

    #[test]
    fn the_pair_blocks_first_and_a_success_forgives_it() {
        let mut t = LoginThrottles::new(100);
        let a = Attempt::new("p@example.com", office(), Captcha::Off);
        for _ in 0..FREE_PAIR_FAILURES - 1 {
            assert!(t.fail(&a).is_empty());
        }
        assert_eq!(t.fail(&a), vec![(LoginRule::Pair, 15)]);
        assert!(matches!(
            t.check(&a),
            Err(Refusal::Throttled {
                rule: LoginRule::Pair,
                retry_after: 15
            })
        ));
        t.succeed(&a);
        assert_eq!(t.check(&a), Ok(()));
    }

    #[test]
    fn every_throttle_round_trips_through_its_records() {
        let mut t = LoginThrottles::new(2);
        let device = Uuid::now_v7();
        for _ in 0..FREE_ACCOUNT_FAILURES {
            t.fail(&Attempt::new("r@example.com", office(), Captcha::Off));
        }
        let known = Attempt {
            device: Some(device),
            ..Attempt::new("r@example.com", office(), Captcha::Off)
        };
        for _ in 0..FREE_DEVICE_FAILURES {
            t.fail(&known);
        }
        let clocks = Clocks::now();
        let changes = t.take_changes(clocks);
        assert_eq!(changes.len(), 4);
        let mut fresh = LoginThrottles::new(2);
        for (key, saved) in &changes {
            assert!(fresh.restore(key, saved.as_ref().unwrap(), clocks));
        }
        let plain = Attempt::new("r@example.com", office(), Captcha::Off);
        assert_eq!(t.check(&plain), fresh.check(&plain));
        assert_eq!(t.check(&known), fresh.check(&known));
        let other = Attempt::new("s@example.com", office(), Captcha::Off);
        assert!(matches!(
            fresh.check(&other),
            Err(Refusal::Throttled {
                rule: LoginRule::Address,
                ..
            })
        ));
        assert!(!fresh.restore(&[9, 1, 2], changes[0].1.as_ref().unwrap(), clocks));
    }
}
