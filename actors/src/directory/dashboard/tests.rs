//! Unit tests of the dashboard side: sessions, mailed tokens, invitations, members, logins.

use std::net::IpAddr;

use tessera_storage::{sha256, PlatformBatch, TenantId};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{account_mail::DECOY_KEY, logins::dashboard_device_key, *};
use crate::{
    directory::{
        messages::NewOwner,
        state::{
            tests::{
                directory, ip, onboarded, reopen, verified_owner, ABSOLUTE, IDLE, PASSWORD_HASH,
            },
            DirectoryState,
        },
        NewTenant,
    },
    error::DirectoryError,
    known_devices::{self, DEVICES_PER_ACCOUNT},
    login_guard::{FREE_ACCOUNT_FAILURES, FREE_DEVICE_FAILURES, FREE_PAIR_FAILURES},
    records::{
        pending_invite_key, AccountTokenPurpose, AccountTokenRecord, DashboardAccount,
        DashboardDevice, DashboardSession, InviteRecord, PendingInvite, Role,
    },
    throttle::{Clocks, PlatformThrottleRecord, SavedCount},
};

fn seconds(d: std::time::Duration) -> time::Duration {
    time::Duration::seconds(d.as_secs() as i64)
}

fn proceeds(gate: &LoginGate) -> bool {
    matches!(gate, LoginGate::Proceed(_))
}

/// The known device the gate's credential names.
fn device_of(gate: LoginGate) -> Option<Uuid> {
    match gate {
        LoginGate::Proceed(Some(c)) => c.device,
        other => panic!("no credential: {other:?}"),
    }
}

fn reset_by_email(d: &mut DirectoryState, email: &str, from: IpAddr) -> Option<MailedToken> {
    d.issue_account_token(
        AccountTarget::Email {
            email: email.into(),
            ip: from,
        },
        AccountTokenPurpose::Reset,
    )
    .unwrap()
}

/// Rewrites the mailed token's record as expired a second ago.
fn expire_account_token(d: &DirectoryState, token: &str) {
    let key = sha256(token.as_bytes());
    let mut rec = d.platform.get::<AccountTokenRecord>(&key).unwrap().unwrap();
    rec.expires_at = OffsetDateTime::now_utc() - time::Duration::seconds(1);
    let mut batch = PlatformBatch::default();
    batch.put(&key, &rec).unwrap();
    d.platform.apply(batch).unwrap();
}

fn stored_account(d: &DirectoryState, id: Uuid) -> DashboardAccount {
    d.platform
        .get::<DashboardAccount>(id.as_bytes())
        .unwrap()
        .unwrap()
}

fn slugs(info: &SessionInfo) -> Vec<&str> {
    info.memberships.iter().map(|m| m.slug.as_str()).collect()
}

// Sessions.

#[test]
fn a_session_opens_with_its_token_alone_until_logout() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (_, account) = verified_owner(&mut d, "Acme", "owner@acme.example");
    let s = d.create_session(account, ip(1), None).unwrap();
    assert!(s.info.csrf_matches(&s.csrf));
    assert!(!s.info.csrf_matches(&s.token));
    assert_eq!(s.info.reauth_at, None);
    let info = d.authenticate(&s.token).unwrap();
    assert_eq!(info.account_id, account);
    assert_eq!(info.email, "owner@acme.example");
    assert_eq!(slugs(&info), ["acme"]);
    assert_eq!(info.expires_at, s.info.expires_at);
    assert!(matches!(
        d.authenticate(&s.csrf),
        Err(DirectoryError::SessionInvalid)
    ));
    d.logout(&s.token).unwrap();
    assert!(matches!(
        d.authenticate(&s.token),
        Err(DirectoryError::SessionInvalid)
    ));
    assert!(matches!(
        d.create_session(Uuid::now_v7(), ip(1), None),
        Err(DirectoryError::SessionInvalid)
    ));
}

