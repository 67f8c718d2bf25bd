//! What the directory holds: the platform store, the tenant records, the running tenant actors
//! and the dashboard's throttles. The modules beside this one add its behaviour: `tenants`
//! (records, slugs, API keys, onboarding), `supervision` (tenant actors) and `dashboard`
//! (accounts, sessions, members).

use std::{
    collections::HashMap,
    net::IpAddr,
    time::{Duration, Instant},
};

use tessera_storage::{KeyedHasher, MasterKey, PlatformStore, Store, TenantId};
use uuid::Uuid;

use crate::{
    published::{ManagementKeyRef, Published, RunningTenant},
    records::{AccountTokenPurpose, TenantRecord},
    tenant::TenantRuntime,
    throttle::RateWindow,
};

/// How long dashboard sessions live.
#[derive(Clone, Copy, Debug)]
pub struct SessionPolicy {
    /// Without a request for this long, a session ends.
    pub idle: Duration,
    /// A session ends this long after login, whatever its use.
    pub absolute: Duration,
}

/// A tenant's recent crashes (see `supervision`).
pub(super) struct RestartBudget {
    pub(super) window_start: Instant,
    pub(super) count: u32,
    pub(super) failed_until: Option<Instant>,
}

pub struct DirectoryState {
    pub(super) root: Store,
    pub(super) platform: PlatformStore,
    pub(super) master_key: MasterKey,
    pub(super) idempotency_hasher: KeyedHasher,
    /// Hashes dashboard accounts' recovery codes.
    pub(super) recovery_hasher: KeyedHasher,
    /// Second steps sent with an unknown, used or expired challenge, per client address.
    pub(super) mfa_misses: RateWindow<IpAddr>,
    /// Logins waiting for their second factor, by the challenge's hash.
    pub(super) mfa_logins: HashMap<[u8; 32], super::dashboard::PendingMfa>,
    pub(super) published: Published,
    pub(super) fault_injection: bool,
    pub(super) tenants: HashMap<TenantId, TenantRecord>,
    pub(super) running: HashMap<TenantId, RunningTenant>,
    /// Which tenant each running actor serves (for supervision events).
    pub(super) by_actor: HashMap<ractor::ActorId, TenantId>,
    pub(super) restarts: HashMap<TenantId, RestartBudget>,
    pub(super) session_policy: SessionPolicy,
    pub(super) runtime: TenantRuntime,
    /// The sign-in rules of dashboard logins.
    pub(super) login: crate::login_guard::LoginThrottles,
    /// Verification and reset mails per account and purpose.
    pub(super) account_mail_window: RateWindow<(Uuid, AccountTokenPurpose)>,
    /// Dashboard password-reset requests per client address.
    pub(super) reset_ip_window: RateWindow<IpAddr>,
    /// Onboarding sign-ups per client address, in memory.
    pub(super) signup_ips: RateWindow<IpAddr>,
    pub(super) tenant_idle: Option<Duration>,
    /// The unrevoked management keys (published with the index).
    pub(super) management_keys: HashMap<[u8; 32], ManagementKeyRef>,
    /// Each tenant's resources of the scope catalog (resources are never deleted), so a
    /// tenant's catalog is read without a scan of every tenant's.
    pub(super) resources_by_tenant: HashMap<TenantId, Vec<uuid::Uuid>>,
}

#[cfg(test)]
pub(super) mod tests {
    use std::{net::IpAddr, path::Path, sync::Arc};

    use tessera_storage::{sha256, TenantId};
    use time::OffsetDateTime;

    use super::*;
    use crate::{
        directory::{
            catalog::PLATFORM_RESOURCE_ID,
            messages::{Created, MailedToken, NewManagementKey, NewOwner, NewTenant},
            DirectoryArgs,
        },
        login_guard::FREE_PAIR_FAILURES,
        outbound::{MailJob, Outbound, SmsJob},
        records::Role,
    };

    /// Delivery that drops everything: the directory mails nothing itself.
    struct NoDelivery;

    impl Outbound for NoDelivery {
        fn submit(&self, _job: MailJob) {}
        fn submit_sms(&self, _job: SmsJob) {}
        fn withdraw(&self, _ids: &[Uuid]) {}
        fn webhooks_due(&self, _tenant: TenantId, _at: OffsetDateTime) {}
    }

    /// The dashboard sessions' idle end in the fixture.
    pub(in crate::directory) const IDLE: Duration = Duration::from_secs(30 * 60);
    /// The dashboard sessions' absolute end in the fixture.
    pub(in crate::directory) const ABSOLUTE: Duration = Duration::from_secs(2 * 3600);
    /// The opaque password hash accounts are created with (argon2 runs off the actor).
    pub(in crate::directory) const PASSWORD_HASH: &str = "$argon2id$opaque";

    fn args(store: Store, master_key: MasterKey) -> DirectoryArgs {
        DirectoryArgs {
            store,
            master_key,
            published: Published::default(),
            fault_injection: false,
            session_policy: SessionPolicy {
                idle: IDLE,
                absolute: ABSOLUTE,
            },
            runtime: crate::tenant::accounts::tests::runtime(Arc::new(NoDelivery)),
            tenant_idle: None,
            onboarding_per_ip_hourly: 3,
        }
    }

