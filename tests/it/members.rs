//! Dashboard accounts and members: addresses proven by mail, invitations that never add
//! anyone without the invitee, the pre-hijack of an address, role changes and removal.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{
    assert_none_mailed_since, audit_events, env_refs, error_code, eventually, Session, SmtpStub,
    TestServer, PASSWORD,
};

const CORP_OWNER: &str = "boss@corp.test";
const NEW_HIRE: &str = "new-hire@corp.test";
const HER_PASSWORD: &str = "the new hire's own passphrase";
pub(crate) const INVITE: &str = "/dashboard/accept-invite";
pub(crate) const VERIFY: &str = "/dashboard/verify-email";
pub(crate) const RESET: &str = "/dashboard/reset-password";

/// A server that mails through a local SMTP listener.
pub(crate) fn start() -> (SmtpStub, TestServer) {
    let smtp = SmtpStub::start();
    let srv = TestServer::start_with(&env_refs(&smtp.env()));
    (smtp, srv)
}

pub(crate) fn invite(srv: &TestServer, s: &Session, slug: &str, email: &str, role: &str) -> Value {
    let r = srv.dash(
        "POST",
        &format!("/v1/auth/dashboard/tenants/{slug}/members"),
        s,
        Some(&json!({"email": email, "role": role})),
    );
    assert_eq!(r.status(), 201);
    r.json().unwrap()
}

fn accept(srv: &TestServer, token: &str, password: &str) -> (u16, Value) {
    let r = srv.post_json(
        "/v1/auth/dashboard/accept-invite",
        &json!({"token": token, "password": password}),
    );
    (r.status().as_u16(), r.json().unwrap_or(Value::Null))
}

pub(crate) fn login_status(srv: &TestServer, email: &str, password: &str) -> u16 {
    srv.post_json(
        "/v1/auth/dashboard/login",
        &json!({"email": email, "password": password}),
    )
    .status()
    .as_u16()
}