#[test]
fn an_idle_session_ends_and_its_record_goes() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (_, account) = verified_owner(&mut d, "Acme", "owner@acme.example");
    let s = d.create_session(account, ip(1), None).unwrap();
    d.runtime.clock_offset = seconds(IDLE) - time::Duration::minutes(1);
    assert!(d.authenticate(&s.token).is_ok());
    // Used a minute before its idle end: the idle timer starts again from that use.
    d.runtime.clock_offset = seconds(IDLE) * 2 - time::Duration::minutes(2);
    assert!(d.authenticate(&s.token).is_ok());
    d.runtime.clock_offset = seconds(IDLE) * 3;
    assert!(matches!(
        d.authenticate(&s.token),
        Err(DirectoryError::SessionInvalid)
    ));
    assert!(d
        .platform
        .get::<DashboardSession>(&sha256(s.token.as_bytes()))
        .unwrap()
        .is_none());
    d.runtime.clock_offset = time::Duration::ZERO;
    assert!(d.authenticate(&s.token).is_err());
}

#[test]
fn a_session_in_use_still_ends_at_its_absolute_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (_, account) = verified_owner(&mut d, "Acme", "owner@acme.example");
    let s = d.create_session(account, ip(1), None).unwrap();
    let step = seconds(IDLE) / 2;
    let mut offset = time::Duration::ZERO;
    while offset + step < seconds(ABSOLUTE) {
        offset += step;
        d.runtime.clock_offset = offset;
        let info = d.authenticate(&s.token).unwrap();
        assert!(info.expires_at <= s.info.expires_at - seconds(IDLE) + seconds(ABSOLUTE));
    }
    d.runtime.clock_offset = seconds(ABSOLUTE);
    assert!(matches!(
        d.authenticate(&s.token),
        Err(DirectoryError::SessionInvalid)
    ));
    assert!(matches!(
        d.mark_reauth(&s.token),
        Err(DirectoryError::SessionInvalid)
    ));
}

#[test]
fn a_reauthentication_is_recorded_and_forgives_the_account_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (_, account) = verified_owner(&mut d, "Acme", "owner@acme.example");
    let s = d.create_session(account, ip(1), None).unwrap();
    for i in 0..FREE_ACCOUNT_FAILURES as u8 {
        d.login_failed("owner@acme.example", ip(100 + i), None);
    }
    assert!(!proceeds(&d.begin_login("owner@acme.example", ip(2), None)));
    let before = OffsetDateTime::now_utc();
    d.mark_reauth(&s.token).unwrap();
    let reauth_at = d.authenticate(&s.token).unwrap().reauth_at.unwrap();
    assert!(reauth_at >= before);
    assert!(proceeds(&d.begin_login("owner@acme.example", ip(2), None)));
    assert!(matches!(
        d.mark_reauth("no such session"),
        Err(DirectoryError::SessionInvalid)
    ));
}

#[test]
fn an_unverified_account_reaches_only_the_tenant_it_onboarded() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (_, account, mail) = onboarded(&mut d, "Acme", "owner@acme.example");
    d.create_tenant(NewTenant {
        name: "Globex".into(),
        slug: None,
        owner: Some(NewOwner::Existing {
            account_id: account,
        }),
        idempotency: None,
    })
    .unwrap();
    let s = d.create_session(account, ip(1), None).unwrap();
    assert!(!s.info.email_verified);
    assert_eq!(slugs(&s.info), ["acme"]);
    d.verify_account(&mail.token, account).unwrap();
    let info = d.authenticate(&s.token).unwrap();
    assert!(info.email_verified);
    assert_eq!(slugs(&info), ["acme", "globex"]);
    assert_eq!(info.role_in("globex").unwrap().role, Role::Owner);
}

// Mailed tokens.

