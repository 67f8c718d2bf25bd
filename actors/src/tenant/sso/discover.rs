//! Home-realm discovery: the organization and connection an address's domain signs in
//! through. Only a domain an organization proved routes anywhere (a claim does not), and only
//! to that organization's enabled connection; an address's account is never looked at, so
//! the answer says nothing of who has one.

use serde::Serialize;
use uuid::Uuid;

use super::records::{OrgConnectionIndex, SsoConnectionRecord};
use crate::{
    error::TenantError,
    tenant::{
        ctx::TenantCtx,
        organizations::{
            records::{domain_key, VerifiedDomain},
            OrgDomainRecord,
        },
    },
};

/// Where an address's domain signs in.
#[derive(Clone, Debug, Serialize)]
pub struct Realm {
    pub organization_id: Uuid,
    pub connection_id: Uuid,
    #[serde(rename = "type")]
    pub protocol: &'static str,
    /// Addresses at the domain sign in only this way.
    pub sso_only: bool,
}

impl TenantCtx {
    /// The realm of a normalised address: its domain proven by an organization with an
    /// enabled connection (its oldest).
    pub(in crate::tenant) fn realm_of(&self, email: &str) -> Result<Option<Realm>, TenantError> {
        let domain = crate::policy::email_domain(email);
        let Some(verified) = self.store.get::<VerifiedDomain>(domain.as_bytes())? else {
            return Ok(None);
        };
        let org = verified.organization;
        let Some(record) = self
            .store
            .get::<OrgDomainRecord>(&domain_key(org, domain))?
            .filter(|d| d.verified_at.is_some())
        else {
            return Ok(None);
        };
        for item in self.store.scan::<OrgConnectionIndex>(org.as_bytes()) {
            let (key, _) = item?;
            let Some(id) = key.get(16..32).and_then(|b| Uuid::from_slice(b).ok()) else {
                continue;
            };
            if let Some(c) = self
                .store
                .get::<SsoConnectionRecord>(id.as_bytes())?
                .filter(|c| c.enabled)
            {
                return Ok(Some(Realm {
                    organization_id: org,
                    connection_id: c.id,
                    protocol: c.protocol.as_str(),
                    sso_only: record.sso_only,
                }));
            }
        }
        Ok(None)
    }

    /// Whether any organization has an enabled connection (the hosted sign-in then offers
    /// single sign-on).
    pub(in crate::tenant) fn any_sso(&self) -> bool {
        self.store
            .scan::<SsoConnectionRecord>(b"")
            .any(|item| item.is_ok_and(|(_, c)| c.enabled))
    }

    /// `Err(SsoRequired)` when the address's domain signs in only through single sign-on:
    /// the other ways in (a password, a mailed code or link, registration) refuse it.
    pub(in crate::tenant) fn sso_gate(&self, email: &str) -> Result<(), TenantError> {
        match self.realm_of(email)? {
            Some(r) if r.sso_only => Err(TenantError::Sso(super::SsoError::Required {
                connection: r.connection_id,
            })),
            _ => Ok(()),
        }
    }
}
