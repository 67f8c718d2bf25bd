//! Known devices: a password sign-in gives the device a token bound to the account, and an
//! attempt that presents a live one of that account is held to the device's own count instead
//! of the account's lockout ([`crate::login_guard`]). The API returns it as `device_token`
//! and takes it back on the next login; the hosted sign-in keeps it in a cookie.
//!
//! The token's shape and check are [`crate::known_devices`]'s; its record lives under the
//! user (`user id | device id`). It signs nobody in by itself. It lasts [`known_devices::DEVICE_TOKEN_TTL`]
//! from its issue; an account keeps at most [`known_devices::DEVICES_PER_ACCOUNT`], the
//! oldest going first. Device tokens are a
//! kind of the credential inventory (`device_tokens`): an erasure and the recovery of an
//! unconfirmed address remove them, so whoever held the account before its owner keeps no
//! way past a lockout.

use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, TenantBatch};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::tenant::ctx::TenantCtx;
use crate::{
    error::TenantError,
    known_devices::{self, KnownDevice},
};

/// A known device of a user.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeviceRecord {
    pub user_id: Uuid,
    #[serde(flatten)]
    pub device: KnownDevice,
}

tessera_storage::record!(
    DeviceRecord in TenantRecord: Kind::DeviceToken, "device_token", version 1
);

/// The record key of `user`'s device `id`.
pub fn device_key(user: Uuid, id: Uuid) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    out.extend_from_slice(user.as_bytes());
    out.extend_from_slice(id.as_bytes());
    out
}

impl TenantCtx {
    /// The device `token` names, when it is a live device token of `user`.
    pub(super) fn known_device(
        &self,
        user: Uuid,
        token: &str,
        now: OffsetDateTime,
    ) -> Result<Option<Uuid>, TenantError> {
        let Some((id, secret)) = known_devices::parse(token) else {
            return Ok(None);
        };
        let Some(record) = self.store.get::<DeviceRecord>(&device_key(user, id))? else {
            return Ok(None);
        };
        Ok(record.device.holds(secret, now).then_some(id))
    }

    /// A new device token for `user`, its record into `batch`; expired ones and, past the
    /// cap, the oldest go.
    pub(super) fn issue_device(
        &self,
        batch: &mut TenantBatch,
        user: Uuid,
        now: OffsetDateTime,
    ) -> Result<String, TenantError> {
        let held = self.devices_of(user)?;
        let new = known_devices::issue(held.iter().map(|d| &d.device), now);
        for old in new.evict {
            batch.remove(Kind::DeviceToken, &device_key(user, old));
        }
        let record = DeviceRecord {
            user_id: user,
            device: new.device,
        };
        batch.put(&device_key(user, record.device.id), &record)?;
        Ok(new.token)
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
            .map(|d| (Kind::DeviceToken, device_key(user, d.device.id)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant::accounts::tests::tenant;
    use crate::tenant::state::TenantState;

    #[test]
    fn a_device_record_keeps_the_token_fields_beside_the_owner() {
        let now = OffsetDateTime::now_utc();
        let issued = known_devices::issue(&[], now);
        let record = DeviceRecord {
            user_id: Uuid::now_v7(),
            device: issued.device,
        };
        let stored = serde_json::to_value(&record).unwrap();
        for key in ["id", "user_id", "secret_hash", "created_at", "expires_at"] {
            assert!(stored.get(key).is_some(), "{key} in {stored}");
        }
        let back: DeviceRecord = serde_json::from_value(stored).unwrap();
        assert_eq!(back.device.id, record.device.id);
        assert_eq!(
            back.device.expires_at,
            now + known_devices::DEVICE_TOKEN_TTL
        );
    }

    fn issue(t: &TenantState, user: Uuid, now: OffsetDateTime) -> String {
        let mut b = t.cx.store.batch();
        let token = t.cx.issue_device(&mut b, user, now).unwrap();
        t.cx.store.apply(b).unwrap();
        token
    }

    #[tokio::test]
    async fn a_device_token_is_known_only_for_its_user_while_it_lives() {
        let dir = tempfile::tempdir().unwrap();
        let t = tenant(dir.path());
        let (user, other) = (Uuid::now_v7(), Uuid::now_v7());
        let now = OffsetDateTime::now_utc();
        let token = issue(&t, user, now);
        let (id, secret) = known_devices::parse(&token).unwrap();
        assert_eq!(t.cx.known_device(user, &token, now).unwrap(), Some(id));
        assert_eq!(t.cx.known_device(other, &token, now).unwrap(), None);
        let end = now + known_devices::DEVICE_TOKEN_TTL;
        assert_eq!(
            t.cx.known_device(user, &token, end - time::Duration::seconds(1))
                .unwrap(),
            Some(id)
        );
        assert_eq!(t.cx.known_device(user, &token, end).unwrap(), None);
        let forged = token.replace(secret, &"A".repeat(secret.len()));
        assert_eq!(t.cx.known_device(user, &forged, now).unwrap(), None);
        for malformed in [
            "",
            "tdv_",
            "not a token",
            &token[..token.len() - secret.len()],
        ] {
            assert_eq!(t.cx.known_device(user, malformed, now).unwrap(), None);
        }
        // Only the secret's hash is stored.
        let record =
            t.cx.store
                .get::<DeviceRecord>(&device_key(user, id))
                .unwrap()
                .unwrap();
        assert_ne!(record.device.secret_hash, secret);
        assert_eq!(record.user_id, user);
    }

    #[tokio::test]
    async fn an_account_keeps_its_newest_devices_and_drops_expired_ones() {
        let dir = tempfile::tempdir().unwrap();
        let t = tenant(dir.path());
        let user = Uuid::now_v7();
        let now = OffsetDateTime::now_utc();
        // One issued long ago, expired by now.
        let stale = issue(
            &t,
            user,
            now - known_devices::DEVICE_TOKEN_TTL - time::Duration::days(1),
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
        let mut tokens = Vec::new();
        for _ in 0..known_devices::DEVICES_PER_ACCOUNT {
            tokens.push(issue(&t, user, now));
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        // The expired one went when the first new one came.
        let (stale_id, _) = known_devices::parse(&stale).unwrap();
        assert!(t
            .cx
            .store
            .get::<DeviceRecord>(&device_key(user, stale_id))
            .unwrap()
            .is_none());
        assert_eq!(
            t.cx.device_keys(user).unwrap().len(),
            known_devices::DEVICES_PER_ACCOUNT
        );
        // One more: the oldest live one makes room.
        let newest = issue(&t, user, now);
        assert_eq!(t.cx.known_device(user, &tokens[0], now).unwrap(), None);
        for token in tokens[1..].iter().chain([&newest]) {
            assert!(t.cx.known_device(user, token, now).unwrap().is_some());
        }
        let keys = t.cx.device_keys(user).unwrap();
        assert_eq!(keys.len(), known_devices::DEVICES_PER_ACCOUNT);
        assert!(keys
            .iter()
            .all(|(kind, key)| *kind == Kind::DeviceToken && key.starts_with(user.as_bytes())));
        // Another user's devices are apart.
        assert!(t.cx.device_keys(Uuid::now_v7()).unwrap().is_empty());
    }
}
