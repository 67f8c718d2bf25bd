//! `sso`: the single sign-on load. wrk cannot be a browser going out to an identity provider
//! and back, nor the provider, so this is both, for one organization's connection:
//!
//! - It runs its own identity provider on 127.0.0.1 (plain HTTP: the server must run with
//!   `sso.allow_private_targets`). `--protocol oidc`: an OpenID provider (discovery, JWKS, an
//!   authorization endpoint that consents at once with a 302 carrying the code and `state`,
//!   a token endpoint checking client_secret_basic, the redirect URI and the PKCE S256
//!   verifier, and issuing ES256 ID tokens with the flow's nonce). `--protocol saml`: a SAML
//!   IdP whose SingleSignOnService takes the AuthnRequest of the HTTP-Redirect binding and
//!   answers a Response whose Assertion is signed (enveloped, exclusive c14n, ECDSA P-256 with
//!   SHA-256, by `bergshamra`, the library `tessera-saml` verifies with) under a self-signed
//!   P-256 certificate: ECDSA is cheap to sign, so the provider takes little of the cores the
//!   server shares with it. The provider answers the form the browser would post as plain
//!   `application/x-www-form-urlencoded` data (`acs`, `SAMLResponse`, `RelayState`), not an
//!   HTML page, so the load parses no HTML.
//! - Set-up, through the dashboard API as the tenant's owner (`--owner-email`, `--password`):
//!   the redirect URL, the organization `Bench SSO` and its connection `bench-oidc` or
//!   `bench-saml`, created the first time and pointed at this run's provider (a new port and
//!   key each run) afterwards: the SAML IdP keeps its entity id, so its users stay linked from
//!   run to run, while an OpenID issuer is its address, whose change drops the links (at most
//!   10 connections an organization; the tenant must be on a tier whose organizations take
//!   `--subjects` members). One sign-in is walked before the load (and, for SAML, the
//!   provider's Response checked by `tessera-saml` first) so a refusal stops the run with its
//!   reason.
//! - The load: `--concurrency` loops for `--seconds` after a `--warmup`, each with one
//!   keep-alive HTTP/1.1 connection to the server and one to the provider, as a browser
//!   keeps. A sign-in: `GET .../start?redirect_uri=` (302 to the provider, the flow's cookie),
//!   the provider (OIDC: its 302 to the callback; SAML: the signed Response), `GET
//!   .../callback` or `POST .../acs` with the cookie (302 back to the app with
//!   `code=sso_...`), and `POST /v1/auth/sso/session` with the tenant's `--api-key` (200,
//!   the token pair). The users are a pool of `--subjects`, taken in turn: a subject's first
//!   sign-in at the connection creates its account (JIT), later ones find it linked. Every
//!   sign-in comes from a client address of its own (`X-Forwarded-For`; the server must
//!   trust 127.0.0.1).
//!
//! Prints `{rps, p50_ms, p99_ms, errors, ...}` like `passkeys`: a sign-in (the whole walk,
//! ending in a token pair) is one request; any other status than the walk expects is an
//! error (warm-up included); with `--server-pid`, the server's CPU over the measured seconds.

use std::{
    collections::HashMap,
    convert::Infallible,
    io::Read,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex, OnceLock,
    },
    time::{Duration, Instant},
};

use base64::{
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
    Engine,
};
use clap::{Parser, ValueEnum};
use http_body_util::{BodyExt, Full};
use hyper::{
    body::{Bytes, Incoming},
    client::conn::http1::SendRequest,
    header::{CONTENT_TYPE, COOKIE, HOST, LOCATION, SET_COOKIE},
    Method, Request, Response,
};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use serde_json::{json, Value};
use tessera_bench::{call, client_ip, round3, LatencySummary, Result};
use time::{format_description::well_known::Rfc3339, OffsetDateTime};

/// Where the app is sent back to (the tenant's one redirect URL).
const APP: &str = "https://app.sso.bench.test/signed-in";
/// The organization the connections belong to.
const ORG_NAME: &str = "Bench SSO";
const SESSION: &str = "/v1/auth/sso/session";

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Protocol {
    Oidc,
    Saml,
}

impl Protocol {
    fn name(self) -> &'static str {
        match self {
            Protocol::Oidc => "oidc",
            Protocol::Saml => "saml",
        }
    }
}

