//! The command surface of single sign-on: `SsoCmd` (what admins, the sign-in routes and the
//! app's back end ask), its answers, and `Sso::handle`, which carries one out and answers it
//! by its reply policy (reads at once, writes once durable).

use std::net::IpAddr;

use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    connections::ConnectionSpec,
    discover::Realm,
    finish::{SsoFinished, SsoIdentity},
    flow::{SsoPending, SsoStart},
    records::SsoConnectionRecord,
    Sso,
};
use crate::{
    error::TenantError,
    outbound::MailJob,
    reply::{finish, Outcome, TenantReply},
    tenant::{audit::AuditContext, ctx::TenantCtx, messages::PasswordlessLogin},
};

#[derive(Clone, Debug)]
pub enum SsoCmd {
    /// An organization's connections.
    Connections(Uuid),
    Connection {
        org: Uuid,
        id: Uuid,
    },
    CreateConnection {
        org: Uuid,
        spec: ConnectionSpec,
    },
    UpdateConnection {
        org: Uuid,
        id: Uuid,
        spec: ConnectionSpec,
    },
    DeleteConnection {
        org: Uuid,
        id: Uuid,
    },
    /// The realm of a normalised address (home-realm discovery).
    Discover {
        email: String,
        /// The client's address (held to a per-address rate).
        ip: IpAddr,
    },
    /// Starts a sign-in at a connection's provider.
    Begin {
        connection: Uuid,
        redirect_uri: String,
        /// Begun on the hosted sign-in page (`redirect_uri` is its return page).
        hosted: bool,
        ip: IpAddr,
    },
    /// Takes the sign-in of `state` when the provider answers.
    Take {
        connection: Uuid,
        state: String,
        binding: String,
    },
    /// Any organization's connection, enabled or not (its published SAML metadata).
    Describe {
        connection: Uuid,
    },
    /// A connection that takes unsolicited SAML responses.
    Unsolicited {
        connection: Uuid,
        /// The client's address: an unsolicited response is checked at a per-address rate.
        ip: IpAddr,
    },
    /// Finishes a sign-in with who the provider says the user is.
    Finish {
        connection: Uuid,
        identity: SsoIdentity,
    },
    /// Trades an exchange code for a sign-in.
    Session {
        code: String,
    },
}

impl SsoCmd {
    /// Whether the command only reads (its answer need not wait for the disk).
    pub fn reads_only(&self) -> bool {
        matches!(
            self,
            SsoCmd::Connections(_)
                | SsoCmd::Connection { .. }
                | SsoCmd::Discover { .. }
                | SsoCmd::Describe { .. }
                | SsoCmd::Unsolicited { .. }
        )
    }
}

#[derive(Debug)]
pub enum SsoAnswer {
    Connection(Box<SsoConnectionRecord>),
    Connections(Vec<SsoConnectionRecord>),
    Realm(Option<Realm>),
    Start(Box<SsoStart>),
    Pending(Box<SsoPending>),
    Finished(SsoFinished),
    Login(Box<PasswordlessLogin>),
    Done,
}

type Answered = Result<(SsoAnswer, Vec<MailJob>), TenantError>;

impl Sso {
    /// Applies one command and answers it by its reply policy.
    pub(in crate::tenant) fn handle(
        &mut self,
        cx: &mut TenantCtx,
        cmd: SsoCmd,
        ctx: AuditContext,
        reply: TenantReply<SsoAnswer>,
    ) {
        let reads_only = cmd.reads_only();
        let out = self.apply(cx, cmd, &ctx);
        finish(cx, reply, Outcome::read_or_mail(reads_only, out));
    }

    fn apply(&mut self, cx: &mut TenantCtx, cmd: SsoCmd, ctx: &AuditContext) -> Answered {
        let now = OffsetDateTime::now_utc();
        let quiet = |a: SsoAnswer| Ok((a, Vec::new()));
        let one = |(c, mail): (SsoConnectionRecord, Vec<MailJob>)| {
            Ok((SsoAnswer::Connection(Box::new(c)), mail))
        };
        match cmd {
            SsoCmd::Connections(org) => {
                cx.store
                    .get::<crate::tenant::organizations::OrganizationRecord>(org.as_bytes())?
                    .ok_or(TenantError::NotFound)?;
                quiet(SsoAnswer::Connections(self.connections(cx, org)?))
            }
            SsoCmd::Connection { org, id } => quiet(SsoAnswer::Connection(Box::new(
                self.connection(cx, Some(org), id)?,
            ))),
            SsoCmd::CreateConnection { org, spec } => {
                one(self.create_connection(cx, org, spec, ctx)?)
            }
            SsoCmd::UpdateConnection { org, id, spec } => {
                one(self.update_connection(cx, (org, id), spec, ctx)?)
            }
            SsoCmd::DeleteConnection { org, id } => {
                let ((), mail) = self.delete_connection(cx, (org, id), ctx)?;
                Ok((SsoAnswer::Done, mail))
            }
            SsoCmd::Describe { connection } => quiet(SsoAnswer::Connection(Box::new(
                self.connection(cx, None, connection)
                    .map_err(|_| TenantError::Sso(super::SsoError::UnknownConnection))?,
            ))),
            SsoCmd::Discover { email, ip } => {
                self.admit(&ip, true)?;
                quiet(SsoAnswer::Realm(cx.realm_of(&email)?))
            }
            SsoCmd::Begin {
                connection,
                redirect_uri,
                hosted,
                ip,
            } => quiet(SsoAnswer::Start(Box::new(self.begin(
                cx,
                connection,
                (redirect_uri, hosted),
                ip,
                now,
            )?))),
            SsoCmd::Take {
                connection,
                state,
                binding,
            } => quiet(SsoAnswer::Pending(Box::new(self.take(
                cx,
                connection,
                (&state, &binding),
                now,
            )?))),
            SsoCmd::Unsolicited { connection, ip } => {
                self.admit(&ip, false)?;
                quiet(SsoAnswer::Pending(Box::new(
                    self.unsolicited(cx, connection)?,
                )))
            }
            SsoCmd::Finish {
                connection,
                identity,
            } => quiet(SsoAnswer::Finished(
                self.finish(cx, connection, identity, ctx, now)?,
            )),
            SsoCmd::Session { code } => quiet(SsoAnswer::Login(Box::new(
                self.session(cx, &code, ctx, now)?,
            ))),
        }
    }
}
