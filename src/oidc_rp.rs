//! The relying party's side of OpenID Connect, shared by social sign-in and organizations'
//! federation: reading a provider's answers (JSON, at most 1 MiB), its discovery document
//! and its keys (cached an hour; the keys fetched again when an ID token names one not seen,
//! at most once per `keys_refetch`), and the checks of an ID token's signature (an
//! asymmetric algorithm, a key of the provider's set), `aud`, `exp`, `iat` and `nonce`. The
//! issuer is its caller's to compare (a social provider's may name the user's directory).
//!
//! [`Federation`] is the organizations' relying party: the provider an admin of a tenant
//! configured, reached only at public addresses (unless the operator allows private ones),
//! with the authorization code flow, PKCE S256 always, and the discovery document's issuer
//! identical to the configured one.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use jsonwebtoken::{jwk::JwkSet, Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::Value;

/// How long a discovery document and a key set are used before they are fetched again.
const CACHE_TTL: Duration = Duration::from_secs(3600);
/// The largest answer read from a provider.
const MAX_ANSWER: usize = 1 << 20;
/// How far in the future an ID token's `iat` may be, and how late its `exp` is forgiven.
pub const SKEW_SECS: i64 = 300;
/// The ID token signatures taken: asymmetric ones only.
const ID_TOKEN_ALGS: [Algorithm; 6] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::ES256,
    Algorithm::ES384,
];

/// Why a sign-in failed at or after the provider: logged, and answered to the app as
/// `?error=access_denied` (the user said no) or `?error=provider_error`.
#[derive(Debug, thiserror::Error)]
pub enum SocialError {
    #[error("the user denied the request at the provider")]
    Denied,
    #[error("the provider could not be used: {0}")]
    Provider(String),
    #[error("the ID token was refused: {0}")]
    IdToken(String),
}

impl SocialError {
    /// The `error` the browser is sent back to the app with.
    pub fn code(&self) -> &'static str {
        match self {
            SocialError::Denied => "access_denied",
            SocialError::Provider(_) | SocialError::IdToken(_) => "provider_error",
        }
    }
}

/// The ID token of a token endpoint's answer.
pub(crate) fn id_token_of(answer: &Value) -> Result<&str, SocialError> {
    answer
        .get("id_token")
        .and_then(Value::as_str)
        .ok_or_else(|| SocialError::Provider("the token answer has no id_token".into()))
}

pub(crate) fn provider_err(what: &str, e: impl std::fmt::Display) -> SocialError {
    SocialError::Provider(format!("{what}: {e}"))
}

/// An OpenID provider's discovery document (the fields used).
#[derive(Clone, Debug, Deserialize)]
pub struct Discovery {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub jwks_uri: String,
    #[serde(default)]
    pub userinfo_endpoint: Option<String>,
    #[serde(default)]
    pub code_challenge_methods_supported: Vec<String>,
}

/// Documents fetched from providers, by where they came from, with when.
struct Fetched<T>(Mutex<HashMap<String, (Instant, Arc<T>)>>);

impl<T> Fetched<T> {
    fn new() -> Self {
        Fetched(Mutex::new(HashMap::new()))
    }

    /// The document of `key` if it was fetched less than `max_age` ago.
    fn fresh(&self, key: &str, max_age: Duration) -> Option<Arc<T>> {
        let cache = self.0.lock().ok()?;
        let (at, doc) = cache.get(key)?;
        (at.elapsed() < max_age).then(|| doc.clone())
    }

    /// Keeps `doc` as the document of `key`, fetched now.
    fn keep(&self, key: &str, doc: T) -> Arc<T> {
        let doc = Arc::new(doc);
        if let Ok(mut cache) = self.0.lock() {
            cache.insert(key.to_owned(), (Instant::now(), doc.clone()));
        }
        doc
    }
}

/// One HTTP client and the documents fetched with it.
pub struct OidcCore {
    http: reqwest::Client,
    keys_refetch: Duration,
    /// Whether URLs at private addresses and `http://` may be fetched.
    allow_private: bool,
    discovery: Fetched<Discovery>,
    keys: Fetched<JwkSet>,
}