fn slugs(s: &Session) -> Vec<String> {
    s.body["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["slug"].as_str().unwrap().to_owned())
        .collect()
}

fn members(srv: &TestServer, s: &Session, slug: &str) -> Value {
    let r = srv.dash(
        "GET",
        &format!("/v1/auth/dashboard/tenants/{slug}/members"),
        s,
        None,
    );
    assert_eq!(r.status(), 200);
    r.json().unwrap()
}

fn member_id(list: &Value, email: &str) -> String {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["email"] == email)
        .unwrap_or_else(|| panic!("{email} is not a member: {list}"))["account_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The attack: sign up with someone else's address before their employer invites them. The
/// invitation must not make the squatter a member; the real invitee's acceptance takes the
/// account over and ends the squatter's password and sessions.
#[test]
fn a_squatted_address_gains_nothing_from_an_invitation_and_the_invitee_takes_it_over() {
    let (smtp, srv) = start();
    srv.signup("Corp", CORP_OWNER);
    let boss = srv.login(CORP_OWNER, PASSWORD);
    // The squatter signs up with the new hire's address (no mailbox needed).
    srv.signup("Squat", NEW_HIRE);
    let squatter = srv.login(NEW_HIRE, PASSWORD);
    assert_eq!(squatter.body["account"]["email_verified"], false);

    let invited = invite(&srv, &boss, "corp", NEW_HIRE, "owner");
    assert_eq!(invited["status"], "invited");
    assert_eq!(invited["email_sent"], true);
    // Nothing reaches the squatter: not the corp tenant, not its settings or key.
    let r = srv.dash("GET", "/v1/auth/dashboard/tenants", &squatter, None);
    let listed: Value = r.json().unwrap();
    assert_eq!(listed["data"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["data"][0]["slug"], "squat");
    for path in [
        "/v1/auth/dashboard/tenants/corp",
        "/v1/auth/dashboard/tenants/corp/members",
    ] {
        assert_eq!(srv.dash("GET", path, &squatter, None).status(), 404);
    }
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/tenants/corp/api-key/rotate",
        &squatter,
        None,
    );
    assert_eq!(r.status(), 404);
    // The corp tenant lists the invitation as pending, not a member.
    let list = members(&srv, &boss, "corp");
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["invitations"][0]["email"], NEW_HIRE);
    assert_eq!(list["invitations"][0]["role"], "owner");

    // The real new hire opens her mail and accepts with her own password.
    let token = smtp.wait_for_link(NEW_HIRE, INVITE, 1);
    let (status, body) = accept(&srv, &token, HER_PASSWORD);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tenant_slug"], "corp");
    assert_eq!(body["role"], "owner");

    // The squatter is out: session dead, password refused.
    let r = srv.dash("GET", "/v1/auth/dashboard/tenants", &squatter, None);
    assert_eq!(r.status(), 401);
    assert_eq!(login_status(&srv, NEW_HIRE, PASSWORD), 401);
    // She holds the account, verified, with the role she was invited to.
    let her = srv.login(NEW_HIRE, HER_PASSWORD);
    assert_eq!(her.body["account"]["email_verified"], true);
    assert!(slugs(&her).contains(&"corp".to_owned()), "{}", her.body);
    let list = members(&srv, &boss, "corp");
    assert!(list["invitations"].as_array().unwrap().is_empty(), "{list}");
    let joined = audit_events(&srv, &boss, "corp", "member.joined");
    assert_eq!(joined[0]["metadata"]["account_reclaimed"], true);
}

/// The same attack the other way round: the invitation is pending when the squatter signs up.
/// The invitee's acceptance works with her password and the squatter holds nothing.
#[test]
fn a_squatter_signing_up_while_an_invitation_is_pending_gains_nothing() {
    let (smtp, srv) = start();
    srv.signup("Corp", CORP_OWNER);
    let boss = srv.login(CORP_OWNER, PASSWORD);
    invite(&srv, &boss, "corp", NEW_HIRE, "admin");
    srv.signup("Squat", NEW_HIRE);
    let squatter = srv.login(NEW_HIRE, PASSWORD);
    assert_eq!(slugs(&squatter), vec!["squat".to_owned()]);

    let token = smtp.wait_for_link(NEW_HIRE, INVITE, 1);
    let (status, body) = accept(&srv, &token, HER_PASSWORD);
    assert_eq!(status, 200, "{body}");
    // Her password works (it was not dropped), the squatter's does not, nor his session.
    let her = srv.login(NEW_HIRE, HER_PASSWORD);
    assert!(slugs(&her).contains(&"corp".to_owned()));
    assert_eq!(login_status(&srv, NEW_HIRE, PASSWORD), 401);
    let r = srv.dash("GET", "/v1/auth/dashboard/tenants", &squatter, None);
    assert_eq!(r.status(), 401);
    let list = members(&srv, &boss, "corp");
    assert_eq!(
        member_id(&list, NEW_HIRE),
        her.body["account"]["id"].as_str().unwrap()
    );
}

/// An invitation to an address whose account is verified is accepted only with that
/// account's own password; a wrong one is a failed login and leaves the link usable.
#[test]
fn accepting_for_a_verified_account_needs_that_accounts_password() {
    let (smtp, srv) = start();
    srv.signup("Corp", CORP_OWNER);
    let boss = srv.login(CORP_OWNER, PASSWORD);
    srv.signup("Own Co", NEW_HIRE);
    let her = srv.login(NEW_HIRE, PASSWORD);
    // She verifies her address: the mailed link with her own session.
    let verify_token = smtp.wait_for_link(NEW_HIRE, VERIFY, 1);
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/verify-email",
        &her,
        Some(&json!({"token": verify_token})),
    );
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().unwrap()["verified"], true);

    invite(&srv, &boss, "corp", NEW_HIRE, "admin");
    let token = smtp.wait_for_link(NEW_HIRE, INVITE, 1);
    // Whoever else holds the link cannot attach the membership with a password of theirs.
    let (status, body) = accept(&srv, &token, "someone else's password");
    assert_eq!(status, 401, "{body}");
    assert_eq!(error_code(&body), "dashboard/invalid_credentials");
    assert_eq!(login_status(&srv, NEW_HIRE, "someone else's password"), 401);
    let (status, body) = accept(&srv, &token, PASSWORD);
    assert_eq!(status, 200, "{body}");
    // Her password and session are untouched; she now has both tenants.
    let r = srv.dash("GET", "/v1/auth/dashboard/tenants", &her, None);
    assert_eq!(r.status(), 200);
    let again = srv.login(NEW_HIRE, PASSWORD);
    assert_eq!(slugs(&again), vec!["corp".to_owned(), "own-co".to_owned()]);
    // Single use.
    let (status, body) = accept(&srv, &token, PASSWORD);
    assert_eq!(status, 400);
    assert_eq!(error_code(&body), "dashboard/invite_invalid");
}

