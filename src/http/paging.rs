//! The paging of list routes: `?limit=` and `?cursor=`, read as text so that a bad value is a
//! named field error, and the `pagination` object of the page answered.
//!
//! Its own module because the dashboard's lists (agents, their activity, webhook deliveries,
//! the audit log), user management and the user's own sessions page alike, and none of them
//! owns the rule.

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::error::FieldErrors;

// Where a page stands in its list. (A plain comment: a doc comment would become the
// schema's description in the OpenAPI document.)
#[derive(Serialize, ToSchema)]
pub struct Pagination {
    pub next_cursor: Option<String>,
    pub has_more: bool,
}

impl Pagination {
    /// A page followed by the one that starts at `next` (none: the last page).
    pub fn next(next: Option<String>) -> Self {
        Pagination {
            has_more: next.is_some(),
            next_cursor: next,
        }
    }
}

/// `?limit=`: `default` when absent; a field error unless an integer from 1 to `max`.
pub fn limit(e: &mut FieldErrors, raw: Option<&str>, default: usize, max: usize) -> usize {
    let limit = match raw {
        None => Some(default),
        Some(l) => l.parse::<usize>().ok().filter(|n| (1..=max).contains(n)),
    };
    e.check(
        "limit",
        limit.is_some(),
        format!("must be an integer from 1 to {max}"),
    );
    limit.unwrap_or(default)
}

/// `?cursor=` as `parse` reads it: none when absent; a field error when `parse` refuses it.
pub fn cursor<C>(
    e: &mut FieldErrors,
    raw: Option<&str>,
    parse: impl FnOnce(&str) -> Option<C>,
) -> Option<C> {
    let cursor = raw.map(parse);
    e.check(
        "cursor",
        cursor.as_ref().is_none_or(Option::is_some),
        "is not a cursor of this list",
    );
    cursor.flatten()
}

/// A cursor that is the id of the last item seen.
pub fn id_cursor(c: &str) -> Option<Uuid> {
    Uuid::parse_str(c).ok()
}

/// A cursor that is the storage key of the last item seen: `len` bytes, in hex.
pub fn key_cursor(len: usize) -> impl FnOnce(&str) -> Option<Vec<u8>> {
    move |c| hex::decode(c).ok().filter(|b| b.len() == len)
}
