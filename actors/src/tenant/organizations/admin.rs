//! What the tenant's admins do with organizations: create, change and delete them; add,
//! change and remove members; invite by mail and withdraw invitations; define roles.

use tessera_storage::{sha256, Kind, TenantBatch};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    error::OrgError,
    policy::{
        default_permissions, OrgLimits, BUILT_IN_ROLES, INVITE_TTL, MAX_CUSTOM_ROLES,
        MAX_MEMBERSHIPS_PER_USER, MAX_PENDING_INVITES,
    },
    records::{
        pair_key, pending_key, second_id, Joined, OrgExternalId, OrgInviteRecord, OrgMemberRecord,
        OrgPendingInvite, OrgRoleRecord, OrganizationRecord, UserOrgIndex,
    },
    InviteView, MemberView, NewOrganization, OrganizationPatch, Organizations, RoleView,
};
use crate::{
    error::TenantError,
    outbound::{MailJob, MailKind},
    tenant::{audit::AuditContext, ctx::TenantCtx, records::UserRecord},
};

type Done<T> = Result<(T, Vec<MailJob>), TenantError>;

impl Organizations {
    /// How many organizations the tenant has (counted once, then kept).
    fn count(&mut self, cx: &TenantCtx) -> Result<usize, TenantError> {
        if let Some(n) = self.count {
            return Ok(n);
        }
        let mut n = 0;
        for item in cx.store.scan::<OrganizationRecord>(b"") {
            item?;
            n += 1;
        }
        self.count = Some(n);
        Ok(n)
    }

    pub(super) fn organization(
        &self,
        cx: &TenantCtx,
        id: Uuid,
    ) -> Result<OrganizationRecord, TenantError> {
        cx.store
            .get::<OrganizationRecord>(id.as_bytes())?
            .ok_or(TenantError::NotFound)
    }

    /// Whether another organization than `except` bears `external_id` (by its index).
    fn external_id_taken(
        &self,
        cx: &TenantCtx,
        external_id: &str,
        except: Option<Uuid>,
    ) -> Result<bool, TenantError> {
        Ok(cx
            .store
            .get::<OrgExternalId>(external_id.as_bytes())?
            .is_some_and(|x| Some(x.organization) != except))
    }

    /// Moves the external id index from `before` to `after` for `org` (into `batch`).
    fn index_external_id(
        batch: &mut TenantBatch,
        org: Uuid,
        (before, after): (Option<&str>, Option<&str>),
    ) -> Result<(), TenantError> {
        if before == after {
            return Ok(());
        }
        if let Some(old) = before {
            batch.remove(Kind::OrgExternalId, old.as_bytes());
        }
        if let Some(new) = after {
            batch.put(new.as_bytes(), &OrgExternalId { organization: org })?;
        }
        Ok(())
    }

    pub(super) fn create(
        &mut self,
        cx: &mut TenantCtx,
        new: NewOrganization,
        ctx: &AuditContext,
    ) -> Done<OrganizationRecord> {
        let limit = OrgLimits::of(cx.info.tier).organizations;
        if self.count(cx)? >= limit {
            return Err(OrgError::OrganizationLimit { limit }.into());
        }
        if let Some(ext) = &new.external_id {
            if self.external_id_taken(cx, ext, None)? {
                return Err(OrgError::ExternalIdInUse.into());
            }
        }
        let now = OffsetDateTime::now_utc();
        let org = OrganizationRecord {
            id: Uuid::now_v7(),
            name: new.name,
            external_id: new.external_id,
            metadata: new.metadata,
            created_at: now,
            updated_at: now,
        };
        let mut fx = cx.effects();
        fx.batch.put(org.id.as_bytes(), &org)?;
        Self::index_external_id(&mut fx.batch, org.id, (None, org.external_id.as_deref()))?;
        let data = serde_json::json!({ "organization_id": org.id, "name": org.name });
        cx.emit_event(&mut fx.batch, "organization.created", data.clone())?;
        cx.audit_into(&mut fx.batch, "organization.created", ctx, data)?;
        let mail = cx.commit(fx)?;
        self.count = self.count.map(|n| n + 1);
        Ok((org, mail))
    }