/// A verification link counts only with the session of the account it was mailed for, and
/// a pending invitation re-sent replaces the first link.
#[test]
fn verification_needs_the_accounts_own_session_and_a_new_invitation_replaces_the_old() {
    let (smtp, srv) = start();
    srv.signup("Corp", CORP_OWNER);
    let boss = srv.login(CORP_OWNER, PASSWORD);
    srv.signup("Squat", NEW_HIRE);
    // The real holder of the mailbox gets the squatter's verification mail. Even signed in
    // to an account of her own, the link does not verify the squatter's account, nor hers.
    let squat_link = smtp.wait_for_link(NEW_HIRE, VERIFY, 1);
    let boss_link = smtp.wait_for_link(CORP_OWNER, VERIFY, 1);
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/verify-email",
        &boss,
        Some(&json!({"token": squat_link})),
    );
    assert_eq!(r.status(), 400);
    assert_eq!(error_code(&r.json().unwrap()), "dashboard/token_invalid");
    let squatter = srv.login(NEW_HIRE, PASSWORD);
    assert_eq!(squatter.body["account"]["email_verified"], false);
    // Resending to a session's own unverified account mails a fresh link.
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/resend-verification",
        &boss,
        None,
    );
    assert_eq!(r.status(), 202);
    let fresh = smtp.wait_for_link(CORP_OWNER, VERIFY, 2);
    assert_ne!(fresh, boss_link);
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/verify-email",
        &boss,
        Some(&json!({"token": boss_link})),
    );
    assert_eq!(r.status(), 200);
    assert_eq!(
        srv.login(CORP_OWNER, PASSWORD).body["account"]["email_verified"],
        true
    );

    // Inviting twice: the first link stops working, the second works.
    invite(&srv, &boss, "corp", "pat@corp.test", "viewer");
    let first = smtp.wait_for_link("pat@corp.test", INVITE, 1);
    let again = invite(&srv, &boss, "corp", "pat@corp.test", "admin");
    assert_eq!(again["replaced"], true);
    let second = smtp.wait_for_link("pat@corp.test", INVITE, 2);
    let (status, body) = accept(&srv, &first, "pat's password 12");
    assert_eq!(status, 400, "{body}");
    // A new account's password is 12-128 characters, as a dashboard reset's; a shorter one
    // leaves the link usable.
    let (status, body) = accept(&srv, &second, "short pass1");
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["details"]["fields"]["password"].is_string(),
        "{body}"
    );
    let (status, body) = accept(&srv, &second, "pat's password 12");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["role"], "admin");
    // A revoked invitation's link is dead too.
    invite(&srv, &boss, "corp", "sam@corp.test", "viewer");
    let sam = smtp.wait_for_link("sam@corp.test", INVITE, 1);
    let r = srv.dash(
        "DELETE",
        "/v1/auth/dashboard/tenants/corp/invitations/sam@corp.test",
        &boss,
        None,
    );
    assert_eq!(r.status(), 204);
    assert_eq!(accept(&srv, &sam, "sam's password 12").0, 400);
    assert!(members(&srv, &boss, "corp")["invitations"]
        .as_array()
        .unwrap()
        .is_empty());
}

