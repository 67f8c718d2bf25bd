//! The directory's dashboard side: sessions, login throttling, members and invitations. All of
//! it is platform state (accounts span tenants), so the directory owns it.

use std::{
    net::IpAddr,
    time::{Duration, Instant},
};

use ractor::RpcReplyPort;
use serde::Serialize;
use tessera_storage::{ct_eq, random_token, sha256, Kind, PlatformBatch, TenantId};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{reply_when_durable, AccountCredential, DirectoryState};
use crate::{
    error::DirectoryError,
    records::{
        membership_key, AccountEmailIndex, DashboardAccount, DashboardSession, InviteRecord,
        Membership, MembershipRecord, Role,
    },
    throttle::throttle_ip,
};

/// How long dashboard sessions live.
#[derive(Clone, Copy, Debug)]
pub struct SessionPolicy {
    /// Without a request for this long, a session ends.
    pub idle: Duration,
    /// A session ends this long after login, whatever its use.
    pub absolute: Duration,
}

/// How long an invitation link works.
const INVITE_TTL: time::Duration = time::Duration::days(7);
/// Failed logins an account or address gets before it is throttled.
pub const FREE_FAILURES_PER_ACCOUNT: u32 = 5;
pub const FREE_FAILURES_PER_IP: u32 = 20;
/// The first block; each further failure doubles it, up to `MAX_BLOCK`.
pub const FIRST_BLOCK: Duration = Duration::from_secs(15);
pub const MAX_BLOCK: Duration = Duration::from_secs(15 * 60);

/// One of the caller's tenants.
#[derive(Clone, Debug, Serialize)]
pub struct MemberOf {
    pub tenant: TenantId,
    pub slug: String,
    pub name: String,
    pub role: Role,
}

/// A valid session, as the HTTP layer needs it.
#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub account_id: Uuid,
    pub email: String,
    pub csrf_hash: [u8; 32],
    pub reauth_at: Option<OffsetDateTime>,
    pub expires_at: OffsetDateTime,
    pub memberships: Vec<MemberOf>,
}

impl SessionInfo {
    /// The caller's role in `slug`, if a member.
    pub fn role_in(&self, slug: &str) -> Option<&MemberOf> {
        self.memberships.iter().find(|m| m.slug == slug)
    }

    /// Whether `csrf` is this session's CSRF value (constant time).
    pub fn csrf_matches(&self, csrf: &str) -> bool {
        ct_eq(&sha256(csrf.as_bytes()), &self.csrf_hash)
    }
}

/// A session just created: the token and CSRF value are shown to the client once.
#[derive(Clone, Debug)]
pub struct NewSession {
    pub token: String,
    pub csrf: String,
    pub info: SessionInfo,
}

/// Whether a login may be attempted.
#[derive(Debug)]
pub enum LoginGate {
    Proceed(Option<AccountCredential>),
    Throttled { retry_after_secs: u64 },
}

#[derive(Clone, Debug, Serialize)]
pub struct MemberInfo {
    pub account_id: Uuid,
    pub email: String,
    pub role: Role,
    #[serde(with = "time::serde::rfc3339")]
    pub added_at: OffsetDateTime,
}

#[derive(Clone, Debug)]
pub enum InviteOutcome {
    /// The e-mail already had an account: it is a member now.
    Added(MemberInfo),
    /// A single-use link must be e-mailed to the invitee.
    Invited {
        token: String,
        email: String,
        role: Role,
        expires_at: OffsetDateTime,
    },
}

#[derive(Clone, Debug, Serialize)]
pub struct AcceptedInvite {
    pub account_id: Uuid,
    pub email: String,
    pub tenant_slug: String,
    pub role: Role,
}

impl DirectoryState {
    pub(super) fn begin_login(&self, email: &str, ip: IpAddr) -> LoginGate {
        let ip = throttle_ip(ip);
        let now = Instant::now();
        let email = email.to_lowercase();
        let wait = self
            .account_throttle
            .blocked(&email, now)
            .into_iter()
            .chain(self.ip_throttle.blocked(&ip, now))
            .max();
        match wait {
            Some(retry_after_secs) => LoginGate::Throttled { retry_after_secs },
            None => LoginGate::Proceed(self.find_account(&email)),
        }
    }

    pub(super) fn login_failed(&mut self, email: &str, ip: IpAddr) {
        let ip = throttle_ip(ip);
        let now = Instant::now();
        self.account_throttle.fail(&email.to_lowercase(), now);
        self.ip_throttle.fail(&ip, now);
    }

    fn memberships_of(&self, account: &DashboardAccount) -> Vec<MemberOf> {
        let mut out: Vec<MemberOf> = account
            .memberships
            .iter()
            .filter_map(|m| {
                let t = self.tenants.get(&m.tenant)?;
                Some(MemberOf {
                    tenant: t.id,
                    slug: t.slug.clone(),
                    name: t.name.clone(),
                    role: m.role,
                })
            })
            .collect();
        out.sort_by(|a, b| a.slug.cmp(&b.slug));
        out
    }

