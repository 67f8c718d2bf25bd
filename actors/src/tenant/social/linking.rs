//! Explicit linking by a signed-in user: the ticket the authorize URL carries, its
//! confirmation page, the link itself, and unlinking while another way in remains.

use crate::tenant::ctx::TenantCtx;
use crate::tenant::social::memory::Social;

use tessera_storage::{random_token, sha256, Kind};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    finish::SocialRefusal,
    identities::SocialIdentity,
    providers::Provider,
    records::{
        identity_key, user_identity_key, SocialIdentityRecord, SocialLinkTicketRecord,
        UserIdentityIndex, SOCIAL_STATE_TTL,
    },
};
use crate::error::SocialError;
use crate::{
    error::TenantError,
    tenant::{
        audit::AuditContext, credentials::Credential, effects::Effects, inventory::may_add,
        messages::Bearer,
    },
};

/// A link ticket as its confirmation page shows it.
#[derive(Clone, Debug)]
pub struct TicketView {
    /// The account it links to: its masked address (or its id, without one).
    pub account: String,
    pub tenant_name: String,
    pub default_locale: String,
}

impl Social {
    /// A ticket that lets the signed-in user's next flow with `provider` link to them.
    pub(super) fn social_link_ticket(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        provider: Provider,
        redirect_uri: String,
        now: OffsetDateTime,
    ) -> Result<String, TenantError> {
        self.social_enabled(cx, provider)?;
        if !cx.settings.urls.allows(&redirect_uri) {
            return Err(TenantError::Social(SocialError::RedirectNotAllowed));
        }
        let (_, user) = cx.live_session(bearer, now)?;
        may_add(&user, Credential::SocialLinks)?;
        let ticket = random_token(32);
        let mut fx = cx.effects();
        fx.batch.put(
            &sha256(ticket.as_bytes()),
            &SocialLinkTicketRecord {
                user_id: user.id,
                provider,
                redirect_uri,
                expires_at: now + SOCIAL_STATE_TTL,
            },
        )?;
        cx.commit(fx)?;
        Ok(ticket)
    }

    /// A live ticket of `provider`, as its confirmation page shows it.
    pub(super) fn peek_ticket(
        &self,
        cx: &TenantCtx,
        provider: Provider,
        ticket: &str,
        now: OffsetDateTime,
    ) -> Result<TicketView, TenantError> {
        let t = cx
            .store
            .get::<SocialLinkTicketRecord>(&sha256(ticket.as_bytes()))?
            .filter(|t| t.provider == provider && t.expires_at > now)
            .ok_or(TenantError::Social(SocialError::StateInvalid))?;
        let user = cx
            .user(t.user_id)?
            .ok_or(TenantError::Social(SocialError::StateInvalid))?;
        Ok(TicketView {
            account: user
                .email
                .as_deref()
                .map_or_else(|| user.id.to_string(), crate::policy::mask_email),
            tenant_name: cx.info.name.clone(),
            default_locale: cx.settings.users.default_locale.clone(),
        })
    }

    /// Links `identity` to `user` (explicit linking): refused when the provider account is
    /// another user's (`provider_in_use`) or the user has another account of this provider
    /// (`already_linked`); linking it again is no change.
    pub(super) fn social_link(
        &mut self,
        cx: &mut TenantCtx,
        provider: Provider,
        identity: SocialIdentity,
        user: Uuid,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        let mut fx = cx.effects();
        let refuse = |cx: &mut TenantCtx, mut fx: Effects, why: SocialRefusal| {
            cx.audit_into(
                &mut fx.batch,
                "auth.social.link_refused",
                ctx,
                serde_json::json!({
                    "user_id": user,
                    "provider": provider.as_str(),
                    "reason": why.as_str(),
                }),
            )?;
            cx.fail(fx, TenantError::Social(SocialError::Refused(why)))
        };
        let Some(holder) = cx.user(user)?.filter(|u| !u.suspended()) else {
            return refuse(cx, fx, SocialRefusal::AccountBlocked);
        };
        may_add(&holder, Credential::SocialLinks)?;
        if let Some(linked) = cx
            .store
            .get::<SocialIdentityRecord>(&identity_key(provider, &identity.subject))?
        {
            if linked.user_id == user {
                return Ok(());
            }
            return refuse(cx, fx, SocialRefusal::ProviderInUse);
        }
        if cx
            .store
            .get::<UserIdentityIndex>(&user_identity_key(user, provider))?
            .is_some()
        {
            return refuse(cx, fx, SocialRefusal::AlreadyLinked);
        }
        let email = identity
            .email
            .as_deref()
            .and_then(crate::policy::normalize_email);
        self.put_identity(
            &mut fx.batch,
            user,
            provider,
            &identity,
            email.as_ref(),
            now,
        )?;
        self.keep_tokens(cx, &mut fx.batch, provider, &identity)?;
        cx.audit_into(
            &mut fx.batch,
            "auth.social.linked",
            ctx,
            serde_json::json!({
                "user_id": user,
                "provider": provider.as_str(),
                "method": "explicit",
            }),
        )?;
        cx.commit(fx)?;
        Ok(())
    }

    /// Unlinks the user's account of `provider`, unless nothing else would sign them in: a
    /// password, a passkey, another provider, or a confirmed address or number while the
    /// tenant signs in by mailed or texted codes.
    pub(super) fn social_unlink(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        provider: Provider,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        let (_, user) = cx.live_session(bearer, now)?;
        let key = user_identity_key(user.id, provider);
        let Some(ix) = cx.store.get::<UserIdentityIndex>(&key)? else {
            return Err(TenantError::NotFound);
        };
        let sec = &cx.settings.security;
        let other_ways = user.password_hash.is_some()
            || !cx.passkeys_of(user.id)?.is_empty()
            || cx.identities_of(user.id)?.len() > 1
            || (user.email_verified && (sec.magic_link_enabled || sec.email_otp_enabled))
            || (user.phone_verified && sec.sms_otp_enabled);
        if !other_ways {
            return Err(TenantError::Social(SocialError::LastMethod));
        }
        let mut fx = cx.effects();
        fx.batch.remove(Kind::UserIdentity, &key);
        fx.batch
            .remove(Kind::SocialIdentity, &identity_key(provider, &ix.subject));
        fx.batch
            .remove(Kind::SocialToken, &identity_key(provider, &ix.subject));
        cx.audit_into(
            &mut fx.batch,
            "auth.social.unlinked",
            ctx,
            serde_json::json!({ "user_id": user.id, "provider": provider.as_str() }),
        )?;
        cx.commit(fx)?;
        Ok(())
    }
}
