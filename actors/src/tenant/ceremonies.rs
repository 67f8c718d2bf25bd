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

/// The tenant's pending ceremonies, by challenge.
#[derive(Default)]
pub struct Ceremonies {
    pending: HashMap<Vec<u8>, Pending>,
}

impl Ceremonies {
    pub(super) fn insert(&mut self, challenge: Vec<u8>, ceremony: Ceremony, now: Instant) {
        if self.pending.len() >= MAX_CEREMONIES {
            self.pending.retain(|_, p| p.expires > now);
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

    /// Takes out the live ceremony of `challenge`.
    pub(super) fn take(&mut self, challenge: &[u8], now: Instant) -> Option<Ceremony> {
        self.pending
            .remove(challenge)
            .filter(|p| p.expires > now)
            .map(|p| p.ceremony)
    }
}
