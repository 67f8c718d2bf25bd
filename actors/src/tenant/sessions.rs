//! Sessions and refresh-token rotation.
//!
//! A refresh token is `base64url(session id | generation | tag)`, where the tag is an HMAC
//! (keyed from the master key) of the tenant, the session and the generation. Nothing about a
//! refresh token is stored: the session keeps only its current generation. So a token of any
//! past generation is recognised as *reused* (never mistaken for a forgery, which would let
//! anyone who saw a session id revoke it), and the grace answer for a concurrent retry can hand
//! out the current token again instead of forking the family.
//!
//! Every sign-in method ends in [`TenantCtx::sign_in`] with what it proved: the tenant's
//! MFA policy and a second step when one is due, else the month's active count, the user's
//! last sign-in, the session and the `auth.login.succeeded` event, all in the method's batch.
//!
//! Invariant: a session record exists exactly while the session is alive; revoking deletes it
//! and its index entry in one batch, so every later check fails.

pub mod msg;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use tessera_storage::{ct_eq, Kind, TenantBatch};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    audit::AuditContext,
    challenges::OAuthResume,
    effects::Effects,
    messages::{Bearer, Grant, LoginOutcome, PasswordlessLogin, SessionFacts, SessionView, User},
    oauth::OAuthGrant,
    records::{user_session_key, SessionRecord, UserRecord, UserSessionIndex},
    settings::Enrollment,
    webhooks::Revoked,
};
use crate::tenant::ctx::TenantCtx;
use crate::{error::TenantError, outbound::MailJob};

/// The sessions flow (refresh, sign-out): it keeps nothing in memory and works on the context.
#[derive(Default)]
pub struct Sessions;

const TOKEN_LEN: usize = 16 + 4 + 32;

/// The parts of a refresh token.
struct RefreshParts {
    session: Uuid,
    generation: u32,
    tag: [u8; 32],
}

fn parse_refresh(token: &str) -> Option<RefreshParts> {
    if token.len() > 128 {
        return None;
    }
    let raw = URL_SAFE_NO_PAD.decode(token.trim()).ok()?;
    if raw.len() != TOKEN_LEN {
        return None;
    }
    let session = Uuid::from_slice(&raw[..16]).ok()?;
    let generation = u32::from_be_bytes(raw[16..20].try_into().ok()?);
    let tag = raw[20..].try_into().ok()?;
    Some(RefreshParts {
        session,
        generation,
        tag,
    })
}

/// What a sign-in method proved: what the session records and the audit event says.
pub(super) struct Proof {
    /// RFC 8176 method references, in the order proved (the session's `amr`); the first is
    /// the first factor.
    pub amr: Vec<String>,
    /// 1, or 2 once a second factor is through.
    pub aal: u8,
    /// What `auth.login.succeeded` records besides the user and the session (`method`, and
    /// `second_factor` after MFA).
    pub audit: serde_json::Map<String, serde_json::Value>,
    /// The OAuth flow the sign-in resumes (its binding already checked by the method).
    pub oauth: Option<OAuthResume>,
    /// The `acr` the session's tokens carry when it is not the AAL's (`eidas_*` for wallet
    /// sign-ins).
    pub acr: Option<super::eudi::Eidas>,
    /// The known device a password sign-in presented (see `devices`): an MFA step after it
    /// is held to the device's count, not the account's.
    pub device: Option<Uuid>,
    /// A single sign-on: the organization the session works in and the connection it came
    /// through.
    pub sso: Option<(Uuid, Uuid)>,
}

impl Proof {
    /// A first factor alone (AAL1): `amr` as RFC 8176 names it, `method` as the audit log does.
    pub fn first_factor(amr: &str, method: &str) -> Self {
        let mut audit = serde_json::Map::new();
        audit.insert("method".into(), method.into());
        Proof {
            amr: vec![amr.to_owned()],
            aal: 1,
            audit,
            oauth: None,
            acr: None,
            device: None,
            sso: None,
        }
    }
}

impl Sessions {
    pub fn authenticate(&self, cx: &TenantCtx, bearer: Bearer) -> Result<User, TenantError> {
        let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
        Ok(user.view())
    }

