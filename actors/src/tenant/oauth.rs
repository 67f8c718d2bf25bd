//! The tenant's OAuth 2.1 / OpenID Connect authorization server: consents, authorization
//! codes, and the grants the token endpoint opens.
//!
//! A grant is a session ([`SessionRecord`]) that carries [`OAuthGrant`]: its refresh token
//! rotates exactly as a first-party session's does, its access tokens name it in `sid`, and
//! whatever ends a user's sessions (a password change, a block, an erasure) ends its grants
//! too. First-party routes refuse grant sessions, and the token endpoint refuses first-party
//! ones, so neither kind of token stands in for the other.
//!
//! An authorization code is 32 random bytes, kept only as its SHA-256, single-use and alive
//! `tokens.authorization_code_ttl_secs` (60 s). An exchanged code is kept (marked with the grant it opened) until it would have
//! expired plus [`CODE_REUSE_WATCH`], so a second exchange is recognised and ends that grant
//! (RFC 6749 4.1.2: a code used twice revokes what it issued).
//!
//! Consent is kept per (user, client): the scopes and resources granted so far. A request for
//! nothing new is answered with a code at once; anything new asks again, showing what is new
//! and what is unchanged. First-party clients are the tenant's own apps and are not asked.
//! A consent decision must carry the commitment the server answered with the consent screen
//! (a keyed hash of the whole request and the user), so only what was shown can be approved.

use std::sync::Arc;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::{Deserialize, Serialize};
use tessera_storage::{ct_eq, sha256, Kind, Record, TenantBatch, TenantRecord};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    audit::AuditContext,
    credentials::Credential,
    inventory::may_add,
    messages::{Bearer, Grant, UserView},
    oauth_clients::{ClientType, OAuthClientRecord, TokenAuthMethod},
    records::{SessionRecord, UserRecord, UserSessionIndex},
    state::TenantState,
};
use crate::error::TenantError;

/// How long after its expiry an exchanged code is still recognised when presented again.
pub const CODE_REUSE_WATCH: Duration = Duration::minutes(10);

/// What a grant session carries besides the session itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthGrant {
    pub client_id: String,
    /// The scopes granted, in the order asked.
    pub scopes: Vec<String>,
    /// The RFC 8707 resource the tokens are for (their `aud`).
    pub resource: Option<String>,
    /// When the user last signed in (the ID token's `auth_time`).
    #[serde(with = "time::serde::rfc3339")]
    pub auth_time: OffsetDateTime,
    /// The user's sign-in session the authorization came from (the ID token's `sid`, which
    /// RP-initiated logout ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign_in_session: Option<Uuid>,
}

impl OAuthGrant {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// What a user has granted a client, keyed `user id | client id`: for each resource (`""` for
/// requests that name none) the scopes granted for it. A scope granted for one resource is
/// not granted for another.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConsentRecord {
    pub user_id: Uuid,
    pub client_id: String,
    /// Resource URI (or `""`) -> its scopes, sorted, no duplicates.
    pub grants: std::collections::BTreeMap<String, Vec<String>>,
    #[serde(with = "time::serde::rfc3339")]
    pub granted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl ConsentRecord {
    /// The scopes granted for `resource` (none: the requests that name no resource).
    pub fn scopes_for(&self, resource: Option<&str>) -> &[String] {
        self.grants
            .get(resource.unwrap_or(""))
            .map_or(&[], Vec::as_slice)
    }

    /// Every scope granted, for any resource.
    pub fn all_scopes(&self) -> Vec<String> {
        let all: Vec<String> = self.grants.values().flatten().cloned().collect();
        sorted_union(&all, &[])
    }

    /// The resources named in a grant.
    pub fn resources(&self) -> Vec<String> {
        self.grants
            .keys()
            .filter(|k| !k.is_empty())
            .cloned()
            .collect()
    }
}

impl Record for ConsentRecord {
    const KIND: Kind = Kind::OAuthConsent;
    const NAME: &'static str = "oauth_consent";
    const VERSION: u16 = 1;
}
impl TenantRecord for ConsentRecord {}

/// Whether a client id is an agent's (`agt_...`): its consents are agent consents.
pub fn is_agent_client(client_id: &str) -> bool {
    client_id.starts_with("agt_")
}

pub(super) fn consent_key(user: Uuid, client_id: &str) -> Vec<u8> {
    let mut k = user.as_bytes().to_vec();
    k.extend_from_slice(client_id.as_bytes());
    k
}

/// A code that was exchanged: when, and the grant it opened.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExchangedCode {
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    pub grant: Uuid,
}

