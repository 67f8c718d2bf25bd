//! What the rest of the tenant asks of agents' records: the keys a user's erasure or block
//! removes, the denylisting of the tokens agents hold for them, and the daily sweep of
//! expired tokens, requests and old feed entries.

use tessera_storage::{Kind, TenantBatch};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::records::{
    index_key, AgentActionRecord, AgentRequestRecord, AgentTokenRecord, DeniedTokenRecord,
    UserAgentRecord,
};
use crate::error::TenantError;
use crate::tenant::agents::memory::Agents;
use crate::tenant::ctx::TenantCtx;

impl Agents {
    /// The next number of the sequence that orders agent actions of one nanosecond.
    pub(super) fn next_action_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// The keys of what `user` and each agent have to do with each other (counts, the user's
    /// own revocation).
    pub(in crate::tenant) fn user_agent_keys(
        &self,
        user: Uuid,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<UserAgentRecord>(user.as_bytes()) {
            out.push((Kind::UserAgent, item?.0));
        }
        Ok(out)
    }

    /// The CIBA and device requests naming any of `users` (waiting, or approved and not yet
    /// polled), with their indexes.
    pub(in crate::tenant) fn agent_request_keys(
        &self,
        users: &std::collections::HashSet<Uuid>,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<AgentRequestRecord>(b"") {
            let (key, r) = item?;
            if !r.user.is_some_and(|u| users.contains(&u)) {
                continue;
            }
            out.push((Kind::AgentRequestIndex, index_key(b'i', r.id.as_bytes())));
            if let Some(code) = &r.user_code {
                out.push((Kind::AgentRequestIndex, index_key(b'u', code.as_bytes())));
            }
            if let Some(h) = &r.link_hash {
                out.push((Kind::AgentRequestIndex, index_key(b'l', h)));
            }
            out.push((Kind::AgentRequest, key));
        }
        Ok(out)
    }

    /// The live tokens agents hold to act for any of `users`: `(key, jti, exp)`.
    pub(in crate::tenant) fn agent_tokens_for(
        &self,
        users: &std::collections::HashSet<Uuid>,
        now: OffsetDateTime,
    ) -> Result<Vec<(Vec<u8>, Uuid, i64)>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<AgentTokenRecord>(b"") {
            let (key, t) = item?;
            if t.exp <= now.unix_timestamp() || !t.user.is_some_and(|u| users.contains(&u)) {
                continue;
            }
            if let Ok(jti) = Uuid::from_slice(key.get(16..).unwrap_or_default()) {
                out.push((key, jti, t.exp));
            }
        }
        Ok(out)
    }

    /// Denylists agent tokens (`(key, jti, exp)`, from [`Self::agent_tokens_for`]) into
    /// `batch`; the caller publishes the denylist once the batch is durable
    /// (the kernel's commit does).
    pub(in crate::tenant) fn deny_agent_tokens(
        &self,
        batch: &mut TenantBatch,
        tokens: &[(Vec<u8>, Uuid, i64)],
    ) -> Result<(), TenantError> {
        for (key, jti, exp) in tokens {
            batch.put(jti.as_bytes(), &DeniedTokenRecord { exp: *exp })?;
            batch.remove(Kind::AgentToken, key);
        }
        Ok(())
    }

    /// Removes expired token records, denylist entries and requests, and actions past the
    /// retention (at most `limit` of each); answers how many.
    pub(in crate::tenant) fn sweep_agents(
        &self,
        batch: &mut TenantBatch,
        now: OffsetDateTime,
        limit: usize,
    ) -> Result<usize, TenantError> {
        let ts = now.unix_timestamp();
        let retention = Duration::days(i64::from(self.agent_policy().activity_retention_days));
        let cutoff = now - retention;
        let mut n = self.sweep_kind::<AgentTokenRecord>(
            limit,
            |_, t| t.exp <= ts,
            |k, _| batch.remove(Kind::AgentToken, k),
        )?;
        n += self.sweep_kind::<DeniedTokenRecord>(
            limit,
            |_, t| t.exp <= ts,
            |k, _| batch.remove(Kind::AgentDenied, k),
        )?;
        n += self.sweep_kind::<AgentRequestRecord>(
            limit,
            |k, r| r.expires_at <= now && k.len() == 32,
            |k, r| {
                if let Ok(k) = <[u8; 32]>::try_from(k) {
                    self.remove_request(batch, &k, r);
                }
            },
        )?;
        n += self.sweep_kind::<AgentActionRecord>(
            limit,
            |_, r| r.created_at < cutoff,
            |k, _| batch.remove(Kind::AgentAction, k),
        )?;
        Ok(n)
    }
}
