//! Unit tests of minor protection's pure parts: a person's age in whole years.

use super::hold::age_on;

#[test]
fn ages_count_whole_years_to_the_birthday() {
    let d = |y, m, day| {
        time::Date::from_calendar_date(
            y,
            time::Month::try_from(m).unwrap_or(time::Month::January),
            day,
        )
        .unwrap_or(time::Date::MIN)
    };
    assert_eq!(age_on(d(2010, 6, 15), d(2026, 6, 14)), 15);
    assert_eq!(age_on(d(2010, 6, 15), d(2026, 6, 15)), 16);
    assert_eq!(age_on(d(2010, 2, 28), d(2026, 1, 1)), 15);
    assert_eq!(age_on(d(2008, 2, 29), d(2026, 2, 28)), 17);
    assert_eq!(age_on(d(2008, 2, 29), d(2026, 3, 1)), 18);
}
