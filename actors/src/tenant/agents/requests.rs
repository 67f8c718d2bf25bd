//! CIBA and device requests: started by an agent (the CIBA user mailed a link, or a decoy
//! written alike), polled (`slow_down`, pending, denied, expired, or one token once), and
//! approved or denied by the user through the API, the mailed link or the device page.

use crate::tenant::agents::memory::Agents;
use crate::tenant::ctx::TenantCtx;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use tessera_storage::{sha256, Kind, TenantBatch};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    activity::Action,
    grants::{invalid_grant, unauthorized, AgentIssued},
    policy::{AgentGrant, AgentLimit},
    records::{
        index_key, AgentRecord, AgentRequestIndex, AgentRequestRecord, RequestFlow, RequestStatus,
    },
};
use crate::error::AgentError;
use crate::{
    error::TenantError,
    outbound::{MailJob, MailKind},
    tenant::{
        audit::AuditContext,
        credentials::Credential,
        effects::Effects,
        oauth::{ConsentRecord, OAuthFailure},
    },
};

/// How much a `slow_down` adds to a flow's polling interval (RFC 8628 3.5).
pub const SLOW_DOWN_STEP: u32 = 5;
/// Letters of a device flow's user code (RFC 8628 6.1: no vowels, no look-alikes).
pub const USER_CODE_ALPHABET: &[u8] = b"BCDFGHJKLMNPQRSTVWXZ";
/// User codes one user may look up on the device page per minute (RFC 8628 5.1: the codes
/// are short, so guessing is slowed).
pub const USER_CODE_TRIES_PER_MINUTE: u32 = 20;
/// Pending CIBA requests of one agent mailed to one user at a time.
const MAILED_REQUESTS_PER_USER: usize = 3;
/// Live CIBA and device requests one agent may hold.
const MAX_PENDING_REQUESTS: usize = 1000;

/// A request as a user sees it before deciding.
#[derive(Clone, Debug)]
pub struct RequestView {
    pub id: Uuid,
    pub flow: RequestFlow,
    pub client_id: String,
    pub agent_name: String,
    pub agent_logo_url: Option<String>,
    pub binding_message: Option<String>,
    pub scopes: Vec<String>,
    /// The RFC 8707 resource the scopes are asked for (`None`: the request names none).
    pub resource: Option<String>,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
    pub tenant_name: String,
    pub default_locale: String,
}

/// A started CIBA or device request.
// Holds secrets (a client secret, a poll handle, a mailed token): no `Debug`.
#[derive(Clone)]
pub struct RequestStarted {
    /// `auth_req_id` or `device_code`.
    pub secret: String,
    pub user_code: Option<String>,
    pub expires_in: i64,
    pub interval: u32,
}

/// How polling went when it issued nothing (RFC 8628 3.5, CIBA 11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollRefusal {
    Pending,
    SlowDown,
    Denied,
    Expired,
}

/// A random user code: 8 letters of [`USER_CODE_ALPHABET`] (about 34 bits).
pub(super) fn new_user_code() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..8)
        .map(|_| USER_CODE_ALPHABET[rng.gen_range(0..USER_CODE_ALPHABET.len())] as char)
        .collect()
}

