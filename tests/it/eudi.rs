//! Wallet sign-in and age verification (OpenID4VP 1.0) through the real binary: a
//! development verifier chain from the admin CLI, a test wallet holding PID credentials from
//! test issuers (SD-JWT VC and mdoc, each under its own X.509 root), the signed request object,
//! the encrypted `direct_post.jwt` answer, the secret result poll, token status lists served
//! by a local HTTP server, and every refusal a verifier owes.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use serde_json::{json, Map, Value};
use tessera_eudi::{jose::Alg, x509::Usage};
use tessera_testkit::wallet::{
    encrypt_answer, OpenedRequest, TestIssuer, TestWallet, AV_DOCTYPE, PID_DOCTYPE,
};

use crate::stub::{Route, StubResponse, StubServer};
use crate::support::*;

const ISSUER: &str = "https://pid.example";
const MDOC_ISSUER: &str = "PID mdoc issuer";
const APP: &str = "https://app.example";

/// A local HTTP server answering GETs from a table of paths; `down` makes it answer 503.
struct Files {
    base: String,
    table: Arc<Mutex<HashMap<String, (String, String)>>>,
    down: Arc<Mutex<bool>>,
    server: StubServer,
}

impl Files {
    fn start() -> Files {
        let table: Arc<Mutex<HashMap<String, (String, String)>>> = Arc::default();
        let down: Arc<Mutex<bool>> = Arc::default();
        let (files, is_down) = (table.clone(), down.clone());
        let server = StubServer::start(vec![Route::any(move |req| {
            if *is_down.lock().unwrap() {
                return StubResponse::text(503, "text/plain", "");
            }
            match files.lock().unwrap().get(&req.target()) {
                Some((ctype, body)) => StubResponse::text(200, ctype, body.as_str()),
                None => StubResponse::text(404, "text/plain", ""),
            }
        })]);
        Files {
            base: server.url().to_owned(),
            table,
            down,
            server,
        }
    }

    fn put(&self, path: &str, ctype: &str, body: String) {
        self.table
            .lock()
            .unwrap()
            .insert(path.to_owned(), (ctype.to_owned(), body));
    }

    fn hits(&self, path: &str) -> usize {
        let requests = self.server.requests();
        requests.iter().filter(|r| r.target() == path).count()
    }
}

/// A tenant with wallet sign-in on, a development verifier chain, and two test issuers.
pub(crate) struct World {
    pub(crate) srv: TestServer,
    pub(crate) slug: String,
    tenant_id: String,
    api_key: String,
    pub(crate) owner: Session,
    verifier_root: String,
    sd_issuer: TestIssuer,
    mdoc_issuer: TestIssuer,
}

pub(crate) fn pid_claims() -> Map<String, Value> {
    json!({
        "family_name": "Mustermann",
        "given_name": "Erika",
        "birthdate": "1984-01-26",
        "place_of_birth": {"locality": "Berlin", "country": "DE"},
        "email": "erika@pid.example",
        "age_equal_or_over": {"18": true},
        "nationalities": ["DE"],
    })
    .as_object()
    .unwrap()
    .clone()
}

fn mdoc_elements() -> Map<String, Value> {
    json!({
        "family_name": "Nowak",
        "given_name": "Anna",
        "birth_date": "1990-05-01",
        "birth_place": "Kraków",
        "age_over_18": true,
        "nationality": "PL",
    })
    .as_object()
    .unwrap()
    .clone()
}

impl World {
    fn start() -> World {
        Self::start_with(&[])
    }

    pub(crate) fn start_with(extra: &[(&str, &str)]) -> World {
        let mut env = vec![("TESSERA__EUDI__ALLOW_LOOPBACK_HTTP", "true")];
        env.extend_from_slice(extra);
        Self::on(TestServer::start_with(&env))
    }

    /// The world with mail delivered to an SMTP stub.
    fn start_with_mail() -> (SmtpStub, World) {
        let (smtp, srv) = start_with_mail(&[("TESSERA__EUDI__ALLOW_LOOPBACK_HTTP", "true")]);
        (smtp, Self::on(srv))
    }

    /// The tenant, its wallet configuration and the test issuers on `srv`.
    fn on(srv: TestServer) -> World {
        let signup = srv.signup("Wallet Co", "owner@example.com");
        let slug = signup["tenant"]["slug"].as_str().unwrap().to_owned();
        let tenant_id = signup["tenant"]["id"].as_str().unwrap().to_owned();
        let api_key = signup["api_key"].as_str().unwrap().to_owned();
        let owner = srv.login("owner@example.com", PASSWORD);
        let out = srv.admin(&["eudi", "dev-cert", &slug], "");
        let dev = out.json();
        assert_eq!(dev["development"], true, "{dev}");
        assert!(dev["client_id"].as_str().unwrap().starts_with("x509_hash:"));
        let (st, _) = srv.dash_json(
            "PUT",
            &format!("/v1/auth/dashboard/tenants/{slug}/settings/urls"),
            &owner,
            Some(&json!({"site_url": APP, "redirect_urls": [format!("{APP}/wallet-done")]})),
        );
        assert_eq!(st, 200);
        let world = World {
            verifier_root: dev["root_pem"].as_str().unwrap().to_owned(),
            sd_issuer: TestIssuer::new("pid.example", Alg::Es256, Usage::Issuer).unwrap(),
            mdoc_issuer: TestIssuer::new("mdoc.pid.example", Alg::EdDsa, Usage::MdocDocumentSigner)
                .unwrap(),
            srv,
            slug,
            tenant_id,
            api_key,
            owner,
        };
        world.configure(json!({}));
        world
    }

    /// The tenant's end-user API (its owner is the dashboard's `owner@example.com`).
    pub(crate) fn api(&self) -> UserApi {
        UserApi {
            base: self.srv.base.clone(),
            client: self.srv.client.clone(),
            api_key: self.api_key.clone(),
            slug: self.slug.clone(),
            tenant_id: self.tenant_id.clone(),
            owner: "owner@example.com".to_owned(),
        }
    }

    /// Sets the wallet configuration: both issuers as x5c anchors, with `over` merged in.
    fn configure(&self, over: Value) {
        let mut body = json!({
            "enabled": true,
            "requested_attributes": ["given_name", "family_name", "birth_date", "email"],
            "trust_anchors": [
                {
                    "issuer": ISSUER,
                    "memberState": "DE",
                    "allowedAlgs": ["ES256"],
                    "maxAssuranceLevel": "high",
                    "allowedFormats": ["dc+sd-jwt"],
                    "keyResolution": {"method": "x5c", "x5cRoots": [self.sd_issuer.root_b64()]},
                },
                {
                    "issuer": MDOC_ISSUER,
                    "memberState": "PL",
                    "allowedAlgs": ["EdDSA"],
                    "maxAssuranceLevel": "substantial",
                    "allowedFormats": ["mso_mdoc"],
                    "keyResolution": {"method": "x5c", "x5cRoots": [self.mdoc_issuer.root_b64()]},
                },
            ],
        });
        for (k, v) in over.as_object().unwrap() {
            body[k] = v.clone();
        }
        let (st, v) = self.srv.dash_json(
            "PUT",
            &format!("/v1/auth/dashboard/tenants/{}/settings/eudi", self.slug),
            &self.owner,
            Some(&body),
        );
        assert_eq!(st, 200, "{v}");
    }

    fn wallet_with_pid(&self, status: Option<(&str, u64)>) -> TestWallet {
        self.wallet_with_pid_of(&pid_claims(), status)
    }

    /// A wallet holding an SD-JWT PID of `claims` from the trusted issuer.
    pub(crate) fn wallet_with_pid_of(
        &self,
        claims: &Map<String, Value>,
        status: Option<(&str, u64)>,
    ) -> TestWallet {
        let mut w = TestWallet::new(&self.verifier_root).unwrap();
        let exp = tessera_testkit::wallet::now() + 86_400;
        w.sd_jwt = Some(
            self.sd_issuer
                .pid_sd_jwt(ISSUER, claims, &w.device.public_key(), exp, status)
                .unwrap(),
        );
        w
    }

