//! Request bodies of every public JSON route, sent to a real server (`tessera::run`, in this
//! process) over HTTP/1.1, so each body goes through the whole stack: middleware, the body
//! limit, `ApiJson` (content type, `parse_json` naming the bad field) or the optional-body
//! parser, then the handler's validation (e-mail normalisation, phone numbers, dates, URLs,
//! domain lists...) and, for a body that passes, the tenant actor.
//!
//! Input: byte 0 picks the route (`ROUTES[b % len]`), byte 1 the content type
//! (`CONTENT_TYPES[b % len]`), the rest is the body; the routes, the decoding and the checks of
//! an answer are in `tessera_fuzz::bodies`, shared with the seed replay of the integration
//! tests (which also checks each seed's exact answer, as a signed-in user). Each request comes from its own client
//! address (`X-Forwarded-For` from the trusted loopback proxy) and carries what its route
//! needs to get past authentication: the API key of a tenant, a guest's access token, or a
//! dashboard session. Three tenants keep the routes from undoing each other's setup: API-key
//! routes use one, bearer routes another (their guest is signed in again when a body ends its
//! session), dashboard routes change the settings of a third.
//!
//! Fails on: a panic anywhere in the server (libFuzzer's panic hook aborts), a 500, an error
//! answer without the contract's error envelope, a validation error that names no field, a
//! request left unanswered.
#![no_main]

use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use tessera_fuzz::{
    bodies::{answer_problem, decode, Auth, ROUTES},
    setup_failed, Addresses, Http, Response, Server,
};

/// The password of every owner the harness creates.
const OWNER_PASSWORD: &str = "fuzzing-owner-password-1";

struct Tenant {
    slug: String,
    api_key: String,
    owner_email: String,
}

struct Harness {
    _server: Server,
    http: Http,
    ips: Addresses,
    /// Numbers the owners' addresses.
    owners: u32,
    api: Tenant,
    users: Tenant,
    /// A guest of `users`.
    bearer: String,
    dash: Tenant,
    dash_session: String,
    /// With `TESSERA_FUZZ_STATS` set: per route, requests, time spent and statuses; printed
    /// every 5000 requests.
    stats: Option<Vec<RouteStats>>,
    requests: u64,
}

#[derive(Clone, Default)]
struct RouteStats {
    count: u64,
    micros: u128,
    statuses: std::collections::BTreeMap<u16, u64>,
}

fn fail(what: impl std::fmt::Display) -> ! {
    setup_failed(what)
}

impl Harness {
    fn start() -> Harness {
        let server = Server::start("request_bodies");
        let http = server.client();
        let mut h = Harness {
            _server: server,
            http,
            ips: Addresses::new(),
            owners: 0,
            api: placeholder(),
            users: placeholder(),
            bearer: String::new(),
            dash: placeholder(),
            dash_session: String::new(),
            stats: std::env::var_os("TESSERA_FUZZ_STATS")
                .map(|_| vec![RouteStats::default(); ROUTES.len()]),
            requests: 0,
        };
        h.api = h.signup("Fuzz API");
        h.enable_guests(&h.api.slug.clone(), &h.api.owner_email.clone());
        h.new_users_tenant();
        h.dash = h.signup("Fuzz Dashboard");
        h.dash_session = h.dashboard_login(&h.dash.owner_email.clone());
        h
    }

