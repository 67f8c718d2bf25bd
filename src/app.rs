//! The application: what HTTP handlers and admin commands share. Both reach the actors only
//! through the operations here, so one capability has one code path.

use std::sync::Arc;
use tessera_actors::tenant::GuestsMsg;

use ipnet::IpNet;
use tessera_actors::{
    directory::{
        dashboard::MailedToken, CreateOutcome, Created, IdempotencyKey, NewOwner, NewTenant,
    },
    tenant::guests::PurgeReport,
    CallError, DirectoryError, DirectoryHandle, DirectoryMsg, Password, PasswordHasher,
};

use tessera_storage::KeyedHasher;

use crate::{
    captcha::Captcha,
    config::Config,
    delivery::mail::{Mail, Mailer},
    http::error::ApiError,
    metrics::Metrics,
};

pub struct App {
    pub config: Config,
    /// The database itself, for the one storage-level operation that spans every owner: the
    /// admin backup (see ARCHITECTURE.md). Everything else goes through the actors.
    pub store: tessera_storage::Store,
    pub directory: DirectoryHandle,
    pub hasher: PasswordHasher,
    pub captcha: Captcha,
    /// Speaks to the social sign-in providers.
    pub social: crate::social::SocialClient,
    /// Checks wallet presentations (fetches issuers' keys and status lists).
    pub wallet: crate::eudi::WalletVerifier,
    /// Looks up the TXT records that prove organizations' domains.
    pub dns: crate::dns::TxtLookup,
    /// Speaks to organizations' OpenID providers and reads SAML metadata.
    pub federation: crate::oidc_rp::Federation,
    pub mailer: Arc<Mailer>,
    /// Sends text messages (the dashboard's test directly; tenants' through the courier).
    pub texter: Arc<crate::delivery::sms::Texter>,
    /// Keyed hash of client addresses for audit events.
    pub ip_hasher: KeyedHasher,
    /// Keyed hash that makes the hosted sign-in cookies of the authorization server
    /// unforgeable (`http::oauth::browser`).
    pub sign_in_hasher: KeyedHasher,
    pub metrics: Metrics,
    /// Access tokens already verified (see `http::bearer`).
    pub verified_tokens: crate::verified_tokens::VerifiedTokens,
    pub trusted_proxies: Vec<IpNet>,
    /// `server.base_url`, or `http://<bound address>`.
    pub base_url: String,
    /// `X-Service-Docs` of every 429: `server.docs_url`, or the served OpenAPI document.
    pub service_docs: axum::http::HeaderValue,
    /// Which tenants this node serves (`[cluster]`); every one when clustering is off.
    pub cluster: crate::cluster::Cluster,
}

pub type AppState = Arc<App>;

/// A tenant to create, validated by the caller.
pub struct TenantCreation {
    pub name: String,
    pub slug: Option<String>,
    pub owner: Option<(String, Password)>,
    pub idempotency: Option<IdempotencyKey>,
}

impl App {
    /// Creates a tenant with its API key and, when given, its owner: a new dashboard account.
    /// An e-mail that already has an account is refused without looking at the password, so
    /// this unauthenticated path is never a password oracle; argon2 runs here, off the
    /// directory.
    pub async fn create_tenant(&self, c: TenantCreation) -> Result<CreateOutcome, ApiError> {
        let owner = match c.owner {
            None => None,
            Some((email, password)) => {
                let email = email.to_lowercase();
                let existing = self
                    .directory
                    .call(|reply| DirectoryMsg::FindAccount {
                        email: email.clone(),
                        reply,
                    })
                    .await?;
                if existing.is_some() && c.idempotency.is_none() {
                    return Err(CallError::Failed(DirectoryError::AccountExists).into());
                }
                // With an idempotency key the directory decides: a replay of this very
                // request answers the first result, anything else is refused there.
                let password_hash = self.hasher.hash(&password).await?;
                Some(NewOwner::Create {
                    email,
                    password_hash,
                })
            }
        };
        let req = NewTenant {
            name: c.name,
            slug: c.slug,
            owner,
            idempotency: c.idempotency,
        };
        let outcome: CreateOutcome = self
            .directory
            .request(|reply| DirectoryMsg::CreateTenant { req, reply })
            .await?;
        // A tenant created here is served here, once its lease is taken.
        self.cluster.claim(outcome.created.tenant.id).await;
        if let Some(v) = &outcome.verification {
            self.mail_verification(v).await;
        }
        Ok(outcome)
    }