    fn info(&self, account: &DashboardAccount, session: &DashboardSession) -> SessionInfo {
        SessionInfo {
            account_id: account.id,
            email: account.email.clone(),
            csrf_hash: session.csrf_hash,
            reauth_at: session.reauth_at,
            expires_at: self.expiry(session),
            memberships: self.memberships_of(account),
        }
    }

    fn expiry(&self, s: &DashboardSession) -> OffsetDateTime {
        let idle = s.last_seen_at + self.session_policy.idle;
        let absolute = s.created_at + self.session_policy.absolute;
        idle.min(absolute)
    }

    pub(super) fn create_session(
        &mut self,
        account_id: Uuid,
        reply: RpcReplyPort<Result<NewSession, DirectoryError>>,
    ) {
        let result = (|| {
            let account = self
                .platform
                .get::<DashboardAccount>(account_id.as_bytes())?
                .ok_or(DirectoryError::SessionInvalid)?;
            self.account_throttle.reset(&account.email);
            let now = OffsetDateTime::now_utc();
            let token = random_token(32);
            let csrf = random_token(32);
            let session = DashboardSession {
                account_id,
                csrf_hash: sha256(csrf.as_bytes()),
                created_at: now,
                last_seen_at: now,
                // Sensitive changes ask for an explicit re-authentication, even right after
                // login: the password is typed again on purpose, for that change.
                reauth_at: None,
            };
            let mut batch = PlatformBatch::default();
            batch.put(&sha256(token.as_bytes()), &session)?;
            self.platform.apply(batch)?;
            let info = self.info(&account, &session);
            Ok(NewSession { token, csrf, info })
        })();
        self.reply_durable(reply, result);
    }

    /// The live session for `token`; touches its idle timer. An expired one is deleted.
    pub(super) fn authenticate(&mut self, token: &str) -> Result<SessionInfo, DirectoryError> {
        let key = sha256(token.as_bytes());
        let mut session = self
            .platform
            .get::<DashboardSession>(&key)?
            .ok_or(DirectoryError::SessionInvalid)?;
        let now = OffsetDateTime::now_utc();
        let mut batch = PlatformBatch::default();
        if now >= self.expiry(&session) {
            batch.remove(Kind::DashboardSession, &key);
            self.platform.apply(batch)?;
            return Err(DirectoryError::SessionInvalid);
        }
        let account = self
            .platform
            .get::<DashboardAccount>(session.account_id.as_bytes())?
            .ok_or(DirectoryError::SessionInvalid)?;
        // Touch at most once a minute: the idle timer needs no finer grain, and most requests
        // then write nothing.
        if now - session.last_seen_at > time::Duration::minutes(1) {
            session.last_seen_at = now;
            batch.put(&key, &session)?;
            self.platform.apply(batch)?;
        }
        Ok(self.info(&account, &session))
    }

    pub(super) fn logout(&mut self, token: &str, reply: RpcReplyPort<Result<(), DirectoryError>>) {
        let mut batch = PlatformBatch::default();
        batch.remove(Kind::DashboardSession, &sha256(token.as_bytes()));
        let result = self.platform.apply(batch).map_err(DirectoryError::from);
        self.reply_durable(reply, result);
    }

    pub(super) fn mark_reauth(
        &mut self,
        token: &str,
        reply: RpcReplyPort<Result<OffsetDateTime, DirectoryError>>,
    ) {
        let result = (|| {
            let key = sha256(token.as_bytes());
            let mut session = self
                .platform
                .get::<DashboardSession>(&key)?
                .ok_or(DirectoryError::SessionInvalid)?;
            let now = OffsetDateTime::now_utc();
            if now >= self.expiry(&session) {
                return Err(DirectoryError::SessionInvalid);
            }
            if let Some(account) = self
                .platform
                .get::<DashboardAccount>(session.account_id.as_bytes())?
            {
                self.account_throttle.reset(&account.email);
            }
            session.reauth_at = Some(now);
            session.last_seen_at = now;
            let mut batch = PlatformBatch::default();
            batch.put(&key, &session)?;
            self.platform.apply(batch)?;
            Ok(now)
        })();
        self.reply_durable(reply, result);
    }

    pub(super) fn list_members(&self, tenant: TenantId) -> Result<Vec<MemberInfo>, DirectoryError> {
        let mut out = Vec::new();
        for item in self
            .platform
            .scan_prefix::<MembershipRecord>(tenant.as_bytes())
        {
            let (key, m) = item?;
            let Ok(id) = Uuid::from_slice(&key) else {
                continue;
            };
            if let Some(a) = self.platform.get::<DashboardAccount>(id.as_bytes())? {
                out.push(MemberInfo {
                    account_id: a.id,
                    email: a.email,
                    role: m.role,
                    added_at: m.added_at,
                });
            }
        }
        out.sort_by(|a, b| a.email.cmp(&b.email));
        Ok(out)
    }

