//! An authorization request decided: the user's live sign-in, the consent on file or the
//! consent screen (with the commitment the decision must carry back), the decision, and the
//! code it issues.

use std::sync::Arc;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use tessera_storage::{ct_eq, sha256, TenantBatch};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    failure::{fail, OAuthFailure},
    records::{consent_key, sorted_union, AuthCodeRecord, ConsentRecord},
};
use crate::tenant::ctx::TenantCtx;
use crate::tenant::oauth::OAuth;
use crate::{
    error::TenantError,
    tenant::{
        audit::AuditContext,
        credentials::Credential,
        inventory::may_add,
        messages::Bearer,
        oauth_clients::OAuthClientRecord,
        records::{SessionRecord, UserRecord},
    },
};

/// An authorization request as checked by the HTTP edge (client, redirect URI, response
/// type, PKCE method, scope shapes): what the actor decides on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthzRequest {
    pub client_id: String,
    pub redirect_uri: String,
    /// Space-separated in the request; here in the order asked, without duplicates.
    pub scopes: Vec<String>,
    pub resource: Option<String>,
    pub code_challenge: String,
    pub state: Option<String>,
    pub nonce: Option<String>,
    /// The organization the tokens are for (`organization`, with the `organization` scope):
    /// the user must be a member.
    pub organization: Option<Uuid>,
}

impl AuthzRequest {
    /// The bytes the consent commitment covers: every field, length-prefixed, so no two
    /// requests share them.
    pub(super) fn canonical(&self, user: Uuid) -> Vec<u8> {
        let mut out = b"oauth-consent/3".to_vec();
        // Each field: a presence byte, then (if present) its length and bytes.
        let mut field = |s: Option<&str>| match s {
            None => out.push(0),
            Some(s) => {
                out.push(1);
                out.extend_from_slice(&(s.len() as u64).to_be_bytes());
                out.extend_from_slice(s.as_bytes());
            }
        };
        field(Some(&user.to_string()));
        field(Some(&self.client_id));
        field(Some(&self.redirect_uri));
        field(Some(&self.scopes.join(" ")));
        field(self.resource.as_deref());
        field(Some(&self.code_challenge));
        field(self.state.as_deref());
        field(self.nonce.as_deref());
        field(self.organization.map(|o| o.to_string()).as_deref());
        out
    }
}

/// What the consent screen needs from the actor.
#[derive(Clone, Debug)]
pub struct ConsentNeeded {
    pub client: Arc<OAuthClientRecord>,
    pub new_scopes: Vec<String>,
    pub unchanged_scopes: Vec<String>,
    pub new_resources: Vec<String>,
    /// A consent is on file and this request asks for more.
    pub is_re_consent: bool,
    /// The keyed hash the decision must carry back.
    pub commitment: String,
}

#[derive(Clone, Debug)]
pub enum AuthorizeOutcome {
    /// No live session, the user is blocked, or the sign-in is older than `max_age`.
    LoginRequired,
    /// Consent on file (or a first-party client): the code to send back.
    Code(String),
    Consent(Box<ConsentNeeded>),
}

#[derive(Clone, Debug)]
pub enum ConsentDecision {
    /// The scopes approved: a subset of those asked.
    Approve(Vec<String>),
    Deny,
}