    /// A directory over a new store in `dir`.
    pub(in crate::directory) fn directory(dir: &Path) -> DirectoryState {
        let store = crate::tenant::accounts::tests::test_store(dir);
        DirectoryState::open(args(store, MasterKey::generate())).unwrap()
    }

    /// The directory started again over the same store and key, as after a restart: what it
    /// held in memory is gone and rebuilt from the records.
    pub(in crate::directory) fn reopen(old: DirectoryState) -> DirectoryState {
        let (store, key) = (old.root.clone(), old.master_key.clone());
        drop(old);
        DirectoryState::open(args(store, key)).unwrap()
    }

    /// A tenant named `name`, without an owner.
    pub(in crate::directory) fn tenant(d: &mut DirectoryState, name: &str) -> (TenantId, Created) {
        let out = d
            .create_tenant(NewTenant {
                name: name.into(),
                slug: None,
                owner: None,
                idempotency: None,
            })
            .unwrap();
        (out.created.tenant.id, out.created)
    }

    /// A tenant named `name` onboarded by a new, unverified account of `email`: the tenant,
    /// the account and its verification token.
    pub(in crate::directory) fn onboarded(
        d: &mut DirectoryState,
        name: &str,
        email: &str,
    ) -> (TenantId, Uuid, MailedToken) {
        let out = d
            .create_tenant(NewTenant {
                name: name.into(),
                slug: None,
                owner: Some(NewOwner::Create {
                    email: email.into(),
                    password_hash: PASSWORD_HASH.into(),
                }),
                idempotency: None,
            })
            .unwrap();
        let owner = out.created.owner.unwrap();
        (out.created.tenant.id, owner.id, out.verification.unwrap())
    }

    /// As [`onboarded`], the account then verified by its mailed token.
    pub(in crate::directory) fn verified_owner(
        d: &mut DirectoryState,
        name: &str,
        email: &str,
    ) -> (TenantId, Uuid) {
        let (tenant, account, mail) = onboarded(d, name, email);
        d.verify_account(&mail.token, account).unwrap();
        (tenant, account)
    }

    pub(in crate::directory) fn ip(last: u8) -> IpAddr {
        IpAddr::from([192, 0, 2, last])
    }

    #[test]
    fn a_reopened_directory_finds_its_tenants_keys_and_resources() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = directory(dir.path());
        let (acme, created) = tenant(&mut d, "Acme");
        let (globex, _) = tenant(&mut d, "Globex");
        let new_key = |tenant| NewManagementKey {
            tenant,
            name: "ci".into(),
            role: Role::Admin,
            expires_at: None,
            created_by: Uuid::now_v7(),
        };
        let kept = d.create_management_key(new_key(acme)).unwrap();
        let revoked = d.create_management_key(new_key(acme)).unwrap();
        d.revoke_management_key(acme, revoked.record.id).unwrap();
        let resource = d
            .register_resource(acme, "API".into(), "https://api.acme.example".into())
            .unwrap();

        let d = reopen(d);
        assert_eq!(d.tenants.len(), 2);
        let index = d.published.index.load();
        assert_eq!(index.by_slug.get("acme"), Some(&acme));
        assert_eq!(index.by_slug.get("globex"), Some(&globex));
        assert_eq!(index.slugs.get(&acme).map(String::as_str), Some("acme"));
        assert_eq!(
            index.by_key_hash.get(&sha256(created.api_key.as_bytes())),
            Some(&acme)
        );
        let grant = index
            .by_management_key
            .get(&sha256(kept.key.as_bytes()))
            .expect("the unrevoked key is published");
        assert_eq!((grant.tenant, grant.id), (acme, kept.record.id));
        assert!(!index
            .by_management_key
            .contains_key(&sha256(revoked.key.as_bytes())));
        assert_eq!(index.by_management_key.len(), 1);
        let catalog = d.tenant_catalog(acme).unwrap();
        assert_eq!(catalog.len(), 1);
        assert_eq!(catalog[0].resource.id, resource.id);
        assert!(d.tenant_catalog(globex).unwrap().is_empty());
        assert!(d.resource(PLATFORM_RESOURCE_ID).unwrap().is_none());
        assert!(d.running.is_empty() && d.published.running.is_empty());
    }

    #[test]
    fn a_reopened_directory_forgives_no_failed_login() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = directory(dir.path());
        let (_, account) = verified_owner(&mut d, "Acme", "owner@acme.example");
        for _ in 0..FREE_PAIR_FAILURES {
            d.login_failed("owner@acme.example", ip(1), None);
        }
        assert!(matches!(
            d.begin_login("owner@acme.example", ip(1), None),
            crate::directory::messages::LoginGate::Throttled { .. }
        ));

        let mut d = reopen(d);
        assert!(matches!(
            d.begin_login("owner@acme.example", ip(1), None),
            crate::directory::messages::LoginGate::Throttled { .. }
        ));
        // A login that went through is written too: after the next start it is still forgiven.
        d.create_session(account, ip(1), None).unwrap();
        d.persist_throttles_logged();
        let d = reopen(d);
        assert!(matches!(
            d.begin_login("owner@acme.example", ip(1), None),
            crate::directory::messages::LoginGate::Proceed(Some(_))
        ));
    }
}
