//! The directory's tenant records: creation (with onboarding's idempotency and sign-up limit),
//! tier and limit changes, API key rotation, and the index handlers find tenants by.

use std::{net::IpAddr, time::Instant};

use tessera_storage::{random_token, sha256, Kind, PlatformBatch, TenantId};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    dashboard::VERIFY_TTL,
    messages::{
        CreateOutcome, Created, IdempotencyKey, MailedToken, NewOwner, NewTenant, OwnerSummary,
        RotatedKey, TenantDetails, TenantSummary,
    },
    state::DirectoryState,
};
use crate::{
    error::DirectoryError,
    published::Index,
    records::{
        membership_key, AccountEmailIndex, AccountTokenPurpose, AccountTokenRecord, ApiKeyIndex,
        ApiKeyMeta, DashboardAccount, IdempotencyRecord, Membership, MembershipRecord, Role,
        SlugIndex, TenantRecord, TenantRef, Tier,
    },
    tenant::{TenantInfo, TenantMsg},
    throttle::throttle_ip,
};

/// How long an onboarding answer is replayed for its idempotency key.
const IDEMPOTENCY_TTL: time::Duration = time::Duration::hours(24);
/// The visible start of every API key.
pub const API_KEY_PREFIX: &str = "tsk_";
/// Longest generated slug.
const MAX_SLUG_LEN: usize = 40;

/// Whether `slug` is a valid tenant slug: 2-50 of `[a-z0-9-]`, starting and ending with a
/// letter or digit.
pub fn is_valid_slug(slug: &str) -> bool {
    let b = slug.as_bytes();
    (2..=50).contains(&b.len())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b.first().is_some_and(|c| *c != b'-')
        && b.last().is_some_and(|c| *c != b'-')
}

/// A slug derived from a tenant name: transliterated, lowercase `[a-z0-9-]`.
pub fn slug_from_name(name: &str) -> String {
    let mut s = slug::slugify(name);
    s.truncate(MAX_SLUG_LEN);
    let s = s.trim_matches('-').to_owned();
    if s.len() < 2 {
        "tenant".to_owned()
    } else {
        s
    }
}

fn new_api_key() -> String {
    format!("{API_KEY_PREFIX}{}", random_token(32))
}

fn api_key_meta(key: &str, now: OffsetDateTime) -> ApiKeyMeta {
    ApiKeyMeta {
        hash: sha256(key.as_bytes()),
        prefix: key.chars().take(API_KEY_PREFIX.len() + 8).collect(),
        created_at: now,
    }
}

pub(super) fn info_of(rec: &TenantRecord) -> TenantInfo {
    TenantInfo {
        id: rec.id,
        slug: rec.slug.clone(),
        name: rec.name.clone(),
        tier: rec.tier,
        created_at: rec.created_at,
        api_key_prefix: rec.api_key.prefix.clone(),
        api_key_created_at: rec.api_key.created_at,
        mau_cap: rec.mau_cap.or(rec.tier.default_mau_cap()),
    }
}

fn summary_of(rec: &TenantRecord) -> TenantSummary {
    TenantSummary {
        id: rec.id,
        slug: rec.slug.clone(),
        name: rec.name.clone(),
    }
}

impl DirectoryState {
    /// Rebuilds the index handlers find tenants by (by API key, by slug) and publishes it.
    pub(super) fn publish_index(&self) {
        let mut index = Index::default();
        for rec in self.tenants.values() {
            index.by_key_hash.insert(rec.api_key.hash, rec.id);
            index.by_slug.insert(rec.slug.clone(), rec.id);
            index.slugs.insert(rec.id, rec.slug.clone());
        }
        index.by_management_key = self.management_keys.clone();
        self.published.index.store(index.into());
    }

    fn by_slug(&self, slug: &str) -> Option<&TenantRecord> {
        self.tenants.values().find(|t| t.slug == slug)
    }

    fn details(&self, rec: &TenantRecord, with_owners: bool) -> TenantDetails {
        let owners = if with_owners {
            self.list_members(rec.id)
                .unwrap_or_default()
                .into_iter()
                .filter(|m| m.role == Role::Owner)
                .map(|m| m.email)
                .collect()
        } else {
            Vec::new()
        };
        TenantDetails {
            info: info_of(rec),
            owners,
            running: self.running.contains_key(&rec.id),
        }
    }

