//! Pending passkey ceremonies: the WebAuthn state between a begin and its finish, kept in
//! memory by challenge for 5 minutes and taken out by the first finish that names it
//! (`passkeys.rs` has the ceremonies themselves).

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use uuid::Uuid;
use webauthn_rs_core::proto::{AuthenticationState, RegistrationState};

/// How long a ceremony waits for its finish.
pub const CEREMONY_TTL: Duration = Duration::from_secs(300);
/// Ceremonies a tenant keeps pending at once; past it, expired ones are swept and then the
/// oldest go.
pub const MAX_CEREMONIES: usize = 10_000;

/// What a pending ceremony is for, and whom.
pub enum Ceremony {
    Register {
        session: Uuid,
        user: Uuid,
        state: Box<RegistrationState>,
    },
    /// `user`: the user the sign-in named by handle; `None`: discoverable.
    SignIn {
        user: Option<Uuid>,
        state: Box<AuthenticationState>,
    },
    StepUp {
        session: Uuid,
        user: Uuid,
        state: Box<AuthenticationState>,
    },
}

struct Pending {
    ceremony: Ceremony,
    expires: Instant,
}

impl Ceremony {
    /// The session a registration or a step-up belongs to, and which of the two it is.
    fn session_slot(&self) -> Option<(Uuid, bool)> {
        match self {
            Ceremony::Register { session, .. } => Some((*session, true)),
            Ceremony::StepUp { session, .. } => Some((*session, false)),
            Ceremony::SignIn { .. } => None,
        }
    }
}

/// The tenant's pending ceremonies, by challenge. A session holds at most one registration
/// and one step-up: a new one replaces the old, as with the other session-bound challenges.
#[derive(Default)]
pub struct Ceremonies {
    pending: HashMap<Vec<u8>, Pending>,
    /// The challenge of each session's registration (`true`) or step-up (`false`).
    by_session: HashMap<(Uuid, bool), Vec<u8>>,
}

impl Ceremonies {
    pub(super) fn insert(&mut self, challenge: Vec<u8>, ceremony: Ceremony, now: Instant) {
        if let Some(slot) = ceremony.session_slot() {
            if let Some(old) = self.by_session.insert(slot, challenge.clone()) {
                self.pending.remove(&old);
            }
        }
        if self.pending.len() >= MAX_CEREMONIES {
            self.pending.retain(|_, p| p.expires > now);
            let pending = &self.pending;
            self.by_session.retain(|_, c| pending.contains_key(c));
        }
        if self.pending.len() >= MAX_CEREMONIES {
            let oldest = self
                .pending
                .iter()
                .min_by_key(|(_, p)| p.expires)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.pending.remove(&k);
            }
        }
        self.pending.insert(
            challenge,
            Pending {
                ceremony,
                expires: now + CEREMONY_TTL,
            },
        );
    }

    /// Drops every ceremony of `users` (registrations and step-ups of their sessions, sign-ins
    /// named by their handle); answers how many.
    pub(super) fn forget_users(&mut self, users: &std::collections::HashSet<Uuid>) -> usize {
        let before = self.pending.len();
        self.pending.retain(|_, p| match &p.ceremony {
            Ceremony::Register { user, .. } | Ceremony::StepUp { user, .. } => {
                !users.contains(user)
            }
            Ceremony::SignIn { user, .. } => !user.is_some_and(|u| users.contains(&u)),
        });
        let pending = &self.pending;
        self.by_session.retain(|_, c| pending.contains_key(c));
        before - self.pending.len()
    }

    /// Takes out the live ceremony of `challenge`.
    pub(super) fn take(&mut self, challenge: &[u8], now: Instant) -> Option<Ceremony> {
        let pending = self.pending.remove(challenge)?;
        if let Some(slot) = pending.ceremony.session_slot() {
            if self.by_session.get(&slot).is_some_and(|c| c == challenge) {
                self.by_session.remove(&slot);
            }
        }
        (pending.expires > now).then_some(pending.ceremony)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use webauthn_rs_core::{proto::UserVerificationPolicy, WebauthnCore};

    fn state() -> Box<AuthenticationState> {
        let rp = WebauthnCore::new_unsafe_experts_only(
            "t",
            "a.example",
            vec![url::Url::parse("https://a.example").expect("url")],
            CEREMONY_TTL,
            None,
            None,
        );
        let builder = rp
            .new_challenge_authenticate_builder(Vec::new(), Some(UserVerificationPolicy::Required))
            .expect("builder");
        Box::new(
            rp.generate_challenge_authenticate(builder)
                .expect("options")
                .1,
        )
    }

    fn step_up(session: Uuid) -> Ceremony {
        Ceremony::StepUp {
            session,
            user: Uuid::nil(),
            state: state(),
        }
    }

    #[test]
    fn a_ceremony_is_taken_once_and_a_session_holds_one_of_each_kind() {
        let mut c = Ceremonies::default();
        let now = Instant::now();
        let session = Uuid::new_v4();
        c.insert(b"first".to_vec(), step_up(session), now);
        c.insert(b"second".to_vec(), step_up(session), now);
        // The second step-up of the session replaced the first.
        assert!(c.take(b"first", now).is_none());
        assert!(c.take(b"second", now).is_some());
        assert!(c.take(b"second", now).is_none());
        // Another session's, and a sign-in, stand beside it; an expired one is not given.
        c.insert(b"other".to_vec(), step_up(Uuid::new_v4()), now);
        c.insert(
            b"sign-in".to_vec(),
            Ceremony::SignIn {
                user: None,
                state: state(),
            },
            now,
        );
        assert!(c.take(b"other", now + CEREMONY_TTL).is_none());
        assert!(c.take(b"sign-in", now).is_some());
        assert!(c.pending.is_empty() && c.by_session.is_empty());
    }
}