#[test]
fn a_verification_token_is_single_use_and_for_its_own_account() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (_, account, mail) = onboarded(&mut d, "Acme", "owner@acme.example");
    let (_, other) = verified_owner(&mut d, "Globex", "owner@globex.example");
    assert!(matches!(
        d.verify_account(&mail.token, other),
        Err(DirectoryError::TokenInvalid)
    ));
    assert!(!stored_account(&d, account).email_verified);
    d.verify_account(&mail.token, account).unwrap();
    assert!(stored_account(&d, account).email_verified);
    assert!(matches!(
        d.verify_account(&mail.token, account),
        Err(DirectoryError::TokenInvalid)
    ));
    // Nothing more to verify: no mail.
    assert!(d
        .issue_account_token(AccountTarget::Id(account), AccountTokenPurpose::Verify)
        .unwrap()
        .is_none());
}

#[test]
fn an_expired_or_misdirected_mailed_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (_, account, mail) = onboarded(&mut d, "Acme", "owner@acme.example");
    d.check_account_token(&mail.token, AccountTokenPurpose::Verify)
        .unwrap();
    assert!(matches!(
        d.check_account_token(&mail.token, AccountTokenPurpose::Reset),
        Err(DirectoryError::TokenInvalid)
    ));
    assert!(matches!(
        d.reset_password(&mail.token, "$argon2id$new".into()),
        Err(DirectoryError::TokenInvalid)
    ));
    expire_account_token(&d, &mail.token);
    assert!(matches!(
        d.verify_account(&mail.token, account),
        Err(DirectoryError::TokenInvalid)
    ));
    let again = d
        .issue_account_token(AccountTarget::Id(account), AccountTokenPurpose::Verify)
        .unwrap()
        .unwrap();
    assert_eq!(again.email, "owner@acme.example");
    d.verify_account(&again.token, account).unwrap();
}

#[test]
fn a_reset_replaces_the_password_once_and_voids_every_older_token_and_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (_, account) = verified_owner(&mut d, "Acme", "owner@acme.example");
    let session = d.create_session(account, ip(1), None).unwrap();
    let first = reset_by_email(&mut d, "Owner@Acme.example", ip(1)).unwrap();
    let second = reset_by_email(&mut d, "owner@acme.example", ip(1)).unwrap();
    assert!(first.detaches.is_empty());
    let reset = d
        .reset_password(&first.token, "$argon2id$new".into())
        .unwrap();
    assert_eq!(reset.account_id, account);
    assert_eq!(reset.slugs, ["acme"]);
    assert!(!reset.reclaimed && reset.detached.is_empty());
    let cred = d.find_account("OWNER@acme.example").unwrap();
    assert_eq!(cred.password_hash, "$argon2id$new");
    for token in [&first.token, &second.token] {
        assert!(matches!(
            d.reset_password(token, "$argon2id$again".into()),
            Err(DirectoryError::TokenInvalid)
        ));
    }
    assert!(matches!(
        d.authenticate(&session.token),
        Err(DirectoryError::SessionInvalid)
    ));
    assert_eq!(stored_account(&d, account).epoch, 1);
}

#[test]
fn an_expired_reset_token_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (_, account) = verified_owner(&mut d, "Acme", "owner@acme.example");
    let mail = reset_by_email(&mut d, "owner@acme.example", ip(1)).unwrap();
    expire_account_token(&d, &mail.token);
    assert!(matches!(
        d.reset_password(&mail.token, "$argon2id$new".into()),
        Err(DirectoryError::TokenInvalid)
    ));
    assert_eq!(stored_account(&d, account).epoch, 0);
    assert_eq!(
        d.find_account("owner@acme.example").unwrap().password_hash,
        PASSWORD_HASH
    );
}

#[test]
fn a_reset_of_an_unknown_address_mails_nothing_and_writes_the_decoy() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    assert!(reset_by_email(&mut d, "nobody@example.com", ip(1)).is_none());
    let decoy = d
        .platform
        .get::<AccountTokenRecord>(DECOY_KEY)
        .unwrap()
        .expect("the decoy is written");
    assert_eq!(decoy.email.len(), "nobody@example.com".len());
    assert_eq!(decoy.expires_at, OffsetDateTime::UNIX_EPOCH);
}

