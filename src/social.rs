//! Talking to the social sign-in providers: where each is reached (its own endpoints, or
//! those of `[social.<provider>]`), OpenID discovery and the provider's keys (cached, the keys
//! fetched again when an ID token names one not seen), the authorization URL, the code
//! exchange, the ID token's check and, for the OAuth 2 providers, the profile from their API.
//! One HTTP client with a timeout and no redirects; every answer is read up to 1 MiB.
//!
//! Nothing here decides who the user is in the tenant: that is the tenant actor's
//! (`tenant::social`), given the [`SocialIdentity`] found here.

use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::Value;
use tessera_actors::tenant::social::{
    pkcs8_der, Protocol, Provider, ProviderTokens, SocialIdentity, SocialPending, SocialStart,
};

use crate::config::SocialConfig;
pub use crate::oidc_rp::SocialError;
use crate::oidc_rp::{id_token_of, provider_err, Discovery, OidcCore};

/// Where an OAuth 2 provider is reached.
struct RestEndpoints {
    authorization: String,
    token: String,
    api: String,
}

/// What a provider's callback brings back to exchange: the code, with the sign-in it answers
/// and the callback URL the code was issued for.
#[derive(Clone, Copy)]
pub struct Exchange<'a> {
    pub provider: Provider,
    pub pending: &'a SocialPending,
    pub code: &'a str,
    pub callback: &'a str,
}

impl<'a> Exchange<'a> {
    /// The token request's form as every provider takes it; the client's authentication and
    /// the PKCE verifier are the provider's to add.
    fn token_form(&self) -> Vec<(&'static str, &'a str)> {
        vec![
            ("grant_type", "authorization_code"),
            ("code", self.code),
            ("redirect_uri", self.callback),
            ("client_id", self.pending.client_id.as_str()),
        ]
    }
}

pub struct SocialClient {
    core: OidcCore,
    config: SocialConfig,
}

/// The provider's own issuer of an OpenID provider (`{tenant}`: Microsoft's directory).
fn default_issuer(p: Provider) -> &'static str {
    match p {
        Provider::Google => "https://accounts.google.com",
        Provider::Apple => "https://appleid.apple.com",
        Provider::Microsoft => "https://login.microsoftonline.com/{tenant}/v2.0",
        Provider::Gitlab => "https://gitlab.com",
        Provider::Linkedin => "https://www.linkedin.com/oauth",
        Provider::Slack => "https://slack.com",
        Provider::Github | Provider::Discord | Provider::Facebook | Provider::X => "",
    }
}

/// The provider's own endpoints of an OAuth 2 provider: authorization, token, API.
fn default_rest(p: Provider) -> (&'static str, &'static str, &'static str) {
    match p {
        Provider::Github => (
            "https://github.com/login/oauth/authorize",
            "https://github.com/login/oauth/access_token",
            "https://api.github.com",
        ),
        Provider::Discord => (
            "https://discord.com/oauth2/authorize",
            "https://discord.com/api/oauth2/token",
            "https://discord.com/api",
        ),
        Provider::Facebook => (
            "https://www.facebook.com/v21.0/dialog/oauth",
            "https://graph.facebook.com/v21.0/oauth/access_token",
            "https://graph.facebook.com/v21.0",
        ),
        Provider::X => (
            "https://x.com/i/oauth2/authorize",
            "https://api.x.com/2/oauth2/token",
            "https://api.x.com/2",
        ),
        _ => ("", "", ""),
    }
}

fn or_default(configured: &str, default: &str) -> String {
    if configured.is_empty() {
        default.to_owned()
    } else {
        configured.trim_end_matches('/').to_owned()
    }
}

/// The provider's tokens in a token endpoint's answer.
fn tokens_of(answer: &Value) -> ProviderTokens {
    let text = |k: &str| answer.get(k).and_then(Value::as_str).map(str::to_owned);
    ProviderTokens {
        access_token: text("access_token").unwrap_or_default(),
        refresh_token: text("refresh_token"),
        expires_at: answer
            .get("expires_in")
            .and_then(Value::as_i64)
            .filter(|s| (1..=10 * 365 * 86_400).contains(s))
            .map(|s| time::OffsetDateTime::now_utc() + time::Duration::seconds(s)),
        scope: text("scope"),
    }
}

/// A claim that is a boolean, or the strings `"true"`/`"false"` (Apple's way).
fn truthy(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s == "true",
        _ => false,
    }
}

/// Apple's client secret: an ES256 JWT signed with the tenant's key, naming the team (`iss`),
/// the Services ID (`sub`) and Apple (`aud`), valid five minutes.
fn apple_client_secret(pending: &SocialPending, audience: &str) -> Result<String, SocialError> {
    let ids = pending
        .apple
        .as_ref()
        .ok_or_else(|| SocialError::Provider("Apple's key ids are not configured".into()))?;
    let der = pkcs8_der(&pending.secret)
        .ok_or_else(|| SocialError::Provider("Apple's private key is not PEM".into()))?;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(ids.key_id.clone());
    let claims = serde_json::json!({
        "iss": ids.team_id,
        "iat": now,
        "exp": now + 300,
        "aud": audience,
        "sub": pending.client_id,
    });
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ec_der(&der))
        .map_err(|e| provider_err("signing Apple's client secret", e))
}

