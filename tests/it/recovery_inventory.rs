//! The credential inventory end to end: one account is given every kind of credential the
//! interface gives (through HTTP, as a client would), then an admin moves it to another
//! person's address, unconfirmed, as a squatter would hold it; that address's owner recovers it
//! by each path (a reset link, a login link, an e-mailed login code, an admin's confirmation).
//! Afterwards the admin CLI's `user traces` finds nothing of the previous holder's but audit
//! events and the agents' activity feed, the owner holds only what she made herself, and every
//! one of the holder's ways in is refused over HTTP.

use std::collections::BTreeSet;

use serde_json::{json, Value};
use tessera_testkit::{wallet::TestWallet, webauthn::SoftAuthenticator};

use crate::{
    agents::{
        access_token, agent_json, catalog_resource, ciba_for, decide, exchange_for,
        expect_oauth_error, introspect, pending_request, poll_ciba, register_agent, set_pro, Agent,
        CALENDAR, CIBA, POLL, TOKEN_EXCHANGE,
    },
    eudi::{pid_claims, World},
    oauth::{authorize, flow_for, form, Flow, VERIFIER},
    passkeys::{passkey_used_once, sign_in as passkey_sign_in, ORIGIN},
    sms::{
        code_of, enable_sms, phone_confirm, phone_verify, request_sms, verify_sms, wait_sms,
        LOGIN_KIND, PHONE_KIND,
    },
    social_signin::{enable_google, link_in_browser, param, sign_in as social_sign_in, Stub},
    support::*,
};

/// The address the holder signs up with, and owns.
const HOLDER: &str = "holder@example.com";
/// The address an admin then gives the account, unconfirmed: someone else's.
const OWNER: &str = "rightful.owner@example.com";
/// The password the address's owner sets with a reset link.
const OWNER_PASSWORD: &str = "the rightful owner's passphrase";
/// The holder's Google account: its subject and its own (verified) address.
const GOOGLE_SUBJECT: &str = "holder-google-subject-7f3a";
const GOOGLE_EMAIL: &str = "holder.google@example.com";
/// The holder's phone number, as `support::fr` numbers them.
const PHONE: u32 = 777_001;

/// Every kind of credential, as the inventory names them (`Credential::as_str`).
const ALL_KINDS: [&str; 20] = [
    "password",
    "sessions",
    "oauth_grants",
    "oauth_codes",
    "oauth_consents",
    "totp",
    "recovery_codes",
    "phone",
    "passkeys",
    "social_links",
    "social_sign_ins",
    "wallet_links",
    "wallet_sign_ins",
    "agent_consents",
    "agent_requests",
    "agent_tokens",
    "challenges",
    "mailed_links",
    "guardian_links",
    "device_tokens",
];

/// The kinds the holder's setup cannot give through the interface. Guardian links are a
/// guardian's links to a minor's account: they need minor protection on, and an account a
/// wallet makes under it must show an adult birth date (no minor), while one registered as a
/// minor is held until its guardian consents. Recovery keeps them anyway (they are the
/// guardian's, mailed to the guardian).
const NOT_GIVEN: [&str; 1] = ["guardian_links"];

/// How the owner of the address proves it.
#[derive(Clone, Copy, Debug)]
enum Path {
    /// Forgot-password, then the mailed reset link.
    ResetLink,
    /// The mailed login link.
    LoginLink,
    /// The mailed login code.
    LoginCode,
    /// A tenant admin confirms the address (`email_verified: true`).
    AdminConfirms,
}

