//! Unit tests of the admins' users: the list and its indexes, changes, blocks, erasure.

use time::macros::datetime;

use super::*;
use crate::error::UserError;
use crate::tenant::state::TenantState;
use crate::tenant::{
    accounts::tests::{signed_in_session, tenant},
    messages::Bearer,
    records::{ChildConsent, ChildStatus},
};

const T0: OffsetDateTime = datetime!(2026-03-01 12:00:00 UTC);

fn put_user(t: &TenantState, user: &UserRecord) {
    let mut b = t.cx.store.batch();
    t.cx.put_new_user(&mut b, user).unwrap();
    t.cx.store.apply(b).unwrap();
}

fn user_at(email: &str, created_at: OffsetDateTime) -> UserRecord {
    let mut u = UserRecord::blank(Uuid::now_v7(), created_at);
    u.email = Some(email.into());
    u.email_verified = true;
    u
}

/// A tenant in a fresh directory (kept while the tenant is used) with Ada stored and
/// signed in.
fn ada_signed_in() -> (tempfile::TempDir, TenantState, UserRecord, Bearer) {
    let dir = tempfile::tempdir().unwrap();
    let t = tenant(dir.path());
    let user = user_at("ada@example.com", T0);
    put_user(&t, &user);
    let bearer = signed_in_session(&t, &user);
    (dir, t, user, bearer)
}

fn query(limit: usize) -> UserQuery {
    UserQuery {
        limit,
        ..Default::default()
    }
}

fn emails(page: &UserPage) -> Vec<String> {
    page.users
        .iter()
        .map(|u| u.email.clone().unwrap_or_default())
        .collect()
}

