//! The directory's dashboard side: accounts, sessions, login throttling, members and
//! invitations. All of it is platform state (accounts span tenants), so the directory owns it.

use std::{net::IpAddr, time::Instant};

use tessera_storage::{random_token, sha256, Kind, PlatformBatch, TenantId};
use time::OffsetDateTime;
use uuid::Uuid;

use super::state::DirectoryState;
/// The dashboard's wire types, where they have always been reachable.
pub use super::{
    messages::{
        AcceptedInvite, AccountCredential, AccountReset, AccountTarget, DetachedTenant, Invitation,
        InviteProof, InviteTarget, LoginGate, MailedToken, MemberChange, MemberInfo, MemberList,
        MemberOf, NewSession, PendingInfo, SessionInfo,
    },
    state::SessionPolicy,
};
use crate::{
    error::DirectoryError,
    known_devices,
    login_guard::{Attempt, Captcha, Refusal},
    records::{
        membership_key, pending_invite_key, AccountEmailIndex, AccountTokenPurpose,
        AccountTokenRecord, DashboardAccount, DashboardDevice, DashboardSession, InviteRecord,
        Membership, MembershipRecord, PendingInvite, Role, TenantRecord,
    },
    throttle::{throttle_ip, Clocks, PlatformThrottleRecord},
};

/// How long an invitation link works.
const INVITE_TTL: time::Duration = time::Duration::days(7);
/// How long an address-verification link works.
pub(super) const VERIFY_TTL: time::Duration = time::Duration::days(2);
/// How long a password-reset link works.
const RESET_TTL: time::Duration = time::Duration::hours(1);
/// Mails of one purpose (verification, reset) one account may be sent an hour.
pub const ACCOUNT_MAILS_PER_HOUR: u32 = 5;
/// The key of the decoy a reset of an unknown address writes (tokens are keyed by 32-byte
/// hashes, so none is ever this).
const DECOY_KEY: &[u8] = b"decoy";
/// Password-reset requests one client address may make an hour.
pub const RESETS_PER_IP_HOUR: u32 = 20;

/// The record key of `account`'s known device `id`.
fn dashboard_device_key(account: Uuid, id: Uuid) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    out.extend_from_slice(account.as_bytes());
    out.extend_from_slice(id.as_bytes());
    out
}

impl DirectoryState {
    /// The sign-in rules of end users ([`crate::login_guard`]) apply to dashboard logins,
    /// known devices included, without a CAPTCHA: past the address's count, a refusal. The
    /// answer's credential names the known device `device_token` is, if it is a live one of
    /// the account.
    pub(super) fn begin_login(
        &self,
        email: &str,
        ip: IpAddr,
        device_token: Option<&str>,
    ) -> LoginGate {
        let email = email.to_lowercase();
        let mut cred = self.find_account(&email);
        if let (Some(c), Some(token)) = (cred.as_mut(), device_token) {
            c.device = self.known_dashboard_device(c.account_id, token);
        }
        let attempt = Attempt {
            device: cred.as_ref().and_then(|c| c.device),
            ..Attempt::new(&email, ip, Captcha::Off)
        };
        match self.login.check(&attempt) {
            Err(Refusal::Throttled { retry_after, .. }) => LoginGate::Throttled {
                retry_after_secs: retry_after,
            },
            // Not answered without a CAPTCHA; counted as the address's refusal.
            Err(Refusal::CaptchaRequired) => LoginGate::Throttled {
                retry_after_secs: 1,
            },
            Ok(()) => LoginGate::Proceed(cred),
        }
    }

    /// Counts a failed password check against `email` and `ip` (or the known `device`), and
    /// writes the counts: the failure is answered once they are durable, so a restart forgives
    /// nothing. Each rule it makes refuse is logged (the dashboard's audit is per tenant, and
    /// a login names none).
    pub(super) fn login_failed(&mut self, email: &str, ip: IpAddr, device: Option<Uuid>) {
        let email = email.to_lowercase();
        let attempt = Attempt {
            device,
            ..Attempt::new(&email, ip, Captcha::Off)
        };
        for (rule, retry_after) in self.login.fail(&attempt) {
            tracing::warn!(
                rule = rule.as_str(),
                retry_after,
                "dashboard logins locked by a sign-in rule"
            );
        }
        self.persist_throttles_logged();
    }

