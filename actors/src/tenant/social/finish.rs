//! The end of a social sign-in (spec 4.2): the user a provider's account signs in as (the
//! linked account, automatic linking, the guest's claim or a new account) or the refusal,
//! and the exchange token traded once for a session.

use crate::tenant::ctx::TenantCtx;
use crate::tenant::social::memory::Social;

use tessera_storage::{Kind, TenantBatch};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    identities::SocialIdentity,
    providers::{EmailTrust, Provider},
    records::{
        identity_key, user_identity_key, SocialExchangeRecord, SocialIdentityRecord,
        UserIdentityIndex, EXCHANGE_TTL,
    },
};
use crate::error::SocialError;
use crate::{
    error::TenantError,
    tenant::{
        audit::AuditContext, effects::Effects, messages::PasswordlessLogin, records::UserRecord,
        sessions::Proof,
    },
};

/// Why a callback did not sign anyone in: the `error` the browser is sent back with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocialRefusal {
    /// The provider's address belongs to another account, and it may not be linked.
    EmailExists,
    /// The provider account is linked to another user.
    ProviderInUse,
    /// The guest was claimed (or signed up) meanwhile.
    AlreadyClaimed,
    /// The account is blocked by the tenant's admins.
    AccountBlocked,
    /// The user has another account of this provider linked already.
    AlreadyLinked,
    /// The tenant's e-mail policy refuses new accounts at the provider's address.
    EmailNotAllowed,
    /// Minor protection: accounts are made by registration with a date of birth.
    AgeRequired,
}

impl SocialRefusal {
    pub fn as_str(self) -> &'static str {
        match self {
            SocialRefusal::EmailExists => "email_exists",
            SocialRefusal::ProviderInUse => "provider_in_use",
            SocialRefusal::AlreadyClaimed => "already_claimed",
            SocialRefusal::AccountBlocked => "account_blocked",
            SocialRefusal::AlreadyLinked => "already_linked",
            SocialRefusal::EmailNotAllowed => "email_not_allowed",
            SocialRefusal::AgeRequired => "age_required",
        }
    }
}

/// A callback that found its user: the exchange token's `jti` and `sub`.
#[derive(Clone, Debug)]
pub struct SocialFinished {
    pub user_id: Uuid,
    pub jti: Uuid,
    pub expires_at: OffsetDateTime,
}

