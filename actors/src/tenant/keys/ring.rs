//! `KeyRing`, the actor's view of the key records and their only writer: loading (with the
//! first key and the removal of keys past their publication), the first RS256 key, the
//! rotation, and the current key opened for an admin's export.

use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, MasterKey, TenantId, TenantStore};
use time::OffsetDateTime;

use super::{
    material::{generate, rsa_record},
    records::{signing_key_aad, KeyAlg, SigningKeyRecord},
    signer::TokenKeys,
};
use crate::error::TenantError;

/// How long a retired key stays published after the access-token lifetime: covers clock skew
/// between this server and verifiers, and tokens signed in the instant before the rotation.
const PUBLISH_MARGIN: time::Duration = time::Duration::seconds(60);

/// What a rotation did, for the caller's reply and audit event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RotatedKeys {
    /// The new current key.
    pub kid: String,
    /// The key it replaced, still published until `previous_published_until`.
    pub previous_kid: Option<String>,
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub previous_published_until: Option<OffsetDateTime>,
    /// The new current RS256 key, when the tenant has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rsa_kid: Option<String>,
    /// The RS256 key it replaced, published as long as the ES256 one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_rsa_kid: Option<String>,
}

/// The tenant's signing-key records as last written: the actor's view, the only writer.
#[derive(Debug)]
pub struct KeyRing {
    records: Vec<SigningKeyRecord>,
}

impl KeyRing {
    /// Reads the tenant's keys; deletes retired keys past `publish_until` and creates the first
    /// key when there is no current one, in one batch (applied, not yet durable: the caller
    /// takes a ticket). More than one current key is refused as corrupt data.
    pub fn load_or_create(
        store: &TenantStore,
        master: &MasterKey,
        now: OffsetDateTime,
    ) -> Result<(KeyRing, TokenKeys), TenantError> {
        let mut records = Vec::new();
        for item in store.scan::<SigningKeyRecord>(b"") {
            let (_, record) = item?;
            records.push(record);
        }
        let mut batch = store.batch();
        let mut dirty = false;
        records.retain(|r| {
            let expired = r.expired(now);
            if expired {
                batch.remove(Kind::SigningKey, r.kid.as_bytes());
                dirty = true;
            }
            !expired
        });
        let rsa_currents = records
            .iter()
            .filter(|r| r.is_current() && r.alg == KeyAlg::RS256)
            .count();
        if rsa_currents > 1 {
            return Err(TenantError::Internal(format!(
                "{rsa_currents} current RS256 signing keys; at most one may be current"
            )));
        }
        let currents = records
            .iter()
            .filter(|r| r.is_current() && r.alg == KeyAlg::ES256)
            .count();
        let fresh_pkcs8 = match currents {
            0 => {
                let (record, pkcs8) = generate(store.tenant_id(), master, now)?;
                batch.put(record.kid.as_bytes(), &record)?;
                records.push(record);
                dirty = true;
                Some(pkcs8)
            }
            1 => None,
            n => {
                return Err(TenantError::Internal(format!(
                    "{n} current signing keys; exactly one may be current"
                )))
            }
        };
        let ring = KeyRing { records };
        let keys = match fresh_pkcs8 {
            Some(pkcs8) => {
                let rsa = ring.open_current(store.tenant_id(), master, KeyAlg::RS256)?;
                TokenKeys::build(&ring.records, &pkcs8, rsa.as_deref().map(|v| v.as_slice()))?
            }
            None => ring.token_keys(store.tenant_id(), master)?,
        };
        if dirty {
            store.apply(batch)?;
        }
        Ok((ring, keys))
    }

    /// Adds the tenant's first RS256 key (`pkcs8`, generated off the actor), unless it has
    /// one already: then nothing is written. Answers the keys to publish, and whether it wrote
    /// (applied, not yet durable: the caller publishes once it is).
    pub fn add_rsa(
        &mut self,
        store: &TenantStore,
        master: &MasterKey,
        pkcs8: &[u8],
        now: OffsetDateTime,
    ) -> Result<(TokenKeys, bool), TenantError> {
        let has_rsa = self
            .records
            .iter()
            .any(|r| r.is_current() && r.alg == KeyAlg::RS256);
        if has_rsa {
            return Ok((self.token_keys(store.tenant_id(), master)?, false));
        }
        let record = rsa_record(store.tenant_id(), master, pkcs8, now)?;
        let mut next = self.records.clone();
        next.push(record.clone());
        let current = self
            .open_current(store.tenant_id(), master, KeyAlg::ES256)?
            .ok_or_else(|| TenantError::Internal("no current signing key".into()))?;
        let keys = TokenKeys::build(&next, &current, Some(pkcs8))?;
        let mut batch = store.batch();
        batch.put(record.kid.as_bytes(), &record)?;
        store.apply(batch)?;
        self.records = next;
        Ok((keys, true))
    }

