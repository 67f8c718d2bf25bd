//! Unit tests of accounts, and the fixtures the actors' other unit tests open a tenant with.

use std::sync::{Arc, Mutex};

use tessera_storage::{Durability, MasterKey, Store, StoreOptions, TenantId};

use super::*;
use crate::tenant::state::TenantState;
use crate::{
    outbound::Outbound,
    records::Tier,
    tenant::{messages::TenantInfo, TenantCells, TenantRuntime, TokenPolicy},
};

#[derive(Default)]
struct Collect(Mutex<Vec<MailJob>>);

impl Outbound for Collect {
    fn submit(&self, job: MailJob) {
        self.0.lock().unwrap().push(job);
    }

    fn submit_sms(&self, _job: crate::outbound::SmsJob) {}

    fn withdraw(&self, _ids: &[Uuid]) {}

    fn webhooks_due(&self, _tenant: TenantId, _at: OffsetDateTime) {}
}

/// The runtime the actors' unit tests run tenants with, delivering to `outbound`.
pub(crate) fn runtime(outbound: Arc<dyn crate::outbound::Outbound>) -> TenantRuntime {
    TenantRuntime {
        tokens: TokenPolicy {
            access_ttl: std::time::Duration::from_secs(900),
            refresh_ttl: std::time::Duration::from_secs(3600),
            reuse_grace: std::time::Duration::from_secs(10),
            code_ttl: std::time::Duration::from_secs(60),
        },
        accounts_url: "https://accounts.example".into(),
        outbound,
        clock_offset: time::Duration::ZERO,
        sms_countries: Arc::new(vec!["FR".into()]),
        sms_platform_caps: crate::tenant::PlatformSmsCaps {
            free: 1_000,
            pro: 10_000,
            enterprise: 100_000,
        },
        agents: Default::default(),
        eudi_request_ttl: crate::tenant::eudi::TX_TTL,
        webhooks: Default::default(),
        login_failures_per_address: 100,
    }
}

/// A live password session of `user`, opened (and written) as a sign-in opens one.
pub(crate) fn signed_in_session(
    t: &TenantState,
    user: &UserRecord,
) -> crate::tenant::messages::Bearer {
    let mut b = t.cx.store.batch();
    let grant =
        t.cx.open_session(
            &mut b,
            user,
            (1, vec!["pwd".into()]),
            &AuditContext::default(),
            OffsetDateTime::now_utc(),
        )
        .unwrap();
    t.cx.store.apply(b).unwrap();
    crate::tenant::messages::Bearer {
        session_id: grant.session_id,
        user_id: user.id,
    }
}

/// Whether any key or value the tenant stores holds `needle`, as bytes.
pub(crate) fn raw_contains(t: &TenantState, needle: &[u8]) -> bool {
    t.cx.store.raw_entries().any(|item| {
        let (_, key, value) = item.unwrap();
        [key, value]
            .iter()
            .any(|hay| hay.windows(needle.len()).any(|w| w == needle))
    })
}

/// A real store in `dir`, with a small cache and relaxed durability, for unit tests.
pub(crate) fn test_store(dir: &std::path::Path) -> Store {
    Store::open(&StoreOptions {
        path: dir.to_path_buf(),
        cache_capacity_bytes: 8 << 20,
        durability: Durability::Relaxed,
        max_unflushed_batches: tessera_storage::flusher::DEFAULT_MAX_UNFLUSHED,
    })
    .unwrap()
}

pub(crate) fn tenant(dir: &std::path::Path) -> TenantState {
    let store = test_store(dir);
    let id = TenantId::new();
    let now = OffsetDateTime::now_utc();
    let info = TenantInfo {
        id,
        slug: "acme".into(),
        name: "Acme".into(),
        tier: Tier::Free,
        created_at: now,
        api_key_prefix: "tsk_x".into(),
        api_key_created_at: now,
        mau_cap: None,
    };
    let runtime = runtime(Arc::new(Collect::default()));
    TenantState::load(
        info,
        store.tenant(id),
        MasterKey::generate(),
        false,
        runtime,
        TenantCells::empty(),
    )
    .unwrap()
}