/// A tenant with everything on, and one account holding every kind of credential the interface
/// gives, moved to [`OWNER`]'s address unconfirmed. Each field is one of the holder's ways in.
struct Squatted {
    smtp: SmtpStub,
    w: World,
    api: UserApi,
    google: Stub,
    /// The account's id.
    id: String,
    /// The number the holder confirmed.
    phone: String,
    /// The wallet whose PID made the account.
    wallet: TestWallet,
    /// The passkey the holder registered (and used once).
    passkey: SoftAuthenticator,
    /// The holder's own session, in use until the end.
    tokens: UserTokens,
    /// A login code texted to the holder's number, never used.
    sms_code: String,
    /// A social sign-in's exchange token for the holder, never traded.
    exchange_token: String,
    /// A link ticket's URL (from a link request), never opened.
    link_ticket: String,
    /// The poll state of a wallet sign-in that completed for the holder, never polled.
    wallet_state: String,
    /// The holder's OAuth client, its grant's tokens and a code never redeemed.
    oauth: Flow,
    grant_access: String,
    grant_refresh: String,
    unredeemed_code: String,
    /// The agent the holder consented to: a token acting for the holder, an approved request
    /// not yet polled, and a request left waiting for the holder's decision.
    agent: Agent,
    agent_token: String,
    approved_request: String,
    waiting_request: String,
    /// A step-up token of the holder's session, never used.
    step_up: String,
}

/// The admin CLI's `user traces` of `needles`.
fn inventory(srv: &TestServer, slug: &str, needles: &[&str]) -> Value {
    let mut args = vec!["user", "traces", "--tenant", slug];
    args.extend_from_slice(needles);
    srv.admin(&args, "").json()
}

/// The kinds of credential the user `id` holds, by `user traces`.
fn held(srv: &TestServer, slug: &str, id: &str) -> BTreeSet<String> {
    let out = inventory(srv, slug, &[id]);
    out["credentials"][id]
        .as_array()
        .unwrap_or_else(|| panic!("no credentials of {id} in {out}"))
        .iter()
        .map(|c| c["kind"].as_str().expect("a kind").to_owned())
        .collect()
}

fn kinds(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The name of a tenant record kind (`storage::keys::Kind`) by its byte in hex.
fn kind_name(hex: &str) -> &'static str {
    match hex {
        "40" => "TenantSettings",
        "41" => "AuditEvent",
        "42" => "TenantSecret",
        "43" => "User",
        "44" => "UserEmail",
        "45" => "Session",
        "46" => "UserSession",
        "48" => "LinkToken",
        "49" => "MailQueue",
        "4a" => "Usage",
        "4b" => "Guest",
        "4c" => "Challenge",
        "4d" => "UserPhone",
        "4e" => "Throttle",
        "4f" => "UserCreated",
        "50" => "UserAudit",
        "52" => "Passkey",
        "53" => "PasskeyCredential",
        "54" => "OAuthClient",
        "55" => "OAuthConsent",
        "56" => "OAuthCode",
        "58" => "SocialState",
        "59" => "SocialExchange",
        "5a" => "SocialIdentity",
        "5b" => "UserIdentity",
        "5c" => "SocialLinkTicket",
        "5d" => "SocialToken",
        "5e" => "Agent",
        "5f" => "AgentToken",
        "60" => "AgentDenied",
        "61" => "AgentAction",
        "62" => "UserAgent",
        "63" => "AgentRequest",
        "64" => "AgentRequestIndex",
        "65" => "OutboundEvent",
        "67" => "EudiTx",
        "68" => "EudiPoll",
        "69" => "EudiSubject",
        "6a" => "EudiClaims",
        "6f" => "GuardianToken",
        "71" => "PasskeyUse",
        _ => "another kind",
    }
}

