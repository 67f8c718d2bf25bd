//! Device tokens, the part end users' and dashboard accounts' known devices share: the token's
//! shape, its minting, its check, and which of an account's devices make room for a new one.
//! Each owner stores its records its own way (the tenant actor's `devices`, the directory's
//! dashboard devices) and applies [`crate::login_guard`]'s device rule to a live one.
//!
//! A token is `tdv_<device id>.<secret>`: the device id finds the record under its account
//! (`account id | device id`), and the record keeps only the secret's SHA-256, compared in
//! constant time. It signs nobody in by itself.

use tessera_storage::{ct_eq, random_token, sha256};
use time::OffsetDateTime;
use uuid::Uuid;

/// How long a device token is honoured after its issue.
pub const DEVICE_TOKEN_TTL: time::Duration = time::Duration::days(180);

/// Device tokens an account keeps; a new one past it replaces the oldest.
pub const DEVICES_PER_ACCOUNT: usize = 10;

const PREFIX: &str = "tdv_";

/// A new device token: the record's id and secret hash, and the token to hand out once.
pub struct Minted {
    pub id: Uuid,
    /// Hex SHA-256 of the secret part.
    pub secret_hash: String,
    pub token: String,
}

/// A new device token (the id is time-ordered, so an account's devices sort oldest first).
pub fn mint() -> Minted {
    let id = Uuid::now_v7();
    let secret = random_token(32);
    Minted {
        id,
        secret_hash: hex::encode(sha256(secret.as_bytes())),
        token: format!("{PREFIX}{}.{secret}", id.simple()),
    }
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

/// Whether `secret` is the one whose hash a live record (expiring at `expires_at`) keeps.
pub fn holds(
    secret: &str,
    secret_hash: &str,
    expires_at: OffsetDateTime,
    now: OffsetDateTime,
) -> bool {
    let presented = hex::encode(sha256(secret.as_bytes()));
    expires_at > now && ct_eq(presented.as_bytes(), secret_hash.as_bytes())
}

/// A device added at `now` to an account holding `held` (id and expiry, oldest first): the
/// ids whose records go ([`to_evict`]), the new token, and when it expires.
pub struct Issued {
    pub evict: Vec<Uuid>,
    pub minted: Minted,
    pub expires_at: OffsetDateTime,
}

/// Adds a device at `now` to an account holding `held` (see [`Issued`]).
pub fn issue(held: &[(Uuid, OffsetDateTime)], now: OffsetDateTime) -> Issued {
    Issued {
        evict: to_evict(held, now),
        minted: mint(),
        expires_at: now + DEVICE_TOKEN_TTL,
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
        let m = mint();
        let (id, secret) = parse(&m.token).expect("a token");
        assert_eq!(id, m.id);
        let now = OffsetDateTime::now_utc();
        let later = now + DEVICE_TOKEN_TTL;
        assert!(holds(secret, &m.secret_hash, later, now));
        assert!(!holds("another", &m.secret_hash, later, now));
        assert!(!holds(secret, &m.secret_hash, now, now));
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