#[test]
fn mails_per_account_are_capped_silently_for_resets_and_told_for_verification() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (_, account, _) = onboarded(&mut d, "Acme", "owner@acme.example");
    for i in 0..ACCOUNT_MAILS_PER_HOUR as u8 {
        assert!(reset_by_email(&mut d, "owner@acme.example", ip(i)).is_some());
    }
    assert!(reset_by_email(&mut d, "owner@acme.example", ip(50)).is_none());
    // Verification mails have a count of their own (the verification at onboarding is
    // not counted).
    let verify = |d: &mut DirectoryState| {
        d.issue_account_token(AccountTarget::Id(account), AccountTokenPurpose::Verify)
    };
    for _ in 0..ACCOUNT_MAILS_PER_HOUR {
        assert!(verify(&mut d).unwrap().is_some());
    }
    assert!(matches!(
        verify(&mut d),
        Err(DirectoryError::RateLimited { retry_after_secs }) if retry_after_secs > 3000
    ));
}

#[test]
fn resets_per_address_are_capped_before_any_lookup() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    verified_owner(&mut d, "Acme", "owner@acme.example");
    let from: IpAddr = "2001:db8:1:2::10".parse().unwrap();
    let neighbour: IpAddr = "2001:db8:1:2::99".parse().unwrap();
    for i in 0..RESETS_PER_IP_HOUR {
        assert!(reset_by_email(&mut d, &format!("n{i}@example.com"), from).is_none());
    }
    // The same /64: the same count, for a known address too.
    for (email, at) in [("owner@acme.example", neighbour), ("n0@example.com", from)] {
        let out = d.issue_account_token(
            AccountTarget::Email {
                email: email.into(),
                ip: at,
            },
            AccountTokenPurpose::Reset,
        );
        assert!(matches!(out, Err(DirectoryError::RateLimited { .. })));
    }
    assert!(reset_by_email(&mut d, "owner@acme.example", ip(1)).is_some());
}

#[test]
fn a_reset_takes_over_an_unverified_account_and_detaches_its_tenants() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (acme, account, _) = onboarded(&mut d, "Acme", "owner@acme.example");
    let session = d.create_session(account, ip(1), None).unwrap();
    let device_token = session.device_token.clone().unwrap();
    let mail = reset_by_email(&mut d, "owner@acme.example", ip(1)).unwrap();
    assert_eq!(mail.detaches.len(), 1);
    assert_eq!(mail.detaches[0].slug, "acme");
    let reset = d
        .reset_password(&mail.token, "$argon2id$new".into())
        .unwrap();
    assert!(reset.reclaimed);
    assert_eq!(reset.detached.len(), 1);
    assert_eq!(reset.detached[0].tenant, acme);
    assert_eq!(reset.detached[0].role, Role::Owner);
    assert!(reset.slugs.is_empty());
    let a = stored_account(&d, account);
    assert!(a.email_verified && a.memberships.is_empty());
    assert_eq!(a.onboarded_tenant, None);
    assert!(d.list_members(acme).unwrap().is_empty());
    assert!(matches!(
        d.authenticate(&session.token),
        Err(DirectoryError::SessionInvalid)
    ));
    // The creator's device keeps no way past a lockout.
    let gate = d.begin_login("owner@acme.example", ip(1), Some(&device_token));
    assert_eq!(device_of(gate), None);
}

// Invitations.

