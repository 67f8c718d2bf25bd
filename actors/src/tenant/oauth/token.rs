//! The token endpoint's part in the actor: how a client presented itself, a code exchanged
//! (PKCE checked, a second use ending what the first opened) and a grant refreshed; and the
//! live grant behind an access token.

use tessera_storage::{ct_eq, sha256, Kind};
use time::OffsetDateTime;

use super::{
    failure::{fail, OAuthFailure},
    records::{AuthCodeRecord, ExchangedCode, OAuthGrant},
};
use crate::tenant::ctx::TenantCtx;
use crate::tenant::oauth::OAuth;
use crate::{
    error::TenantError,
    tenant::{
        audit::AuditContext,
        challenges::s256,
        messages::{Bearer, Grant},
        oauth_clients::{OAuthClientRecord, TokenAuthMethod},
        records::{SessionRecord, UserRecord},
    },
};

/// How a client presented itself at the token, revocation or introspection endpoint.
#[derive(Clone)]
pub struct ClientAuth {
    pub client_id: String,
    pub secret: Option<String>,
    pub method: TokenAuthMethod,
}

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientAuth")
            .field("client_id", &self.client_id)
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

/// What the token endpoint is asked for.
#[derive(Clone)]
pub enum TokenGrant {
    AuthorizationCode {
        code: String,
        redirect_uri: String,
        code_verifier: String,
    },
    RefreshToken {
        refresh_token: String,
        /// A narrower set than the grant's, for this access token only.
        scopes: Option<Vec<String>>,
    },
}

/// A grant opened or refreshed: the session, the grant and the nonce for the ID token.
#[derive(Clone, Debug)]
pub struct OAuthIssued {
    pub grant: Grant,
    pub oauth: OAuthGrant,
    /// The scopes of this access token (the grant's, or the narrower set asked).
    pub scopes: Vec<String>,
    /// With a code exchange only: the ID token's `nonce` (when one was asked).
    pub nonce: Option<String>,
    /// Whether an ID token is due (a code exchange with `openid`).
    pub id_token: bool,
}