fn link_token(mail: &MailJob) -> String {
    match &mail.kind {
        MailKind::VerifyEmail { link } | MailKind::PasswordReset { link } => {
            link.split("token=").nth(1).unwrap().to_owned()
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_status_is_the_first_that_applies() {
    let mut u = UserRecord::blank(Uuid::now_v7(), T0);
    assert_eq!(u.status(), UserStatus::Active);
    u.email = Some("ada@example.com".into());
    assert_eq!(u.status(), UserStatus::Unverified);
    u.is_anonymous = true;
    assert_eq!(u.status(), UserStatus::Anonymous);
    let consent = |status| ChildConsent {
        status,
        status_at: T0,
        asked: None,
        consent_token: None,
        consented_by: None,
        receipt: None,
    };
    u.guardian = Some(consent(ChildStatus::Held));
    assert_eq!(u.status(), UserStatus::Held);
    u.guardian = Some(consent(ChildStatus::Blocked));
    assert_eq!(u.status(), UserStatus::Blocked);
    u.guardian = Some(consent(ChildStatus::Active));
    assert_eq!(u.status(), UserStatus::Anonymous);
    u.blocked_at = Some(T0);
    assert_eq!(u.status(), UserStatus::Blocked);
}

#[test]
fn a_query_matches_on_every_filter_it_names() {
    let mut u = user_at("ada@example.com", T0);
    u.phone = Some("+33612345678".into());
    u.last_sign_in_at = Some(T0 + Duration::days(1));
    let q = |f: &dyn Fn(&mut UserQuery)| {
        let mut q = query(10);
        f(&mut q);
        u.matches(&q)
    };
    assert!(q(&|_| {}));
    assert!(q(&|q| q.email_prefix = Some("ada@".into())));
    assert!(!q(&|q| q.email_prefix = Some("bob".into())));
    assert!(q(&|q| q.phone = Some("+33612345678".into())));
    assert!(!q(&|q| q.phone = Some("+3361234567".into())));
    assert!(q(&|q| q.status = Some(UserStatus::Active)));
    assert!(!q(&|q| q.status = Some(UserStatus::Unverified)));
    // Creation bounds are strict.
    assert!(!q(&|q| q.created_after = Some(T0)));
    assert!(!q(&|q| q.created_before = Some(T0)));
    assert!(q(&|q| q.created_after = Some(T0 - Duration::seconds(1))));
    assert!(q(&|q| q.created_before = Some(T0 + Duration::seconds(1))));
    assert!(q(&|q| q.last_sign_in_before = Some(T0 + Duration::days(2))));
    assert!(!q(&|q| q.last_sign_in_before = Some(T0 + Duration::days(1))));
    // Never signed in: not "signed in before" anything.
    u.last_sign_in_at = None;
    assert!(!u.matches(&UserQuery {
        last_sign_in_before: Some(T0 + Duration::days(2)),
        ..query(10)
    }));
    // No address matches no prefix.
    u.email = None;
    assert!(!u.matches(&UserQuery {
        email_prefix: Some(String::new()),
        ..query(10)
    }));
}

#[tokio::test]
async fn pages_run_newest_first_and_users_created_meanwhile_do_not_shift_them() {
    let dir = tempfile::tempdir().unwrap();
    let t = tenant(dir.path());
    for i in 0..5 {
        put_user(
            &t,
            &user_at(&format!("u{i}@example.com"), T0 + Duration::minutes(i)),
        );
    }
    let first = t.users.list_users(&t.cx, &query(2)).unwrap();
    assert_eq!(emails(&first), ["u4@example.com", "u3@example.com"]);
    // A newer user arrives between two pages.
    put_user(&t, &user_at("late@example.com", T0 + Duration::hours(1)));
    let second = t
        .users
        .list_users(
            &t.cx,
            &UserQuery {
                cursor: first.next_cursor.clone(),
                ..query(2)
            },
        )
        .unwrap();
    assert_eq!(emails(&second), ["u2@example.com", "u1@example.com"]);
    let third = t
        .users
        .list_users(
            &t.cx,
            &UserQuery {
                cursor: second.next_cursor.clone(),
                ..query(2)
            },
        )
        .unwrap();
    assert_eq!(emails(&third), ["u0@example.com"]);
    assert_eq!(third.next_cursor, None);
    // Creation bounds narrow the walk, both ends strict.
    let window = t
        .users
        .list_users(
            &t.cx,
            &UserQuery {
                created_after: Some(T0 + Duration::minutes(1)),
                created_before: Some(T0 + Duration::minutes(4)),
                ..query(10)
            },
        )
        .unwrap();
    assert_eq!(emails(&window), ["u3@example.com", "u2@example.com"]);
    assert_eq!(window.next_cursor, None);
}

#[tokio::test]
async fn an_email_prefix_finds_its_matches_newest_first_in_pages() {
    let dir = tempfile::tempdir().unwrap();
    let t = tenant(dir.path());
    put_user(&t, &user_at("ada@one.example", T0));
    put_user(&t, &user_at("bob@one.example", T0 + Duration::minutes(1)));
    put_user(&t, &user_at("adam@two.example", T0 + Duration::minutes(2)));
    put_user(
        &t,
        &user_at("ada.l@three.example", T0 + Duration::minutes(3)),
    );
    let q = |cursor| UserQuery {
        email_prefix: Some("ada".into()),
        cursor,
        ..query(2)
    };
    let first = t.users.list_users(&t.cx, &q(None)).unwrap();
    assert_eq!(emails(&first), ["ada.l@three.example", "adam@two.example"]);
    let second = t
        .users
        .list_users(&t.cx, &q(first.next_cursor.clone()))
        .unwrap();
    assert_eq!(emails(&second), ["ada@one.example"]);
    assert_eq!(second.next_cursor, None);
}

#[tokio::test]
async fn addresses_and_numbers_stay_unique() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = tenant(dir.path());
    let ctx = AuditContext::default();
    let new = |email: &str| NewUser {
        email: email.into(),
        password_hash: None,
        email_verified: true,
        invite: false,
    };
    let ada = t
        .users
        .create_user(&mut t.cx, new("ada@example.com"), &ctx)
        .unwrap()
        .0;
    let bob = t
        .users
        .create_user(&mut t.cx, new("bob@example.com"), &ctx)
        .unwrap()
        .0;
    assert!(matches!(
        t.users.create_user(&mut t.cx, new("ada@example.com"), &ctx),
        Err(TenantError::User(UserError::EmailInUse))
    ));
    let to_ada = UserPatch {
        email: Some("ada@example.com".into()),
        ..Default::default()
    };
    assert!(matches!(
        t.users.update_user(&mut t.cx, bob.summary.id, to_ada, &ctx),
        Err(TenantError::User(UserError::EmailInUse))
    ));
    let phone = |p: &str| UserPatch {
        phone: Some(Some(p.into())),
        ..Default::default()
    };
    t.users
        .update_user(&mut t.cx, ada.summary.id, phone("+33612345678"), &ctx)
        .unwrap();
    assert!(matches!(
        t.users
            .update_user(&mut t.cx, bob.summary.id, phone("+33612345678"), &ctx),
        Err(TenantError::User(UserError::PhoneInUse))
    ));
    // Setting one's own number again is no conflict.
    assert!(t
        .users
        .update_user(&mut t.cx, ada.summary.id, phone("+33612345678"), &ctx)
        .is_ok());
}

#[tokio::test]
async fn a_new_address_kills_the_links_mailed_to_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = tenant(dir.path());
    let ctx = AuditContext::default();
    let (created, mail) = t
        .users
        .create_user(
            &mut t.cx,
            NewUser {
                email: "old@example.com".into(),
                password_hash: Some("$argon2id$opaque".into()),
                email_verified: false,
                invite: false,
            },
            &ctx,
        )
        .unwrap();
    let old_link = link_token(&mail[0]);
    let patch = UserPatch {
        email: Some("new@example.com".into()),
        ..Default::default()
    };
    let (detail, mail) = t
        .users
        .update_user(&mut t.cx, created.summary.id, patch, &ctx)
        .unwrap();
    assert_eq!(detail.summary.email.as_deref(), Some("new@example.com"));
    assert!(!detail.summary.email_verified);
    assert_eq!(mail.len(), 1);
    assert_eq!(mail[0].to, "new@example.com");
    assert!(matches!(
        t.accounts.verify_email(&mut t.cx, &old_link, &ctx),
        Err(TenantError::InvalidLinkToken)
    ));
    assert!(t.cx.user_by_email("old@example.com").unwrap().is_none());
    t.accounts
        .verify_email(&mut t.cx, &link_token(&mail[0]), &ctx)
        .unwrap();
    assert!(
        t.cx.user(created.summary.id)
            .unwrap()
            .unwrap()
            .email_verified
    );
}

#[tokio::test]
async fn confirming_an_address_held_unconfirmed_hands_the_account_to_its_owner() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = tenant(dir.path());
    let ctx = AuditContext::default();
    let mut squatter = user_at("ada@example.com", T0);
    squatter.email_verified = false;
    squatter.password_hash = Some("$argon2id$squatter".into());
    put_user(&t, &squatter);
    let bearer = signed_in_session(&t, &squatter);
    let patch = UserPatch {
        email_verified: Some(true),
        ..Default::default()
    };
    let (detail, mail) = t
        .users
        .update_user(&mut t.cx, squatter.id, patch, &ctx)
        .unwrap();
    assert!(detail.summary.email_verified);
    let user = t.cx.user(squatter.id).unwrap().unwrap();
    assert!(user.password_hash.is_none());
    assert!(matches!(
        t.cx.live_session(bearer, OffsetDateTime::now_utc()),
        Err(TenantError::InvalidSession)
    ));
    // The owner gets a link to set a password.
    assert_eq!(mail.len(), 1);
    assert!(matches!(mail[0].kind, MailKind::PasswordReset { .. }));
    // An address that was confirmed already loses nothing on a metadata change.
    let meta = UserPatch {
        app_metadata: Some(serde_json::json!({ "plan": "pro" })),
        ..Default::default()
    };
    let bearer = signed_in_session(&t, &squatter);
    t.users
        .update_user(&mut t.cx, squatter.id, meta, &ctx)
        .unwrap();
    assert!(t.cx.live_session(bearer, OffsetDateTime::now_utc()).is_ok());
}

