//! What users do with organizations: list theirs, switch the organization a session works
//! in, look at and accept a mailed invitation; and what the flow lends the kernel: the
//! claims of a session's tokens, the sessions that end with a membership, and a user's
//! memberships in the export and the erasure.

use tessera_storage::{sha256, Kind, TenantBatch};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    admin::{may_join, org_of},
    error::OrgError,
    records::{
        pair_key, pending_key, Joined, OrgInviteRecord, OrgMemberRecord, OrganizationRecord,
        UserOrgIndex,
    },
    Accepted, InvitePreview, MyOrganization, OrgClaim, Organizations,
};
use crate::{
    error::TenantError,
    outbound::MailJob,
    tenant::{
        audit::AuditContext,
        ctx::TenantCtx,
        messages::{Bearer, Grant},
        records::{SessionRecord, UserRecord},
    },
};

impl Organizations {
    /// The caller's organizations, with their role in each, by organization id (oldest
    /// organization first).
    pub(super) fn mine(
        &self,
        cx: &TenantCtx,
        bearer: Bearer,
    ) -> Result<Vec<MyOrganization>, TenantError> {
        let (session, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
        let mut out = Vec::new();
        for (m, org) in cx.memberships_of(user.id)? {
            let claim = cx.claim_of(&m)?;
            out.push(MyOrganization {
                id: org.id,
                name: org.name,
                role: claim.role,
                permissions: claim.permissions,
                active: session.org == Some(org.id),
            });
        }
        out.sort_by_key(|o| o.id);
        Ok(out)
    }

    /// Moves the caller's session into `org` (one of theirs; `None`: out of any): a rotation
    /// of the session's refresh token, which the caller presents (an access token alone gives
    /// no refresh token), so the answer is a fresh token pair whose access token carries the
    /// organization's claims.
    pub(super) fn switch(
        &mut self,
        cx: &mut TenantCtx,
        (bearer, refresh_token): (Bearer, &str),
        org: Option<Uuid>,
        ctx: &AuditContext,
    ) -> Result<(Grant, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let (mut session, user) = cx.live_session(bearer, now)?;
        if cx.refresh_token_session(refresh_token) != Some((session.id, session.generation)) {
            return Err(TenantError::InvalidRefreshToken);
        }
        if user.suspended() {
            return Err(TenantError::UserBlocked);
        }
        if let Some(org) = org {
            // Not a member and no such organization answer alike.
            cx.membership(org, user.id)?.ok_or(TenantError::NotFound)?;
        }
        let before = session.org;
        session.org = org;
        session.generation = session.generation.wrapping_add(1);
        session.rotated_at = Some(now);
        session.last_active_at = now;
        let mut fx = cx.effects();
        fx.batch.put(session.id.as_bytes(), &session)?;
        cx.audit_into(
            &mut fx.batch,
            "organization.switched",
            ctx,
            serde_json::json!({
                "user_id": user.id,
                "session_id": session.id,
                "organization_id": org,
                "previous_organization_id": before,
            }),
        )?;
        let mail = cx.commit(fx)?;
        Ok((cx.grant(&session, &user)?, mail))
    }

    /// A live invitation by its mailed token.
    fn invitation(
        &self,
        cx: &TenantCtx,
        token: &str,
    ) -> Result<(Vec<u8>, OrgInviteRecord, OrganizationRecord), TenantError> {
        let hash = sha256(token.as_bytes());
        let invite = cx
            .store
            .get::<OrgInviteRecord>(&hash)?
            .filter(|i| i.expires_at > OffsetDateTime::now_utc())
            .ok_or(TenantError::InvalidLinkToken)?;
        let org = cx
            .store
            .get::<OrganizationRecord>(invite.organization.as_bytes())?
            .ok_or(TenantError::InvalidLinkToken)?;
        Ok((hash.to_vec(), invite, org))
    }

    /// What the invitation's holder is asked to accept (nothing is used).
    pub(super) fn preview(
        &self,
        cx: &TenantCtx,
        token: &str,
    ) -> Result<InvitePreview, TenantError> {
        let (_, invite, org) = self.invitation(cx, token)?;
        let account = cx.user_by_email(&invite.email)?;
        Ok(InvitePreview {
            organization_id: org.id,
            organization_name: org.name,
            needs_password: account.is_none_or(|u| !u.email_verified),
            email: invite.email,
            role: invite.role,
            expires_at: invite.expires_at,
        })
    }

    /// Uses an invitation: the link proves the address it was mailed to. A confirmed account
    /// joins as it is (a password is refused: the link is no way to set one); an address
    /// without an account gets one, confirmed, with `password_hash`; an account that never
    /// confirmed its address is recovered (whoever registered it keeps no way in) and gets
    /// `password_hash`. A member already keeps their role. The invitation is used up.
    pub(super) fn accept(
        &mut self,
        cx: &mut TenantCtx,
        token: &str,
        password_hash: Option<String>,
        ctx: &AuditContext,
    ) -> Result<(Accepted, Vec<MailJob>), TenantError> {
        let (hash, invite, org) = self.invitation(cx, token)?;
        let now = OffsetDateTime::now_utc();
        let existing = cx.user_by_email(&invite.email)?;
        let mut fx = cx.effects();
        let (user, created) = match existing {
            Some(u) if u.email_verified => {
                if password_hash.is_some() {
                    return Err(OrgError::PasswordNotWanted.into());
                }
                (u, false)
            }
            Some(mut u) => {
                let hash = password_hash.ok_or(OrgError::PasswordRequired)?;
                cx.recover_address(&mut fx, &mut u, "organization_invitation", ctx)?;
                u.password_hash = Some(hash);
                u.password_epoch = u.password_epoch.wrapping_add(1);
                (u, false)
            }
            None => {
                let hash = password_hash.ok_or(OrgError::PasswordRequired)?;
                let mut u = UserRecord::blank(Uuid::now_v7(), now);
                u.email = Some(invite.email.clone());
                u.email_verified = true;
                u.password_hash = Some(hash);
                cx.count_active(&mut fx.batch, None, now)?;
                cx.put_new_user(&mut fx.batch, &u)?;
                cx.emit_user_created(&mut fx.batch, &u, "organization_invitation")?;
                cx.audit_into(
                    &mut fx.batch,
                    "user.created",
                    ctx,
                    serde_json::json!({ "user_id": u.id, "method": "organization_invitation" }),
                )?;
                (u, true)
            }
        };
        if user.suspended() {
            return Err(TenantError::UserBlocked);
        }
        may_join(&user)?;
        fx.batch.remove(Kind::OrgInvite, &hash);
        fx.batch
            .remove(Kind::OrgPendingInvite, &pending_key(org.id, &invite.email));
        fx.batch
            .remove(Kind::OrgDeparted, &pair_key(user.id, org.id));
        if cx.membership(org.id, user.id)?.is_none() {
            Self::room_for(cx, org.id, user.id)?;
            Self::link(
                cx,
                &mut fx.batch,
                (org.id, user.id, &invite.role),
                Joined::Invitation,
                ctx,
            )?;
        }
        fx.batch.put(user.id.as_bytes(), &user)?;
        let accepted = Accepted {
            organization_id: org.id,
            user_id: user.id,
            account_created: created,
        };
        Ok((accepted, cx.commit(fx)?))
    }
}

// What the organizations flow lends the kernel and the other flows.
impl TenantCtx {
    /// `user`'s membership of `org`, if any.
    pub(in crate::tenant) fn membership(
        &self,
        org: Uuid,
        user: Uuid,
    ) -> Result<Option<OrgMemberRecord>, TenantError> {
        Ok(self.store.get::<OrgMemberRecord>(&pair_key(org, user))?)
    }

