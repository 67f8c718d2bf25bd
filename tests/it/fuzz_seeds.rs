//! Every seed of the fuzz targets (`fuzz/seeds/<target>/`), replayed as an ordinary test on
//! stable, so CI runs what `fuzz/run.sh` starts from. Each target's input format and checks
//! come from the fuzz crate's own modules, included here by path (`fuzz/src/bodies.rs`,
//! `jwt.rs`, `admin.rs`): a seed is decoded exactly as the fuzzer decodes it. On top of the
//! fuzzer's checks (no 500, the error envelope, no forged token accepted, one well-formed
//! admin answer), each seed has its exact expected answer, and each request body seed a
//! mutation that breaks a required field, which must be refused with 400 naming that field.
//!
//! Every file of a seed directory must have its expectation here and every expectation its
//! file, so a seed added, renamed, moved or lost fails the test until this table says what it
//! should get.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
};

use serde_json::{json, Value};

use crate::support::*;

#[allow(dead_code)]
#[path = "../../fuzz/src/bodies.rs"]
mod bodies;

#[allow(dead_code)]
#[path = "../../fuzz/src/jwt.rs"]
mod jwt;

#[allow(dead_code)]
#[path = "../../fuzz/src/admin.rs"]
mod admin;

/// The seeds of `target`, sorted by file name.
fn seed_files(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let mut seeds: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the seeds of {target} ({}): {e}", dir.display()))
        .map(|entry| {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            (name, std::fs::read(entry.path()).unwrap())
        })
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "no seeds in {}", dir.display());
    seeds
}

/// Asserts that the expectations name exactly the seed files.
#[track_caller]
fn same_names<'a>(
    target: &str,
    files: &[(String, Vec<u8>)],
    expected: impl Iterator<Item = &'a str>,
) {
    let files: BTreeSet<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    let expected: BTreeSet<&str> = expected.collect();
    assert_eq!(
        files, expected,
        "the seeds of {target} and their expectations differ"
    );
}

// ---------------------------------------------------------------------------------------------
// request_bodies
// ---------------------------------------------------------------------------------------------

/// The password the seeds give users and accounts that must exist for them to be accepted.
const SEED_PASSWORD: &str = "a long enough passphrase";
/// The dashboard owner's password, as the fuzz harness sets it (seed `29-reauth` sends it).
const DASH_PASSWORD: &str = "fuzzing-owner-password-1";

/// What a seed's request must get.
#[derive(Debug)]
enum Answer {
    /// Accepted, with this status.
    Accepted(u16),
    /// Refused for what the server holds, not for the body's shape (a token nobody issued, a
    /// method the tenant has off): this status and code, never a validation error.
    Refused(u16, &'static str),
    /// Refused at validation: 400 `validation/invalid_request` naming exactly these fields.
    Invalid(&'static [&'static str]),
}

