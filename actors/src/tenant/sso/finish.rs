//! The end of a sign-in through an organization's identity provider: who the provider's
//! account signs in as (the linked user, an account its proven domain vouches for, or a new
//! one), the membership its groups give, and the exchange code traded once for a session.
//!
//! The linking rules are the credential inventory's: the provider's address counts only at
//! a domain the connection's organization proved (the organization answers for the people
//! at its own domain, nobody else's). At such an address an existing confirmed account is
//! linked; one that never confirmed it is recovered first (`recover_address`: whoever
//! registered it keeps no way in); an address the provider cannot vouch for never reaches an
//! existing account, and a new account does not keep it.

use tessera_storage::{random_token, sha256, Kind};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    error::{SsoError, SsoRefusal},
    records::{
        id_pair, identity_key, replay_key, AttributeMapping, Attributes, SsoConnectionRecord,
        SsoExchangeRecord, SsoIdentityRecord, SsoReplayRecord, UserSsoIndex, SSO_EXCHANGE_TTL,
    },
    Sso,
};
use crate::tenant::ctx::TenantCtx;
use crate::{
    error::TenantError,
    tenant::{
        audit::AuditContext,
        effects::Effects,
        messages::PasswordlessLogin,
        organizations::{Joined, Organizations},
        records::UserRecord,
        sessions::Proof,
    },
};

/// The most groups read from one sign-in, and the longest value kept.
const MAX_GROUPS: usize = 100;
const MAX_VALUE: usize = 256;
/// How much of the groups' names a user's `app_metadata.sso` keeps (its limit is 16 KiB).
const MAX_GROUPS_KEPT_BYTES: usize = 4096;

/// Who the provider says the user is, read through the connection's mapping.
#[derive(Clone, Debug, Default)]
pub struct SsoIdentity {
    /// SAML NameID, OpenID `sub`.
    pub subject: String,
    pub email: Option<String>,
    /// OpenID's `email_verified` when the provider said it; SAML says nothing.
    pub email_verified: Option<bool>,
    pub given_name: Option<String>,
    pub family_name: Option<String>,
    pub groups: Vec<String>,
    /// SAML: the assertion's ID and until when it could be used (the replay cache keeps it
    /// that long).
    pub assertion: Option<(String, OffsetDateTime)>,
}

impl AttributeMapping {
    /// The identity `attributes` give for `subject` (`email` falls back to `fallback_email`,
    /// the NameID or the `email` claim, when the mapping names none).
    pub fn identity(
        &self,
        subject: &str,
        fallback_email: Option<&str>,
        attributes: &Attributes,
    ) -> SsoIdentity {
        let first = |name: &str| {
            attributes
                .get(name)
                .and_then(|v| v.first())
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty() && s.len() <= MAX_VALUE)
        };
        let email = if self.email.is_empty() {
            fallback_email.map(str::to_owned)
        } else {
            first(&self.email)
        };
        SsoIdentity {
            subject: subject.to_owned(),
            email,
            email_verified: None,
            given_name: first(&self.given_name),
            family_name: first(&self.family_name),
            groups: attributes
                .get(&self.groups)
                .into_iter()
                .flatten()
                .filter(|g| !g.is_empty() && g.len() <= MAX_VALUE)
                .take(MAX_GROUPS)
                .cloned()
                .collect(),
            assertion: None,
        }
    }
}

/// A completed sign-in: the exchange code, once.
#[derive(Clone, Debug)]
pub struct SsoFinished {
    pub user_id: Uuid,
    pub code: String,
    pub expires_at: OffsetDateTime,
}

impl SsoConnectionRecord {
    /// The organization role `groups` give: the first mapping line that matches, else the
    /// default.
    pub fn role_for(&self, groups: &[String]) -> &str {
        self.group_roles
            .iter()
            .find(|m| groups.iter().any(|g| g == &m.group))
            .map_or(self.default_role.as_str(), |m| m.role.as_str())
    }
}