/// The hex of a UUID's 16 bytes.
fn uuid_hex(id: &str) -> String {
    let id: uuid::Uuid = id.parse().expect("a UUID");
    id.as_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// Asserts the credential kinds of the user `id` are exactly `expected`; names what is left
/// of anyone else's.
#[track_caller]
fn assert_holds(srv: &TestServer, slug: &str, id: &str, expected: &BTreeSet<String>, what: &str) {
    let got = held(srv, slug, id);
    let extra: Vec<&String> = got.difference(expected).collect();
    let missing: Vec<&String> = expected.difference(&got).collect();
    assert!(
        extra.is_empty() && missing.is_empty(),
        "{what}: the account holds {got:?}; left over: {extra:?}; missing: {missing:?}"
    );
}

/// Starts the server with the wallet verifier, the local OpenID provider, mail, the SMS outbox
/// and 1-second agent polls; turns on SMS sign-in and explicit linking, Google, the pro tier, a
/// catalog resource and an agent.
fn tenant() -> (SmtpStub, World, UserApi, Stub, Agent) {
    let smtp = SmtpStub::start();
    let google = Stub::start();
    let mut extra = google.env(&google);
    extra.push((POLL.0.to_owned(), POLL.1.to_owned()));
    let env = mail_env(&smtp, &env_refs(&extra));
    let w = World::start_with(&env_refs(&env));
    let api = w.api();
    let urls = json!({
        "site_url": "https://app.example",
        "redirect_urls": ["https://app.example/wallet-done", crate::social_signin::APP],
    });
    let (st, v) = w.srv.dash_json(
        "PUT",
        &format!("/v1/auth/dashboard/tenants/{}/settings/urls", w.slug),
        &w.owner,
        Some(&urls),
    );
    assert_eq!(st, 200, "{v}");
    enable_sms(&w.srv, &w.owner, &w.slug);
    patch_security(
        &w.srv,
        &w.owner,
        &w.slug,
        json!({"explicit_account_linking_enabled": true}),
    );
    w.srv.reauth(&w.owner, PASSWORD);
    enable_google(&w.srv, &w.owner, &w.slug);
    set_pro(&w.srv, &w.slug);
    catalog_resource(&w.srv, &w.owner, &w.slug, "Calendar", CALENDAR, "read");
    let agent = register_agent(
        &w.srv,
        &w.owner,
        &w.slug,
        agent_json("Planner", &[CIBA, TOKEN_EXCHANGE], &["openid", "read"]),
    );
    (smtp, w, api, google, agent)
}

/// Starts the server again on its data (forgetting the rate windows it keeps in memory) and
/// points `apis` at its new address.
fn restart(w: &mut World, apis: &mut [&mut UserApi]) {
    w.srv.restart();
    for api in apis.iter_mut() {
        api.rebase(&w.srv);
    }
}

/// The token of the `n`-th mail of `kind` to `to` whose link leads to `route`.
#[track_caller]
fn mailed_token(
    smtp: &SmtpStub,
    api: &UserApi,
    kind: &str,
    to: &str,
    route: &str,
    n: usize,
) -> String {
    let mail = smtp.wait_for(&api.slug, kind, to, n);
    mail.token_after(&api.link(route))
        .unwrap_or_else(|| panic!("no {route} link in {}", mail.text))
}

/// Trades a social sign-in's exchange token.
fn trade(api: &UserApi, token: &str) -> AuthAnswer {
    api.post(
        "/v1/auth/social/google/session",
        &json!({"access_token": token, "tenant_slug": api.slug}),
    )
}

/// The account of a wallet sign-in whose PID carries [`HOLDER`], given every kind of credential
/// the interface gives while its address is confirmed, then moved by an admin to [`OWNER`]'s
/// address, unconfirmed.
fn squatted() -> Squatted {
    let (smtp, mut w, mut api, google, agent) = tenant();

    // A wallet sign-in makes the account, its PID's address unconfirmed.
    let mut claims = pid_claims();
    claims.insert("email".into(), json!(HOLDER));
    let wallet = w.wallet_with_pid_of(&claims, None);
    let id = w.sign_in(&wallet)["sub"].as_str().expect("sub").to_owned();
    let user_path = format!("/v1/auth/dashboard/tenants/{}/users/{id}", w.slug);
    let (st, user) = w.srv.dash_json("GET", &user_path, &w.owner, None);
    assert_eq!(st, 200, "{user}");
    assert_eq!(
        (&user["email"], &user["email_verified"]),
        (&json!(HOLDER), &json!(false)),
        "{user}"
    );

    // The holder confirms the address (a wallet sign-in mails no link: asked for), then sets a
    // password with a reset link (on a confirmed account, a plain reset).
    api.post("/v1/auth/resend-verification", &json!({"email": HOLDER}))
        .expect(202);
    let token = api.verification_token(&smtp, HOLDER, 1);
    api.post("/v1/auth/verify-email", &json!({"token": token}))
        .expect(200);
    // One resend or reset mail per account a minute, in memory: a restart forgives it.
    restart(&mut w, &mut [&mut api]);
    api.post("/v1/auth/forgot-password", &json!({"email": HOLDER}))
        .expect(202);
    let token = mailed_token(&smtp, &api, "password_reset", HOLDER, "reset-password", 1);
    api.post(
        "/v1/auth/reset-password",
        &json!({"token": token, "password": USER_PASSWORD}),
    )
    .expect(200);
    let tokens = api.login_ok(HOLDER, USER_PASSWORD);

    // A passkey, used once.
    let passkey = passkey_used_once(&w.srv, &w.owner, &api, &tokens);

    // A confirmed phone number.
    let phone = crate::support::fr(PHONE);
    assert_eq!(phone_verify(&api, &tokens.access, &phone).status, 202);
    let code = code_of(&wait_sms(&w.srv, &api.slug, PHONE_KIND, &phone, 1));
    phone_confirm(&api, &tokens.access, &phone, &code).expect(200);
    // Codes to one number are spaced a minute apart (and reset mails to one account), in
    // memory: a restart forgives both, so a login code can be texted to the number now (and
    // left unused), and the owner of the address can ask for a reset link. The session goes on
    // with tokens of the new issuer (its address changed).
    restart(&mut w, &mut [&mut api]);
    let tokens = UserTokens::from_answer(&api.refresh(&tokens.refresh));
    assert_eq!(request_sms(&api, &phone, "login").status, 202);
    let sms_code = code_of(&wait_sms(&w.srv, &api.slug, LOGIN_KIND, &phone, 1));

    // A linked Google account; a second link request whose ticket is never used; a sign-in
    // with the linked account whose exchange token is never traded.
    google.next(GOOGLE_SUBJECT, Some(GOOGLE_EMAIL), true);
    let r = api.link_gate(
        "google",
        &tokens.access,
        Some(&api.password_step_up(&tokens.access)),
    );
    let url = r.expect(200)["authorize_url"]
        .as_str()
        .expect("authorize_url")
        .to_owned();
    let back = link_in_browser(&w.srv, &url);
    assert_eq!(param(&back, "linked").as_deref(), Some("google"), "{back}");
    let r = api.link_gate(
        "google",
        &tokens.access,
        Some(&api.password_step_up(&tokens.access)),
    );
    let link_ticket = r.expect(200)["authorize_url"]
        .as_str()
        .expect("authorize_url")
        .to_owned();
    let back = social_sign_in(&w.srv, &api, "google", None);
    let exchange_token =
        param(&back, "access_token").unwrap_or_else(|| panic!("no exchange token in {back}"));

    // An OAuth client: consented to, a grant from a code, and a code never redeemed.
    let oauth = flow_for(&w.srv, &w.owner, api.clone(), tokens.clone());
    let client = (oauth.confidential.0.clone(), oauth.confidential.1.clone());
    let code = oauth.code(&client.0);
    let grant = oauth.exchange((&client.0, &client.1), &code, VERIFIER);
    let grant_access = grant.expect(200)["access_token"]
        .as_str()
        .expect("access_token")
        .to_owned();
    let grant_refresh = grant.body["refresh_token"]
        .as_str()
        .expect("refresh_token")
        .to_owned();
    let unredeemed_code = oauth.code(&client.0);

    // The agent: a request approved (the consent) and not polled, a token acting for the
    // holder by token exchange, and a request left waiting.
    let approved_request = ciba_for(&api, &agent, HOLDER, "openid read", CALENDAR, "approved");
    let request = pending_request(&api, &tokens.access, "approved");
    let r = decide(
        &api,
        &tokens.access,
        request["id"].as_str().expect("id"),
        "approve",
    );
    assert_eq!(r.expect(200)["status"], "approved", "{}", r.body);
    let agent_token = access_token(&exchange_for(
        &api,
        &agent,
        &tokens.access,
        Some("read"),
        Some(CALENDAR),
    ));
    let waiting_request = ciba_for(&api, &agent, HOLDER, "openid read", CALENDAR, "waiting");
    pending_request(&api, &tokens.access, "waiting");

    // TOTP and recovery codes.
    api.enable_mfa(&tokens.access);
    // A step-up token never used.
    let step_up = api.password_step_up(&tokens.access);
    // A wallet sign-in that completed for the holder and waits for its poll.
    let started = w.initiate("/v1/auth/eudi/initiate", json!({}));
    let req = wallet.open(&w.fetch_request(&started)).expect("request");
    w.respond(&req, wallet.answer(&req).expect("answer"))
        .expect(200);
    let wallet_state = started["state"].as_str().expect("state").to_owned();
    // A reset link an admin mailed, never used.
    let (st, user) = w.srv.dash_json(
        "POST",
        &format!("{user_path}/send-password-reset"),
        &w.owner,
        None,
    );
    assert_eq!(st, 200, "{user}");
    smtp.wait_for(&api.slug, "password_reset", HOLDER, 2);

    // The inventory sees every kind the interface gave.
    let given: BTreeSet<String> = ALL_KINDS
        .iter()
        .filter(|k| !NOT_GIVEN.contains(k))
        .map(|k| k.to_string())
        .collect();
    assert_holds(&w.srv, &w.slug, &id, &given, "the holder, confirmed");

    // An admin gives the account someone else's address, unconfirmed: the account now holds
    // that address as a squatter would, with everything it had.
    let (st, user) = w.srv.dash_json(
        "PATCH",
        &user_path,
        &w.owner,
        Some(&json!({"email": OWNER, "email_verified": false})),
    );
    assert_eq!(st, 200, "{user}");
    assert_eq!(
        (&user["email"], &user["email_verified"]),
        (&json!(OWNER), &json!(false)),
        "{user}"
    );
    assert_holds(
        &w.srv,
        &w.slug,
        &id,
        &given,
        "the squatter of another address",
    );

    Squatted {
        smtp,
        w,
        api,
        google,
        id,
        phone,
        wallet,
        passkey,
        tokens,
        sms_code,
        exchange_token,
        link_ticket,
        wallet_state,
        oauth,
        grant_access,
        grant_refresh,
        unredeemed_code,
        agent,
        agent_token,
        approved_request,
        waiting_request,
        step_up,
    }
}

impl Squatted {
    /// The owner of the address proves it by `path`: her session, when the path signs her in.
    fn recover(&self, path: Path) -> Option<UserTokens> {
        let api = &self.api;
        match path {
            Path::ResetLink => {
                api.post("/v1/auth/forgot-password", &json!({"email": OWNER}))
                    .expect(202);
                let token = mailed_token(
                    &self.smtp,
                    api,
                    "password_reset",
                    OWNER,
                    "reset-password",
                    1,
                );
                api.post(
                    "/v1/auth/reset-password",
                    &json!({"token": token, "password": OWNER_PASSWORD}),
                )
                .expect(200);
                None
            }
            Path::LoginLink => {
                let r = api.post_as("/v1/auth/magic-link", None, &json!({"email": OWNER}));
                assert_eq!(r.status, 202, "{}", r.body);
                let token = mailed_token(&self.smtp, api, "magic_link", OWNER, "magic-link", 1);
                let r = api.post_as("/v1/auth/magic-link/verify", None, &json!({"token": token}));
                Some(UserTokens::from_answer(&r))
            }
            Path::LoginCode => {
                let r = api.post_as("/v1/auth/email-otp", None, &json!({"email": OWNER}));
                assert_eq!(r.status, 202, "{}", r.body);
                let mail = self.smtp.wait_for(&api.slug, "email_otp", OWNER, 1);
                let code = six_digit_code(&mail.text)
                    .unwrap_or_else(|| panic!("no code in {}", mail.text));
                let r = api.post_as(
                    "/v1/auth/email-otp/verify",
                    None,
                    &json!({"email": OWNER, "code": code}),
                );
                Some(UserTokens::from_answer(&r))
            }
            Path::AdminConfirms => {
                let (st, user) = self.w.srv.dash_json(
                    "PATCH",
                    &format!(
                        "/v1/auth/dashboard/tenants/{}/users/{}",
                        self.w.slug, self.id
                    ),
                    &self.w.owner,
                    Some(&json!({"email_verified": true})),
                );
                assert_eq!(st, 200, "{user}");
                assert_eq!(user["email_verified"], true, "{user}");
                None
            }
        }
    }

    /// Asserts that the records naming the account or the holder's other needles are only
    /// what may outlive the holder: the user record, its e-mail and creation index entries,
    /// the per-user audit index, audit events, the agents' activity feed, the records of the
    /// tenant's own OAuth client and agent, and the owner's own session (`owner_sid`) with its
    /// index entry or her own reset link (`owner_link`, its record's key).
    #[track_caller]
    fn assert_traces(&self, path: Path, owner_sid: Option<&str>, owner_link: Option<&str>) {
        let id_hex = uuid_hex(&self.id);
        let owner_session =
            owner_sid.map(|sid| (uuid_hex(sid), format!("{id_hex}{}", uuid_hex(sid))));
        let by_id = inventory(&self.w.srv, &self.w.slug, &[&self.id]);
        let mut left = Vec::new();
        for t in by_id["traces"].as_array().expect("traces") {
            let (kind, key) = (t["kind"].as_str().unwrap(), t["key"].as_str().unwrap());
            let allowed = match kind {
                // The user, its e-mail and creation index entries, the per-user audit index,
                // audit events, the agents' activity feed.
                "43" | "44" | "4f" | "50" | "41" | "61" => true,
                // The owner's own session and its index entry.
                "45" => owner_session.as_ref().is_some_and(|(s, _)| key == s),
                "46" => owner_session.as_ref().is_some_and(|(_, ix)| key == ix),
                // The owner's own reset link.
                "48" => owner_link == Some(key),
                _ => false,
            };
            if !allowed {
                left.push(format!(
                    "{} ({kind}) {key} [{}]",
                    kind_name(kind),
                    t["found_in"]
                ));
            }
        }
        assert!(
            left.is_empty(),
            "{path:?}: records naming the account that are not the owner's: {left:#?}"
        );

        let phone = self.phone.clone();
        let client = self.oauth.confidential.0.clone();
        let needles = [
            HOLDER,
            GOOGLE_SUBJECT,
            phone.as_str(),
            client.as_str(),
            self.agent.id.as_str(),
            self.agent.client_id.as_str(),
        ];
        let by_needles = inventory(&self.w.srv, &self.w.slug, &needles);
        let mut left = Vec::new();
        for t in by_needles["traces"].as_array().expect("traces") {
            let (kind, key) = (t["kind"].as_str().unwrap(), t["key"].as_str().unwrap());
            // Audit events, the activity feed, the tenant's OAuth client and agent.
            if !matches!(kind, "41" | "61" | "54" | "5e") {
                left.push(format!(
                    "{} ({kind}) {key} [{}]",
                    kind_name(kind),
                    t["found_in"]
                ));
            }
        }
        assert!(
            left.is_empty(),
            "{path:?}: records naming the holder's address, Google account, number, OAuth \
             client or agent: {left:#?}"
        );
    }

    /// Every one of the holder's ways in, refused over HTTP; `owner` is the owner's session.
    #[track_caller]
    fn assert_holder_refused(&mut self, path: Path, owner: &UserTokens) {
        let (api, srv) = (&self.api, &self.w.srv);
        let what = format!("{path:?}");
        // The holder's session and its refresh token.
        api.me(&self.tokens.access)
            .expect_error(401, "auth/invalid_token");
        api.refresh(&self.tokens.refresh)
            .expect_error(401, "auth/invalid_refresh_token");
        // The old password, under either address.
        for email in [OWNER, HOLDER] {
            let r = api.login_from(email, USER_PASSWORD, &fresh_client_ip());
            assert_eq!(
                (r.status, r.code()),
                (401, "auth/invalid_credentials"),
                "{what}: the old password for {email}: {}",
                r.body
            );
        }
        // The passkey.
        let r = passkey_sign_in(api, &mut self.passkey, ORIGIN);
        assert_eq!(
            (r.status, r.code()),
            (401, "passkey/invalid_assertion"),
            "{what}: the holder's passkey: {}",
            r.body
        );
        // The login code texted to the holder's number.
        let r = verify_sms(api, &self.phone, &self.sms_code);
        assert_eq!(
            (r.status, r.code()),
            (401, "invalid_or_expired_token"),
            "{what}: the texted code: {}",
            r.body
        );
        // The social sign-in's exchange token, the link ticket, and the Google account itself.
        trade(api, &self.exchange_token).expect_error(401, "auth/invalid_token");
        let (st, _, body) = crate::social_signin::Browser::new().get(&self.link_ticket, None);
        assert_eq!(st, 400, "{what}: the link ticket: {body}");
        assert!(
            body.contains("social/invalid_link_ticket"),
            "{what}: {body}"
        );
        self.google.next(GOOGLE_SUBJECT, Some(GOOGLE_EMAIL), true);
        let back = social_sign_in(srv, api, "google", None);
        let token = param(&back, "access_token").unwrap_or_else(|| panic!("{what}: {back}"));
        let r = trade(api, &token);
        assert_ne!(
            r.expect(200)["user"]["id"],
            json!(self.id),
            "{what}: the holder's Google account signs in to the account"
        );
        // The wallet sign-in waiting for its poll, and the wallet itself.
        let r = self
            .w
            .result("/v1/auth/eudi/result", &self.wallet_state, None);
        assert_eq!(
            r.expect(200),
            &json!({"status": "not_found"}),
            "{what}: the wallet sign-in waiting for its poll"
        );
        assert_ne!(
            self.w.sign_in(&self.wallet)["sub"],
            json!(self.id),
            "{what}: the holder's wallet signs in to the account"
        );
        // The OAuth grant's tokens and the code never redeemed.
        let (cid, secret) = (&self.oauth.confidential.0, &self.oauth.confidential.1);
        for token in [&self.grant_access, &self.grant_refresh] {
            let r = introspect(api, (cid, secret), token);
            assert_eq!(r.expect(200), &json!({"active": false}), "{what}");
        }
        let r = form(
            api,
            &format!("/v1/tenants/{}/oauth/token", api.slug),
            Some((cid, secret)),
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", &self.grant_refresh),
            ],
        );
        expect_oauth_error(&r, 400, "invalid_grant");
        let r = self
            .oauth
            .exchange((cid, secret), &self.unredeemed_code, VERIFIER);
        expect_oauth_error(&r, 400, "invalid_grant");
        // The agent's token, its approved request and the one waiting.
        let r = introspect(api, self.agent.basic(), &self.agent_token);
        assert_eq!(r.expect(200), &json!({"active": false}), "{what}");
        for request in [&self.approved_request, &self.waiting_request] {
            expect_oauth_error(&poll_ciba(api, &self.agent, request), 400, "invalid_grant");
        }
        // The step-up token, with the holder's session or the owner's.
        api.link_gate("google", &self.tokens.access, Some(&self.step_up))
            .expect_error(401, "auth/invalid_token");
        api.link_gate("google", &owner.access, Some(&self.step_up))
            .expect_error(401, "invalid_or_expired_token");

        // The owner: no second factor, no number, and the holder's OAuth client asks her.
        let me = api.me(&owner.access);
        let me = me.expect(200);
        assert_eq!(me["id"], json!(self.id), "{me}");
        assert_eq!(
            (
                &me["email"],
                &me["email_verified"],
                &me["mfa_enabled"],
                &me["phone"]
            ),
            (&json!(OWNER), &json!(true), &json!(false), &Value::Null),
            "{what}: {me}"
        );
        let shown = authorize(api, &self.oauth.url(cid, &[]), Some(&owner.access), "en");
        assert_eq!(
            shown.expect(200)["consent_required"],
            true,
            "{what}: the holder's OAuth client: {}",
            shown.body
        );
    }

    /// The owner signs in after `path` (with her new password, or a login link): no second
    /// factor is asked.
    fn owner_signs_in(&self, path: Path) -> UserTokens {
        let a = match path {
            Path::ResetLink => self
                .api
                .login_from(OWNER, OWNER_PASSWORD, &fresh_client_ip()),
            _ => {
                let r = self
                    .api
                    .post_as("/v1/auth/magic-link", None, &json!({"email": OWNER}));
                assert_eq!(r.status, 202, "{}", r.body);
                let token =
                    mailed_token(&self.smtp, &self.api, "magic_link", OWNER, "magic-link", 1);
                self.api
                    .post_as("/v1/auth/magic-link/verify", None, &json!({"token": token}))
            }
        };
        assert!(a.body["mfa_required"].is_null(), "{path:?}: {}", a.body);
        UserTokens::from_answer(&a)
    }
}