#[derive(Parser)]
#[command(
    name = "sso",
    about = "Single sign-on (OpenID Connect or SAML) under load"
)]
struct Cli {
    /// The server, `http://127.0.0.1:PORT`.
    #[arg(long)]
    base: String,
    #[arg(long, value_enum)]
    protocol: Protocol,
    /// The tenant's slug.
    #[arg(long)]
    slug: String,
    /// The tenant's owner (a dashboard account), who sets the connection up.
    #[arg(long)]
    owner_email: String,
    /// The owner's password.
    #[arg(long, env = "BENCH_PASSWORD")]
    password: String,
    /// The tenant's API key (the code exchange).
    #[arg(long)]
    api_key: String,
    /// The provider's users, signed in in turn.
    #[arg(long, default_value_t = 1000)]
    subjects: usize,
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    #[arg(long, default_value_t = 3.0)]
    warmup: f64,
    /// The server's process id: its CPU time over the measured seconds is reported.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Clock ticks a second of `/proc/<pid>/stat` (`getconf CLK_TCK`).
    #[arg(long, default_value_t = 100)]
    clock_ticks: u64,
}

// As in `passkeys`: the load shares the machine's cores with the server.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    tessera_bench::main_with("sso", run(Cli::parse()))
}

/// User plus system CPU time of process `pid`, in clock ticks.
fn cpu_ticks(pid: Option<u32>) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid?)).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

fn random_hex() -> String {
    format!("{:032x}", rand::random::<u128>())
}

fn s256(v: &str) -> String {
    use aws_lc_rs::digest::{digest, SHA256};
    URL_SAFE_NO_PAD.encode(digest(&SHA256, v.as_bytes()).as_ref())
}

fn query_params(query: Option<&str>) -> HashMap<String, String> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

/// The path and query of `url` (`http://host:port/p?q` -> `/p?q`).
fn path_of(url: &str) -> Result<&str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| format!("not an absolute URL: {url}"))?;
    Ok(rest.find('/').map_or("/", |at| &rest[at..]))
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The value of attribute `name` in `xml` (the AuthnRequest tessera-saml writes: each
/// attribute once, double-quoted).
fn xml_attr<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let at = xml.find(&format!(" {name}=\""))? + name.len() + 3;
    let rest = &xml[at..];
    Some(&rest[..rest.find('"')?])
}

fn instant(t: OffsetDateTime) -> Result<String> {
    Ok(t.replace_nanosecond(0)?.format(&Rfc3339)?)
}

fn subject_email(subject: usize) -> String {
    format!("s{subject:04}@sso.bench.test")
}

// ---------------------------------------------------------------------------------------------
// The identity provider
// ---------------------------------------------------------------------------------------------

/// A code the authorization endpoint gave out, until the token endpoint takes it.
struct Code {
    subject: usize,
    nonce: String,
    challenge: String,
    redirect_uri: String,
}

/// The OpenID provider's keys and codes.
struct Oidc {
    client_id: String,
    client_secret: String,
    /// The ES256 signing key and its `kid`.
    key: jsonwebtoken::EncodingKey,
    kid: String,
    discovery: Bytes,
    jwks: Bytes,
    codes: Mutex<HashMap<String, Code>>,
}

/// The SAML IdP's key and certificate.
struct Saml {
    entity_id: String,
    keys: bergshamra::KeysManager,
    cert_pem: String,
    /// The connection's ACS and SP entity id, known once the connection is saved.
    sp: OnceLock<(String, String)>,
}

struct Idp {
    base: String,
    oidc: Option<Oidc>,
    saml: Option<Saml>,
}

type Answer = Response<Full<Bytes>>;

fn answer(status: u16, content_type: &str, body: impl Into<Bytes>) -> Answer {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::OK);
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(CONTENT_TYPE, v);
    }
    r
}

fn refuse(status: u16, why: &str) -> Answer {
    answer(
        status,
        "application/json",
        json!({"error": "invalid_request", "error_description": why}).to_string(),
    )
}

