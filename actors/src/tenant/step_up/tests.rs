//! Unit tests of step-up re-authentication: the token, the password, the mailed code and link,
//! and the gate.

use super::*;
use crate::tenant::accounts::tests::{signed_in_session, tenant};
use crate::tenant::state::TenantState;

/// A user (a password, an address confirmed or not) and a first-party session of theirs.
fn signed_in(t: &mut TenantState, email: &str, verified: bool) -> (UserRecord, Bearer) {
    let now = OffsetDateTime::now_utc();
    let mut user = UserRecord::blank(Uuid::now_v7(), now);
    user.email = Some(email.into());
    user.email_verified = verified;
    user.password_hash = Some("$argon2id$opaque".into());
    let mut b = t.cx.store.batch();
    t.cx.put_new_user(&mut b, &user).unwrap();
    t.cx.store.apply(b).unwrap();
    let bearer = signed_in_session(t, &user);
    (user, bearer)
}

/// A tenant of its own (its directory kept with it), an audit context, and Ada signed in (a
/// password, a confirmed address).
fn ada() -> (
    tempfile::TempDir,
    TenantState,
    AuditContext,
    UserRecord,
    Bearer,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut t = tenant(dir.path());
    let (user, bearer) = signed_in(&mut t, "ada@example.com", true);
    (dir, t, AuditContext::default(), user, bearer)
}

/// Writes `user` as changed.
fn save(t: &TenantState, user: &UserRecord) {
    let mut b = t.cx.store.batch();
    b.put(user.id.as_bytes(), user).unwrap();
    t.cx.store.apply(b).unwrap();
}

fn password(user: &UserRecord) -> Credential {
    Credential {
        user_id: Some(user.id),
        password_hash: user.password_hash.clone(),
        epoch: user.password_epoch,
        device: None,
    }
}

fn code_of(mail: &[MailJob]) -> String {
    match &mail[0].kind {
        MailKind::StepUpEmailOtp { code, .. } => code.clone(),
        _ => panic!("not a step-up code"),
    }
}

/// The code a new step-up by mail sends `bearer`'s user.
fn mailed_code(t: &mut TenantState, bearer: Bearer, ctx: &AuditContext) -> String {
    let (_, mail) = t
        .step_up
        .step_up_email_initiate(&mut t.cx, bearer, None, ctx)
        .unwrap();
    code_of(&mail)
}

fn link_token_of(mail: &[MailJob]) -> String {
    match &mail[0].kind {
        MailKind::StepUpMagicLink { link, .. } => link.split("token=").nth(1).unwrap().to_owned(),
        _ => panic!("not a step-up link"),
    }
}

fn wrong(code: &str) -> String {
    let first = if code.starts_with('0') { '1' } else { '0' };
    format!("{first}{}", &code[1..])
}

#[test]
fn codes_are_six_digits() {
    for _ in 0..200 {
        let c = six_digit_code();
        assert_eq!(c.len(), 6, "{c}");
        assert!(c.bytes().all(|b| b.is_ascii_digit()), "{c}");
    }
}

#[tokio::test]
async fn a_step_up_token_is_consumed_once_and_only_by_its_own_session() {
    let (_dir, mut t, ctx, user, bearer) = ada();
    let other = signed_in_session(&t, &user);
    let (grant, _) = t
        .step_up
        .step_up_password(&mut t.cx, bearer, &password(&user), true, 5, &ctx)
        .unwrap();
    assert_eq!(
        (grant.aal, grant.amr.as_slice()),
        (2, &["pwd".to_owned()][..])
    );
    assert_eq!(grant.session_id, bearer.session_id);
    assert_eq!(grant.expires_at - grant.issued_at, STEP_UP_TOKEN_TTL);
    assert!(matches!(
        t.step_up.consume_step_up(&mut t.cx, other, grant.jti),
        Err(TenantError::InvalidChallenge)
    ));
    assert!(matches!(
        t.step_up.consume_step_up(&mut t.cx, bearer, Uuid::new_v4()),
        Err(TenantError::InvalidChallenge)
    ));
    let (used, _) = t
        .step_up
        .consume_step_up(&mut t.cx, bearer, grant.jti)
        .unwrap();
    assert_eq!((used.aal, used.amr), (2, vec!["pwd".to_owned()]));
    assert!(matches!(
        t.step_up.consume_step_up(&mut t.cx, bearer, grant.jti),
        Err(TenantError::InvalidChallenge)
    ));
}

