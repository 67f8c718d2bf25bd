//! The command surface of agents: `AgentCmd` (what the dashboard, the token endpoint, the
//! users and the hosted pages ask), the values it carries and answers with, and
//! `agent_cmd`, which carries one out.

use std::{sync::Arc, time::Instant};

use tessera_storage::{sha256, Kind};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    activity::{Action, ActivityPage, ActivityQuery},
    grants::{AgentIssued, OnBehalf},
    policy::AgentLimit,
    records::{token_key, AgentRecord, DeniedTokenRecord, NewAgent, RequestFlow},
    registry::{AgentPatch, IssuedAgent},
    requests::{normalize_user_code, PollRefusal, RequestStarted, RequestView},
    user_agents::{Restored, UserAgentView},
};
use crate::tenant::agents::memory::Agents;
use crate::tenant::ctx::TenantCtx;
use crate::{
    error::TenantError,
    outbound::MailJob,
    tenant::{
        audit::AuditContext,
        messages::{Bearer, User},
    },
};

/// What the dashboard, the token endpoint, the users and the hosted pages ask of agents.
// Holds secrets (a client secret, a poll handle, a mailed token): no `Debug`.
#[derive(Clone)]
pub enum AgentCmd {
    Register(NewAgent),
    List {
        after: Option<Uuid>,
        limit: usize,
        include_revoked: bool,
    },
    Get(Uuid),
    Update(Uuid, AgentPatch),
    RotateSecret(Uuid),
    /// The owners' addresses, for the revocation's mail.
    Revoke {
        id: Uuid,
        owners: Vec<String>,
    },
    Activity(Uuid, ActivityQuery),
    ClientCredentials {
        agent: Arc<AgentRecord>,
        scopes: Option<Vec<String>>,
        resource: Option<String>,
    },
    /// `subject` from a verified access token of the user (`client`: the OAuth client it was
    /// issued to, if any).
    Exchange {
        agent: Arc<AgentRecord>,
        subject: Bearer,
        subject_client: Option<String>,
        scopes: Option<Vec<String>>,
        resource: Option<String>,
    },
    Backchannel {
        agent: Arc<AgentRecord>,
        login_hint: String,
        scopes: Vec<String>,
        binding_message: Option<String>,
        resource: Option<String>,
    },
    DeviceAuthorize {
        agent: Arc<AgentRecord>,
        scopes: Vec<String>,
        resource: Option<String>,
    },
    Poll {
        agent: Arc<AgentRecord>,
        flow: RequestFlow,
        secret: String,
    },
    /// An agent token was introspected (recorded in its feed). Acting for a user and live at
    /// the edge, it stays active only while the user's consent covers it.
    Introspected {
        client_id: String,
        jti: String,
        active: bool,
        on_behalf: Option<OnBehalf>,
    },
    /// An agent token is used at one of the tenant's endpoints: counted against
    /// `api_calls_per_min`; acting for a user, the user's view while the user's consent
    /// covers it.
    UseToken {
        client_id: String,
        on_behalf: Option<OnBehalf>,
    },
    /// RFC 7009 by the agent: its token denylisted until `exp`.
    RevokeToken {
        client_id: String,
        jti: String,
        exp: i64,
    },
    MyAgents {
        bearer: Bearer,
    },
    RevokeMine {
        bearer: Bearer,
        client_id: String,
    },
    RestoreMine {
        bearer: Bearer,
        client_id: String,
    },
    MyRequests {
        bearer: Bearer,
    },
    Decide {
        bearer: Bearer,
        id: Uuid,
        approve: bool,
    },
    /// The hosted page of a mailed CIBA link.
    PeekLink {
        token: String,
    },
    DecideLink {
        token: String,
        approve: bool,
    },
    /// The hosted device page, signed in.
    PeekUserCode {
        bearer: Bearer,
        user_code: String,
    },
    DecideUserCode {
        bearer: Bearer,
        user_code: String,
        approve: bool,
    },
}

impl AgentCmd {
    /// Whether the answer need not wait for the disk: the command only reads, or (an
    /// introspection's feed entry) writes what may be lost with a crash.
    pub fn reads_only(&self) -> bool {
        matches!(
            self,
            AgentCmd::List { .. }
                | AgentCmd::Introspected { .. }
                | AgentCmd::Get(_)
                | AgentCmd::Activity(..)
                | AgentCmd::UseToken { .. }
                | AgentCmd::MyAgents { .. }
                | AgentCmd::MyRequests { .. }
                | AgentCmd::PeekLink { .. }
                | AgentCmd::PeekUserCode { .. }
        )
    }
}

