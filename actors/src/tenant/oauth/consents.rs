//! A user's consents to OAuth clients, as the user lists them, and their withdrawal, which
//! ends the client's grants.

use tessera_storage::{Kind, TenantBatch};
use time::OffsetDateTime;
use uuid::Uuid;

use super::records::{consent_key, ConsentRecord};
use crate::tenant::ctx::TenantCtx;
use crate::tenant::oauth::OAuth;
use crate::{
    error::TenantError,
    tenant::{
        audit::AuditContext, messages::Bearer, oauth_clients::OAuthClientRecord,
        records::SessionRecord,
    },
};

/// A consent as its user sees it.
#[derive(Clone, Debug)]
pub struct ConsentView {
    pub client_id: String,
    pub client_name: Option<String>,
    pub scopes: Vec<String>,
    pub resources: Vec<String>,
    pub granted_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// The consents `user` has given, as stored.
    pub(in crate::tenant) fn consent_records(
        &self,
        user: Uuid,
    ) -> Result<Vec<ConsentRecord>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<ConsentRecord>(user.as_bytes()) {
            out.push(item?.1);
        }
        Ok(out)
    }
}

impl OAuth {
    /// The user's consents, newest change first.
    pub(super) fn oauth_consents(
        &self,
        cx: &TenantCtx,
        bearer: Bearer,
    ) -> Result<Vec<ConsentView>, TenantError> {
        let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
        let mut out = Vec::new();
        for item in cx.store.scan::<ConsentRecord>(user.id.as_bytes()) {
            let (_, c) = item?;
            let client_name = cx
                .store
                .get::<OAuthClientRecord>(c.client_id.as_bytes())?
                .map(|r| r.profile.name);
            out.push(ConsentView {
                scopes: c.all_scopes(),
                resources: c.resources(),
                client_id: c.client_id,
                client_name,
                granted_at: c.granted_at,
                updated_at: c.updated_at,
            });
        }
        out.sort_by_key(|c| std::cmp::Reverse(c.updated_at));
        Ok(out)
    }

    /// Ends every grant of `user` to `client_id` (into `batch`); answers how many.
    fn end_grants(
        &self,
        cx: &TenantCtx,
        batch: &mut TenantBatch,
        user: Uuid,
        client_id: &str,
    ) -> Result<usize, TenantError> {
        let mut n = 0;
        for item in cx.session_index(user) {
            let (_, sid) = item?;
            let Some(s) = cx.store.get::<SessionRecord>(sid.as_bytes())? else {
                continue;
            };
            if s.oauth.as_ref().is_some_and(|o| o.client_id == client_id) {
                cx.remove_session(batch, &s);
                n += 1;
            }
        }
        Ok(n)
    }

    /// Withdraws the user's consent to `client_id` (GDPR art. 7(3)) and ends that client's
    /// grants.
    pub(super) fn oauth_withdraw(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        client_id: &str,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
        let key = consent_key(user.id, client_id);
        if cx.store.get::<ConsentRecord>(&key)?.is_none() {
            return Err(TenantError::NotFound);
        }
        let mut fx = cx.effects();
        fx.batch.remove(Kind::OAuthConsent, &key);
        let ended = self.end_grants(cx, &mut fx.batch, user.id, client_id)?;
        cx.audit_into(
            &mut fx.batch,
            "oauth.consent.withdrawn",
            ctx,
            serde_json::json!({
                "user_id": user.id,
                "client_id": client_id,
                "grants_ended": ended,
            }),
        )?;
        cx.commit(fx)?;
        Ok(())
    }
}
