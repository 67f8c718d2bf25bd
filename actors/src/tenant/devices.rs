//! Known devices: a password sign-in gives the device a token bound to the account, and an
//! attempt that presents a live one of that account is held to the device's own count instead
//! of the account's lockout ([`crate::login_guard`]). The API returns it as `device_token`
//! and takes it back on the next login; the hosted sign-in keeps it in a cookie.
//!
//! The token is `tdv_<device id>.<secret>`: the device id finds the record under the account
//! (`user id | device id`), and the record keeps only the secret's SHA-256, compared in
//! constant time. It signs nobody in by itself. It lasts [`DEVICE_TOKEN_TTL`] from its issue;
//! an account keeps at most [`DEVICES_PER_USER`], the oldest going first. Device tokens are a
//! kind of the credential inventory (`device_tokens`): an erasure and the recovery of an
//! unconfirmed address remove them, so whoever held the account before its owner keeps no
//! way past a lockout.

use serde::{Deserialize, Serialize};
use tessera_storage::{ct_eq, random_token, sha256, Kind, Record, TenantBatch, TenantRecord};
use time::OffsetDateTime;
use uuid::Uuid;

use super::state::TenantState;
use crate::error::TenantError;

/// How long a device token is honoured after its issue.
pub const DEVICE_TOKEN_TTL: time::Duration = time::Duration::days(180);

/// Device tokens an account keeps; a new one past it replaces the oldest.
pub const DEVICES_PER_USER: usize = 10;

const PREFIX: &str = "tdv_";

/// A known device of a user.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeviceRecord {
    pub id: Uuid,
    pub user_id: Uuid,
    /// Hex SHA-256 of the token's secret part.
    pub secret_hash: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

impl Record for DeviceRecord {
    const KIND: Kind = Kind::DeviceToken;
    const NAME: &'static str = "device_token";
    const VERSION: u16 = 1;
}
impl TenantRecord for DeviceRecord {}

/// The record key of `user`'s device `id`.
pub fn device_key(user: Uuid, id: Uuid) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    out.extend_from_slice(user.as_bytes());
    out.extend_from_slice(id.as_bytes());
    out
}

/// The device id and secret of a token, if it has the shape of one.
fn parse(token: &str) -> Option<(Uuid, &str)> {
    let rest = token.strip_prefix(PREFIX)?;
    let (id, secret) = rest.split_once('.')?;
    if secret.is_empty() || secret.len() > 64 {
        return None;
    }
    Some((Uuid::try_parse(id).ok()?, secret))
}

impl TenantState {
    /// The device `token` names, when it is a live device token of `user`.
    pub(super) fn known_device(
        &self,
        user: Uuid,
        token: &str,
        now: OffsetDateTime,
    ) -> Result<Option<Uuid>, TenantError> {
        let Some((id, secret)) = parse(token) else {
            return Ok(None);
        };
        let Some(record) = self.store.get::<DeviceRecord>(&device_key(user, id))? else {
            return Ok(None);
        };
        let presented = hex::encode(sha256(secret.as_bytes()));
        Ok(
            (record.expires_at > now && ct_eq(presented.as_bytes(), record.secret_hash.as_bytes()))
                .then_some(id),
        )
    }

    /// A new device token for `user`, its record into `batch`; past [`DEVICES_PER_USER`] the
    /// oldest go (and expired ones on the way).
    pub(super) fn issue_device(
        &self,
        batch: &mut TenantBatch,
        user: Uuid,
        now: OffsetDateTime,
    ) -> Result<String, TenantError> {
        let mut held = self.devices_of(user)?;
        held.retain(|d| {
            let live = d.expires_at > now;
            if !live {
                batch.remove(Kind::DeviceToken, &device_key(user, d.id));
            }
            live
        });
        // Device ids are time-ordered: the first are the oldest.
        let excess = (held.len() + 1).saturating_sub(DEVICES_PER_USER);
        for old in held.iter().take(excess) {
            batch.remove(Kind::DeviceToken, &device_key(user, old.id));
        }
        let id = Uuid::now_v7();
        let secret = random_token(32);
        let record = DeviceRecord {
            id,
            user_id: user,
            secret_hash: hex::encode(sha256(secret.as_bytes())),
            created_at: now,
            expires_at: now + DEVICE_TOKEN_TTL,
        };
        batch.put(&device_key(user, id), &record)?;
        Ok(format!("{PREFIX}{}.{secret}", id.simple()))
    }

    /// `user`'s device records, oldest first.
    fn devices_of(&self, user: Uuid) -> Result<Vec<DeviceRecord>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<DeviceRecord>(user.as_bytes()) {
            out.push(item?.1);
        }
        Ok(out)
    }

    /// The records of `user`'s device tokens, for the credential inventory.
    pub(super) fn device_keys(&self, user: Uuid) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        Ok(self
            .devices_of(user)?
            .into_iter()
            .map(|d| (Kind::DeviceToken, device_key(user, d.id)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_parse_only_in_their_shape() {
        let id = Uuid::now_v7();
        let token = format!("tdv_{}.secret", id.simple());
        assert_eq!(parse(&token), Some((id, "secret")));
        assert_eq!(parse(&format!("tdv_{}.", id.simple())), None);
        assert_eq!(parse("tdv_nothex.secret"), None);
        assert_eq!(parse(&format!("xyz_{}.secret", id.simple())), None);
        assert_eq!(
            parse(&format!("tdv_{}.{}", id.simple(), "a".repeat(65))),
            None
        );
    }
}