    /// A page of organizations, newest first, older than `before`.
    pub(super) fn list(
        &self,
        cx: &TenantCtx,
        before: Option<Uuid>,
        limit: usize,
    ) -> Result<(Vec<OrganizationRecord>, Option<Uuid>), TenantError> {
        let before = before.map(|b| b.as_bytes().to_vec());
        let mut page: Vec<OrganizationRecord> = cx
            .store
            .scan_rev::<OrganizationRecord>(before.as_deref(), limit + 1)?
            .into_iter()
            .map(|(_, o)| o)
            .collect();
        let next = if page.len() > limit {
            page.truncate(limit);
            page.last().map(|o| o.id)
        } else {
            None
        };
        Ok((page, next))
    }

    pub(super) fn update(
        &mut self,
        cx: &mut TenantCtx,
        id: Uuid,
        patch: OrganizationPatch,
        ctx: &AuditContext,
    ) -> Done<OrganizationRecord> {
        let mut org = self.organization(cx, id)?;
        if let Some(Some(ext)) = &patch.external_id {
            if self.external_id_taken(cx, ext, Some(id))? {
                return Err(OrgError::ExternalIdInUse.into());
            }
        }
        let before = org.external_id.clone();
        let mut changed = Vec::new();
        if let Some(name) = patch.name {
            org.name = name;
            changed.push("name");
        }
        if let Some(ext) = patch.external_id {
            org.external_id = ext;
            changed.push("external_id");
        }
        if let Some(metadata) = patch.metadata {
            org.metadata = metadata;
            changed.push("metadata");
        }
        org.updated_at = OffsetDateTime::now_utc();
        let mut fx = cx.effects();
        fx.batch.put(org.id.as_bytes(), &org)?;
        Self::index_external_id(
            &mut fx.batch,
            org.id,
            (before.as_deref(), org.external_id.as_deref()),
        )?;
        let data = serde_json::json!({ "organization_id": org.id, "changed": changed });
        cx.emit_event(&mut fx.batch, "organization.updated", data.clone())?;
        cx.audit_into(&mut fx.batch, "organization.updated", ctx, data)?;
        Ok((org, cx.commit(fx)?))
    }

    /// Deletes an organization with its memberships and invitations; its members' sessions
    /// that work in it end.
    pub(super) fn delete(&mut self, cx: &mut TenantCtx, id: Uuid, ctx: &AuditContext) -> Done<()> {
        let org = self.organization(cx, id)?;
        let mut fx = cx.effects();
        let mut members = 0usize;
        for item in cx.store.scan::<OrgMemberRecord>(id.as_bytes()) {
            let (_, m) = item?;
            Self::unlink(cx, &mut fx.batch, &m);
            cx.end_org_sessions(&mut fx.batch, m.user, id)?;
            members += 1;
        }
        for item in cx.store.scan::<OrgPendingInvite>(id.as_bytes()) {
            let (key, p) = item?;
            Self::drop_invite(&mut fx.batch, &key, &p);
        }
        for item in cx
            .store
            .scan::<super::records::OrgDomainRecord>(id.as_bytes())
        {
            let (_, d) = item?;
            Self::drop_domain(cx, &mut fx.batch, &d)?;
        }
        for item in cx
            .store
            .scan::<crate::tenant::sso::records::OrgConnectionIndex>(id.as_bytes())
        {
            let (key, _) = item?;
            if let Some(connection) = second_id(&key) {
                cx.drop_connection(&mut fx.batch, id, connection)?;
            }
        }
        fx.batch.remove(Kind::Organization, id.as_bytes());
        Self::index_external_id(&mut fx.batch, id, (org.external_id.as_deref(), None))?;
        let data = serde_json::json!({ "organization_id": org.id, "members": members });
        cx.emit_event(&mut fx.batch, "organization.deleted", data.clone())?;
        cx.audit_into(&mut fx.batch, "organization.deleted", ctx, data)?;
        let mail = cx.commit(fx)?;
        self.count = self.count.map(|n| n.saturating_sub(1));
        Ok(((), mail))
    }

