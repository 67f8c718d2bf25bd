//! How many members each organization has, as last counted: the tier's member limit is
//! checked at every join (a just-in-time sign-in joins one at a time, at load), and counting
//! the memberships again each time cost a walk of all of them.
//!
//! A count is made by walking the organization's memberships once, then moves with each
//! membership written (`joined`); a removal forgets it (`forget`), so it is counted again the
//! next time. A count is trusted for [`FRESH_FOR`] at most: a join whose batch was then never
//! written (an error after the membership was staged) leaves it one too high for a while, a
//! limit refused one member early, never one passed.

use std::{
    cell::RefCell,
    collections::HashMap,
    time::{Duration, Instant},
};

use uuid::Uuid;

/// How long a count is trusted before it is made again.
const FRESH_FOR: Duration = Duration::from_secs(60);
/// Organizations whose count is kept at once (past it, every count is forgotten).
const KEPT: usize = 4096;

/// The counts, in the tenant's context (read where only a shared borrow is at hand).
#[derive(Default)]
pub struct MemberCounts(RefCell<HashMap<Uuid, (usize, Instant)>>);

impl MemberCounts {
    /// The count of `org`, made with `count` when none is fresh.
    pub(in crate::tenant) fn get<E>(
        &self,
        org: Uuid,
        count: impl FnOnce() -> Result<usize, E>,
    ) -> Result<usize, E> {
        if let Some((n, at)) = self.0.borrow().get(&org) {
            if at.elapsed() < FRESH_FOR {
                return Ok(*n);
            }
        }
        let n = count()?;
        let mut kept = self.0.borrow_mut();
        if kept.len() >= KEPT {
            kept.clear();
        }
        kept.insert(org, (n, Instant::now()));
        Ok(n)
    }

    /// One more member of `org` (staged in the command's batch).
    pub(in crate::tenant) fn joined(&self, org: Uuid) {
        if let Some((n, _)) = self.0.borrow_mut().get_mut(&org) {
            *n += 1;
        }
    }

    /// A member of `org` leaves, or `org` goes: counted again when next asked.
    pub(in crate::tenant) fn forget(&self, org: Uuid) {
        self.0.borrow_mut().remove(&org);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_count_is_made_once_moves_with_joins_and_is_made_again_after_a_removal() {
        let counts = MemberCounts::default();
        let org = Uuid::now_v7();
        let walks = std::cell::Cell::new(0);
        let walk = |n: usize| {
            walks.set(walks.get() + 1);
            Ok::<_, ()>(n)
        };
        assert_eq!(counts.get(org, || walk(3)).unwrap(), 3);
        assert_eq!(counts.get(org, || walk(99)).unwrap(), 3);
        counts.joined(org);
        assert_eq!(counts.get(org, || walk(99)).unwrap(), 4);
        assert_eq!(walks.get(), 1);
        counts.forget(org);
        assert_eq!(counts.get(org, || walk(2)).unwrap(), 2);
        assert_eq!(walks.get(), 2);
        // A join to an organization not counted stays uncounted.
        let other = Uuid::now_v7();
        counts.joined(other);
        assert_eq!(counts.get(other, || walk(7)).unwrap(), 7);
        // A failed walk keeps nothing.
        let third = Uuid::now_v7();
        assert!(counts.get(third, || Err::<usize, ()>(())).is_err());
        assert_eq!(counts.get(third, || walk(1)).unwrap(), 1);
    }
}