    fn wallet_with_mdoc(&self, doctype: &str, elements: Map<String, Value>) -> TestWallet {
        let mut w = TestWallet::new(&self.verifier_root).unwrap();
        let cred = self
            .mdoc_issuer
            .mdoc(doctype, &elements, &w.device.public_key(), None)
            .unwrap();
        w.mdocs.push((doctype.to_owned(), cred));
        w
    }

    fn post(&self, path: &str, body: &Value) -> AuthAnswer {
        AuthAnswer::read(
            self.srv
                .client
                .post(self.srv.url(path))
                .header("x-api-key", &self.api_key)
                .json(body)
                .send()
                .unwrap(),
        )
    }

    pub(crate) fn initiate(&self, path: &str, body: Value) -> Value {
        self.post(path, &body).expect(200).clone()
    }

    pub(crate) fn fetch_request(&self, started: &Value) -> String {
        let r = self
            .srv
            .client
            .post(started["request_uri"].as_str().unwrap())
            .form(&[("wallet_nonce", "wn-1")])
            .send()
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.headers()["content-type"].to_str().unwrap(),
            "application/oauth-authz-req+jwt"
        );
        r.text().unwrap()
    }

    pub(crate) fn respond(&self, req: &OpenedRequest, form: String) -> AuthAnswer {
        AuthAnswer::read(
            self.srv
                .client
                .post(&req.response_uri)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form)
                .send()
                .unwrap(),
        )
    }

    pub(crate) fn result(&self, path: &str, state: &str, code: Option<&str>) -> AuthAnswer {
        let mut url = format!("{path}?state={state}");
        if let Some(c) = code {
            url.push_str(&format!("&response_code={c}"));
        }
        AuthAnswer::read(self.srv.get(&url, Some(&self.api_key)))
    }
}