#[test]
fn an_invitation_makes_a_verified_member_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (acme, owner) = verified_owner(&mut d, "Acme", "owner@acme.example");
    let inv = d
        .invite(acme, "New@Example.com", Role::Admin, owner)
        .unwrap();
    assert_eq!(inv.email, "new@example.com");
    assert!(!inv.replaced);
    let list = d.members_and_invitations(acme).unwrap();
    assert_eq!(list.members.len(), 1);
    assert_eq!(list.invitations.len(), 1);
    assert_eq!(list.invitations[0].email, "new@example.com");
    assert_eq!(list.invitations[0].terms.invited_by, owner);
    let target = d.invite_target(&inv.token).unwrap();
    assert_eq!(target.email, "new@example.com");
    assert!(!target.verified_account);
    let accepted = d
        .accept_invite(
            &inv.token,
            InviteProof::NewPassword {
                password_hash: "$argon2id$invitee".into(),
            },
        )
        .unwrap();
    assert_eq!(accepted.tenant_slug, "acme");
    assert_eq!(accepted.role, Role::Admin);
    assert!(!accepted.reclaimed);
    let a = stored_account(&d, accepted.account_id);
    assert!(a.email_verified);
    assert_eq!(
        d.find_account("new@example.com").unwrap().password_hash,
        "$argon2id$invitee"
    );
    let list = d.members_and_invitations(acme).unwrap();
    assert_eq!(list.members.len(), 2);
    assert!(list.invitations.is_empty());
    assert!(matches!(
        d.accept_invite(
            &inv.token,
            InviteProof::NewPassword {
                password_hash: "$argon2id$again".into()
            }
        ),
        Err(DirectoryError::InviteInvalid)
    ));
    assert!(matches!(
        d.invite(acme, "new@example.com", Role::Viewer, owner),
        Err(DirectoryError::AlreadyMember)
    ));
}

#[test]
fn a_new_invitation_replaces_the_pending_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (acme, owner) = verified_owner(&mut d, "Acme", "owner@acme.example");
    let first = d
        .invite(acme, "new@example.com", Role::Admin, owner)
        .unwrap();
    let second = d
        .invite(acme, "new@example.com", Role::Viewer, owner)
        .unwrap();
    assert!(second.replaced);
    assert!(matches!(
        d.invite_target(&first.token),
        Err(DirectoryError::InviteInvalid)
    ));
    let list = d.members_and_invitations(acme).unwrap();
    assert_eq!(list.invitations.len(), 1);
    assert_eq!(list.invitations[0].terms.role, Role::Viewer);
    let accepted = d
        .accept_invite(
            &second.token,
            InviteProof::NewPassword {
                password_hash: PASSWORD_HASH.into(),
            },
        )
        .unwrap();
    assert_eq!(accepted.role, Role::Viewer);
}

#[test]
fn a_revoked_or_expired_invitation_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (acme, owner) = verified_owner(&mut d, "Acme", "owner@acme.example");
    let revoked = d.invite(acme, "a@example.com", Role::Admin, owner).unwrap();
    d.revoke_invite(acme, "A@example.com").unwrap();
    assert!(matches!(
        d.invite_target(&revoked.token),
        Err(DirectoryError::InviteInvalid)
    ));
    assert!(matches!(
        d.revoke_invite(acme, "a@example.com"),
        Err(DirectoryError::NotFound)
    ));

    let expired = d.invite(acme, "b@example.com", Role::Admin, owner).unwrap();
    let past = OffsetDateTime::now_utc() - time::Duration::seconds(1);
    let token_key = sha256(expired.token.as_bytes());
    let pending_key = pending_invite_key(&acme, "b@example.com");
    let mut invite = d.platform.get::<InviteRecord>(&token_key).unwrap().unwrap();
    let mut pending = d
        .platform
        .get::<PendingInvite>(&pending_key)
        .unwrap()
        .unwrap();
    invite.terms.expires_at = past;
    pending.terms.expires_at = past;
    let mut batch = PlatformBatch::default();
    batch.put(&token_key, &invite).unwrap();
    batch.put(&pending_key, &pending).unwrap();
    d.platform.apply(batch).unwrap();
    assert!(matches!(
        d.accept_invite(
            &expired.token,
            InviteProof::NewPassword {
                password_hash: PASSWORD_HASH.into()
            }
        ),
        Err(DirectoryError::InviteInvalid)
    ));
    assert!(d
        .members_and_invitations(acme)
        .unwrap()
        .invitations
        .is_empty());
    assert!(d.find_account("b@example.com").is_none());
    // A new invitation of the address does not count as replacing a live one.
    let again = d.invite(acme, "b@example.com", Role::Admin, owner).unwrap();
    assert!(!again.replaced);
    assert!(matches!(
        d.invite(TenantId::new(), "c@example.com", Role::Admin, owner),
        Err(DirectoryError::TenantNotFound)
    ));
}

