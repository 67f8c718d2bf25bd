//! The tenant's in-memory rate limits and login throttle parameters, in one place: the state
//! builds its windows and throttles from these, and the capabilities that enforce them name
//! them from here.

use std::time::Duration;

/// Failed logins allowed per account or per address before the first block.
pub const FREE_LOGIN_FAILURES: u32 = 5;

/// The first block after the free failures; each further failure doubles it.
pub const FIRST_LOGIN_BLOCK: Duration = Duration::from_secs(15);

/// The longest block.
pub const MAX_LOGIN_BLOCK: Duration = Duration::from_secs(15 * 60);

/// Registrations per client address per minute (spec section 8).
pub const REGISTRATIONS_PER_MINUTE: u32 = 5;

/// Reset links asked for on the hosted sign-in page per client address per hour (as the
/// dashboard's own forgotten-password requests).
pub const RESET_REQUESTS_PER_IP_PER_HOUR: u32 = 20;

/// Guest sign-ins per client address per minute (spec section 8, as registration).
pub const GUESTS_PER_IP_PER_MINUTE: u32 = 5;

/// Guest sign-ins per API key (that is, per tenant) per hour (spec section 8).
pub const GUESTS_PER_KEY_PER_HOUR: u32 = 1000;

/// One link or code request per address per this long.
pub const REQUEST_SPACING: Duration = Duration::from_secs(60);

/// Step-up mails (codes and links together) per session per [`STEP_UP_MAIL_WINDOW`].
pub const STEP_UP_MAILS: u32 = 5;

/// The window of [`STEP_UP_MAILS`].
pub const STEP_UP_MAIL_WINDOW: Duration = Duration::from_secs(600);

/// Messages per number per hour (besides one a minute).
pub const SMS_PER_NUMBER_PER_HOUR: u32 = 5;

/// Messages requested per client address (IPv6: per /64) per hour.
pub const SMS_PER_IP_PER_HOUR: u32 = 10;

/// The dashboard's test messages per tenant per hour.
pub const SMS_TESTS_PER_HOUR: u32 = 10;

/// Passkey sign-in options per client address (IPv6: per /64) per minute: each holds a
/// pending ceremony for 5 minutes.
pub const PASSKEY_BEGINS_PER_MINUTE: u32 = 60;

/// Social sign-ins begun per client address (IPv6: per /64) per minute: each holds a stored
/// state for 10 minutes.
pub const SOCIAL_BEGINS_PER_MINUTE: u32 = 30;

/// Passkey step-up options per session per minute (each writes an audit event).
pub const PASSKEY_STEP_UP_OPTIONS_PER_MINUTE: u32 = 20;

/// Calls of the guardian routes per client address (IPv6: per /64) per minute: the consent
/// page, the portal, the export download and the management link need no key.
pub const GUARDIAN_CALLS_PER_MINUTE: u32 = 120;

/// Guardian consent requests per child per hour: each mails the guardian it names.
pub const GUARDIAN_ASKS_PER_HOUR: u32 = 3;

#[cfg(test)]
mod tests {
    use std::{net::IpAddr, time::Instant};

    use super::*;
    use crate::tenant::accounts::tests::tenant;

    #[test]
    fn the_spec_s_limits_are_the_ones_named_here() {
        // Spec section 8: guests as registration, 5 a minute per address; 1000 an hour per key.
        assert_eq!(REGISTRATIONS_PER_MINUTE, 5);
        assert_eq!(GUESTS_PER_IP_PER_MINUTE, 5);
        assert_eq!(GUESTS_PER_KEY_PER_HOUR, 1000);
    }

    #[tokio::test]
    async fn a_tenant_s_windows_admit_what_is_named_here_and_refuse_the_next_for_the_period() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let now = Instant::now();
        for _ in 0..REGISTRATIONS_PER_MINUTE {
            t.accounts.register_ips.hit(&ip, now).unwrap();
        }
        let retry = t.accounts.register_ips.hit(&ip, now).unwrap_err();
        assert!((1..=60).contains(&retry), "{retry}");
        for _ in 0..GUESTS_PER_IP_PER_MINUTE {
            t.guests.per_ip.hit(&ip, now).unwrap();
        }
        assert!(t.guests.per_ip.hit(&ip, now).is_err());
        for _ in 0..GUESTS_PER_KEY_PER_HOUR {
            t.guests.per_key.hit(&(), now).unwrap();
        }
        let retry = t.guests.per_key.hit(&(), now).unwrap_err();
        assert!(retry > 60 && retry <= 3600, "{retry}");
        let session = uuid::Uuid::now_v7();
        for _ in 0..STEP_UP_MAILS {
            t.step_up.mails.hit(&session, now).unwrap();
        }
        let retry = t.step_up.mails.hit(&session, now).unwrap_err();
        assert_eq!(retry, STEP_UP_MAIL_WINDOW.as_secs());
        t.cx.request_spacing.hit(&"k".to_owned(), now).unwrap();
        let retry = t.cx.request_spacing.hit(&"k".to_owned(), now).unwrap_err();
        assert_eq!(retry, REQUEST_SPACING.as_secs());
        // A period later each window admits again.
        assert!(t
            .accounts
            .register_ips
            .hit(&ip, now + Duration::from_secs(60))
            .is_ok());
        assert!(t
            .cx
            .request_spacing
            .hit(&"k".to_owned(), now + REQUEST_SPACING)
            .is_ok());
    }
}
