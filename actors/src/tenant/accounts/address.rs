//! A signed-in user moves the account to another e-mail address. The address changes only
//! when its owner opens the link mailed to it, so nobody can put an address they do not hold
//! on an account (or take one from its owner):
//!
//! - [`Accounts::change_email_begin`]: a live session asks; the current address is told (the
//!   new one masked) and the new one gets a single-use link (1 hour, dead after a password
//!   change, one alive at a time). An address another account holds gets a mail saying so
//!   instead, and one the tenant's e-mail policy refuses gets nothing; the caller's answer
//!   is the same every time, so asking tells nothing about other accounts.
//! - [`Accounts::change_email_confirm`]: the link moves the account to the new address,
//!   confirmed (the link proved it); links mailed to the old address die, and the old
//!   address is free for anyone to register.

use time::OffsetDateTime;

use super::{memory::Accounts, RESET_TTL};
use crate::{
    error::TenantError,
    outbound::{MailJob, MailKind},
    policy::mask_email,
    tenant::{
        audit::AuditContext,
        ctx::TenantCtx,
        messages::Bearer,
        records::{EmailIndex, LinkPurpose},
    },
};
use tessera_storage::Kind;

impl Accounts {
    /// Asks to move the signed-in user's account to `new_email` (normalised by the caller).
    pub fn change_email_begin(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        new_email: &str,
        ctx: &AuditContext,
    ) -> Result<Vec<MailJob>, TenantError> {
        let now = OffsetDateTime::now_utc();
        let (_, mut user) = cx.live_session(bearer, now)?;
        if user.is_anonymous {
            return Err(TenantError::GuestNotAllowed);
        }
        let mut fx = cx.effects();
        if user.email.as_deref() == Some(new_email) || !cx.mail_allowed(user.id) {
            // Nothing to move, or asked again within the minute: nothing is sent.
            return cx.commit(fx);
        }
        if cx.registration_blocked(&mut fx, new_email, ctx)? {
            return cx.commit(fx);
        }
        if cx.user_by_email(new_email)?.is_some() {
            cx.queue_mail(&mut fx, new_email, MailKind::EmailChangeTaken)?;
            return cx.commit(fx);
        }
        let token = cx.issue_link_to(
            &mut fx.batch,
            &mut user,
            (LinkPurpose::ChangeEmail, None),
            (RESET_TTL, Some(new_email.to_owned())),
            now,
        )?;
        fx.batch.put(user.id.as_bytes(), &user)?;
        let link = cx.link("confirm-email", &token);
        cx.queue_mail(&mut fx, new_email, MailKind::EmailChange { link })?;
        if let Some(old) = user.email.clone() {
            let masked = mask_email(new_email);
            cx.queue_mail(&mut fx, &old, MailKind::EmailChangeAsked { masked })?;
        }
        cx.audit_into(
            &mut fx.batch,
            "auth.email.change_requested",
            ctx,
            serde_json::json!({ "user_id": user.id }),
        )?;
        cx.commit(fx)
    }

    /// Moves the account to the address its change link was mailed to. A used, expired or
    /// stale link (the password changed since), a blocked account, or an address another
    /// account took in the meantime is refused.
    pub fn change_email_confirm(
        &mut self,
        cx: &mut TenantCtx,
        token: &str,
        ctx: &AuditContext,
    ) -> Result<Vec<MailJob>, TenantError> {
        // The link is spent whatever follows: a refused move is asked for again.
        let link = (LinkPurpose::ChangeEmail, OffsetDateTime::now_utc());
        let (mut fx, rec, mut user) = Self::take_link(cx, cx.effects(), token, link)?;
        let new_email = match rec.new_email {
            Some(e) if user.blocked_at.is_none() => e,
            _ => return cx.fail(fx, TenantError::InvalidLinkToken),
        };
        if cx.user_by_email(&new_email)?.is_some() {
            return cx.fail(
                fx,
                TenantError::User(crate::tenant::users::UserError::EmailInUse),
            );
        }
        // Links mailed to the old address die with it; the address is free again.
        for slot in [user.verify_token.take(), user.reset_token.take()] {
            if let Some(h) = slot.and_then(|h| hex::decode(h).ok()) {
                fx.batch.remove(Kind::LinkToken, &h);
            }
        }
        if let Some(old) = user.email.take() {
            fx.batch.remove(Kind::UserEmail, old.as_bytes());
            cx.login.forget_account(&old);
        }
        let was_verified = user.email_verified;
        user.email = Some(new_email.clone());
        user.email_verified = true;
        fx.batch.put(new_email.as_bytes(), &EmailIndex::of(&user))?;
        fx.batch.put(user.id.as_bytes(), &user)?;
        if !was_verified {
            cx.emit_email_verified(&mut fx.batch, user.id)?;
        }
        cx.audit_into(
            &mut fx.batch,
            "auth.email.changed",
            ctx,
            serde_json::json!({ "user_id": user.id }),
        )?;
        cx.commit(fx)
    }
}