impl Sso {
    /// The user the provider's account signs in as, its membership, and the exchange code.
    pub(super) fn finish(
        &mut self,
        cx: &mut TenantCtx,
        connection: Uuid,
        identity: SsoIdentity,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<SsoFinished, TenantError> {
        let c = self.enabled(cx, connection)?;
        let org = c.organization;
        let mut fx = cx.effects();
        let refuse = |cx: &mut TenantCtx, mut fx: Effects, why: SsoRefusal| {
            cx.audit_into(
                &mut fx.batch,
                "auth.sso.refused",
                ctx,
                serde_json::json!({
                    "organization_id": org, "connection_id": connection, "reason": why.as_str(),
                }),
            )?;
            cx.fail(fx, SsoError::Refused(why).into())
        };
        // The assertion is used once, whatever comes of it; its ID is kept on disk until it
        // would be refused as expired anyway.
        if let Some((id, until)) = &identity.assertion {
            let key = replay_key(connection, id);
            if cx
                .store
                .get::<SsoReplayRecord>(&key)?
                .is_some_and(|r| r.until > now)
            {
                return refuse(cx, fx, SsoRefusal::Replayed);
            }
            fx.batch.put(
                &key,
                &SsoReplayRecord {
                    until: (*until).max(now) + time::Duration::minutes(5),
                },
            )?;
        }
        let email = identity
            .email
            .as_deref()
            .and_then(crate::policy::normalize_email);
        // The organization answers for its own proven domains only.
        let trusted = match &email {
            Some(e) if identity.email_verified != Some(false) => cx.proven_by(org, e)?,
            _ => false,
        };
        let link_key = identity_key(connection, &identity.subject);
        let linked = match cx.store.get::<SsoIdentityRecord>(&link_key)? {
            Some(l) => cx.user(l.user_id)?.map(|u| (u, l)),
            None => None,
        };
        // The membership must fit before anything is written for the user: a refusal keeps
        // only the assertion's use and its audit entry.
        let room = |cx: &TenantCtx, user: Uuid| match cx.membership(org, user) {
            Ok(Some(_)) => Ok(true),
            Ok(None) => match Organizations::room_for(cx, org, user) {
                Ok(()) => Ok(true),
                Err(TenantError::Organization(_)) => Ok(false),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        let (mut user, how) = if let Some((user, mut link)) = linked {
            if !room(cx, user.id)? {
                return refuse(cx, fx, SsoRefusal::MembershipRefused);
            }
            link.last_used_at = now;
            fx.batch.put(&link_key, &link)?;
            (user, "linked")
        } else if let Some(mut existing) = match &email {
            Some(e) => cx.user_by_email(e)?,
            None => None,
        } {
            if !trusted || existing.is_anonymous {
                return refuse(cx, fx, SsoRefusal::EmailExists);
            }
            // Already linked to another account of this provider: the address moved to
            // someone else there (or its attribute is one users edit); not a way into this one.
            if cx
                .store
                .get::<UserSsoIndex>(&id_pair(existing.id, connection))?
                .is_some()
            {
                return refuse(cx, fx, SsoRefusal::EmailExists);
            }
            if existing.blocked_at.is_some() {
                return refuse(cx, fx, SsoRefusal::AccountBlocked);
            }
            if !room(cx, existing.id)? {
                return refuse(cx, fx, SsoRefusal::MembershipRefused);
            }
            if !existing.email_verified {
                // Whoever registered the address before its owner keeps no way in.
                cx.recover_address(&mut fx, &mut existing, "sso", ctx)?;
            }
            self.link(&mut fx, (&c, &identity.subject, existing.id), now)?;
            (existing, "automatic_link")
        } else {
            if !c.jit {
                return refuse(cx, fx, SsoRefusal::NotProvisioned);
            }
            let kept = email.clone().filter(|_| trusted);
            let refused = match &kept {
                Some(e) => cx.registration_blocked(&mut fx, e, ctx)?,
                None => !cx.settings.email_domains.allowlist.is_empty(),
            };
            if refused {
                return refuse(cx, fx, SsoRefusal::EmailNotAllowed);
            }
            if cx.age_unknown_signup().is_err() {
                return refuse(cx, fx, SsoRefusal::AgeRequired);
            }
            let id = Uuid::now_v7();
            if !room(cx, id)? {
                return refuse(cx, fx, SsoRefusal::MembershipRefused);
            }
            let mut user = UserRecord::blank(id, now);
            cx.count_active(&mut fx.batch, None, now)?;
            user.email_verified = kept.is_some();
            user.email = kept;
            cx.put_new_user(&mut fx.batch, &user)?;
            cx.emit_user_created(&mut fx.batch, &user, "sso")?;
            self.link(&mut fx, (&c, &identity.subject, user.id), now)?;
            cx.audit_into(
                &mut fx.batch,
                "auth.register",
                ctx,
                serde_json::json!({
                    "user_id": user.id, "method": "sso", "connection_id": connection,
                }),
            )?;
            (user, "new_account")
        };
        if user.blocked_at.is_some() {
            return refuse(cx, fx, SsoRefusal::AccountBlocked);
        }
        // What the provider said of the user, kept for the app (replaced at each sign-in).
        if !user.app_metadata.is_object() {
            user.app_metadata = serde_json::json!({});
        }
        // The groups kept are bounded so the metadata stays within its limit.
        let mut kept_groups = Vec::new();
        let mut size = 0;
        for g in &identity.groups {
            size += g.len() + 3;
            if size > MAX_GROUPS_KEPT_BYTES {
                break;
            }
            kept_groups.push(g.clone());
        }
        if let Some(m) = user.app_metadata.as_object_mut() {
            m.insert(
                "sso".into(),
                serde_json::json!({
                    "connection_id": connection,
                    "organization_id": org,
                    "given_name": identity.given_name,
                    "family_name": identity.family_name,
                    "groups": kept_groups,
                }),
            );
        }
        fx.batch.put(user.id.as_bytes(), &user)?;
        if let Err(e) = self.member(cx, &mut fx, &c, &user, &identity.groups, ctx) {
            return match e {
                TenantError::Organization(_) => refuse(cx, fx, SsoRefusal::MembershipRefused),
                e => cx.fail(fx, e),
            };
        }
        let code = format!("sso_{}", random_token(32));
        let expires_at = now + SSO_EXCHANGE_TTL;
        fx.batch.put(
            &sha256(code.as_bytes()),
            &SsoExchangeRecord {
                user_id: user.id,
                connection,
                organization: org,
                expires_at,
            },
        )?;
        cx.audit_into(
            &mut fx.batch,
            "auth.sso.signed_in",
            ctx,
            serde_json::json!({
                "user_id": user.id, "organization_id": org, "connection_id": connection,
                "outcome": how,
            }),
        )?;
        cx.commit(fx)?;
        Ok(SsoFinished {
            user_id: user.id,
            code,
            expires_at,
        })
    }

    /// Links the provider's `subject` to `user` (into `fx`).
    fn link(
        &self,
        fx: &mut Effects,
        (c, subject, user): (&SsoConnectionRecord, &str, Uuid),
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        fx.batch.put(
            &identity_key(c.id, subject),
            &SsoIdentityRecord {
                user_id: user,
                subject: subject.to_owned(),
                created_at: now,
                last_used_at: now,
            },
        )?;
        fx.batch.put(
            &id_pair(user, c.id),
            &UserSsoIndex {
                subject_hash: sha256(subject.as_bytes()),
            },
        )?;
        Ok(())
    }

    /// Makes `user` a member of the connection's organization with the role its groups
    /// give; a member who came in by single sign-on follows the provider's groups at each
    /// sign-in (one an admin or an invitation added keeps the role given there).
    fn member(
        &self,
        cx: &mut TenantCtx,
        fx: &mut Effects,
        c: &SsoConnectionRecord,
        user: &UserRecord,
        groups: &[String],
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        let role = c.role_for(groups).to_owned();
        match cx.membership(c.organization, user.id)? {
            None => {
                Organizations::room_for(cx, c.organization, user.id)?;
                Organizations::link(
                    cx,
                    &mut fx.batch,
                    (c.organization, user.id, &role),
                    Joined::Sso,
                    ctx,
                )?;
                // An admin's earlier removal is overruled by the organization's own provider.
                fx.batch.remove(
                    Kind::OrgDeparted,
                    &crate::tenant::organizations::records::pair_key(user.id, c.organization),
                );
            }
            Some(m) if m.joined == Joined::Sso && m.role != role => {
                Organizations::set_role(cx, &mut fx.batch, m, &role, ctx)?;
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// Trades an exchange code for a sign-in into the organization: once, before it expires.
    /// The tenant's MFA policy applies.
    pub(super) fn session(
        &mut self,
        cx: &mut TenantCtx,
        code: &str,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<PasswordlessLogin, TenantError> {
        let key = sha256(code.as_bytes());
        let Some(record) = cx.store.get::<SsoExchangeRecord>(&key)? else {
            return Err(SsoError::ExchangeInvalid.into());
        };
        let mut fx = cx.effects();
        fx.batch.remove(Kind::SsoExchange, &key);
        if record.expires_at <= now {
            return cx.fail(fx, SsoError::ExchangeInvalid.into());
        }
        let Some(mut user) = cx.user(record.user_id)? else {
            return cx.fail(fx, SsoError::ExchangeInvalid.into());
        };
        let mut proof = Proof::first_factor("fed", "sso");
        proof
            .audit
            .insert("connection_id".into(), record.connection.to_string().into());
        proof.sso = Some((record.organization, record.connection));
        let login = match cx.sign_in(&mut fx, &mut user, proof, ctx, now) {
            Ok(l) => l,
            Err(e) => return cx.fail(fx, e),
        };
        cx.commit(fx)?;
        Ok(login)
    }
}
