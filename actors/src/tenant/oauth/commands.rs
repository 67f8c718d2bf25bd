//! The command surface of the authorization server: `OAuthCmd` (what its routes ask, with
//! the tokens presented back to it), its answers, and `oauth_cmd`, which carries one out.

use std::sync::Arc;

use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    authorize::{AuthorizeOutcome, AuthzRequest, ConsentDecision},
    consents::ConsentView,
    records::OAuthGrant,
    token::{OAuthIssued, TokenGrant},
};
use crate::tenant::ctx::TenantCtx;
use crate::tenant::oauth::OAuth;
use crate::{
    error::TenantError,
    tenant::{
        audit::AuditContext,
        messages::{Bearer, User},
        oauth_clients::OAuthClientRecord,
    },
};

/// A token presented for introspection or revocation, as the HTTP edge read it.
#[derive(Clone)]
pub enum PresentedToken {
    /// A verified access token of this tenant: its session and user, and the client it was
    /// issued to (none for a first-party token).
    Access {
        bearer: Bearer,
        client_id: Option<String>,
    },
    Refresh(String),
    /// Neither: inactive.
    Unknown,
}

#[derive(Clone)]
pub enum OAuthCmd {
    Authorize {
        bearer: Bearer,
        request: AuthzRequest,
        max_age: Option<u64>,
        /// `prompt=consent`: ask even with consent on file.
        force_consent: bool,
        /// `prompt=none`: never ask; consent missing is an error.
        no_prompt: bool,
    },
    Consent {
        bearer: Bearer,
        request: AuthzRequest,
        commitment: String,
        decision: ConsentDecision,
    },
    /// `client` authenticated by the edge ([`crate::tenant::oauth_clients::PublishedClients`]).
    Token {
        client: Arc<OAuthClientRecord>,
        grant: TokenGrant,
    },
    /// The user of a live grant of `client_id`.
    UserInfo {
        bearer: Bearer,
        client_id: String,
    },
    Revoke {
        client: Arc<OAuthClientRecord>,
        token: PresentedToken,
    },
    Introspect {
        client: Arc<OAuthClientRecord>,
        token: PresentedToken,
    },
    Consents {
        bearer: Bearer,
    },
    /// RP-initiated logout: ends each first-party sign-in session of `sessions` (a verified
    /// ID token's, the browser's hosted sign-in) that is still its user's, at once. `client_id`
    /// is the relying party that asked, when one is known.
    EndSession {
        sessions: Vec<Bearer>,
        client_id: Option<String>,
    },
    Withdraw {
        bearer: Bearer,
        client_id: String,
    },
}

#[derive(Clone, Debug)]
pub enum OAuthAnswer {
    Authorize(AuthorizeOutcome),
    /// The code, or `None` when the user denied.
    Decided(Option<String>),
    Issued(Box<OAuthIssued>),
    User(User),
    Done,
    /// Introspection: whether the token is active, and for a refresh token its grant.
    Introspected {
        active: bool,
        refresh: Option<(Uuid, Uuid, OAuthGrant, OffsetDateTime)>,
    },
    Consents(Vec<ConsentView>),
}

impl OAuth {
    /// Carries out one command; answers whether it wrote anything (so the reply waits for
    /// the disk).
    pub fn oauth_cmd(
        &mut self,
        cx: &mut TenantCtx,
        cmd: OAuthCmd,
        ctx: &AuditContext,
    ) -> Result<(OAuthAnswer, bool), TenantError> {
        Ok(match cmd {
            OAuthCmd::Authorize {
                bearer,
                request,
                max_age,
                force_consent,
                no_prompt,
            } => {
                let (outcome, wrote) = self.oauth_authorize(
                    cx,
                    bearer,
                    &request,
                    max_age,
                    (force_consent, no_prompt),
                )?;
                (OAuthAnswer::Authorize(outcome), wrote)
            }
            OAuthCmd::Consent {
                bearer,
                request,
                commitment,
                decision,
            } => (
                OAuthAnswer::Decided(self.oauth_consent(
                    cx,
                    bearer,
                    &request,
                    &commitment,
                    decision,
                    ctx,
                )?),
                true,
            ),
            OAuthCmd::Token { client, grant } => (
                OAuthAnswer::Issued(Box::new(self.oauth_token(cx, &client, grant, ctx)?)),
                true,
            ),
            OAuthCmd::UserInfo { bearer, client_id } => {
                let (_, user) = cx.live_grant(bearer, &client_id, OffsetDateTime::now_utc())?;
                (OAuthAnswer::User(user.view()), false)
            }
            OAuthCmd::Revoke { client, token } => {
                self.oauth_revoke(cx, &client, token, ctx)?;
                (OAuthAnswer::Done, true)
            }
            OAuthCmd::Introspect { client, token } => {
                (self.oauth_introspect(cx, &client, token)?, false)
            }
            OAuthCmd::Consents { bearer } => (
                OAuthAnswer::Consents(self.oauth_consents(cx, bearer)?),
                false,
            ),
            OAuthCmd::EndSession {
                sessions,
                client_id,
            } => (
                OAuthAnswer::Done,
                self.oauth_end_session(cx, &sessions, client_id.as_deref(), ctx)?,
            ),
            OAuthCmd::Withdraw { bearer, client_id } => {
                self.oauth_withdraw(cx, bearer, &client_id, ctx)?;
                (OAuthAnswer::Done, true)
            }
        })
    }
}
