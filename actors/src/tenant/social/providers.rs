//! The ten providers the platform speaks to: the protocol of each, how far its e-mail
//! addresses are trusted, its default scopes; and the check of Apple's signing key.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Google,
    Apple,
    Microsoft,
    Gitlab,
    Linkedin,
    Slack,
    Github,
    Discord,
    Facebook,
    X,
}

/// How the platform signs a user in with a provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// OpenID Connect: discovery, a signed ID token.
    Oidc,
    /// OAuth 2 and the provider's REST API for the profile.
    OAuth2,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Oidc => "oidc",
            Protocol::OAuth2 => "oauth2",
        }
    }
}

/// How far a provider's e-mail address is trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmailTrust {
    /// The provider hands out only addresses it owns or has checked.
    AlwaysVerified,
    /// The provider says, per address, whether it checked it.
    ProviderVerified,
    /// Whatever the provider says, the address proves nothing.
    NeverTrust,
}

impl EmailTrust {
    pub fn as_str(self) -> &'static str {
        match self {
            EmailTrust::AlwaysVerified => "always_verified",
            EmailTrust::ProviderVerified => "provider_verified",
            EmailTrust::NeverTrust => "never_trust",
        }
    }
}

impl Provider {
    pub const ALL: [Provider; 10] = [
        Provider::Google,
        Provider::Apple,
        Provider::Microsoft,
        Provider::Gitlab,
        Provider::Linkedin,
        Provider::Slack,
        Provider::Github,
        Provider::Discord,
        Provider::Facebook,
        Provider::X,
    ];

    /// The provider of a lowercase name (as in paths).
    pub fn parse(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// The name people know it by.
    pub fn display_name(self) -> &'static str {
        match self {
            Provider::Google => "Google",
            Provider::Apple => "Apple",
            Provider::Microsoft => "Microsoft",
            Provider::Gitlab => "GitLab",
            Provider::Linkedin => "LinkedIn",
            Provider::Slack => "Slack",
            Provider::Github => "GitHub",
            Provider::Discord => "Discord",
            Provider::Facebook => "Facebook",
            Provider::X => "X",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Google => "google",
            Provider::Apple => "apple",
            Provider::Microsoft => "microsoft",
            Provider::Gitlab => "gitlab",
            Provider::Linkedin => "linkedin",
            Provider::Slack => "slack",
            Provider::Github => "github",
            Provider::Discord => "discord",
            Provider::Facebook => "facebook",
            Provider::X => "x",
        }
    }

    pub fn protocol(self) -> Protocol {
        match self {
            Provider::Google
            | Provider::Apple
            | Provider::Microsoft
            | Provider::Gitlab
            | Provider::Linkedin
            | Provider::Slack => Protocol::Oidc,
            Provider::Github | Provider::Discord | Provider::Facebook | Provider::X => {
                Protocol::OAuth2
            }
        }
    }

    pub fn email_trust(self) -> EmailTrust {
        match self {
            Provider::Google | Provider::Apple => EmailTrust::AlwaysVerified,
            Provider::Microsoft
            | Provider::Gitlab
            | Provider::Linkedin
            | Provider::Slack
            | Provider::Github
            | Provider::Discord => EmailTrust::ProviderVerified,
            Provider::Facebook | Provider::X => EmailTrust::NeverTrust,
        }
    }

    /// The scopes asked for when the tenant names none: the user's id, e-mail address and
    /// name, nothing more.
    pub fn default_scopes(self) -> &'static [&'static str] {
        match self {
            Provider::Google
            | Provider::Microsoft
            | Provider::Gitlab
            | Provider::Linkedin
            | Provider::Slack => &["openid", "email", "profile"],
            Provider::Apple => &["name", "email"],
            Provider::Github => &["read:user", "user:email"],
            Provider::Discord => &["identify", "email"],
            Provider::Facebook => &["public_profile", "email"],
            Provider::X => &["users.read", "tweet.read"],
        }
    }

    /// A scope every request must carry, whatever the tenant asks for (`openid`, without which
    /// an OpenID provider sends no ID token; Apple sends one without it).
    pub fn required_scope(self) -> Option<&'static str> {
        (self.protocol() == Protocol::Oidc && self != Provider::Apple).then_some("openid")
    }

    /// Whether the provider signs in with a client secret the tenant pastes (all but Apple,
    /// whose client secret is a JWT signed with the tenant's key).
    pub fn takes_client_secret(self) -> bool {
        self != Provider::Apple
    }
}

/// Apple's identifiers of the key that signs the client secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppleKeyId {
    /// The Apple developer team (10 characters).
    pub team_id: String,
    /// The key's id (10 characters).
    pub key_id: String,
}

/// Whether `pem` is a P-256 private key in PKCS#8 PEM (an Apple `.p8` file) that signs an
/// ES256 JWT, as Apple's client secret is.
pub fn apple_key_signs(pem: &str) -> bool {
    let Some(der) = pkcs8_der(pem) else {
        return false;
    };
    let key = jsonwebtoken::EncodingKey::from_ec_der(&der);
    let header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    jsonwebtoken::encode(&header, &serde_json::json!({ "sub": "check" }), &key).is_ok()
}

/// The DER inside a PEM `PRIVATE KEY` block (PKCS#8, RFC 7468), whatever the line breaks.
pub fn pkcs8_der(pem: &str) -> Option<Vec<u8>> {
    use base64::{engine::general_purpose::STANDARD, Engine};
    const BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
    const END: &str = "-----END PRIVATE KEY-----";
    let body = pem.trim().strip_prefix(BEGIN)?.strip_suffix(END)?;
    let b64: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    STANDARD.decode(b64).ok().filter(|d| !d.is_empty())
}
