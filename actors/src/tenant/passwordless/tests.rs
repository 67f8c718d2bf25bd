//! Unit tests of passwordless sign-in: login links, e-mailed codes, their limits and bindings.

use super::*;
use crate::tenant::ctx::TenantCtx;
use crate::tenant::state::TenantState;
use crate::{
    login_guard::LoginThrottles,
    tenant::{accounts::tests::tenant, messages::OAuthParams},
};

const IP: &str = "192.0.2.1";

fn ip() -> IpAddr {
    IP.parse().unwrap()
}

/// A registered user with a confirmed address.
fn member(t: &mut TenantState, email: &str) -> UserRecord {
    let mut u = UserRecord::blank(Uuid::now_v7(), OffsetDateTime::now_utc());
    u.email = Some(email.into());
    u.email_verified = true;
    let mut b = t.cx.store.batch();
    t.cx.put_new_user(&mut b, &u).unwrap();
    t.cx.store.apply(b).unwrap();
    u
}

/// Writes `user` as changed.
fn save(t: &TenantState, user: &UserRecord) {
    let mut b = t.cx.store.batch();
    b.put(user.id.as_bytes(), user).unwrap();
    t.cx.store.apply(b).unwrap();
}

/// A tenant in a fresh directory (kept while the tenant is used), and an audit context.
fn fresh() -> (tempfile::TempDir, TenantState, AuditContext) {
    let dir = tempfile::tempdir().unwrap();
    let t = tenant(dir.path());
    (dir, t, AuditContext::default())
}

/// A fresh tenant with Ada, a member.
fn with_ada() -> (tempfile::TempDir, TenantState, AuditContext) {
    let (dir, mut t, ctx) = fresh();
    member(&mut t, "ada@example.com");
    (dir, t, ctx)
}

/// Ada's login code as she types it.
fn ada_types(
    t: &mut TenantState,
    code: &str,
    ctx: &AuditContext,
) -> Result<(PasswordlessLogin, Vec<MailJob>), TenantError> {
    t.passwordless
        .email_otp_verify(&mut t.cx, "ada@example.com", code, None, ip(), ctx)
}

/// The login code mailed to Ada on her request.
fn ada_code(t: &mut TenantState, ctx: &AuditContext) -> String {
    code_of(
        &t.passwordless
            .email_otp_request(&mut t.cx, "ada@example.com", false, None, ctx)
            .unwrap(),
    )
}

fn link_token(mail: &[MailJob]) -> String {
    match &mail[0].kind {
        MailKind::MagicLink { link } => link.split("token=").nth(1).unwrap().to_owned(),
        _ => panic!("not a login link"),
    }
}

fn code_of(mail: &[MailJob]) -> String {
    match &mail[0].kind {
        MailKind::EmailOtp { code } => code.clone(),
        _ => panic!("not a login code"),
    }
}

fn signed_amr(login: &PasswordlessLogin) -> Vec<String> {
    match &login.outcome {
        LoginOutcome::Signed { grant, .. } => grant.amr.clone(),
        other => panic!("not signed in: {other:?}"),
    }
}

fn resume(binding: &str) -> OAuthResume {
    OAuthResume {
        params: OAuthParams {
            client_id: "tc_app".into(),
            redirect_uri: "https://app.example/cb".into(),
            ..Default::default()
        },
        binding_hash: binding.into(),
    }
}

/// A code wrong for sure: the real one with its first digit changed.
fn wrong(code: &str) -> String {
    let first = if code.starts_with('0') { '1' } else { '0' };
    format!("{first}{}", &code[1..])
}

#[tokio::test]
async fn a_login_link_signs_in_once_with_amr_mca() {
    let (_dir, mut t, ctx) = with_ada();
    let mail = t
        .passwordless
        .magic_link_request(&mut t.cx, "ada@example.com", None, HostedReturn::default())
        .unwrap();
    assert_eq!(mail.len(), 1);
    assert_eq!(mail[0].to, "ada@example.com");
    let token = link_token(&mail);
    let (login, _) = t
        .passwordless
        .magic_link_verify(&mut t.cx, &token, None, &ctx)
        .unwrap();
    assert_eq!(signed_amr(&login), ["mca"]);
    assert!(matches!(
        t.passwordless
            .magic_link_verify(&mut t.cx, &token, None, &ctx),
        Err(TenantError::InvalidChallenge)
    ));
}