/// The real holder of a squatted address resets its password by mail: the squatter's
/// password and sessions end, and the address is verified. An unknown address gets the same
/// answer and no mail.
#[test]
fn a_password_reset_proves_the_mailbox_and_ends_the_squatter() {
    let (smtp, srv) = start();
    srv.signup("Squat", NEW_HIRE);
    let squatter = srv.login(NEW_HIRE, PASSWORD);
    let forgot = |email: &str| {
        let r = srv.post_json(
            "/v1/auth/dashboard/forgot-password",
            &json!({"email": email}),
        );
        (r.status().as_u16(), r.text().unwrap())
    };
    let unknown = forgot("nobody@corp.test");
    let known = forgot(NEW_HIRE);
    assert_eq!(unknown, known);
    assert_eq!(known.0, 202);
    let token = smtp.wait_for_link(NEW_HIRE, RESET, 1);
    // The later mail arrived and the postman is idle: the earlier request for an unknown
    // address sent none.
    assert_none_mailed_since(&smtp, &srv, &["nobody@corp.test"]);

    let r = srv.post_json(
        "/v1/auth/dashboard/reset-password",
        &json!({"token": token, "password": "short"}),
    );
    assert_eq!(r.status(), 400);
    let r = srv.post_json(
        "/v1/auth/dashboard/reset-password",
        &json!({"token": token, "password": HER_PASSWORD}),
    );
    assert_eq!(r.status(), 200);
    assert_eq!(
        srv.dash("GET", "/v1/auth/dashboard/tenants", &squatter, None)
            .status(),
        401
    );
    assert_eq!(login_status(&srv, NEW_HIRE, PASSWORD), 401);
    let her = srv.login(NEW_HIRE, HER_PASSWORD);
    assert_eq!(her.body["account"]["email_verified"], true);
    // Single use.
    let r = srv.post_json(
        "/v1/auth/dashboard/reset-password",
        &json!({"token": token, "password": "yet another passphrase"}),
    );
    assert_eq!(r.status(), 400);
    assert_eq!(error_code(&r.json().unwrap()), "dashboard/token_invalid");

    // The squatter's known device went with the takeover: once the account is locked from
    // here, its token lets nothing through, while the owner's own does.
    let device = |s: &Session| {
        s.body["device_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no device token in {}", s.body))
            .to_owned()
    };
    let (squatters, hers) = (device(&squatter), device(&her));
    for _ in 0..5 {
        assert_eq!(login_status(&srv, NEW_HIRE, "a wrong guess here"), 401);
    }
    assert_eq!(login_status(&srv, NEW_HIRE, HER_PASSWORD), 429);
    let with_device = |token: &str| {
        srv.post_json(
            "/v1/auth/dashboard/login",
            &json!({"email": NEW_HIRE, "password": HER_PASSWORD, "device_token": token}),
        )
        .status()
        .as_u16()
    };
    assert_eq!(with_device(&squatters), 429);
    assert_eq!(with_device(&hers), 200);
}