    fn idempotency_aad(key_hash: &[u8; 32]) -> Vec<u8> {
        let mut aad = b"onboarding-idempotency:".to_vec();
        aad.extend_from_slice(key_hash);
        aad
    }

    /// The earlier answer for this idempotency key, if any and still fresh.
    pub(super) fn replay(
        &self,
        idem: &IdempotencyKey,
        now: OffsetDateTime,
    ) -> Result<Option<Created>, DirectoryError> {
        let key_hash = self.idempotency_hasher.hash(idem.key.as_bytes());
        let Some(rec) = self.platform.get::<IdempotencyRecord>(&key_hash)? else {
            return Ok(None);
        };
        if now - rec.created_at > IDEMPOTENCY_TTL {
            return Ok(None);
        }
        let fingerprint = self.idempotency_hasher.hash(&idem.fingerprint);
        if !tessera_storage::ct_eq(&fingerprint, &rec.body_hash) {
            return Err(DirectoryError::IdempotencyConflict);
        }
        let plain = self
            .master_key
            .open(&Self::idempotency_aad(&key_hash), &rec.response)?;
        serde_json::from_slice(&plain)
            .map(Some)
            .map_err(|e| DirectoryError::Internal(format!("idempotency record: {e}")))
    }

    fn unique_slug(&self, base: &str) -> String {
        if !self.tenants.values().any(|t| t.slug == base) {
            return base.to_owned();
        }
        (2u32..)
            .map(|n| format!("{base}-{n}"))
            .find(|s| !self.tenants.values().any(|t| &t.slug == s))
            .unwrap_or_else(|| format!("{base}-{}", Uuid::new_v4().simple()))
    }

    /// Creates a tenant, or replays the earlier answer for the same idempotency key. Either
    /// answer is to be sent once the platform store is durable: a replayed first answer may not
    /// be on disk yet.
    pub(super) fn create_tenant(
        &mut self,
        req: NewTenant,
    ) -> Result<CreateOutcome, DirectoryError> {
        let now = OffsetDateTime::now_utc();
        if let Some(idem) = &req.idempotency {
            if let Some(created) = self.replay(idem, now)? {
                return Ok(CreateOutcome {
                    created,
                    replayed: true,
                    verification: None,
                });
            }
        }
        let (created, verification) = self.insert_tenant(req, now)?;
        Ok(CreateOutcome {
            created,
            replayed: false,
            verification,
        })
    }

