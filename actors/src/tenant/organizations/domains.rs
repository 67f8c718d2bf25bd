//! An organization's domains: claimed by an admin, proven by a DNS TXT record that holds the
//! claim's token (looked up by the edge, off the actor; the actor compares), and, once
//! proven, optionally adding every user who signs in with a confirmed address at the domain
//! as a `member`. A domain is proven by one organization of the tenant at most; a claim that
//! is not proven routes nothing and adds nobody.

use tessera_storage::{Kind, TenantBatch};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    error::OrgError,
    policy::MAX_DOMAINS,
    records::{domain_key, pair_key, Joined, OrgDeparted, OrgDomainRecord, VerifiedDomain},
    Organizations,
};
use crate::{
    error::TenantError,
    outbound::MailJob,
    tenant::{audit::AuditContext, ctx::TenantCtx, records::UserRecord},
};

type Done<T> = Result<(T, Vec<MailJob>), TenantError>;

/// A change to a domain's switches; `None`: unchanged.
#[derive(Clone, Copy, Debug, Default)]
pub struct DomainChange {
    pub auto_join: Option<bool>,
    pub sso_only: Option<bool>,
}

/// The name whose TXT record proves `domain`.
pub fn proof_name(domain: &str) -> String {
    format!("_tessera-verification.{domain}")
}

/// The TXT value that proves a claim with `token`.
pub fn proof_value(token: &str) -> String {
    format!("tessera-verification={token}")
}

impl Organizations {
    fn domain(
        &self,
        cx: &TenantCtx,
        org: Uuid,
        domain: &str,
    ) -> Result<OrgDomainRecord, TenantError> {
        cx.store
            .get::<OrgDomainRecord>(&domain_key(org, domain))?
            .ok_or(TenantError::NotFound)
    }

    /// An organization's domains, by name.
    pub(super) fn domains(
        &self,
        cx: &TenantCtx,
        org: Uuid,
    ) -> Result<Vec<OrgDomainRecord>, TenantError> {
        self.organization(cx, org)?;
        let mut out = Vec::new();
        for item in cx.store.scan::<OrgDomainRecord>(org.as_bytes()) {
            out.push(item?.1);
        }
        Ok(out)
    }

    /// Claims `domain` (normalised by the caller) for `org`, with a new token to prove it.
    pub(super) fn add_domain(
        &mut self,
        cx: &mut TenantCtx,
        (org, domain): (Uuid, String),
        ctx: &AuditContext,
    ) -> Done<OrgDomainRecord> {
        self.organization(cx, org)?;
        if cx
            .store
            .get::<OrgDomainRecord>(&domain_key(org, &domain))?
            .is_some()
        {
            return Err(OrgError::DomainClaimed.into());
        }
        if cx.store.get::<VerifiedDomain>(domain.as_bytes())?.is_some() {
            return Err(OrgError::DomainTaken.into());
        }
        if self.domains(cx, org)?.len() >= MAX_DOMAINS {
            return Err(OrgError::DomainLimit { limit: MAX_DOMAINS }.into());
        }
        let raw: [u8; 18] = rand::random();
        let record = OrgDomainRecord {
            organization: org,
            domain: domain.clone(),
            token: hex::encode(raw),
            created_at: OffsetDateTime::now_utc(),
            verified_at: None,
            auto_join: false,
            sso_only: false,
        };
        let mut fx = cx.effects();
        fx.batch.put(&domain_key(org, &domain), &record)?;
        cx.audit_into(
            &mut fx.batch,
            "organization.domain.added",
            ctx,
            serde_json::json!({ "organization_id": org, "domain": domain }),
        )?;
        Ok((record, cx.commit(fx)?))
    }

    /// Marks a claim proven when one of the TXT `values` found at its proof name holds its
    /// token, and no other organization proved the domain first.
    pub(super) fn verify_domain(
        &mut self,
        cx: &mut TenantCtx,
        (org, domain, values): (Uuid, String, Vec<String>),
        ctx: &AuditContext,
    ) -> Done<OrgDomainRecord> {
        let mut record = self.domain(cx, org, &domain)?;
        if record.verified_at.is_some() {
            return Ok((record, Vec::new()));
        }
        if let Some(v) = cx.store.get::<VerifiedDomain>(domain.as_bytes())? {
            if v.organization != org {
                return Err(OrgError::DomainTaken.into());
            }
        }
        let expected = proof_value(&record.token);
        if !values.iter().any(|v| v.trim() == expected) {
            return Err(OrgError::DomainUnproven {
                name: proof_name(&domain),
                value: expected,
            }
            .into());
        }
        record.verified_at = Some(OffsetDateTime::now_utc());
        let mut fx = cx.effects();
        fx.batch.put(&domain_key(org, &domain), &record)?;
        fx.batch
            .put(domain.as_bytes(), &VerifiedDomain { organization: org })?;
        cx.audit_into(
            &mut fx.batch,
            "organization.domain.verified",
            ctx,
            serde_json::json!({ "organization_id": org, "domain": domain }),
        )?;
        Ok((record, cx.commit(fx)?))
    }