impl OidcCore {
    pub fn new(http: reqwest::Client, keys_refetch: Duration, allow_private: bool) -> Self {
        OidcCore {
            http,
            keys_refetch,
            allow_private,
            discovery: Fetched::new(),
            keys: Fetched::new(),
        }
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// An answer's JSON body, at most [`MAX_ANSWER`] bytes, from a 2xx.
    pub async fn json(
        &self,
        what: &str,
        req: reqwest::RequestBuilder,
    ) -> Result<Value, SocialError> {
        let req = req.build().map_err(|e| provider_err(what, e))?;
        if crate::webhooks::check_url(req.url().as_str(), self.allow_private).is_err() {
            return Err(SocialError::Provider(format!(
                "{what}: {} is not a public https URL",
                req.url().origin().ascii_serialization()
            )));
        }
        let mut resp = self
            .http
            .execute(req)
            .await
            .map_err(|e| provider_err(what, e))?;
        let status = resp.status();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| provider_err(what, e))? {
            if body.len() + chunk.len() > MAX_ANSWER {
                return Err(SocialError::Provider(format!("{what}: answer too large")));
            }
            body.extend_from_slice(&chunk);
        }
        let value: Value = serde_json::from_slice(&body)
            .map_err(|e| provider_err(&format!("{what} ({status})"), e))?;
        if !status.is_success() {
            let error = value.get("error").and_then(Value::as_str).unwrap_or("");
            return Err(SocialError::Provider(format!(
                "{what}: {status} {}",
                error.chars().take(64).collect::<String>()
            )));
        }
        Ok(value)
    }

    /// The JSON document at `url`, read as `T`.
    pub async fn document<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        url: &str,
    ) -> Result<T, SocialError> {
        let value = self.json(what, self.http.get(url)).await?;
        serde_json::from_value(value).map_err(|e| provider_err(what, e))
    }

    /// The discovery document of `issuer`, from the cache while fresh.
    pub async fn discovery(&self, issuer: &str) -> Result<Arc<Discovery>, SocialError> {
        if let Some(d) = self.discovery.fresh(issuer, CACHE_TTL) {
            return Ok(d);
        }
        let url = format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        );
        let d = self.document("discovery", &url).await?;
        Ok(self.discovery.keep(issuer, d))
    }

    /// The key set at `uri`: from the cache while fresh, unless `refetch` (an unknown `kid`)
    /// and the cached one is older than `keys_refetch`.
    async fn key_set(&self, uri: &str, refetch: bool) -> Result<Arc<JwkSet>, SocialError> {
        let max_age = if refetch {
            CACHE_TTL.min(self.keys_refetch)
        } else {
            CACHE_TTL
        };
        if let Some(set) = self.keys.fresh(uri, max_age) {
            return Ok(set);
        }
        let set = self.document("keys", uri).await?;
        Ok(self.keys.keep(uri, set))
    }

    /// The ID token's claims once its signature (a key of the provider's set, an asymmetric
    /// algorithm), `aud` (`client_id`), `exp`, `iat` and `nonce` are right. The caller
    /// compares `iss`.
    pub async fn check_id_token(
        &self,
        d: &Discovery,
        token: &str,
        (client_id, nonce): (&str, &str),
    ) -> Result<Value, SocialError> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| SocialError::IdToken(e.to_string()))?;
        if !ID_TOKEN_ALGS.contains(&header.alg) {
            return Err(SocialError::IdToken(format!("alg {:?}", header.alg)));
        }
        let pick = |set: &JwkSet| match &header.kid {
            Some(kid) => set.find(kid).cloned(),
            None if set.keys.len() == 1 => set.keys.first().cloned(),
            None => None,
        };
        let set = self.key_set(&d.jwks_uri, false).await?;
        let jwk = match pick(&set) {
            Some(k) => k,
            None => pick(&*self.key_set(&d.jwks_uri, true).await?)
                .ok_or_else(|| SocialError::IdToken("signed by an unknown key".into()))?,
        };
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| SocialError::IdToken(e.to_string()))?;
        let mut v = Validation::new(header.alg);
        v.leeway = SKEW_SECS as u64;
        v.set_audience(&[client_id]);
        v.set_required_spec_claims(&["exp", "iat", "iss", "aud", "sub"]);
        let claims: Value = jsonwebtoken::decode::<Value>(token, &key, &v)
            .map_err(|e| SocialError::IdToken(e.to_string()))?
            .claims;
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let iat = claims
            .get("iat")
            .and_then(Value::as_i64)
            .unwrap_or(i64::MAX);
        if iat > now + SKEW_SECS {
            return Err(SocialError::IdToken("iat is in the future".into()));
        }
        let said = claims.get("nonce").and_then(Value::as_str).unwrap_or("");
        if !tessera_storage::ct_eq(said.as_bytes(), nonce.as_bytes()) {
            return Err(SocialError::IdToken("nonce is not the flow's".into()));
        }
        Ok(claims)
    }
}

/// An organization's OpenID provider, as its connection names it.
pub struct OidcRp<'a> {
    pub issuer: &'a str,
    pub client_id: &'a str,
    pub client_secret: &'a str,
    pub scopes: &'a [String],
}

/// The organizations' relying party.
pub struct Federation {
    core: OidcCore,
}

impl Federation {
    pub fn new(
        timeout: Duration,
        keys_refetch: Duration,
        allow_private: bool,
    ) -> Result<Self, String> {
        let reach = if allow_private {
            crate::net::Reach::Any
        } else {
            crate::net::Reach::Public
        };
        let http = crate::net::client(reach, timeout).map_err(|e| format!("sso client: {e}"))?;
        Ok(Federation {
            core: OidcCore::new(http, keys_refetch, allow_private),
        })
    }