    fn insert_tenant(
        &mut self,
        req: NewTenant,
        now: OffsetDateTime,
    ) -> Result<(Created, Option<MailedToken>), DirectoryError> {
        let slug = match req.slug {
            Some(s) if self.tenants.values().any(|t| t.slug == s) => {
                return Err(DirectoryError::SlugTaken(s))
            }
            Some(s) => s,
            None => self.unique_slug(&slug_from_name(&req.name)),
        };
        let api_key = new_api_key();
        let rec = TenantRecord {
            id: TenantId::new(),
            slug,
            name: req.name,
            tier: Tier::Free,
            created_at: now,
            api_key: api_key_meta(&api_key, now),
            mau_cap: None,
        };
        let mut batch = PlatformBatch::default();
        batch.put(rec.id.as_bytes(), &rec)?;
        batch.put(
            rec.slug.as_bytes(),
            &SlugIndex(TenantRef { tenant: rec.id }),
        )?;
        batch.put(
            &rec.api_key.hash,
            &ApiKeyIndex(TenantRef { tenant: rec.id }),
        )?;
        let membership = Membership {
            tenant: rec.id,
            role: Role::Owner,
        };
        let owner_record = MembershipRecord {
            role: Role::Owner,
            added_at: now,
        };
        let mut verification = None;
        let owner = match req.owner {
            None => None,
            Some(NewOwner::Create {
                email,
                password_hash,
            }) => {
                let email = email.to_lowercase();
                if self
                    .platform
                    .get::<AccountEmailIndex>(email.as_bytes())?
                    .is_some()
                {
                    return Err(DirectoryError::AccountExists);
                }
                // Nothing proves yet that whoever signed up holds this mailbox: the account
                // reaches only this tenant until the mailed link is used with its session.
                let acct = DashboardAccount {
                    id: Uuid::now_v7(),
                    email,
                    password_hash,
                    created_at: now,
                    memberships: vec![membership],
                    email_verified: false,
                    onboarded_tenant: Some(rec.id),
                    epoch: 0,
                    totp: None,
                    totp_pending: None,
                };
                let token = random_token(32);
                batch.put(
                    &sha256(token.as_bytes()),
                    &AccountTokenRecord {
                        account: acct.id,
                        email: acct.email.clone(),
                        purpose: AccountTokenPurpose::Verify,
                        epoch: 0,
                        expires_at: now + VERIFY_TTL,
                    },
                )?;
                verification = Some(MailedToken {
                    token,
                    email: acct.email.clone(),
                    detaches: Vec::new(),
                });
                batch.put(acct.id.as_bytes(), &acct)?;
                batch.put(
                    acct.email.as_bytes(),
                    &AccountEmailIndex { account: acct.id },
                )?;
                batch.put(&membership_key(&rec.id, &acct.id), &owner_record)?;
                Some(OwnerSummary {
                    id: acct.id,
                    email: acct.email,
                })
            }
            Some(NewOwner::Existing { account_id }) => {
                let mut acct = self
                    .platform
                    .get::<DashboardAccount>(account_id.as_bytes())?
                    .ok_or_else(|| DirectoryError::Internal("account vanished".into()))?;
                acct.memberships.push(membership);
                batch.put(acct.id.as_bytes(), &acct)?;
                batch.put(&membership_key(&rec.id, &acct.id), &owner_record)?;
                Some(OwnerSummary {
                    id: acct.id,
                    email: acct.email,
                })
            }
        };
        let created = Created {
            tenant: summary_of(&rec),
            owner,
            api_key,
        };
        if let Some(idem) = &req.idempotency {
            let key_hash = self.idempotency_hasher.hash(idem.key.as_bytes());
            let plain = serde_json::to_vec(&created)
                .map_err(|e| DirectoryError::Internal(e.to_string()))?;
            let record = IdempotencyRecord {
                body_hash: self.idempotency_hasher.hash(&idem.fingerprint),
                created_at: now,
                response: self
                    .master_key
                    .seal(&Self::idempotency_aad(&key_hash), &plain)?,
            };
            batch.put(&key_hash, &record)?;
        }
        self.platform.apply(batch)?;
        tracing::info!(tenant = %rec.id, slug = %rec.slug, "tenant created");
        self.tenants.insert(rec.id, rec);
        self.publish_index();
        Ok((created, verification))
    }

    fn update_record(
        &mut self,
        slug: &str,
        change: impl FnOnce(&mut TenantRecord, &mut PlatformBatch),
    ) -> Result<TenantRecord, DirectoryError> {
        let mut rec = self
            .by_slug(slug)
            .cloned()
            .ok_or(DirectoryError::TenantNotFound)?;
        let mut batch = PlatformBatch::default();
        change(&mut rec, &mut batch);
        batch.put(rec.id.as_bytes(), &rec)?;
        self.platform.apply(batch)?;
        if let Some(running) = self.running.get(&rec.id) {
            let _ = running.actor.cast(TenantMsg::UpdateInfo {
                info: info_of(&rec),
            });
        }
        self.tenants.insert(rec.id, rec.clone());
        self.publish_index();
        Ok(rec)
    }

    /// Changes a tenant record (its tier, its limits) and answers its details.
    pub(super) fn update_tenant(
        &mut self,
        slug: &str,
        change: impl FnOnce(&mut TenantRecord),
    ) -> Result<TenantDetails, DirectoryError> {
        let rec = self.update_record(slug, |rec, _| change(rec))?;
        Ok(self.details(&rec, true))
    }

    /// Replaces the tenant's API key; the new one is answered once, here.
    pub(super) fn rotate_api_key(&mut self, slug: &str) -> Result<RotatedKey, DirectoryError> {
        let api_key = new_api_key();
        let now = OffsetDateTime::now_utc();
        let mut index_error = None;
        let result = self.update_record(slug, |rec, batch| {
            batch.remove(Kind::ApiKeyIndex, &rec.api_key.hash);
            rec.api_key = api_key_meta(&api_key, now);
            if let Err(e) = batch.put(
                &rec.api_key.hash,
                &ApiKeyIndex(TenantRef { tenant: rec.id }),
            ) {
                index_error = Some(e);
            }
        });
        let rec = match (result, index_error) {
            (_, Some(e)) => return Err(e.into()),
            (r, None) => r?,
        };
        tracing::info!(tenant = %rec.id, "API key rotated");
        Ok(RotatedKey {
            tenant: summary_of(&rec),
            api_key,
        })
    }