    /// Adds `account` to `tenant` with `role` in `batch` (both sides of the fact).
    fn add_membership(
        &self,
        batch: &mut PlatformBatch,
        account: &mut DashboardAccount,
        tenant: TenantId,
        role: Role,
        now: OffsetDateTime,
    ) -> Result<MemberInfo, DirectoryError> {
        if account.memberships.iter().any(|m| m.tenant == tenant) {
            return Err(DirectoryError::AlreadyMember);
        }
        account.memberships.push(Membership { tenant, role });
        batch.put(account.id.as_bytes(), &*account)?;
        batch.put(
            &membership_key(&tenant, &account.id),
            &MembershipRecord {
                role,
                added_at: now,
            },
        )?;
        Ok(MemberInfo {
            account_id: account.id,
            email: account.email.clone(),
            role,
            added_at: now,
        })
    }

    pub(super) fn invite(
        &mut self,
        tenant: TenantId,
        email: &str,
        role: Role,
        invited_by: Uuid,
        reply: RpcReplyPort<Result<InviteOutcome, DirectoryError>>,
    ) {
        let result = (|| {
            if !self.tenants.contains_key(&tenant) {
                return Err(DirectoryError::TenantNotFound);
            }
            let email = email.to_lowercase();
            let now = OffsetDateTime::now_utc();
            let mut batch = PlatformBatch::default();
            if let Some(idx) = self.platform.get::<AccountEmailIndex>(email.as_bytes())? {
                let mut account = self
                    .platform
                    .get::<DashboardAccount>(idx.account.as_bytes())?
                    .ok_or_else(|| DirectoryError::Internal("account index dangles".into()))?;
                let member = self.add_membership(&mut batch, &mut account, tenant, role, now)?;
                self.platform.apply(batch)?;
                return Ok(InviteOutcome::Added(member));
            }
            let token = random_token(32);
            let expires_at = now + INVITE_TTL;
            batch.put(
                &sha256(token.as_bytes()),
                &InviteRecord {
                    tenant,
                    email: email.clone(),
                    role,
                    invited_by,
                    created_at: now,
                    expires_at,
                },
            )?;
            self.platform.apply(batch)?;
            Ok(InviteOutcome::Invited {
                token,
                email,
                role,
                expires_at,
            })
        })();
        self.reply_durable(reply, result);
    }

    pub(super) fn accept_invite(
        &mut self,
        token: &str,
        password_hash: String,
        reply: RpcReplyPort<Result<AcceptedInvite, DirectoryError>>,
    ) {
        let result = (|| {
            let key = sha256(token.as_bytes());
            let invite = self
                .platform
                .get::<InviteRecord>(&key)?
                .ok_or(DirectoryError::InviteInvalid)?;
            let now = OffsetDateTime::now_utc();
            let mut batch = PlatformBatch::default();
            // Single use: consumed in the same batch that creates the membership.
            batch.remove(Kind::Invite, &key);
            if now >= invite.expires_at {
                self.platform.apply(batch)?;
                return Err(DirectoryError::InviteInvalid);
            }
            let tenant = self
                .tenants
                .get(&invite.tenant)
                .ok_or(DirectoryError::InviteInvalid)?
                .clone();
            let mut account = match self
                .platform
                .get::<AccountEmailIndex>(invite.email.as_bytes())?
            {
                Some(idx) => self
                    .platform
                    .get::<DashboardAccount>(idx.account.as_bytes())?
                    .ok_or_else(|| DirectoryError::Internal("account index dangles".into()))?,
                None => {
                    let account = DashboardAccount {
                        id: Uuid::now_v7(),
                        email: invite.email.clone(),
                        password_hash,
                        created_at: now,
                        memberships: Vec::new(),
                    };
                    batch.put(
                        account.email.as_bytes(),
                        &AccountEmailIndex {
                            account: account.id,
                        },
                    )?;
                    account
                }
            };
            let member =
                self.add_membership(&mut batch, &mut account, tenant.id, invite.role, now)?;
            self.platform.apply(batch)?;
            Ok(AcceptedInvite {
                account_id: member.account_id,
                email: member.email,
                tenant_slug: tenant.slug,
                role: member.role,
            })
        })();
        self.reply_durable(reply, result);
    }

    /// Replies once the writes so far are durable; an error is answered at once.
    pub(super) fn reply_durable<T: Send + 'static>(
        &self,
        reply: RpcReplyPort<Result<T, DirectoryError>>,
        result: Result<T, DirectoryError>,
    ) {
        match result {
            Ok(v) => reply_when_durable(
                self.platform.ticket(),
                reply,
                Ok(v),
                DirectoryError::Internal,
            ),
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }
}
