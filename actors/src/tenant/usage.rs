//! Monthly counters: the month's active users and the month's text messages, each one
//! persisted [`MauRecord`] (`YYYY-MM` and a count) that starts again at zero with the month.

use serde::{Deserialize, Serialize};
use tessera_storage::Kind;
use time::OffsetDateTime;

/// Users active in one calendar month: a user counts once a month, at its creation or its
/// first login or refresh of the month.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MauRecord {
    /// `YYYY-MM` (UTC).
    pub month: String,
    pub count: u64,
}

tessera_storage::record!(MauRecord in TenantRecord: Kind::Usage, "monthly active users", version 1);

impl MauRecord {
    /// The count of `now`'s month (0 when the record is of an earlier month).
    pub fn in_month(&self, now: OffsetDateTime) -> u64 {
        if self.month == month_of(now) {
            self.count
        } else {
            0
        }
    }

    /// Counts one more in `now`'s month, starting the month's count at zero when it is new.
    pub fn add(&mut self, now: OffsetDateTime) {
        let month = month_of(now);
        if self.month != month {
            *self = MauRecord { month, count: 0 };
        }
        self.count += 1;
    }
}

/// The key of this month's active-user count.
pub const MAU_KEY: &[u8] = b"mau";

pub fn month_of(t: OffsetDateTime) -> String {
    format!("{:04}-{:02}", t.year(), u8::from(t.month()))
}

/// The key of this month's message count.
pub const SMS_USAGE_KEY: &[u8] = b"sms";

/// One UTC day's sign-ins and refused sign-ins (the `auth.login.succeeded` and
/// `auth.login.failed` events), for the console's chart: a record a day, under
/// [`activity_key`], counted in the batch that writes the event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityDay {
    /// `YYYY-MM-DD` (UTC).
    pub day: String,
    pub sign_ins: u64,
    pub failures: u64,
}

tessera_storage::record!(ActivityDay in TenantRecord: Kind::Usage, "sign-in activity of a day", version 1);

/// The key of `day`'s activity (`YYYY-MM-DD`).
pub fn activity_key(day: &str) -> Vec<u8> {
    format!("activity/{day}").into_bytes()
}

pub fn day_of(t: OffsetDateTime) -> String {
    format!("{:04}-{:02}-{:02}", t.year(), u8::from(t.month()), t.day())
}

impl ActivityDay {
    /// Counts one sign-in (or a refused one) on `now`'s day, starting the day at zero when
    /// it is new.
    pub fn count(&mut self, now: OffsetDateTime, succeeded: bool) {
        let day = day_of(now);
        if self.day != day {
            *self = ActivityDay {
                day,
                ..ActivityDay::default()
            };
        }
        if succeeded {
            self.sign_ins += 1;
        } else {
            self.failures += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn a_days_activity_starts_again_at_midnight_utc() {
        let mut a = ActivityDay::default();
        a.count(datetime!(2026-11-29 23:59:59 UTC), true);
        a.count(datetime!(2026-11-29 23:59:59 UTC), false);
        assert_eq!(
            (a.day.as_str(), a.sign_ins, a.failures),
            ("2026-11-29", 1, 1)
        );
        a.count(datetime!(2026-11-30 00:00:00 UTC), false);
        assert_eq!(
            (a.day.as_str(), a.sign_ins, a.failures),
            ("2026-11-30", 0, 1)
        );
        assert_eq!(activity_key("2026-11-30"), b"activity/2026-11-30".to_vec());
    }

    #[test]
    fn a_count_belongs_to_its_month_and_starts_again_at_the_next() {
        let march = datetime!(2026-03-31 23:59:59 UTC);
        let april = datetime!(2026-04-01 00:00:00 UTC);
        let mut r = MauRecord::default();
        assert_eq!(r.in_month(march), 0);
        r.add(march);
        r.add(march);
        assert_eq!((r.month.as_str(), r.count), ("2026-03", 2));
        assert_eq!(r.in_month(march), 2);
        // A month later nothing of March counts, until April's first.
        assert_eq!(r.in_month(april), 0);
        r.add(april);
        assert_eq!((r.month.as_str(), r.count), ("2026-04", 1));
        // The same month of another year is another month.
        assert_eq!(r.in_month(datetime!(2027-04-15 12:00:00 UTC)), 0);
    }

    #[test]
    fn months_are_zero_padded_year_month() {
        assert_eq!(month_of(datetime!(0987-01-05 00:00:00 UTC)), "0987-01");
        assert_eq!(month_of(datetime!(2026-12-01 00:00:00 UTC)), "2026-12");
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let mut r = MauRecord::default();
        r.add(datetime!(2026-05-02 10:00:00 UTC));
        let back: MauRecord = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
        assert_eq!(back.in_month(datetime!(2026-05-20 10:00:00 UTC)), 1);
        assert_ne!(MAU_KEY, SMS_USAGE_KEY);
    }
}
