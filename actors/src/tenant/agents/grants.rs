//! The grants an agent asks the token endpoint for by itself: client credentials and token
//! exchange; the user's consent a token acting for a user rests on; and the issue of every
//! agent token, its record and its feed entry, after the concurrency cap.

use std::time::Instant;

use tessera_storage::TenantBatch;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    activity::Action,
    counters::OverLimit,
    policy::AgentGrant,
    records::{token_key, AgentRecord, AgentTokenRecord},
};
use crate::tenant::agents::memory::Agents;
use crate::tenant::ctx::TenantCtx;
use crate::{
    error::TenantError,
    tenant::{
        audit::AuditContext,
        messages::Bearer,
        oauth::{ConsentRecord, OAuthFailure},
    },
};

/// The longest an agent token on a user's behalf lives.
pub const ON_BEHALF_MAX_TTL: i64 = 900;

/// A token to sign: the edge signs it with the tenant's keys.
#[derive(Clone, Debug)]
pub struct AgentIssued {
    pub client_id: String,
    /// The user it acts for (`sub`), or `None`: the agent as itself.
    pub user: Option<Uuid>,
    pub scopes: Vec<String>,
    pub resource: Option<String>,
    pub jti: Uuid,
    pub iat: i64,
    pub exp: i64,
}

/// What an agent token acting for a user claims, as the user's consent must still cover it.
#[derive(Clone, Debug)]
pub struct OnBehalf {
    pub user: Uuid,
    /// Its audience when that is a resource; `None`: the token names none.
    pub resource: Option<String>,
    pub scopes: Vec<String>,
}