#[test]
fn a_wallet_signs_in_with_an_sd_jwt_pid_across_devices() {
    let w = World::start();
    let wallet = w.wallet_with_pid(None);
    let started = w.initiate("/v1/auth/eudi/initiate", json!({}));
    let state = started["state"].as_str().unwrap();
    let client_id = started["client_id"].as_str().unwrap();
    assert!(started["expires_at"].is_string());
    assert!(started["response_uri"]
        .as_str()
        .unwrap()
        .ends_with("/v1/auth/eudi/response"));
    // The wallet URL names the request object by reference, and never the poll state.
    let wallet_url = started["wallet_url"].as_str().unwrap();
    assert!(wallet_url.starts_with("openid4vp://?client_id=x509_hash%3A"));
    assert!(wallet_url.contains("request_uri_method=post"));
    for public in [wallet_url, started["request_object"].as_str().unwrap()] {
        assert!(!public.contains(state), "the poll state leaked");
    }

    // The initiate answer's request object is the one the wallet fetches, and it checks out
    // against the development root; the POST variant echoes wallet_nonce.
    let inline = wallet
        .open(started["request_object"].as_str().unwrap())
        .unwrap();
    let jar = w.fetch_request(&started);
    assert!(!jar.contains(state));
    let req = wallet.open(&jar).unwrap();
    assert_eq!(req.claims["wallet_nonce"], "wn-1");
    assert_eq!(req.client_id, client_id);
    assert_eq!(req.nonce, inline.nonce);
    assert_eq!(req.claims["response_type"], "vp_token");
    assert_eq!(
        req.claims["client_metadata"]["encrypted_response_enc_values_supported"],
        json!(["A128GCM", "A256GCM"])
    );
    assert_eq!(req.query_ids(), vec!["pid_sd_jwt", "pid_mdoc"]);
    let get = w.srv.get(
        &format!(
            "/v1/auth/eudi/request/{}",
            started["request_uri"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
        ),
        None,
    );
    assert_eq!(get.status(), 200);
    // A wallet that trusts another root refuses the request.
    let stranger = TestWallet::new(&tessera_eudi::x509::to_pem(
        "CERTIFICATE",
        &w.sd_issuer.root_der,
    ))
    .unwrap();
    assert!(stranger.open(&jar).is_err());

    assert_eq!(
        w.result("/v1/auth/eudi/result", state, None).expect(200)["status"],
        "pending"
    );
    let answer = wallet.answer(&req).unwrap();
    let ack = w.respond(&req, answer.clone());
    assert!(ack.expect(200)["redirect_uri"].is_null());

    // The same answer again is a replay.
    w.respond(&req, answer)
        .expect_error(409, "eudi/response_replayed");

    // The poll hands out the session once.
    let first = w.result("/v1/auth/eudi/result", state, None);
    let body = first.expect(200);
    assert_eq!(body["status"], "consumed");
    assert_eq!(body["token_type"], "Bearer");
    let access = body["access_token"].as_str().unwrap();
    let claims = jwt_part(access, 1);
    assert_eq!(claims["acr"], "eidas_high");
    assert_eq!(claims["aal"], "AAL2");
    assert_eq!(claims["amr"], json!(["pop"]));
    let again = w.result("/v1/auth/eudi/result", state, None);
    assert_eq!(again.expect(200)["status"], "consumed");
    assert!(again.expect(200)["access_token"].is_null());

    // The token works, and its refresh keeps the wallet's acr.
    let me = w
        .srv
        .client
        .get(w.srv.url("/v1/auth/me"))
        .header("x-api-key", &w.api_key)
        .bearer_auth(access)
        .send()
        .unwrap();
    assert_eq!(me.status(), 200);
    let me: Value = me.json().unwrap();
    assert_eq!(me["email"], "erika@pid.example");
    // A PID's address is the holder's say-so: kept, not confirmed.
    assert_eq!(me["email_verified"], false);
    let refreshed = w.post(
        "/v1/auth/refresh",
        &json!({"refresh_token": body["refresh_token"]}),
    );
    let refreshed = UserTokens::from_answer(&refreshed);
    assert_eq!(refreshed.claims()["acr"], "eidas_high");

    // A second sign-in with the same PID is the same user.
    let again = w.initiate("/v1/auth/eudi/initiate", json!({}));
    let req2 = wallet.open(&w.fetch_request(&again)).unwrap();
    w.respond(&req2, wallet.answer(&req2).unwrap()).expect(200);
    let second = w.result(
        "/v1/auth/eudi/result",
        again["state"].as_str().unwrap(),
        None,
    );
    let second = jwt_part(second.expect(200)["access_token"].as_str().unwrap(), 1);
    assert_eq!(second["sub"], claims["sub"]);

    // A poll with a state nobody was given finds nothing.
    assert_eq!(
        w.result("/v1/auth/eudi/result", "made-up", None)
            .expect(200)["status"],
        "not_found"
    );
}

#[test]
fn a_wallet_signs_in_with_an_mdoc_pid_on_the_same_device() {
    let w = World::start();
    let wallet = w.wallet_with_mdoc(PID_DOCTYPE, mdoc_elements());
    w.post(
        "/v1/auth/eudi/initiate",
        &json!({"redirect_uri": "https://evil.example/back"}),
    )
    .expect_error(422, "eudi/redirect_not_allowed");
    let started = w.initiate(
        "/v1/auth/eudi/initiate",
        json!({"redirect_uri": format!("{APP}/wallet-done")}),
    );
    let state = started["state"].as_str().unwrap();
    let req = wallet.open(&w.fetch_request(&started)).unwrap();
    let ack = w.respond(&req, wallet.answer(&req).unwrap());
    let redirect = ack.expect(200)["redirect_uri"].as_str().unwrap().to_owned();
    let code = redirect
        .strip_prefix(&format!("{APP}/wallet-done#response_code="))
        .expect("the redirect carries a response code")
        .to_owned();
    // Without the code from the redirect (or with another), the poll gives nothing away.
    w.result("/v1/auth/eudi/result", state, None)
        .expect_error(400, "eudi/response_code_mismatch");
    w.result("/v1/auth/eudi/result", state, Some("nope"))
        .expect_error(400, "eudi/response_code_mismatch");
    let done = w.result("/v1/auth/eudi/result", state, Some(&code));
    let claims = jwt_part(done.expect(200)["access_token"].as_str().unwrap(), 1);
    // The mdoc anchor's level caps the acr.
    assert_eq!(claims["acr"], "eidas_substantial");
}

#[test]
fn presentations_that_fail_a_check_are_refused_and_leave_the_transaction_open() {
    let w = World::start();
    let wallet = w.wallet_with_pid(None);
    let started = w.initiate("/v1/auth/eudi/initiate", json!({}));
    let state = started["state"].as_str().unwrap();
    let req = wallet.open(&w.fetch_request(&started)).unwrap();
    let send = |vp: Value, st: &str| {
        let form = encrypt_answer(&req, &json!({"vp_token": vp, "state": st})).unwrap();
        w.respond(&req, form)
    };
    let sd = |aud: &str, nonce: &str| json!({"pid_sd_jwt": [wallet.sd_jwt_presentation(aud, nonce).unwrap()]});

    // Bound to another nonce or another verifier.
    send(sd(&req.client_id, "other-nonce"), &req.state).expect_error(400, "eudi/binding_mismatch");
    send(sd("x509_hash:someone-else", &req.nonce), &req.state)
        .expect_error(400, "eudi/binding_mismatch");
    // Another transaction's state.
    send(sd(&req.client_id, &req.nonce), "not-the-state")
        .expect_error(400, "eudi/invalid_response");
    // A disclosure altered after issuance.
    let good = wallet
        .sd_jwt_presentation(&req.client_id, &req.nonce)
        .unwrap();
    let mut parts: Vec<String> = good.split('~').map(str::to_owned).collect();
    let mut d = tessera_eudi::b64d(&parts[1]).unwrap();
    let last = d.len() - 3;
    d[last] ^= 0x01;
    parts[1] = tessera_eudi::b64e(d);
    send(json!({"pid_sd_jwt": [parts.join("~")]}), &req.state)
        .expect_error(400, "eudi/invalid_presentation");
    // An issuer that is no trust anchor's, and one that signs as a known issuer with its own
    // root.
    let rogue = TestIssuer::new("rogue.example", Alg::Es256, Usage::Issuer).unwrap();
    let mut fake = TestWallet::new(&w.verifier_root).unwrap();
    let exp = tessera_testkit::wallet::now() + 3600;
    fake.sd_jwt = Some(
        rogue
            .pid_sd_jwt(ISSUER, &pid_claims(), &fake.device.public_key(), exp, None)
            .unwrap(),
    );
    w.respond(&req, fake.answer(&req).unwrap())
        .expect_error(403, "eudi/untrusted_issuer");
    fake.sd_jwt = Some(
        rogue
            .pid_sd_jwt(
                "https://rogue.example",
                &pid_claims(),
                &fake.device.public_key(),
                exp,
                None,
            )
            .unwrap(),
    );
    w.respond(&req, fake.answer(&req).unwrap())
        .expect_error(403, "eudi/untrusted_issuer");
    // An expired credential.
    let mut old = TestWallet::new(&w.verifier_root).unwrap();
    old.sd_jwt = Some(
        w.sd_issuer
            .pid_sd_jwt(
                ISSUER,
                &pid_claims(),
                &old.device.public_key(),
                exp - 7200,
                None,
            )
            .unwrap(),
    );
    w.respond(&req, old.answer(&req).unwrap())
        .expect_error(400, "eudi/credential_expired");
    // An answer encrypted to a key that is not the transaction's.
    let other = w.initiate("/v1/auth/eudi/initiate", json!({}));
    let other_req = wallet.open(&w.fetch_request(&other)).unwrap();
    let mut crossed = req.clone();
    crossed.enc_jwk = other_req.enc_jwk.clone();
    let form = encrypt_answer(
        &crossed,
        &json!({"vp_token": sd(&req.client_id, &req.nonce), "state": req.state}),
    )
    .unwrap();
    w.respond(&req, form)
        .expect_error(400, "eudi/invalid_response");
    // Garbage.
    w.respond(&req, "response=abc.def".into())
        .expect_error(400, "eudi/invalid_response");
    w.respond(&req, String::new())
        .expect_error(400, "validation/invalid_request");

    // None of it ended the transaction: the genuine answer still signs in.
    assert_eq!(
        w.result("/v1/auth/eudi/result", state, None).expect(200)["status"],
        "pending"
    );
    w.respond(&req, wallet.answer(&req).unwrap()).expect(200);
    assert!(w.result("/v1/auth/eudi/result", state, None).expect(200)["access_token"].is_string());
    // The answered request object is gone.
    let again = w
        .srv
        .client
        .get(started["request_uri"].as_str().unwrap())
        .send()
        .unwrap();
    assert_eq!(again.status(), 404);
}

#[test]
fn status_lists_revoke_and_their_outage_follows_the_policy() {
    let files = Files::start();
    let w = World::start();
    let list = format!("{}/lists/1", files.base);
    // Entry 3 is revoked, entry 5 valid; the list may be cached 1 second.
    let token = w
        .sd_issuer
        .status_list(&list, &[0, 0, 0, 1, 0, 0], Some(1))
        .unwrap();
    files.put("/lists/1", "application/statuslist+jwt", token);

    let attempt = |wallet: &TestWallet| {
        let started = w.initiate("/v1/auth/eudi/initiate", json!({}));
        let req = wallet.open(&w.fetch_request(&started)).unwrap();
        w.respond(&req, wallet.answer(&req).unwrap())
    };
    let revoked = w.wallet_with_pid(Some((&list, 3)));
    attempt(&revoked).expect_error(403, "eudi/credential_revoked");
    let valid = w.wallet_with_pid(Some((&list, 5)));
    attempt(&valid).expect(200);
    assert!(files.hits("/lists/1") >= 1);

    // The list's server goes down: within max_status_staleness_seconds the cached list
    // serves (accept_with_cache, the default)...
    *files.down.lock().unwrap() = true;
    std::thread::sleep(std::time::Duration::from_millis(1100));
    attempt(&valid).expect(200);
    attempt(&revoked).expect_error(403, "eudi/credential_revoked");
    // ...`reject` refuses...
    w.configure(json!({"on_status_unavailable": "reject"}));
    attempt(&valid).expect_error(403, "eudi/status_unavailable");
    // ...a cache older than the staleness allowed is refused too...
    w.configure(json!({"max_status_staleness_seconds": 0}));
    attempt(&valid).expect_error(403, "eudi/status_unavailable");
    // ...and `accept_unverified` lets the credential through unchecked.
    w.configure(json!({"on_status_unavailable": "accept_unverified"}));
    attempt(&revoked).expect(200);
}

#[test]
fn age_verification_answers_a_single_use_token_that_registration_takes() {
    let w = World::start();
    let age_path = format!("/v1/auth/dashboard/tenants/{}/settings/eudi-age", w.slug);
    w.post("/v1/auth/eudi/age/initiate", &json!({}))
        .expect_error(403, "eudi/disabled");
    let (st, v) = w.srv.dash_json(
        "PUT",
        &age_path,
        &w.owner,
        Some(&json!({"age_verification_enabled": true, "supported_member_states": ["PL"]})),
    );
    assert_eq!(st, 200, "{v}");

    // A proof-of-age attestation from a PL issuer: determined, with a token, once.
    let wallet = w.wallet_with_mdoc(
        AV_DOCTYPE,
        json!({"age_over_18": true}).as_object().unwrap().clone(),
    );
    let started = w.initiate("/v1/auth/eudi/age/initiate", json!({}));
    let state = started["state"].as_str().unwrap();
    let req = wallet.open(&w.fetch_request(&started)).unwrap();
    assert!(req.query_ids().contains(&"av_mdoc".to_owned()));
    assert_eq!(
        w.result("/v1/auth/eudi/age/result", state, None)
            .expect(200)["status"],
        "pending"
    );
    w.respond(&req, wallet.answer(&req).unwrap()).expect(200);
    let done = w.result("/v1/auth/eudi/age/result", state, None);
    assert_eq!(done.expect(200)["status"], "determined");
    let token = done.expect(200)["age_verification_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let again = w.result("/v1/auth/eudi/age/result", state, None);
    assert_eq!(again.expect(200)["status"], "determined");
    assert!(again.expect(200)["age_verification_token"].is_null());
    // The login poll does not know an age transaction.
    assert_eq!(
        w.result("/v1/auth/eudi/result", state, None).expect(200)["status"],
        "not_found"
    );

    // Registration takes the token once; a second use (or a made-up one) is refused.
    let register = |email: &str, token: &str| {
        w.post(
            "/v1/auth/register",
            &json!({"email": email, "password": PASSWORD, "consent": true, "age_verification_token": token}),
        )
    };
    let first = register("kid@example.com", &token);
    assert!(first.status < 300, "{:?}", first.body);
    register("other@example.com", &token).expect_error(400, "validation/invalid_request");
    register("third@example.com", "made-up-token").expect_error(400, "validation/invalid_request");

    // A PID from a member state the tenant does not take (DE): fallback to the date of birth.
    let de = w.wallet_with_pid(None);
    let started = w.initiate("/v1/auth/eudi/age/initiate", json!({}));
    let req = de.open(&w.fetch_request(&started)).unwrap();
    w.respond(&req, de.answer(&req).unwrap()).expect(200);
    assert_eq!(
        w.result(
            "/v1/auth/eudi/age/result",
            started["state"].as_str().unwrap(),
            None
        )
        .expect(200)["status"],
        "fallback"
    );
}

#[test]
fn wallet_routes_refuse_when_off_unconfigured_or_unknown() {
    let srv = TestServer::start();
    let signup = srv.signup("Plain Co", "owner@example.com");
    let slug = signup["tenant"]["slug"].as_str().unwrap().to_owned();
    let key = signup["api_key"].as_str().unwrap().to_owned();
    let owner = srv.login("owner@example.com", PASSWORD);
    let initiate = || {
        AuthAnswer::read(
            srv.client
                .post(srv.url("/v1/auth/eudi/initiate"))
                .header("x-api-key", &key)
                .json(&json!({}))
                .send()
                .unwrap(),
        )
    };
    initiate().expect_error(403, "eudi/disabled");
    let (st, _) = srv.dash_json(
        "PUT",
        &format!("/v1/auth/dashboard/tenants/{slug}/settings/eudi"),
        &owner,
        Some(&json!({"enabled": true, "requested_attributes": ["given_name"]})),
    );
    assert_eq!(st, 200);
    initiate().expect_error(409, "eudi/verifier_not_configured");
    assert_eq!(
        srv.admin(&["eudi", "show", &slug], "").json()["configured"],
        false
    );
    let r = srv.get("/v1/auth/eudi/request/0000.nothing", None);
    assert_eq!(r.status(), 404);
    let r = srv.get("/eudi/0000.nothing", None);
    assert_eq!(r.status(), 410, "the QR page of no transaction is gone");
    AuthAnswer::read(srv.get("/v1/auth/eudi/result", Some(&key)))
        .expect_error(400, "validation/invalid_request");
    AuthAnswer::read(srv.get("/v1/auth/eudi/result?state=x", None))
        .expect_error(401, "auth/missing_api_key");
}

#[test]
fn the_admin_cli_sets_a_verifier_chain_only_when_it_holds_together() {
    let srv = TestServer::start();
    let signup = srv.signup("Cert Co", "owner@example.com");
    let slug = signup["tenant"]["slug"].as_str().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let dev = tessera_eudi::x509::dev_chain("Cert Co verifier", "verifier.example", 90).unwrap();
    let other = tessera_eudi::x509::dev_chain("Other", "other.example", 90).unwrap();
    let write = |name: &str, label: &str, der: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, tessera_eudi::x509::to_pem(label, der)).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let key = write("key.pem", "PRIVATE KEY", &dev.leaf_key_pkcs8);
    let chain = write("chain.pem", "CERTIFICATE", &dev.leaf_der);
    let wrong_key = write("other.pem", "PRIVATE KEY", &other.leaf_key_pkcs8);
    let root_only = write("root.pem", "CERTIFICATE", &dev.root_der);

    let refused = srv.admin(
        &[
            "eudi",
            "set-verifier-cert",
            &slug,
            "--key-file",
            &wrong_key,
            "--chain-file",
            &chain,
        ],
        "",
    );
    assert!(
        !refused.status.success(),
        "a key that is not the leaf's was taken"
    );
    let refused = srv.admin(
        &[
            "eudi",
            "set-verifier-cert",
            &slug,
            "--key-file",
            &key,
            "--chain-file",
            &root_only,
        ],
        "",
    );
    assert!(!refused.status.success(), "a self-signed leaf was taken");
    let set = srv.admin(
        &[
            "eudi",
            "set-verifier-cert",
            &slug,
            "--key-file",
            &key,
            "--chain-file",
            &chain,
        ],
        "",
    );
    let v = set.json();
    assert_eq!(v["development"], false);
    assert_eq!(
        v["client_id"],
        format!("x509_hash:{}", tessera_eudi::x509::x509_hash(&dev.leaf_der))
    );
    // It survives a restart (sealed in the tenant's store).
    let mut srv = srv;
    srv.restart();
    let shown = srv.admin(&["eudi", "show", &slug], "").json();
    assert_eq!(shown["client_id"], v["client_id"]);
}

/// A JWK with a `kid`.
fn with_kid(mut jwk: Value, kid: &str) -> Value {
    jwk["kid"] = json!(kid);
    jwk
}

impl World {
    /// An SD-JWT anchor for `issuer` whose keys are found by `key_resolution`.
    fn sd_anchor(issuer: &str, key_resolution: Value) -> Value {
        json!({
            "issuer": issuer,
            "memberState": "DE",
            "allowedAlgs": ["ES256"],
            "maxAssuranceLevel": "high",
            "allowedFormats": ["dc+sd-jwt"],
            "keyResolution": key_resolution,
        })
    }

    /// A wallet holding a PID of `iss` signed by `issuer`, whose header names the key by `kid`.
    fn wallet_with_kid_pid(&self, issuer: &TestIssuer, kid: &str, iss: &str) -> TestWallet {
        let mut w = TestWallet::new(&self.verifier_root).unwrap();
        let exp = tessera_testkit::wallet::now() + 86_400;
        w.sd_jwt = Some(
            issuer
                .pid_sd_jwt_with_kid(kid, iss, &pid_claims(), &w.device.public_key(), exp)
                .unwrap(),
        );
        w
    }

    /// A new transaction answered by `wallet`: the wallet's acknowledgement.
    fn attempt(&self, wallet: &TestWallet) -> AuthAnswer {
        let started = self.initiate("/v1/auth/eudi/initiate", json!({}));
        let req = wallet.open(&self.fetch_request(&started)).unwrap();
        self.respond(&req, wallet.answer(&req).unwrap())
    }

    /// A sign-in by `wallet` that must succeed: the access token's claims.
    #[track_caller]
    pub(crate) fn sign_in(&self, wallet: &TestWallet) -> Value {
        let started = self.initiate("/v1/auth/eudi/initiate", json!({}));
        let req = wallet.open(&self.fetch_request(&started)).unwrap();
        self.respond(&req, wallet.answer(&req).unwrap()).expect(200);
        let done = self.result(
            "/v1/auth/eudi/result",
            started["state"].as_str().unwrap(),
            None,
        );
        let body = done.expect(200);
        assert_eq!(body["status"], "consumed", "{body}");
        let access = body["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no access token in {body}"));
        jwt_part(access, 1)
    }

    /// `/v1/auth/me` with an access token.
    fn me(&self, access: &str) -> AuthAnswer {
        AuthAnswer::read(
            self.srv
                .client
                .get(self.srv.url("/v1/auth/me"))
                .header("x-api-key", &self.api_key)
                .bearer_auth(access)
                .send()
                .unwrap(),
        )
    }

    fn users_path(&self, rest: &str) -> String {
        format!("/v1/auth/dashboard/tenants/{}/users{rest}", self.slug)
    }
}