    /// One request from a new client address.
    fn try_call(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<Response> {
        let ip = self.ips.next();
        let mut all: Vec<(&str, &str)> = vec![("x-forwarded-for", ip.as_str())];
        all.extend_from_slice(headers);
        self.http.send(method, path, &all, body)
    }

    /// A request of the harness's own: no answer is a setup failure.
    fn call(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        self.try_call(method, path, headers, body)
            .unwrap_or_else(|e| fail(format!("{method} {path}: no answer from the server ({e})")))
    }

    fn setup_call(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: serde_json::Value,
        want: u16,
    ) -> serde_json::Value {
        let body = body.to_string();
        let mut all = vec![("content-type", "application/json")];
        all.extend_from_slice(headers);
        let r = self.call(method, path, &all, body.as_bytes());
        if r.status != want {
            fail(format!(
                "{method} {path} answered {} (wanted {want}): {}",
                r.status,
                String::from_utf8_lossy(&r.body)
            ));
        }
        r.json().unwrap_or_default()
    }

    /// A tenant with a new owner, through the signup route.
    fn signup(&mut self, name: &str) -> Tenant {
        self.owners += 1;
        let email = format!(
            "owner{}-{}@fuzz.example.com",
            self.owners,
            std::process::id()
        );
        let v = self.setup_call(
            "POST",
            "/v1/onboarding/signup",
            &[],
            serde_json::json!({
                "email": email,
                "password": OWNER_PASSWORD,
                "tenant_name": name,
                "consent_terms": true,
                "consent_privacy": true,
            }),
            201,
        );
        match (v["tenant"]["slug"].as_str(), v["api_key"].as_str()) {
            (Some(slug), Some(key)) => Tenant {
                slug: slug.to_owned(),
                api_key: key.to_owned(),
                owner_email: email,
            },
            _ => fail(format!("signup answered {v}")),
        }
    }

    fn dashboard_login(&mut self, email: &str) -> String {
        let v = self.setup_call(
            "POST",
            "/v1/auth/dashboard/login",
            &[],
            serde_json::json!({ "email": email, "password": OWNER_PASSWORD }),
            200,
        );
        v["session_token"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| fail(format!("dashboard login answered {v}")))
    }

    /// Turns guest sign-in on (it is off by default) with the owner's dashboard session.
    fn enable_guests(&mut self, slug: &str, owner_email: &str) {
        let session = self.dashboard_login(owner_email);
        let auth = format!("Bearer {session}");
        self.setup_call(
            "PATCH",
            &format!("/v1/auth/dashboard/tenants/{slug}/settings/anonymous"),
            &[
                ("authorization", auth.as_str()),
                ("x-service-confirm", "privileged-default-role"),
            ],
            serde_json::json!({ "anonymous_signins_enabled": true }),
            200,
        );
    }

    fn guest(&mut self, api_key: &str) -> Option<String> {
        let r = self.call("POST", "/v1/auth/anonymous", &[("x-api-key", api_key)], b"");
        if r.status != 201 && r.status != 200 {
            return None;
        }
        r.json()?["access_token"].as_str().map(str::to_owned)
    }

    fn new_users_tenant(&mut self) {
        self.users = self.signup("Fuzz Users");
        self.enable_guests(&self.users.slug.clone(), &self.users.owner_email.clone());
        let key = self.users.api_key.clone();
        self.bearer = self
            .guest(&key)
            .unwrap_or_else(|| fail("no guest on a fresh tenant"));
    }

    /// After a 401 on a bearer route: if the guest's token no longer works (a body ended the
    /// session), signs in a new guest, on a new tenant if this one refuses (its guest limits).
    fn revive_user(&mut self) {
        let key = self.users.api_key.clone();
        let auth = format!("Bearer {}", self.bearer);
        let me = self.call(
            "GET",
            "/v1/auth/me",
            &[
                ("x-api-key", key.as_str()),
                ("authorization", auth.as_str()),
            ],
            b"",
        );
        if me.status == 200 {
            return;
        }
        match self.guest(&key) {
            Some(b) => self.bearer = b,
            None => self.new_users_tenant(),
        }
    }

    /// After a 401 on a dashboard route: logs in again if the session ended, or moves to a
    /// new tenant and owner if the login is refused (a body may have locked the owner out).
    fn revive_dashboard(&mut self) {
        let auth = format!("Bearer {}", self.dash_session);
        let r = self.call(
            "GET",
            "/v1/auth/dashboard/tenants",
            &[("authorization", auth.as_str())],
            b"",
        );
        if r.status == 200 {
            return;
        }
        let email = self.dash.owner_email.clone();
        let again = self.call(
            "POST",
            "/v1/auth/dashboard/login",
            &[("content-type", "application/json")],
            serde_json::json!({ "email": email, "password": OWNER_PASSWORD })
                .to_string()
                .as_bytes(),
        );
        match again
            .json()
            .and_then(|v| v["session_token"].as_str().map(str::to_owned))
        {
            Some(s) if again.status == 200 => self.dash_session = s,
            _ => {
                self.dash = self.signup("Fuzz Dashboard");
                self.dash_session = self.dashboard_login(&self.dash.owner_email.clone());
            }
        }
    }

    fn one(&mut self, data: &[u8]) {
        let Some((route, content_type, body)) = decode(data) else {
            return;
        };
        let path = route.path.replace("{slug}", &self.dash.slug);
        let bearer = match route.auth {
            Auth::User => Some(format!("Bearer {}", self.bearer)),
            Auth::Dashboard => Some(format!("Bearer {}", self.dash_session)),
            Auth::None | Auth::ApiKey => None,
        };
        let api_key = match route.auth {
            Auth::ApiKey => Some(self.api.api_key.clone()),
            Auth::User => Some(self.users.api_key.clone()),
            Auth::None | Auth::Dashboard => None,
        };
        let mut headers: Vec<(&str, &str)> = Vec::with_capacity(4);
        if let Some(ct) = content_type {
            headers.push(("content-type", ct));
        }
        if let Some(k) = &api_key {
            headers.push(("x-api-key", k));
        }
        if let Some(b) = &bearer {
            headers.push(("authorization", b));
        }
        let started = std::time::Instant::now();
        let r = match self.try_call(route.method, &path, &headers, body) {
            Ok(r) => r,
            Err(e) => panic!(
                "{} {} with body {:?}: no answer from the server ({e})",
                route.method,
                route.path,
                String::from_utf8_lossy(body)
            ),
        };
        let shown = || {
            format!(
                "{} {} (content type {content_type:?}) with body {:?} answered {}: {}",
                route.method,
                route.path,
                String::from_utf8_lossy(body),
                r.status,
                String::from_utf8_lossy(&r.body)
            )
        };
        if let Some(stats) = &mut self.stats {
            let st = &mut stats[usize::from(data[0]) % ROUTES.len()];
            st.count += 1;
            st.micros += started.elapsed().as_micros();
            *st.statuses.entry(r.status).or_default() += 1;
            self.requests += 1;
            if self.requests.is_multiple_of(5000) {
                for (route, st) in ROUTES.iter().zip(stats.iter()) {
                    eprintln!(
                        "stats {} {}: {} requests, mean {} us, statuses {:?}",
                        route.method,
                        route.path,
                        st.count,
                        st.micros / u128::from(st.count.max(1)),
                        st.statuses
                    );
                }
            }
        }
        if let Some(problem) = answer_problem(r.status, &r.body) {
            panic!("{problem}; {}", shown());
        }
        if r.status == 401 {
            match route.auth {
                Auth::User => self.revive_user(),
                Auth::Dashboard => self.revive_dashboard(),
                Auth::None | Auth::ApiKey => {}
            }
        }
    }
}

fn placeholder() -> Tenant {
    Tenant {
        slug: String::new(),
        api_key: String::new(),
        owner_email: String::new(),
    }
}

static HARNESS: OnceLock<Mutex<Harness>> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let h = HARNESS.get_or_init(|| Mutex::new(Harness::start()));
    let mut h = h.lock().unwrap_or_else(|p| p.into_inner());
    h.one(data);
});