    /// `user`'s memberships with their organizations.
    pub(in crate::tenant) fn memberships_of(
        &self,
        user: Uuid,
    ) -> Result<Vec<(OrgMemberRecord, OrganizationRecord)>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<UserOrgIndex>(user.as_bytes()) {
            let (key, _) = item?;
            let Some(org) = org_of(&key) else { continue };
            let (Some(m), Some(o)) = (
                self.membership(org, user)?,
                self.store.get::<OrganizationRecord>(org.as_bytes())?,
            ) else {
                continue;
            };
            out.push((m, o));
        }
        Ok(out)
    }

    /// What a membership's role grants, as its tokens say it.
    pub(in crate::tenant) fn claim_of(&self, m: &OrgMemberRecord) -> Result<OrgClaim, TenantError> {
        let permissions = match self
            .store
            .get::<super::records::OrgRoleRecord>(m.role.as_bytes())?
        {
            Some(r) => r.permissions,
            None => super::policy::default_permissions(&m.role)
                .unwrap_or_default()
                .iter()
                .map(|p| (*p).to_owned())
                .collect(),
        };
        Ok(OrgClaim {
            id: m.organization,
            role: m.role.clone(),
            permissions,
        })
    }

    /// The organization claims of a session's tokens: none when it works in none, or when
    /// its membership is gone.
    pub(in crate::tenant) fn session_claim(
        &self,
        session: &SessionRecord,
    ) -> Result<Option<OrgClaim>, TenantError> {
        let Some(org) = session.org else {
            return Ok(None);
        };
        match self.membership(org, session.user_id)? {
            Some(m) => Ok(Some(self.claim_of(&m)?)),
            None => Ok(None),
        }
    }