    /// Rotates a first-party session's refresh token (see [`TenantCtx::rotate`]).
    pub fn refresh(
        &mut self,
        cx: &mut TenantCtx,
        token: &str,
        ctx: &AuditContext,
    ) -> Result<(Grant, Vec<MailJob>), TenantError> {
        Ok((cx.rotate(token, None, ctx)?, Vec::new()))
    }

    /// Ends the caller's session, or (`global`) every session of the user.
    pub fn logout(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        global: bool,
        ctx: &AuditContext,
    ) -> Result<Vec<MailJob>, TenantError> {
        let (session, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
        let mut fx = cx.effects();
        if global {
            cx.revoke_user_sessions(&mut fx.batch, user.id, None)?;
            cx.emit_session_revoked(&mut fx.batch, user.id, Revoked::All, "logout")?;
        } else {
            cx.remove_session(&mut fx.batch, &session);
            cx.emit_session_revoked(&mut fx.batch, user.id, Revoked::One(session.id), "logout")?;
        }
        cx.audit_into(
            &mut fx.batch,
            "auth.logout",
            ctx,
            serde_json::json!({
                "user_id": user.id,
                "session_id": session.id,
                "scope": if global { "global" } else { "local" },
            }),
        )?;
        cx.commit(fx)
    }

    /// The user's live sessions, newest first.
    pub fn list_sessions(
        &self,
        cx: &TenantCtx,
        bearer: Bearer,
    ) -> Result<Vec<SessionView>, TenantError> {
        let now = OffsetDateTime::now_utc();
        let (_, user) = cx.live_session(bearer, now)?;
        let mut out = Vec::new();
        for item in cx.session_index(user.id) {
            let (_, sid) = item?;
            let Some(s) = cx.store.get::<SessionRecord>(sid.as_bytes())? else {
                continue;
            };
            if s.expires_at <= now || s.oauth.is_some() {
                continue;
            }
            out.push(SessionView {
                session: SessionFacts::of(&s),
                current: s.id == bearer.session_id,
            });
        }
        out.reverse();
        Ok(out)
    }

    /// Ends one of the caller's own sessions; any other id is `NotFound`.
    pub fn revoke_session(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        target: Uuid,
        ctx: &AuditContext,
    ) -> Result<Vec<MailJob>, TenantError> {
        let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
        let session = cx
            .store
            .get::<SessionRecord>(target.as_bytes())?
            .filter(|s| s.user_id == user.id && s.oauth.is_none())
            .ok_or(TenantError::NotFound)?;
        let mut fx = cx.effects();
        cx.remove_session(&mut fx.batch, &session);
        cx.emit_session_revoked(
            &mut fx.batch,
            user.id,
            Revoked::One(session.id),
            "user_revoked",
        )?;
        cx.audit_into(
            &mut fx.batch,
            "auth.session.revoked",
            ctx,
            serde_json::json!({ "user_id": user.id, "session_id": session.id }),
        )?;
        cx.commit(fx)
    }
}

// The kernel's sign-in: where every sign-in method ends (`sign_in`, `signed_in`), and the
// sessions every flow opens, reads and ends.
impl TenantCtx {
    /// Signs `user` in after a first factor: the second step (an MFA challenge, which carries
    /// the OAuth flow to resume, or the enrolment an overdue policy demands) when one is due,
    /// else the session (see [`Self::signed_in`]), with the enrolment deadline of a user in
    /// the policy's grace period and the OAuth flow it resumes.
    pub(super) fn sign_in(
        &mut self,
        fx: &mut Effects,
        user: &mut UserRecord,
        mut proof: Proof,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<PasswordlessLogin, TenantError> {
        if user.blocked_at.is_some() {
            return Err(TenantError::UserBlocked);
        }
        user.guardian_gate()?;
        self.sso_only_gate(user, &proof)?;
        let first = proof.amr.first().map_or("pwd", String::as_str);
        let oauth = proof.oauth.take();
        let second = (first, oauth.clone(), proof.device, proof.sso);
        if let Some(outcome) = self.login_second_step(fx, user, second, now)? {
            return Ok(PasswordlessLogin {
                outcome,
                oauth: None,
            });
        }
        let enrollment_required_by = match self.enrollment_of(user) {
            Enrollment::Grace(deadline) => Some(deadline),
            _ => None,
        };
        let grant = self.signed_in(fx, user, proof, ctx, now)?;
        Ok(PasswordlessLogin {
            outcome: LoginOutcome::Signed {
                grant,
                enrollment_required_by,
            },
            oauth: oauth.map(|o| o.params),
        })
    }

    /// The session of a user whose sign-in is complete: counted in the month's active users,
    /// `last_sign_in_at` set, the session opened and `auth.login.succeeded` written.
    pub(super) fn signed_in(
        &mut self,
        fx: &mut Effects,
        user: &mut UserRecord,
        proof: Proof,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<Grant, TenantError> {
        if user.blocked_at.is_some() {
            return Err(TenantError::UserBlocked);
        }
        user.guardian_gate()?;
        self.sso_only_gate(user, &proof)?;
        self.count_active(&mut fx.batch, Some(user.last_active_at), now)?;
        user.last_sign_in_at = Some(now);
        user.last_active_at = now;
        fx.batch.put(user.id.as_bytes(), &*user)?;
        let grant = self.open_session_full(
            &mut fx.batch,
            user,
            (proof.aal, proof.amr, proof.acr),
            (None, proof.sso),
            ctx,
            now,
        )?;
        self.join_by_domain(&mut fx.batch, user, ctx)?;
        let mut metadata = serde_json::Map::new();
        metadata.insert("user_id".into(), serde_json::json!(user.id));
        metadata.insert("session_id".into(), serde_json::json!(grant.session_id));
        metadata.extend(proof.audit);
        self.audit_into(
            &mut fx.batch,
            "auth.login.succeeded",
            ctx,
            serde_json::Value::Object(metadata),
        )?;
        Ok(grant)
    }

    /// Every way in but single sign-on refuses an account whose address is at a domain that
    /// signs in only through its organization's (passkeys, social providers, wallets, links
    /// and codes consumed after the domain became SSO-only, as well as passwords).
    fn sso_only_gate(&self, user: &UserRecord, proof: &Proof) -> Result<(), TenantError> {
        let by_sso = proof
            .sso
            .is_some_and(|(_, connection)| !connection.is_nil());
        match user.email.as_deref() {
            Some(email) if !by_sso => self.sso_gate(email),
            _ => Ok(()),
        }
    }

    fn refresh_tag(&self, session: Uuid, generation: u32) -> [u8; 32] {
        let mut m = self.store.tenant_id().as_bytes().to_vec();
        m.extend_from_slice(session.as_bytes());
        m.extend_from_slice(&generation.to_be_bytes());
        self.refresh_hasher.hash(&m)
    }

    fn refresh_token(&self, session: Uuid, generation: u32) -> String {
        let mut raw = Vec::with_capacity(TOKEN_LEN);
        raw.extend_from_slice(session.as_bytes());
        raw.extend_from_slice(&generation.to_be_bytes());
        raw.extend_from_slice(&self.refresh_tag(session, generation));
        URL_SAFE_NO_PAD.encode(raw)
    }

    /// What a session's token pair says: its refresh token and the claims of its access
    /// token (the organization's read from the membership now).
    pub(super) fn grant(
        &self,
        session: &SessionRecord,
        user: &UserRecord,
    ) -> Result<Grant, TenantError> {
        Ok(Grant {
            user: user.view(),
            app_metadata: user.app_metadata.clone(),
            session_id: session.id,
            refresh_token: self.refresh_token(session.id, session.generation),
            session_expires_at: session.expires_at,
            aal: session.aal,
            amr: session.amr.clone(),
            acr: session.acr,
            oauth: session.oauth.clone(),
            org: self.session_claim(session)?,
        })
    }

    /// Opens a session for `user` (writes into `batch`).
    pub(super) fn open_session(
        &self,
        batch: &mut TenantBatch,
        user: &UserRecord,
        proved: (u8, Vec<String>),
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<Grant, TenantError> {
        self.open_session_with(batch, user, proved, None, ctx, now)
    }

    /// Opens a session for `user`, or with `oauth` a client's grant (writes into `batch`).
    pub(super) fn open_session_with(
        &self,
        batch: &mut TenantBatch,
        user: &UserRecord,
        (aal, amr): (u8, Vec<String>),
        oauth: Option<OAuthGrant>,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<Grant, TenantError> {
        self.open_session_full(batch, user, (aal, amr, None), (oauth, None), ctx, now)
    }

    /// Opens a client's grant, working in `org` when the authorization named one.
    pub(super) fn open_grant(
        &self,
        batch: &mut TenantBatch,
        user: &UserRecord,
        (aal, amr): (u8, Vec<String>),
        (oauth, org): (OAuthGrant, Option<Uuid>),
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<Grant, TenantError> {
        let org = org.map(|o| (o, Uuid::nil()));
        self.open_session_full(batch, user, (aal, amr, None), (Some(oauth), org), ctx, now)
    }

    /// Opens a session with what was proved: its AAL, `amr` and, when not the AAL's, `acr`.
    fn open_session_full(
        &self,
        batch: &mut TenantBatch,
        user: &UserRecord,
        (aal, amr, acr): (u8, Vec<String>, Option<super::eudi::Eidas>),
        (oauth, sso): (Option<OAuthGrant>, Option<(Uuid, Uuid)>),
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<Grant, TenantError> {
        let ttl = time::Duration::try_from(self.runtime.tokens.refresh_ttl)
            .map_err(|e| TenantError::Internal(e.to_string()))?;
        let session = SessionRecord {
            id: Uuid::now_v7(),
            user_id: user.id,
            created_at: now,
            expires_at: now + ttl,
            last_active_at: now,
            generation: 0,
            rotated_at: None,
            aal,
            amr,
            acr,
            ua_family: ctx.ua_family.clone(),
            ip_hash: ctx.ip_hash.clone(),
            oauth,
            org: sso.map(|(org, _)| org),
            connection: sso.map(|(_, c)| c).filter(|c| !c.is_nil()),
        };
        batch.put(session.id.as_bytes(), &session)?;
        batch.put(
            &user_session_key(user.id, session.id),
            &UserSessionIndex::default(),
        )?;
        self.grant(&session, user)
    }

    /// `user`'s session index, walked as it is read: each entry's key and the session id it
    /// names (an entry that names none is passed over).
    pub(super) fn session_index(
        &self,
        user: Uuid,
    ) -> impl Iterator<Item = Result<(Vec<u8>, Uuid), TenantError>> + '_ {
        self.store
            .scan::<UserSessionIndex>(user.as_bytes())
            .filter_map(|item| match item {
                Ok((key, _)) => key
                    .get(16..)
                    .and_then(|b| Uuid::from_slice(b).ok())
                    .map(|sid| Ok((key, sid))),
                Err(e) => Some(Err(e.into())),
            })
    }

    pub(super) fn remove_session(&self, batch: &mut TenantBatch, session: &SessionRecord) {
        batch.remove(Kind::Session, session.id.as_bytes());
        batch.remove(
            Kind::UserSession,
            &user_session_key(session.user_id, session.id),
        );
    }

    /// The records of `user`'s first-party sessions (`grants` false) or of clients' grants
    /// (`grants` true): each session and its index entry. An index entry whose session is
    /// gone counts as a first-party session's.
    pub(super) fn session_records(
        &self,
        user: Uuid,
        grants: bool,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for item in self.session_index(user) {
            let (key, sid) = item?;
            let session = self.store.get::<SessionRecord>(sid.as_bytes())?;
            let is_grant = session.as_ref().is_some_and(|s| s.oauth.is_some());
            if is_grant != grants {
                continue;
            }
            if session.is_some() {
                out.push((Kind::Session, sid.as_bytes().to_vec()));
            }
            out.push((Kind::UserSession, key));
        }
        Ok(out)
    }

    /// Ends every session of `user` except `keep`.
    pub(super) fn revoke_user_sessions(
        &self,
        batch: &mut TenantBatch,
        user: Uuid,
        keep: Option<Uuid>,
    ) -> Result<usize, TenantError> {
        let mut n = 0;
        for item in self.session_index(user) {
            let (key, sid) = item?;
            if Some(sid) == keep {
                continue;
            }
            batch.remove(Kind::Session, sid.as_bytes());
            batch.remove(Kind::UserSession, &key);
            n += 1;
        }
        Ok(n)
    }

    /// The session and user behind a verified access token, if the session is still alive,
    /// belongs to that user and is a first-party session (a client's grant is not).
    pub(super) fn live_session(
        &self,
        bearer: Bearer,
        now: OffsetDateTime,
    ) -> Result<(SessionRecord, UserRecord), TenantError> {
        let session = self
            .store
            .get::<SessionRecord>(bearer.session_id.as_bytes())?
            .filter(|s| s.user_id == bearer.user_id && s.expires_at > now && s.oauth.is_none())
            .ok_or(TenantError::InvalidSession)?;
        let user = self
            .user(session.user_id)?
            .ok_or(TenantError::InvalidSession)?;
        Ok((session, user))
    }

    /// The session and generation a refresh token names, if its tag is this tenant's.
    pub(super) fn refresh_token_session(&self, token: &str) -> Option<(Uuid, u32)> {
        let parts = parse_refresh(token)?;
        let expected = self.refresh_tag(parts.session, parts.generation);
        ct_eq(&expected, &parts.tag).then_some((parts.session, parts.generation))
    }

    /// Rotates a refresh token of a first-party session (`client` none) or of a client's
    /// grant. The current generation moves on; the previous one, presented again within the
    /// grace, answers the current token (a client retrying a lost answer, or two tabs
    /// racing); any other past generation is reuse and ends the session. A token of the other
    /// kind, or of another client, is invalid and changes nothing.
    pub(super) fn rotate(
        &mut self,
        token: &str,
        client: Option<&str>,
        ctx: &AuditContext,
    ) -> Result<Grant, TenantError> {
        let now = OffsetDateTime::now_utc();
        let (session_id, generation) = self
            .refresh_token_session(token)
            .ok_or(TenantError::InvalidRefreshToken)?;
        let mut fx: Effects = self.effects();
        let Some(mut session) = self
            .store
            .get::<SessionRecord>(session_id.as_bytes())?
            .filter(|s| s.oauth.as_ref().map(|o| o.client_id.as_str()) == client)
        else {
            return Err(TenantError::InvalidRefreshToken);
        };
        let user = self.user(session.user_id)?;
        let alive = session.expires_at > now;
        let Some(mut user) = user.filter(|u| alive && !u.suspended()) else {
            self.remove_session(&mut fx.batch, &session);
            return self.fail(fx, TenantError::InvalidRefreshToken);
        };
        let grace = time::Duration::try_from(self.runtime.tokens.reuse_grace)
            .unwrap_or(time::Duration::ZERO);
        if generation == session.generation {
            session.generation = session.generation.wrapping_add(1);
            session.rotated_at = Some(now);
            session.last_active_at = now;
            fx.batch.put(session.id.as_bytes(), &session)?;
            self.count_active(&mut fx.batch, Some(user.last_active_at), now)?;
            user.last_active_at = now;
            fx.batch.put(user.id.as_bytes(), &user)?;
            self.commit(fx)?;
            return self.grant(&session, &user);
        }
        let within_grace = generation.wrapping_add(1) == session.generation
            && session.rotated_at.is_some_and(|at| now - at <= grace);
        if within_grace {
            return self.grant(&session, &user);
        }
        if generation > session.generation {
            return Err(TenantError::InvalidRefreshToken);
        }
        self.remove_session(&mut fx.batch, &session);
        if client.is_none() {
            self.emit_session_revoked(
                &mut fx.batch,
                user.id,
                Revoked::One(session.id),
                "refresh_token_reused",
            )?;
        }
        self.audit_into(
            &mut fx.batch,
            "auth.refresh.reused",
            ctx,
            serde_json::json!({ "user_id": user.id, "session_id": session.id, "client_id": client }),
        )?;
        tracing::warn!(tenant = %self.info.id, session = %session.id, "refresh token reused; session revoked");
        self.fail(fx, TenantError::RefreshTokenReused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_tokens_parse_only_in_their_exact_shape() {
        let sid = Uuid::now_v7();
        let mut raw = sid.as_bytes().to_vec();
        raw.extend_from_slice(&7u32.to_be_bytes());
        raw.extend_from_slice(&[9u8; 32]);
        let token = URL_SAFE_NO_PAD.encode(&raw);
        let p = parse_refresh(&token).unwrap();
        assert_eq!((p.session, p.generation, p.tag), (sid, 7, [9u8; 32]));
        assert!(parse_refresh(&token[1..]).is_none());
        assert!(parse_refresh("not a token").is_none());
        assert!(parse_refresh(&"A".repeat(500)).is_none());
        assert!(parse_refresh("").is_none());
    }
}