    /// Removes a membership and its mirror (the organization's member count is made again).
    pub(super) fn unlink(cx: &TenantCtx, batch: &mut TenantBatch, m: &OrgMemberRecord) {
        cx.member_counts.forget(m.organization);
        batch.remove(Kind::OrgMember, &pair_key(m.organization, m.user));
        batch.remove(Kind::UserOrg, &pair_key(m.user, m.organization));
    }

    fn drop_invite(batch: &mut TenantBatch, pending: &[u8], p: &OrgPendingInvite) {
        batch.remove(Kind::OrgPendingInvite, pending);
        if let Ok(hash) = hex::decode(&p.hash) {
            batch.remove(Kind::OrgInvite, &hash);
        }
    }

    // ------------------------------------------------------------ members

    pub(super) fn members(
        &self,
        cx: &TenantCtx,
        org: Uuid,
        after: Option<Uuid>,
        limit: usize,
    ) -> Result<(Vec<MemberView>, Option<Uuid>), TenantError> {
        self.organization(cx, org)?;
        let mut out = Vec::new();
        let mut next = None;
        for item in cx.store.scan::<OrgMemberRecord>(org.as_bytes()) {
            let (_, m) = item?;
            if after.is_some_and(|a| m.user <= a) {
                continue;
            }
            if out.len() == limit {
                next = out.last().map(|v: &MemberView| v.user_id);
                break;
            }
            let email = cx.user(m.user)?.and_then(|u| u.email);
            out.push(member_view(&m, email));
        }
        Ok((out, next))
    }

    /// How many members `org` has (counted once, then kept: `counts.rs`).
    fn member_count(cx: &TenantCtx, org: Uuid) -> Result<usize, TenantError> {
        cx.member_counts.get(org, || {
            let mut n = 0;
            for item in cx.store.scan::<OrgMemberRecord>(org.as_bytes()) {
                item?;
                n += 1;
            }
            Ok(n)
        })
    }

    /// Whether `org` may take one more member, and `user` one more organization.
    pub(in crate::tenant) fn room_for(
        cx: &TenantCtx,
        org: Uuid,
        user: Uuid,
    ) -> Result<(), TenantError> {
        let limit = OrgLimits::of(cx.info.tier).members;
        if Self::member_count(cx, org)? >= limit {
            return Err(OrgError::MemberLimit { limit }.into());
        }
        let mut held = 0;
        for item in cx.store.scan::<UserOrgIndex>(user.as_bytes()) {
            item?;
            held += 1;
        }
        if held >= MAX_MEMBERSHIPS_PER_USER {
            return Err(OrgError::MembershipLimit {
                limit: MAX_MEMBERSHIPS_PER_USER,
            }
            .into());
        }
        Ok(())
    }

    /// Writes a new membership and its mirror, with its event and audit entry.
    pub(in crate::tenant) fn link(
        cx: &mut TenantCtx,
        batch: &mut TenantBatch,
        (org, user, role): (Uuid, Uuid, &str),
        joined: Joined,
        ctx: &AuditContext,
    ) -> Result<OrgMemberRecord, TenantError> {
        let now = OffsetDateTime::now_utc();
        let m = OrgMemberRecord {
            organization: org,
            user,
            role: role.to_owned(),
            joined,
            created_at: now,
            updated_at: now,
        };
        batch.put(&pair_key(org, user), &m)?;
        batch.put(&pair_key(user, org), &UserOrgIndex::default())?;
        cx.member_counts.joined(org);
        let data = serde_json::json!({
            "organization_id": org, "user_id": user, "role": role, "via": joined.as_str(),
        });
        cx.emit_event(batch, "membership.created", data.clone())?;
        cx.audit_into(batch, "organization.member.added", ctx, data)?;
        Ok(m)
    }

