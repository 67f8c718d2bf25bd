//! Monthly counters: the month's active users and the month's text messages, each one
//! persisted [`MauRecord`] (`YYYY-MM` and a count) that starts again at zero with the month.

use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, Record, TenantRecord};
use time::OffsetDateTime;

/// Users active in one calendar month: a user counts once a month, at its creation or its
/// first login or refresh of the month.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MauRecord {
    /// `YYYY-MM` (UTC).
    pub month: String,
    pub count: u64,
}

impl Record for MauRecord {
    const KIND: Kind = Kind::Usage;
    const NAME: &'static str = "monthly active users";
    const VERSION: u16 = 1;
}
impl TenantRecord for MauRecord {}

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