    /// The provider's discovery document, which must name `issuer` exactly.
    pub async fn provider(&self, issuer: &str) -> Result<Arc<Discovery>, SocialError> {
        let d = self.core.discovery(issuer).await?;
        if d.issuer != issuer {
            return Err(SocialError::Provider(
                "the discovery document names another issuer".into(),
            ));
        }
        Ok(d)
    }

    /// The SAML metadata (or any document) at a URL an admin gave, as text.
    pub async fn text(&self, url: &str) -> Result<String, SocialError> {
        if crate::webhooks::check_url(url, self.core.allow_private).is_err() {
            return Err(SocialError::Provider("not a public https URL".into()));
        }
        let mut resp = self
            .core
            .http()
            .get(url)
            .send()
            .await
            .map_err(|e| provider_err("metadata", e))?;
        if !resp.status().is_success() {
            return Err(SocialError::Provider(format!(
                "metadata: {}",
                resp.status()
            )));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| provider_err("metadata", e))?
        {
            if body.len() + chunk.len() > MAX_ANSWER {
                return Err(SocialError::Provider("metadata: answer too large".into()));
            }
            body.extend_from_slice(&chunk);
        }
        String::from_utf8(body).map_err(|e| provider_err("metadata", e))
    }

    /// Where the browser is sent: the provider's authorization endpoint with the flow's
    /// `state`, `nonce` and PKCE challenge (and the address as `login_hint` when known).
    pub async fn authorize_url(
        &self,
        rp: &OidcRp<'_>,
        (state, nonce, code_challenge): (&str, &str, &str),
        callback: &str,
        login_hint: Option<&str>,
    ) -> Result<String, SocialError> {
        let d = self.provider(rp.issuer).await?;
        let mut scopes = vec!["openid".to_owned()];
        scopes.extend(rp.scopes.iter().filter(|s| *s != "openid").cloned());
        let mut url = reqwest::Url::parse(&d.authorization_endpoint)
            .map_err(|e| provider_err("authorize", e))?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", rp.client_id)
                .append_pair("redirect_uri", callback)
                .append_pair("scope", &scopes.join(" "))
                .append_pair("state", state)
                .append_pair("nonce", nonce)
                .append_pair("code_challenge", code_challenge)
                .append_pair("code_challenge_method", "S256");
            if let Some(hint) = login_hint {
                q.append_pair("login_hint", hint);
            }
        }
        Ok(url.into())
    }

    /// The user at the provider: the code exchanged (client_secret_basic, the PKCE
    /// verifier), the ID token checked (`iss` the configured issuer), and its claims, with
    /// the userinfo endpoint's added where the ID token lacks them (same `sub` only).
    pub async fn claims(
        &self,
        rp: &OidcRp<'_>,
        code: &str,
        callback: &str,
        (nonce, verifier): (&str, &str),
    ) -> Result<serde_json::Map<String, Value>, SocialError> {
        let d = self.provider(rp.issuer).await?;
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", callback),
            ("code_verifier", verifier),
        ];
        let answer = self
            .core
            .json(
                "token",
                self.core
                    .http()
                    .post(&d.token_endpoint)
                    .basic_auth(
                        form_urlencoded::byte_serialize(rp.client_id.as_bytes())
                            .collect::<String>(),
                        Some(
                            form_urlencoded::byte_serialize(rp.client_secret.as_bytes())
                                .collect::<String>(),
                        ),
                    )
                    .header("accept", "application/json")
                    .form(&form),
            )
            .await?;
        let id_token = id_token_of(&answer)?;
        let claims = self
            .core
            .check_id_token(&d, id_token, (rp.client_id, nonce))
            .await?;
        if claims.get("iss").and_then(Value::as_str) != Some(rp.issuer) {
            return Err(SocialError::IdToken("iss is not the provider's".into()));
        }
        let Value::Object(mut claims) = claims else {
            return Err(SocialError::IdToken("claims are not an object".into()));
        };
        let access = answer.get("access_token").and_then(Value::as_str);
        if let (Some(endpoint), Some(access)) = (&d.userinfo_endpoint, access) {
            if !claims.contains_key("email") || !claims.contains_key("groups") {
                let info = self
                    .core
                    .json(
                        "userinfo",
                        self.core
                            .http()
                            .get(endpoint)
                            .bearer_auth(access)
                            .header("accept", "application/json"),
                    )
                    .await?;
                if info.get("sub") == claims.get("sub") {
                    if let Value::Object(info) = info {
                        for (k, v) in info {
                            claims.entry(k).or_insert(v);
                        }
                    }
                }
            }
        }
        Ok(claims)
    }
}