#[test]
fn a_verified_account_accepts_only_by_its_own_login() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (acme, owner) = verified_owner(&mut d, "Acme", "owner@acme.example");
    let (_, invitee) = verified_owner(&mut d, "Globex", "boss@globex.example");
    let inv = d
        .invite(acme, "boss@globex.example", Role::Viewer, owner)
        .unwrap();
    assert!(d.invite_target(&inv.token).unwrap().verified_account);
    for proof in [
        InviteProof::NewPassword {
            password_hash: "$argon2id$attacker".into(),
        },
        InviteProof::Login { account_id: owner },
    ] {
        assert!(matches!(
            d.accept_invite(&inv.token, proof),
            Err(DirectoryError::InvalidCredentials)
        ));
    }
    assert_eq!(
        d.find_account("boss@globex.example").unwrap().password_hash,
        PASSWORD_HASH
    );
    let accepted = d
        .accept_invite(
            &inv.token,
            InviteProof::Login {
                account_id: invitee,
            },
        )
        .unwrap();
    assert_eq!(accepted.account_id, invitee);
    assert!(!accepted.reclaimed && accepted.detached.is_empty());
    let roles: Vec<Role> = stored_account(&d, invitee)
        .memberships
        .iter()
        .map(|m| m.role)
        .collect();
    assert_eq!(roles, [Role::Owner, Role::Viewer]);
}

#[test]
fn an_invitation_takes_over_an_unverified_account() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (acme, owner) = verified_owner(&mut d, "Acme", "owner@acme.example");
    let (globex, squatter, _) = onboarded(&mut d, "Globex", "victim@example.com");
    let session = d.create_session(squatter, ip(1), None).unwrap();
    let inv = d
        .invite(acme, "victim@example.com", Role::Admin, owner)
        .unwrap();
    assert!(!d.invite_target(&inv.token).unwrap().verified_account);
    let accepted = d
        .accept_invite(
            &inv.token,
            InviteProof::NewPassword {
                password_hash: "$argon2id$victim".into(),
            },
        )
        .unwrap();
    assert!(accepted.reclaimed);
    assert_eq!(accepted.account_id, squatter);
    assert_eq!(accepted.detached.len(), 1);
    assert_eq!(accepted.detached[0].tenant, globex);
    let a = stored_account(&d, squatter);
    assert_eq!(a.memberships.len(), 1);
    assert_eq!(a.memberships[0].tenant, acme);
    assert!(a.email_verified);
    assert_eq!(a.epoch, 1);
    assert!(d.list_members(globex).unwrap().is_empty());
    assert!(d.authenticate(&session.token).is_err());
}

// Roles and membership.