/// An authorization code, keyed by its SHA-256.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AuthCodeRecord {
    pub client_id: String,
    pub redirect_uri: String,
    /// The PKCE S256 challenge the exchange's verifier must match.
    pub code_challenge: String,
    pub user_id: Uuid,
    pub scopes: Vec<String>,
    pub resource: Option<String>,
    pub nonce: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub auth_time: OffsetDateTime,
    pub aal: u8,
    pub amr: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    #[serde(default)]
    pub exchanged: Option<ExchangedCode>,
    /// The sign-in session that authorized.
    #[serde(default)]
    pub sign_in_session: Option<Uuid>,
}

impl Record for AuthCodeRecord {
    const KIND: Kind = Kind::OAuthCode;
    const NAME: &'static str = "oauth_code";
    const VERSION: u16 = 1;
}
impl TenantRecord for AuthCodeRecord {}

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
}

impl AuthzRequest {
    /// The bytes the consent commitment covers: every field, length-prefixed, so no two
    /// requests share them.
    fn canonical(&self, user: Uuid) -> Vec<u8> {
        let mut out = b"oauth-consent/2".to_vec();
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

/// A token presented for introspection or revocation, as the HTTP edge read it.
#[derive(Clone)]
pub enum PresentedToken {
    /// A verified access token of this tenant: its session and user, and the client it was
    /// issued to (none for a first-party token).
    Access {
        bearer: Bearer,
        client_id: Option<String>,
    },
    Refresh(String),
    /// Neither: inactive.
    Unknown,
}

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

#[derive(Clone)]
pub enum OAuthCmd {
    Authorize {
        bearer: Bearer,
        request: AuthzRequest,
        max_age: Option<u64>,
        /// `prompt=consent`: ask even with consent on file.
        force_consent: bool,
        /// `prompt=none`: never ask; consent missing is an error.
        no_prompt: bool,
    },
    Consent {
        bearer: Bearer,
        request: AuthzRequest,
        commitment: String,
        decision: ConsentDecision,
    },
    /// `client` authenticated by the edge ([`super::oauth_clients::PublishedClients`]).
    Token {
        client: Arc<OAuthClientRecord>,
        grant: TokenGrant,
    },
    /// The user of a live grant of `client_id`.
    UserInfo {
        bearer: Bearer,
        client_id: String,
    },
    Revoke {
        client: Arc<OAuthClientRecord>,
        token: PresentedToken,
    },
    Introspect {
        client: Arc<OAuthClientRecord>,
        token: PresentedToken,
    },
    Consents {
        bearer: Bearer,
    },
    /// RP-initiated logout: ends each first-party sign-in session of `sessions` (a verified
    /// ID token's, the browser's hosted sign-in) that is still its user's, at once. `client_id`
    /// is the relying party that asked, when one is known.
    EndSession {
        sessions: Vec<Bearer>,
        client_id: Option<String>,
    },
    Withdraw {
        bearer: Bearer,
        client_id: String,
    },
}

#[derive(Clone, Debug)]
pub enum OAuthAnswer {
    Authorize(AuthorizeOutcome),
    /// The code, or `None` when the user denied.
    Decided(Option<String>),
    Issued(Box<OAuthIssued>),
    User(UserView),
    Done,
    /// Introspection: whether the token is active, and for a refresh token its grant.
    Introspected {
        active: bool,
        refresh: Option<(Uuid, Uuid, OAuthGrant, OffsetDateTime)>,
    },
    Consents(Vec<ConsentView>),
}

/// Why an OAuth request was refused, in RFC 6749 terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OAuthFailure {
    /// Unknown client, wrong or missing secret, a method it is not registered for.
    InvalidClient,
    /// A code or refresh token that is unknown, expired, used, or not this client's; a
    /// redirect URI or verifier that does not match.
    InvalidGrant,
    InvalidScope,
    /// RFC 8707: the resource asked for is not one the grant covers.
    InvalidTarget,
    /// Consent is needed and `prompt=none` forbids asking.
    ConsentRequired,
    /// The consent decision does not match what was shown.
    InvalidRequest,
    /// The client is not allowed this (a public client at introspection).
    UnauthorizedClient,
}

impl OAuthFailure {
    pub fn code(self) -> &'static str {
        match self {
            OAuthFailure::InvalidClient => "invalid_client",
            OAuthFailure::InvalidGrant => "invalid_grant",
            OAuthFailure::InvalidScope => "invalid_scope",
            OAuthFailure::InvalidTarget => "invalid_target",
            OAuthFailure::ConsentRequired => "consent_required",
            OAuthFailure::InvalidRequest => "invalid_request",
            OAuthFailure::UnauthorizedClient => "unauthorized_client",
        }
    }
}