impl Idp {
    fn new(base: String, protocol: Protocol) -> Result<Self> {
        match protocol {
            Protocol::Oidc => {
                use aws_lc_rs::signature::{
                    EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING,
                };
                let rng = aws_lc_rs::rand::SystemRandom::new();
                let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                    .map_err(|_| "P-256 key generation failed")?;
                let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der.as_ref())
                    .map_err(|_| "P-256 key parsing failed")?;
                let public = pair.public_key().as_ref();
                // A key id of this run's own: a server that cached an earlier run's keys
                // fetches these.
                let kid = format!("bench-{}", &random_hex()[..8]);
                let jwks = json!({"keys": [{
                    "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
                    "x": URL_SAFE_NO_PAD.encode(&public[1..33]),
                    "y": URL_SAFE_NO_PAD.encode(&public[33..65]),
                }]});
                // No userinfo endpoint: the ID token carries what the server reads.
                let discovery = json!({
                    "issuer": base,
                    "authorization_endpoint": format!("{base}/authorize"),
                    "token_endpoint": format!("{base}/token"),
                    "jwks_uri": format!("{base}/jwks"),
                    "response_types_supported": ["code"],
                    "subject_types_supported": ["public"],
                    "id_token_signing_alg_values_supported": ["ES256"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                });
                Ok(Idp {
                    oidc: Some(Oidc {
                        client_id: "tessera-bench-sso".into(),
                        client_secret: random_hex(),
                        key: jsonwebtoken::EncodingKey::from_ec_der(der.as_ref()),
                        kid,
                        discovery: discovery.to_string().into(),
                        jwks: jwks.to_string().into(),
                        codes: Mutex::new(HashMap::new()),
                    }),
                    saml: None,
                    base,
                })
            }
            Protocol::Saml => {
                let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
                let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
                let mut name = rcgen::DistinguishedName::new();
                name.push(rcgen::DnType::CommonName, "Tessera bench SAML IdP");
                params.distinguished_name = name;
                let now = OffsetDateTime::now_utc();
                params.not_before = now - time::Duration::days(1);
                params.not_after = now + time::Duration::days(365);
                let cert = params.self_signed(&key)?;
                let signing =
                    bergshamra::keys::loader::load_pem_auto(key.serialize_pem().as_bytes(), None)
                        .map_err(|e| format!("loading the IdP key into bergshamra: {e}"))?;
                let mut keys = bergshamra::KeysManager::new();
                keys.add_key(signing);
                Ok(Idp {
                    oidc: None,
                    saml: Some(Saml {
                        // The same IdP from run to run (a new one would drop the links).
                        entity_id: "https://idp.sso.bench.test/saml".to_owned(),
                        keys,
                        cert_pem: cert.pem(),
                        sp: OnceLock::new(),
                    }),
                    base,
                })
            }
        }
    }

    async fn serve(&self, req: Request<Incoming>) -> Answer {
        let (parts, body) = req.into_parts();
        let query = parts.uri.query();
        match (&parts.method, parts.uri.path(), &self.oidc, &self.saml) {
            (&Method::GET, "/.well-known/openid-configuration", Some(o), _) => {
                answer(200, "application/json", o.discovery.clone())
            }
            (&Method::GET, "/jwks", Some(o), _) => answer(200, "application/json", o.jwks.clone()),
            (&Method::GET, "/authorize", Some(o), _) => o.authorize(&query_params(query)),
            (&Method::POST, "/token", Some(o), _) => {
                let body = match body.collect().await {
                    Ok(b) => b.to_bytes(),
                    Err(_) => return refuse(400, "unreadable body"),
                };
                match o.token(&self.base, &parts.headers, &body) {
                    Ok(a) => a,
                    Err(e) => answer(
                        400,
                        "application/json",
                        json!({"error": "invalid_grant", "error_description": e.to_string()})
                            .to_string(),
                    ),
                }
            }
            (&Method::GET, "/saml/sso", _, Some(s)) => match s.sso(&query_params(query)) {
                Ok(a) => a,
                Err(e) => refuse(400, &e.to_string()),
            },
            _ => refuse(404, "no such route"),
        }
    }
}

impl Oidc {
    /// The user consents at once: back to `redirect_uri` with a code and the `state`.
    fn authorize(&self, q: &HashMap<String, String>) -> Answer {
        let get = |k: &str| q.get(k).map(String::as_str).unwrap_or_default();
        if get("response_type") != "code"
            || get("client_id") != self.client_id
            || get("code_challenge_method") != "S256"
            || get("code_challenge").is_empty()
            || get("nonce").is_empty()
            || !get("scope").split(' ').any(|s| s == "openid")
        {
            return refuse(400, "not the authorization request expected");
        }
        let Ok(subject) = get("bench_subject").parse::<usize>() else {
            return refuse(400, "no bench_subject");
        };
        let code = random_hex();
        let redirect_uri = get("redirect_uri").to_owned();
        let mut to = redirect_uri.clone();
        to.push(if to.contains('?') { '&' } else { '?' });
        to.push_str(
            &form_urlencoded::Serializer::new(String::new())
                .append_pair("code", &code)
                .append_pair("state", get("state"))
                .finish(),
        );
        if let Ok(mut codes) = self.codes.lock() {
            codes.insert(
                code,
                Code {
                    subject,
                    nonce: get("nonce").to_owned(),
                    challenge: get("code_challenge").to_owned(),
                    redirect_uri,
                },
            );
        }
        let mut r = answer(302, "text/plain", Bytes::new());
        if let Ok(v) = to.parse() {
            r.headers_mut().insert(LOCATION, v);
        }
        r
    }