    /// Where links mailed by the dashboard point: `server.accounts_url`, else this server.
    pub fn accounts_base(&self) -> String {
        if self.config.server.accounts_url.is_empty() {
            self.base_url.clone()
        } else {
            self.config
                .server
                .accounts_url
                .trim_end_matches('/')
                .to_owned()
        }
    }

    /// Sends a dashboard-account message now; whether the transport took it. A failure is
    /// logged by kind only (never the address or the link).
    pub async fn mail_account(&self, to: &str, subject: &str, text: String) -> bool {
        let sent = self.mailer.send(Mail { to, subject, text }).await;
        if let Err(e) = &sent {
            tracing::error!(error = %e, subject, "a dashboard e-mail could not be sent");
        }
        sent.is_ok()
    }

    /// Mails a dashboard account the link that verifies its address.
    pub async fn mail_verification(&self, t: &MailedToken) -> bool {
        let text = format!(
            "Confirm that this address is yours to finish setting up your Tessera dashboard \
             account.\n\nSigned in to the dashboard, open this link (it works once, for 2 days):\n\
             {}/dashboard/verify-email?token={}\n\n\
             Until then the account can use only the tenant it created. If you did not sign up, \
             someone else typed your address: do not use the link; reset the password instead \
             ({}/dashboard/forgot-password), which makes the account yours and ends the other \
             person's access. The tenant that person created is then detached from the account: \
             it stays theirs, and you do not become its member.\n",
            self.accounts_base(),
            t.token,
            self.accounts_base(),
        );
        self.mail_account(&t.email, "Confirm your Tessera dashboard address", text)
            .await
    }

    /// Runs the guest purge now for one tenant or all, evaluating ages as of `as_of`. A
    /// tenant that fails is logged and skipped so the others still run.
    pub async fn purge(
        &self,
        slug: Option<&str>,
        as_of: time::OffsetDateTime,
        dry_run: bool,
    ) -> Result<Vec<PurgeReport>, ApiError> {
        let tenants = match slug {
            Some(s) => vec![self
                .directory
                .tenant_for_slug(s)
                .ok_or_else(|| ApiError::not_found("tenant"))?],
            // On a cluster node, only the tenants served here.
            None => self
                .directory
                .all_tenants()
                .into_iter()
                .filter(|t| self.cluster.admit(t.id).is_ok())
                .collect(),
        };
        let mut out = Vec::with_capacity(tenants.len());
        for t in tenants {
            match t
                .call(|reply| GuestsMsg::PurgeGuests {
                    as_of,
                    dry_run,
                    reply,
                })
                .await
            {
                Ok(report) => out.push(report),
                Err(e) if slug.is_some() => return Err(e.into()),
                Err(e) => tracing::error!(tenant = %t.slug, error = %e, "guest purge failed"),
            }
        }
        Ok(out)
    }

    /// Counts one onboarding sign-up from `ip` against `security.onboarding_per_ip_hourly`
    /// (IPv6 by its /64): 429 `auth/rate_limited` with `Retry-After` past it. Called before
    /// anything is hashed, so a flood costs no argon2.
    pub async fn admit_signup(&self, ip: std::net::IpAddr) -> Result<(), ApiError> {
        self.directory
            .call(|reply| DirectoryMsg::AdmitSignup { ip, reply })
            .await?
            .map_err(|retry_after| ApiError::rate_limited("auth/rate_limited", retry_after))
    }

    /// The earlier answer to this idempotency key and request, if any; a different request
    /// under the same key is refused.
    pub async fn replay(&self, key: IdempotencyKey) -> Result<Option<Created>, ApiError> {
        Ok(self
            .directory
            .request(|reply| DirectoryMsg::ReplayIdempotent { key, reply })
            .await?)
    }
}