#[tokio::test]
async fn a_step_up_token_expires_and_a_newer_one_replaces_it() {
    let (_dir, mut t, ctx, user, bearer) = ada();
    let (first, _) = t
        .step_up
        .step_up_password(&mut t.cx, bearer, &password(&user), true, 5, &ctx)
        .unwrap();
    let (second, _) = t
        .step_up
        .step_up_password(&mut t.cx, bearer, &password(&user), true, 5, &ctx)
        .unwrap();
    assert!(matches!(
        t.step_up.consume_step_up(&mut t.cx, bearer, first.jti),
        Err(TenantError::InvalidChallenge)
    ));
    // Past its lifetime (the drills' clock moved on), the newer one is refused too.
    t.cx.runtime.clock_offset = STEP_UP_TOKEN_TTL + Duration::seconds(1);
    assert!(matches!(
        t.step_up.consume_step_up(&mut t.cx, bearer, second.jti),
        Err(TenantError::InvalidChallenge)
    ));
    // A moment before, it was good.
    t.cx.runtime.clock_offset = STEP_UP_TOKEN_TTL - Duration::seconds(5);
    assert!(t
        .step_up
        .consume_step_up(&mut t.cx, bearer, second.jti)
        .is_ok());
}

#[tokio::test]
async fn password_step_up_refuses_a_wrong_or_stale_password_and_users_without_one() {
    let (_dir, mut t, ctx, mut user, bearer) = ada();
    assert!(matches!(
        t.step_up
            .step_up_password(&mut t.cx, bearer, &password(&user), false, 5, &ctx),
        Err(TenantError::InvalidCredentials)
    ));
    // A hash read before a password change: the right old password is no proof.
    let stale = password(&user);
    user.password_epoch += 1;
    save(&t, &user);
    assert!(matches!(
        t.step_up
            .step_up_password(&mut t.cx, bearer, &stale, true, 5, &ctx),
        Err(TenantError::InvalidCredentials)
    ));
    user.password_hash = None;
    save(&t, &user);
    assert!(matches!(
        t.step_up
            .step_up_password(&mut t.cx, bearer, &password(&user), true, 5, &ctx),
        Err(TenantError::StepUpMethodUnavailable)
    ));
    // An unknown session is no bearer.
    let stranger = Bearer {
        session_id: Uuid::now_v7(),
        user_id: user.id,
    };
    assert!(matches!(
        t.step_up
            .step_up_password(&mut t.cx, stranger, &password(&user), true, 5, &ctx),
        Err(TenantError::InvalidSession)
    ));
}

#[tokio::test]
async fn an_emailed_code_steps_up_its_own_session_once_at_aal1() {
    let (_dir, mut t, ctx, user, bearer) = ada();
    let other = signed_in_session(&t, &user);
    let (masked, mail) = t
        .step_up
        .step_up_email_initiate(&mut t.cx, bearer, None, &ctx)
        .unwrap();
    assert_eq!(masked, "a***@example.com");
    assert_eq!(mail[0].to, "ada@example.com");
    let code = code_of(&mail);
    assert!(matches!(
        t.step_up
            .step_up_email_verify(&mut t.cx, other, &code, &ctx),
        Err(TenantError::InvalidChallenge)
    ));
    assert!(matches!(
        t.step_up
            .step_up_email_verify(&mut t.cx, bearer, &wrong(&code), &ctx),
        Err(TenantError::InvalidChallenge)
    ));
    let (grant, _) = t
        .step_up
        .step_up_email_verify(&mut t.cx, bearer, &code, &ctx)
        .unwrap();
    assert_eq!((grant.aal, grant.amr), (1, vec!["otp".to_owned()]));
    assert!(matches!(
        t.step_up
            .step_up_email_verify(&mut t.cx, bearer, &code, &ctx),
        Err(TenantError::InvalidChallenge)
    ));
}

#[tokio::test]
async fn an_emailed_code_expires_after_five_minutes() {
    let (_dir, mut t, ctx, _, bearer) = ada();
    let code = mailed_code(&mut t, bearer, &ctx);
    t.cx.runtime.clock_offset = EMAIL_OTP_TTL + Duration::seconds(1);
    assert!(matches!(
        t.step_up
            .step_up_email_verify(&mut t.cx, bearer, &code, &ctx),
        Err(TenantError::InvalidChallenge)
    ));
    // A moment before its end, the same code was good.
    t.cx.runtime.clock_offset = EMAIL_OTP_TTL - Duration::seconds(5);
    assert!(t
        .step_up
        .step_up_email_verify(&mut t.cx, bearer, &code, &ctx)
        .is_ok());
}