/// A user code as typed: letters only, upper-cased (the dash and spaces dropped).
pub fn normalize_user_code(typed: &str) -> String {
    typed
        .chars()
        .filter(|c| c.is_ascii_alphabetic())
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

fn sorted_scopes(scopes: &[String]) -> Vec<String> {
    let mut s = scopes.to_vec();
    s.sort();
    s.dedup();
    s
}

impl Agents {
    /// A new CIBA or device request: its record and its indexes (into a new batch).
    fn start_request(
        &mut self,
        cx: &mut TenantCtx,
        agent: &AgentRecord,
        flow: RequestFlow,
        user: Option<Uuid>,
        scopes: Vec<String>,
        resource: Option<String>,
        binding_message: Option<String>,
    ) -> Result<(Effects, RequestStarted, AgentRequestRecord), TenantError> {
        let now = OffsetDateTime::now_utc();
        let pending = cx
            .store
            .scan::<AgentRequestRecord>(b"")
            .filter_map(Result::ok)
            .filter(|(_, r)| r.agent_id == agent.id && r.expires_at > now)
            .count();
        if pending >= MAX_PENDING_REQUESTS {
            return Err(TenantError::RateLimited { retry_after: 60 });
        }
        let policy = cx.agent_policy();
        let ttl = match flow {
            RequestFlow::Ciba => policy.ciba_ttl_secs,
            RequestFlow::Device => policy.device_code_ttl_secs,
        };
        let bytes: [u8; 32] = rand::random();
        let secret = URL_SAFE_NO_PAD.encode(bytes);
        let key = sha256(secret.as_bytes());
        let mut fx = cx.effects();
        let user_code = if flow == RequestFlow::Device {
            let mut code = new_user_code();
            while cx
                .store
                .get::<AgentRequestIndex>(&index_key(b'u', code.as_bytes()))?
                .is_some()
            {
                code = new_user_code();
            }
            fx.batch.put(
                &index_key(b'u', code.as_bytes()),
                &AgentRequestIndex { key },
            )?;
            Some(code)
        } else {
            None
        };
        let record = AgentRequestRecord {
            id: Uuid::now_v7(),
            flow,
            agent_id: agent.id,
            client_id: agent.client_id.clone(),
            user,
            scopes,
            resource,
            binding_message,
            user_code: user_code.clone(),
            link_hash: None,
            created_at: now,
            expires_at: now + Duration::seconds(i64::from(ttl)),
            interval_secs: policy.poll_interval_secs,
            last_poll_at: now,
            status: RequestStatus::Pending,
        };
        fx.batch.put(
            &index_key(b'i', record.id.as_bytes()),
            &AgentRequestIndex { key },
        )?;
        Ok((
            fx,
            RequestStarted {
                secret,
                user_code,
                expires_in: i64::from(ttl),
                interval: policy.poll_interval_secs,
            },
            record,
        ))
    }

    pub(super) fn backchannel(
        &mut self,
        cx: &mut TenantCtx,
        agent: &AgentRecord,
        login_hint: &str,
        scopes: Vec<String>,
        binding_message: Option<String>,
        resource: Option<String>,
        ctx: &AuditContext,
    ) -> Result<(RequestStarted, Vec<MailJob>), TenantError> {
        let agent = self.current_agent(cx, agent)?;
        if !agent.allows(AgentGrant::Ciba) {
            return Err(unauthorized());
        }
        if scopes.iter().any(|s| !agent.profile.scopes.contains(s)) {
            return Err(TenantError::OAuth(OAuthFailure::InvalidScope));
        }
        self.agent_rate(cx, &agent, AgentLimit::CibaInitiate, ctx)?;
        // An address with no account gets a request all the same, which nobody can approve:
        // the answer does not tell whether the account exists.
        // A user who revoked this agent is treated alike: no request reaches them.
        let now = OffsetDateTime::now_utc();
        let user = match cx.user_by_email(login_hint)?.filter(|u| !u.suspended()) {
            Some(u) if !self.user_revoked(cx, u.id, agent.id)? => Some(u),
            _ => None,
        };
        // At most a few requests of one agent wait in one mailbox; more are listed for the
        // user in the API but not mailed.
        let mailed_pending = match &user {
            Some(u) => cx
                .store
                .scan::<AgentRequestRecord>(b"")
                .filter_map(Result::ok)
                .filter(|(_, r)| {
                    r.agent_id == agent.id
                        && r.user == Some(u.id)
                        && r.link_hash.is_some()
                        && r.status == RequestStatus::Pending
                        && r.expires_at > now
                })
                .count(),
            None => 0,
        };
        let (mut fx, started, mut record) = self.start_request(
            cx,
            &agent,
            RequestFlow::Ciba,
            user.as_ref().map(|u| u.id),
            scopes,
            resource,
            binding_message,
        )?;
        if let Some(u) = user
            .as_ref()
            .filter(|_| mailed_pending < MAILED_REQUESTS_PER_USER)
        {
            if let Some(email) = &u.email {
                let token = cx.link_token();
                let link_hash = sha256(token.as_bytes());
                record.link_hash = Some(link_hash);
                fx.batch.put(
                    &index_key(b'l', &link_hash),
                    &AgentRequestIndex {
                        key: sha256(started.secret.as_bytes()),
                    },
                )?;
                let link = cx.link("agent-request", &token);
                cx.queue_mail(
                    &mut fx,
                    email,
                    MailKind::AgentRequest {
                        link,
                        agent_name: agent.profile.name.clone(),
                        binding_message: record.binding_message.clone(),
                    },
                )?;
            }
        }
        fx.batch.put(&sha256(started.secret.as_bytes()), &record)?;
        let mut a = Action::new("ciba.requested");
        a.user = record.user;
        a.scopes = Some(&record.scopes);
        a.resource = record.resource.as_deref();
        self.record_action(&mut fx.batch, agent.id, a, ctx, now)?;
        if record.link_hash.is_none() {
            // Nobody is mailed (an unknown address, a user who revoked the agent, a full
            // mailbox): seal and write as much as a mailed request does, so the answer's time
            // does not tell the cases apart.
            let link = cx.link("agent-request", &cx.link_token());
            let kind = MailKind::AgentRequest {
                link,
                agent_name: agent.profile.name.clone(),
                binding_message: record.binding_message.clone(),
            };
            cx.write_decoy(&cx.decoy_of(login_hint, kind, &[])?)?;
        }
        let mail = cx.commit(fx)?;
        Ok((started, mail))
    }

    pub(super) fn device_authorize(
        &mut self,
        cx: &mut TenantCtx,
        agent: &AgentRecord,
        scopes: Vec<String>,
        resource: Option<String>,
        ctx: &AuditContext,
    ) -> Result<RequestStarted, TenantError> {
        let agent = self.current_agent(cx, agent)?;
        if !agent.allows(AgentGrant::DeviceCode) {
            return Err(unauthorized());
        }
        if scopes.iter().any(|s| !agent.profile.scopes.contains(s)) {
            return Err(TenantError::OAuth(OAuthFailure::InvalidScope));
        }
        self.agent_rate(cx, &agent, AgentLimit::DeviceCode, ctx)?;
        let (mut fx, started, record) = self.start_request(
            cx,
            &agent,
            RequestFlow::Device,
            None,
            scopes,
            resource,
            None,
        )?;
        fx.batch.put(&sha256(started.secret.as_bytes()), &record)?;
        let mut a = Action::new("device.requested");
        a.scopes = Some(&record.scopes);
        a.resource = record.resource.as_deref();
        self.record_action(&mut fx.batch, agent.id, a, ctx, OffsetDateTime::now_utc())?;
        cx.commit(fx)?;
        Ok(started)
    }

    /// The agent polls a CIBA or device request.
    pub(super) fn poll(
        &mut self,
        cx: &mut TenantCtx,
        agent: &AgentRecord,
        flow: RequestFlow,
        secret: &str,
        ctx: &AuditContext,
    ) -> Result<Result<AgentIssued, PollRefusal>, TenantError> {
        let agent = self.current_agent(cx, agent)?;
        let grant = match flow {
            RequestFlow::Ciba => AgentGrant::Ciba,
            RequestFlow::Device => AgentGrant::DeviceCode,
        };
        if !agent.allows(grant) {
            return Err(unauthorized());
        }
        let key = sha256(secret.as_bytes());
        let Some(record) = cx.store.get::<AgentRequestRecord>(&key)?.filter(|r| {
            r.agent_id == agent.id && r.flow == flow && r.status != RequestStatus::Issued
        }) else {
            return Err(invalid_grant());
        };
        let now = OffsetDateTime::now_utc();
        if record.expires_at <= now {
            let mut fx = cx.effects();
            cx.remove_request(&mut fx.batch, &key, &record);
            cx.commit(fx)?;
            return Ok(Err(PollRefusal::Expired));
        }
        if record.status == RequestStatus::Denied {
            let mut fx = cx.effects();
            cx.remove_request(&mut fx.batch, &key, &record);
            cx.commit(fx)?;
            return Ok(Err(PollRefusal::Denied));
        }
        let polls = &mut self.counters.polls;
        if polls.len() > 10_000 {
            polls.retain(|_, (at, _)| now - *at < Duration::hours(1));
        }
        let (last, mut interval) = polls
            .get(&key)
            .copied()
            .unwrap_or((record.last_poll_at, record.interval_secs));
        let too_soon = now - last < Duration::seconds(i64::from(interval));
        if too_soon {
            interval = interval.saturating_add(SLOW_DOWN_STEP);
        }
        polls.insert(key, (now, interval));
        if too_soon {
            return Ok(Err(PollRefusal::SlowDown));
        }
        if record.status == RequestStatus::Pending {
            return Ok(Err(PollRefusal::Pending));
        }
        self.counters.polls.remove(&key);
        // Approved: one token, once.
        let Some(user) = record.user else {
            return Err(invalid_grant());
        };
        // The approval stands while the user's consent for the request's resource still holds
        // every scope it approved (a withdrawal since ends it).
        let approved = self.agent_consent(cx, user, &agent)?.is_some_and(|c| {
            c.grants
                .get(record.resource.as_deref().unwrap_or(""))
                .is_some_and(|granted| record.scopes.iter().all(|s| granted.contains(s)))
        });
        if !approved
            || self.user_revoked(cx, user, agent.id)?
            || cx.user(user)?.is_none_or(|u| u.suspended())
        {
            let mut fx = cx.effects();
            cx.remove_request(&mut fx.batch, &key, &record);
            cx.commit(fx)?;
            return Ok(Err(PollRefusal::Denied));
        }
        // What the agent may still ask for (its scopes may have changed since).
        let scopes: Vec<String> = record
            .scopes
            .iter()
            .filter(|s| agent.profile.scopes.contains(s))
            .cloned()
            .collect();
        let resource = record.resource.clone();
        let issued = self.issue_agent_token(
            cx,
            &agent,
            grant,
            Some(user),
            scopes,
            resource,
            ctx,
            |s, batch| {
                s.remove_request(batch, &key, &record);
                Ok(())
            },
        )?;
        Ok(Ok(issued))
    }

    /// A request by one of its handles, pending and unexpired.
    pub(super) fn request_by_index(
        &self,
        cx: &TenantCtx,
        tag: u8,
        value: &[u8],
    ) -> Result<Option<([u8; 32], AgentRequestRecord)>, TenantError> {
        let Some(ix) = cx.store.get::<AgentRequestIndex>(&index_key(tag, value))? else {
            return Ok(None);
        };
        let now = OffsetDateTime::now_utc();
        Ok(cx
            .store
            .get::<AgentRequestRecord>(&ix.key)?
            .filter(|r| r.status == RequestStatus::Pending && r.expires_at > now)
            .map(|r| (ix.key, r)))
    }

    pub(super) fn request_view(
        &self,
        cx: &TenantCtx,
        r: &AgentRequestRecord,
    ) -> Result<RequestView, TenantError> {
        let agent = self.agent(cx, r.agent_id)?;
        Ok(RequestView {
            id: r.id,
            flow: r.flow,
            client_id: r.client_id.clone(),
            agent_name: agent.profile.name,
            agent_logo_url: agent.profile.logo_url,
            binding_message: r.binding_message.clone(),
            scopes: r.scopes.clone(),
            resource: r.resource.clone(),
            created_at: r.created_at,
            expires_at: r.expires_at,
            tenant_name: cx.info.name.clone(),
            default_locale: cx.settings.users.default_locale.clone(),
        })
    }

    /// `user` approves or denies a pending request: approving adds its scopes to the user's
    /// consent to the agent for the resource the request named (`""`: none). An account whose
    /// address is not confirmed may deny but not approve: a consent is durable.
    pub(super) fn decide_request(
        &mut self,
        cx: &mut TenantCtx,
        key: [u8; 32],
        mut record: AgentRequestRecord,
        user: Uuid,
        approve: bool,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        let agent = self.agent(cx, record.agent_id)?;
        if agent.revoked_at.is_some() {
            return Err(TenantError::NotFound);
        }
        if approve && self.user_revoked(cx, user, agent.id)? {
            return Err(TenantError::Agent(AgentError::RevokedByUser));
        }
        if approve {
            let holder = cx.user(user)?.ok_or(TenantError::NotFound)?;
            if holder.email.is_some() && !holder.email_verified {
                return Err(TenantError::EmailUnconfirmed {
                    credential: Credential::AgentConsents,
                });
            }
        }
        let now = OffsetDateTime::now_utc();
        let mut fx = cx.effects();
        record.user = Some(user);
        record.status = if approve {
            RequestStatus::Approved
        } else {
            RequestStatus::Denied
        };
        fx.batch.put(&key, &record)?;
        if approve {
            let mut ckey = user.as_bytes().to_vec();
            ckey.extend_from_slice(agent.client_id.as_bytes());
            let mut consent = cx
                .store
                .get::<ConsentRecord>(&ckey)?
                .unwrap_or(ConsentRecord {
                    user_id: user,
                    client_id: agent.client_id.clone(),
                    grants: Default::default(),
                    granted_at: now,
                    updated_at: now,
                });
            let entry = consent
                .grants
                .entry(record.resource.clone().unwrap_or_default())
                .or_default();
            entry.extend(record.scopes.iter().cloned());
            *entry = sorted_scopes(entry);
            consent.updated_at = now;
            fx.batch.put(&ckey, &consent)?;
            self.touch_user_agent(cx, &mut fx.batch, user, &agent, now)?;
        }
        let action = if approve {
            "request.approved"
        } else {
            "request.denied"
        };
        let mut a = Action::new(action);
        a.user = Some(user);
        a.method = Some(match record.flow {
            RequestFlow::Ciba => AgentGrant::Ciba.as_str(),
            RequestFlow::Device => AgentGrant::DeviceCode.as_str(),
        });
        a.scopes = Some(&record.scopes);
        a.resource = record.resource.as_deref();
        self.record_action(&mut fx.batch, agent.id, a, ctx, now)?;
        cx.audit_into(
            &mut fx.batch,
            if approve {
                "agent.request.approved"
            } else {
                "agent.request.denied"
            },
            ctx,
            serde_json::json!({
                "user_id": user,
                "agent_id": agent.id,
                "client_id": agent.client_id,
                "scopes": record.scopes,
                "resource": record.resource,
            }),
        )?;
        cx.commit(fx)?;
        Ok(())
    }

    pub(super) fn my_requests(
        &self,
        cx: &TenantCtx,
        user: Uuid,
    ) -> Result<Vec<RequestView>, TenantError> {
        let now = OffsetDateTime::now_utc();
        let mut out = Vec::new();
        for item in cx.store.scan::<AgentRequestRecord>(b"") {
            let (_, r) = item?;
            if r.flow == RequestFlow::Ciba
                && r.user == Some(user)
                && r.status == RequestStatus::Pending
                && r.expires_at > now
            {
                let revoked = cx
                    .store
                    .get::<AgentRecord>(r.agent_id.as_bytes())?
                    .is_none_or(|a| a.revoked_at.is_some());
                if !revoked {
                    out.push(self.request_view(cx, &r)?);
                }
            }
        }
        out.sort_by_key(|r| std::cmp::Reverse(r.created_at));
        Ok(out)
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// Removes a request and its indexes (into `batch`).
    pub(super) fn remove_request(
        &self,
        batch: &mut TenantBatch,
        key: &[u8; 32],
        r: &AgentRequestRecord,
    ) {
        batch.remove(Kind::AgentRequest, key);
        batch.remove(Kind::AgentRequestIndex, &index_key(b'i', r.id.as_bytes()));
        if let Some(code) = &r.user_code {
            batch.remove(Kind::AgentRequestIndex, &index_key(b'u', code.as_bytes()));
        }
        if let Some(h) = &r.link_hash {
            batch.remove(Kind::AgentRequestIndex, &index_key(b'l', h));
        }
    }
}