impl OAuth {
    /// The user's live first-party session behind `bearer`, for authorize and consent.
    fn oauth_signed_in(
        &self,
        cx: &TenantCtx,
        bearer: Bearer,
        now: OffsetDateTime,
    ) -> Result<Option<(SessionRecord, UserRecord)>, TenantError> {
        match cx.live_session(bearer, now) {
            Ok((s, u)) if !u.suspended() => Ok(Some((s, u))),
            Ok(_) | Err(TenantError::InvalidSession) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn commitment(&self, cx: &TenantCtx, request: &AuthzRequest, user: Uuid) -> String {
        URL_SAFE_NO_PAD.encode(cx.oauth_hasher.hash(&request.canonical(user)))
    }

    pub(super) fn consent_of(
        &self,
        cx: &TenantCtx,
        user: Uuid,
        client_id: &str,
    ) -> Result<Option<ConsentRecord>, TenantError> {
        Ok(cx
            .store
            .get::<ConsentRecord>(&consent_key(user, client_id))?)
    }

    /// A new code for `request`, written into `batch`.
    fn issue_code(
        &self,
        cx: &TenantCtx,
        batch: &mut TenantBatch,
        request: &AuthzRequest,
        scopes: Vec<String>,
        session: &SessionRecord,
        now: OffsetDateTime,
    ) -> Result<String, TenantError> {
        let raw: [u8; 32] = rand::random();
        let code = URL_SAFE_NO_PAD.encode(raw);
        let record = AuthCodeRecord {
            client_id: request.client_id.clone(),
            redirect_uri: request.redirect_uri.clone(),
            code_challenge: request.code_challenge.clone(),
            user_id: session.user_id,
            scopes,
            resource: request.resource.clone(),
            nonce: request.nonce.clone(),
            auth_time: session.created_at,
            aal: session.aal,
            amr: session.amr.clone(),
            expires_at: now
                + Duration::try_from(cx.runtime.tokens.code_ttl)
                    .map_err(|e| TenantError::Internal(e.to_string()))?,
            exchanged: None,
            sign_in_session: Some(session.id),
            organization: request.organization,
        };
        batch.put(&sha256(code.as_bytes()), &record)?;
        Ok(code)
    }

    /// The authorize decision for a signed-in user (the edge checked the request's shape and
    /// the client's redirect URI and scopes).
    pub fn oauth_authorize(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        request: &AuthzRequest,
        max_age: Option<u64>,
        (force_consent, no_prompt): (bool, bool),
    ) -> Result<(AuthorizeOutcome, bool), TenantError> {
        let now = OffsetDateTime::now_utc();
        let Some((session, user)) = self.oauth_signed_in(cx, bearer, now)? else {
            return Ok((AuthorizeOutcome::LoginRequired, false));
        };
        if let Some(max) = max_age {
            let age = (now - session.created_at).whole_seconds().max(0);
            if u64::try_from(age).unwrap_or(u64::MAX) > max {
                return Ok((AuthorizeOutcome::LoginRequired, false));
            }
        }
        // The published registry: the same records, without decoding one.
        let client = cx
            .cells
            .oauth_clients
            .load()
            .get(&request.client_id)
            .cloned()
            .ok_or(TenantError::NotFound)?;
        let consent = self.consent_of(cx, user.id, &client.client_id)?;
        let resource = request.resource.as_deref();
        let granted = consent.as_ref().map_or(&[][..], |c| c.scopes_for(resource));
        let resources = consent.as_ref().map(|c| c.resources()).unwrap_or_default();
        let new_scopes: Vec<String> = request
            .scopes
            .iter()
            .filter(|s| !granted.contains(s))
            .cloned()
            .collect();
        let new_resources: Vec<String> = request
            .resource
            .iter()
            .filter(|r| !resources.contains(r))
            .cloned()
            .collect();
        // A request that names an organization is shown to the user each time (a consent on
        // file names no organization) unless the client is the tenant's own; so whether the
        // user is a member is said only once they have seen the request.
        let covered = client.profile.first_party
            || (new_scopes.is_empty()
                && new_resources.is_empty()
                && request.organization.is_none());
        if covered && !force_consent {
            if let Some(org) = request.organization {
                if cx.membership(org, user.id)?.is_none() {
                    return Err(fail(OAuthFailure::AccessDenied));
                }
            }
            let mut fx = cx.effects();
            let code = self.issue_code(
                cx,
                &mut fx.batch,
                request,
                request.scopes.clone(),
                &session,
                now,
            )?;
            cx.commit(fx)?;
            return Ok((AuthorizeOutcome::Code(code), true));
        }
        if no_prompt {
            return Err(fail(OAuthFailure::ConsentRequired));
        }
        let unchanged_scopes = request
            .scopes
            .iter()
            .filter(|s| granted.contains(s))
            .cloned()
            .collect();
        let needed = ConsentNeeded {
            commitment: self.commitment(cx, request, user.id),
            is_re_consent: consent.is_some()
                && !(new_scopes.is_empty() && new_resources.is_empty()),
            client,
            new_scopes,
            unchanged_scopes,
            new_resources,
        };
        Ok((AuthorizeOutcome::Consent(Box::new(needed)), false))
    }

    /// The user's answer on the consent screen: approved scopes are added to the consent on
    /// file and a code is issued for them; a denial changes nothing on file.
    pub fn oauth_consent(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        request: &AuthzRequest,
        commitment: &str,
        decision: ConsentDecision,
        ctx: &AuditContext,
    ) -> Result<Option<String>, TenantError> {
        let now = OffsetDateTime::now_utc();
        let (session, user) = self
            .oauth_signed_in(cx, bearer, now)?
            .ok_or(TenantError::InvalidSession)?;
        let expected = self.commitment(cx, request, user.id);
        if !ct_eq(expected.as_bytes(), commitment.as_bytes()) {
            return Err(fail(OAuthFailure::InvalidRequest));
        }
        let client = cx.oauth_client(&request.client_id)?;
        let mut fx = cx.effects();
        let approved = match decision {
            ConsentDecision::Deny => {
                cx.audit_into(
                    &mut fx.batch,
                    "oauth.consent.denied",
                    ctx,
                    serde_json::json!({
                        "user_id": user.id,
                        "client_id": client.client_id,
                        "scopes": request.scopes,
                    }),
                )?;
                cx.commit(fx)?;
                return Ok(None);
            }
            ConsentDecision::Approve(approved) => approved,
        };
        may_add(&user, Credential::OAuthConsents)?;
        if approved.iter().any(|s| !request.scopes.contains(s)) {
            return Err(fail(OAuthFailure::InvalidScope));
        }
        if let Some(org) = request.organization {
            if cx.membership(org, user.id)?.is_none() {
                return Err(fail(OAuthFailure::AccessDenied));
            }
        }
        // In the order asked.
        let scopes: Vec<String> = request
            .scopes
            .iter()
            .filter(|s| approved.contains(s))
            .cloned()
            .collect();
        let key = consent_key(user.id, &client.client_id);
        let mut record = cx
            .store
            .get::<ConsentRecord>(&key)?
            .unwrap_or_else(|| ConsentRecord {
                user_id: user.id,
                client_id: client.client_id.clone(),
                grants: Default::default(),
                granted_at: now,
                updated_at: now,
            });
        let slot = record
            .grants
            .entry(request.resource.clone().unwrap_or_default())
            .or_default();
        *slot = sorted_union(slot, &scopes);
        record.updated_at = now;
        fx.batch.put(&key, &record)?;
        let code = self.issue_code(cx, &mut fx.batch, request, scopes.clone(), &session, now)?;
        cx.audit_into(
            &mut fx.batch,
            "oauth.consent.granted",
            ctx,
            serde_json::json!({
                "user_id": user.id,
                "client_id": client.client_id,
                "scopes": scopes,
                "resource": request.resource,
            }),
        )?;
        cx.commit(fx)?;
        Ok(Some(code))
    }
}
