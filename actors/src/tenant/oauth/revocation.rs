//! Tokens presented back by a client: revocation (RFC 7009), introspection (RFC 7662), and
//! RP-initiated logout, which ends the sign-in sessions an ID token names.

use time::OffsetDateTime;

use super::{
    commands::{OAuthAnswer, PresentedToken},
    failure::{fail, OAuthFailure},
};
use crate::tenant::ctx::TenantCtx;
use crate::tenant::oauth::OAuth;
use crate::{
    error::TenantError,
    tenant::{
        audit::AuditContext,
        messages::Bearer,
        oauth_clients::{ClientType, OAuthClientRecord},
        records::SessionRecord,
    },
};

impl OAuth {
    pub(super) fn oauth_revoke(
        &mut self,
        cx: &mut TenantCtx,
        client: &OAuthClientRecord,
        token: PresentedToken,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        let now = OffsetDateTime::now_utc();
        let session = match token {
            PresentedToken::Access {
                bearer,
                client_id: Some(c),
            } if c == client.client_id => cx.live_grant(bearer, &c, now).ok().map(|(s, _)| s),
            PresentedToken::Refresh(t) => self.current_refresh(cx, &t, now).filter(|s| {
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
        let mut fx = cx.effects();
        cx.remove_session(&mut fx.batch, &session);
        cx.audit_into(
            &mut fx.batch,
            "oauth.token.revoked",
            ctx,
            serde_json::json!({
                "user_id": session.user_id,
                "client_id": client.client_id,
                "grant_id": session.id,
            }),
        )?;
        cx.commit(fx)?;
        Ok(())
    }

    pub(super) fn oauth_introspect(
        &self,
        cx: &TenantCtx,
        client: &OAuthClientRecord,
        token: PresentedToken,
    ) -> Result<OAuthAnswer, TenantError> {
        if client.profile.client_type != ClientType::Confidential {
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
                    Some(c) => cx.live_grant(bearer, &c, now).is_ok(),
                    None => cx
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
                let Some(session) = self.current_refresh(cx, &t, now) else {
                    return Ok(inactive);
                };
                let Some(oauth) = session
                    .oauth
                    .clone()
                    .filter(|o| o.client_id == client.client_id)
                else {
                    return Ok(inactive);
                };
                let alive = cx.user(session.user_id)?.is_some_and(|u| !u.suspended());
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

    /// Ends the first-party sign-in sessions of `sessions` that are still their users'
    /// (RP-initiated logout), in one batch; answers whether there was one to end.
    pub(super) fn oauth_end_session(
        &mut self,
        cx: &mut TenantCtx,
        sessions: &[Bearer],
        client_id: Option<&str>,
        ctx: &AuditContext,
    ) -> Result<bool, TenantError> {
        let mut live = Vec::new();
        for b in sessions {
            if live.iter().any(|s: &SessionRecord| s.id == b.session_id) {
                continue;
            }
            if let Some(s) = cx
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
        let mut fx = cx.effects();
        for s in &live {
            cx.remove_session(&mut fx.batch, s);
            cx.audit_into(
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
        cx.commit(fx)?;
        Ok(true)
    }
}
