//! An agent's activity feed: what one action records, its entry written into a command's
//! batch, and the feed read newest first with its filters and cursor.

use std::collections::HashMap;

use tessera_storage::TenantBatch;
use time::OffsetDateTime;
use uuid::Uuid;

use super::records::{action_key, AgentActionRecord};
use crate::tenant::agents::memory::Agents;
use crate::tenant::ctx::TenantCtx;
use crate::{error::TenantError, tenant::audit::AuditContext};

/// What the activity feed is asked for.
#[derive(Clone, Debug, Default)]
pub struct ActivityQuery {
    pub cursor: Option<Vec<u8>>,
    pub limit: usize,
    pub since: Option<OffsetDateTime>,
    pub until: Option<OffsetDateTime>,
    pub actor_user_id: Option<Uuid>,
    pub action_type: Option<String>,
    /// A non-owner: only actions with no user, or their own.
    pub only_actor: Option<Option<Uuid>>,
}

/// One action as the feed shows it.
#[derive(Clone, Debug)]
pub struct ActionView {
    pub record: AgentActionRecord,
    pub actor_user_email: Option<String>,
}

#[derive(Clone, Debug)]
pub struct ActivityPage {
    pub actions: Vec<ActionView>,
    pub next_cursor: Option<Vec<u8>>,
}

/// What one agent action records.
pub(super) struct Action<'a> {
    pub(super) action: &'a str,
    pub(super) user: Option<Uuid>,
    pub(super) resource: Option<&'a str>,
    pub(super) method: Option<&'a str>,
    pub(super) jti: Option<Uuid>,
    pub(super) scopes: Option<&'a [String]>,
}

impl<'a> Action<'a> {
    pub(super) fn new(action: &'a str) -> Self {
        Action {
            action,
            user: None,
            resource: None,
            method: None,
            jti: None,
            scopes: None,
        }
    }
}

impl Agents {
    /// Records one action in the agent's feed (into `batch`).
    pub(super) fn record_action(
        &mut self,
        batch: &mut TenantBatch,
        agent: Uuid,
        a: Action<'_>,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        let seq = self.next_action_seq();
        let record = AgentActionRecord {
            id: Uuid::now_v7(),
            action: a.action.to_owned(),
            actor_user_id: a.user.or(ctx.actor),
            resource: a.resource.map(str::to_owned),
            method_or_event: a.method.map(str::to_owned),
            jti: a.jti.map(|j| j.to_string()),
            scope_used: a.scopes.map(|s| s.join(" ")),
            ip_hash: ctx.ip_hash.clone(),
            ua_hash: ctx.ua_hash.clone(),
            created_at: now,
        };
        batch.put(&action_key(agent, now, seq), &record)?;
        Ok(())
    }

    pub(super) fn activity(
        &self,
        cx: &TenantCtx,
        id: Uuid,
        q: &ActivityQuery,
    ) -> Result<ActivityPage, TenantError> {
        self.agent(cx, id)?;
        let mut before = match &q.cursor {
            Some(c) => {
                let mut k = id.as_bytes().to_vec();
                k.extend_from_slice(c);
                k
            }
            None => {
                let mut k = id.as_bytes().to_vec();
                k.extend_from_slice(&[0xFF; 12]);
                k
            }
        };
        let mut actions = Vec::new();
        let mut more = false;
        let mut emails: HashMap<Uuid, Option<String>> = HashMap::new();
        'scan: loop {
            let chunk = cx.store.scan_rev::<AgentActionRecord>(Some(&before), 256)?;
            let exhausted = chunk.len() < 256;
            for (key, r) in chunk {
                if !key.starts_with(id.as_bytes()) {
                    break 'scan;
                }
                before = key.clone();
                if q.since.is_some_and(|s| r.created_at < s) {
                    break 'scan;
                }
                if q.until.is_some_and(|u| r.created_at > u)
                    || q.actor_user_id.is_some_and(|u| r.actor_user_id != Some(u))
                    || q.action_type.as_deref().is_some_and(|t| t != r.action)
                    || q.only_actor
                        .is_some_and(|me| r.actor_user_id.is_some() && r.actor_user_id != me)
                {
                    continue;
                }
                if actions.len() == q.limit {
                    more = true;
                    break 'scan;
                }
                let email = match r.actor_user_id {
                    Some(u) => emails
                        .entry(u)
                        .or_insert_with(|| cx.user(u).ok().flatten().and_then(|u| u.email))
                        .clone(),
                    None => None,
                };
                actions.push((
                    key[16..].to_vec(),
                    ActionView {
                        record: r,
                        actor_user_email: email,
                    },
                ));
            }
            if exhausted {
                break;
            }
        }
        let next_cursor = if more {
            actions.last().map(|(k, _)| k.clone())
        } else {
            None
        };
        Ok(ActivityPage {
            actions: actions.into_iter().map(|(_, a)| a).collect(),
            next_cursor,
        })
    }
}