    /// Every tenant, in slug order, without its owners.
    pub(super) fn list_tenants(&self) -> Vec<TenantDetails> {
        let mut all: Vec<_> = self
            .tenants
            .values()
            .map(|t| self.details(t, false))
            .collect();
        all.sort_by(|a, b| a.info.slug.cmp(&b.info.slug));
        all
    }

    /// The tenant with `slug`, with its owners.
    pub(super) fn show_tenant(&self, slug: &str) -> Result<TenantDetails, DirectoryError> {
        self.by_slug(slug)
            .map(|t| self.details(t, true))
            .ok_or(DirectoryError::TenantNotFound)
    }

    /// Counts one onboarding sign-up from `ip` (IPv6: its /64); `Err(retry_after_secs)` past
    /// the hourly limit.
    pub(super) fn admit_signup(&mut self, ip: IpAddr) -> Result<(), u64> {
        self.signup_ips.hit(&throttle_ip(ip), Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::directory::state::tests::{directory, ip, tenant, PASSWORD_HASH};

    fn named(name: &str, slug: Option<&str>) -> NewTenant {
        NewTenant {
            name: name.into(),
            slug: slug.map(str::to_owned),
            owner: None,
            idempotency: None,
        }
    }

    #[test]
    fn slugs_are_derived_and_validated() {
        assert_eq!(slug_from_name("Acme Corp"), "acme-corp");
        assert_eq!(slug_from_name("Żółć & Co."), "zolc-co");
        assert_eq!(slug_from_name("!!"), "tenant");
        assert!(slug_from_name(&"x".repeat(80)).len() <= MAX_SLUG_LEN);
        assert!(is_valid_slug("acme-2"));
        assert!(!is_valid_slug("-acme"));
        assert!(!is_valid_slug("Acme"));
        assert!(!is_valid_slug("a"));
        assert!(!is_valid_slug("a_b"));
    }

    #[test]
    fn derived_slugs_are_made_unique_and_a_chosen_one_must_be_free() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = directory(dir.path());
        let slug = |d: &mut DirectoryState, name: &str, chosen: Option<&str>| {
            d.create_tenant(named(name, chosen))
                .map(|o| o.created.tenant.slug)
        };
        assert_eq!(slug(&mut d, "Acme", None).unwrap(), "acme");
        assert_eq!(slug(&mut d, "ACME!", None).unwrap(), "acme-2");
        assert_eq!(slug(&mut d, "acme", None).unwrap(), "acme-3");
        assert_eq!(slug(&mut d, "Other", Some("acme-4")).unwrap(), "acme-4");
        assert_eq!(slug(&mut d, "Acme", None).unwrap(), "acme-5");
        assert!(matches!(
            slug(&mut d, "Again", Some("acme")),
            Err(DirectoryError::SlugTaken(s)) if s == "acme"
        ));
        assert_eq!(d.tenants.len(), 5);
    }

    #[test]
    fn a_tenant_is_found_by_slug_and_its_tier_sets_its_default_cap() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = directory(dir.path());
        let owner = d
            .create_tenant(NewTenant {
                owner: Some(NewOwner::Create {
                    email: "Owner@Acme.example".into(),
                    password_hash: PASSWORD_HASH.into(),
                }),
                ..named("Acme", None)
            })
            .unwrap();
        tenant(&mut d, "Globex");
        let shown = d.show_tenant("acme").unwrap();
        assert_eq!(shown.owners, ["owner@acme.example"]);
        assert_eq!(shown.info.tier, Tier::Free);
        assert_eq!(shown.info.mau_cap, Tier::Free.default_mau_cap());
        assert!(!shown.running);
        assert_eq!(shown.info.api_key_prefix, owner.created.api_key[..12]);
        assert!(matches!(
            d.show_tenant("initech"),
            Err(DirectoryError::TenantNotFound)
        ));
        let slugs: Vec<String> = d.list_tenants().into_iter().map(|t| t.info.slug).collect();
        assert_eq!(slugs, ["acme", "globex"]);
        assert!(d.list_tenants().iter().all(|t| t.owners.is_empty()));

        let pro = d.update_tenant("acme", |rec| rec.tier = Tier::Pro).unwrap();
        assert_eq!(pro.info.mau_cap, Tier::Pro.default_mau_cap());
        let enterprise = d
            .update_tenant("acme", |rec| rec.tier = Tier::Enterprise)
            .unwrap();
        assert_eq!(enterprise.info.mau_cap, None);
        // An explicit cap wins over the tier's, and is stored.
        d.update_tenant("acme", |rec| rec.mau_cap = Some(42))
            .unwrap();
        let stored = d
            .platform
            .get::<TenantRecord>(owner.created.tenant.id.as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!((stored.tier, stored.mau_cap), (Tier::Enterprise, Some(42)));
        assert_eq!(d.show_tenant("acme").unwrap().info.mau_cap, Some(42));
        assert!(matches!(
            d.update_tenant("initech", |rec| rec.tier = Tier::Pro),
            Err(DirectoryError::TenantNotFound)
        ));
    }

    #[test]
    fn a_rotated_api_key_replaces_the_old_one_everywhere() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = directory(dir.path());
        let (acme, created) = tenant(&mut d, "Acme");
        let old = sha256(created.api_key.as_bytes());
        let rotated = d.rotate_api_key("acme").unwrap();
        assert!(rotated.api_key.starts_with(API_KEY_PREFIX));
        assert_ne!(rotated.api_key, created.api_key);
        let new = sha256(rotated.api_key.as_bytes());
        let index = d.published.index.load();
        assert_eq!(index.by_key_hash.get(&new), Some(&acme));
        assert!(!index.by_key_hash.contains_key(&old));
        assert!(d.platform.get::<ApiKeyIndex>(&old).unwrap().is_none());
        assert!(d.platform.get::<ApiKeyIndex>(&new).unwrap().is_some());
        assert_eq!(d.tenants[&acme].api_key.hash, new);
        assert!(matches!(
            d.rotate_api_key("initech"),
            Err(DirectoryError::TenantNotFound)
        ));
    }