/// Owners change roles and remove members; any member may leave; the last owner can be
/// neither demoted nor removed; each change is audited.
#[test]
fn members_change_roles_leave_and_the_last_owner_stays() {
    let (smtp, srv) = start();
    srv.signup("Corp", CORP_OWNER);
    let boss = srv.login(CORP_OWNER, PASSWORD);
    for (email, role) in [("ann@corp.test", "admin"), ("vic@corp.test", "viewer")] {
        invite(&srv, &boss, "corp", email, role);
        let token = smtp.wait_for_link(email, INVITE, 1);
        assert_eq!(accept(&srv, &token, "a member passphrase").0, 200);
    }
    let list = members(&srv, &boss, "corp");
    let boss_id = member_id(&list, CORP_OWNER);
    let ann_id = member_id(&list, "ann@corp.test");
    let vic_id = member_id(&list, "vic@corp.test");
    let ann = srv.login("ann@corp.test", "a member passphrase");
    let vic = srv.login("vic@corp.test", "a member passphrase");
    let member_path = |id: &str| format!("/v1/auth/dashboard/tenants/corp/members/{id}");

    // Only owners change roles or remove others.
    let r = srv.dash(
        "PATCH",
        &member_path(&vic_id),
        &ann,
        Some(&json!({"role": "owner"})),
    );
    assert_eq!(r.status(), 403);
    assert_eq!(
        srv.dash("DELETE", &member_path(&vic_id), &ann, None)
            .status(),
        403
    );
    // The only owner cannot step down or leave.
    let r = srv.dash(
        "PATCH",
        &member_path(&boss_id),
        &boss,
        Some(&json!({"role": "admin"})),
    );
    assert_eq!(r.status(), 409);
    assert_eq!(error_code(&r.json().unwrap()), "dashboard/last_owner");
    let r = srv.dash("DELETE", &member_path(&boss_id), &boss, None);
    assert_eq!(r.status(), 409);
    let r = srv.dash(
        "PATCH",
        &member_path(&ann_id),
        &boss,
        Some(&json!({"role": "superuser"})),
    );
    assert_eq!(r.status(), 400);

    // Ann becomes owner; then the first owner may step down.
    let r = srv.dash(
        "PATCH",
        &member_path(&ann_id),
        &boss,
        Some(&json!({"role": "owner"})),
    );
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().unwrap()["role"], "owner");
    let r = srv.dash(
        "PATCH",
        &member_path(&boss_id),
        &boss,
        Some(&json!({"role": "viewer"})),
    );
    assert_eq!(r.status(), 200);
    // The change holds at once for existing sessions: the old owner can no longer write.
    let r = srv.dash(
        "PATCH",
        &member_path(&vic_id),
        &boss,
        Some(&json!({"role": "admin"})),
    );
    assert_eq!(r.status(), 403);
    // A member leaves; an owner removes another; the removed lose the tenant at once.
    assert_eq!(
        srv.dash("DELETE", &member_path(&vic_id), &vic, None)
            .status(),
        204
    );
    assert_eq!(
        srv.dash("GET", "/v1/auth/dashboard/tenants/corp", &vic, None)
            .status(),
        404
    );
    assert_eq!(
        srv.dash("DELETE", &member_path(&boss_id), &ann, None)
            .status(),
        204
    );
    assert_eq!(
        srv.dash("DELETE", &member_path(&boss_id), &ann, None)
            .status(),
        404
    );
    let list = members(&srv, &ann, "corp");
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(
        srv.dash("DELETE", &member_path(&ann_id), &ann, None)
            .status(),
        409
    );

    let changed = audit_events(&srv, &ann, "corp", "member.role_changed");
    assert_eq!(changed.len(), 2);
    assert_eq!(audit_events(&srv, &ann, "corp", "member.left").len(), 1);
    assert_eq!(audit_events(&srv, &ann, "corp", "member.removed").len(), 1);
}

/// What a dashboard account that `s` holds sees of tenant `slug`: every route answers 404,
/// as for a tenant that does not exist.
fn assert_unreachable(srv: &TestServer, s: &Session, slug: &str, own_id: &str) {
    for path in ["", "/members", "/audit-events", "/settings/security"] {
        let path = format!("/v1/auth/dashboard/tenants/{slug}{path}");
        assert_eq!(srv.dash("GET", &path, s, None).status(), 404, "{path}");
    }
    let rotate = format!("/v1/auth/dashboard/tenants/{slug}/api-key/rotate");
    assert_eq!(srv.dash("POST", &rotate, s, None).status(), 404);
    let leave = format!("/v1/auth/dashboard/tenants/{slug}/members/{own_id}");
    assert_eq!(srv.dash("DELETE", &leave, s, None).status(), 404);
    let r = srv.dash("PATCH", &leave, s, Some(&json!({"role": "owner"})));
    assert_eq!(r.status(), 404);
}