// Holds secrets (a client secret, a poll handle, a mailed token): no `Debug`.
#[derive(Clone)]
pub enum AgentAnswer {
    Issued(Box<IssuedAgent>),
    One(Box<AgentRecord>),
    Page(Vec<AgentRecord>, Option<Uuid>),
    Activity(ActivityPage),
    Token(AgentIssued),
    Started(RequestStarted),
    NotYet(PollRefusal),
    Used(Option<User>),
    /// Whether an introspected token is active.
    Active(bool),
    Done,
    UserAgents(Vec<UserAgentView>),
    RevokedMine(OffsetDateTime),
    Restored(Restored),
    Requests(Vec<RequestView>),
    Request(Box<RequestView>),
}

impl Agents {
    /// Carries out one command; answers with the mail it queued.
    pub fn agent_cmd(
        &mut self,
        cx: &mut TenantCtx,
        cmd: AgentCmd,
        ctx: &AuditContext,
    ) -> Result<(AgentAnswer, Vec<MailJob>), TenantError> {
        Ok(match cmd {
            AgentCmd::Revoke { id, owners } => {
                let (a, mail) = self.revoke_agent(cx, id, &owners, ctx)?;
                (AgentAnswer::One(Box::new(a)), mail)
            }
            AgentCmd::Backchannel {
                agent,
                login_hint,
                scopes,
                binding_message,
                resource,
            } => {
                let (started, mail) = self.backchannel(
                    cx,
                    &agent,
                    &login_hint,
                    scopes,
                    binding_message,
                    resource,
                    ctx,
                )?;
                (AgentAnswer::Started(started), mail)
            }
            other => (self.agent_cmd_quiet(cx, other, ctx)?, Vec::new()),
        })
    }

