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

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

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
