//! Invitations: sent (one per tenant and address, replacing the last), revoked, looked up
//! by their token, and accepted once, by a verified account's login or a new password.

use tessera_storage::{random_token, sha256, Kind, PlatformBatch, TenantId};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    directory::{
        messages::{AcceptedInvite, Invitation, InviteProof, InviteTarget},
        state::DirectoryState,
    },
    error::DirectoryError,
    records::{
        pending_invite_key, AccountEmailIndex, DashboardAccount, InviteRecord, InviteTerms,
        PendingInvite, Role, TenantRecord,
    },
};

/// How long an invitation link works.
const INVITE_TTL: time::Duration = time::Duration::days(7);

impl DirectoryState {
    pub(super) fn account_by_email(
        &self,
        email: &str,
    ) -> Result<Option<DashboardAccount>, DirectoryError> {
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
    pub(in crate::directory) fn invite(
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
                old.terms.expires_at > now
            }
            None => false,
        };
        let token = random_token(32);
        let token_hash = sha256(token.as_bytes());
        let expires_at = now + INVITE_TTL;
        let terms = InviteTerms {
            role,
            invited_by,
            created_at: now,
            expires_at,
        };
        batch.put(
            &token_hash,
            &InviteRecord {
                tenant,
                email: email.clone(),
                terms: terms.clone(),
            },
        )?;
        batch.put(&pending_key, &PendingInvite { token_hash, terms })?;
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
    pub(in crate::directory) fn revoke_invite(
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
            .filter(|i| now < i.terms.expires_at)
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
    pub(in crate::directory) fn invite_target(
        &self,
        token: &str,
    ) -> Result<InviteTarget, DirectoryError> {
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
    pub(in crate::directory) fn accept_invite(
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
                    totp: None,
                    totp_pending: None,
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
        let member =
            self.add_membership(&mut batch, &mut account, tenant.id, invite.terms.role, now)?;
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
}
