//! Per-agent per-minute windows and the live tokens, in memory, and the refusals they make:
//! the one `agent.rate_limited` event a window writes, and the cap of concurrent tokens.

use std::{
    collections::{hash_map::Entry, BinaryHeap, HashMap},
    time::Instant,
};

use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    activity::Action,
    policy::AgentLimit,
    records::{AgentRecord, AgentTokenRecord},
};
use crate::tenant::agents::memory::Agents;
use crate::tenant::ctx::TenantCtx;
use crate::{error::TenantError, tenant::audit::AuditContext};

/// Per-agent per-minute windows and the live tokens, in memory. A restart forgets the
/// windows (as it forgets the other throttles); the live tokens are read back from the store
/// when first needed.
#[derive(Default)]
pub struct AgentCounters {
    windows: HashMap<(Uuid, AgentLimit), Window>,
    /// Expiry times of each agent's unexpired tokens (a min-heap).
    pub(super) live: HashMap<Uuid, BinaryHeap<std::cmp::Reverse<i64>>>,
    /// When each agent's refusal at `max_concurrent_tokens` was last reported.
    cap_reported: HashMap<Uuid, Instant>,
    /// Each polled request's last poll and current interval (by the key of its record): a
    /// poll writes nothing; a restart starts each from its record.
    pub(super) polls: HashMap<[u8; 32], (OffsetDateTime, u32)>,
    /// The context's `denied_epoch` when `live` was last valid.
    pub(super) denied_epoch: u64,
}

struct Window {
    start: Instant,
    count: u32,
    reported: bool,
}

/// A refused request over an agent's limit: the seconds until it may ask again, and whether
/// this is the window's first refusal (its event is written once).
pub(super) struct OverLimit {
    pub(super) retry_after: u64,
    pub(super) first: bool,
    pub(super) limit: u32,
    pub(super) name: &'static str,
}

impl AgentCounters {
    /// Whether a refusal at the concurrency cap is the first of its minute for `agent`.
    pub(super) fn cap_first(&mut self, agent: Uuid, now: Instant) -> bool {
        let minute = std::time::Duration::from_secs(60);
        if self.cap_reported.len() > 10_000 {
            self.cap_reported
                .retain(|_, at| now.duration_since(*at) < minute);
        }
        match self.cap_reported.get(&agent) {
            Some(at) if now.duration_since(*at) < minute => false,
            _ => {
                self.cap_reported.insert(agent, now);
                true
            }
        }
    }

    pub(super) fn hit(
        &mut self,
        agent: Uuid,
        limit: AgentLimit,
        max: u32,
        now: Instant,
    ) -> Result<(), OverLimit> {
        if self.windows.len() > 10_000 {
            self.windows
                .retain(|_, w| now.duration_since(w.start) < std::time::Duration::from_secs(60));
        }
        let w = self.windows.entry((agent, limit)).or_insert(Window {
            start: now,
            count: 0,
            reported: false,
        });
        let elapsed = now.duration_since(w.start);
        if elapsed >= std::time::Duration::from_secs(60) {
            *w = Window {
                start: now,
                count: 0,
                reported: false,
            };
        }
        if w.count >= max {
            let left =
                std::time::Duration::from_secs(60).saturating_sub(now.duration_since(w.start));
            let first = !w.reported;
            w.reported = true;
            return Err(OverLimit {
                retry_after: left.as_secs_f64().ceil().max(1.0) as u64,
                first,
                limit: max,
                name: limit.name(),
            });
        }
        w.count += 1;
        Ok(())
    }
}

impl Agents {
    /// Counts a request against the agent's per-minute `limit`; over it, writes the window's
    /// one `agent.rate_limited` event and answers 429.
    pub(super) fn agent_rate(
        &mut self,
        cx: &mut TenantCtx,
        agent: &AgentRecord,
        limit: AgentLimit,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        let max = agent.limit_of(limit, &cx.agent_policy());
        match self.counters.hit(agent.id, limit, max, Instant::now()) {
            Ok(()) => Ok(()),
            Err(over) => Err(self.over_limit(cx, agent, over, ctx)),
        }
    }

    /// The refusal of a request over a limit, after the window's one event.
    pub(super) fn over_limit(
        &mut self,
        cx: &mut TenantCtx,
        agent: &AgentRecord,
        over: OverLimit,
        ctx: &AuditContext,
    ) -> TenantError {
        if over.first {
            if let Err(e) = self.write_rate_limited(cx, agent, &over, ctx) {
                return e;
            }
        }
        TenantError::RateLimited {
            retry_after: over.retry_after,
        }
    }

    fn write_rate_limited(
        &mut self,
        cx: &mut TenantCtx,
        agent: &AgentRecord,
        over: &OverLimit,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        {
            let now = OffsetDateTime::now_utc();
            let mut fx = cx.effects();
            cx.audit_into(
                &mut fx.batch,
                "agent.rate_limited",
                ctx,
                serde_json::json!({
                    "agent_id": agent.id,
                    "client_id": agent.client_id,
                    "scope": over.name,
                    "limit": over.limit,
                }),
            )?;
            let mut a = Action::new("agent.rate_limited");
            a.method = Some(over.name);
            self.record_action(&mut fx.batch, agent.id, a, ctx, now)?;
            cx.commit(fx)?;
        }
        Ok(())
    }

    /// The agent's unexpired tokens, read back from the store the first time.
    pub(super) fn live_tokens(
        &mut self,
        cx: &mut TenantCtx,
        agent: Uuid,
        now: i64,
    ) -> Result<&mut BinaryHeap<std::cmp::Reverse<i64>>, TenantError> {
        if self.counters.denied_epoch != cx.denied_epoch {
            // Tokens were denylisted since: count again from the store.
            self.counters.live.clear();
            self.counters.denied_epoch = cx.denied_epoch;
        }
        let heap = match self.counters.live.entry(agent) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let mut heap = BinaryHeap::new();
                for item in cx.store.scan::<AgentTokenRecord>(agent.as_bytes()) {
                    let (_, t) = item?;
                    if t.exp > now {
                        heap.push(std::cmp::Reverse(t.exp));
                    }
                }
                e.insert(heap)
            }
        };
        while heap
            .peek()
            .is_some_and(|std::cmp::Reverse(exp)| *exp <= now)
        {
            heap.pop();
        }
        Ok(heap)
    }
}