#[test]
fn the_last_owner_can_be_neither_demoted_nor_removed() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (acme, owner) = verified_owner(&mut d, "Acme", "owner@acme.example");
    for role in [Some(Role::Admin), Some(Role::Viewer), None] {
        assert!(matches!(
            d.change_member(acme, owner, role),
            Err(DirectoryError::LastOwner)
        ));
    }
    d.change_member(acme, owner, Some(Role::Owner)).unwrap();
    let inv = d
        .invite(acme, "co@example.com", Role::Owner, owner)
        .unwrap();
    let co = d
        .accept_invite(
            &inv.token,
            InviteProof::NewPassword {
                password_hash: PASSWORD_HASH.into(),
            },
        )
        .unwrap()
        .account_id;
    let change = d.change_member(acme, owner, Some(Role::Viewer)).unwrap();
    assert_eq!(
        (change.previous, change.role),
        (Role::Owner, Some(Role::Viewer))
    );
    let s = d.create_session(owner, ip(1), None).unwrap();
    assert_eq!(s.info.role_in("acme").unwrap().role, Role::Viewer);
    // The other is the last owner now.
    assert!(matches!(
        d.change_member(acme, co, None),
        Err(DirectoryError::LastOwner)
    ));
    let roles: Vec<(String, Role)> = d
        .list_members(acme)
        .unwrap()
        .into_iter()
        .map(|m| (m.email, m.role))
        .collect();
    assert_eq!(
        roles,
        [
            ("co@example.com".to_owned(), Role::Owner),
            ("owner@acme.example".to_owned(), Role::Viewer)
        ]
    );
}

#[test]
fn a_removed_member_loses_the_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (globex, founder, _) = onboarded(&mut d, "Globex", "founder@globex.example");
    let inv = d
        .invite(globex, "co@globex.example", Role::Owner, founder)
        .unwrap();
    d.accept_invite(
        &inv.token,
        InviteProof::NewPassword {
            password_hash: PASSWORD_HASH.into(),
        },
    )
    .unwrap();
    let s = d.create_session(founder, ip(1), None).unwrap();
    assert_eq!(slugs(&s.info), ["globex"]);
    let change = d.change_member(globex, founder, None).unwrap();
    assert_eq!((change.previous, change.role), (Role::Owner, None));
    assert_eq!(change.email, "founder@globex.example");
    let a = stored_account(&d, founder);
    assert!(a.memberships.is_empty());
    // Nor does the tenant it onboarded stay reachable through the unverified account.
    assert_eq!(a.onboarded_tenant, None);
    assert!(d.authenticate(&s.token).unwrap().memberships.is_empty());
    let members = d.list_members(globex).unwrap();
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].email, "co@globex.example");
    assert!(matches!(
        d.change_member(globex, founder, None),
        Err(DirectoryError::NotFound)
    ));
    assert!(matches!(
        d.change_member(globex, Uuid::now_v7(), Some(Role::Admin)),
        Err(DirectoryError::NotFound)
    ));
}

// Logins, throttles and known devices.

#[test]
fn failed_logins_lock_the_pair_and_a_session_forgives_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (_, account) = verified_owner(&mut d, "Acme", "owner@acme.example");
    for _ in 0..FREE_PAIR_FAILURES {
        assert!(proceeds(&d.begin_login("Owner@Acme.example", ip(1), None)));
        d.login_failed("OWNER@acme.example", ip(1), None);
    }
    assert!(matches!(
        d.begin_login("owner@acme.example", ip(1), None),
        LoginGate::Throttled { retry_after_secs } if retry_after_secs > 0
    ));
    assert!(proceeds(&d.begin_login("owner@acme.example", ip(2), None)));
    d.create_session(account, ip(1), None).unwrap();
    assert!(proceeds(&d.begin_login("owner@acme.example", ip(1), None)));
    // An unknown address is throttled alike and answers no credential.
    for _ in 0..FREE_PAIR_FAILURES {
        d.login_failed("nobody@example.com", ip(1), None);
    }
    assert!(!proceeds(&d.begin_login("nobody@example.com", ip(1), None)));
    assert!(matches!(
        d.begin_login("nobody@example.com", ip(2), None),
        LoginGate::Proceed(None)
    ));
}