    /// Adds an existing user: one with a confirmed address (never a guest), not yet a member.
    pub(super) fn add_member(
        &mut self,
        cx: &mut TenantCtx,
        (org, user, role): (Uuid, Uuid, String),
        ctx: &AuditContext,
    ) -> Done<MemberView> {
        self.organization(cx, org)?;
        let u = cx.user(user)?.ok_or(TenantError::NotFound)?;
        may_join(&u)?;
        self.role(cx, &role)?;
        if cx.membership(org, user)?.is_some() {
            return Err(OrgError::AlreadyMember.into());
        }
        Self::room_for(cx, org, user)?;
        let mut fx = cx.effects();
        fx.batch.remove(Kind::OrgDeparted, &pair_key(user, org));
        let m = Self::link(cx, &mut fx.batch, (org, user, &role), Joined::Admin, ctx)?;
        Ok((member_view(&m, u.email), cx.commit(fx)?))
    }

    pub(super) fn update_member(
        &mut self,
        cx: &mut TenantCtx,
        (org, user, role): (Uuid, Uuid, String),
        ctx: &AuditContext,
    ) -> Done<MemberView> {
        self.role(cx, &role)?;
        let m = cx
            .membership(org, user)?
            .ok_or(OrgError::NotMember)
            .map_err(TenantError::from)?;
        let mut fx = cx.effects();
        let m = Self::set_role(cx, &mut fx.batch, m, &role, ctx)?;
        let email = cx.user(user)?.and_then(|u| u.email);
        Ok((member_view(&m, email), cx.commit(fx)?))
    }

    /// Gives a member another role (into `batch`), with its event and audit entry.
    pub(in crate::tenant) fn set_role(
        cx: &mut TenantCtx,
        batch: &mut TenantBatch,
        mut m: OrgMemberRecord,
        role: &str,
        ctx: &AuditContext,
    ) -> Result<OrgMemberRecord, TenantError> {
        let before = std::mem::replace(&mut m.role, role.to_owned());
        m.updated_at = OffsetDateTime::now_utc();
        batch.put(&pair_key(m.organization, m.user), &m)?;
        let data = serde_json::json!({
            "organization_id": m.organization, "user_id": m.user, "role": m.role,
            "previous_role": before,
        });
        cx.emit_event(batch, "membership.updated", data.clone())?;
        cx.audit_into(batch, "organization.member.updated", ctx, data)?;
        Ok(m)
    }

    /// Ends a membership: the member's sessions in the organization end with it.
    pub(super) fn remove_member(
        &mut self,
        cx: &mut TenantCtx,
        (org, user): (Uuid, Uuid),
        ctx: &AuditContext,
    ) -> Done<()> {
        let m = cx
            .membership(org, user)?
            .ok_or(OrgError::NotMember)
            .map_err(TenantError::from)?;
        let mut fx = cx.effects();
        Self::unlink(cx, &mut fx.batch, &m);
        fx.batch.put(
            &pair_key(user, org),
            &super::records::OrgDeparted::default(),
        )?;
        let ended = cx.end_org_sessions(&mut fx.batch, user, org)?;
        let data =
            serde_json::json!({ "organization_id": org, "user_id": user, "reason": "removed" });
        cx.emit_event(&mut fx.batch, "membership.deleted", data.clone())?;
        let mut audit = data;
        audit["sessions_ended"] = ended.into();
        cx.audit_into(&mut fx.batch, "organization.member.removed", ctx, audit)?;
        Ok(((), cx.commit(fx)?))
    }

    // ------------------------------------------------------------ invitations

