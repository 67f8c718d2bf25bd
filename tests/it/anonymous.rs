//! Guest (anonymous) sign-ins: the tenant switch, the answer and its token, the limits per
//! client address, per API key and per month, claiming a guest by registering with its bearer,
//! and `tessera admin purge run`.

use std::{
    collections::BTreeSet,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Barrier,
    },
    time::Duration,
};

use serde_json::{json, Value};
use time::{format_description::well_known::Rfc3339, OffsetDateTime};

use crate::support::{
    assert_no_mail, audit_events, enable_guests, eventually, fresh_client_ip, guest_settings,
    is_uuid, new_guest, user_setup, AuthAnswer, Guest, TestServer, UserApi, UserTokens, PASSWORD,
    USER_PASSWORD,
};

const ANONYMOUS: &str = "/v1/auth/anonymous";
/// The largest `public_metadata`, serialized.
const METADATA_MAX: usize = 16 * 1024;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// `POST /v1/auth/anonymous` from `ip`, with `body` (none at all when `None`).
fn guest_from(api: &UserApi, body: Option<&Value>, ip: &str) -> AuthAnswer {
    api.send_as(Some(&api.api_key), "POST", ANONYMOUS, None, body, Some(ip))
}

/// `POST /v1/auth/anonymous` from an address of its own.
fn guest_answer(api: &UserApi, body: Option<&Value>) -> AuthAnswer {
    guest_from(api, body, &fresh_client_ip())
}

/// Registers `email` with `bearer` (claiming the guest it belongs to), from an address of its
/// own.
fn claim(api: &UserApi, bearer: &str, email: &str) -> AuthAnswer {
    api.send_as(
        Some(&api.api_key),
        "POST",
        "/v1/auth/register",
        Some(bearer),
        Some(&json!({"email": email, "password": USER_PASSWORD, "consent": true})),
        Some(&fresh_client_ip()),
    )
}

/// `tessera admin purge run ARGS`; answers the printed array.
#[track_caller]
fn purge(srv: &TestServer, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["purge", "run"];
    all.extend_from_slice(args);
    let out = srv.admin(&all, "").json();
    out.as_array()
        .unwrap_or_else(|| panic!("purge run prints a JSON array, not {out}"))
        .clone()
}

/// `tessera admin purge run --tenant SLUG ARGS`; asserts the one entry and answers its count.
#[track_caller]
fn purge_tenant(srv: &TestServer, slug: &str, args: &[&str], dry_run: bool) -> u64 {
    let mut all = vec!["--tenant", slug];
    all.extend_from_slice(args);
    if dry_run {
        all.push("--dry-run");
    }
    let out = purge(srv, &all);
    assert_eq!(out.len(), 1, "one tenant was named: {out:?}");
    let entry = &out[0];
    let purged = entry["purged"]
        .as_u64()
        .unwrap_or_else(|| panic!("no purged count in {entry}"));
    assert_eq!(
        entry,
        &json!({"tenant": slug, "purged": purged, "dry_run": dry_run}),
        "the purge entry"
    );
    purged
}

/// The entry for `slug` in the output of a run over every tenant.
#[track_caller]
fn entry_for<'a>(out: &'a [Value], slug: &str) -> &'a Value {
    let found: Vec<&Value> = out.iter().filter(|e| e["tenant"] == slug).collect();
    assert_eq!(found.len(), 1, "one entry for {slug} in {out:?}");
    found[0]
}

/// RFC 3339, whole seconds, UTC.
fn rfc3339(t: OffsetDateTime) -> String {
    t.replace_nanosecond(0)
        .expect("zero nanoseconds")
        .format(&Rfc3339)
        .expect("RFC 3339")
}

fn days_from_now(days: i64) -> String {
    rfc3339(OffsetDateTime::now_utc() + time::Duration::days(days))
}

/// `tessera admin tenant set-limits SLUG --mau-cap N`; asserts the printed details carry it.
#[track_caller]
fn set_mau_cap(srv: &TestServer, slug: &str, cap: u64) {
    let cap_s = cap.to_string();
    let out = srv
        .admin(&["tenant", "set-limits", slug, "--mau-cap", &cap_s], "")
        .json();
    assert_eq!(
        find_key(&out, "mau_cap"),
        Some(&json!(cap)),
        "set-limits prints the tenant details with the cap: {out}"
    );
}

/// The first value of `key` anywhere in `v` (depth first).
fn find_key<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m
            .get(key)
            .or_else(|| m.values().find_map(|x| find_key(x, key))),
        Value::Array(a) => a.iter().find_map(|x| find_key(x, key)),
        _ => None,
    }
}