    /// Forgets the login throttles' entries that have run out.
    pub(super) fn sweep_throttles(&mut self) {
        self.login.sweep();
    }

    fn memberships_of(&self, account: &DashboardAccount) -> Vec<MemberOf> {
        let mut out: Vec<MemberOf> = account
            .memberships
            .iter()
            .filter(|m| account.may_use(&m.tenant))
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
            email_verified: account.email_verified,
            csrf_hash: session.csrf_hash,
            reauth_at: session.reauth_at,
            expires_at: self.expiry(session),
            memberships: self.memberships_of(account),
        }
    }

    /// The clock dashboard sessions are created, touched and expired by: the wall clock plus
    /// the fault drills' `clock_offset` (zero in production), so a drill can move a session
    /// past its idle or absolute end without waiting.
    fn session_clock(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc() + self.runtime.clock_offset
    }

    fn expiry(&self, s: &DashboardSession) -> OffsetDateTime {
        let idle = s.last_seen_at + self.session_policy.idle;
        let absolute = s.created_at + self.session_policy.absolute;
        idle.min(absolute)
    }

    /// A session for an account whose password was just verified from `ip`, on the known
    /// `device` or a new one (whose token the answer carries): the pair's failures and the
    /// device's, or else the account's, are forgiven.
    pub(super) fn create_session(
        &mut self,
        account_id: Uuid,
        ip: IpAddr,
        device: Option<Uuid>,
    ) -> Result<NewSession, DirectoryError> {
        let account = self
            .platform
            .get::<DashboardAccount>(account_id.as_bytes())?
            .ok_or(DirectoryError::SessionInvalid)?;
        self.login.succeed(&Attempt {
            device,
            ..Attempt::new(&account.email, ip, Captcha::Off)
        });
        let mut batch = PlatformBatch::default();
        let device_token = match device {
            Some(_) => None,
            None => Some(self.issue_dashboard_device(
                &mut batch,
                account_id,
                OffsetDateTime::now_utc(),
            )?),
        };
        let now = self.session_clock();
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
            epoch: account.epoch,
        };
        batch.put(&sha256(token.as_bytes()), &session)?;
        self.platform.apply(batch)?;
        let info = self.info(&account, &session);
        Ok(NewSession {
            token,
            csrf,
            info,
            device_token,
        })
    }

    /// The device `token` names, when it is a live device token of `account`.
    fn known_dashboard_device(&self, account: Uuid, token: &str) -> Option<Uuid> {
        let (id, secret) = known_devices::parse(token)?;
        let record = self
            .platform
            .get::<DashboardDevice>(&dashboard_device_key(account, id))
            .ok()??;
        known_devices::holds(
            secret,
            &record.secret_hash,
            record.expires_at,
            OffsetDateTime::now_utc(),
        )
        .then_some(id)
    }

    /// `account`'s known devices, oldest first.
    fn dashboard_devices(&self, account: Uuid) -> Result<Vec<DashboardDevice>, DirectoryError> {
        let mut out = Vec::new();
        for item in self
            .platform
            .scan_prefix::<DashboardDevice>(account.as_bytes())
        {
            out.push(item?.1);
        }
        Ok(out)
    }

    /// A new device token for `account`, its record into `batch`; expired ones and, past the
    /// cap, the oldest go.
    fn issue_dashboard_device(
        &self,
        batch: &mut PlatformBatch,
        account: Uuid,
        now: OffsetDateTime,
    ) -> Result<String, DirectoryError> {
        let held: Vec<(Uuid, OffsetDateTime)> = self
            .dashboard_devices(account)?
            .iter()
            .map(|d| (d.id, d.expires_at))
            .collect();
        let new = known_devices::issue(&held, now);
        for old in new.evict {
            batch.remove(Kind::DashboardDevice, &dashboard_device_key(account, old));
        }
        let record = DashboardDevice {
            id: new.minted.id,
            account_id: account,
            secret_hash: new.minted.secret_hash,
            created_at: now,
            expires_at: new.expires_at,
        };
        batch.put(&dashboard_device_key(account, record.id), &record)?;
        Ok(new.minted.token)
    }

    /// The session stored under `key` (a token's hash), expired or not.
    fn stored_session(&self, key: &[u8; 32]) -> Result<DashboardSession, DirectoryError> {
        self.platform
            .get::<DashboardSession>(key)?
            .ok_or(DirectoryError::SessionInvalid)
    }

    /// The account a session belongs to, unless its password was replaced since the session
    /// began (`epoch`).
    fn session_account(
        &self,
        session: &DashboardSession,
    ) -> Result<DashboardAccount, DirectoryError> {
        self.platform
            .get::<DashboardAccount>(session.account_id.as_bytes())?
            .filter(|a| a.epoch == session.epoch)
            .ok_or(DirectoryError::SessionInvalid)
    }

    /// The live session for `token`; touches its idle timer. An expired one is deleted.
    pub(super) fn authenticate(&mut self, token: &str) -> Result<SessionInfo, DirectoryError> {
        let key = sha256(token.as_bytes());
        let mut session = self.stored_session(&key)?;
        let now = self.session_clock();
        let mut batch = PlatformBatch::default();
        if now >= self.expiry(&session) {
            batch.remove(Kind::DashboardSession, &key);
            self.platform.apply(batch)?;
            return Err(DirectoryError::SessionInvalid);
        }
        let account = self.session_account(&session)?;
        // Touch at most once a minute: the idle timer needs no finer grain, and most requests
        // then write nothing.
        if now - session.last_seen_at > time::Duration::minutes(1) {
            session.last_seen_at = now;
            batch.put(&key, &session)?;
            self.platform.apply(batch)?;
        }
        Ok(self.info(&account, &session))
    }

    pub(super) fn logout(&mut self, token: &str) -> Result<(), DirectoryError> {
        let mut batch = PlatformBatch::default();
        batch.remove(Kind::DashboardSession, &sha256(token.as_bytes()));
        self.platform.apply(batch)?;
        Ok(())
    }

    pub(super) fn mark_reauth(&mut self, token: &str) -> Result<OffsetDateTime, DirectoryError> {
        let key = sha256(token.as_bytes());
        let mut session = self.stored_session(&key)?;
        let now = self.session_clock();
        if now >= self.expiry(&session) {
            return Err(DirectoryError::SessionInvalid);
        }
        let account = self.session_account(&session)?;
        self.login.forgive_account(&account.email);
        // The recent-re-authentication check reads the wall clock.
        session.reauth_at = Some(OffsetDateTime::now_utc());
        session.last_seen_at = now;
        let mut batch = PlatformBatch::default();
        batch.put(&key, &session)?;
        self.platform.apply(batch)?;
        Ok(now)
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

    /// The tenant's members and its pending (unexpired) invitations.
    pub(super) fn members_and_invitations(
        &self,
        tenant: TenantId,
    ) -> Result<MemberList, DirectoryError> {
        let now = OffsetDateTime::now_utc();
        let mut invitations = Vec::new();
        for item in self
            .platform
            .scan_prefix::<PendingInvite>(tenant.as_bytes())
        {
            let (key, p) = item?;
            if p.expires_at <= now {
                continue;
            }
            invitations.push(PendingInfo {
                email: String::from_utf8_lossy(&key).into_owned(),
                role: p.role,
                invited_by: p.invited_by,
                created_at: p.created_at,
                expires_at: p.expires_at,
            });
        }
        invitations.sort_by(|a, b| a.email.cmp(&b.email));
        Ok(MemberList {
            members: self.list_members(tenant)?,
            invitations,
        })
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

    /// The memberships a mailbox proof would detach from `account`: every one, while the
    /// account was never verified (it got them all before anyone proved the mailbox; the
    /// tenant it onboarded is the creator's, whose API key the creator holds); none once it
    /// is verified.
    fn unproven_memberships(&self, account: &DashboardAccount) -> Vec<DetachedTenant> {
        if account.email_verified {
            return Vec::new();
        }
        let mut out: Vec<DetachedTenant> = account
            .memberships
            .iter()
            .filter_map(|m| {
                let t = self.tenants.get(&m.tenant)?;
                Some(DetachedTenant {
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

    /// Detaches every membership of `account`, which a mailbox proof is taking over while
    /// unverified, in `batch` (both sides of each fact; the account itself is written by the
    /// caller, with the takeover). The last-owner rule does not hold here: a tenant whose only
    /// owner this was is left without one, and keeps serving whoever holds its keys.
    fn detach_unproven(
        &self,
        batch: &mut PlatformBatch,
        account: &mut DashboardAccount,
    ) -> Vec<DetachedTenant> {
        let detached = self.unproven_memberships(account);
        for m in account.memberships.drain(..) {
            batch.remove(Kind::Membership, &membership_key(&m.tenant, &account.id));
        }
        // Its known devices were its creator's: they keep no way past a lockout.
        if let Ok(devices) = self.dashboard_devices(account.id) {
            for d in devices {
                batch.remove(
                    Kind::DashboardDevice,
                    &dashboard_device_key(account.id, d.id),
                );
            }
        }
        account.onboarded_tenant = None;
        detached
    }

    /// Makes the detachments of a committed takeover visible to the platform (no address).
    fn log_detached(account: Uuid, detached: &[DetachedTenant]) {
        for d in detached {
            tracing::info!(
                tenant = %d.tenant,
                slug = %d.slug,
                account = %account,
                "dashboard account taken over by a proof of its address: detached from a tenant it had unverified"
            );
        }
    }

    fn account_by_email(&self, email: &str) -> Result<Option<DashboardAccount>, DirectoryError> {
        let Some(idx) = self.platform.get::<AccountEmailIndex>(email.as_bytes())? else {
            return Ok(None);
        };
        self.platform
            .get::<DashboardAccount>(idx.account.as_bytes())?
            .map(Some)
            .ok_or_else(|| DirectoryError::Internal("account index dangles".into()))
    }

    /// Records an invitation of `email` to `tenant`: a single-use token to be mailed, whether
    /// or not the address has an account. Nobody becomes a member until the invitee accepts.
    /// A new invitation of the same address replaces the pending one (its link stops working).
    pub(super) fn invite(
        &mut self,
        tenant: TenantId,
        email: &str,
        role: Role,
        invited_by: Uuid,
    ) -> Result<Invitation, DirectoryError> {
        if !self.tenants.contains_key(&tenant) {
            return Err(DirectoryError::TenantNotFound);
        }
        let email = email.to_lowercase();
        if let Some(account) = self.account_by_email(&email)? {
            if account.memberships.iter().any(|m| m.tenant == tenant) {
                return Err(DirectoryError::AlreadyMember);
            }
        }
        let now = OffsetDateTime::now_utc();
        let mut batch = PlatformBatch::default();
        let pending_key = pending_invite_key(&tenant, &email);
        let replaced = match self.platform.get::<PendingInvite>(&pending_key)? {
            Some(old) => {
                batch.remove(Kind::Invite, &old.token_hash);
                old.expires_at > now
            }
            None => false,
        };
        let token = random_token(32);
        let token_hash = sha256(token.as_bytes());
        let expires_at = now + INVITE_TTL;
        batch.put(
            &token_hash,
            &InviteRecord {
                tenant,
                email: email.clone(),
                role,
                invited_by,
                created_at: now,
                expires_at,
            },
        )?;
        batch.put(
            &pending_key,
            &PendingInvite {
                token_hash,
                role,
                invited_by,
                created_at: now,
                expires_at,
            },
        )?;
        self.platform.apply(batch)?;
        Ok(Invitation {
            token,
            email,
            role,
            expires_at,
            replaced,
        })
    }

    /// Withdraws the pending invitation of `email` (its link stops working).
    pub(super) fn revoke_invite(
        &mut self,
        tenant: TenantId,
        email: &str,
    ) -> Result<(), DirectoryError> {
        let pending_key = pending_invite_key(&tenant, &email.to_lowercase());
        let pending = self
            .platform
            .get::<PendingInvite>(&pending_key)?
            .ok_or(DirectoryError::NotFound)?;
        let mut batch = PlatformBatch::default();
        batch.remove(Kind::Invite, &pending.token_hash);
        batch.remove(Kind::PendingInvite, &pending_key);
        self.platform.apply(batch)?;
        Ok(())
    }

    /// The live invitation for `token`, and what accepting it needs.
    fn live_invite(
        &self,
        token: &str,
        now: OffsetDateTime,
    ) -> Result<(InviteRecord, TenantRecord), DirectoryError> {
        let invite = self
            .platform
            .get::<InviteRecord>(&sha256(token.as_bytes()))?
            .filter(|i| now < i.expires_at)
            .ok_or(DirectoryError::InviteInvalid)?;
        let tenant = self
            .tenants
            .get(&invite.tenant)
            .ok_or(DirectoryError::InviteInvalid)?
            .clone();
        Ok((invite, tenant))
    }

    /// What accepting the invitation behind `token` needs: the address, and whether a
    /// verified account holds it (then its own password is the proof).
    pub(super) fn invite_target(&self, token: &str) -> Result<InviteTarget, DirectoryError> {
        let (invite, _) = self.live_invite(token, OffsetDateTime::now_utc())?;
        let verified_account = self
            .account_by_email(&invite.email)?
            .is_some_and(|a| a.email_verified);
        Ok(InviteTarget {
            email: invite.email,
            verified_account,
        })
    }

    /// Consumes an invitation. The token proves the mailbox: with no account, one is created
    /// (verified) with the new password; an unverified account is taken over (its password
    /// replaced, its sessions and mailed tokens ended); a verified account must have proved
    /// itself by its own password (`InviteProof::Login`).
    pub(super) fn accept_invite(
        &mut self,
        token: &str,
        proof: InviteProof,
    ) -> Result<AcceptedInvite, DirectoryError> {
        let now = OffsetDateTime::now_utc();
        let (invite, tenant) = self.live_invite(token, now)?;
        let mut batch = PlatformBatch::default();
        let existing = self.account_by_email(&invite.email)?;
        let mut detached = Vec::new();
        let (mut account, reclaimed) = match (existing, proof) {
            (Some(a), InviteProof::Login { account_id })
                if a.email_verified && a.id == account_id =>
            {
                (a, false)
            }
            (Some(a), _) if a.email_verified => return Err(DirectoryError::InvalidCredentials),
            (Some(mut a), InviteProof::NewPassword { password_hash }) => {
                // Whatever the account had before is its creator's, not the invitee's.
                detached = self.detach_unproven(&mut batch, &mut a);
                a.password_hash = password_hash;
                a.email_verified = true;
                a.epoch = a.epoch.wrapping_add(1);
                (a, true)
            }
            (None, InviteProof::NewPassword { password_hash }) => {
                let account = DashboardAccount {
                    id: Uuid::now_v7(),
                    email: invite.email.clone(),
                    password_hash,
                    created_at: now,
                    memberships: Vec::new(),
                    email_verified: true,
                    onboarded_tenant: None,
                    epoch: 0,
                };
                batch.put(
                    account.email.as_bytes(),
                    &AccountEmailIndex {
                        account: account.id,
                    },
                )?;
                (account, false)
            }
            // The account changed between the handler's check and now.
            (_, InviteProof::Login { .. }) => return Err(DirectoryError::InvalidCredentials),
        };
        // Single use: consumed in the same batch that creates the membership.
        batch.remove(Kind::Invite, &sha256(token.as_bytes()));
        batch.remove(
            Kind::PendingInvite,
            &pending_invite_key(&tenant.id, &invite.email),
        );
        // Should the invitation be to a tenant just detached, accepting it joins that tenant
        // anew: the put of its membership follows the removal in the batch.
        let member = self.add_membership(&mut batch, &mut account, tenant.id, invite.role, now)?;
        self.platform.apply(batch)?;
        if reclaimed {
            self.login.forgive_account(&account.email);
        }
        detached.retain(|d| d.tenant != tenant.id);
        Self::log_detached(account.id, &detached);
        Ok(AcceptedInvite {
            account_id: member.account_id,
            email: member.email,
            tenant_slug: tenant.slug,
            role: member.role,
            reclaimed,
            detached,
        })
    }

    /// The owners of `tenant`.
    fn owner_count(&self, tenant: TenantId) -> Result<usize, DirectoryError> {
        let mut n = 0;
        for item in self
            .platform
            .scan_prefix::<MembershipRecord>(tenant.as_bytes())
        {
            if item?.1.role == Role::Owner {
                n += 1;
            }
        }
        Ok(n)
    }

    /// Changes a member's role (`Some`) or removes the member (`None`). The last owner can be
    /// neither demoted nor removed.
    pub(super) fn change_member(
        &mut self,
        tenant: TenantId,
        account_id: Uuid,
        role: Option<Role>,
    ) -> Result<MemberChange, DirectoryError> {
        let key = membership_key(&tenant, &account_id);
        let record = self
            .platform
            .get::<MembershipRecord>(&key)?
            .ok_or(DirectoryError::NotFound)?;
        let mut account = self
            .platform
            .get::<DashboardAccount>(account_id.as_bytes())?
            .ok_or(DirectoryError::NotFound)?;
        let stays_owner = role == Some(Role::Owner);
        if record.role == Role::Owner && !stays_owner && self.owner_count(tenant)? <= 1 {
            return Err(DirectoryError::LastOwner);
        }
        let mut batch = PlatformBatch::default();
        match role {
            Some(role) => {
                for m in account
                    .memberships
                    .iter_mut()
                    .filter(|m| m.tenant == tenant)
                {
                    m.role = role;
                }
                batch.put(
                    &key,
                    &MembershipRecord {
                        role,
                        added_at: record.added_at,
                    },
                )?;
            }
            None => {
                account.memberships.retain(|m| m.tenant != tenant);
                if account.onboarded_tenant == Some(tenant) {
                    account.onboarded_tenant = None;
                }
                batch.remove(Kind::Membership, &key);
            }
        }
        batch.put(account.id.as_bytes(), &account)?;
        self.platform.apply(batch)?;
        Ok(MemberChange {
            account_id,
            email: account.email,
            previous: record.role,
            role,
        })
    }

    /// A token mailed to a dashboard account: a verification link for `Verify` (the account
    /// by id, only while unverified), a password reset for `Reset` (the account by address).
    /// `None` when there is nothing to mail; callers answer alike either way. Limited per
    /// account; the answer (but a rate limit's) is to be sent after the group commit in every
    /// case, so an unknown address answers as late as a known one.
    pub(super) fn issue_account_token(
        &mut self,
        target: AccountTarget,
        purpose: AccountTokenPurpose,
    ) -> Result<Option<MailedToken>, DirectoryError> {
        // A reset asked for by address writes one record whatever happens (the token, or a
        // decoy of its size) and answers after the same group commit, so neither the answer
        // nor its time tells whether the address has an account.
        let decoy_len = match &target {
            AccountTarget::Email { email, .. } => Some(email.len()),
            AccountTarget::Id(_) => None,
        };
        match (self.mail_token_for(target, purpose), decoy_len) {
            (Ok(None), Some(len)) => self.write_decoy(len).map(|()| None),
            (other, _) => other,
        }
    }

    /// The token `issue_account_token` mails, if the target has an account that may be sent
    /// one now.
    fn mail_token_for(
        &mut self,
        target: AccountTarget,
        purpose: AccountTokenPurpose,
    ) -> Result<Option<MailedToken>, DirectoryError> {
        if let AccountTarget::Email { ip, .. } = &target {
            // Checked before any lookup: the same answer for every address.
            self.reset_ip_window
                .hit(&throttle_ip(*ip), Instant::now())
                .map_err(|retry_after_secs| DirectoryError::RateLimited { retry_after_secs })?;
        }
        let account = match target {
            AccountTarget::Id(id) => self.platform.get::<DashboardAccount>(id.as_bytes())?,
            AccountTarget::Email { email, .. } => self.account_by_email(&email.to_lowercase())?,
        };
        let Some(account) = account else {
            return Ok(None);
        };
        if purpose == AccountTokenPurpose::Verify && account.email_verified {
            return Ok(None);
        }
        if let Err(retry_after_secs) = self
            .account_mail_window
            .hit(&(account.id, purpose), Instant::now())
        {
            // A verification mail is asked for by the account's own session, which may be
            // told to wait; a reset asked for by address answers alike whatever happens.
            return match purpose {
                AccountTokenPurpose::Verify => {
                    Err(DirectoryError::RateLimited { retry_after_secs })
                }
                AccountTokenPurpose::Reset => Ok(None),
            };
        }
        let mut token = self.account_token(&account, purpose)?;
        if purpose == AccountTokenPurpose::Reset {
            token.detaches = self.unproven_memberships(&account);
        }
        Ok(Some(token))
    }

    /// Writes a record of the size of a reset token's, under a key no token hashes to,
    /// overwritten each time and never valid (expired at the epoch).
    fn write_decoy(&self, email_len: usize) -> Result<(), DirectoryError> {
        let mut batch = PlatformBatch::default();
        batch.put(
            DECOY_KEY,
            &AccountTokenRecord {
                account: Uuid::now_v7(),
                email: "x".repeat(email_len),
                purpose: AccountTokenPurpose::Reset,
                epoch: 0,
                expires_at: OffsetDateTime::UNIX_EPOCH,
            },
        )?;
        self.platform.apply(batch)?;
        Ok(())
    }

    /// Writes a new mailed token for `account` and answers it.
    fn account_token(
        &self,
        account: &DashboardAccount,
        purpose: AccountTokenPurpose,
    ) -> Result<MailedToken, DirectoryError> {
        let mut batch = PlatformBatch::default();
        let token = random_token(32);
        let ttl = match purpose {
            AccountTokenPurpose::Verify => VERIFY_TTL,
            AccountTokenPurpose::Reset => RESET_TTL,
        };
        batch.put(
            &sha256(token.as_bytes()),
            &AccountTokenRecord {
                account: account.id,
                email: account.email.clone(),
                purpose,
                epoch: account.epoch,
                expires_at: OffsetDateTime::now_utc() + ttl,
            },
        )?;
        self.platform.apply(batch)?;
        Ok(MailedToken {
            token,
            email: account.email.clone(),
            detaches: Vec::new(),
        })
    }

    /// The account a live mailed token of `purpose` stands for. A token is void once expired,
    /// once the account's address changed or once its password was replaced by a mailbox
    /// proof (`epoch`).
    fn redeem_account_token(
        &self,
        token: &str,
        purpose: AccountTokenPurpose,
    ) -> Result<DashboardAccount, DirectoryError> {
        let key = sha256(token.as_bytes());
        let rec = self
            .platform
            .get::<AccountTokenRecord>(&key)?
            .filter(|r| r.purpose == purpose && OffsetDateTime::now_utc() < r.expires_at)
            .ok_or(DirectoryError::TokenInvalid)?;
        let account = self
            .platform
            .get::<DashboardAccount>(rec.account.as_bytes())?
            .filter(|a| a.email == rec.email && a.epoch == rec.epoch)
            .ok_or(DirectoryError::TokenInvalid)?;
        Ok(account)
    }

    /// Whether a mailed token of `purpose` is live (checked again when it is used).
    pub(super) fn check_account_token(
        &self,
        token: &str,
        purpose: AccountTokenPurpose,
    ) -> Result<(), DirectoryError> {
        self.redeem_account_token(token, purpose).map(|_| ())
    }

    /// Marks the account verified: the mailed token together with the account's own session
    /// (so a link clicked by the mailbox's real holder never vouches for someone else's
    /// password).
    pub(super) fn verify_account(
        &mut self,
        token: &str,
        account_id: Uuid,
    ) -> Result<(), DirectoryError> {
        let mut account = self.redeem_account_token(token, AccountTokenPurpose::Verify)?;
        if account.id != account_id {
            return Err(DirectoryError::TokenInvalid);
        }
        let mut batch = PlatformBatch::default();
        batch.remove(Kind::DashboardAccountToken, &sha256(token.as_bytes()));
        account.email_verified = true;
        batch.put(account.id.as_bytes(), &account)?;
        self.platform.apply(batch)?;
        Ok(())
    }

    /// Sets a new password through a mailed reset token: the mailbox is proven, so the
    /// account is verified, and every session and mailed token of it ends. An account never
    /// verified is taken over: its memberships are detached in the same batch.
    pub(super) fn reset_password(
        &mut self,
        token: &str,
        password_hash: String,
    ) -> Result<AccountReset, DirectoryError> {
        let mut account = self.redeem_account_token(token, AccountTokenPurpose::Reset)?;
        let was_verified = account.email_verified;
        let mut batch = PlatformBatch::default();
        batch.remove(Kind::DashboardAccountToken, &sha256(token.as_bytes()));
        let detached = if was_verified {
            Vec::new()
        } else {
            self.detach_unproven(&mut batch, &mut account)
        };
        account.password_hash = password_hash;
        account.email_verified = true;
        account.epoch = account.epoch.wrapping_add(1);
        batch.put(account.id.as_bytes(), &account)?;
        self.platform.apply(batch)?;
        self.login.forgive_account(&account.email);
        Self::log_detached(account.id, &detached);
        Ok(AccountReset {
            account_id: account.id,
            slugs: self
                .memberships_of(&account)
                .into_iter()
                .map(|m| m.slug)
                .collect(),
            reclaimed: !was_verified,
            detached,
        })
    }

    /// The credential of the account with this address, for verification off the actor.
    pub(super) fn find_account(&self, email: &str) -> Option<AccountCredential> {
        let idx = self
            .platform
            .get::<AccountEmailIndex>(email.to_lowercase().as_bytes())
            .ok()??;
        let acct = self
            .platform
            .get::<DashboardAccount>(idx.account.as_bytes())
            .ok()??;
        Some(AccountCredential {
            account_id: acct.id,
            password_hash: acct.password_hash,
            device: None,
        })
    }

    /// Loads the dashboard throttles' entries written by earlier runs; expired or unreadable
    /// ones are deleted.
    pub(super) fn restore_throttles(&mut self) -> Result<(), DirectoryError> {
        let clocks = Clocks::at(self.session_clock());
        let mut stale = PlatformBatch::default();
        let mut any_stale = false;
        for item in self.platform.scan_prefix::<PlatformThrottleRecord>(b"") {
            let (key, PlatformThrottleRecord(saved)) = item?;
            let kept = self.login.restore(&key, &saved, clocks);
            if !kept {
                stale.remove(Kind::PlatformThrottle, &key);
                any_stale = true;
            }
        }
        if any_stale {
            self.platform.apply(stale)?;
        }
        Ok(())
    }

    /// Writes the throttle changes (a login that went through resets its account's count;
    /// sweeps forget); a failure is logged, and the counts stay in memory.
    pub(super) fn persist_throttles_logged(&mut self) {
        if let Err(e) = self.persist_throttles() {
            tracing::error!(error = %e, "cannot write dashboard throttle state");
        }
    }

    /// Writes (or deletes) the dashboard throttle entries changed since the last time, in
    /// one batch.
    fn persist_throttles(&mut self) -> Result<(), DirectoryError> {
        if !self.login.has_changes() {
            return Ok(());
        }
        let mut batch = PlatformBatch::default();
        for (key, saved) in self.login.take_changes(Clocks::at(self.session_clock())) {
            match saved {
                Some(saved) => batch.put(&key, &PlatformThrottleRecord(saved))?,
                None => batch.remove(Kind::PlatformThrottle, &key),
            }
        }
        self.platform.apply(batch)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