impl Agents {
    /// Issues a token to `agent` (for `user`), with its record and its feed entry, after
    /// the concurrency cap.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn issue_agent_token(
        &mut self,
        cx: &mut TenantCtx,
        agent: &AgentRecord,
        grant: AgentGrant,
        user: Option<Uuid>,
        scopes: Vec<String>,
        resource: Option<String>,
        ctx: &AuditContext,
        extra: impl FnOnce(&TenantCtx, &mut TenantBatch) -> Result<(), TenantError>,
    ) -> Result<AgentIssued, TenantError> {
        let now = OffsetDateTime::now_utc();
        let iat = now.unix_timestamp();
        let cap = agent
            .effective_limits(&cx.agent_policy())
            .max_concurrent_tokens;
        let live = self.live_tokens(cx, agent.id, iat)?;
        if live.len() >= cap as usize {
            let retry_after = live
                .peek()
                .map_or(1, |std::cmp::Reverse(exp)| (exp - iat).max(1) as u64);
            let over = OverLimit {
                retry_after,
                first: self.counters.cap_first(agent.id, Instant::now()),
                limit: cap,
                name: "max_concurrent_tokens",
            };
            return Err(self.over_limit(cx, agent, over, ctx));
        }
        // The platform's ceiling may have come down since the agent was registered.
        let mut ttl = i64::from(
            agent
                .profile
                .token_ttl_secs
                .min(cx.agent_policy().max_token_ttl_secs),
        );
        if user.is_some() {
            ttl = ttl.min(ON_BEHALF_MAX_TTL);
        }
        let exp = iat + ttl;
        let jti = Uuid::new_v4();
        let mut fx = cx.effects();
        fx.batch
            .put(&token_key(agent.id, jti), &AgentTokenRecord { exp, user })?;
        let mut a = Action::new("token.issued");
        a.user = user;
        a.method = Some(grant.as_str());
        a.jti = Some(jti);
        a.scopes = Some(&scopes);
        a.resource = resource.as_deref();
        self.record_action(&mut fx.batch, agent.id, a, ctx, now)?;
        if let Some(u) = user {
            self.touch_user_agent(cx, &mut fx.batch, u, agent, now)?;
        }
        extra(cx, &mut fx.batch)?;
        cx.commit(fx)?;
        self.live_tokens(cx, agent.id, iat)?
            .push(std::cmp::Reverse(exp));
        Ok(AgentIssued {
            client_id: agent.client_id.clone(),
            user,
            scopes,
            resource,
            jti,
            iat,
            exp,
        })
    }

    /// A refused grant: recorded in the feed, then the error.
    fn refuse_grant(
        &mut self,
        cx: &mut TenantCtx,
        agent: &AgentRecord,
        grant: AgentGrant,
        user: Option<Uuid>,
        ctx: &AuditContext,
        err: TenantError,
    ) -> Result<AgentIssued, TenantError> {
        let mut fx = cx.effects();
        let mut a = Action::new("token.refused");
        a.user = user;
        a.method = Some(grant.as_str());
        self.record_action(&mut fx.batch, agent.id, a, ctx, OffsetDateTime::now_utc())?;
        cx.commit(fx)?;
        Err(err)
    }

    /// The scopes asked for (all of the agent's by default), each one the agent's.
    fn agent_scopes(
        agent: &AgentRecord,
        asked: Option<Vec<String>>,
    ) -> Result<Vec<String>, TenantError> {
        match asked {
            None => Ok(agent.profile.scopes.clone()),
            Some(asked) if asked.iter().all(|s| agent.profile.scopes.contains(s)) => Ok(asked),
            Some(_) => Err(TenantError::OAuth(OAuthFailure::InvalidScope)),
        }
    }

    pub(super) fn client_credentials(
        &mut self,
        cx: &mut TenantCtx,
        agent: &AgentRecord,
        scopes: Option<Vec<String>>,
        resource: Option<String>,
        ctx: &AuditContext,
    ) -> Result<AgentIssued, TenantError> {
        let agent = self.current_agent(cx, agent)?;
        let grant = AgentGrant::ClientCredentials;
        if !agent.allows(grant) {
            return self.refuse_grant(cx, &agent, grant, None, ctx, unauthorized());
        }
        self.agent_rate(cx, &agent, grant.limit(), ctx)?;
        let scopes = match Self::agent_scopes(&agent, scopes) {
            Ok(s) => s,
            Err(e) => return self.refuse_grant(cx, &agent, grant, None, ctx, e),
        };
        self.issue_agent_token(
            cx,
            &agent,
            grant,
            None,
            scopes,
            resource,
            ctx,
            |_, _| Ok(()),
        )
    }

    /// The user's consent to this agent: per resource, the scopes approved for it.
    pub(super) fn agent_consent(
        &self,
        cx: &TenantCtx,
        user: Uuid,
        agent: &AgentRecord,
    ) -> Result<Option<ConsentRecord>, TenantError> {
        let mut key = user.as_bytes().to_vec();
        key.extend_from_slice(agent.client_id.as_bytes());
        Ok(cx.store.get::<ConsentRecord>(&key)?)
    }

    /// Whether a token acting for a user still stands: the user is there and not suspended,
    /// and the user's consent to the agent covers the token's resource (none: the grant that
    /// names none) with every scope in it.
    pub(super) fn on_behalf_stands(
        &self,
        cx: &TenantCtx,
        agent: &AgentRecord,
        t: &OnBehalf,
    ) -> Result<bool, TenantError> {
        if cx.user(t.user)?.is_none_or(|u| u.suspended()) {
            return Ok(false);
        }
        let Some(consent) = self.agent_consent(cx, t.user, agent)? else {
            return Ok(false);
        };
        Ok(consent
            .grants
            .get(t.resource.as_deref().unwrap_or(""))
            .is_some_and(|granted| t.scopes.iter().all(|s| granted.contains(s))))
    }

    pub(super) fn exchange(
        &mut self,
        cx: &mut TenantCtx,
        agent: &AgentRecord,
        subject: Bearer,
        subject_client: Option<String>,
        scopes: Option<Vec<String>>,
        resource: Option<String>,
        ctx: &AuditContext,
    ) -> Result<AgentIssued, TenantError> {
        let agent = self.current_agent(cx, agent)?;
        let grant = AgentGrant::TokenExchange;
        if !agent.allows(grant) {
            return self.refuse_grant(cx, &agent, grant, None, ctx, unauthorized());
        }
        self.agent_rate(cx, &agent, grant.limit(), ctx)?;
        let now = OffsetDateTime::now_utc();
        let alive = match &subject_client {
            Some(c) => cx.live_grant(subject, c, now).map(|(_, u)| u),
            None => cx.live_session(subject, now).map(|(_, u)| u),
        };
        let user = match alive {
            Ok(u) if !u.suspended() => u,
            Ok(_) | Err(TenantError::InvalidSession) => {
                return self.refuse_grant(cx, &agent, grant, None, ctx, invalid_grant())
            }
            Err(e) => return Err(e),
        };
        if self.user_revoked(cx, user.id, agent.id)? {
            return self.refuse_grant(cx, &agent, grant, Some(user.id), ctx, invalid_grant());
        }
        let Some(consent) = self
            .agent_consent(cx, user.id, &agent)?
            .filter(|c| c.grants.values().any(|s| !s.is_empty()))
        else {
            return self.refuse_grant(cx, &agent, grant, Some(user.id), ctx, invalid_grant());
        };
        // RFC 8707: what the user approved for one resource is not approved for another, and
        // a token naming no resource comes only from what was approved naming none.
        let consented = consent.scopes_for(resource.as_deref());
        if consented.is_empty() {
            let e = TenantError::OAuth(OAuthFailure::InvalidTarget);
            return self.refuse_grant(cx, &agent, grant, Some(user.id), ctx, e);
        }
        let scopes = match scopes {
            None => agent
                .profile
                .scopes
                .iter()
                .filter(|s| consented.contains(s))
                .cloned()
                .collect(),
            Some(asked)
                if asked
                    .iter()
                    .all(|s| consented.contains(s) && agent.profile.scopes.contains(s)) =>
            {
                asked
            }
            Some(_) => {
                let e = TenantError::OAuth(OAuthFailure::InvalidScope);
                return self.refuse_grant(cx, &agent, grant, Some(user.id), ctx, e);
            }
        };
        self.issue_agent_token(
            cx,
            &agent,
            grant,
            Some(user.id),
            scopes,
            resource,
            ctx,
            |_, _| Ok(()),
        )
    }
}

pub(super) fn unauthorized() -> TenantError {
    TenantError::OAuth(OAuthFailure::UnauthorizedClient)
}

pub(super) fn invalid_grant() -> TenantError {
    TenantError::OAuth(OAuthFailure::InvalidGrant)
}