#[test]
fn an_issuer_found_by_its_jwks_uri_signs_in() {
    let files = Files::start();
    let w = World::start();
    // The JWKS holds another key first: the header's kid, not the position, picks the key.
    let other = TestIssuer::new("other.example", Alg::Es256, Usage::Issuer).unwrap();
    let jwks = json!({"keys": [
        with_kid(other.public_jwk(), "other-1"),
        with_kid(w.sd_issuer.public_jwk(), "pid-2025"),
    ]});
    files.put("/jwks", "application/json", jwks.to_string());
    w.configure(json!({"trust_anchors": [World::sd_anchor(
        ISSUER,
        json!({"method": "jwks_uri", "jwksUri": format!("{}/jwks", files.base)}),
    )]}));

    let wallet = w.wallet_with_kid_pid(&w.sd_issuer, "pid-2025", ISSUER);
    let first = w.sign_in(&wallet);
    assert_eq!(first["acr"], "eidas_high");
    let again = w.sign_in(&wallet);
    assert_eq!(again["sub"], first["sub"]);
    // Two sign-ins, one fetch: the key set is cached.
    assert_eq!(files.hits("/jwks"), 1);

    // A key whose kid is not in the set is no issuer key.
    let rogue = TestIssuer::new("rogue.example", Alg::Es256, Usage::Issuer).unwrap();
    let unknown = w.wallet_with_kid_pid(&rogue, "rotated-away", ISSUER);
    w.attempt(&unknown)
        .expect_error(403, "eudi/untrusted_issuer");
    // Naming the genuine kid does not make a rogue key's signature the issuer's.
    let forged = w.wallet_with_kid_pid(&rogue, "pid-2025", ISSUER);
    w.attempt(&forged)
        .expect_error(400, "eudi/invalid_presentation");
    // Nor does the issuer's own key under another key's kid.
    let crossed = w.wallet_with_kid_pid(&w.sd_issuer, "other-1", ISSUER);
    w.attempt(&crossed)
        .expect_error(400, "eudi/invalid_presentation");
    // The genuine one still signs in.
    assert_eq!(w.sign_in(&wallet)["sub"], first["sub"]);
}

