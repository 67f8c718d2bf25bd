//! What a user and an agent have to do with each other: the count of what it did for the
//! user, the user's own revocation (GDPR art. 7(3)) and its undoing, and the user's list of
//! agents, in the API and in the data export.

use tessera_storage::TenantBatch;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    activity::Action,
    records::{user_agent_key, AgentRecord, UserAgentRecord},
};
use crate::tenant::agents::memory::Agents;
use crate::tenant::ctx::TenantCtx;
use crate::{error::TenantError, tenant::audit::AuditContext};

/// An agent as a user sees it.
#[derive(Clone, Debug)]
pub struct UserAgentView {
    pub client_id: String,
    pub name: String,
    pub logo_url: Option<String>,
    pub agent_class: Option<String>,
    pub last_action_at: Option<OffsetDateTime>,
    pub action_count: u64,
    pub revoked_at: Option<OffsetDateTime>,
    pub agent_revoked_at: Option<OffsetDateTime>,
}

#[derive(Clone, Debug)]
pub struct Restored {
    pub restored_at: OffsetDateTime,
    pub newly_restored: bool,
    pub still_blocked_by_tenant: bool,
}

impl Agents {
    /// What `user` and `agent` have to do with each other, under its key: a fresh record
    /// while they have had nothing to do with each other.
    fn user_agent_record(
        &self,
        cx: &TenantCtx,
        user: Uuid,
        agent: &AgentRecord,
    ) -> Result<(Vec<u8>, UserAgentRecord), TenantError> {
        let key = user_agent_key(user, agent.id);
        let rec = cx
            .store
            .get::<UserAgentRecord>(&key)?
            .unwrap_or(UserAgentRecord {
                agent_id: agent.id,
                client_id: agent.client_id.clone(),
                action_count: 0,
                last_action_at: None,
                revoked_at: None,
            });
        Ok((key, rec))
    }

    /// Counts a user's dealing with an agent (into `batch`).
    pub(super) fn touch_user_agent(
        &self,
        cx: &TenantCtx,
        batch: &mut TenantBatch,
        user: Uuid,
        agent: &AgentRecord,
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        let (key, mut rec) = self.user_agent_record(cx, user, agent)?;
        rec.action_count += 1;
        rec.last_action_at = Some(now);
        batch.put(&key, &rec)?;
        Ok(())
    }

    pub(super) fn user_revoked(
        &self,
        cx: &TenantCtx,
        user: Uuid,
        agent: Uuid,
    ) -> Result<bool, TenantError> {
        Ok(cx
            .store
            .get::<UserAgentRecord>(&user_agent_key(user, agent))?
            .is_some_and(|r| r.revoked_at.is_some()))
    }

    pub(super) fn revoke_mine(
        &mut self,
        cx: &mut TenantCtx,
        user: Uuid,
        client_id: &str,
        ctx: &AuditContext,
    ) -> Result<OffsetDateTime, TenantError> {
        let agent = self.agent_by_client(cx, client_id)?;
        let (key, mut rec) = self.user_agent_record(cx, user, &agent)?;
        if let Some(at) = rec.revoked_at {
            return Ok(at);
        }
        let now = OffsetDateTime::now_utc();
        rec.revoked_at = Some(now);
        let mut fx = cx.effects();
        fx.batch.put(&key, &rec)?;
        let mut a = Action::new("agent.revoked_by_user");
        a.user = Some(user);
        a.method = Some("gdpr_art_7_withdrawal");
        self.record_action(&mut fx.batch, agent.id, a, ctx, now)?;
        cx.audit_into(
            &mut fx.batch,
            "agent.revoked_by_user",
            ctx,
            serde_json::json!({
                "user_id": user,
                "agent_id": agent.id,
                "client_id": agent.client_id,
                "reason": "gdpr_art_7_withdrawal",
            }),
        )?;
        cx.commit(fx)?;
        Ok(now)
    }

    pub(super) fn restore_mine(
        &mut self,
        cx: &mut TenantCtx,
        user: Uuid,
        client_id: &str,
        ctx: &AuditContext,
    ) -> Result<Restored, TenantError> {
        let agent = self.agent_by_client(cx, client_id)?;
        let key = user_agent_key(user, agent.id);
        let now = OffsetDateTime::now_utc();
        let still_blocked_by_tenant = agent.revoked_at.is_some();
        let Some(mut rec) = cx
            .store
            .get::<UserAgentRecord>(&key)?
            .filter(|r| r.revoked_at.is_some())
        else {
            return Ok(Restored {
                restored_at: now,
                newly_restored: false,
                still_blocked_by_tenant,
            });
        };
        rec.revoked_at = None;
        let mut fx = cx.effects();
        fx.batch.put(&key, &rec)?;
        let mut a = Action::new("agent.restored_by_user");
        a.user = Some(user);
        self.record_action(&mut fx.batch, agent.id, a, ctx, now)?;
        cx.audit_into(
            &mut fx.batch,
            "agent.restored_by_user",
            ctx,
            serde_json::json!({
                "user_id": user,
                "agent_id": agent.id,
                "client_id": agent.client_id,
            }),
        )?;
        cx.commit(fx)?;
        Ok(Restored {
            restored_at: now,
            newly_restored: true,
            still_blocked_by_tenant,
        })
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    pub(super) fn my_agents(&self, user: Uuid) -> Result<Vec<UserAgentView>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<UserAgentRecord>(user.as_bytes()) {
            let (_, r) = item?;
            let Some(agent) = self.store.get::<AgentRecord>(r.agent_id.as_bytes())? else {
                continue;
            };
            out.push(UserAgentView {
                client_id: agent.client_id,
                name: agent.profile.name,
                logo_url: agent.profile.logo_url,
                agent_class: agent.profile.agent_class,
                last_action_at: r.last_action_at,
                action_count: r.action_count,
                revoked_at: r.revoked_at,
                agent_revoked_at: agent.revoked_at,
            });
        }
        out.sort_by_key(|a| std::cmp::Reverse(a.last_action_at));
        Ok(out)
    }

    /// The agents that acted for `user`, as the user's data export lists them.
    pub(in crate::tenant) fn agents_of_user(
        &self,
        user: Uuid,
    ) -> Result<serde_json::Value, TenantError> {
        let rfc3339 = |t: Option<OffsetDateTime>| {
            t.and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            })
        };
        let list: Vec<serde_json::Value> = self
            .my_agents(user)?
            .into_iter()
            .map(|a| {
                serde_json::json!({
                    "agent_client_id": a.client_id,
                    "agent_name": a.name,
                    "action_count": a.action_count,
                    "last_action_at": rfc3339(a.last_action_at),
                    "revoked_at": rfc3339(a.revoked_at),
                    "agent_revoked_at": rfc3339(a.agent_revoked_at),
                })
            })
            .collect();
        Ok(serde_json::Value::Array(list))
    }
}