    /// Ends `user`'s sessions that work in `org` (into `batch`); answers how many.
    pub(in crate::tenant) fn end_org_sessions(
        &self,
        batch: &mut TenantBatch,
        user: Uuid,
        org: Uuid,
    ) -> Result<usize, TenantError> {
        let mut n = 0;
        for item in self.session_index(user) {
            let (key, sid) = item?;
            let Some(s) = self.store.get::<SessionRecord>(sid.as_bytes())? else {
                continue;
            };
            if s.org == Some(org) {
                batch.remove(Kind::Session, sid.as_bytes());
                batch.remove(Kind::UserSession, &key);
                self.emit_session_revoked(
                    batch,
                    user,
                    crate::tenant::webhooks::Revoked::One(sid),
                    "organization_membership_ended",
                )?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Removes `user`'s memberships and the invitations pending for their address (an
    /// erasure).
    pub(in crate::tenant) fn erase_memberships(
        &self,
        batch: &mut TenantBatch,
        user: &UserRecord,
    ) -> Result<(), TenantError> {
        for (m, _) in self.memberships_of(user.id)? {
            Organizations::unlink(self, batch, &m);
            let data = serde_json::json!({
                "organization_id": m.organization, "user_id": user.id, "reason": "user_deleted",
            });
            self.emit_event(batch, "membership.deleted", data)?;
        }
        for item in self.store.scan::<UserOrgIndex>(user.id.as_bytes()) {
            let (key, _) = item?;
            batch.remove(Kind::UserOrg, &key);
        }
        for item in self
            .store
            .scan::<super::records::OrgDeparted>(user.id.as_bytes())
        {
            let (key, _) = item?;
            batch.remove(Kind::OrgDeparted, &key);
        }
        // The invitations to the address are the erased user's data only when the address was
        // theirs (confirmed): an unconfirmed holder's erasure leaves the owner's invitations.
        if let Some(email) = user.email.as_ref().filter(|_| user.email_verified) {
            for item in self.store.scan::<OrgInviteRecord>(b"") {
                let (hash, invite) = item?;
                if &invite.email == email {
                    batch.remove(Kind::OrgInvite, &hash);
                    batch.remove(
                        Kind::OrgPendingInvite,
                        &pending_key(invite.organization, email),
                    );
                }
            }
        }
        Ok(())
    }

    /// `user`'s memberships as the export lists them.
    pub(in crate::tenant) fn exported_memberships(
        &self,
        user: Uuid,
    ) -> Result<serde_json::Value, TenantError> {
        let mut out = Vec::new();
        for (m, org) in self.memberships_of(user)? {
            out.push(serde_json::json!({
                "organization_id": org.id,
                "organization_name": org.name,
                "role": m.role,
                "joined_via": m.joined.as_str(),
                "joined_at": m.created_at
                    .format(&time::format_description::well_known::Rfc3339)
                    .unwrap_or_default(),
            }));
        }
        Ok(serde_json::Value::Array(out))
    }

    /// `Ok` when `name` is a role of the tenant's organizations (built in or defined).
    pub(in crate::tenant) fn role_exists(&self, name: &str) -> Result<(), TenantError> {
        if super::policy::default_permissions(name).is_some()
            || self
                .store
                .get::<super::records::OrgRoleRecord>(name.as_bytes())?
                .is_some()
        {
            return Ok(());
        }
        Err(super::OrgError::UnknownRole.into())
    }

    /// Whether `org` proved the domain of the (normalised) address `email`.
    pub(in crate::tenant) fn proven_by(&self, org: Uuid, email: &str) -> Result<bool, TenantError> {
        let domain = crate::policy::email_domain(email);
        Ok(self
            .store
            .get::<super::records::VerifiedDomain>(domain.as_bytes())?
            .is_some_and(|v| v.organization == org))
    }

    /// The keyed hash (hex) of an address's domain, as audit events name it.
    pub(in crate::tenant) fn domain_hash(&self, email: &str) -> String {
        hex::encode(
            self.domain_hasher
                .hash(crate::policy::email_domain(email).as_bytes()),
        )
    }
}