#[tokio::test]
async fn five_wrong_codes_block_every_code_of_the_user_for_a_while() {
    let (_dir, mut t, ctx, _, bearer) = ada();
    let code = mailed_code(&mut t, bearer, &ctx);
    for _ in 0..5 {
        assert!(matches!(
            t.step_up
                .step_up_email_verify(&mut t.cx, bearer, &wrong(&code), &ctx),
            Err(TenantError::InvalidChallenge)
        ));
    }
    // That code is dead; a new one is right but the user's codes are blocked.
    let fresh = mailed_code(&mut t, bearer, &ctx);
    assert!(matches!(
        t.step_up
            .step_up_email_verify(&mut t.cx, bearer, &fresh, &ctx),
        Err(TenantError::TooManyAttempts { .. })
    ));
}

#[tokio::test]
async fn mail_step_up_needs_a_confirmed_address_and_is_spaced_per_session() {
    let (_dir, mut t, ctx, user, bearer) = ada();
    let (_, unconfirmed) = signed_in(&mut t, "bo@example.com", false);
    assert!(matches!(
        t.step_up
            .step_up_email_initiate(&mut t.cx, unconfirmed, None, &ctx),
        Err(TenantError::StepUpMethodUnavailable)
    ));
    assert!(matches!(
        t.step_up
            .step_up_link_initiate(&mut t.cx, unconfirmed, None, None, &ctx),
        Err(TenantError::StepUpMethodUnavailable)
    ));
    for i in 0..crate::tenant::limits::STEP_UP_MAILS {
        if i % 2 == 0 {
            t.step_up
                .step_up_email_initiate(&mut t.cx, bearer, None, &ctx)
                .unwrap();
        } else {
            t.step_up
                .step_up_link_initiate(&mut t.cx, bearer, None, None, &ctx)
                .unwrap();
        }
    }
    assert!(matches!(
        t.step_up
            .step_up_link_initiate(&mut t.cx, bearer, None, None, &ctx),
        Err(TenantError::RateLimited { .. })
    ));
    // Another session of the user has its own window.
    let other = signed_in_session(&t, &user);
    assert!(t
        .step_up
        .step_up_email_initiate(&mut t.cx, other, None, &ctx)
        .is_ok());
}

#[tokio::test]
async fn a_step_up_link_works_once_and_only_from_its_session() {
    let (_dir, mut t, ctx, user, bearer) = ada();
    let other = signed_in_session(&t, &user);
    let (masked, mail) = t
        .step_up
        .step_up_link_initiate(&mut t.cx, bearer, Some("link google".into()), None, &ctx)
        .unwrap();
    assert_eq!(masked, "a***@example.com");
    let token = link_token_of(&mail);
    assert!(matches!(
        t.step_up
            .step_up_link_verify(&mut t.cx, other, &token, &ctx),
        Err(TenantError::InvalidChallenge)
    ));
    let (grant, _) = t
        .step_up
        .step_up_link_verify(&mut t.cx, bearer, &token, &ctx)
        .unwrap();
    assert_eq!((grant.aal, grant.amr), (1, vec!["mca".to_owned()]));
    assert!(matches!(
        t.step_up
            .step_up_link_verify(&mut t.cx, bearer, &token, &ctx),
        Err(TenantError::InvalidChallenge)
    ));
}

#[tokio::test]
async fn the_gate_offers_what_the_user_can_use_strongest_first() {
    let (_dir, mut t, _, mut user, bearer) = ada();
    user.mfa_enabled = true;
    save(&t, &user);
    let (gate, _) = t.step_up.step_up_gate(&mut t.cx, bearer).unwrap();
    assert_eq!(
        gate.available_methods,
        ["totp", "email_otp", "magic_link", "password"]
    );
    // The challenge is the session's TOTP step-up.
    let found =
        t.cx.find_challenge(
            &gate.mfa_challenge_token,
            &[Purpose::StepUpTotp],
            OffsetDateTime::now_utc(),
        )
        .unwrap();
    assert_eq!(found.record.session_id, Some(bearer.session_id));
    // No password, no confirmed address, no MFA: nothing to offer.
    let (mut bare, bare_bearer) = signed_in(&mut t, "bo@example.com", false);
    bare.password_hash = None;
    save(&t, &bare);
    let (gate, _) = t.step_up.step_up_gate(&mut t.cx, bare_bearer).unwrap();
    assert!(gate.available_methods.is_empty());
}