#[test]
fn an_issuer_found_by_did_web_signs_in() {
    let files = Files::start();
    let w = World::start();
    let did = format!("did:web:127.0.0.1%3A{}", port_of(&files.base));
    let other = TestIssuer::new("other.example", Alg::Es256, Usage::Issuer).unwrap();
    let method = |fragment: &str, jwk: Value| {
        json!({
            "id": format!("{did}{fragment}"),
            "type": "JsonWebKey2020",
            "controller": did,
            "publicKeyJwk": jwk,
        })
    };
    let doc = json!({
        "@context": ["https://www.w3.org/ns/did/v1"],
        "id": did,
        "verificationMethod": [
            method("#key-0", other.public_jwk()),
            method("#key-1", w.sd_issuer.public_jwk()),
        ],
        "assertionMethod": [format!("{did}#key-0"), format!("{did}#key-1")],
    });
    files.put(
        "/.well-known/did.json",
        "application/did+json",
        doc.to_string(),
    );
    w.configure(json!({"trust_anchors": [World::sd_anchor(
        &did,
        json!({"method": "did_web", "did": did}),
    )]}));

    let wallet = w.wallet_with_kid_pid(&w.sd_issuer, &format!("{did}#key-1"), &did);
    let claims = w.sign_in(&wallet);
    assert_eq!(claims["acr"], "eidas_high");
    assert!(files.hits("/.well-known/did.json") >= 1);

    // A kid naming a method the document does not have, or the right fragment of another
    // DID, is refused.
    let missing = w.wallet_with_kid_pid(&w.sd_issuer, &format!("{did}#key-9"), &did);
    w.attempt(&missing)
        .expect_error(403, "eudi/untrusted_issuer");
    let elsewhere = w.wallet_with_kid_pid(&w.sd_issuer, "did:web:elsewhere.example#key-1", &did);
    w.attempt(&elsewhere)
        .expect_error(403, "eudi/untrusted_issuer");
    // A kid naming the document's other method: that key did not sign.
    let crossed = w.wallet_with_kid_pid(&w.sd_issuer, &format!("{did}#key-0"), &did);
    w.attempt(&crossed)
        .expect_error(400, "eudi/invalid_presentation");
    // A rogue key under the genuine method's id.
    let rogue = TestIssuer::new("rogue.example", Alg::Es256, Usage::Issuer).unwrap();
    let forged = w.wallet_with_kid_pid(&rogue, &format!("{did}#key-1"), &did);
    w.attempt(&forged)
        .expect_error(400, "eudi/invalid_presentation");
    assert_eq!(w.sign_in(&wallet)["sub"], claims["sub"]);
}

#[test]
fn an_unanswered_request_expires() {
    let w = World::start_with(&[("TESSERA__EUDI__REQUEST_TTL_SECS", "1")]);
    let wallet = w.wallet_with_pid(None);
    let started = w.initiate("/v1/auth/eudi/initiate", json!({}));
    let state = started["state"].as_str().unwrap();
    // The request object given with the initiate answer says how long it lives.
    let req = wallet
        .open(started["request_object"].as_str().unwrap())
        .unwrap();
    let lifetime = req.claims["exp"].as_i64().unwrap() - req.claims["iat"].as_i64().unwrap();
    assert!((0..=1).contains(&lifetime), "exp - iat = {lifetime}");

    assert!(
        eventually(std::time::Duration::from_secs(15), || {
            w.result("/v1/auth/eudi/result", state, None).expect(200)["status"] == "expired"
        }),
        "the transaction never expired"
    );
    let request_uri = started["request_uri"].as_str().unwrap();
    let get = w.srv.client.get(request_uri).send().unwrap();
    assert_eq!(get.status(), 404);
    let post = w
        .srv
        .client
        .post(request_uri)
        .form(&[("wallet_nonce", "wn-1")])
        .send()
        .unwrap();
    assert_eq!(post.status(), 404);
    w.respond(&req, wallet.answer(&req).unwrap())
        .expect_error(404, "eudi/request_not_found");
    // The late answer signed nobody in.
    assert_eq!(
        w.result("/v1/auth/eudi/result", state, None).expect(200)["status"],
        "expired"
    );
}