    /// Mails an invitation to `email` (normalised by the caller), replacing a pending one of
    /// the same address. An address that is already a member's is refused.
    pub(super) fn invite(
        &mut self,
        cx: &mut TenantCtx,
        (org, email, role): (Uuid, String, String),
        ctx: &AuditContext,
    ) -> Done<InviteView> {
        let organization = self.organization(cx, org)?;
        self.role(cx, &role)?;
        if let Some(u) = cx.user_by_email(&email)? {
            if cx.membership(org, u.id)?.is_some() {
                return Err(OrgError::AlreadyMember.into());
            }
        }
        let now = OffsetDateTime::now_utc();
        let pending_at = pending_key(org, &email);
        let replaced = cx.store.get::<OrgPendingInvite>(&pending_at)?;
        if replaced.is_none() {
            let mut live = 0;
            for item in cx.store.scan::<OrgPendingInvite>(org.as_bytes()) {
                let (_, p) = item?;
                if p.expires_at > now {
                    live += 1;
                }
            }
            if live >= MAX_PENDING_INVITES {
                return Err(OrgError::InviteLimit {
                    limit: MAX_PENDING_INVITES,
                }
                .into());
            }
        }
        let mut fx = cx.effects();
        if let Some(old) = &replaced {
            Self::drop_invite(&mut fx.batch, &pending_at, old);
        }
        let token = cx.link_token();
        let hash = sha256(token.as_bytes());
        let invite = OrgInviteRecord {
            organization: org,
            email: email.clone(),
            role: role.clone(),
            created_at: now,
            expires_at: now + INVITE_TTL,
        };
        fx.batch.put(&hash, &invite)?;
        let pending = OrgPendingInvite {
            hash: hex::encode(hash),
            role: role.clone(),
            created_at: now,
            expires_at: invite.expires_at,
        };
        fx.batch.put(&pending_at, &pending)?;
        let link = cx.link("join-organization", &token);
        cx.queue_mail(
            &mut fx,
            &email,
            MailKind::OrganizationInvitation {
                link,
                organization: organization.name,
            },
        )?;
        cx.audit_into(
            &mut fx.batch,
            "organization.invitation.sent",
            ctx,
            serde_json::json!({
                "organization_id": org,
                "email_domain": cx.domain_hash(&email),
                "role": role,
                "replaced": replaced.is_some(),
            }),
        )?;
        let view = InviteView {
            email,
            role,
            created_at: now,
            expires_at: invite.expires_at,
        };
        Ok((view, cx.commit(fx)?))
    }

    /// The organization's pending invitations that have not expired, oldest address first.
    pub(super) fn invitations(
        &self,
        cx: &TenantCtx,
        org: Uuid,
    ) -> Result<Vec<InviteView>, TenantError> {
        self.organization(cx, org)?;
        let now = OffsetDateTime::now_utc();
        let mut out = Vec::new();
        for item in cx.store.scan::<OrgPendingInvite>(org.as_bytes()) {
            let (key, p) = item?;
            if p.expires_at <= now {
                continue;
            }
            let email = String::from_utf8_lossy(key.get(16..).unwrap_or_default()).into_owned();
            out.push(InviteView {
                email,
                role: p.role,
                created_at: p.created_at,
                expires_at: p.expires_at,
            });
        }
        Ok(out)
    }

    pub(super) fn revoke_invite(
        &mut self,
        cx: &mut TenantCtx,
        (org, email): (Uuid, String),
        ctx: &AuditContext,
    ) -> Done<()> {
        let key = pending_key(org, &email);
        let p = cx
            .store
            .get::<OrgPendingInvite>(&key)?
            .ok_or(TenantError::NotFound)?;
        let mut fx = cx.effects();
        Self::drop_invite(&mut fx.batch, &key, &p);
        cx.audit_into(
            &mut fx.batch,
            "organization.invitation.revoked",
            ctx,
            serde_json::json!({ "organization_id": org, "email_domain": cx.domain_hash(&email) }),
        )?;
        Ok(((), cx.commit(fx)?))
    }

    // ------------------------------------------------------------ roles

    /// A role by name: a built-in one (with the tenant's permissions if it changed them) or
    /// one the tenant defined.
    pub(super) fn role(&self, cx: &TenantCtx, name: &str) -> Result<RoleView, TenantError> {
        let stored = cx.store.get::<OrgRoleRecord>(name.as_bytes())?;
        let defaults = default_permissions(name);
        match (stored, defaults) {
            (Some(r), d) => Ok(RoleView {
                name: r.name,
                description: r.description,
                permissions: r.permissions,
                built_in: d.is_some(),
            }),
            (None, Some(d)) => Ok(RoleView {
                name: name.to_owned(),
                description: None,
                permissions: d.iter().map(|p| (*p).to_owned()).collect(),
                built_in: true,
            }),
            (None, None) => Err(OrgError::UnknownRole.into()),
        }
    }

