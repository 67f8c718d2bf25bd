//! A tenant's members: listed with the invitations waiting, added, their roles changed or
//! removed (keeping at least one owner), and the memberships an unproven account loses when
//! a mailbox proof takes it over.

use tessera_storage::{Kind, PlatformBatch, TenantId};
use time::OffsetDateTime;
use uuid::Uuid;

use super::logins::dashboard_device_key;
use crate::{
    directory::{
        messages::{DetachedTenant, MemberChange, MemberInfo, MemberList, PendingInfo},
        state::DirectoryState,
    },
    error::DirectoryError,
    records::{
        membership_key, DashboardAccount, Membership, MembershipRecord, PendingInvite, Role,
        TenantRecord,
    },
};

impl DirectoryState {
    pub(in crate::directory) fn list_members(
        &self,
        tenant: TenantId,
    ) -> Result<Vec<MemberInfo>, DirectoryError> {
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
    pub(in crate::directory) fn members_and_invitations(
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
            if p.terms.expires_at <= now {
                continue;
            }
            invitations.push(PendingInfo {
                email: String::from_utf8_lossy(&key).into_owned(),
                terms: p.terms,
            });
        }
        invitations.sort_by(|a, b| a.email.cmp(&b.email));
        Ok(MemberList {
            members: self.list_members(tenant)?,
            invitations,
        })
    }

    /// Adds `account` to `tenant` with `role` in `batch` (both sides of the fact).
    pub(super) fn add_membership(
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
    pub(super) fn unproven_memberships(&self, account: &DashboardAccount) -> Vec<DetachedTenant> {
        if account.email_verified {
            return Vec::new();
        }
        self.tenants_of(account, |_| true)
            .into_iter()
            .map(|(t, m)| DetachedTenant {
                tenant: t.id,
                slug: t.slug.clone(),
                name: t.name.clone(),
                role: m.role,
            })
            .collect()
    }

    /// `account`'s memberships that `keep` passes, of tenants that exist, each with its
    /// tenant, in slug order.
    pub(super) fn tenants_of<'a>(
        &'a self,
        account: &'a DashboardAccount,
        keep: impl Fn(&Membership) -> bool,
    ) -> Vec<(&'a TenantRecord, &'a Membership)> {
        let mut out: Vec<_> = account
            .memberships
            .iter()
            .filter(|m| keep(m))
            .filter_map(|m| Some((self.tenants.get(&m.tenant)?, m)))
            .collect();
        out.sort_by(|a, b| a.0.slug.cmp(&b.0.slug));
        out
    }

    /// Detaches every membership of `account`, which a mailbox proof is taking over while
    /// unverified, in `batch` (both sides of each fact; the account itself is written by the
    /// caller, with the takeover). The last-owner rule does not hold here: a tenant whose only
    /// owner this was is left without one, and keeps serving whoever holds its keys.
    pub(super) fn detach_unproven(
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
                    &dashboard_device_key(account.id, d.device.id),
                );
            }
        }
        // So was any second factor (setting one up needs a verified address; this is the
        // backstop): the mailbox's owner is not asked for a code they never had.
        account.totp = None;
        account.totp_pending = None;
        account.onboarded_tenant = None;
        detached
    }

    /// Makes the detachments of a committed takeover visible to the platform (no address).
    pub(super) fn log_detached(account: Uuid, detached: &[DetachedTenant]) {
        for d in detached {
            tracing::info!(
                tenant = %d.tenant,
                slug = %d.slug,
                account = %account,
                "dashboard account taken over by a proof of its address: detached from a tenant it had unverified"
            );
        }
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
    pub(in crate::directory) fn change_member(
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
}
