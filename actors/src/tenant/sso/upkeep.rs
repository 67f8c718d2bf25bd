//! What the rest of the tenant asks of single sign-on's records: the keys of a user's links
//! and of their sign-ins under way (the credential inventory), a user's links for the
//! export, and the daily sweep of expired flows, exchange codes and replay-cache entries.

use std::collections::HashSet;

use tessera_storage::{Kind, TenantBatch};
use time::OffsetDateTime;
use uuid::Uuid;

use super::records::{
    SsoConnectionRecord, SsoExchangeRecord, SsoIdentityRecord, SsoReplayRecord, SsoStateRecord,
    UserSsoIndex,
};
use crate::{error::TenantError, tenant::ctx::TenantCtx};

impl TenantCtx {
    /// The records of every provider account linked to `user` through a connection: the
    /// index entry and the link.
    pub(in crate::tenant) fn sso_link_keys(
        &self,
        user: Uuid,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<UserSsoIndex>(user.as_bytes()) {
            let (key, ix) = item?;
            if let Some(connection) = key.get(16..32) {
                let mut link = connection.to_vec();
                link.extend_from_slice(&ix.subject_hash);
                out.push((Kind::SsoIdentity, link));
            }
            out.push((Kind::UserSso, key));
        }
        Ok(out)
    }

    /// Exchange codes not yet traded for any of `users`.
    pub(in crate::tenant) fn sso_sign_in_keys(
        &self,
        users: &HashSet<Uuid>,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        self.keys_where::<SsoExchangeRecord>(|r| users.contains(&r.user_id))
    }

    /// `user`'s links, for the export: the connection, its organization, the subject.
    pub(in crate::tenant) fn exported_sso_links(
        &self,
        user: Uuid,
    ) -> Result<serde_json::Value, TenantError> {
        let mut out = Vec::new();
        for (kind, key) in self.sso_link_keys(user)? {
            if kind != Kind::SsoIdentity {
                continue;
            }
            let Some(link) = self.store.get::<SsoIdentityRecord>(&key)? else {
                continue;
            };
            let Some(connection) = key.get(..16).and_then(|b| Uuid::from_slice(b).ok()) else {
                continue;
            };
            let org = self
                .store
                .get::<SsoConnectionRecord>(connection.as_bytes())?
                .map(|c| c.organization);
            out.push(serde_json::json!({
                "connection_id": connection,
                "organization_id": org,
                "subject": link.subject,
                "linked_at": link.created_at
                    .format(&time::format_description::well_known::Rfc3339)
                    .unwrap_or_default(),
            }));
        }
        Ok(serde_json::Value::Array(out))
    }

    /// Removes expired sign-in states, exchange codes and replay-cache entries, at most
    /// `limit` of each.
    pub(in crate::tenant) fn sweep_sso(
        &self,
        batch: &mut TenantBatch,
        now: OffsetDateTime,
        limit: usize,
    ) -> Result<usize, TenantError> {
        let mut n = 0;
        let mut sweep = |kind: Kind, key: Vec<u8>, expired: bool, taken: &mut usize| {
            if expired && *taken < limit {
                batch.remove(kind, &key);
                *taken += 1;
            }
        };
        let (mut a, mut b, mut c) = (0, 0, 0);
        for item in self.store.scan::<SsoStateRecord>(b"") {
            let (key, r) = item?;
            sweep(Kind::SsoState, key, r.expires_at <= now, &mut a);
        }
        for item in self.store.scan::<SsoExchangeRecord>(b"") {
            let (key, r) = item?;
            sweep(Kind::SsoExchange, key, r.expires_at <= now, &mut b);
        }
        for item in self.store.scan::<SsoReplayRecord>(b"") {
            let (key, r) = item?;
            sweep(Kind::SsoReplay, key, r.until <= now, &mut c);
        }
        n += a + b + c;
        Ok(n)
    }
}