/// A verifier as RFC 7636 4.1 shapes it: 43 to 128 unreserved characters.
pub fn verifier_ok(v: &str) -> bool {
    (43..=128).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

impl OAuth {
    /// The token endpoint: a code exchanged for a new grant, or a grant's refresh token
    /// rotated.
    pub fn oauth_token(
        &mut self,
        cx: &mut TenantCtx,
        client: &OAuthClientRecord,
        grant: TokenGrant,
        ctx: &AuditContext,
    ) -> Result<OAuthIssued, TenantError> {
        // Deleted (or re-keyed) since the edge read it: no more tokens. The actor publishes
        // every change before it answers, so its cell is the registry.
        let current = cx.cells.oauth_clients.load();
        let client = current
            .get(&client.client_id)
            .filter(|c| c.secret_hash == client.secret_hash)
            .cloned()
            .ok_or(fail(OAuthFailure::InvalidClient))?;
        match grant {
            TokenGrant::AuthorizationCode {
                code,
                redirect_uri,
                code_verifier,
            } => self.oauth_exchange(cx, &client, &code, &redirect_uri, &code_verifier, ctx),
            TokenGrant::RefreshToken {
                refresh_token,
                scopes,
            } => {
                let grant = cx.rotate(&refresh_token, Some(&client.client_id), ctx)?;
                let oauth = grant
                    .oauth
                    .clone()
                    .ok_or(TenantError::InvalidRefreshToken)?;
                let scopes = match scopes {
                    Some(asked) if asked.iter().any(|s| !oauth.has_scope(s)) => {
                        return Err(fail(OAuthFailure::InvalidScope));
                    }
                    Some(asked) => asked,
                    None => oauth.scopes.clone(),
                };
                // Scopes taken off the client since the grant are not in new tokens.
                let scopes = scopes
                    .into_iter()
                    .filter(|s| client.profile.allowed_scopes.contains(s))
                    .collect();
                Ok(OAuthIssued {
                    grant,
                    oauth,
                    scopes,
                    nonce: None,
                    id_token: false,
                })
            }
        }
    }

    fn oauth_exchange(
        &mut self,
        cx: &mut TenantCtx,
        client: &OAuthClientRecord,
        code: &str,
        redirect_uri: &str,
        verifier: &str,
        ctx: &AuditContext,
    ) -> Result<OAuthIssued, TenantError> {
        let now = OffsetDateTime::now_utc();
        let key = sha256(code.as_bytes());
        let Some(mut record) = cx.store.get::<AuthCodeRecord>(&key)? else {
            return Err(fail(OAuthFailure::InvalidGrant));
        };
        if record.client_id != client.client_id {
            return Err(fail(OAuthFailure::InvalidGrant));
        }
        let mut fx = cx.effects();
        if let Some(done) = &record.exchanged {
            // A second use: whatever the first one issued is revoked.
            if let Some(session) = cx.store.get::<SessionRecord>(done.grant.as_bytes())? {
                cx.remove_session(&mut fx.batch, &session);
            }
            cx.audit_into(
                &mut fx.batch,
                "oauth.code.reused",
                ctx,
                serde_json::json!({
                    "user_id": record.user_id,
                    "client_id": record.client_id,
                    "grant_id": done.grant,
                }),
            )?;
            tracing::warn!(tenant = %cx.info.id, client = %record.client_id, "authorization code reused; its grant is revoked");
            return cx.fail(fx, fail(OAuthFailure::InvalidGrant));
        }
        if record.expires_at <= now
            || record.redirect_uri != redirect_uri
            || !verifier_ok(verifier)
            || !ct_eq(s256(verifier).as_bytes(), record.code_challenge.as_bytes())
        {
            // A code is good for one try: a wrong verifier or redirect URI burns it.
            fx.batch.remove(Kind::OAuthCode, &key);
            return cx.fail(fx, fail(OAuthFailure::InvalidGrant));
        }
        let Some(mut user) = cx.user(record.user_id)?.filter(|u| !u.suspended()) else {
            fx.batch.remove(Kind::OAuthCode, &key);
            return cx.fail(fx, fail(OAuthFailure::InvalidGrant));
        };
        // A membership ended since the code was issued: the code is void.
        if let Some(org) = record.organization {
            if cx.membership(org, user.id)?.is_none() {
                fx.batch.remove(Kind::OAuthCode, &key);
                return cx.fail(fx, fail(OAuthFailure::InvalidGrant));
            }
        }
        // Consent withdrawn since the code was issued: the code is void.
        if !client.profile.first_party {
            let consent = self.consent_of(cx, user.id, &client.client_id)?;
            let granted = consent
                .as_ref()
                .map_or(&[][..], |c| c.scopes_for(record.resource.as_deref()));
            if record.scopes.iter().any(|s| !granted.contains(s)) {
                fx.batch.remove(Kind::OAuthCode, &key);
                return cx.fail(fx, fail(OAuthFailure::InvalidGrant));
            }
        }
        let oauth = OAuthGrant {
            client_id: client.client_id.clone(),
            scopes: record.scopes.clone(),
            resource: record.resource.clone(),
            auth_time: record.auth_time,
            sign_in_session: record.sign_in_session,
        };
        cx.count_active(&mut fx.batch, Some(user.last_active_at), now)?;
        user.last_active_at = now;
        fx.batch.put(user.id.as_bytes(), &user)?;
        let grant = cx.open_grant(
            &mut fx.batch,
            &user,
            (record.aal, record.amr.clone()),
            (oauth.clone(), record.organization),
            ctx,
            now,
        )?;
        record.exchanged = Some(ExchangedCode {
            at: now,
            grant: grant.session_id,
        });
        fx.batch.put(&key, &record)?;
        cx.commit(fx)?;
        Ok(OAuthIssued {
            grant,
            scopes: oauth.scopes.clone(),
            id_token: oauth.has_scope("openid"),
            oauth,
            nonce: record.nonce,
        })
    }

    /// The session a refresh token names while that token is its current one.
    pub(super) fn current_refresh(
        &self,
        cx: &TenantCtx,
        token: &str,
        now: OffsetDateTime,
    ) -> Option<SessionRecord> {
        let (session, generation) = cx.refresh_token_session(token)?;
        cx.store
            .get::<SessionRecord>(session.as_bytes())
            .ok()
            .flatten()
            .filter(|s| s.generation == generation && s.expires_at > now)
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// The live grant behind an OAuth access token of `client_id`, and its user. A deleted
    /// client's grants are dead.
    pub(in crate::tenant) fn live_grant(
        &self,
        bearer: Bearer,
        client_id: &str,
        now: OffsetDateTime,
    ) -> Result<(SessionRecord, UserRecord), TenantError> {
        if self.cells.oauth_clients.load().get(client_id).is_none() {
            return Err(TenantError::InvalidSession);
        }
        let session = self
            .store
            .get::<SessionRecord>(bearer.session_id.as_bytes())?
            .filter(|s| {
                s.user_id == bearer.user_id
                    && s.expires_at > now
                    && s.oauth.as_ref().is_some_and(|o| o.client_id == client_id)
            })
            .ok_or(TenantError::InvalidSession)?;
        let user = self
            .user(session.user_id)?
            .filter(|u| !u.suspended())
            .ok_or(TenantError::InvalidSession)?;
        Ok((session, user))
    }
}