/// The whole proof for one path: the squatted account, the recovery, the inventory and the
/// traces, then every way in over HTTP.
fn recovery_leaves_nothing_of_the_holder(path: Path) {
    let mut s = squatted();
    let signed_in = s.recover(path);
    let expected = match path {
        // The reset sets the owner's password and signs nobody in.
        Path::ResetLink => kinds(&["password"]),
        // Her own session, which the link or code just opened.
        Path::LoginLink | Path::LoginCode => kinds(&["sessions"]),
        // The reset link the admin's confirmation mails her.
        Path::AdminConfirms => kinds(&["mailed_links"]),
    };
    assert_holds(&s.w.srv, &s.w.slug, &s.id, &expected, &format!("{path:?}"));
    let sid = signed_in.as_ref().map(UserTokens::sid);
    // The key of that link's record: the SHA-256 of its token.
    let owner_link = matches!(path, Path::AdminConfirms).then(|| {
        let token = mailed_token(
            &s.smtp,
            &s.api,
            "password_reset",
            OWNER,
            "reset-password",
            1,
        );
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(token.as_bytes()))
    });
    s.assert_traces(path, sid.as_deref(), owner_link.as_deref());

    let owner = match signed_in {
        Some(t) => t,
        None => s.owner_signs_in(path),
    };
    s.assert_holder_refused(path, &owner);
}

#[test]
fn a_reset_link_to_a_squatted_address_leaves_nothing_of_the_holder() {
    recovery_leaves_nothing_of_the_holder(Path::ResetLink);
}

#[test]
fn a_login_link_to_a_squatted_address_leaves_nothing_of_the_holder() {
    recovery_leaves_nothing_of_the_holder(Path::LoginLink);
}

#[test]
fn a_login_code_to_a_squatted_address_leaves_nothing_of_the_holder() {
    recovery_leaves_nothing_of_the_holder(Path::LoginCode);
}

#[test]
fn an_admins_confirmation_of_a_squatted_address_leaves_nothing_of_the_holder() {
    recovery_leaves_nothing_of_the_holder(Path::AdminConfirms);
}
