//! Device tokens, the part end users' and dashboard accounts' known devices share: the token's
//! shape, its minting, its check, and which of an account's devices make room for a new one.
//! Each owner stores its records its own way (the tenant actor's `devices`, the directory's
//! dashboard devices) and applies [`crate::login_guard`]'s device rule to a live one.
//!
//! A token is `tdv_<device id>.<secret>`: the device id finds the record under its account
//! (`account id | device id`), and the record keeps only the secret's SHA-256, compared in
//! constant time. It signs nobody in by itself.

use serde::{Deserialize, Serialize};
use tessera_storage::{ct_eq, random_token, sha256};
use time::OffsetDateTime;
use uuid::Uuid;

/// How long a device token is honoured after its issue.
pub const DEVICE_TOKEN_TTL: time::Duration = time::Duration::days(180);

/// Device tokens an account keeps; a new one past it replaces the oldest.
pub const DEVICES_PER_ACCOUNT: usize = 10;

const PREFIX: &str = "tdv_";

/// What a device's record keeps of its token, whoever owns the device; each owner's record
/// carries it flattened beside the owner's id.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KnownDevice {
    pub id: Uuid,
    /// Hex SHA-256 of the token's secret part.
    pub secret_hash: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

impl KnownDevice {
    /// Whether `secret` is this device's, and the device still live at `now`.
    pub fn holds(&self, secret: &str, now: OffsetDateTime) -> bool {
        let presented = hex::encode(sha256(secret.as_bytes()));
        self.expires_at > now && ct_eq(presented.as_bytes(), self.secret_hash.as_bytes())
    }
}

/// A new device at `now` (the id is time-ordered, so an account's devices sort oldest first),
/// and the token to hand out once.
fn mint(now: OffsetDateTime) -> (KnownDevice, String) {
    let id = Uuid::now_v7();
    let secret = random_token(32);
    let device = KnownDevice {
        id,
        secret_hash: hex::encode(sha256(secret.as_bytes())),
        created_at: now,
        expires_at: now + DEVICE_TOKEN_TTL,
    };
    (device, format!("{PREFIX}{}.{secret}", id.simple()))
}

/// The device id and secret of a token, if it has the shape of one.
pub fn parse(token: &str) -> Option<(Uuid, &str)> {
    let rest = token.strip_prefix(PREFIX)?;
    let (id, secret) = rest.split_once('.')?;
    if secret.is_empty() || secret.len() > 64 {
        return None;
    }
    Some((Uuid::try_parse(id).ok()?, secret))
}

/// A device added at `now` to an account: the ids whose records go ([`to_evict`]), the new
/// device and its token.
pub struct Issued {
    pub evict: Vec<Uuid>,
    pub device: KnownDevice,
    pub token: String,
}

/// Adds a device at `now` to an account holding `held` (oldest first; see [`Issued`]).
pub fn issue<'a>(held: impl IntoIterator<Item = &'a KnownDevice>, now: OffsetDateTime) -> Issued {
    let held: Vec<(Uuid, OffsetDateTime)> =
        held.into_iter().map(|d| (d.id, d.expires_at)).collect();
    let (device, token) = mint(now);
    Issued {
        evict: to_evict(&held, now),
        device,
        token,
    }
}

/// Of an account's devices (id and expiry, oldest first), those to remove before one more is
/// added at `now`: the expired ones, then the oldest past [`DEVICES_PER_ACCOUNT`].
pub fn to_evict(held: &[(Uuid, OffsetDateTime)], now: OffsetDateTime) -> Vec<Uuid> {
    let (live, expired): (Vec<&(Uuid, OffsetDateTime)>, Vec<_>) =
        held.iter().partition(|(_, until)| *until > now);
    let excess = (live.len() + 1).saturating_sub(DEVICES_PER_ACCOUNT);
    expired
        .into_iter()
        .chain(live.into_iter().take(excess))
        .map(|&(id, _)| id)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_parse_only_in_their_shape_and_hold_only_their_secret() {
        let now = OffsetDateTime::now_utc();
        let (device, token) = mint(now);
        let (id, secret) = parse(&token).expect("a token");
        assert_eq!(id, device.id);
        assert!(device.holds(secret, now));
        assert!(!device.holds("another", now));
        assert!(!device.holds(secret, device.expires_at));
        assert_eq!(parse(&format!("tdv_{}.", id.simple())), None);
        assert_eq!(parse("tdv_nothex.secret"), None);
        assert_eq!(parse(&format!("xyz_{}.secret", id.simple())), None);
        assert_eq!(
            parse(&format!("tdv_{}.{}", id.simple(), "a".repeat(65))),
            None
        );
    }

    #[test]
    fn the_expired_then_the_oldest_make_room() {
        let now = OffsetDateTime::now_utc();
        let expired = (Uuid::now_v7(), now - time::Duration::days(1));
        let live: Vec<(Uuid, OffsetDateTime)> = (0..DEVICES_PER_ACCOUNT)
            .map(|_| (Uuid::now_v7(), now + DEVICE_TOKEN_TTL))
            .collect();
        let mut held = vec![expired];
        held.extend(live.iter().copied());
        assert_eq!(to_evict(&held, now), vec![expired.0, live[0].0]);
        assert_eq!(to_evict(&live[..3], now), Vec::<Uuid>::new());
    }
}