    /// Turns the adding of members by the domain, or single sign-on only, on or off
    /// (`None`: unchanged).
    pub(super) fn update_domain(
        &mut self,
        cx: &mut TenantCtx,
        (org, domain, change): (Uuid, String, DomainChange),
        ctx: &AuditContext,
    ) -> Done<OrgDomainRecord> {
        let mut record = self.domain(cx, org, &domain)?;
        record.auto_join = change.auto_join.unwrap_or(record.auto_join);
        record.sso_only = change.sso_only.unwrap_or(record.sso_only);
        let mut fx = cx.effects();
        fx.batch.put(&domain_key(org, &domain), &record)?;
        cx.audit_into(
            &mut fx.batch,
            "organization.domain.updated",
            ctx,
            serde_json::json!({
                "organization_id": org, "domain": domain, "auto_join": record.auto_join,
                "sso_only": record.sso_only,
            }),
        )?;
        Ok((record, cx.commit(fx)?))
    }

    pub(super) fn remove_domain(
        &mut self,
        cx: &mut TenantCtx,
        (org, domain): (Uuid, String),
        ctx: &AuditContext,
    ) -> Done<()> {
        let record = self.domain(cx, org, &domain)?;
        let mut fx = cx.effects();
        Self::drop_domain(cx, &mut fx.batch, &record)?;
        cx.audit_into(
            &mut fx.batch,
            "organization.domain.removed",
            ctx,
            serde_json::json!({ "organization_id": org, "domain": domain }),
        )?;
        Ok(((), cx.commit(fx)?))
    }

    /// Removes a claim and, when this organization proved it, the domain's index entry.
    pub(super) fn drop_domain(
        cx: &TenantCtx,
        batch: &mut TenantBatch,
        record: &OrgDomainRecord,
    ) -> Result<(), TenantError> {
        batch.remove(
            Kind::OrgDomain,
            &domain_key(record.organization, &record.domain),
        );
        let owned = cx
            .store
            .get::<VerifiedDomain>(record.domain.as_bytes())?
            .is_some_and(|v| v.organization == record.organization);
        if owned {
            batch.remove(Kind::VerifiedDomain, record.domain.as_bytes());
        }
        Ok(())
    }
}

// What the kernel's sign-in asks of organizations.
impl TenantCtx {
    /// Adds `user`, signing in with a confirmed address, to the organization that proved the
    /// address's domain and adds members by it: as `member`, unless they are one already, an
    /// admin removed them, or the organization is full (then nothing happens).
    pub(in crate::tenant) fn join_by_domain(
        &mut self,
        batch: &mut TenantBatch,
        user: &UserRecord,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        let Some(email) = user.email.as_deref().filter(|_| user.email_verified) else {
            return Ok(());
        };
        if user.is_anonymous {
            return Ok(());
        }
        let domain = crate::policy::email_domain(email);
        let Some(verified) = self.store.get::<VerifiedDomain>(domain.as_bytes())? else {
            return Ok(());
        };
        let org = verified.organization;
        let adds = self
            .store
            .get::<OrgDomainRecord>(&domain_key(org, domain))?
            .is_some_and(|d| d.auto_join && d.verified_at.is_some());
        if !adds
            || self.membership(org, user.id)?.is_some()
            || self
                .store
                .get::<OrgDeparted>(&pair_key(user.id, org))?
                .is_some()
        {
            return Ok(());
        }
        match Organizations::room_for(self, org, user.id) {
            Ok(()) => {}
            Err(TenantError::Organization(e)) => {
                tracing::warn!(tenant = %self.info.id, organization = %org, reason = %e, "a user at the organization's domain was not added");
                return Ok(());
            }
            Err(e) => return Err(e),
        }
        Organizations::link(self, batch, (org, user.id, "member"), Joined::Domain, ctx)?;
        Ok(())
    }
}