    /// Every role: the built-in ones first, then the tenant's by name.
    pub(super) fn roles(&self, cx: &TenantCtx) -> Result<Vec<RoleView>, TenantError> {
        let mut out = Vec::new();
        for name in BUILT_IN_ROLES {
            out.push(self.role(cx, name)?);
        }
        for item in cx.store.scan::<OrgRoleRecord>(b"") {
            let (_, r) = item?;
            if default_permissions(&r.name).is_none() {
                out.push(RoleView {
                    name: r.name,
                    description: r.description,
                    permissions: r.permissions,
                    built_in: false,
                });
            }
        }
        Ok(out)
    }

    /// Creates a role or replaces what one grants (a built-in one too).
    pub(super) fn put_role(
        &mut self,
        cx: &mut TenantCtx,
        (name, description, permissions): (String, Option<String>, Vec<String>),
        ctx: &AuditContext,
    ) -> Done<RoleView> {
        let built_in = default_permissions(&name).is_some();
        let exists = cx.store.get::<OrgRoleRecord>(name.as_bytes())?.is_some();
        if !built_in && !exists {
            let custom = self.roles(cx)?.iter().filter(|r| !r.built_in).count();
            if custom >= MAX_CUSTOM_ROLES {
                return Err(OrgError::RoleLimit {
                    limit: MAX_CUSTOM_ROLES,
                }
                .into());
            }
        }
        let record = OrgRoleRecord {
            name: name.clone(),
            description,
            permissions,
            updated_at: OffsetDateTime::now_utc(),
        };
        let mut fx = cx.effects();
        fx.batch.put(name.as_bytes(), &record)?;
        cx.audit_into(
            &mut fx.batch,
            "organization.role.saved",
            ctx,
            serde_json::json!({ "role": name, "permissions": record.permissions, "created": !built_in && !exists }),
        )?;
        let view = RoleView {
            name: record.name,
            description: record.description,
            permissions: record.permissions,
            built_in,
        };
        Ok((view, cx.commit(fx)?))
    }

    /// Deletes one of the tenant's roles that no member, no pending invitation and no single
    /// sign-on connection's mapping holds.
    pub(super) fn delete_role(
        &mut self,
        cx: &mut TenantCtx,
        name: String,
        ctx: &AuditContext,
    ) -> Done<()> {
        if default_permissions(&name).is_some() {
            return Err(OrgError::BuiltInRole.into());
        }
        if cx.store.get::<OrgRoleRecord>(name.as_bytes())?.is_none() {
            return Err(OrgError::UnknownRole.into());
        }
        for item in cx.store.scan::<OrgMemberRecord>(b"") {
            if item?.1.role == name {
                return Err(OrgError::RoleInUse.into());
            }
        }
        let now = OffsetDateTime::now_utc();
        for item in cx.store.scan::<OrgPendingInvite>(b"") {
            let (_, p) = item?;
            if p.role == name && p.expires_at > now {
                return Err(OrgError::RoleInUse.into());
            }
        }
        for item in cx
            .store
            .scan::<crate::tenant::sso::records::SsoConnectionRecord>(b"")
        {
            let (_, c) = item?;
            if c.default_role == name || c.group_roles.iter().any(|g| g.role == name) {
                return Err(OrgError::RoleInUse.into());
            }
        }
        let mut fx = cx.effects();
        fx.batch.remove(Kind::OrgRole, name.as_bytes());
        cx.audit_into(
            &mut fx.batch,
            "organization.role.deleted",
            ctx,
            serde_json::json!({ "role": name }),
        )?;
        Ok(((), cx.commit(fx)?))
    }
}

/// Whether `user` may hold a membership: a confirmed address, not a guest.
pub(super) fn may_join(user: &UserRecord) -> Result<(), TenantError> {
    if user.is_anonymous {
        return Err(OrgError::Guest.into());
    }
    if user.email.is_none() || !user.email_verified {
        return Err(OrgError::AddressUnconfirmed.into());
    }
    Ok(())
}

pub(super) fn member_view(m: &OrgMemberRecord, email: Option<String>) -> MemberView {
    MemberView {
        user_id: m.user,
        email,
        role: m.role.clone(),
        joined_via: m.joined.as_str(),
        created_at: m.created_at,
        updated_at: m.updated_at,
    }
}

/// The organization of a `user | organization` key.
pub(super) fn org_of(key: &[u8]) -> Option<Uuid> {
    second_id(key)
}