    /// The code exchanged once, for the client's secret (client_secret_basic), the redirect
    /// URI and the PKCE verifier: an ES256 ID token with the flow's nonce.
    fn token(&self, issuer: &str, headers: &hyper::HeaderMap, body: &[u8]) -> Result<Answer> {
        let basic = headers
            .get("authorization")
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Basic "))
            .ok_or("no client_secret_basic")?;
        let decoded = String::from_utf8(STANDARD.decode(basic.trim())?)?;
        let (id, secret) = decoded.split_once(':').ok_or("malformed Basic")?;
        let dec = |v: &str| -> String {
            form_urlencoded::parse(format!("v={v}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        if dec(id) != self.client_id || dec(secret) != self.client_secret {
            return Err("wrong client credentials".into());
        }
        let form: HashMap<String, String> = form_urlencoded::parse(body).into_owned().collect();
        if form.get("grant_type").map(String::as_str) != Some("authorization_code") {
            return Err("not an authorization_code grant".into());
        }
        let code = form
            .get("code")
            .and_then(|c| self.codes.lock().ok()?.remove(c))
            .ok_or("unknown or used code")?;
        if form.get("redirect_uri") != Some(&code.redirect_uri) {
            return Err("another redirect_uri".into());
        }
        if form.get("code_verifier").map(|v| s256(v)).as_ref() != Some(&code.challenge) {
            return Err("the PKCE verifier does not match".into());
        }
        let now = OffsetDateTime::now_utc().unix_timestamp();
        let claims = json!({
            "iss": issuer,
            "aud": self.client_id,
            "sub": format!("bench-sso-{}", code.subject),
            "email": subject_email(code.subject),
            "email_verified": true,
            "name": format!("Bench Subject {}", code.subject),
            "nonce": code.nonce,
            "iat": now,
            "exp": now + 300,
        });
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        let id_token = jsonwebtoken::encode(&header, &claims, &self.key)?;
        let body = json!({
            "access_token": random_hex(), "token_type": "Bearer", "expires_in": 300,
            "id_token": id_token,
        });
        Ok(answer(200, "application/json", body.to_string()))
    }
}

impl Saml {
    /// The SingleSignOnService (HTTP-Redirect binding): the AuthnRequest inflated, its ID
    /// and ACS read; the signed Response, as the form fields the browser would post.
    fn sso(&self, q: &HashMap<String, String>) -> Result<Answer> {
        let request = q.get("SAMLRequest").ok_or("no SAMLRequest")?;
        let deflated = STANDARD.decode(request)?;
        let mut xml = String::new();
        flate2::read::DeflateDecoder::new(deflated.as_slice()).read_to_string(&mut xml)?;
        let id = xml_attr(&xml, "ID").ok_or("no ID in the AuthnRequest")?;
        let acs = xml_attr(&xml, "AssertionConsumerServiceURL").ok_or("no ACS")?;
        let (known_acs, sp_entity) = self.sp.get().ok_or("no connection yet")?;
        if acs != known_acs {
            return Err(format!("the AuthnRequest names another ACS: {acs}").into());
        }
        let subject: usize = q
            .get("bench_subject")
            .and_then(|s| s.parse().ok())
            .ok_or("no bench_subject")?;
        let response = self.response(id, acs, sp_entity, subject)?;
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("acs", acs)
            .append_pair("SAMLResponse", &response)
            .append_pair(
                "RelayState",
                q.get("RelayState").map(String::as_str).unwrap_or(""),
            )
            .finish();
        Ok(answer(200, "application/x-www-form-urlencoded", body))
    }

    /// A Response (base64) to request `request_id`, its Assertion signed.
    fn response(
        &self,
        request_id: &str,
        acs: &str,
        audience: &str,
        subject: usize,
    ) -> Result<String> {
        let now = OffsetDateTime::now_utc();
        let issued = instant(now)?;
        let not_before = instant(now - time::Duration::minutes(1))?;
        let not_after = instant(now + time::Duration::minutes(5))?;
        let (assertion_id, response_id) = (format!("_a{}", random_hex()), random_hex());
        let (idp, acs, audience, request_id) = (
            xml_escape(&self.entity_id),
            xml_escape(acs),
            xml_escape(audience),
            xml_escape(request_id),
        );
        let email = subject_email(subject);
        let template = format!(
            concat!(
                r#"<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" "#,
                r#"xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_r{rid}" Version="2.0" "#,
                r#"IssueInstant="{now}" Destination="{acs}" InResponseTo="{req}">"#,
                r#"<saml:Issuer>{idp}</saml:Issuer><samlp:Status><samlp:StatusCode "#,
                r#"Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>"#,
                r#"<saml:Assertion ID="{aid}" Version="2.0" IssueInstant="{now}">"#,
                r#"<saml:Issuer>{idp}</saml:Issuer>"#,
                r#"<ds:Signature xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:SignedInfo>"#,
                r#"<ds:CanonicalizationMethod Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"/>"#,
                r#"<ds:SignatureMethod Algorithm="http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256"/>"#,
                r##"<ds:Reference URI="#{aid}"><ds:Transforms>"##,
                r#"<ds:Transform Algorithm="http://www.w3.org/2000/09/xmldsig#enveloped-signature"/>"#,
                r#"<ds:Transform Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"/>"#,
                r#"</ds:Transforms><ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"/>"#,
                r#"<ds:DigestValue></ds:DigestValue></ds:Reference></ds:SignedInfo>"#,
                r#"<ds:SignatureValue></ds:SignatureValue></ds:Signature>"#,
                r#"<saml:Subject><saml:NameID "#,
                r#"Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">{email}</saml:NameID>"#,
                r#"<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">"#,
                r#"<saml:SubjectConfirmationData InResponseTo="{req}" NotOnOrAfter="{after}" "#,
                r#"Recipient="{acs}"/></saml:SubjectConfirmation></saml:Subject>"#,
                r#"<saml:Conditions NotBefore="{before}" NotOnOrAfter="{after}">"#,
                r#"<saml:AudienceRestriction><saml:Audience>{aud}</saml:Audience>"#,
                r#"</saml:AudienceRestriction></saml:Conditions>"#,
                r#"<saml:AuthnStatement AuthnInstant="{now}" SessionIndex="_s{rid}"><saml:AuthnContext>"#,
                r#"<saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"#,
                r#"</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>"#,
                r#"<saml:AttributeStatement><saml:Attribute Name="email">"#,
                r#"<saml:AttributeValue>{email}</saml:AttributeValue></saml:Attribute>"#,
                r#"</saml:AttributeStatement></saml:Assertion></samlp:Response>"#,
            ),
            rid = response_id,
            aid = assertion_id,
            now = issued,
            before = not_before,
            after = not_after,
            acs = acs,
            req = request_id,
            idp = idp,
            aud = audience,
            email = email,
        );
        let ctx = bergshamra::DsigContext::new(self.keys.clone());
        let signed =
            bergshamra::sign(&ctx, &template).map_err(|e| format!("signing the Response: {e}"))?;
        Ok(STANDARD.encode(signed))
    }
}

/// Serves `idp` on its listener, one task a connection (keep-alive).
fn spawn_idp(listener: tokio::net::TcpListener, idp: Arc<Idp>) {
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            let idp = idp.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let idp = idp.clone();
                    async move { Ok::<_, Infallible>(idp.serve(req).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Set-up through the dashboard API
// ---------------------------------------------------------------------------------------------

/// What the load needs of the connection.
struct Connection {
    /// The path of the start URL.
    start_path: String,
}

async fn set_up(cli: &Cli, http: &reqwest::Client, idp: &Idp) -> Result<Connection> {
    let base = cli.base.trim_end_matches('/');
    let login = call(
        "dashboard login".into(),
        200,
        http.post(format!("{base}/v1/auth/dashboard/login"))
            .json(&json!({"email": cli.owner_email, "password": cli.password})),
    )
    .await?;
    let session = login["session_token"]
        .as_str()
        .ok_or("no session_token")?
        .to_owned();
    // The connection's client secret is a secret: written after a re-authentication.
    call(
        "dashboard reauth".into(),
        200,
        http.post(format!("{base}/v1/auth/dashboard/reauth"))
            .bearer_auth(&session)
            .json(&json!({"password": cli.password})),
    )
    .await?;
    let tenant = format!("{base}/v1/auth/dashboard/tenants/{}", cli.slug);
    call(
        "PUT settings/urls".into(),
        200,
        http.put(format!("{tenant}/settings/urls"))
            .bearer_auth(&session)
            .json(&json!({"site_url": APP, "redirect_urls": [APP]})),
    )
    .await?;
    let orgs = call(
        "organizations".into(),
        200,
        http.get(format!("{tenant}/organizations"))
            .bearer_auth(&session),
    )
    .await?;
    let found = orgs["data"].as_array().and_then(|all| {
        all.iter()
            .find(|o| o["name"] == ORG_NAME)
            .and_then(|o| o["id"].as_str())
            .map(str::to_owned)
    });
    let org = match found {
        Some(id) => id,
        None => call(
            "creating the organization".into(),
            201,
            http.post(format!("{tenant}/organizations"))
                .bearer_auth(&session)
                .json(&json!({"name": ORG_NAME})),
        )
        .await?["id"]
            .as_str()
            .ok_or("no organization id")?
            .to_owned(),
    };
    let connections = format!("{tenant}/organizations/{org}/connections");
    let name = format!("bench-{}", cli.protocol.name());
    let provider = match (&idp.oidc, &idp.saml) {
        (Some(o), _) => json!({"oidc": {
            "issuer": idp.base, "client_id": o.client_id, "client_secret": o.client_secret,
        }}),
        (_, Some(s)) => json!({"saml": {
            "idp_entity_id": s.entity_id,
            "idp_sso_url": format!("{}/saml/sso", idp.base),
            "idp_certificates": [s.cert_pem],
        }}),
        _ => return Err("no provider".into()),
    };
    let list = call(
        "connections".into(),
        200,
        http.get(&connections).bearer_auth(&session),
    )
    .await?;
    let existing = list["data"].as_array().and_then(|all| {
        all.iter()
            .find(|c| c["name"] == name.as_str())
            .and_then(|c| c["id"].as_str())
            .map(str::to_owned)
    });
    let c = match existing {
        // Pointed at this run's provider. SAML: the same entity id, so the users stay
        // linked; OpenID: the issuer is this run's address, so the server drops the links
        // made through the last run's and the users are made again.
        Some(id) => {
            let mut body = provider;
            body["enabled"] = json!(true);
            call(
                format!("PATCH connection {id}"),
                200,
                http.patch(format!("{connections}/{id}"))
                    .bearer_auth(&session)
                    .json(&body),
            )
            .await?
        }
        None => {
            let mut body = provider;
            body["name"] = json!(name);
            body["type"] = json!(cli.protocol.name());
            call(
                "creating the connection".into(),
                201,
                http.post(&connections).bearer_auth(&session).json(&body),
            )
            .await?
        }
    };
    if let Some(s) = &idp.saml {
        let sp = &c["saml"]["sp"];
        let acs = sp["acs_url"].as_str().ok_or("no saml.sp.acs_url")?;
        let entity = sp["entity_id"].as_str().ok_or("no saml.sp.entity_id")?;
        let _ = s.sp.set((acs.to_owned(), entity.to_owned()));
        // The provider's Response as tessera-saml reads it, before the server sees one.
        let response = s.response("id-bench-selfcheck", acs, entity, 0)?;
        let sp = tessera_saml::SpConfig {
            entity_id: entity.to_owned(),
            acs_url: acs.to_owned(),
            idp_entity_id: s.entity_id.clone(),
            idp_certs: vec![s.cert_pem.clone()],
            decryption_key_pem: None,
            skew: time::Duration::seconds(120),
        };
        tessera_saml::verify_response(
            &response,
            &sp,
            Some("id-bench-selfcheck"),
            OffsetDateTime::now_utc(),
        )
        .map_err(|e| format!("tessera-saml refuses the provider's Response: {e}"))?;
    }
    let start = c["start_url"].as_str().ok_or("no start_url")?;
    Ok(Connection {
        start_path: path_of(start)?.to_owned(),
    })
}

// ---------------------------------------------------------------------------------------------
// The load
// ---------------------------------------------------------------------------------------------

/// One keep-alive HTTP/1.1 connection, opened again when the peer closed it.
struct Conn {
    /// `host:port`.
    authority: String,
    sender: SendRequest<Full<Bytes>>,
}

/// What a step needs of an answer.
struct Reply {
    status: u16,
    location: Option<String>,
    /// `name=value` of the flow's cookie, if set.
    cookie: Option<String>,
    body: Bytes,
}

impl Conn {
    async fn open(authority: &str) -> Result<Self> {
        let stream = tokio::net::TcpStream::connect(authority).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        Ok(Conn {
            authority: authority.to_owned(),
            sender,
        })
    }

    async fn send(
        &mut self,
        method: Method,
        target: &str,
        headers: &[(&str, &str)],
        body: Option<(&str, Vec<u8>)>,
    ) -> Result<Reply> {
        if self.sender.is_closed() {
            *self = Conn::open(&self.authority).await?;
        }
        self.sender.ready().await?;
        let mut request = Request::builder()
            .method(method)
            .uri(target)
            .header(HOST, &self.authority);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let (content_type, bytes) = body.unwrap_or(("", Vec::new()));
        if !content_type.is_empty() {
            request = request.header(CONTENT_TYPE, content_type);
        }
        let request = request.body(Full::new(Bytes::from(bytes)))?;
        let exchange = async {
            let response = self.sender.send_request(request).await?;
            let status = response.status().as_u16();
            let header = |name| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v: &hyper::header::HeaderValue| v.to_str().ok())
                    .map(str::to_owned)
            };
            let location = header(LOCATION);
            let cookie = response
                .headers()
                .get_all(SET_COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .find(|c| c.starts_with("tessera_sso_"))
                .and_then(|c| c.split(';').next())
                .map(str::to_owned);
            let body = response.into_body().collect().await?.to_bytes();
            Ok::<_, hyper::Error>(Reply {
                status,
                location,
                cookie,
                body,
            })
        };
        Ok(tokio::time::timeout(Duration::from_secs(30), exchange)
            .await
            .map_err(|_| format!("{target}: no answer in 30 s"))??)
    }
}

impl Reply {
    /// `Ok(self)` when the status is `want`; else an error naming `step`.
    fn want(self, step: &str, want: u16) -> Result<Self> {
        if self.status == want {
            Ok(self)
        } else {
            let body = String::from_utf8_lossy(&self.body);
            Err(format!(
                "{step}: expected {want}, got {}: {}",
                self.status,
                body.chars().take(300).collect::<String>()
            )
            .into())
        }
    }

    fn location(&self, step: &str) -> Result<&str> {
        self.location
            .as_deref()
            .ok_or_else(|| format!("{step}: no Location").into())
    }
}

/// What every loop shares.
struct Plan {
    protocol: Protocol,
    api_key: String,
    /// The start path with `?redirect_uri=`.
    start: String,
    /// The provider's base URL (`http://127.0.0.1:PORT`).
    idp_base: String,
}

/// One loop's connections.
struct Browser {
    server: Conn,
    idp: Conn,
}

#[derive(Deserialize)]
struct TokenPair<'a> {
    #[serde(borrow)]
    access_token: std::borrow::Cow<'a, str>,
}

/// One sign-in of `subject` from address `n`: start, the provider, back, the code exchange.
async fn sign_in(b: &mut Browser, plan: &Plan, n: usize, subject: usize) -> Result<()> {
    let ip = client_ip(n);
    let xff = ("x-forwarded-for", ip.as_str());
    let start = b
        .server
        .send(Method::GET, &plan.start, &[xff], None)
        .await?
        .want("start", 302)?;
    let cookie = start.cookie.clone().ok_or("start: no flow cookie")?;
    let to = start.location("start")?;
    if !to.starts_with(&plan.idp_base) {
        return Err(format!("start: sent elsewhere than the provider: {to}").into());
    }
    // The user at the provider: who signs in is the bench's choice.
    let at_idp = format!("{}&bench_subject={subject}", path_of(to)?);
    let provider = b.idp.send(Method::GET, &at_idp, &[], None).await?;
    let cookie_header = (COOKIE.as_str(), cookie.as_str());
    let back = match plan.protocol {
        Protocol::Oidc => {
            let provider = provider.want("provider authorize", 302)?;
            let callback = path_of(provider.location("provider authorize")?)?.to_owned();
            b.server
                .send(Method::GET, &callback, &[xff, cookie_header], None)
                .await?
        }
        Protocol::Saml => {
            let provider = provider.want("provider SSO", 200)?;
            // The form the browser would post: SAMLResponse and RelayState, to the ACS.
            let mut acs = None;
            let post = {
                let mut post = form_urlencoded::Serializer::new(String::new());
                for (k, v) in form_urlencoded::parse(&provider.body) {
                    match k.as_ref() {
                        "acs" => acs = Some(v.into_owned()),
                        "SAMLResponse" | "RelayState" => {
                            post.append_pair(&k, &v);
                        }
                        _ => {}
                    }
                }
                post.finish()
            };
            let acs = acs.ok_or("provider SSO: no acs")?;
            b.server
                .send(
                    Method::POST,
                    path_of(&acs)?,
                    &[xff, cookie_header],
                    Some(("application/x-www-form-urlencoded", post.into_bytes())),
                )
                .await?
        }
    };
    let step = match plan.protocol {
        Protocol::Oidc => "callback",
        Protocol::Saml => "acs",
    };
    let back = back.want(step, 302)?;
    let to_app = back.location(step)?;
    let query = to_app
        .strip_prefix(APP)
        .and_then(|rest| rest.strip_prefix('?'))
        .ok_or_else(|| format!("{step}: not back to the app: {to_app}"))?;
    let params = query_params(Some(query));
    let code = params
        .get("code")
        .ok_or_else(|| format!("{step}: back to the app without a code: {to_app}"))?;
    let body = serde_json::to_vec(&json!({ "code": code }))?;
    let pair = b
        .server
        .send(
            Method::POST,
            SESSION,
            &[xff, ("x-api-key", &plan.api_key)],
            Some(("application/json", body)),
        )
        .await?
        .want("sso/session", 200)?;
    match serde_json::from_slice::<TokenPair>(&pair.body) {
        Ok(p) if !p.access_token.is_empty() => Ok(()),
        _ => Err(format!(
            "sso/session: no token pair in {}",
            String::from_utf8_lossy(&pair.body)
        )
        .into()),
    }
}

async fn run(cli: Cli) -> Result<Value> {
    if cli.subjects == 0 {
        return Err("--subjects must be at least 1".into());
    }
    let authority = cli
        .base
        .strip_prefix("http://")
        .map(|a| a.trim_end_matches('/').to_owned())
        .ok_or("--base must be http://HOST:PORT")?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let idp_addr = listener.local_addr()?;
    let idp = Arc::new(Idp::new(format!("http://{idp_addr}"), cli.protocol)?);
    spawn_idp(listener, idp.clone());

    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .user_agent("tessera-bench sso")
        .build()?;
    let connection = set_up(&cli, &http, &idp).await?;
    let plan = Arc::new(Plan {
        protocol: cli.protocol,
        api_key: cli.api_key.clone(),
        start: format!(
            "{}?{}",
            connection.start_path,
            form_urlencoded::Serializer::new(String::new())
                .append_pair("redirect_uri", APP)
                .finish()
        ),
        idp_base: idp.base.clone(),
    });
    let idp_authority = idp_addr.to_string();
    // Client addresses apart from the passkey load's (which starts at 1,000,000) and from
    // the other protocol's.
    let first_ip = match cli.protocol {
        Protocol::Oidc => 20_000,
        Protocol::Saml => 70_000,
    };
    // One sign-in walked first: a refusal stops the run here, with its reason.
    let mut first = Browser {
        server: Conn::open(&authority).await?,
        idp: Conn::open(&idp_authority).await?,
    };
    sign_in(&mut first, &plan, first_ip, 0)
        .await
        .map_err(|e| format!("the first sign-in failed: {e}"))?;

    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let next = Arc::new(AtomicUsize::new(1));
    let errors = Arc::new(AtomicUsize::new(0));
    let first_error = Arc::new(Mutex::new(None::<String>));
    let mut tasks = tokio::task::JoinSet::new();
    let loops = cli.concurrency.max(1);
    let subjects = cli.subjects;
    for _ in 0..loops {
        let mut browser = Browser {
            server: Conn::open(&authority).await?,
            idp: Conn::open(&idp_authority).await?,
        };
        let (plan, measuring, stop, next, errors, first_error) = (
            plan.clone(),
            measuring.clone(),
            stop.clone(),
            next.clone(),
            errors.clone(),
            first_error.clone(),
        );
        tasks.spawn(async move {
            let mut samples = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let started = Instant::now();
                let outcome = sign_in(&mut browser, &plan, first_ip + n, n % subjects).await;
                let counted = measuring.load(Ordering::Relaxed);
                match outcome {
                    Ok(()) if counted => samples.push(started.elapsed()),
                    Ok(()) => {}
                    Err(e) => {
                        // Warm-up errors count too.
                        errors.fetch_add(1, Ordering::Relaxed);
                        if let Ok(mut slot) = first_error.lock() {
                            slot.get_or_insert_with(|| e.to_string());
                        }
                    }
                }
            }
            samples
        });
    }
    tokio::time::sleep(Duration::from_secs_f64(cli.warmup)).await;
    measuring.store(true, Ordering::Relaxed);
    let started = Instant::now();
    let ticks_before = cpu_ticks(cli.server_pid);
    let own_before = cpu_ticks(Some(std::process::id()));
    tokio::time::sleep(Duration::from_secs_f64(cli.seconds)).await;
    measuring.store(false, Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    let seconds_of = |before: Option<u64>, pid: Option<u32>| {
        cpu_ticks(pid)
            .zip(before)
            .map(|(after, before)| after.saturating_sub(before) as f64 / cli.clock_ticks as f64)
            .filter(|_| elapsed > 0.0)
    };
    let server_cpu = seconds_of(ticks_before, cli.server_pid);
    let own_cpu = seconds_of(own_before, Some(std::process::id()));
    stop.store(true, Ordering::Relaxed);
    let mut samples = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        samples.extend(joined?);
    }
    let latency = LatencySummary::of(&samples);
    let first_error = first_error.lock().ok().and_then(|e| e.clone());
    Ok(json!({
        "protocol": cli.protocol.name(),
        "server_cpu_cores": server_cpu.map(|c| round3(c / elapsed)),
        "server_cpu_ms_per_request": server_cpu
            .filter(|_| !samples.is_empty())
            .map(|c| round3(c * 1e3 / samples.len() as f64)),
        "generator_cpu_cores": own_cpu.map(|c| round3(c / elapsed)),
        "sign_ins": samples.len(),
        "seconds": round3(elapsed),
        "rps": round3(samples.len() as f64 / elapsed),
        "p50_ms": latency.p50_ms,
        "p99_ms": latency.p99_ms,
        "latency": latency,
        "errors": errors.load(Ordering::Relaxed),
        "first_error": first_error,
        "concurrency": loops,
        "subjects": subjects,
        "sign_ins_started": next.load(Ordering::Relaxed),
    }))
}