#[tokio::test]
async fn a_login_link_dies_with_a_password_change() {
    let (_dir, mut t, ctx) = fresh();
    let mut user = member(&mut t, "ada@example.com");
    let mail = t
        .passwordless
        .magic_link_request(&mut t.cx, "ada@example.com", None, HostedReturn::default())
        .unwrap();
    let token = link_token(&mail);
    user.password_epoch += 1;
    save(&t, &user);
    assert!(matches!(
        t.passwordless
            .magic_link_verify(&mut t.cx, &token, None, &ctx),
        Err(TenantError::InvalidChallenge)
    ));
    // The dead link was removed on the way.
    assert!(t
        .cx
        .store
        .get::<ChallengeRecord>(&challenge_key(user.id, Purpose::LoginMagicLink))
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn a_link_for_an_oauth_flow_works_only_in_the_browser_that_started_it() {
    let (_dir, mut t, ctx) = with_ada();
    let mail = t
        .passwordless
        .magic_link_request(
            &mut t.cx,
            "ada@example.com",
            Some(resume(&"b".repeat(64))),
            HostedReturn::default(),
        )
        .unwrap();
    let token = link_token(&mail);
    for other in [None, Some("c".repeat(64))] {
        assert!(matches!(
            t.passwordless
                .magic_link_verify(&mut t.cx, &token, other.as_deref(), &ctx),
            Err(TenantError::InvalidChallenge)
        ));
    }
    // Another browser's tries did not spend it.
    let (login, _) = t
        .passwordless
        .magic_link_verify(&mut t.cx, &token, Some(&"b".repeat(64)), &ctx)
        .unwrap();
    assert_eq!(login.oauth.unwrap().client_id, "tc_app");
}

#[test]
fn without_oauth_any_binding_passes_and_with_it_only_the_right_one() {
    let user = UserRecord::blank(Uuid::now_v7(), OffsetDateTime::now_utc());
    let mut r = ChallengeRecord::new(
        Purpose::LoginEmailOtp,
        &user,
        None,
        LOGIN_CODE_TTL,
        OffsetDateTime::now_utc(),
    );
    assert!(TenantCtx::binding_ok(&r, None));
    assert!(TenantCtx::binding_ok(&r, Some("anything")));
    r.oauth = Some(resume("abc"));
    assert!(TenantCtx::binding_ok(&r, Some("abc")));
    assert!(!TenantCtx::binding_ok(&r, Some("abd")));
    assert!(!TenantCtx::binding_ok(&r, Some("")));
    assert!(!TenantCtx::binding_ok(&r, None));
}

#[tokio::test]
async fn an_unknown_address_is_answered_alike_and_sent_nothing() {
    let (_dir, mut t, ctx) = fresh();
    let none = t
        .passwordless
        .magic_link_request(
            &mut t.cx,
            "nobody@example.com",
            None,
            HostedReturn::default(),
        )
        .unwrap();
    assert!(none.is_empty());
    let none = t
        .passwordless
        .email_otp_request(&mut t.cx, "nobody@example.com", false, None, &ctx)
        .unwrap();
    assert!(none.is_empty());
    assert!(t.cx.queued_mail().unwrap().is_empty());
    // The spacing holds for it as for an account.
    assert!(matches!(
        t.passwordless.magic_link_request(
            &mut t.cx,
            "nobody@example.com",
            None,
            HostedReturn::default()
        ),
        Err(TenantError::RateLimited { .. })
    ));
}

#[tokio::test]
async fn one_request_per_address_and_flow_per_minute() {
    let (_dir, mut t, ctx) = with_ada();
    member(&mut t, "bob@example.com");
    t.passwordless
        .magic_link_request(&mut t.cx, "ada@example.com", None, HostedReturn::default())
        .unwrap();
    assert!(matches!(
        t.passwordless.magic_link_request(
            &mut t.cx,
            "ada@example.com",
            None,
            HostedReturn::default()
        ),
        Err(TenantError::RateLimited { .. })
    ));
    // Another address, or another flow, has its own spacing.
    assert_eq!(
        t.passwordless
            .magic_link_request(&mut t.cx, "bob@example.com", None, HostedReturn::default())
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        t.passwordless
            .email_otp_request(&mut t.cx, "ada@example.com", false, None, &ctx)
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_disabled_flow_is_refused_before_anything_else() {
    let (_dir, mut t, ctx) = with_ada();
    let token = link_token(
        &t.passwordless
            .magic_link_request(&mut t.cx, "ada@example.com", None, HostedReturn::default())
            .unwrap(),
    );
    t.cx.settings.security.magic_link_enabled = false;
    t.cx.settings.security.email_otp_enabled = false;
    assert!(matches!(
        t.passwordless
            .magic_link_verify(&mut t.cx, &token, None, &ctx),
        Err(TenantError::PasswordlessDisabled)
    ));
    assert!(matches!(
        t.passwordless
            .email_otp_request(&mut t.cx, "ada@example.com", true, None, &ctx),
        Err(TenantError::PasswordlessDisabled)
    ));
    assert!(matches!(
        t.passwordless
            .email_otp_verify(&mut t.cx, "ada@example.com", "123456", None, ip(), &ctx),
        Err(TenantError::PasswordlessDisabled)
    ));
    // Texted codes are off by default.
    assert!(matches!(
        t.cx.flow_enabled(Flow::SmsOtp),
        Err(TenantError::PasswordlessDisabled)
    ));
}

#[tokio::test]
async fn a_login_code_signs_in_once_and_sent_again_is_no_guess() {
    let (_dir, mut t, ctx) = with_ada();
    let code = ada_code(&mut t, &ctx);
    assert_eq!(code.len(), 6);
    assert!(code.bytes().all(|b| b.is_ascii_digit()));
    assert!(matches!(
        t.passwordless.email_otp_verify(
            &mut t.cx,
            "ada@example.com",
            &wrong(&code),
            None,
            ip(),
            &ctx
        ),
        Err(TenantError::InvalidChallenge)
    ));
    // The code is bound to its address.
    assert!(matches!(
        t.passwordless
            .email_otp_verify(&mut t.cx, "bob@example.com", &code, None, ip(), &ctx),
        Err(TenantError::InvalidChallenge)
    ));
    let (login, _) = t
        .passwordless
        .email_otp_verify(&mut t.cx, "ada@example.com", &code, None, ip(), &ctx)
        .unwrap();
    assert_eq!(signed_amr(&login), ["otp"]);
    // The used code, sent again and again, is refused without counting as a guess.
    for _ in 0..20 {
        assert!(matches!(
            t.passwordless
                .email_otp_verify(&mut t.cx, "ada@example.com", &code, None, ip(), &ctx),
            Err(TenantError::InvalidChallenge)
        ));
    }
    let attempt = Attempt::new("ada@example.com", ip(), Captcha::Off);
    assert!(t.cx.login_gate(&attempt).is_ok());
}

#[tokio::test]
async fn five_wrong_codes_kill_the_code() {
    let (_dir, mut t, ctx) = with_ada();
    let code = ada_code(&mut t, &ctx);
    for _ in 0..4 {
        let _ = ada_types(&mut t, &wrong(&code), &ctx);
    }
    // Four wrong: still alive (the sign-in rules forgotten, to see the code's own count).
    t.cx.login = LoginThrottles::new(100);
    let at = (t.cx.address_slot("ada@example.com"), Purpose::LoginEmailOtp);
    let kept =
        t.cx.store
            .get::<ChallengeRecord>(&challenge_key(at.0, at.1))
            .unwrap()
            .unwrap();
    assert_eq!(kept.failures, 4);
    let _ = ada_types(&mut t, &wrong(&code), &ctx);
    t.cx.login = LoginThrottles::new(100);
    assert!(matches!(
        t.passwordless
            .email_otp_verify(&mut t.cx, "ada@example.com", &code, None, ip(), &ctx),
        Err(TenantError::InvalidChallenge)
    ));
}

#[tokio::test]
async fn wrong_codes_count_as_failed_logins_of_the_address() {
    let (_dir, mut t, ctx) = with_ada();
    let code = ada_code(&mut t, &ctx);
    let mut refusals = Vec::new();
    for _ in 0..6 {
        refusals.push(ada_types(&mut t, &wrong(&code), &ctx));
    }
    assert!(matches!(
        refusals.last(),
        Some(Err(TenantError::TooManyAttempts { .. }))
    ));
    // Blocked, the right code is not even checked.
    assert!(matches!(
        t.passwordless
            .email_otp_verify(&mut t.cx, "ada@example.com", &code, None, ip(), &ctx),
        Err(TenantError::TooManyAttempts { .. })
    ));
}

#[tokio::test]
async fn login_or_create_makes_a_confirmed_passwordless_account_at_verification() {
    let (_dir, mut t, ctx) = fresh();
    let mail = t
        .passwordless
        .email_otp_request(&mut t.cx, "new@example.com", true, None, &ctx)
        .unwrap();
    assert_eq!(mail.len(), 1);
    // Nothing is created before the code is shown.
    assert!(t.cx.user_by_email("new@example.com").unwrap().is_none());
    let (login, _) = t
        .passwordless
        .email_otp_verify(
            &mut t.cx,
            "new@example.com",
            &code_of(&mail),
            None,
            ip(),
            &ctx,
        )
        .unwrap();
    assert_eq!(signed_amr(&login), ["otp"]);
    let user = t.cx.user_by_email("new@example.com").unwrap().unwrap();
    assert!(user.email_verified);
    assert!(user.password_hash.is_none());
    assert!(!user.is_anonymous);
}

#[tokio::test]
async fn a_guest_is_no_member_for_a_login_link() {
    let (_dir, mut t, _) = fresh();
    let mut guest = member(&mut t, "guest@example.com");
    guest.is_anonymous = true;
    save(&t, &guest);
    assert!(t
        .passwordless
        .magic_link_request(
            &mut t.cx,
            "guest@example.com",
            None,
            HostedReturn::default()
        )
        .unwrap()
        .is_empty());
}