#[tokio::test]
async fn a_block_ends_every_session_until_lifted() {
    let (_dir, mut t, user, bearer) = ada_signed_in();
    let ctx = AuditContext::default();
    let (detail, _) = t
        .users
        .act_on_user(&mut t.cx, user.id, UserAction::Block, &ctx)
        .unwrap();
    assert_eq!(detail.summary.status, UserStatus::Blocked);
    assert!(detail.sessions.is_empty());
    assert!(t
        .cx
        .live_session(bearer, OffsetDateTime::now_utc())
        .is_err());
    let (detail, _) = t
        .users
        .act_on_user(&mut t.cx, user.id, UserAction::Unblock, &ctx)
        .unwrap();
    assert_eq!(detail.summary.status, UserStatus::Active);
    assert!(matches!(
        t.users
            .act_on_user(&mut t.cx, Uuid::now_v7(), UserAction::Block, &ctx),
        Err(TenantError::NotFound)
    ));
}

#[tokio::test]
async fn self_deletion_needs_the_setting_and_erases_the_user_and_their_mail() {
    let (_dir, mut t, user, bearer) = ada_signed_in();
    let ctx = AuditContext::default();
    // A message to them waits in the queue.
    let mut fx = t.cx.effects();
    t.cx.queue_mail(&mut fx, "ada@example.com", MailKind::PasswordChanged)
        .unwrap();
    let queued = t.cx.commit(fx).unwrap()[0].id;
    t.cx.settings.users.self_service_deletion_enabled = false;
    assert!(matches!(
        t.users.delete_me(&mut t.cx, bearer, &ctx),
        Err(TenantError::User(UserError::SelfDeletionDisabled))
    ));
    t.cx.settings.users.self_service_deletion_enabled = true;
    let needle = [b"ada@example.com".to_vec()];
    assert!(!t.users.user_traces(&t.cx, &needle).unwrap().is_empty());
    assert_eq!(
        t.users.delete_me(&mut t.cx, bearer, &ctx).unwrap(),
        [queued]
    );
    assert!(t.cx.user(user.id).unwrap().is_none());
    assert!(t.cx.user_by_email("ada@example.com").unwrap().is_none());
    assert!(t.cx.queued_mail().unwrap().is_empty());
    assert!(t
        .cx
        .live_session(bearer, OffsetDateTime::now_utc())
        .is_err());
    assert!(t
        .users
        .list_users(&t.cx, &query(10))
        .unwrap()
        .users
        .is_empty());
    // Nothing left that names the address.
    assert!(t.users.user_traces(&t.cx, &needle).unwrap().is_empty());
}

#[tokio::test]
async fn an_export_tells_how_the_user_signs_in_but_holds_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let t = tenant(dir.path());
    let mut user = user_at("ada@example.com", T0);
    user.password_hash = Some("$argon2id$v=19$secret-hash".into());
    user.recovery_codes = vec!["recovery-hash-1".into()];
    put_user(&t, &user);
    let bearer = signed_in_session(&t, &user);
    let export = t.users.export_me(&t.cx, bearer).unwrap();
    assert_eq!(export["format"], "tessera.user-export.v1");
    assert_eq!(export["identities"]["password_set"], true);
    assert_eq!(export["identities"]["email"]["address"], "ada@example.com");
    assert_eq!(export["factors"]["recovery_codes_remaining"], 1);
    assert_eq!(export["sessions"].as_array().unwrap().len(), 1);
    let text = export.to_string();
    for secret in ["secret-hash", "recovery-hash-1"] {
        assert!(!text.contains(secret), "{secret}");
    }
}