    /// Makes a new key current, and a new RS256 key (`rsa_pkcs8`, generated off the actor)
    /// when the tenant has one. Each old current key is retired now and published until
    /// `now + access_ttl + 60 s`, when the last token it signed has expired; retired keys past
    /// their publication are deleted. One batch, applied (the caller makes it durable); on any
    /// error nothing is written and the ring is unchanged.
    pub fn rotate(
        &mut self,
        store: &TenantStore,
        master: &MasterKey,
        now: OffsetDateTime,
        access_ttl: std::time::Duration,
        rsa_pkcs8: Option<&[u8]>,
    ) -> Result<(RotatedKeys, TokenKeys), TenantError> {
        let ttl = time::Duration::try_from(access_ttl)
            .map_err(|_| TenantError::Internal("access token lifetime out of range".into()))?;
        let publish_until = ttl
            .checked_add(PUBLISH_MARGIN)
            .and_then(|d| now.checked_add(d))
            .ok_or_else(|| TenantError::Internal("access token lifetime out of range".into()))?;

        let (fresh, pkcs8) = generate(store.tenant_id(), master, now)?;
        let has_rsa = self
            .records
            .iter()
            .any(|r| r.is_current() && r.alg == KeyAlg::RS256);
        // A tenant with an RS256 key gets a new one with every rotation; without the new
        // key's material its current one stays.
        let fresh_rsa = match rsa_pkcs8.filter(|_| has_rsa) {
            Some(p) => Some((rsa_record(store.tenant_id(), master, p, now)?, p)),
            None => None,
        };
        let mut batch = store.batch();
        let mut next = Vec::with_capacity(self.records.len() + 2);
        let mut previous = None;
        let mut previous_rsa = None;
        for r in &self.records {
            if r.expired(now) {
                batch.remove(Kind::SigningKey, r.kid.as_bytes());
                continue;
            }
            let mut r = r.clone();
            let retire = r.is_current() && (r.alg == KeyAlg::ES256 || fresh_rsa.is_some());
            if retire {
                r.retired_at = Some(now);
                r.publish_until = Some(publish_until);
                batch.put(r.kid.as_bytes(), &r)?;
                match r.alg {
                    KeyAlg::ES256 => previous = Some(r.kid.clone()),
                    KeyAlg::RS256 => previous_rsa = Some(r.kid.clone()),
                }
            }
            next.push(r);
        }
        batch.put(fresh.kid.as_bytes(), &fresh)?;
        let rotated = RotatedKeys {
            kid: fresh.kid.clone(),
            previous_published_until: previous.as_ref().map(|_| publish_until),
            previous_kid: previous,
            rsa_kid: fresh_rsa.as_ref().map(|(r, _)| r.kid.clone()),
            previous_rsa_kid: previous_rsa,
        };
        next.push(fresh);
        let rsa_material = match fresh_rsa {
            Some((record, p)) => {
                batch.put(record.kid.as_bytes(), &record)?;
                next.push(record);
                Some(zeroize::Zeroizing::new(p.to_vec()))
            }
            None => self.open_current(store.tenant_id(), master, KeyAlg::RS256)?,
        };
        let keys = TokenKeys::build(&next, &pkcs8, rsa_material.as_deref().map(|v| v.as_slice()))?;
        store.apply(batch)?;
        self.records = next;
        Ok((rotated, keys))
    }

    /// The records, current and still-published retired keys.
    pub fn records(&self) -> &[SigningKeyRecord] {
        &self.records
    }

    /// Builds [`TokenKeys`], opening the current private keys.
    pub fn token_keys(
        &self,
        tenant: TenantId,
        master: &MasterKey,
    ) -> Result<TokenKeys, TenantError> {
        let pkcs8 = self
            .open_current(tenant, master, KeyAlg::ES256)?
            .ok_or_else(|| TenantError::Internal("no current signing key".into()))?;
        let rsa = self.open_current(tenant, master, KeyAlg::RS256)?;
        TokenKeys::build(&self.records, &pkcs8, rsa.as_deref().map(|v| v.as_slice()))
    }

    /// The opened private key of the current key of `alg`, if there is one.
    fn open_current(
        &self,
        tenant: TenantId,
        master: &MasterKey,
        alg: KeyAlg,
    ) -> Result<Option<zeroize::Zeroizing<Vec<u8>>>, TenantError> {
        let Some(current) = self.records.iter().find(|r| r.is_current() && r.alg == alg) else {
            return Ok(None);
        };
        let pkcs8 = master.open(&signing_key_aad(tenant, &current.kid), &current.sealed)?;
        Ok(Some(zeroize::Zeroizing::new(pkcs8.to_vec())))
    }
}