pub use super::challenges::s256;

/// A verifier as RFC 7636 4.1 shapes it: 43 to 128 unreserved characters.
pub fn verifier_ok(v: &str) -> bool {
    (43..=128).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

fn sorted_union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = a.iter().chain(b).cloned().collect();
    out.sort();
    out.dedup();
    out
}

fn fail(f: OAuthFailure) -> TenantError {
    TenantError::OAuth(f)
}

impl TenantState {
    /// The user's live first-party session behind `bearer`, for authorize and consent.
    fn oauth_signed_in(
        &self,
        bearer: Bearer,
        now: OffsetDateTime,
    ) -> Result<Option<(SessionRecord, UserRecord)>, TenantError> {
        match self.live_session(bearer, now) {
            Ok((s, u)) if !u.suspended() => Ok(Some((s, u))),
            Ok(_) | Err(TenantError::InvalidSession) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn commitment(&self, request: &AuthzRequest, user: Uuid) -> String {
        URL_SAFE_NO_PAD.encode(self.cx.oauth_hasher.hash(&request.canonical(user)))
    }

    fn consent_of(
        &self,
        user: Uuid,
        client_id: &str,
    ) -> Result<Option<ConsentRecord>, TenantError> {
        Ok(self
            .cx
            .store
            .get::<ConsentRecord>(&consent_key(user, client_id))?)
    }

    /// A new code for `request`, written into `batch`.
    fn issue_code(
        &self,
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
                + Duration::try_from(self.cx.runtime.tokens.code_ttl)
                    .map_err(|e| TenantError::Internal(e.to_string()))?,
            exchanged: None,
            sign_in_session: Some(session.id),
        };
        batch.put(&sha256(code.as_bytes()), &record)?;
        Ok(code)
    }

    /// The authorize decision for a signed-in user (the edge checked the request's shape and
    /// the client's redirect URI and scopes).
    pub fn oauth_authorize(
        &mut self,
        bearer: Bearer,
        request: &AuthzRequest,
        max_age: Option<u64>,
        (force_consent, no_prompt): (bool, bool),
    ) -> Result<(AuthorizeOutcome, bool), TenantError> {
        let now = OffsetDateTime::now_utc();
        let Some((session, user)) = self.oauth_signed_in(bearer, now)? else {
            return Ok((AuthorizeOutcome::LoginRequired, false));
        };
        if let Some(max) = max_age {
            let age = (now - session.created_at).whole_seconds().max(0);
            if u64::try_from(age).unwrap_or(u64::MAX) > max {
                return Ok((AuthorizeOutcome::LoginRequired, false));
            }
        }
        // The published registry: the same records, without decoding one.
        let client = self
            .cx
            .cells
            .oauth_clients
            .load()
            .get(&request.client_id)
            .cloned()
            .ok_or(TenantError::NotFound)?;
        let consent = self.consent_of(user.id, &client.client_id)?;
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
        let covered = client.first_party || (new_scopes.is_empty() && new_resources.is_empty());
        if covered && !force_consent {
            let mut fx = self.effects();
            let code = self.issue_code(
                &mut fx.batch,
                request,
                request.scopes.clone(),
                &session,
                now,
            )?;
            self.commit(fx)?;
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
            commitment: self.commitment(request, user.id),
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
        bearer: Bearer,
        request: &AuthzRequest,
        commitment: &str,
        decision: ConsentDecision,
        ctx: &AuditContext,
    ) -> Result<Option<String>, TenantError> {
        let now = OffsetDateTime::now_utc();
        let (session, user) = self
            .oauth_signed_in(bearer, now)?
            .ok_or(TenantError::InvalidSession)?;
        let expected = self.commitment(request, user.id);
        if !ct_eq(expected.as_bytes(), commitment.as_bytes()) {
            return Err(fail(OAuthFailure::InvalidRequest));
        }
        let client = self.oauth_client(&request.client_id)?;
        let mut fx = self.effects();
        let approved = match decision {
            ConsentDecision::Deny => {
                self.audit_into(
                    &mut fx.batch,
                    "oauth.consent.denied",
                    ctx,
                    serde_json::json!({
                        "user_id": user.id,
                        "client_id": client.client_id,
                        "scopes": request.scopes,
                    }),
                )?;
                self.commit(fx)?;
                return Ok(None);
            }
            ConsentDecision::Approve(approved) => approved,
        };
        may_add(&user, Credential::OAuthConsents)?;
        if approved.iter().any(|s| !request.scopes.contains(s)) {
            return Err(fail(OAuthFailure::InvalidScope));
        }
        // In the order asked.
        let scopes: Vec<String> = request
            .scopes
            .iter()
            .filter(|s| approved.contains(s))
            .cloned()
            .collect();
        let key = consent_key(user.id, &client.client_id);
        let mut record = self
            .cx
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
        let code = self.issue_code(&mut fx.batch, request, scopes.clone(), &session, now)?;
        self.audit_into(
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
        self.commit(fx)?;
        Ok(Some(code))
    }

    /// The token endpoint: a code exchanged for a new grant, or a grant's refresh token
    /// rotated.
    pub fn oauth_token(
        &mut self,
        client: &OAuthClientRecord,
        grant: TokenGrant,
        ctx: &AuditContext,
    ) -> Result<OAuthIssued, TenantError> {
        // Deleted (or re-keyed) since the edge read it: no more tokens. The actor publishes
        // every change before it answers, so its cell is the registry.
        let current = self.cx.cells.oauth_clients.load();
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
            } => self.oauth_exchange(&client, &code, &redirect_uri, &code_verifier, ctx),
            TokenGrant::RefreshToken {
                refresh_token,
                scopes,
            } => {
                let grant = self.rotate(&refresh_token, Some(&client.client_id), ctx)?;
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
                    .filter(|s| client.allowed_scopes.contains(s))
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
        client: &OAuthClientRecord,
        code: &str,
        redirect_uri: &str,
        verifier: &str,
        ctx: &AuditContext,
    ) -> Result<OAuthIssued, TenantError> {
        let now = OffsetDateTime::now_utc();
        let key = sha256(code.as_bytes());
        let Some(mut record) = self.cx.store.get::<AuthCodeRecord>(&key)? else {
            return Err(fail(OAuthFailure::InvalidGrant));
        };
        if record.client_id != client.client_id {
            return Err(fail(OAuthFailure::InvalidGrant));
        }
        let mut fx = self.effects();
        if let Some(done) = &record.exchanged {
            // A second use: whatever the first one issued is revoked.
            if let Some(session) = self.cx.store.get::<SessionRecord>(done.grant.as_bytes())? {
                self.remove_session(&mut fx.batch, &session);
            }
            self.audit_into(
                &mut fx.batch,
                "oauth.code.reused",
                ctx,
                serde_json::json!({
                    "user_id": record.user_id,
                    "client_id": record.client_id,
                    "grant_id": done.grant,
                }),
            )?;
            tracing::warn!(tenant = %self.cx.info.id, client = %record.client_id, "authorization code reused; its grant is revoked");
            return self.fail(fx, fail(OAuthFailure::InvalidGrant));
        }
        if record.expires_at <= now
            || record.redirect_uri != redirect_uri
            || !verifier_ok(verifier)
            || !ct_eq(s256(verifier).as_bytes(), record.code_challenge.as_bytes())
        {
            // A code is good for one try: a wrong verifier or redirect URI burns it.
            fx.batch.remove(Kind::OAuthCode, &key);
            return self.fail(fx, fail(OAuthFailure::InvalidGrant));
        }
        let Some(mut user) = self.user(record.user_id)?.filter(|u| !u.suspended()) else {
            fx.batch.remove(Kind::OAuthCode, &key);
            return self.fail(fx, fail(OAuthFailure::InvalidGrant));
        };
        // Consent withdrawn since the code was issued: the code is void.
        if !client.first_party {
            let consent = self.consent_of(user.id, &client.client_id)?;
            let granted = consent
                .as_ref()
                .map_or(&[][..], |c| c.scopes_for(record.resource.as_deref()));
            if record.scopes.iter().any(|s| !granted.contains(s)) {
                fx.batch.remove(Kind::OAuthCode, &key);
                return self.fail(fx, fail(OAuthFailure::InvalidGrant));
            }
        }
        let oauth = OAuthGrant {
            client_id: client.client_id.clone(),
            scopes: record.scopes.clone(),
            resource: record.resource.clone(),
            auth_time: record.auth_time,
            sign_in_session: record.sign_in_session,
        };
        self.count_active(&mut fx.batch, Some(user.last_active_at), now)?;
        user.last_active_at = now;
        fx.batch.put(user.id.as_bytes(), &user)?;
        let grant = self.open_session_with(
            &mut fx.batch,
            &user,
            (record.aal, record.amr.clone()),
            Some(oauth.clone()),
            ctx,
            now,
        )?;
        record.exchanged = Some(ExchangedCode {
            at: now,
            grant: grant.session_id,
        });
        fx.batch.put(&key, &record)?;
        self.commit(fx)?;
        Ok(OAuthIssued {
            grant,
            scopes: oauth.scopes.clone(),
            id_token: oauth.has_scope("openid"),
            oauth,
            nonce: record.nonce,
        })
    }

    /// The live grant behind an OAuth access token of `client_id`, and its user. A deleted
    /// client's grants are dead.
    pub(super) fn live_grant(
        &self,
        bearer: Bearer,
        client_id: &str,
        now: OffsetDateTime,
    ) -> Result<(SessionRecord, UserRecord), TenantError> {
        if self.cx.cells.oauth_clients.load().get(client_id).is_none() {
            return Err(TenantError::InvalidSession);
        }
        let session = self
            .cx
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

    /// The session a refresh token names while that token is its current one.
    fn current_refresh(&self, token: &str, now: OffsetDateTime) -> Option<SessionRecord> {
        let (session, generation) = self.refresh_token_session(token)?;
        self.cx
            .store
            .get::<SessionRecord>(session.as_bytes())
            .ok()
            .flatten()
            .filter(|s| s.generation == generation && s.expires_at > now)
    }

    fn oauth_revoke(
        &mut self,
        client: &OAuthClientRecord,
        token: PresentedToken,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        let now = OffsetDateTime::now_utc();
        let session = match token {
            PresentedToken::Access {
                bearer,
                client_id: Some(c),
            } if c == client.client_id => self.live_grant(bearer, &c, now).ok().map(|(s, _)| s),
            PresentedToken::Refresh(t) => self.current_refresh(&t, now).filter(|s| {
                s.oauth
                    .as_ref()
                    .is_some_and(|o| o.client_id == client.client_id)
            }),
            // Another client's token, a first-party one, or none: nothing this client may end
            // (RFC 7009 answers 200 all the same).
            _ => None,
        };
        let Some(session) = session else {
            return Ok(());
        };
        let mut fx = self.effects();
        self.remove_session(&mut fx.batch, &session);
        self.audit_into(
            &mut fx.batch,
            "oauth.token.revoked",
            ctx,
            serde_json::json!({
                "user_id": session.user_id,
                "client_id": client.client_id,
                "grant_id": session.id,
            }),
        )?;
        self.commit(fx)?;
        Ok(())
    }

    fn oauth_introspect(
        &self,
        client: &OAuthClientRecord,
        token: PresentedToken,
    ) -> Result<OAuthAnswer, TenantError> {
        if client.client_type != ClientType::Confidential {
            return Err(fail(OAuthFailure::UnauthorizedClient));
        }
        let now = OffsetDateTime::now_utc();
        let inactive = OAuthAnswer::Introspected {
            active: false,
            refresh: None,
        };
        match token {
            PresentedToken::Access { bearer, client_id } => {
                let active = match client_id {
                    Some(c) => self.live_grant(bearer, &c, now).is_ok(),
                    None => self
                        .live_session(bearer, now)
                        .is_ok_and(|(_, u)| !u.suspended()),
                };
                Ok(OAuthAnswer::Introspected {
                    active,
                    refresh: None,
                })
            }
            // A refresh token only to the client holding it.
            PresentedToken::Refresh(t) => {
                let Some(session) = self.current_refresh(&t, now) else {
                    return Ok(inactive);
                };
                let Some(oauth) = session
                    .oauth
                    .clone()
                    .filter(|o| o.client_id == client.client_id)
                else {
                    return Ok(inactive);
                };
                let alive = self.user(session.user_id)?.is_some_and(|u| !u.suspended());
                Ok(OAuthAnswer::Introspected {
                    active: alive,
                    refresh: alive.then_some((
                        session.id,
                        session.user_id,
                        oauth,
                        session.expires_at,
                    )),
                })
            }
            PresentedToken::Unknown => Ok(inactive),
        }
    }

    /// The consents `user` has given, as stored.
    pub(super) fn consent_records(&self, user: Uuid) -> Result<Vec<ConsentRecord>, TenantError> {
        let mut out = Vec::new();
        for item in self.cx.store.scan::<ConsentRecord>(user.as_bytes()) {
            out.push(item?.1);
        }
        Ok(out)
    }

    /// The user's consents, newest change first.
    fn oauth_consents(&self, bearer: Bearer) -> Result<Vec<ConsentView>, TenantError> {
        let (_, user) = self.live_session(bearer, OffsetDateTime::now_utc())?;
        let mut out = Vec::new();
        for item in self.cx.store.scan::<ConsentRecord>(user.id.as_bytes()) {
            let (_, c) = item?;
            let client_name = self
                .cx
                .store
                .get::<OAuthClientRecord>(c.client_id.as_bytes())?
                .map(|r| r.name);
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
        batch: &mut TenantBatch,
        user: Uuid,
        client_id: &str,
    ) -> Result<usize, TenantError> {
        let mut n = 0;
        for item in self.cx.store.scan::<UserSessionIndex>(user.as_bytes()) {
            let (key, _) = item?;
            let Ok(sid) = Uuid::from_slice(&key[16..]) else {
                continue;
            };
            let Some(s) = self.cx.store.get::<SessionRecord>(sid.as_bytes())? else {
                continue;
            };
            if s.oauth.as_ref().is_some_and(|o| o.client_id == client_id) {
                self.remove_session(batch, &s);
                n += 1;
            }
        }
        Ok(n)
    }

    /// Withdraws the user's consent to `client_id` (GDPR art. 7(3)) and ends that client's
    /// grants.
    fn oauth_withdraw(
        &mut self,
        bearer: Bearer,
        client_id: &str,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        let (_, user) = self.live_session(bearer, OffsetDateTime::now_utc())?;
        let key = consent_key(user.id, client_id);
        if self.cx.store.get::<ConsentRecord>(&key)?.is_none() {
            return Err(TenantError::NotFound);
        }
        let mut fx = self.effects();
        fx.batch.remove(Kind::OAuthConsent, &key);
        let ended = self.end_grants(&mut fx.batch, user.id, client_id)?;
        self.audit_into(
            &mut fx.batch,
            "oauth.consent.withdrawn",
            ctx,
            serde_json::json!({
                "user_id": user.id,
                "client_id": client_id,
                "grants_ended": ended,
            }),
        )?;
        self.commit(fx)?;
        Ok(())
    }

    /// Ends the first-party sign-in sessions of `sessions` that are still their users'
    /// (RP-initiated logout), in one batch; answers whether there was one to end.
    fn oauth_end_session(
        &mut self,
        sessions: &[Bearer],
        client_id: Option<&str>,
        ctx: &AuditContext,
    ) -> Result<bool, TenantError> {
        let mut live = Vec::new();
        for b in sessions {
            if live.iter().any(|s: &SessionRecord| s.id == b.session_id) {
                continue;
            }
            if let Some(s) = self
                .cx
                .store
                .get::<SessionRecord>(b.session_id.as_bytes())?
                .filter(|s| s.user_id == b.user_id && s.oauth.is_none())
            {
                live.push(s);
            }
        }
        if live.is_empty() {
            return Ok(false);
        }
        let mut fx = self.effects();
        for s in &live {
            self.remove_session(&mut fx.batch, s);
            self.audit_into(
                &mut fx.batch,
                "auth.logout",
                ctx,
                serde_json::json!({
                    "user_id": s.user_id,
                    "session_id": s.id,
                    "scope": "rp_initiated",
                    "client_id": client_id,
                }),
            )?;
        }
        self.commit(fx)?;
        Ok(true)
    }

    /// The keys of `user`'s consents to agents (`agents` true) or to OAuth clients.
    pub(super) fn consent_keys(
        &self,
        user: Uuid,
        agents: bool,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for item in self.cx.store.scan::<ConsentRecord>(user.as_bytes()) {
            let (key, c) = item?;
            if is_agent_client(&c.client_id) == agents {
                out.push((Kind::OAuthConsent, key));
            }
        }
        Ok(out)
    }

    /// The keys of the authorization codes issued to any of `users` (redeemed ones too: the
    /// record of a redeemed code watches for a second use of it, which a gone record cannot
    /// show, but the grant it opened goes with the user's grants).
    pub(super) fn code_keys(
        &self,
        users: &std::collections::HashSet<Uuid>,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        self.keys_where::<AuthCodeRecord>(|c| users.contains(&c.user_id))
    }

    /// Removes codes past their reuse watch (at most `limit`); answers how many.
    pub(super) fn sweep_oauth_codes(
        &self,
        batch: &mut TenantBatch,
        now: OffsetDateTime,
        limit: usize,
    ) -> Result<usize, TenantError> {
        let mut n = 0;
        for item in self.cx.store.scan::<AuthCodeRecord>(b"") {
            if n == limit {
                break;
            }
            let (key, record) = item?;
            if record.expires_at + CODE_REUSE_WATCH <= now {
                batch.remove(Kind::OAuthCode, &key);
                n += 1;
            }
        }
        Ok(n)
    }

    /// Carries out one command; answers whether it wrote anything (so the reply waits for
    /// the disk).
    pub fn oauth_cmd(
        &mut self,
        cmd: OAuthCmd,
        ctx: &AuditContext,
    ) -> Result<(OAuthAnswer, bool), TenantError> {
        Ok(match cmd {
            OAuthCmd::Authorize {
                bearer,
                request,
                max_age,
                force_consent,
                no_prompt,
            } => {
                let (outcome, wrote) =
                    self.oauth_authorize(bearer, &request, max_age, (force_consent, no_prompt))?;
                (OAuthAnswer::Authorize(outcome), wrote)
            }
            OAuthCmd::Consent {
                bearer,
                request,
                commitment,
                decision,
            } => (
                OAuthAnswer::Decided(self.oauth_consent(
                    bearer,
                    &request,
                    &commitment,
                    decision,
                    ctx,
                )?),
                true,
            ),
            OAuthCmd::Token { client, grant } => (
                OAuthAnswer::Issued(Box::new(self.oauth_token(&client, grant, ctx)?)),
                true,
            ),
            OAuthCmd::UserInfo { bearer, client_id } => {
                let (_, user) = self.live_grant(bearer, &client_id, OffsetDateTime::now_utc())?;
                (OAuthAnswer::User(user.view()), false)
            }
            OAuthCmd::Revoke { client, token } => {
                self.oauth_revoke(&client, token, ctx)?;
                (OAuthAnswer::Done, true)
            }
            OAuthCmd::Introspect { client, token } => {
                (self.oauth_introspect(&client, token)?, false)
            }
            OAuthCmd::Consents { bearer } => {
                (OAuthAnswer::Consents(self.oauth_consents(bearer)?), false)
            }
            OAuthCmd::EndSession {
                sessions,
                client_id,
            } => (
                OAuthAnswer::Done,
                self.oauth_end_session(&sessions, client_id.as_deref(), ctx)?,
            ),
            OAuthCmd::Withdraw { bearer, client_id } => {
                self.oauth_withdraw(bearer, &client_id, ctx)?;
                (OAuthAnswer::Done, true)
            }
        })
    }
}

#[cfg(test)]
mod tests;
