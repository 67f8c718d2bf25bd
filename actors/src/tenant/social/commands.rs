//! The command surface of social sign-in: `SocialCmd` (what the authorize route, the
//! callback, the app's back end and the signed-in user ask), its answers, and `social_cmd`,
//! which carries one out.

use std::net::IpAddr;

use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    finish::SocialFinished,
    flow::{SocialPending, SocialStart},
    identities::{ProviderTokens, SocialIdentity},
    linking::TicketView,
    providers::Provider,
    records::SocialIdentityRecord,
};
use crate::tenant::ctx::TenantCtx;
use crate::tenant::social::memory::Social;
use crate::{
    error::TenantError,
    tenant::{
        audit::AuditContext,
        messages::{Bearer, PasswordlessLogin},
    },
};

#[derive(Clone, Debug)]
pub enum SocialCmd {
    /// The authorize route: a new flow for `redirect_uri` (one of the tenant's URLs, or with
    /// `hosted` the hosted sign-in page's return page), claiming `guest` if given.
    Begin {
        provider: Provider,
        redirect_uri: String,
        hosted: bool,
        guest: Option<Bearer>,
        /// A link ticket: the flow links to its user and returns to its `redirect_uri`.
        link_ticket: Option<String>,
        ip: IpAddr,
    },
    /// The callback: takes the flow of `state`, which must be bound to `binding`.
    Take {
        provider: Provider,
        state: String,
        binding: String,
    },
    /// The callback, after the provider: the user of `identity`, by the rules of spec 4.2.
    Finish {
        provider: Provider,
        identity: SocialIdentity,
        guest: Option<Uuid>,
        link_user: Option<Uuid>,
    },
    /// The app's back end trades an exchange token for a session.
    Session { provider: Provider, jti: Uuid },
    /// A signed-in user (past the step-up gate) asks to link `provider`: a ticket for the
    /// authorize URL.
    LinkStart {
        bearer: Bearer,
        provider: Provider,
        redirect_uri: String,
    },
    /// The signed-in user's linked provider accounts.
    Identities { bearer: Bearer },
    /// Unlinks the signed-in user's account of `provider` (past the step-up gate).
    Unlink { bearer: Bearer, provider: Provider },
    /// The kept provider tokens of the signed-in user's account of `provider` (past the
    /// step-up gate).
    Tokens { bearer: Bearer, provider: Provider },
    /// What the link confirmation page shows of a ticket, without using it.
    PeekTicket { provider: Provider, ticket: String },
}

pub enum SocialAnswer {
    Started(Box<SocialStart>),
    Pending(Box<SocialPending>),
    Finished(SocialFinished),
    /// An explicit link made (or already there).
    Linked,
    Login(Box<PasswordlessLogin>),
    Ticket(String),
    Identities(Vec<SocialIdentityRecord>),
    Unlinked,
    Tokens(Box<ProviderTokens>),
    TicketView(Box<TicketView>),
}

impl std::fmt::Debug for SocialAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SocialAnswer(..)")
    }
}

impl Social {
    pub fn social_cmd(
        &mut self,
        cx: &mut TenantCtx,
        cmd: SocialCmd,
        ctx: &AuditContext,
    ) -> Result<SocialAnswer, TenantError> {
        let now = OffsetDateTime::now_utc();
        Ok(match cmd {
            SocialCmd::Begin {
                provider,
                redirect_uri,
                hosted,
                guest,
                link_ticket,
                ip,
            } => SocialAnswer::Started(Box::new(self.social_begin(
                cx,
                provider,
                (redirect_uri, hosted),
                (guest, link_ticket),
                ip,
                now,
            )?)),
            SocialCmd::Take {
                provider,
                state,
                binding,
            } => SocialAnswer::Pending(Box::new(
                self.social_take(cx, provider, &state, &binding, now)?,
            )),
            SocialCmd::Finish {
                provider,
                identity,
                link_user: Some(user),
                ..
            } => {
                self.social_link(cx, provider, identity, user, ctx, now)?;
                SocialAnswer::Linked
            }
            SocialCmd::Finish {
                provider,
                identity,
                guest,
                link_user: None,
            } => {
                SocialAnswer::Finished(self.social_finish(cx, provider, identity, guest, ctx, now)?)
            }
            SocialCmd::LinkStart {
                bearer,
                provider,
                redirect_uri,
            } => SocialAnswer::Ticket(self.social_link_ticket(
                cx,
                bearer,
                provider,
                redirect_uri,
                now,
            )?),
            SocialCmd::Identities { bearer } => {
                let (_, user) = cx.live_session(bearer, now)?;
                SocialAnswer::Identities(cx.identities_of(user.id)?)
            }
            SocialCmd::Unlink { bearer, provider } => {
                self.social_unlink(cx, bearer, provider, ctx, now)?;
                SocialAnswer::Unlinked
            }
            SocialCmd::Tokens { bearer, provider } => {
                SocialAnswer::Tokens(Box::new(self.social_tokens(cx, bearer, provider, now)?))
            }
            SocialCmd::PeekTicket { provider, ticket } => {
                SocialAnswer::TicketView(Box::new(self.peek_ticket(cx, provider, &ticket, now)?))
            }
            SocialCmd::Session { provider, jti } => {
                SocialAnswer::Login(Box::new(self.social_session(cx, provider, jti, ctx, now)?))
            }
        })
    }
}