#[test]
fn mdoc_answers_bound_elsewhere_are_refused() {
    let w = World::start();
    let wallet = w.wallet_with_mdoc(PID_DOCTYPE, mdoc_elements());
    let started = w.initiate("/v1/auth/eudi/initiate", json!({}));
    let state = started["state"].as_str().unwrap();
    let req = wallet.open(&w.fetch_request(&started)).unwrap();
    let other = w.initiate("/v1/auth/eudi/initiate", json!({}));
    let other_req = wallet.open(&w.fetch_request(&other)).unwrap();

    // Presented over another transaction's transcript, sent (encrypted) to this one.
    let elsewhere = wallet
        .mdoc_presentation(PID_DOCTYPE, &other_req.transcript().unwrap())
        .unwrap();
    let form = encrypt_answer(
        &req,
        &json!({"vp_token": {"pid_mdoc": [elsewhere]}, "state": req.state}),
    )
    .unwrap();
    w.respond(&req, form)
        .expect_error(400, "eudi/binding_mismatch");

    // An mdoc whose document signer chains to no anchor's root.
    let rogue =
        TestIssuer::new("rogue.mdoc.example", Alg::EdDsa, Usage::MdocDocumentSigner).unwrap();
    let mut fake = TestWallet::new(&w.verifier_root).unwrap();
    let cred = rogue
        .mdoc(
            PID_DOCTYPE,
            &mdoc_elements(),
            &fake.device.public_key(),
            None,
        )
        .unwrap();
    fake.mdocs.push((PID_DOCTYPE.to_owned(), cred));
    w.respond(&req, fake.answer(&req).unwrap())
        .expect_error(403, "eudi/untrusted_issuer");

    // Neither ended the transaction; the genuine answer, bound to it, signs in.
    w.respond(&req, wallet.answer(&req).unwrap()).expect(200);
    let done = w.result("/v1/auth/eudi/result", state, None);
    assert!(done.expect(200)["access_token"].is_string());
    // The other transaction still waits for its own answer.
    assert_eq!(
        w.result(
            "/v1/auth/eudi/result",
            other["state"].as_str().unwrap(),
            None
        )
        .expect(200)["status"],
        "pending"
    );
}

#[test]
fn the_assurance_floor_refuses_lower_levels() {
    let w = World::start();
    let mdoc = w.wallet_with_mdoc(PID_DOCTYPE, mdoc_elements());
    let sd = w.wallet_with_pid(None);
    w.configure(json!({"required_assurance_floor": {"kind": "eidas", "value": "high"}}));
    // The mdoc anchor caps at substantial: below the floor.
    w.attempt(&mdoc)
        .expect_error(403, "eudi/assurance_below_floor");
    assert_eq!(w.sign_in(&sd)["acr"], "eidas_high");

    // AAL2 is what substantial gives.
    w.configure(json!({"required_assurance_floor": {"kind": "aal", "value": "aal2"}}));
    let claims = w.sign_in(&mdoc);
    assert_eq!(claims["acr"], "eidas_substantial");
    assert_eq!(claims["aal"], "AAL2");
    assert_eq!(w.sign_in(&sd)["acr"], "eidas_high");
}

