//! What delivery holds: the messages handed to a channel (mail or text messages) and not yet
//! delivered or given up, sending or waiting for their next attempt. The postman also uses it
//! to ignore a message already in its hands, so the mail gauges show exactly what it holds.
//!
//! It keeps ids and times, never an address or a message, and reads no storage: a tenant's
//! persisted mail queue stays its actor's (see the invariants in ARCHITECTURE.md).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use uuid::Uuid;

/// The messages of one channel in delivery's hands, with when each was queued. Cloned into
/// the channel's worker and the metrics.
#[derive(Clone, Default)]
pub struct Backlog(Arc<Mutex<HashMap<Uuid, SystemTime>>>);

/// One message counted in a [`Backlog`] until this is dropped: when its delivery ends, also
/// by an abort or a panic.
pub struct Entry {
    backlog: Backlog,
    id: Uuid,
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.backlog.lock().remove(&self.id);
    }
}

/// A backlog at one moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Depth {
    /// Messages held.
    pub messages: usize,
    /// Since the oldest of them was queued; zero when there is none.
    pub oldest: Duration,
}

impl Backlog {
    /// Counts message `id` until the entry is dropped, or answers `None` when it is already
    /// counted (being delivered). Its age runs from the time in its UUID v7 id, when its
    /// tenant queued it, so a message submitted again after a restart keeps its age; an id
    /// of another version counts from now.
    pub fn enter(&self, id: Uuid) -> Option<Entry> {
        let queued = queued_at(id).unwrap_or_else(SystemTime::now);
        let mut held = self.lock();
        if held.contains_key(&id) {
            return None;
        }
        held.insert(id, queued);
        Some(Entry {
            backlog: self.clone(),
            id,
        })
    }

    /// How many messages are held and the age of the oldest, at `now`.
    pub fn depth(&self, now: SystemTime) -> Depth {
        let held = self.lock();
        let oldest = held.values().min().map_or(Duration::ZERO, |t| {
            now.duration_since(*t).unwrap_or_default()
        });
        Depth {
            messages: held.len(),
            oldest,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Uuid, SystemTime>> {
        // Nothing here is left half-changed by a panic: a poisoned map is still right.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The creation time a UUID v7 carries (milliseconds since the Unix epoch).
fn queued_at(id: Uuid) -> Option<SystemTime> {
    if id.get_version_num() != 7 {
        return None;
    }
    let (secs, nanos) = id.get_timestamp()?.to_unix();
    UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn counts_each_message_once_until_its_entry_drops_and_ages_from_its_id() {
        let backlog = Backlog::default();
        let now = SystemTime::now();
        assert_eq!(
            backlog.depth(now),
            Depth {
                messages: 0,
                oldest: Duration::ZERO
            }
        );
        // A message queued 90 s ago (its v7 id says so), and one queued now.
        let ts = uuid::Timestamp::from_unix(
            uuid::NoContext,
            now.duration_since(UNIX_EPOCH).unwrap().as_secs() - 90,
            0,
        );
        let old = Uuid::new_v7(ts);
        let new = Uuid::now_v7();
        let first = backlog.enter(old).unwrap();
        assert!(backlog.enter(old).is_none(), "already held");
        let second = backlog.enter(new).unwrap();
        let d = backlog.depth(now);
        assert_eq!(d.messages, 2);
        assert!((89..=91).contains(&d.oldest.as_secs()), "{d:?}");
        drop(first);
        let d = backlog.depth(SystemTime::now());
        assert_eq!(d.messages, 1);
        assert!(d.oldest < Duration::from_secs(5), "{d:?}");
        // Given back, the id may come in again.
        let again = backlog.enter(old).unwrap();
        assert_eq!(backlog.depth(now).messages, 2);
        drop((second, again));
        assert_eq!(backlog.depth(now).messages, 0);
        // A v4 id counts from when it came in.
        let v4 = backlog.enter(Uuid::new_v4()).unwrap();
        assert!(backlog.depth(SystemTime::now()).oldest < Duration::from_secs(5));
        drop(v4);
    }
}