    /// The commands that mail nobody.
    fn agent_cmd_quiet(
        &mut self,
        cx: &mut TenantCtx,
        cmd: AgentCmd,
        ctx: &AuditContext,
    ) -> Result<AgentAnswer, TenantError> {
        Ok(match cmd {
            AgentCmd::Register(new) => {
                AgentAnswer::Issued(Box::new(self.register_agent(cx, new, ctx)?))
            }
            AgentCmd::List {
                after,
                limit,
                include_revoked,
            } => {
                let (page, next) = self.list_agents(cx, after, limit, include_revoked)?;
                AgentAnswer::Page(page, next)
            }
            AgentCmd::Get(id) => AgentAnswer::One(Box::new(self.agent(cx, id)?)),
            AgentCmd::Update(id, patch) => {
                AgentAnswer::One(Box::new(self.update_agent(cx, id, patch, ctx)?))
            }
            AgentCmd::RotateSecret(id) => {
                AgentAnswer::Issued(Box::new(self.rotate_agent_secret(cx, id, ctx)?))
            }
            AgentCmd::Revoke { .. } | AgentCmd::Backchannel { .. } => {
                return Err(TenantError::Internal("a mailing agent command".into()))
            }
            AgentCmd::Activity(id, q) => AgentAnswer::Activity(self.activity(cx, id, &q)?),
            AgentCmd::ClientCredentials {
                agent,
                scopes,
                resource,
            } => AgentAnswer::Token(self.client_credentials(cx, &agent, scopes, resource, ctx)?),
            AgentCmd::Exchange {
                agent,
                subject,
                subject_client,
                scopes,
                resource,
            } => AgentAnswer::Token(self.exchange(
                cx,
                &agent,
                subject,
                subject_client,
                scopes,
                resource,
                ctx,
            )?),
            AgentCmd::DeviceAuthorize {
                agent,
                scopes,
                resource,
            } => AgentAnswer::Started(self.device_authorize(cx, &agent, scopes, resource, ctx)?),
            AgentCmd::Poll {
                agent,
                flow,
                secret,
            } => match self.poll(cx, &agent, flow, &secret, ctx)? {
                Ok(t) => AgentAnswer::Token(t),
                Err(r) => AgentAnswer::NotYet(r),
            },
            AgentCmd::Introspected {
                client_id,
                jti,
                active,
                on_behalf,
            } => {
                let agent = self.agent_by_client(cx, &client_id)?;
                let active = match &on_behalf {
                    Some(t) if active => self.on_behalf_stands(cx, &agent, t)?,
                    _ => active,
                };
                let mut fx = cx.effects();
                let mut a = Action::new("token.introspected");
                a.method = Some(if active { "active" } else { "inactive" });
                a.jti = Uuid::parse_str(&jti).ok();
                self.record_action(&mut fx.batch, agent.id, a, ctx, OffsetDateTime::now_utc())?;
                cx.commit(fx)?;
                AgentAnswer::Active(active)
            }
            AgentCmd::UseToken {
                client_id,
                on_behalf,
            } => {
                let agent = self.agent_by_client(cx, &client_id)?;
                self.agent_rate(cx, &agent, AgentLimit::ApiCalls, ctx)?;
                let view = match on_behalf {
                    Some(t) => {
                        if !self.on_behalf_stands(cx, &agent, &t)? {
                            return Err(TenantError::InvalidSession);
                        }
                        Some(cx.user(t.user)?.ok_or(TenantError::InvalidSession)?.view())
                    }
                    None => None,
                };
                AgentAnswer::Used(view)
            }
            AgentCmd::RevokeToken {
                client_id,
                jti,
                exp,
            } => {
                let agent = self.agent_by_client(cx, &client_id)?;
                if let Ok(jti) = Uuid::parse_str(&jti) {
                    let mut fx = cx.effects();
                    fx.batch.put(jti.as_bytes(), &DeniedTokenRecord { exp })?;
                    fx.batch.remove(Kind::AgentToken, &token_key(agent.id, jti));
                    let mut a = Action::new("token.revoked");
                    a.jti = Some(jti);
                    self.record_action(&mut fx.batch, agent.id, a, ctx, OffsetDateTime::now_utc())?;
                    cx.commit(fx)?;
                    self.counters.live.remove(&agent.id);
                    cx.publish_agent(None, &[jti]);
                }
                AgentAnswer::Done
            }
            AgentCmd::MyAgents { bearer } => {
                let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
                AgentAnswer::UserAgents(cx.my_agents(user.id)?)
            }
            AgentCmd::RevokeMine { bearer, client_id } => {
                let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
                AgentAnswer::RevokedMine(self.revoke_mine(cx, user.id, &client_id, ctx)?)
            }
            AgentCmd::RestoreMine { bearer, client_id } => {
                let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
                AgentAnswer::Restored(self.restore_mine(cx, user.id, &client_id, ctx)?)
            }
            AgentCmd::MyRequests { bearer } => {
                let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
                AgentAnswer::Requests(self.my_requests(cx, user.id)?)
            }
            AgentCmd::Decide {
                bearer,
                id,
                approve,
            } => {
                let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
                let (key, record) = self
                    .request_by_index(cx, b'i', id.as_bytes())?
                    .filter(|(_, r)| r.flow == RequestFlow::Ciba && r.user == Some(user.id))
                    .ok_or(TenantError::NotFound)?;
                self.decide_request(cx, key, record, user.id, approve, ctx)?;
                AgentAnswer::Done
            }
            AgentCmd::PeekLink { token } => {
                let (_, record) = self
                    .request_by_index(cx, b'l', &sha256(token.as_bytes()))?
                    .ok_or(TenantError::InvalidLinkToken)?;
                AgentAnswer::Request(Box::new(self.request_view(cx, &record)?))
            }
            AgentCmd::DecideLink { token, approve } => {
                let (key, record) = self
                    .request_by_index(cx, b'l', &sha256(token.as_bytes()))?
                    .ok_or(TenantError::InvalidLinkToken)?;
                let user = record.user.ok_or(TenantError::InvalidLinkToken)?;
                self.decide_request(cx, key, record, user, approve, ctx)?;
                AgentAnswer::Done
            }
            AgentCmd::PeekUserCode { bearer, user_code } => {
                let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
                self.user_code_tries
                    .hit(&user.id, Instant::now())
                    .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
                let (_, record) = self
                    .request_by_index(cx, b'u', normalize_user_code(&user_code).as_bytes())?
                    .ok_or(TenantError::NotFound)?;
                AgentAnswer::Request(Box::new(self.request_view(cx, &record)?))
            }
            AgentCmd::DecideUserCode {
                bearer,
                user_code,
                approve,
            } => {
                let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
                let (key, record) = self
                    .request_by_index(cx, b'u', normalize_user_code(&user_code).as_bytes())?
                    .ok_or(TenantError::NotFound)?;
                self.decide_request(cx, key, record, user.id, approve, ctx)?;
                AgentAnswer::Done
            }
        })
    }
}