fn token_of(job: &MailJob) -> String {
    let link = match &job.kind {
        MailKind::VerifyEmail { link }
        | MailKind::PasswordReset { link }
        | MailKind::EmailChange { link }
        | MailKind::MagicLink { link }
        | MailKind::StepUpMagicLink { link, .. }
        | MailKind::Invitation { link }
        | MailKind::AgentRequest { link, .. }
        | MailKind::GuardianConsent { link, .. }
        | MailKind::GuardianPortal { link, .. }
        | MailKind::GuardianExport { link, .. }
        | MailKind::OrganizationInvitation { link, .. } => link.clone(),
        MailKind::AccountExists { reset_link } => reset_link.clone(),
        MailKind::AgentRevoked { .. }
        | MailKind::WebhookDisabled { .. }
        | MailKind::PasswordChanged
        | MailKind::EmailChangeAsked { .. }
        | MailKind::EmailChangeTaken
        | MailKind::MfaReset
        | MailKind::StepUpEmailOtp { .. }
        | MailKind::EmailOtp { .. }
        | MailKind::PhoneAdded { .. }
        | MailKind::PhoneRemoved { .. } => panic!("no link"),
    };
    link.split("token=").nth(1).unwrap().to_owned()
}

/// A verified user with a password (the hash is opaque here: argon2 runs elsewhere).
fn verified_user(t: &mut TenantState, email: &str) {
    let (_, mail) = t
        .accounts
        .register(
            &mut t.cx,
            Registration {
                email: email.into(),
                password_hash: "$argon2id$opaque".into(),
                date_of_birth: None,
                age_verification_token: None,
                redirect_to: None,
                locale: None,
            },
            &AuditContext::default(),
        )
        .unwrap();
    t.accounts
        .verify_email(&mut t.cx, &token_of(&mail[0]), &AuditContext::default())
        .unwrap();
}

fn attempt(email: &str, ip: IpAddr) -> LoginAttempt {
    LoginAttempt {
        email: email.to_owned(),
        ip,
        device_token: None,
        captcha: crate::login_guard::Captcha::Off,
        organization: None,
    }
}

#[tokio::test]
async fn a_right_password_finishing_after_the_block_began_gets_no_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = tenant(dir.path());
    verified_user(&mut t, "ada@example.com");
    let ip: IpAddr = "192.0.2.1".parse().unwrap();
    let ctx = AuditContext::default();
    // Six attempts start together: all pass the first check.
    let creds: Vec<Credential> = (0..6)
        .map(|_| {
            t.accounts
                .login_begin(&t.cx, &attempt("ada@example.com", ip))
                .unwrap()
        })
        .collect();
    for c in &creds[..5] {
        assert!(matches!(
            t.accounts
                .login_finish(&mut t.cx, &attempt("ada@example.com", ip), c, false, &ctx),
            Err(TenantError::InvalidCredentials)
        ));
    }
    // The sixth had the right password, but the account is blocked by now.
    assert!(matches!(
        t.accounts.login_finish(
            &mut t.cx,
            &attempt("ada@example.com", ip),
            &creds[5],
            true,
            &ctx
        ),
        Err(TenantError::TooManyAttempts { .. })
    ));
}

