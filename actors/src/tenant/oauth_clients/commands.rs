//! The command surface of the OAuth client registry: `OAuthClientCmd` (what the dashboard,
//! RFC 7591 registration and the admin CLI ask), its answers, and `oauth_client_cmd`, which
//! carries one out.

use super::{
    records::{ClientType, OAuthClientRecord},
    registry::{IssuedClient, NewOAuthClient, OAuthClientPatch},
};
use crate::tenant::ctx::TenantCtx;
use crate::tenant::oauth_clients::memory::OAuthClients;
use crate::{error::TenantError, tenant::audit::AuditContext};

/// What the dashboard and the admin CLI ask of the registry.
#[derive(Clone, Debug)]
pub enum OAuthClientCmd {
    List,
    Get(String),
    Create(NewOAuthClient),
    Update(String, OAuthClientPatch),
    Delete(String),
    RotateSecret(String),
    Attest(String),
    /// RFC 7591 dynamic registration of a public client from `ip`, when the tenant allows it
    /// (else not found).
    Register(NewOAuthClient, std::net::IpAddr),
}

#[derive(Clone, Debug)]
pub enum OAuthClientAnswer {
    List(Vec<OAuthClientRecord>),
    One(OAuthClientRecord),
    Issued(IssuedClient),
    Deleted,
}

impl OAuthClients {
    /// Carries out one registry command.
    pub fn oauth_client_cmd(
        &mut self,
        cx: &mut TenantCtx,
        cmd: OAuthClientCmd,
        ctx: &AuditContext,
    ) -> Result<OAuthClientAnswer, TenantError> {
        Ok(match cmd {
            OAuthClientCmd::List => OAuthClientAnswer::List(self.oauth_clients(cx)?),
            OAuthClientCmd::Get(id) => OAuthClientAnswer::One(cx.oauth_client(&id)?),
            OAuthClientCmd::Create(new) => {
                OAuthClientAnswer::Issued(self.oauth_client_create(cx, new, ctx)?)
            }
            OAuthClientCmd::Update(id, patch) => {
                OAuthClientAnswer::One(self.oauth_client_update(cx, &id, patch, ctx)?)
            }
            OAuthClientCmd::Delete(id) => {
                self.oauth_client_delete(cx, &id, ctx)?;
                OAuthClientAnswer::Deleted
            }
            OAuthClientCmd::RotateSecret(id) => {
                OAuthClientAnswer::Issued(self.oauth_client_rotate_secret(cx, &id, ctx)?)
            }
            OAuthClientCmd::Attest(id) => {
                OAuthClientAnswer::One(self.oauth_client_attest(cx, &id, ctx)?)
            }
            OAuthClientCmd::Register(new, ip) => {
                if !cx.settings.dynamic_client_registration
                    || new.profile.client_type != ClientType::Public
                {
                    return Err(TenantError::NotFound);
                }
                let ip = crate::throttle::throttle_ip(ip);
                self.dcr_per_ip
                    .hit(&ip, std::time::Instant::now())
                    .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
                OAuthClientAnswer::Issued(self.oauth_client_make(cx, new, true, ctx)?)
            }
        })
    }
}