impl SocialClient {
    pub fn new(config: SocialConfig) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(config.timeout_ms))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("Tessera/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("social client: {e}"))?;
        // The operator configures where providers are reached: any address will do.
        let core = OidcCore::new(http, Duration::from_secs(config.keys_refetch_secs), true);
        Ok(SocialClient { core, config })
    }

    /// The issuer of an OpenID provider for a tenant (Microsoft: with its directory).
    fn issuer(&self, p: Provider, microsoft_tenant: Option<&str>) -> String {
        let issuer = or_default(&self.config.endpoints(p).issuer, default_issuer(p));
        issuer.replace("{tenant}", microsoft_tenant.unwrap_or("common"))
    }

    fn rest(&self, p: Provider) -> RestEndpoints {
        let e = self.config.endpoints(p);
        let (a, t, api) = default_rest(p);
        RestEndpoints {
            authorization: or_default(&e.authorization_endpoint, a),
            token: or_default(&e.token_endpoint, t),
            api: or_default(&e.api_base_url, api),
        }
    }

    /// Where the browser is sent: the provider's authorization endpoint with the flow's
    /// `state`, `nonce` (OpenID) and PKCE challenge (where the provider takes one).
    pub async fn authorize_url(
        &self,
        p: Provider,
        start: &SocialStart,
        callback: &str,
    ) -> Result<String, SocialError> {
        let mut scopes = start.scopes.clone();
        if let Some(required) = p.required_scope() {
            if !scopes.iter().any(|s| s == required) {
                scopes.insert(0, required.to_owned());
            }
        }
        let (endpoint, pkce) = match p.protocol() {
            Protocol::Oidc => {
                let d = self
                    .core
                    .discovery(&self.issuer(p, start.microsoft_tenant.as_deref()))
                    .await?;
                let pkce = d
                    .code_challenge_methods_supported
                    .iter()
                    .any(|m| m == "S256");
                (d.authorization_endpoint.clone(), pkce)
            }
            Protocol::OAuth2 => (self.rest(p).authorization, p == Provider::X),
        };
        let mut url = reqwest::Url::parse(&endpoint).map_err(|e| provider_err("authorize", e))?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &start.client_id)
                .append_pair("redirect_uri", callback)
                .append_pair("scope", &scopes.join(" "))
                .append_pair("state", &start.state);
            if p.protocol() == Protocol::Oidc {
                q.append_pair("nonce", &start.nonce);
            }
            if p == Provider::Apple {
                // Apple sends the name and e-mail scopes' answer only by form post.
                q.append_pair("response_mode", "form_post");
            }
            if pkce {
                q.append_pair("code_challenge", &start.code_challenge)
                    .append_pair("code_challenge_method", "S256");
            }
        }
        Ok(url.into())
    }

    /// The user at the provider: the code exchanged (with the PKCE verifier where one was
    /// sent), then the ID token checked or the profile read.
    pub async fn identity(&self, x: Exchange<'_>) -> Result<SocialIdentity, SocialError> {
        match x.provider.protocol() {
            Protocol::Oidc => self.oidc_identity(x).await,
            Protocol::OAuth2 => self.rest_identity(x).await,
        }
    }

    async fn oidc_identity(&self, x: Exchange<'_>) -> Result<SocialIdentity, SocialError> {
        let (p, pending) = (x.provider, x.pending);
        let issuer = self.issuer(p, pending.microsoft_tenant.as_deref());
        let d = self.core.discovery(&issuer).await?;
        let secret = if p == Provider::Apple {
            apple_client_secret(pending, &d.issuer)?
        } else {
            pending.secret.clone()
        };
        let mut form = x.token_form();
        form.push(("client_secret", secret.as_str()));
        if d.code_challenge_methods_supported
            .iter()
            .any(|m| m == "S256")
        {
            form.push(("code_verifier", pending.pkce_verifier.as_str()));
        }
        let answer = self
            .core
            .json(
                "token",
                self.core
                    .http()
                    .post(&d.token_endpoint)
                    .header("accept", "application/json")
                    .form(&form),
            )
            .await?;
        let id_token = id_token_of(&answer)?;
        let claims = self.check_id_token(&d, id_token, pending).await?;
        let subject = claims
            .get("sub")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty() && s.len() <= 255)
            .ok_or_else(|| SocialError::IdToken("no sub".into()))?
            .to_owned();
        let said = |k: &str| claims.get(k).map(|v| truthy(Some(v)));
        let email_verified = match (said("email_verified"), p) {
            (Some(false) | None, Provider::Microsoft) if said("xms_edov") == Some(true) => {
                Some(true)
            }
            (said, _) => said,
        };
        Ok(SocialIdentity {
            tokens: tokens_of(&answer),
            subject,
            email: claims
                .get("email")
                .and_then(Value::as_str)
                .map(str::to_owned),
            email_verified,
        })
    }

    /// The ID token's claims once its signature, `aud`, `exp`, `iat` and `nonce` are right
    /// (see [`OidcCore::check_id_token`]) and `iss` is the provider's: the discovery's
    /// issuer, or for Microsoft's multi-directory issuer the user's directory (`tid`) where
    /// the document says `{tenantid}`.
    async fn check_id_token(
        &self,
        d: &Discovery,
        token: &str,
        pending: &SocialPending,
    ) -> Result<Value, SocialError> {
        let claims = self
            .core
            .check_id_token(d, token, (&pending.client_id, &pending.nonce))
            .await?;
        let iss = claims.get("iss").and_then(Value::as_str).unwrap_or("");
        let expected = match claims.get("tid").and_then(Value::as_str) {
            Some(tid) => d.issuer.replace("{tenantid}", tid),
            None => d.issuer.clone(),
        };
        if iss != expected {
            return Err(SocialError::IdToken("iss is not the provider's".into()));
        }
        Ok(claims)
    }

    async fn rest_identity(&self, x: Exchange<'_>) -> Result<SocialIdentity, SocialError> {
        let (p, pending) = (x.provider, x.pending);
        let e = self.rest(p);
        let mut form = x.token_form();
        let mut req = self
            .core
            .http()
            .post(&e.token)
            .header("accept", "application/json");
        if p == Provider::X {
            // X: a confidential client authenticates with HTTP Basic, and PKCE is required.
            req = req.basic_auth(&pending.client_id, Some(&pending.secret));
            form.push(("code_verifier", pending.pkce_verifier.as_str()));
        } else {
            form.push(("client_secret", pending.secret.as_str()));
        }
        let answer = self.core.json("token", req.form(&form)).await?;
        let tokens = tokens_of(&answer);
        let token = answer
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| SocialError::Provider("the token answer has no access_token".into()))?
            .to_owned();
        let get = |path: &str| {
            self.core
                .http()
                .get(format!("{}{path}", e.api))
                .bearer_auth(&token)
                .header("accept", "application/json")
        };
        let id_of = |v: &Value| match v {
            Value::String(s) if !s.is_empty() && s.len() <= 255 => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        let missing = || SocialError::Provider("the profile has no id".into());
        match p {
            Provider::Github => {
                let user = self.core.json("profile", get("/user")).await?;
                let subject = user.get("id").and_then(id_of).ok_or_else(missing)?;
                let emails = self
                    .core
                    .json("e-mail addresses", get("/user/emails"))
                    .await?;
                let primary = emails
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|m| m.get("primary").and_then(Value::as_bool) == Some(true));
                Ok(SocialIdentity {
                    tokens,
                    subject,
                    email: primary
                        .and_then(|m| m.get("email"))
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    email_verified: primary
                        .and_then(|m| m.get("verified"))
                        .and_then(Value::as_bool),
                })
            }
            Provider::Discord => {
                let user = self.core.json("profile", get("/users/@me")).await?;
                Ok(SocialIdentity {
                    tokens,
                    subject: user.get("id").and_then(id_of).ok_or_else(missing)?,
                    email: user.get("email").and_then(Value::as_str).map(str::to_owned),
                    email_verified: user.get("verified").and_then(Value::as_bool),
                })
            }
            Provider::Facebook => {
                let user = self
                    .core
                    .json("profile", get("/me?fields=id,email"))
                    .await?;
                Ok(SocialIdentity {
                    tokens,
                    subject: user.get("id").and_then(id_of).ok_or_else(missing)?,
                    email: user.get("email").and_then(Value::as_str).map(str::to_owned),
                    email_verified: None,
                })
            }
            _ => {
                // X: the account's id; X gives no address without a separate permission.
                let user = self.core.json("profile", get("/users/me")).await?;
                Ok(SocialIdentity {
                    tokens,
                    subject: user
                        .get("data")
                        .and_then(|d| d.get("id"))
                        .and_then(id_of)
                        .ok_or_else(missing)?,
                    email: None,
                    email_verified: None,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_that_say_true() {
        assert!(truthy(Some(&Value::Bool(true))));
        assert!(truthy(Some(&Value::String("true".into()))));
        assert!(!truthy(Some(&Value::String("false".into()))));
        assert!(!truthy(Some(&Value::String("TRUE".into()))));
        assert!(!truthy(None));
        assert!(!truthy(Some(&Value::Number(1.into()))));
    }

    #[test]
    fn endpoints_default_to_the_providers_own() -> Result<(), String> {
        let c = SocialClient::new(SocialConfig::default())?;
        assert_eq!(
            c.issuer(Provider::Microsoft, Some("organizations")),
            "https://login.microsoftonline.com/organizations/v2.0"
        );
        assert_eq!(
            c.issuer(Provider::Google, None),
            "https://accounts.google.com"
        );
        assert_eq!(c.rest(Provider::Github).api, "https://api.github.com");
        let mut config = SocialConfig::default();
        config.gitlab.issuer = "https://gitlab.example.com/".into();
        let c = SocialClient::new(config)?;
        assert_eq!(
            c.issuer(Provider::Gitlab, None),
            "https://gitlab.example.com"
        );
        Ok(())
    }
}