#[tokio::test]
async fn a_success_does_not_forgive_the_address_its_failures_on_other_accounts() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = tenant(dir.path());
    verified_user(&mut t, "mine@example.com");
    let ip: IpAddr = "192.0.2.9".parse().unwrap();
    let ctx = AuditContext::default();
    // Five failures per address in the window, for the test.
    t.cx.login = crate::login_guard::LoginThrottles::new(5);
    for round in 0..2 {
        let victim = format!("victim{round}@example.com");
        for _ in 0..2 {
            let c = t
                .accounts
                .login_begin(&t.cx, &attempt(&victim, ip))
                .unwrap();
            let _ = t
                .accounts
                .login_finish(&mut t.cx, &attempt(&victim, ip), &c, false, &ctx);
        }
        let c = t
            .accounts
            .login_begin(&t.cx, &attempt("mine@example.com", ip))
            .unwrap();
        assert!(t
            .accounts
            .login_finish(&mut t.cx, &attempt("mine@example.com", ip), &c, true, &ctx)
            .is_ok());
    }
    let c = t
        .accounts
        .login_begin(&t.cx, &attempt("victim9@example.com", ip))
        .unwrap();
    let _ = t.accounts.login_finish(
        &mut t.cx,
        &attempt("victim9@example.com", ip),
        &c,
        false,
        &ctx,
    );
    // Five failures from the address in all: it is blocked for every account.
    assert!(matches!(
        t.accounts
            .login_begin(&t.cx, &attempt("mine@example.com", ip)),
        Err(TenantError::TooManyAttempts { .. })
    ));
    // Another address is not.
    assert!(t
        .accounts
        .login_begin(
            &t.cx,
            &attempt("mine@example.com", "192.0.2.10".parse().unwrap())
        )
        .is_ok());
}

#[tokio::test]
async fn a_verification_link_outlives_a_password_change_but_a_reset_link_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = tenant(dir.path());
    let ctx = AuditContext::default();
    let (user, mail) = t
        .accounts
        .register(
            &mut t.cx,
            Registration {
                email: "bo@example.com".into(),
                password_hash: "$argon2id$opaque".into(),
                date_of_birth: Some("1990-01-02".into()),
                age_verification_token: None,
                redirect_to: None,
                locale: None,
            },
            &ctx,
        )
        .unwrap();
    let verify = token_of(&mail[0]);
    let reset = token_of(
        &t.accounts
            .forgot_password(&mut t.cx, "bo@example.com", None)
            .unwrap()[0],
    );
    // A password change (simulated at the record: the epoch moves).
    let mut rec = t.cx.user(user.id).unwrap().unwrap();
    rec.password_epoch += 1;
    let mut batch = t.cx.store.batch();
    batch.put(rec.id.as_bytes(), &rec).unwrap();
    t.cx.store.apply(batch).unwrap();
    assert!(matches!(
        t.accounts.check_reset_link(&mut t.cx, &reset),
        Err(TenantError::InvalidLinkToken)
    ));
    // The dead reset token was removed on the way.
    assert!(t
        .cx
        .store
        .get::<LinkTokenRecord>(&sha256(reset.as_bytes()))
        .unwrap()
        .is_none());
    t.accounts.verify_email(&mut t.cx, &verify, &ctx).unwrap();
    assert!(t.cx.user(user.id).unwrap().unwrap().email_verified);
    // Single use.
    assert!(matches!(
        t.accounts.verify_email(&mut t.cx, &verify, &ctx),
        Err(TenantError::InvalidLinkToken)
    ));
    // The date of birth is sealed, never stored in clear.
    let raw = serde_json::to_string(&t.cx.user(user.id).unwrap().unwrap().date_of_birth).unwrap();
    assert!(!raw.contains("1990"));
}

#[test]
fn ipv6_addresses_count_by_their_64_prefix() {
    let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
    let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
    let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
    assert_eq!(throttle_ip(a), throttle_ip(b));
    assert_ne!(throttle_ip(a), throttle_ip(c));
    let v4: IpAddr = "192.0.2.7".parse().unwrap();
    assert_eq!(throttle_ip(v4), v4);
    // An IPv4 client of a dual-stack listener counts as itself, not as `::/64`.
    let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
    let other: IpAddr = "::ffff:192.0.2.8".parse().unwrap();
    assert_eq!(throttle_ip(mapped), v4);
    assert_ne!(throttle_ip(mapped), throttle_ip(other));
}