/// The tenant's records that hold `needle`, through the operator's admin socket.
fn traces(srv: &TestServer, slug: &str, needle: &str) -> Vec<Value> {
    srv.admin(&["user", "traces", "--tenant", slug, needle], "")
        .json()["traces"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The squatter's sign-up made a tenant of his own, whose API key he holds. When the new
/// hire takes the account over by accepting an invitation, that tenant does not come with
/// it: the answer names it, she cannot reach it, and it keeps serving its key, without a
/// member, visible to the operator.
#[test]
fn an_invitation_that_takes_an_account_over_detaches_the_squatters_tenant() {
    let (smtp, srv) = start();
    srv.signup("Corp", CORP_OWNER);
    let boss = srv.login(CORP_OWNER, PASSWORD);
    let squat = srv.signup("Squat", NEW_HIRE);
    let api_key = squat["api_key"].as_str().unwrap().to_owned();
    let squatter = srv.login(NEW_HIRE, PASSWORD);
    assert_eq!(slugs(&squatter), vec!["squat".to_owned()]);

    invite(&srv, &boss, "corp", NEW_HIRE, "admin");
    let token = smtp.wait_for_link(NEW_HIRE, INVITE, 1);
    let (status, body) = accept(&srv, &token, HER_PASSWORD);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["detached_tenants"],
        json!([{"slug": "squat", "name": "Squat"}]),
        "{body}"
    );
    let her_id = body["account_id"].as_str().unwrap().to_owned();

    // She holds the account with the corp tenant only.
    let her = srv.login(NEW_HIRE, HER_PASSWORD);
    assert_eq!(slugs(&her), vec!["corp".to_owned()], "{}", her.body);
    let r = srv.dash("GET", "/v1/auth/dashboard/tenants", &her, None);
    let listed: Value = r.json().unwrap();
    let listed: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["slug"].as_str().unwrap())
        .collect();
    assert_eq!(listed, vec!["corp"]);
    assert_unreachable(&srv, &her, "squat", &her_id);
    // Nobody else reaches the tenant left without a member either.
    let boss_id = boss.body["account"]["id"].as_str().unwrap().to_owned();
    assert_unreachable(&srv, &boss, "squat", &boss_id);

    // The squatter's app goes on working with its key.
    assert_eq!(srv.get("/v1/tenant", Some(&api_key)).status(), 200);
    // The operator still lists the tenant, now with no owner.
    let all = srv.admin(&["tenant", "list"], "").json();
    assert!(
        all["tenants"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["slug"] == "squat"),
        "{all}"
    );
    let shown = srv.admin(&["tenant", "show", "squat"], "").json();
    assert_eq!(shown["owners"], json!([]), "{shown}");
    // The tenant's audit log records the detachment; the platform log tells of it without
    // the address.
    let events = traces(&srv, "squat", "member.detached");
    assert!(events.iter().any(|t| t["kind"] == "41"), "{events:?}");
    assert!(eventually(Duration::from_secs(5), || srv
        .log_text()
        .contains("detached from a tenant")));
    assert!(!srv.log_text().contains(NEW_HIRE));
}