#[test]
fn erasing_a_user_unlinks_the_wallet() {
    let w = World::start();
    let wallet = w.wallet_with_pid(None);
    let started = w.initiate("/v1/auth/eudi/initiate", json!({}));
    let req = wallet.open(&w.fetch_request(&started)).unwrap();
    w.respond(&req, wallet.answer(&req).unwrap()).expect(200);
    let first = w.result(
        "/v1/auth/eudi/result",
        started["state"].as_str().unwrap(),
        None,
    );
    let access = first.expect(200)["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let old = jwt_part(&access, 1)["sub"].as_str().unwrap().to_owned();
    assert_eq!(w.me(&access).expect(200)["email"], "erika@pid.example");
    assert_eq!(w.sign_in(&wallet)["sub"], old.as_str());

    // Erasure by the tenant's admin (who re-authenticates for it).
    w.srv.reauth(&w.owner, PASSWORD);
    let (st, body) = w
        .srv
        .dash_json("DELETE", &w.users_path(&format!("/{old}")), &w.owner, None);
    assert_eq!(st, 204, "{body}");
    let (st, _) = w
        .srv
        .dash_json("GET", &w.users_path(&format!("/{old}")), &w.owner, None);
    assert_eq!(st, 404);
    w.me(&access).expect_error(401, "auth/invalid_token");

    // The same wallet again: a new account, not the erased one.
    let again = w.sign_in(&wallet);
    let new = again["sub"].as_str().unwrap();
    assert_ne!(new, old);
    let (st, user) = w
        .srv
        .dash_json("GET", &w.users_path(&format!("/{new}")), &w.owner, None);
    assert_eq!(st, 200, "{user}");
    assert_eq!(user["email"], "erika@pid.example");
    // And it stays linked to the new one.
    assert_eq!(w.sign_in(&wallet)["sub"], new);
}

/// A PID's e-mail address never opens the account that holds it, whatever the tenant's
/// automatic linking says (PID issuers need not check addresses, so that would hand accounts to
/// whoever puts someone's address in a wallet), and no second account takes the address.
#[test]
fn an_address_another_account_holds_is_never_taken_over() {
    let w = World::start();
    let email = "erika@pid.example";
    let registered = w.post(
        "/v1/auth/register",
        &json!({"email": email, "password": USER_PASSWORD, "consent": true}),
    );
    assert_eq!(registered.status, 200, "{}", registered.body);
    let (st, page) = w
        .srv
        .dash_json("GET", &w.users_path("?email=erika"), &w.owner, None);
    assert_eq!(st, 200, "{page}");
    let id = page["data"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(page["data"][0]["email"], email);
    let link = |on: bool| {
        let out = patch_security(
            &w.srv,
            &w.owner,
            &w.slug,
            json!({"automatic_account_linking_enabled": on}),
        );
        assert_eq!(out["automatic_account_linking_enabled"], on, "{out}");
    };
    let wallet = w.wallet_with_pid(None);

    // An unconfirmed address never links, even with automatic linking on.
    link(true);
    w.attempt(&wallet).expect_error(403, "eudi/email_exists");

    // The admin confirms it (which hands the account to the address's owner: the password
    // goes, a reset link is mailed): with automatic linking off the wallet is still refused...
    let (st, body) = w.srv.dash_json(
        "PATCH",
        &w.users_path(&format!("/{id}")),
        &w.owner,
        Some(&json!({"email_verified": true})),
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["email_verified"], true, "{body}");
    link(false);
    w.attempt(&wallet).expect_error(403, "eudi/email_exists");
    let (_, page) = w
        .srv
        .dash_json("GET", &w.users_path("?email=erika"), &w.owner, None);
    assert_eq!(page["data"].as_array().unwrap().len(), 1, "{page}");

    // ...and with it on, the same.
    link(true);
    w.attempt(&wallet).expect_error(403, "eudi/email_exists");
    let (_, page) = w
        .srv
        .dash_json("GET", &w.users_path("?email=erika"), &w.owner, None);
    assert_eq!(page["data"].as_array().unwrap().len(), 1, "{page}");
    assert_eq!(page["data"][0]["id"], id.as_str());
    // The account is the same one, still not the wallet's.
    let (st, user) = w
        .srv
        .dash_json("GET", &w.users_path(&format!("/{id}")), &w.owner, None);
    assert_eq!(st, 200, "{user}");
    assert_eq!(user["email"], email, "{user}");
}

/// An issuer's certificate vouches only for the issuer it names: a credential claiming
/// another anchor's issuer, though signed under that anchor's root, is refused. And an mdoc
/// answer carries the one document asked for: a second document (which another anchor may
/// have verified) is refused rather than lending its anchor to the first.
#[test]
fn certificates_vouch_for_their_own_issuer_and_mdoc_answers_for_one_document() {
    let w = World::start();
    let mut body = json!([]);
    for (issuer, root) in [
        (ISSUER, w.sd_issuer.root_b64()),
        ("https://other.example", w.sd_issuer.root_b64()),
    ] {
        body.as_array_mut().unwrap().push(json!({
            "issuer": issuer,
            "allowedAlgs": ["ES256"],
            "allowedFormats": ["dc+sd-jwt"],
            "keyResolution": {"method": "x5c", "x5cRoots": [root]},
        }));
    }
    body.as_array_mut().unwrap().push(json!({
        "issuer": MDOC_ISSUER,
        "allowedAlgs": ["EdDSA"],
        "maxAssuranceLevel": "substantial",
        "allowedFormats": ["mso_mdoc"],
        "keyResolution": {"method": "x5c", "x5cRoots": [w.mdoc_issuer.root_b64()]},
    }));
    w.configure(json!({ "trust_anchors": body }));
    // pid.example's certificate, claiming to be other.example.
    let mut posing = TestWallet::new(&w.verifier_root).unwrap();
    let exp = tessera_testkit::wallet::now() + 3600;
    posing.sd_jwt = Some(
        w.sd_issuer
            .pid_sd_jwt(
                "https://other.example",
                &pid_claims(),
                &posing.device.public_key(),
                exp,
                None,
            )
            .unwrap(),
    );
    w.attempt(&posing)
        .expect_error(403, "eudi/untrusted_issuer");
    // The same certificate under its own name signs in.
    w.sign_in(&w.wallet_with_pid(None));

    // Two genuine documents in one answer.
    let mut wallet = w.wallet_with_mdoc(PID_DOCTYPE, mdoc_elements());
    let av = w
        .mdoc_issuer
        .mdoc(
            AV_DOCTYPE,
            json!({"age_over_18": true}).as_object().unwrap(),
            &wallet.device.public_key(),
            None,
        )
        .unwrap();
    wallet.mdocs.push((AV_DOCTYPE.to_owned(), av));
    let started = w.initiate("/v1/auth/eudi/initiate", json!({}));
    let req = wallet.open(&w.fetch_request(&started)).unwrap();
    let transcript = req.transcript().unwrap();
    let one = wallet.mdoc_presentation(PID_DOCTYPE, &transcript).unwrap();
    let other = wallet.mdoc_presentation(AV_DOCTYPE, &transcript).unwrap();
    let both = merge_documents(&one, &other);
    let form = encrypt_answer(
        &req,
        &json!({"vp_token": {"pid_mdoc": [both]}, "state": req.state}),
    )
    .unwrap();
    w.respond(&req, form)
        .expect_error(400, "eudi/invalid_presentation");
    // The PID alone is fine.
    w.respond(&req, wallet.answer(&req).unwrap()).expect(200);
}

/// One DeviceResponse (base64url CBOR) holding the documents of both.
fn merge_documents(a: &str, b: &str) -> String {
    let read = |t: &str| -> ciborium::Value {
        ciborium::from_reader(tessera_eudi::b64d(t).unwrap().as_slice()).unwrap()
    };
    let docs_of = |v: &ciborium::Value| -> Vec<ciborium::Value> {
        v.as_map()
            .unwrap()
            .iter()
            .find(|(k, _)| k.as_text() == Some("documents"))
            .unwrap()
            .1
            .as_array()
            .unwrap()
            .clone()
    };
    let mut first = read(a);
    let mut docs = docs_of(&first);
    docs.extend(docs_of(&read(b)));
    for (k, v) in first.as_map_mut().unwrap() {
        if k.as_text() == Some("documents") {
            *v = ciborium::Value::Array(docs.clone());
        }
    }
    let mut out = Vec::new();
    ciborium::into_writer(&first, &mut out).unwrap();
    tessera_eudi::b64e(out)
}

/// A wallet's error answer (not encrypted, naming the request by its `state`): an age
/// verification falls back at once, a sign-in stays open for another try, and one that names
/// no transaction is answered the same.
#[test]
fn a_declining_wallet_ends_an_age_check_and_leaves_a_sign_in_open() {
    let w = World::start();
    let (st, v) = w.srv.dash_json(
        "PUT",
        &format!("/v1/auth/dashboard/tenants/{}/settings/eudi-age", w.slug),
        &w.owner,
        Some(&json!({"age_verification_enabled": true})),
    );
    assert_eq!(st, 200, "{v}");
    let wallet = w.wallet_with_pid(None);
    let decline = |req: &OpenedRequest, state: &str| {
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("error", "access_denied")
            .append_pair("state", state)
            .finish();
        w.respond(req, form)
    };
    for (path, result, after) in [
        (
            "/v1/auth/eudi/age/initiate",
            "/v1/auth/eudi/age/result",
            "fallback",
        ),
        ("/v1/auth/eudi/initiate", "/v1/auth/eudi/result", "pending"),
    ] {
        let started = w.initiate(path, json!({}));
        let req = wallet.open(&w.fetch_request(&started)).unwrap();
        // A made-up state changes nothing, and is answered alike.
        assert!(decline(&req, &format!("{}x", req.state)).expect(200)["redirect_uri"].is_null());
        let poll = |state: &str| w.result(result, state, None).expect(200)["status"].clone();
        let state = started["state"].as_str().unwrap();
        assert_eq!(poll(state), "pending");
        decline(&req, &req.state).expect(200);
        assert_eq!(poll(state), after, "{path}");
    }
}

/// The wallets' routes need no key and each costs the server a signature or a key
/// agreement: one client address gets 120 calls a minute, then 429 with `Retry-After`.
#[test]
fn the_wallet_routes_limit_each_address() {
    let w = World::start();
    let started = w.initiate("/v1/auth/eudi/initiate", json!({}));
    let uri = started["request_uri"].as_str().unwrap();
    for n in 0..120 {
        let r = w.srv.client.get(uri).send().unwrap();
        assert_eq!(r.status(), 200, "call {n}");
    }
    let refused = AuthAnswer::read(w.srv.client.get(uri).send().unwrap());
    refused.expect_error(429, "auth/rate_limited");
    assert!(refused.header("retry-after").is_some());
    // The answer route counts too.
    let refused = AuthAnswer::read(
        w.srv
            .client
            .post(started["response_uri"].as_str().unwrap())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!(
                "response={}",
                "eyJraWQiOiJ4In0.a.b.c.d".replace(
                    "eyJraWQiOiJ4In0",
                    &tessera_eudi::b64e(
                        json!({"kid": uri.rsplit('/').next().unwrap()}).to_string()
                    )
                )
            ))
            .send()
            .unwrap(),
    );
    refused.expect_error(429, "auth/rate_limited");
}

/// A wallet world with mail, the tenant's wallet age verification on and minor protection
/// set: a guardian may prove adulthood with the wallet.
fn guardian_world() -> (SmtpStub, World) {
    use crate::guardian::{minors_body, minors_path};
    let smtp = SmtpStub::start();
    let mut env = smtp.env();
    env.push(("TESSERA__EUDI__ALLOW_LOOPBACK_HTTP".into(), "true".into()));
    let w = World::start_with(&env_refs(&env));
    let (st, v) = w.srv.dash_json(
        "PUT",
        &format!("/v1/auth/dashboard/tenants/{}/settings/eudi-age", w.slug),
        &w.owner,
        Some(&json!({"age_verification_enabled": true, "supported_member_states": ["PL"]})),
    );
    assert_eq!(st, 200, "{v}");
    let (st, v) = w
        .srv
        .dash_json("PUT", &minors_path(&w.slug), &w.owner, Some(&minors_body()));
    assert_eq!(st, 200, "{v}");
    (smtp, w)
}

#[test]
fn a_guardian_proves_adulthood_with_the_wallet_and_the_receipt_says_so() {
    use crate::guardian::{Guardian, GUARDIAN, KID_DOB};
    let (smtp, w) = guardian_world();
    let age_wallet = |over: bool| {
        w.wallet_with_mdoc(
            AV_DOCTYPE,
            json!({ "age_over_18": over }).as_object().unwrap().clone(),
        )
    };

    // A wallet's proof of 18 or over registers an adult without a date of birth; a proof of
    // under 18 (the consent age is 16) and no date: held, the safe side.
    let age_token = |over: bool| {
        let wallet = age_wallet(over);
        let started = w.initiate("/v1/auth/eudi/age/initiate", json!({}));
        let req = wallet.open(&w.fetch_request(&started)).unwrap();
        w.respond(&req, wallet.answer(&req).unwrap()).expect(200);
        let done = w.result(
            "/v1/auth/eudi/age/result",
            started["state"].as_str().unwrap(),
            None,
        );
        done.expect(200)["age_verification_token"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let register = |email: &str, extra: Value| {
        let mut body = json!({"email": email, "password": PASSWORD, "consent": true});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        w.post("/v1/auth/register", &body).expect(200).clone()
    };
    let ask = |email: &str| {
        w.post(
            "/v1/auth/parental-consent",
            &json!({"email": email, "password": PASSWORD, "guardian_email": GUARDIAN}),
        )
    };
    register(
        "adult@example.com",
        json!({"age_verification_token": age_token(true)}),
    );
    ask("adult@example.com").expect_error(409, "guardian/consent_not_pending");
    register(
        "teen@example.com",
        json!({"age_verification_token": age_token(false)}),
    );
    ask("teen@example.com").expect(202);
    register("kid@example.com", json!({"date_of_birth": KID_DOB}));
    ask("kid@example.com").expect(202);
    let link = |child: &str| {
        let mail = smtp.wait_for(&w.slug, "guardian_consent", GUARDIAN, 2).text;
        let all = smtp.mails_of(&w.slug, "guardian_consent", GUARDIAN);
        let m = all
            .iter()
            .find(|m| m.text.contains(child))
            .unwrap_or_else(|| panic!("{mail}"));
        m.token_after("/v1/guardian/consent?token=").unwrap()
    };
    let kid_token = link("kid@example.com");
    let teen_token = link("teen@example.com");

    // The consent context offers the wallet; an under-18 wallet proves nothing.
    let mut g = Guardian::new(&w.srv);
    let prove = |g: &mut Guardian, token: &str, over: bool| {
        let ctx = g
            .get_json(&format!("/v1/guardian/consent?token={token}"))
            .expect(200)
            .clone();
        assert_eq!(ctx["wallet_available"], true, "{ctx}");
        let csrf = ctx["csrf"].as_str().unwrap().to_owned();
        g.post_json(
            "/v1/guardian/consent/wallet",
            &json!({"token": token, "csrf": "forged"}),
        )
        .expect_error(403, "guardian/csrf_failed");
        let started = g
            .post_json(
                "/v1/guardian/consent/wallet",
                &json!({"token": token, "csrf": csrf}),
            )
            .expect(200)
            .clone();
        assert!(started["page_url"].as_str().unwrap().contains("/eudi/"));
        let wallet = age_wallet(over);
        let req = wallet.open(&w.fetch_request(&started)).unwrap();
        w.respond(&req, wallet.answer(&req).unwrap()).expect(200);
        let after = g
            .get_json(&format!("/v1/guardian/consent?token={token}"))
            .expect(200)
            .clone();
        (after, csrf)
    };
    let (after, _) = prove(&mut g, &teen_token, false);
    assert_eq!(after["adult_proven"], false);
    let (after, csrf) = prove(&mut g, &kid_token, true);
    assert_eq!(after["adult_proven"], true);

    // Accepted: the receipt records the wallet.
    let r = g.post_json(
        "/v1/guardian/consent",
        &json!({"token": kid_token, "action": "accept", "csrf": csrf, "attestation": true}),
    );
    assert_eq!(r.expect(200)["child_account_status"], "active");
    w.post(
        "/v1/guardian/management-link",
        &json!({"child_email": "kid@example.com", "guardian_email": GUARDIAN}),
    )
    .expect(202);
    let portal = smtp
        .wait_for(&w.slug, "guardian_portal", GUARDIAN, 1)
        .token_after("/v1/guardian/portal?token=")
        .unwrap();
    let ctx = g
        .get_json(&format!("/v1/guardian/portal?token={portal}"))
        .expect(200)
        .clone();
    assert_eq!(
        ctx["consent_receipt"]["consent_method"], "eudi_wallet",
        "{ctx}"
    );
    // A link already answered starts no wallet check.
    g.post_json(
        "/v1/guardian/consent/wallet",
        &json!({"token": kid_token, "csrf": csrf}),
    )
    .expect_error(400, "guardian/invalid_token");
}

/// A wallet whose PID carries someone else's address makes an account holding it unconfirmed;
/// when the address's owner proves it (a reset link), the wallet is unlinked: its next sign-in
/// does not reach her account.
#[test]
fn a_wallet_linked_to_an_unconfirmed_address_is_unlinked_when_its_owner_recovers_it() {
    let (smtp, w) = World::start_with_mail();
    let victim = "erika@pid.example";
    // The attacker's wallet, with a PID whose (self-asserted) address is the victim's.
    let wallet = w.wallet_with_pid(None);
    let first = w.sign_in(&wallet);
    let id = first["sub"].as_str().unwrap().to_owned();
    let (st, user) = w
        .srv
        .dash_json("GET", &w.users_path(&format!("/{id}")), &w.owner, None);
    assert_eq!(st, 200, "{user}");
    assert_eq!(
        (&user["email"], &user["email_verified"]),
        (&json!(victim), &json!(false)),
        "{user}"
    );
    // The victim cannot register the address: the mail she gets offers a reset instead,
    // which she follows.
    w.post(
        "/v1/auth/register",
        &json!({"email": victim, "password": USER_PASSWORD, "consent": true}),
    )
    .expect(200);
    let mail = smtp.wait_for(&w.slug, "account_exists", victim, 1);
    let token = mail.token().expect("a reset token");
    w.post(
        "/v1/auth/reset-password",
        &json!({ "token": token, "password": NEW_USER_PASSWORD }),
    )
    .expect(200);
    let login = w.post(
        "/v1/auth/login",
        &json!({ "email": victim, "password": NEW_USER_PASSWORD }),
    );
    assert_eq!(
        login.expect(200)["user"]["id"],
        id.as_str(),
        "{}",
        login.body
    );

    // The attacker's wallet no longer signs in as her: its identity is unlinked, and the
    // address it asserts belongs to a confirmed account now.
    w.attempt(&wallet).expect_error(403, "eudi/email_exists");
    let out = w
        .srv
        .admin(&["user", "traces", "--tenant", &w.slug, &id], "");
    let held: Vec<String> = out.json()["credentials"][&id]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap().to_owned())
        .collect();
    assert!(!held.iter().any(|k| k.starts_with("wallet")), "{held:?}");
}

/// The guardian's way from the consent page to the wallet: the page offers the wallet, its
/// button leads to the age check's QR page, and both pass axe-core at 360 and 1280 px in
/// Chromium.
#[test]
fn a_guardian_goes_from_the_consent_page_to_the_wallet_in_chromium() {
    use crate::guardian::{GUARDIAN, KID_DOB};
    if !crate::browser::chromium_present() {
        return;
    }
    let (smtp, w) = guardian_world();
    w.post(
        "/v1/auth/register",
        &json!({"email": "kid@example.com", "password": PASSWORD, "consent": true,
                "date_of_birth": KID_DOB}),
    )
    .expect(200);
    w.post(
        "/v1/auth/parental-consent",
        &json!({"email": "kid@example.com", "password": PASSWORD, "guardian_email": GUARDIAN}),
    )
    .expect(202);
    let token = smtp
        .wait_for(&w.slug, "guardian_consent", GUARDIAN, 1)
        .token_after("/v1/guardian/consent?token=")
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let (driver, ui) = crate::browser::chromium(dir.path());
    ui.goto(
        "consent-page",
        &w.srv.url(&format!("/v1/guardian/consent?token={token}")),
    );
    ui.expect_text("consent", "kid@example.com");
    ui.checked("consent-with-wallet");
    ui.click(
        "wallet-button",
        "form[action='/v1/guardian/consent/wallet'] button",
    );
    ui.expect_text("qr-page", "Prove your age with your EU wallet");
    ui.checked("wallet-qr");
    drop(ui);
    drop(driver);
}