#[test]
fn a_known_device_passes_a_locked_account_and_has_its_own_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (_, account) = verified_owner(&mut d, "Acme", "owner@acme.example");
    let s = d.create_session(account, ip(1), None).unwrap();
    let token = s.device_token.unwrap();
    for i in 0..FREE_ACCOUNT_FAILURES as u8 {
        d.login_failed("owner@acme.example", ip(100 + i), None);
    }
    assert!(!proceeds(&d.begin_login("owner@acme.example", ip(1), None)));
    let device = device_of(d.begin_login("owner@acme.example", ip(1), Some(&token)))
        .expect("the device is known");
    // A login from a known device mints no new token; nor does it unlock the account.
    let again = d.create_session(account, ip(1), Some(device)).unwrap();
    assert!(again.device_token.is_none());
    assert!(!proceeds(&d.begin_login("owner@acme.example", ip(3), None)));
    for _ in 0..FREE_DEVICE_FAILURES {
        d.login_failed("owner@acme.example", ip(1), Some(device));
    }
    assert!(!proceeds(&d.begin_login(
        "owner@acme.example",
        ip(1),
        Some(&token)
    )));
}

#[test]
fn a_device_token_counts_only_for_its_own_account_while_live() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (_, account) = verified_owner(&mut d, "Acme", "owner@acme.example");
    verified_owner(&mut d, "Globex", "owner@globex.example");
    let token = d
        .create_session(account, ip(1), None)
        .unwrap()
        .device_token
        .unwrap();
    let (id, _) = known_devices::parse(&token).unwrap();
    let gate =
        |d: &DirectoryState, email: &str, t: &str| device_of(d.begin_login(email, ip(1), Some(t)));
    assert_eq!(gate(&d, "owner@acme.example", &token), Some(id));
    assert_eq!(gate(&d, "owner@globex.example", &token), None);
    assert_eq!(gate(&d, "owner@acme.example", "tdv_garbage"), None);
    let forged = format!("tdv_{}.{}", id.simple(), "x".repeat(43));
    assert_eq!(gate(&d, "owner@acme.example", &forged), None);
    let key = dashboard_device_key(account, id);
    let mut rec = d.platform.get::<DashboardDevice>(&key).unwrap().unwrap();
    rec.device.expires_at = OffsetDateTime::now_utc() - time::Duration::seconds(1);
    let mut batch = PlatformBatch::default();
    batch.put(&key, &rec).unwrap();
    d.platform.apply(batch).unwrap();
    assert_eq!(gate(&d, "owner@acme.example", &token), None);
}

#[test]
fn an_account_keeps_at_most_its_cap_of_devices_and_drops_the_oldest() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = directory(dir.path());
    let (_, account) = verified_owner(&mut d, "Acme", "owner@acme.example");
    let tokens: Vec<String> = (0..=DEVICES_PER_ACCOUNT)
        .map(|_| {
            d.create_session(account, ip(1), None)
                .unwrap()
                .device_token
                .unwrap()
        })
        .collect();
    assert_eq!(
        d.dashboard_devices(account).unwrap().len(),
        DEVICES_PER_ACCOUNT
    );
    let known = |d: &DirectoryState, t: &str| {
        device_of(d.begin_login("owner@acme.example", ip(1), Some(t))).is_some()
    };
    assert!(!known(&d, &tokens[0]));
    assert!(tokens[1..].iter().all(|t| known(&d, t)));
}

#[test]
fn throttle_records_of_no_rule_are_deleted_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let d = directory(dir.path());
    let saved = PlatformThrottleRecord(SavedCount {
        failures: 3,
        blocked_until_ms: None,
        last_ms: Clocks::now().wall_ms,
        window_start_ms: None,
    });
    let mut batch = PlatformBatch::default();
    batch.put(&[9, 1, 2, 3], &saved).unwrap();
    d.platform.apply(batch).unwrap();
    let d = reopen(d);
    assert!(d
        .platform
        .get::<PlatformThrottleRecord>(&[9, 1, 2, 3])
        .unwrap()
        .is_none());
}

#[test]
fn the_device_key_is_account_then_device() {
    let (account, device) = (Uuid::now_v7(), Uuid::now_v7());
    let key = dashboard_device_key(account, device);
    assert_eq!(&key[..16], account.as_bytes());
    assert_eq!(&key[16..], device.as_bytes());
}