/// The same through a password reset: the mail names the tenant before she chooses, the
/// answer after. The squatter's tenant keeps its other members (here an account of his own)
/// and records the detachment in its audit log.
#[test]
fn a_password_reset_that_takes_an_account_over_detaches_its_tenants() {
    const ACCOMPLICE: &str = "squatter@elsewhere.test";
    const ACCOMPLICE_PASSWORD: &str = "the squatter's other passphrase";
    let (smtp, srv) = start();
    let squat = srv.signup("Squat", NEW_HIRE);
    let api_key = squat["api_key"].as_str().unwrap().to_owned();
    let squatter = srv.login(NEW_HIRE, PASSWORD);
    // Unverified, he still runs the tenant he created: he invites an address of his own.
    invite(&srv, &squatter, "squat", ACCOMPLICE, "owner");
    srv.accept_mailed_invite(&smtp, ACCOMPLICE, 1, ACCOMPLICE_PASSWORD);
    let accomplice = srv.login(ACCOMPLICE, ACCOMPLICE_PASSWORD);

    let r = srv.post_json(
        "/v1/auth/dashboard/forgot-password",
        &json!({"email": NEW_HIRE}),
    );
    assert_eq!(r.status(), 202);
    let token = smtp.wait_for_link(NEW_HIRE, RESET, 1);
    let mail = smtp
        .mails_to(NEW_HIRE)
        .into_iter()
        .find(|m| m.text.contains(RESET))
        .unwrap();
    assert!(
        mail.text.contains("\"Squat\" (squat)") && mail.text.contains("detaches"),
        "{}",
        mail.text
    );

    let r = srv.post_json(
        "/v1/auth/dashboard/reset-password",
        &json!({"token": token, "password": HER_PASSWORD}),
    );
    assert_eq!(r.status(), 200);
    let body: Value = r.json().unwrap();
    assert_eq!(body["reset"], true);
    assert_eq!(
        body["detached_tenants"],
        json!([{"slug": "squat", "name": "Squat"}]),
        "{body}"
    );

    let her = srv.login(NEW_HIRE, HER_PASSWORD);
    assert_eq!(her.body["account"]["email_verified"], true);
    assert!(slugs(&her).is_empty(), "{}", her.body);
    let her_id = her.body["account"]["id"].as_str().unwrap().to_owned();
    assert_unreachable(&srv, &her, "squat", &her_id);
    assert_eq!(srv.get("/v1/tenant", Some(&api_key)).status(), 200);

    // The tenant is the squatter's other account's now, with the detachment in its log.
    let list = members(&srv, &accomplice, "squat");
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["data"][0]["email"], ACCOMPLICE);
    let detached = audit_events(&srv, &accomplice, "squat", "member.detached");
    assert_eq!(detached.len(), 1, "{detached:?}");
    assert_eq!(detached[0]["metadata"]["member"], her_id.as_str());
    assert_eq!(detached[0]["metadata"]["role"], "owner");
    assert_eq!(detached[0]["metadata"]["reason"], "account_reclaimed");
    assert_eq!(detached[0]["metadata"]["via"], "password_reset");
    // The last-owner rule holds for what is left.
    let accomplice_id = member_id(&list, ACCOMPLICE);
    let r = srv.dash(
        "DELETE",
        &format!("/v1/auth/dashboard/tenants/squat/members/{accomplice_id}"),
        &accomplice,
        None,
    );
    assert_eq!(r.status(), 409);
}

/// A reset of an account whose address is verified takes nothing over: its tenants stay,
/// and nothing is detached.
#[test]
fn a_password_reset_of_a_verified_account_keeps_its_tenants() {
    let (smtp, srv) = start();
    srv.signup("Own Co", NEW_HIRE);
    let her = srv.login(NEW_HIRE, PASSWORD);
    let verify_token = smtp.wait_for_link(NEW_HIRE, VERIFY, 1);
    let r = srv.dash(
        "POST",
        "/v1/auth/dashboard/verify-email",
        &her,
        Some(&json!({"token": verify_token})),
    );
    assert_eq!(r.status(), 200);

    let r = srv.post_json(
        "/v1/auth/dashboard/forgot-password",
        &json!({"email": NEW_HIRE}),
    );
    assert_eq!(r.status(), 202);
    let token = smtp.wait_for_link(NEW_HIRE, RESET, 1);
    let r = srv.post_json(
        "/v1/auth/dashboard/reset-password",
        &json!({"token": token, "password": HER_PASSWORD}),
    );
    assert_eq!(r.status(), 200);
    let body: Value = r.json().unwrap();
    assert_eq!(body["detached_tenants"], json!([]), "{body}");
    let her = srv.login(NEW_HIRE, HER_PASSWORD);
    assert_eq!(slugs(&her), vec!["own-co".to_owned()]);
    assert!(audit_events(&srv, &her, "own-co", "member.detached").is_empty());
}