/// How a seed's JSON body is broken; the answer must be 400 `validation/invalid_request`
/// naming the field.
#[derive(Debug)]
enum Mutation {
    /// A required field left out.
    Remove(&'static str),
    /// A field set to a value of the wrong type or shape (JSON text).
    Set(&'static str, &'static str),
}

struct Expect {
    seed: &'static str,
    answer: Answer,
    /// `None` only for a body with no field to break (empty, or refused before it is read).
    mutation: Option<Mutation>,
}

const fn expect(seed: &'static str, answer: Answer, mutation: Option<Mutation>) -> Expect {
    Expect {
        seed,
        answer,
        mutation,
    }
}

use Answer::{Accepted, Invalid, Refused};
use Mutation::{Remove, Set};

/// Every seed's answer, in file order (which is the order they run in: `27-dashboard-login`
/// signs in the owner `00-signup` created).
const REQUEST_BODIES: &[Expect] = &[
    expect("00-signup", Accepted(201), Some(Remove("email"))),
    // A token no age verification issued, refused as that field's error.
    expect(
        "01-register",
        Invalid(&["age_verification_token"]),
        Some(Remove("password")),
    ),
    expect("01-register-idn", Accepted(200), Some(Remove("email"))),
    expect(
        "02-verify-email",
        Refused(400, "auth/invalid_or_expired_token"),
        Some(Remove("token")),
    ),
    expect(
        "03-resend-verification",
        Accepted(202),
        Some(Remove("email")),
    ),
    // alice@example.com is a verified user of the API tenant with the seed's password.
    expect("04-login", Accepted(200), Some(Remove("password"))),
    expect(
        "05-refresh",
        Refused(401, "auth/invalid_refresh_token"),
        Some(Remove("refresh_token")),
    ),
    expect("06-forgot-password", Accepted(202), Some(Remove("email"))),
    expect(
        "07-reset-password",
        Refused(400, "auth/invalid_or_expired_token"),
        Some(Remove("password")),
    ),
    expect(
        "08-anonymous",
        Accepted(201),
        Some(Set("public_metadata", "[1]")),
    ),
    expect("08-anonymous-empty", Accepted(201), None),
    expect(
        "09-mfa-verify",
        Refused(401, "invalid_or_expired_token"),
        Some(Remove("mfa_challenge_token")),
    ),
    expect("10-magic-link", Accepted(202), Some(Remove("email"))),
    expect(
        "11-magic-link-verify",
        Refused(401, "invalid_or_expired_token"),
        Some(Remove("token")),
    ),
    expect("12-email-otp", Accepted(202), Some(Remove("email"))),
    expect(
        "13-email-otp-verify",
        Refused(401, "invalid_or_expired_token"),
        Some(Remove("code")),
    ),
    // The API tenant has text-message sign-in on (the fuzz harness leaves it off).
    expect("14-sms-otp", Accepted(202), Some(Remove("phone"))),
    // A national number: refused on purpose, only international ones are taken.
    expect(
        "14-sms-otp-national",
        Invalid(&["phone"]),
        Some(Set("mode", "\"sometimes\"")),
    ),
    expect(
        "15-sms-otp-verify",
        Refused(401, "invalid_or_expired_token"),
        Some(Remove("code")),
    ),
    // Signed in as a fresh user whose password is the seed's current_password.
    expect(
        "16-change-password",
        Accepted(200),
        Some(Remove("new_password")),
    ),
    expect(
        "17-mfa-verify-setup",
        Refused(409, "mfa/setup_not_started"),
        Some(Remove("code")),
    ),
    expect(
        "18-mfa-disable",
        Refused(409, "mfa/not_enabled"),
        Some(Remove("password")),
    ),
    // A recovery code where a TOTP code is asked for.
    expect(
        "19-mfa-recovery-codes",
        Invalid(&["code"]),
        Some(Remove("password")),
    ),
    expect(
        "20-phone-verify",
        Refused(400, "sms/country_not_allowed"),
        Some(Remove("phone")),
    ),
    // With the step-up token the route needs: no code was sent to that number.
    expect(
        "21-phone-confirm",
        Refused(401, "invalid_or_expired_token"),
        Some(Remove("code")),
    ),
    expect(
        "22-step-up-password",
        Accepted(200),
        Some(Remove("password")),
    ),
    expect(
        "23-step-up-email-otp-initiate",
        Accepted(202),
        Some(Set("action_hint", "5")),
    ),
    expect("23-step-up-initiate-empty", Accepted(202), None),
    expect(
        "24-step-up-email-otp-verify",
        Refused(401, "invalid_or_expired_token"),
        Some(Remove("otp")),
    ),
    expect(
        "25-step-up-magic-link-initiate",
        Accepted(202),
        Some(Set("redirect_to", "5")),
    ),
    expect(
        "26-step-up-magic-link-verify",
        Refused(401, "invalid_or_expired_token"),
        Some(Remove("token")),
    ),
    expect("27-dashboard-login", Accepted(200), Some(Remove("email"))),
    expect(
        "28-accept-invite",
        Refused(400, "dashboard/invite_invalid"),
        Some(Remove("token")),
    ),
    expect("29-reauth", Accepted(200), Some(Remove("password"))),
    expect("30-sms-test", Accepted(200), Some(Remove("phone"))),
    expect("31-invite", Accepted(201), Some(Remove("email"))),
    // A null where a boolean is required, and a provider token shorter than any real one.
    expect(
        "32-security",
        Invalid(&["block_email_subaddresses", "byok_provider_auth_token"]),
        Some(Set("mfa_policy", "\"sometimes\"")),
    ),
    // A wildcard is not a domain.
    expect(
        "33-email-domains",
        Invalid(&["allowlist[1]"]),
        Some(Set("blocklist", "\"mailinator.com\"")),
    ),
    // Guests for the first time while the default role may write: the header the fuzzer
    // never sends is required.
    expect(
        "34-anonymous-settings",
        Refused(409, "anonymous/privileged_default_role_unconfirmed"),
        Some(Set("anonymous_user_ttl_days", "\"30\"")),
    ),
    // Merge-patch is refused before the body is read.
    expect(
        "34-anonymous-settings-merge-patch",
        Refused(415, "validation/unsupported_media_type"),
        None,
    ),
    expect("35-roles", Accepted(200), Some(Set("default_role", "5"))),
    expect(
        "36-passkey-domain",
        Accepted(200),
        Some(Set("passkey_rp_id", "5")),
    ),
    // "MIIB" is no certificate.
    expect(
        "37-eudi",
        Invalid(&["trust_anchors[1].keyResolution.x5cRoots"]),
        Some(Set("enabled", "\"yes\"")),
    ),
    expect(
        "38-eudi-age",
        Accepted(200),
        Some(Set("supported_member_states", "\"PL\"")),
    ),
];

/// The routes a signed-in user reaches only with a step-up token as well.
const STEP_UP_ROUTES: &[&str] = &["/v1/users/me/phone/confirm"];

/// The world the request body seeds expect: three tenants as in the fuzz harness (API-key
/// routes on one, signed-in routes on another, dashboard routes on `fuzz-dashboard`), and the
/// accounts the seeds name.
struct World {
    smtp: SmtpStub,
    srv: TestServer,
    /// API-key routes: guests and text-message sign-in on, alice@example.com verified.
    api: UserApi,
    /// Signed-in routes: a fresh verified user for each request.
    users: UserApi,
    users_made: u32,
    dash_slug: String,
    dash: Session,
}

impl World {
    fn start() -> World {
        // Text messages go to the outbox, and a tenant's own provider to a closed local port.
        let (smtp, srv) = start_with_mail(&[
            ("TESSERA__SMS__BASE_URL", "http://127.0.0.1:9"),
            ("TESSERA__SMS__TIMEOUT_MS", "1000"),
        ]);
        let api = UserApi::signup(&srv, "Fuzz API", "owner-api@fuzz.example.com");
        let owner = srv.login(&api.owner, PASSWORD);
        crate::support::enable_guests(&srv, &owner, &api.slug);
        patch_security(&srv, &owner, &api.slug, json!({"sms_otp_enabled": true}));
        api.verified_user(&smtp, "alice@example.com", SEED_PASSWORD);
        let users = UserApi::signup(&srv, "Fuzz Users", "owner-users@fuzz.example.com");
        let r = srv.post_json(
            "/v1/onboarding/signup",
            &json!({
                "email": "owner-dash@fuzz.example.com",
                "password": DASH_PASSWORD,
                "tenant_name": "Fuzz Dashboard",
                "consent_terms": true,
                "consent_privacy": true,
            }),
        );
        assert_eq!(r.status(), 201, "the dashboard tenant");
        let dash_slug = r.json::<Value>().unwrap()["tenant"]["slug"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(dash_slug, "fuzz-dashboard", "seed 30-sms-test names it");
        let dash = srv.login("owner-dash@fuzz.example.com", DASH_PASSWORD);
        World {
            smtp,
            srv,
            api,
            users,
            users_made: 0,
            dash_slug,
            dash,
        }
    }

    /// Sends `body` to `route` as the fuzz target does (its content type, its credentials,
    /// an address of its own), signed in as a new user on signed-in routes.
    fn send(
        &mut self,
        route: &bodies::Route,
        content_type: Option<&str>,
        body: &[u8],
    ) -> AuthAnswer {
        let path = route.path.replace("{slug}", &self.dash_slug);
        let mut req = self
            .srv
            .client
            .request(route.method.parse().unwrap(), self.srv.url(&path))
            .header("x-forwarded-for", fresh_client_ip());
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        match route.auth {
            bodies::Auth::None => {}
            bodies::Auth::ApiKey => req = req.header("x-api-key", &self.api.api_key),
            bodies::Auth::User => {
                self.users_made += 1;
                let email = format!("user{}@fuzz.example.com", self.users_made);
                let tokens = self.users.verified_user(&self.smtp, &email, SEED_PASSWORD);
                req = req
                    .header("x-api-key", &self.users.api_key)
                    .bearer_auth(&tokens.access);
                if STEP_UP_ROUTES.contains(&route.path) {
                    let r = self.users.post_as(
                        "/v1/auth/step-up/password",
                        Some(&tokens.access),
                        &json!({"password": SEED_PASSWORD}),
                    );
                    let step_up = r.expect(200)["step_up_token"].as_str().unwrap().to_owned();
                    req = req.header(STEP_UP_HEADER, step_up);
                }
            }
            bodies::Auth::Dashboard => req = req.bearer_auth(&self.dash.token),
        }
        AuthAnswer::read(req.body(body.to_vec()).send().unwrap())
    }
}

/// The field names of a validation error (`error.details.fields`).
fn named_fields(a: &AuthAnswer) -> BTreeSet<String> {
    a.body["error"]["details"]["fields"]
        .as_object()
        .map(|f| f.keys().cloned().collect())
        .unwrap_or_default()
}

/// Every request body seed gets exactly its answer, as the route's caller would (a real
/// tenant, a signed-in user with a step-up token where the route wants one, the owner's
/// dashboard session), passing the fuzzer's own checks on the way; and the same body with a
/// required field removed, or a field of the wrong type, gets 400 naming that field.
#[test]
fn every_request_body_seed_gets_its_answer_and_a_broken_field_is_named() {
    let seeds = seed_files("request_bodies");
    same_names(
        "request_bodies",
        &seeds,
        REQUEST_BODIES.iter().map(|e| e.seed),
    );
    let mut world = World::start();
    let mut replayed = 0;
    for (name, data) in &seeds {
        let expected = REQUEST_BODIES.iter().find(|e| e.seed == name).unwrap();
        let (route, content_type, body) = bodies::decode(data)
            .unwrap_or_else(|| panic!("{name}: shorter than the two selector bytes"));
        let what = format!("{name} ({} {}, {content_type:?})", route.method, route.path);
        let a = world.send(route, content_type, body);
        replayed += 1;
        let raw = a.body.to_string();
        if let Some(problem) = bodies::answer_problem(a.status, raw.as_bytes()) {
            panic!("{what}: {problem}");
        }
        match &expected.answer {
            Accepted(status) => assert_eq!(a.status, *status, "{what}: {}", a.body),
            Refused(status, code) => {
                assert_eq!((a.status, a.code()), (*status, *code), "{what}: {}", a.body)
            }
            Invalid(fields) => {
                assert_eq!(
                    (a.status, a.code()),
                    (400, "validation/invalid_request"),
                    "{what}: {}",
                    a.body
                );
                let want: BTreeSet<String> = fields.iter().map(|f| f.to_string()).collect();
                assert_eq!(named_fields(&a), want, "{what}: {}", a.body);
            }
        }

        let Some(mutation) = &expected.mutation else {
            continue;
        };
        let mut broken: Value = serde_json::from_slice(body)
            .unwrap_or_else(|e| panic!("{what}: a seed with a mutation is JSON ({e})"));
        let object = broken.as_object_mut().unwrap();
        let field = match mutation {
            Remove(field) => {
                assert!(
                    object.remove(*field).is_some(),
                    "{what}: no {field} to remove"
                );
                field
            }
            Set(field, value) => {
                object.insert(field.to_string(), serde_json::from_str(value).unwrap());
                field
            }
        };
        let broken = broken.to_string();
        let a = world.send(route, Some("application/json"), broken.as_bytes());
        let raw = a.body.to_string();
        if let Some(problem) = bodies::answer_problem(a.status, raw.as_bytes()) {
            panic!("{what} with {mutation:?}: {problem}");
        }
        assert_eq!(
            (a.status, a.code()),
            (400, "validation/invalid_request"),
            "{what} with {mutation:?}: {}",
            a.body
        );
        assert!(
            named_fields(&a).contains(*field),
            "{what} with {mutation:?} does not name {field}: {}",
            a.body
        );
    }
    assert_eq!(replayed, seeds.len(), "every seed file was replayed");
}

// ---------------------------------------------------------------------------------------------
// jwt
// ---------------------------------------------------------------------------------------------

/// Whether each token seed verifies: only the ones signed with the tenant's real keys, with a
/// clean ES256 header.
const JWT: &[(&str, bool)] = &[
    ("0-raw-token", false),
    ("1-unsigned-access", false),
    ("2-signed-access", true),
    ("2-signed-access-retired-key", true),
    ("2-signed-alg-none", false),
    ("2-signed-jwk-header", false),
    ("4-unsigned-step-up", false),
    ("5-signed-step-up", true),
];

/// Every token seed through the verifier the server uses, with the fuzz target's harness (a
/// tenant's real keys, one retired) and checks (no forgery accepted, nothing accepted with a
/// bad header or claims), and each seed accepted or refused as it should be.
#[test]
fn every_jwt_seed_is_verified_as_the_target_demands() {
    let seeds = seed_files("jwt");
    same_names("jwt", &seeds, JWT.iter().map(|(n, _)| *n));
    let dir = tempfile::tempdir().unwrap();
    let harness = jwt::Harness::start(dir.path()).unwrap_or_else(|e| panic!("harness: {e}"));
    let mut replayed = 0;
    for (name, data) in &seeds {
        let (_, accepted) = JWT.iter().find(|(n, _)| n == name).unwrap();
        assert_eq!(harness.one(data), *accepted, "{name}");
        replayed += 1;
    }
    assert_eq!(replayed, seeds.len(), "every seed file was replayed");
}

// ---------------------------------------------------------------------------------------------
// admin_protocol
// ---------------------------------------------------------------------------------------------

/// Each admin seed's answer: `Ok` for a command that runs, `Err(code)` for one refused.
const ADMIN: &[(&str, Result<(), &str>)] = &[
    ("apikey-rotate", Ok(())),
    // Fault drills are off unless the operator turns them on.
    ("fault-stall", Err("admin/fault_injection_disabled")),
    ("keys-rotate", Ok(())),
    ("outbox-list", Ok(())),
    ("outbox-list-sms", Ok(())),
    ("purge-run", Ok(())),
    ("tenant-create", Ok(())),
    ("tenant-list", Ok(())),
    ("tenant-set-limits", Ok(())),
    ("tenant-set-tier", Ok(())),
    ("tenant-show", Ok(())),
    ("user-import", Ok(())),
];

/// Every admin socket seed, written to the socket of the real binary as the fuzz target
/// writes it, answered with one well-formed line, and run or refused as it should be.
#[test]
fn every_admin_protocol_seed_is_answered_as_the_target_demands() {
    let seeds = seed_files("admin_protocol");
    same_names("admin_protocol", &seeds, ADMIN.iter().map(|(n, _)| *n));
    let srv = TestServer::start();
    admin::create_seed_tenant(&srv.socket).unwrap_or_else(|e| panic!("{e}"));
    let mut replayed = 0;
    for (name, data) in &seeds {
        let (_, expected) = ADMIN.iter().find(|(n, _)| n == name).unwrap();
        let r = admin::one(&srv.socket, data)
            .unwrap_or_else(|| panic!("{name}: the seed is not UTF-8"));
        match expected {
            Ok(()) => assert!(r.ok, "{name}: {:?}", r.error.map(|e| e.code)),
            Err(code) => assert_eq!(
                r.error.as_ref().map(|e| e.code.as_str()),
                Some(*code),
                "{name}"
            ),
        }
        replayed += 1;
    }
    assert_eq!(replayed, seeds.len(), "every seed file was replayed");
}