    #[test]
    fn an_idempotent_creation_is_replayed_for_its_own_request_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = directory(dir.path());
        let idem = |fingerprint: &[u8]| IdempotencyKey {
            key: "retry-1".into(),
            fingerprint: fingerprint.to_vec(),
        };
        let first = d
            .create_tenant(NewTenant {
                idempotency: Some(idem(b"body")),
                ..named("Acme", None)
            })
            .unwrap();
        assert!(!first.replayed);
        let again = d
            .create_tenant(NewTenant {
                idempotency: Some(idem(b"body")),
                ..named("Acme", None)
            })
            .unwrap();
        assert!(again.replayed && again.verification.is_none());
        assert_eq!(again.created.tenant.id, first.created.tenant.id);
        assert_eq!(again.created.api_key, first.created.api_key);
        assert_eq!(d.tenants.len(), 1);
        assert!(matches!(
            d.create_tenant(NewTenant {
                idempotency: Some(idem(b"another body")),
                ..named("Acme", None)
            }),
            Err(DirectoryError::IdempotencyConflict)
        ));
        // Past its lifetime the key is free again.
        let later = OffsetDateTime::now_utc() + IDEMPOTENCY_TTL + time::Duration::minutes(1);
        assert!(d.replay(&idem(b"body"), later).unwrap().is_none());
        assert!(d
            .replay(&idem(b"body"), OffsetDateTime::now_utc())
            .unwrap()
            .is_some());
    }

    #[test]
    fn an_address_has_one_account_and_sign_ups_per_address_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = directory(dir.path());
        let with_owner = |email: &str| NewTenant {
            owner: Some(NewOwner::Create {
                email: email.into(),
                password_hash: PASSWORD_HASH.into(),
            }),
            ..named("Acme", None)
        };
        d.create_tenant(with_owner("owner@acme.example")).unwrap();
        assert!(matches!(
            d.create_tenant(with_owner("OWNER@acme.example")),
            Err(DirectoryError::AccountExists)
        ));
        assert_eq!(d.tenants.len(), 1);
        // The fixture admits three sign-ups per address (IPv6: per /64) an hour.
        let v6 = |last: u16| IpAddr::from([0x2001, 0xdb8, 0, 1, 0, 0, 0, last]);
        for i in 0..3 {
            assert_eq!(d.admit_signup(v6(i)), Ok(()));
        }
        assert!(matches!(d.admit_signup(v6(99)), Err(secs) if secs > 3000));
        assert_eq!(d.admit_signup(ip(1)), Ok(()));
    }
}
