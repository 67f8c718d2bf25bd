//! The application: what HTTP handlers and admin commands share. Both reach the actors only
//! through the operations here, so one capability has one code path.

use std::sync::Arc;

use ipnet::IpNet;
use tessera_actors::{
    directory::{CreateOutcome, IdempotencyKey, NewOwner, NewTenant},
    CallError, DirectoryError, DirectoryHandle, DirectoryMsg, Password, PasswordHasher,
};

use crate::{captcha::Captcha, config::Config, http::error::ApiError, metrics::Metrics};

pub struct App {
    pub config: Config,
    pub directory: DirectoryHandle,
    pub hasher: PasswordHasher,
    pub captcha: Captcha,
    pub metrics: Metrics,
    pub trusted_proxies: Vec<IpNet>,
    /// `server.base_url`, or `http://<bound address>`.
    pub base_url: String,
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
    /// Creates a tenant with its API key and, when given, its owner. An owner e-mail that
    /// already has a dashboard account adds the tenant to that account, provided the password
    /// is that account's; argon2 runs here, off the directory.
    pub async fn create_tenant(&self, c: TenantCreation) -> Result<CreateOutcome, ApiError> {
        let owner = match c.owner {
            None => None,
            Some((email, password)) => {
                let email = email.to_lowercase();
                let lookup = email.clone();
                let existing = self
                    .directory
                    .call(|reply| DirectoryMsg::FindAccount {
                        email: lookup,
                        reply,
                    })
                    .await?;
                match existing {
                    Some(cred) => {
                        if self
                            .hasher
                            .verify(&password, Some(&cred.password_hash))
                            .await
                        {
                            Some(NewOwner::Existing {
                                account_id: cred.account_id,
                            })
                        } else {
                            return Err(CallError::Failed(DirectoryError::AccountExists).into());
                        }
                    }
                    None => {
                        let password_hash = self
                            .hasher
                            .hash(&password)
                            .await
                            .map_err(ApiError::internal)?;
                        Some(NewOwner::Create {
                            email,
                            password_hash,
                        })
                    }
                }
            }
        };
        let req = NewTenant {
            name: c.name,
            slug: c.slug,
            owner,
            idempotency: c.idempotency,
        };
        Ok(self
            .directory
            .request(|reply| DirectoryMsg::CreateTenant { req, reply })
            .await?)
    }
}