fn parse_time(v: &Value) -> Option<OffsetDateTime> {
    v.as_str()
        .and_then(|s| OffsetDateTime::parse(s, &Rfc3339).ok())
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// Asserts the 429 of a guest limit: its code, a `Retry-After` in `1..=max_retry` seconds and
/// an `X-Service-Docs` link.
#[track_caller]
fn assert_guest_limited(a: &AuthAnswer, max_retry: u64) {
    a.expect_error(429, "anonymous/rate_limited");
    let retry: u64 = a
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("Retry-After in seconds");
    assert!((1..=max_retry).contains(&retry), "Retry-After {retry}");
    assert!(
        a.header("x-service-docs").is_some_and(|d| !d.is_empty()),
        "no X-Service-Docs"
    );
}

/// A purged (or otherwise gone) guest: its refresh token and its access token are refused.
#[track_caller]
fn assert_gone(api: &UserApi, g: &Guest, what: &str) {
    let r = api.refresh(&g.tokens.refresh);
    assert_eq!(r.status, 401, "{what}: refresh answered {}", r.body);
    let r = api.me(&g.tokens.access);
    assert_eq!(r.status, 401, "{what}: /me answered {}", r.body);
}

/// A guest still there: `/me` (which is no activity) answers it, still anonymous.
#[track_caller]
fn assert_guest_alive(api: &UserApi, g: &Guest, what: &str) {
    let r = api.me(&g.tokens.access);
    assert_eq!(r.status, 200, "{what}: /me answered {}", r.body);
    assert_eq!(r.body["id"], g.id.as_str(), "{what}");
    assert_eq!(r.body["is_anonymous"], true, "{what}");
}

// ---------------------------------------------------------------------------------------------
// The switch, the answer, the token
// ---------------------------------------------------------------------------------------------

#[test]
fn guests_are_off_by_default_and_disabling_stops_only_new_ones() {
    let (_smtp, srv, api, s) = user_setup("Switch Co", &[]);
    let settings = srv.dash(
        "GET",
        &format!("/v1/auth/dashboard/tenants/{}/settings/anonymous", api.slug),
        &s,
        None,
    );
    assert_eq!(
        settings.json::<Value>().unwrap()["anonymous_signins_enabled"],
        false
    );
    for body in [None, Some(json!({}))] {
        guest_answer(&api, body.as_ref()).expect_error(403, "anonymous/disabled");
    }
    // The API key is still required.
    let r = api.send_as(
        None,
        "POST",
        ANONYMOUS,
        None,
        Some(&json!({})),
        Some(&fresh_client_ip()),
    );
    r.expect_error(401, "auth/missing_api_key");

    enable_guests(&srv, &s, &api.slug);
    let g = new_guest(&api, None);
    assert_guest_alive(&api, &g, "a guest of an enabled tenant");

    // Off again: no new guests, but the existing one keeps its session.
    let out = guest_settings(
        &srv,
        &s,
        &api.slug,
        json!({"anonymous_signins_enabled": false}),
    );
    assert_eq!(out["anonymous_signins_enabled"], false);
    guest_answer(&api, None).expect_error(403, "anonymous/disabled");
    guest_answer(&api, Some(&json!({"public_metadata": {"a": 1}})))
        .expect_error(403, "anonymous/disabled");
    let next = UserTokens::from_answer(&api.refresh(&g.tokens.refresh));
    let (_, claims) = api.verify_access(&next.access);
    assert_eq!(claims["sub"], g.id.as_str());
    assert_eq!(claims["is_anonymous"], true);
    let me = api.me(&next.access);
    assert_eq!(me.expect(200)["is_anonymous"], true);
    // And a second refresh, from the rotated token.
    UserTokens::from_answer(&api.refresh(&next.refresh));

    // Another tenant is unaffected by this one's switch, and vice versa.
    let other = UserApi::signup(&srv, "Other Switch", "owner@other-switch.example.com");
    guest_answer(&other, None).expect_error(403, "anonymous/disabled");
}

#[test]
fn a_guest_gets_a_token_pair_its_claims_and_its_metadata() {
    let (_smtp, srv, api, s) = user_setup("Guest Co", &[]);
    enable_guests(&srv, &s, &api.slug);
    let metadata = json!({"plan": "trial", "cart": [1, 2, 3], "nested": {"ok": true}});
    let cases: [(Option<Value>, Value); 3] = [
        (None, json!({})),
        (Some(json!({})), json!({})),
        (Some(json!({"public_metadata": metadata})), metadata.clone()),
    ];
    let mut ids = BTreeSet::new();
    for (body, expected_metadata) in cases {
        let what = format!("body {body:?}");
        let before = OffsetDateTime::now_utc() - time::Duration::seconds(60);
        let a = guest_answer(&api, body.as_ref());
        let answer = a.expect(201).clone();
        assert_eq!(
            keys(&answer),
            [
                "access_token",
                "refresh_token",
                "expires_in",
                "token_type",
                "user"
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            "{what}: {answer}"
        );
        assert_eq!(answer["token_type"], "Bearer", "{what}");
        let expires_in = answer["expires_in"].as_u64().expect("expires_in");
        assert!((1..=900).contains(&expires_in), "{what}: {expires_in}");
        let user = &answer["user"];
        assert_eq!(
            keys(user),
            ["id", "is_anonymous", "created_at"]
                .into_iter()
                .map(String::from)
                .collect(),
            "{what}: {answer}"
        );
        assert!(user["id"].as_str().is_some_and(is_uuid), "{what}: {answer}");
        assert_eq!(user["is_anonymous"], true, "{what}");
        let created = parse_time(&user["created_at"]).expect("created_at in RFC 3339");
        assert!(
            created > before && created < OffsetDateTime::now_utc() + time::Duration::seconds(60),
            "{what}: created_at {created}"
        );
        let g = Guest::from_answer(&a);
        assert!(ids.insert(g.id.clone()), "a new id each time");
        assert_ne!(g.tokens.access, g.tokens.refresh);

        // The access token verifies like any other, with the guest's claims.
        let (header, claims) = api.verify_access(&g.tokens.access);
        assert_eq!(header.alg, jsonwebtoken::Algorithm::ES256);
        assert_eq!(header.typ.as_deref(), Some("at+jwt"));
        assert_eq!(claims["sub"], g.id.as_str(), "{what}");
        assert_eq!(claims["tid"], api.tenant_id.as_str());
        assert!(claims["sid"].as_str().is_some_and(|s| !s.is_empty()));
        assert_eq!(claims["is_anonymous"], true, "{what}");
        assert_eq!(claims["aal"], "AAL1");
        assert_eq!(claims["acr"], "aal1");
        assert_eq!(claims["amr"], json!(["anonymous"]));

        // /me.
        let me = api.me(&g.tokens.access);
        let me = me.expect(200);
        assert_eq!(me["id"], g.id.as_str(), "{what}");
        assert_eq!(me["is_anonymous"], true, "{what}");
        assert!(me["email"].is_null(), "{what}: {me}");
        assert_eq!(me["public_metadata"], expected_metadata, "{what}");
        assert_eq!(me["created_at"], user["created_at"], "{what}");

        // A refresh keeps the guest a guest.
        let next = UserTokens::from_answer(&api.refresh(&g.tokens.refresh));
        assert_ne!(next.refresh, g.tokens.refresh);
        let (_, claims2) = api.verify_access(&next.access);
        assert_eq!(claims2["sub"], g.id.as_str(), "{what}");
        assert_eq!(claims2["sid"], claims["sid"], "{what}");
        assert_eq!(claims2["is_anonymous"], true, "{what}");
        let me = api.me(&next.access);
        assert_eq!(me.expect(200)["public_metadata"], expected_metadata);
    }

    // Guests of one tenant are nobody in another.
    let other = UserApi::signup(&srv, "Other Guest Co", "owner@other-guest.example.com");
    let g = new_guest(&api, None);
    other
        .me(&g.tokens.access)
        .expect_error(401, "auth/invalid_token");
}

#[test]
fn public_metadata_must_be_an_object_of_at_most_16_kib() {
    let (_smtp, srv, api, s) = user_setup("Meta Co", &[]);
    enable_guests(&srv, &s, &api.slug);
    for bad in [
        json!([1, 2]),
        json!("text"),
        json!(42),
        json!(true),
        json!([{"a": 1}]),
    ] {
        let r = guest_answer(&api, Some(&json!({"public_metadata": bad})));
        r.expect_error(400, "validation/invalid_request");
        assert!(
            r.body["error"]["details"]["fields"]
                .get("public_metadata")
                .is_some(),
            "{bad}: {}",
            r.body
        );
    }

    // `{"k":"xxx…"}` serializes to 8 + n bytes.
    let sized = |total: usize| json!({"k": "x".repeat(total - 8)});
    let largest = sized(METADATA_MAX);
    assert_eq!(serde_json::to_string(&largest).unwrap().len(), METADATA_MAX);
    let g = new_guest(&api, Some(&json!({"public_metadata": largest})));
    let me = api.me(&g.tokens.access);
    assert_eq!(me.expect(200)["public_metadata"], largest);

    let over = sized(METADATA_MAX + 1);
    let r = guest_answer(&api, Some(&json!({"public_metadata": over})));
    r.expect_error(400, "validation/invalid_request");
    assert!(
        r.body["error"]["details"]["fields"]
            .get("public_metadata")
            .is_some(),
        "{}",
        r.body
    );
    // Far over, in many keys.
    let many: serde_json::Map<String, Value> = (0..2000)
        .map(|i| (format!("key{i:05}"), json!("value")))
        .collect();
    let r = guest_answer(&api, Some(&json!({"public_metadata": many})));
    r.expect_error(400, "validation/invalid_request");
}

// ---------------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------------

#[test]
fn the_sixth_guest_a_minute_from_one_address_is_limited() {
    let (_smtp, srv, api, s) = user_setup("Per Ip Co", &[]);
    enable_guests(&srv, &s, &api.slug);
    let ip = "203.0.113.77";
    for i in 0..5 {
        let body = json!({"public_metadata": {"i": i}});
        Guest::from_answer(&guest_from(&api, Some(&body), ip));
    }
    let limited = guest_from(&api, None, ip);
    assert_guest_limited(&limited, 60);
    // Still limited right after.
    guest_from(&api, Some(&json!({})), ip).expect_error(429, "anonymous/rate_limited");
    // Another address is not.
    new_guest(&api, None);
    Guest::from_answer(&guest_from(&api, None, "203.0.113.78"));
}

#[test]
fn the_1001st_guest_an_hour_for_one_api_key_is_limited_and_a_purge_takes_at_most_1000() {
    // A purge of a thousand guests in a debug build, beside the other tests on two cores, can
    // take longer than the default 5 s an actor call may: this test is about the counts.
    let (_smtp, mut srv, mut api, s) = user_setup(
        "Per Key Co",
        &[("TESSERA__SERVER__ACTOR_TIMEOUT_MS", "30000")],
    );
    enable_guests(&srv, &s, &api.slug);
    // Whatever the tier's default, the month's cap is not what this test is about.
    set_mau_cap(&srv, &api.slug, 5000);

    const N: usize = 1000;
    const THREADS: usize = 8;
    let next = AtomicUsize::new(0);
    let refused: Vec<(usize, u16, Value)> = std::thread::scope(|sc| {
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                sc.spawn(|| {
                    let mut refused = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        if i >= N {
                            return refused;
                        }
                        let a = guest_answer(&api, None);
                        if a.status != 201 {
                            refused.push((i, a.status, a.body));
                        }
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker"))
            .collect()
    });
    assert!(
        refused.is_empty(),
        "{} of the first {N} guests refused, e.g. {:?}",
        refused.len(),
        refused.first()
    );
    // The 1001st, from an address never seen before.
    let limited = guest_answer(&api, None);
    assert_guest_limited(&limited, 3600);
    guest_answer(&api, Some(&json!({}))).expect_error(429, "anonymous/rate_limited");
    // Another tenant's key has its own budget.
    let other = UserApi::signup(&srv, "Other Key Co", "owner@other-key.example.com");
    let os = srv.login(&other.owner, PASSWORD);
    enable_guests(&srv, &os, &other.slug);
    new_guest(&other, None);

    // The hourly window lives in the tenant actor's memory: after a restart, a few more.
    const MORE: usize = 7;
    srv.restart();
    api.rebase(&srv);
    for _ in 0..MORE {
        new_guest(&api, None);
    }
    // 1007 guests, every one stale 31 days on (the default time to live is 30 days); one
    // purge run takes at most 1000 of them.
    let as_of = days_from_now(31);
    assert_eq!(
        purge_tenant(&srv, &api.slug, &["--as-of", &as_of], true),
        N as u64,
        "a dry run counts what one run would take"
    );
    assert_eq!(
        purge_tenant(&srv, &api.slug, &["--as-of", &as_of], false),
        N as u64,
        "the first run stops at 1000"
    );
    assert_eq!(
        purge_tenant(&srv, &api.slug, &["--as-of", &as_of], false),
        MORE as u64,
        "the second run takes the rest"
    );
    assert_eq!(
        purge_tenant(&srv, &api.slug, &["--as-of", &as_of], false),
        0,
        "nothing left for a third run"
    );
}

#[test]
fn the_monthly_active_user_cap_stops_new_guests_but_not_existing_ones() {
    let (_smtp, srv, api, s) = user_setup("Cap Co", &[]);
    enable_guests(&srv, &s, &api.slug);
    set_mau_cap(&srv, &api.slug, 2);
    let a = new_guest(&api, None);
    let b = new_guest(&api, Some(&json!({"public_metadata": {"n": 2}})));
    guest_answer(&api, None).expect_error(403, "anonymous/mau_exhausted");
    guest_answer(&api, Some(&json!({}))).expect_error(403, "anonymous/mau_exhausted");
    // The guests of this month still work.
    for g in [&a, &b] {
        let next = UserTokens::from_answer(&api.refresh(&g.tokens.refresh));
        let (_, claims) = api.verify_access(&next.access);
        assert_eq!(claims["sub"], g.id.as_str());
        assert_eq!(claims["is_anonymous"], true);
    }
    // The cap is per tenant.
    let other = UserApi::signup(&srv, "Uncapped Co", "owner@uncapped.example.com");
    let os = srv.login(&other.owner, PASSWORD);
    enable_guests(&srv, &os, &other.slug);
    set_mau_cap(&srv, &other.slug, 10);
    new_guest(&other, None);
    // Raising the cap admits exactly one more.
    set_mau_cap(&srv, &api.slug, 3);
    new_guest(&api, None);
    guest_answer(&api, None).expect_error(403, "anonymous/mau_exhausted");
}

#[test]
fn registered_users_count_toward_the_cap_and_each_user_counts_once_a_month() {
    let (smtp, srv, api, s) = user_setup("Count Co", &[]);
    enable_guests(&srv, &s, &api.slug);
    set_mau_cap(&srv, &api.slug, 3);
    // A registered user: 1, however often it logs in and refreshes.
    let mut u = api.verified_user(&smtp, "counted@example.com", USER_PASSWORD);
    for _ in 0..2 {
        u = UserTokens::from_answer(&api.refresh(&u.refresh));
    }
    api.login_ok("counted@example.com", USER_PASSWORD);
    // A guest: 2, however often it refreshes.
    let g = new_guest(&api, None);
    let mut t = g.tokens.clone();
    for _ in 0..3 {
        t = UserTokens::from_answer(&api.refresh(&t.refresh));
    }
    // 3.
    new_guest(&api, None);
    // The month is full.
    guest_answer(&api, None).expect_error(403, "anonymous/mau_exhausted");
    // Existing users carry on.
    UserTokens::from_answer(&api.refresh(&u.refresh));
    UserTokens::from_answer(&api.refresh(&t.refresh));
}

// ---------------------------------------------------------------------------------------------
// Claiming a guest
// ---------------------------------------------------------------------------------------------

#[test]
fn a_guest_claims_its_account_by_registering_with_its_bearer() {
    let (smtp, srv, api, s) = user_setup("Claim Co", &[]);
    enable_guests(&srv, &s, &api.slug);
    let metadata = json!({"cart": ["book"], "theme": "dark"});
    let g = new_guest(&api, Some(&json!({"public_metadata": metadata})));
    let email = "claimed@example.com";

    let r = claim(&api, &g.tokens.access, email);
    let body = r.expect(200);
    assert_eq!(
        body["user"]["id"],
        g.id.as_str(),
        "the guest keeps its id: {body}"
    );
    assert_eq!(body["user"]["is_anonymous"], false, "{body}");

    // The guest's refresh token carries on, now for a registered user.
    let next = UserTokens::from_answer(&api.refresh(&g.tokens.refresh));
    let (_, claims) = api.verify_access(&next.access);
    assert_eq!(claims["sub"], g.id.as_str());
    assert_eq!(claims["is_anonymous"], false);
    let me = api.me(&next.access);
    let me = me.expect(200);
    assert_eq!(me["id"], g.id.as_str());
    assert_eq!(me["email"], email);
    assert_eq!(me["is_anonymous"], false);
    assert_eq!(me["email_verified"], false);
    assert_eq!(me["public_metadata"], metadata);

    // A verification mail, as for any registration; then a password login is the same user.
    let token = api.verification_token(&smtp, email, 1);
    let r = api.post("/v1/auth/verify-email", &json!({"token": token}));
    assert_eq!(r.expect(200)["verified"], true);
    let login = api.login_ok(email, USER_PASSWORD);
    let (_, claims) = api.verify_access(&login.access);
    assert_eq!(claims["sub"], g.id.as_str());
    assert_eq!(claims["is_anonymous"], false);
    assert_eq!(claims["amr"], json!(["pwd"]));
    let me = api.me(&login.access);
    let me = me.expect(200);
    assert_eq!(me["email_verified"], true);
    assert_eq!(me["public_metadata"], metadata);

    // Claimed once is claimed for good.
    claim(&api, &login.access, "second@example.com").expect_error(409, "anonymous/already_claimed");
    let later = UserTokens::from_answer(&api.refresh(&next.refresh));
    assert_eq!(api.me(&later.access).expect(200)["email"], email);
    // No mail for a refused claim.
    assert_no_mail(&smtp, &srv, &api, &["second@example.com"]);
}

/// A guest claims an address that already has an account: the answer is the 200 of a real
/// claim, and nothing changes hands. The account keeps its password and its sessions (the
/// claimer's password never works on it), its owner is mailed "account exists", the guest
/// stays a guest (what a later `/me` shows, see docs/app-developers.md), and claims count
/// toward the registration limit of the client address like registrations.
#[test]
fn a_claim_of_an_existing_address_changes_no_account_and_counts_as_a_registration() {
    let (smtp, srv, api, s) = user_setup("Taken Claim Co", &[]);
    enable_guests(&srv, &s, &api.slug);
    let taken = "taken@example.com";
    let claimer_password = "the claimer's own passphrase";
    let owner = api.verified_user(&smtp, taken, USER_PASSWORD);
    let owner_id = owner.body["user"]["id"].as_str().unwrap().to_owned();
    let metadata = json!({"cart": ["lamp"]});
    let g = new_guest(&api, Some(&json!({"public_metadata": metadata})));
    let fresh = new_guest(&api, None);

    let ip = fresh_client_ip();
    let claim_from = |bearer: &str, email: &str| {
        api.send_as(
            Some(&api.api_key),
            "POST",
            "/v1/auth/register",
            Some(bearer),
            Some(&json!({"email": email, "password": claimer_password, "consent": true})),
            Some(&ip),
        )
    };
    // The same answer as the claim of a new address, but for the address itself.
    let r = claim_from(&g.tokens.access, taken);
    let real = claim_from(&fresh.tokens.access, "fresh-claim@example.com");
    let body = r.expect(200).clone();
    assert_eq!(body["user"]["id"], g.id.as_str(), "{body}");
    assert_eq!(body["user"]["email"], taken, "{body}");
    let mut masked = body.clone();
    masked["user"]["id"] = real.body["user"]["id"].clone();
    masked["user"]["email"] = real.body["user"]["email"].clone();
    masked["user"]["created_at"] = real.body["user"]["created_at"].clone();
    assert_eq!(masked, *real.expect(200), "the two claims answer alike");
    assert_eq!(r.header("content-type"), real.header("content-type"));

    // The owner hears of it, with a reset link; no verification mail goes anywhere for it.
    let mail = smtp.wait_for(&api.slug, "account_exists", taken, 1);
    assert!(
        mail.token_after(&api.link("reset-password")).is_some(),
        "no reset link in {}",
        mail.text
    );
    assert_eq!(smtp.mails_of(&api.slug, "verify_email", taken).len(), 1);

    // The account is as it was: its session lives, its password works, the claimer's never.
    let me = api.me(&owner.access);
    let me = me.expect(200);
    assert_eq!(me["id"], owner_id.as_str());
    assert_eq!(me["email"], taken);
    assert_eq!(me["email_verified"], true);
    UserTokens::from_answer(&api.refresh(&owner.refresh));
    let login = api.login_ok(taken, USER_PASSWORD);
    assert_eq!(login.body["user"]["id"], owner_id.as_str());
    api.login(taken, claimer_password)
        .expect_error(401, "auth/invalid_credentials");

    // The guest is still a guest, with its metadata, and may claim another address.
    let next = UserTokens::from_answer(&api.refresh(&g.tokens.refresh));
    let (_, claims) = api.verify_access(&next.access);
    assert_eq!(claims["is_anonymous"], true);
    let me = api.me(&next.access);
    let me = me.expect(200);
    assert_eq!(me["id"], g.id.as_str());
    assert_eq!(me["is_anonymous"], true);
    assert_eq!(me["email"], Value::Null);
    assert_eq!(me["public_metadata"], metadata);

    // Two claims so far from this client address; three more are allowed this minute, the
    // sixth is the registration limit's 429.
    for _ in 0..3 {
        claim_from(&next.access, taken).expect(200);
    }
    let limited = claim_from(&next.access, "later@example.com");
    limited.expect_error(429, "auth/rate_limited");
    assert!(limited.header("retry-after").is_some(), "{}", limited.body);
    // Still nothing changed: one "account exists" mail a minute at most, the owner's
    // password alone works, and the guest is a guest.
    assert_no_mail(&smtp, &srv, &api, &["later@example.com"]);
    api.login_ok(taken, USER_PASSWORD);
    let me = api.me(&next.access);
    assert_eq!(me.expect(200)["is_anonymous"], true);
    let later = claim(&api, &next.access, "later@example.com");
    assert_eq!(later.expect(200)["user"]["id"], g.id.as_str());
    let after = UserTokens::from_answer(&api.refresh(&next.refresh));
    let me = api.me(&after.access);
    assert_eq!(me.expect(200)["email"], "later@example.com");
}

#[test]
fn two_claims_of_one_guest_at_once_make_one_account() {
    let (smtp, srv, api, s) = user_setup("Race Claim Co", &[]);
    enable_guests(&srv, &s, &api.slug);
    let g = new_guest(&api, Some(&json!({"public_metadata": {"race": true}})));
    let emails = ["first-claim@example.com", "second-claim@example.com"];
    let barrier = Barrier::new(2);
    let answers: Vec<AuthAnswer> = std::thread::scope(|sc| {
        let handles: Vec<_> = emails
            .iter()
            .map(|email| {
                let (api, g, barrier) = (&api, &g, &barrier);
                sc.spawn(move || {
                    barrier.wait();
                    claim(api, &g.tokens.access, email)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let statuses: BTreeSet<u16> = answers.iter().map(|a| a.status).collect();
    assert_eq!(
        statuses,
        [200, 409].into_iter().collect(),
        "answers: {:?}",
        answers.iter().map(|a| &a.body).collect::<Vec<_>>()
    );
    let (winner, loser) = if answers[0].status == 200 {
        (0, 1)
    } else {
        (1, 0)
    };
    answers[loser].expect_error(409, "anonymous/already_claimed");
    assert_eq!(answers[winner].body["user"]["id"], g.id.as_str());

    let next = UserTokens::from_answer(&api.refresh(&g.tokens.refresh));
    let me = api.me(&next.access);
    let me = me.expect(200);
    assert_eq!(me["id"], g.id.as_str());
    assert_eq!(me["email"], emails[winner]);
    assert_eq!(me["is_anonymous"], false);
    assert_eq!(me["public_metadata"], json!({"race": true}));
    smtp.wait_for(&api.slug, "verify_email", emails[winner], 1);
}

#[test]
fn only_a_valid_guest_bearer_claims() {
    let (smtp, srv, api, s) = user_setup("Bearer Co", &[]);
    enable_guests(&srv, &s, &api.slug);

    // A registered user is no guest.
    let u = api.verified_user(&smtp, "member@example.com", USER_PASSWORD);
    let uid = u.body["user"]["id"].as_str().unwrap().to_owned();
    claim(&api, &u.access, "member-two@example.com").expect_error(409, "anonymous/already_claimed");
    let me = api.me(&u.access);
    let me = me.expect(200);
    assert_eq!(me["id"], uid.as_str());
    assert_eq!(me["email"], "member@example.com");

    // Bearers that are no valid token here.
    for bad in ["garbage", "a.b.c", "eyJhbGciOiJub25lIn0.e30."] {
        claim(&api, bad, "nobody@example.com").expect_error(401, "auth/invalid_token");
    }
    // Another tenant's guest is nobody here, and stays a guest there.
    let other = UserApi::signup(&srv, "Other Bearer Co", "owner@other-bearer.example.com");
    let os = srv.login(&other.owner, PASSWORD);
    enable_guests(&srv, &os, &other.slug);
    let theirs = new_guest(&other, None);
    claim(&api, &theirs.tokens.access, "stranger@example.com")
        .expect_error(401, "auth/invalid_token");
    assert_guest_alive(&other, &theirs, "the other tenant's guest");

    // A guest whose session ended cannot claim with its old access token.
    let g = new_guest(&api, None);
    api.logout(&g.tokens.access, None).expect(204);
    claim(&api, &g.tokens.access, "ended@example.com").expect_error(401, "auth/invalid_token");
}

// ---------------------------------------------------------------------------------------------
// Purge
// ---------------------------------------------------------------------------------------------

#[test]
fn purge_removes_exactly_the_stale_guests_of_each_tenant() {
    let (smtp, srv, api, s) = user_setup("Purge Co", &[]);
    enable_guests(&srv, &s, &api.slug);
    let ttl = 7i64;
    let out = guest_settings(&srv, &s, &api.slug, json!({"anonymous_user_ttl_days": ttl}));
    assert_eq!(out["anonymous_user_ttl_days"], ttl);

    let guests: Vec<Guest> = (0..3)
        .map(|i| new_guest(&api, Some(&json!({"public_metadata": {"i": i}}))))
        .collect();
    // A registered user, and a guest that became one: never purged.
    let user = api.verified_user(&smtp, "stays@example.com", USER_PASSWORD);
    let claimed = new_guest(&api, None);
    claim(&api, &claimed.tokens.access, "claimed-stays@example.com").expect(200);
    // Another tenant with the default time to live (30 days).
    let other = UserApi::signup(&srv, "Other Purge Co", "owner@other-purge.example.com");
    let os = srv.login(&other.owner, PASSWORD);
    enable_guests(&srv, &os, &other.slug);
    let theirs: Vec<Guest> = (0..2).map(|_| new_guest(&other, None)).collect();

    // Nothing is stale now.
    let now = rfc3339(OffsetDateTime::now_utc());
    assert_eq!(purge_tenant(&srv, &api.slug, &["--as-of", &now], false), 0);
    assert_eq!(
        purge_tenant(&srv, &api.slug, &[], false),
        0,
        "--as-of defaults to now"
    );
    for g in &guests {
        assert_guest_alive(&api, g, "a fresh guest after a purge as of now");
    }

    // A day past the time to live: a dry run counts them and deletes nothing.
    let stale = days_from_now(ttl + 1);
    assert_eq!(
        purge_tenant(&srv, &api.slug, &["--as-of", &stale], true),
        guests.len() as u64
    );
    for g in &guests {
        assert_guest_alive(&api, g, "a guest after a dry run");
    }
    let before = audit_events(&srv, &s, &api.slug, "anonymous.purged").len();

    // The real run.
    assert_eq!(
        purge_tenant(&srv, &api.slug, &["--as-of", &stale], false),
        guests.len() as u64
    );
    for g in &guests {
        assert_gone(&api, g, "a purged guest");
    }
    let events = {
        let mut events = Vec::new();
        let arrived = eventually(Duration::from_secs(10), || {
            events = audit_events(&srv, &s, &api.slug, "anonymous.purged");
            events.len() > before
        });
        assert!(arrived, "no anonymous.purged event for the run");
        events
    };
    assert_eq!(events.len(), before + 1, "one event per run: {events:?}");
    assert_eq!(
        events[0]["metadata"]["count"],
        guests.len() as u64,
        "{}",
        events[0]
    );
    // The registered users, the other tenant's guests.
    let u2 = UserTokens::from_answer(&api.refresh(&user.refresh));
    assert_eq!(api.me(&u2.access).expect(200)["email"], "stays@example.com");
    let c2 = UserTokens::from_answer(&api.refresh(&claimed.tokens.refresh));
    let me = api.me(&c2.access);
    assert_eq!(me.expect(200)["id"], claimed.id.as_str());
    for g in &theirs {
        assert_guest_alive(&other, g, "another tenant's guest after a --tenant run");
    }
    assert_eq!(
        purge_tenant(&srv, &api.slug, &["--as-of", &stale], false),
        0,
        "a second run finds none"
    );

    // Over every tenant: the other tenant's guests live 30 days.
    let out = purge(&srv, &["--as-of", &stale]);
    for e in &out {
        assert_eq!(
            keys(e),
            keys(&json!({"tenant": 0, "purged": 0, "dry_run": 0})),
            "{e}"
        );
        assert_eq!(e["dry_run"], false, "{e}");
    }
    assert_eq!(entry_for(&out, &api.slug)["purged"], 0);
    assert_eq!(entry_for(&out, &other.slug)["purged"], 0);
    for g in &theirs {
        assert_guest_alive(&other, g, "a guest within its tenant's time to live");
    }
    let later = days_from_now(31);
    let dry = purge(&srv, &["--as-of", &later, "--dry-run"]);
    assert_eq!(entry_for(&dry, &other.slug)["purged"], theirs.len() as u64);
    assert_eq!(entry_for(&dry, &other.slug)["dry_run"], true);
    let out = purge(&srv, &["--as-of", &later]);
    assert_eq!(entry_for(&out, &other.slug)["purged"], theirs.len() as u64);
    assert_eq!(entry_for(&out, &api.slug)["purged"], 0);
    for g in &theirs {
        assert_gone(&other, g, "a guest past its tenant's time to live");
    }
    let events = audit_events(&srv, &os, &other.slug, "anonymous.purged");
    assert!(
        events
            .iter()
            .any(|e| e["metadata"]["count"] == theirs.len() as u64),
        "{events:?}"
    );
    // The registered users are still there, 31 days on.
    UserTokens::from_answer(&api.refresh(&u2.refresh));
    UserTokens::from_answer(&api.refresh(&c2.refresh));
}

#[test]
fn a_refresh_keeps_a_guest_from_the_purge() {
    let (_smtp, srv, api, s) = user_setup("Active Co", &[]);
    enable_guests(&srv, &s, &api.slug);
    guest_settings(&srv, &s, &api.slug, json!({"anonymous_user_ttl_days": 1}));
    let idle = new_guest(&api, None);
    let active = new_guest(&api, None);
    let created = parse_time(&active.tokens.body["user"]["created_at"]).expect("created_at");
    // A clock gap between creation and the refresh, wide enough for whole-second timestamps.
    std::thread::sleep(Duration::from_secs(4));
    let refreshed = UserTokens::from_answer(&api.refresh(&active.tokens.refresh));
    // Both were created more than a day before this instant; `active` was refreshed less than
    // a day before it.
    let as_of = rfc3339(
        created.replace_nanosecond(0).unwrap()
            + time::Duration::days(1)
            + time::Duration::seconds(2),
    );
    assert_eq!(
        purge_tenant(&srv, &api.slug, &["--as-of", &as_of], false),
        1
    );
    assert_gone(&api, &idle, "the idle guest");
    let me = api.me(&refreshed.access);
    assert_eq!(me.expect(200)["id"], active.id.as_str());
    // More than a day after its last activity, it goes too.
    let much_later = days_from_now(2);
    assert_eq!(
        purge_tenant(&srv, &api.slug, &["--as-of", &much_later], false),
        1
    );
}