impl Social {
    /// The user a provider's account signs in as (spec 4.2): the account already linked; else
    /// the account of a trusted, verified address when automatic linking is on (else
    /// `email_exists`); else the guest of the flow, claimed in place (trusted providers);
    /// else a new account. Answers the exchange token's `jti`, recorded for one use.
    pub(super) fn social_finish(
        &mut self,
        cx: &mut TenantCtx,
        provider: Provider,
        identity: SocialIdentity,
        guest: Option<Uuid>,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<SocialFinished, TenantError> {
        let trust = provider.email_trust();
        let email = identity
            .email
            .as_deref()
            .and_then(crate::policy::normalize_email);
        // An always-verified provider's address counts unless it says otherwise.
        let verified = email.is_some()
            && match trust {
                EmailTrust::AlwaysVerified => identity.email_verified != Some(false),
                EmailTrust::ProviderVerified => identity.email_verified == Some(true),
                EmailTrust::NeverTrust => false,
            };
        let mut fx = cx.effects();
        // Links the provider account to the user it signs in as (into `batch`).
        let link = |social: &Social, batch: &mut TenantBatch, user: Uuid| {
            social.put_identity(batch, user, provider, &identity, email.as_ref(), now)
        };
        let refuse = |cx: &mut TenantCtx, mut fx: Effects, why: SocialRefusal| {
            cx.audit_into(
                &mut fx.batch,
                "auth.social.link_refused",
                ctx,
                serde_json::json!({ "provider": provider.as_str(), "reason": why.as_str() }),
            )?;
            cx.fail(fx, TenantError::Social(SocialError::Refused(why)))
        };
        // A link whose user is gone counts as none (the next write replaces it).
        let linked = match cx
            .store
            .get::<SocialIdentityRecord>(&identity_key(provider, &identity.subject))?
        {
            Some(l) => cx.user(l.user_id)?,
            None => None,
        };
        let (user, how) = if let Some(user) = linked {
            if user.blocked_at.is_some() {
                return refuse(cx, fx, SocialRefusal::AccountBlocked);
            }
            (user, "linked")
        } else if let Some(existing) = match &email {
            Some(e) => cx.user_by_email(e)?,
            None => None,
        } {
            let may_link = guest.is_none()
                && verified
                && existing.email_verified
                && !existing.is_anonymous
                && cx.settings.security.automatic_account_linking_enabled;
            if !may_link {
                return refuse(cx, fx, SocialRefusal::EmailExists);
            }
            if existing.blocked_at.is_some() {
                return refuse(cx, fx, SocialRefusal::AccountBlocked);
            }
            // One account of a provider per user: another one is linked explicitly, if at all.
            if cx
                .store
                .get::<UserIdentityIndex>(&user_identity_key(existing.id, provider))?
                .is_some()
            {
                return refuse(cx, fx, SocialRefusal::AlreadyLinked);
            }
            link(self, &mut fx.batch, existing.id)?;
            cx.audit_into(
                &mut fx.batch,
                "auth.social.linked",
                ctx,
                serde_json::json!({
                    "user_id": existing.id,
                    "provider": provider.as_str(),
                    "method": "automatic",
                }),
            )?;
            (existing, "automatic_link")
        } else {
            // A new account keeps only an address the trust rule vouches for: an unverified
            // one would hold the address for whoever claimed it (and keep this provider
            // account's way in once the real owner confirms it).
            let kept = email.clone().filter(|_| verified);
            // An allowlist admits only the addresses it lists: without one, nothing.
            let refused = match &kept {
                Some(e) => cx.registration_blocked(&mut fx, e, ctx)?,
                None => !cx.settings.email_domains.allowlist.is_empty(),
            };
            if refused {
                return refuse(cx, fx, SocialRefusal::EmailNotAllowed);
            }
            if cx.age_unknown_signup().is_err() {
                return refuse(cx, fx, SocialRefusal::AgeRequired);
            }
            let claim = guest.filter(|_| trust != EmailTrust::NeverTrust);
            let (mut user, event) = match claim {
                Some(id) => match cx.user(id)? {
                    Some(g) if g.is_anonymous && !g.suspended() => {
                        fx.batch.remove(Kind::Guest, g.id.as_bytes());
                        (g, "auth.anonymous.claimed")
                    }
                    _ => return refuse(cx, fx, SocialRefusal::AlreadyClaimed),
                },
                None => {
                    let user = UserRecord::blank(Uuid::now_v7(), now);
                    cx.count_active(&mut fx.batch, None, now)?;
                    (user, "auth.register")
                }
            };
            user.is_anonymous = false;
            user.email = kept;
            user.email_verified = verified;
            cx.put_new_user(&mut fx.batch, &user)?;
            let method = if claim.is_some() {
                "guest_claim"
            } else {
                "social"
            };
            cx.emit_user_created(&mut fx.batch, &user, method)?;
            link(self, &mut fx.batch, user.id)?;
            cx.audit_into(
                &mut fx.batch,
                event,
                ctx,
                serde_json::json!({
                    "user_id": user.id,
                    "method": "social",
                    "provider": provider.as_str(),
                }),
            )?;
            (
                user,
                if claim.is_some() {
                    "guest_claim"
                } else {
                    "new_account"
                },
            )
        };
        self.keep_tokens(cx, &mut fx.batch, provider, &identity)?;
        let jti = Uuid::now_v7();
        let expires_at = now + EXCHANGE_TTL;
        fx.batch.put(
            jti.as_bytes(),
            &SocialExchangeRecord {
                user_id: user.id,
                provider,
                expires_at,
            },
        )?;
        cx.audit_into(
            &mut fx.batch,
            "auth.social.signed_in",
            ctx,
            serde_json::json!({
                "user_id": user.id,
                "provider": provider.as_str(),
                "outcome": how,
            }),
        )?;
        cx.commit(fx)?;
        Ok(SocialFinished {
            user_id: user.id,
            jti,
            expires_at,
        })
    }

    /// Trades an exchange token (its `jti`, verified by the caller) for a sign-in: once,
    /// before it expires, for the provider it names. The tenant's MFA policy applies.
    pub(super) fn social_session(
        &mut self,
        cx: &mut TenantCtx,
        provider: Provider,
        jti: Uuid,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<PasswordlessLogin, TenantError> {
        let Some(record) = cx.store.get::<SocialExchangeRecord>(jti.as_bytes())? else {
            return Err(TenantError::Social(SocialError::ExchangeInvalid));
        };
        let mut fx = cx.effects();
        fx.batch.remove(Kind::SocialExchange, jti.as_bytes());
        if record.provider != provider || record.expires_at <= now {
            return cx.fail(fx, TenantError::Social(SocialError::ExchangeInvalid));
        }
        let Some(mut user) = cx.user(record.user_id)? else {
            return cx.fail(fx, TenantError::Social(SocialError::ExchangeInvalid));
        };
        let mut proof = Proof::first_factor("fed", "social");
        proof
            .audit
            .insert("provider".into(), provider.as_str().into());
        let login = match cx.sign_in(&mut fx, &mut user, proof, ctx, now) {
            Ok(l) => l,
            Err(e) => return cx.fail(fx, e),
        };
        cx.commit(fx)?;
        Ok(login)
    }
}
