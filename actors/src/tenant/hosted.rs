//! What the hosted pages at the accounts URL ask of a tenant: a look at a mailed link without
//! using it (a GET must never consume a single-use token: mail scanners and link previews
//! fetch links), a login link turned into a one-minute code for the app, and that code
//! exchanged with its PKCE verifier for the token pair.
//!
//! The verification and reset pages use the links through the same commands as the API
//! (`verify_email`, `reset_password`); only the login link has a flow of its own here, because
//! its page must not hold the token pair: it hands the app a code bound to the app's
//! `code_challenge` (RFC 7636, S256) instead.

pub mod msg;

use tessera_storage::{ct_eq, Kind};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    audit::AuditContext,
    challenges::{ChallengeRecord, Purpose},
    messages::{HostedLink, HostedView, LiveLink, PasswordlessLogin, SignInView},
    passwordless::Flow,
    records::LinkPurpose,
};
use crate::tenant::ctx::TenantCtx;
use crate::{error::TenantError, outbound::MailJob};

/// The hosted pages' flow: it keeps nothing in memory and works on the context.
#[derive(Default)]
pub struct Hosted;

/// How long the login-link page's code lives.
pub const HOSTED_CODE_TTL: Duration = Duration::seconds(60);

/// Whether `verifier` is a PKCE code verifier whose S256 transform is `challenge`.
pub fn pkce_s256_matches(verifier: &str, challenge: &str) -> bool {
    ct_eq(
        super::challenges::s256(verifier).as_bytes(),
        challenge.as_bytes(),
    )
}

/// The path, under the accounts URL, where a login link asked for on the authorization
/// server's hosted sign-in page returns (with its code) to finish the authorize request.
pub fn oauth_link_return_path(slug: &str) -> String {
    format!("/oauth/{slug}/link")
}

/// The authorization server's hosted authorize page under the accounts URL: where a reset or
/// verification link asked for on its sign-in page returns, to sign in.
pub fn oauth_authorize_path(slug: &str) -> String {
    format!("/oauth/{slug}/authorize")
}

impl Hosted {
    /// Where a reset or verification link's page sends the user: the link's `redirect_to`
    /// while it is one of the tenant's URLs (else the site URL), or the authorize request of
    /// this tenant's hosted sign-in page it was asked for on (which checks that request again
    /// when it opens).
    fn account_link_destination(
        &self,
        cx: &TenantCtx,
        redirect_to: Option<&str>,
    ) -> Option<String> {
        let own = format!(
            "{}{}?",
            cx.runtime.accounts_url.trim_end_matches('/'),
            oauth_authorize_path(&cx.info.slug)
        );
        match redirect_to {
            Some(r) if r.starts_with(&own) => Some(r.to_owned()),
            other => cx.settings.urls.destination(other),
        }
    }

    /// Where a login link's page sends the user: the link's `redirect_to` while it is one of
    /// the tenant's URLs (else the site URL), or the authorization server's own return page
    /// when the link was asked for there.
    fn link_destination(&self, cx: &TenantCtx, redirect_to: Option<&str>) -> Option<String> {
        let own = format!(
            "{}{}",
            cx.runtime.accounts_url.trim_end_matches('/'),
            oauth_link_return_path(&cx.info.slug)
        );
        match redirect_to {
            Some(r) if r == own => Some(own),
            other => cx.settings.urls.destination(other),
        }
    }

    /// What the authorization server's sign-in page offers.
    pub fn sign_in_view(&self, cx: &TenantCtx) -> SignInView {
        SignInView {
            tenant_name: cx.info.name.clone(),
            default_locale: cx.settings.users.default_locale.clone(),
            email_otp_enabled: cx.settings.security.email_otp_enabled,
            magic_link_enabled: cx.settings.security.magic_link_enabled,
            social: cx.social_providers_enabled(),
            passkeys: cx.settings.passkey_rp_id.is_some(),
            minor_protection: cx.settings.minors.minor_protection_enabled,
            sso: cx.any_sso(),
        }
    }

    /// What the page of a mailed link shows, without using the link: the tenant's name and,
    /// while the link is alive, where the user goes afterwards and, for a login link, whether
    /// it can finish here. A used, expired or unknown link is answered with `live: None`.
    pub fn hosted_peek(
        &mut self,
        cx: &mut TenantCtx,
        link: HostedLink,
        token: &str,
    ) -> Result<HostedView, TenantError> {
        let now = OffsetDateTime::now_utc();
        let found = match link {
            HostedLink::VerifyEmail | HostedLink::ResetPassword | HostedLink::ChangeEmail => {
                let purpose = match link {
                    HostedLink::VerifyEmail => LinkPurpose::VerifyEmail,
                    HostedLink::ChangeEmail => LinkPurpose::ChangeEmail,
                    _ => LinkPurpose::ResetPassword,
                };
                let mut fx = cx.effects();
                let found = cx.peek_link(&mut fx.batch, token, purpose, now)?;
                cx.commit(fx)?;
                found.map(|rec| (rec.redirect_to, None, None))
            }
            HostedLink::MagicLink | HostedLink::StepUp => {
                let purpose = match link {
                    HostedLink::MagicLink => Purpose::LoginMagicLink,
                    _ => Purpose::StepUpMagicLink,
                };
                let expiry_now = now.max(cx.calendar_now());
                cx.find_challenge(token, &[purpose], expiry_now)
                    .ok()
                    .map(|f| {
                        let then = f.record.oauth.map(|o| o.params.redirect_uri);
                        (f.record.redirect_to, f.record.code_challenge, then)
                    })
            }
        };
        let live = found.map(|(redirect_to, code_challenge, then)| {
            let destination = match link {
                HostedLink::MagicLink => self.link_destination(cx, redirect_to.as_deref()),
                HostedLink::ResetPassword | HostedLink::VerifyEmail | HostedLink::ChangeEmail => {
                    self.account_link_destination(cx, redirect_to.as_deref())
                }
                HostedLink::StepUp => cx.settings.urls.destination(redirect_to.as_deref()),
            };
            LiveLink {
                code_flow: destination.is_some() && code_challenge.is_some(),
                destination,
                then,
            }
        });
        Ok(HostedView {
            tenant_name: cx.info.name.clone(),
            live,
            magic_link_enabled: cx.settings.security.magic_link_enabled,
            default_locale: cx.settings.users.default_locale.clone(),
        })
    }

    /// Uses a login link on its hosted page: the link is consumed and a single-use code that
    /// lives [`HOSTED_CODE_TTL`] takes its place, bound to the link's `code_challenge`.
    /// Answers the code and where to send it. A link requested without a code challenge, or
    /// with nowhere to go, is refused and left alive (the app can still verify it itself).
    pub fn hosted_magic_link(
        &mut self,
        cx: &mut TenantCtx,
        token: &str,
        ctx: &AuditContext,
    ) -> Result<(String, String), TenantError> {
        cx.flow_enabled(Flow::MagicLink)?;
        let now = OffsetDateTime::now_utc();
        let expiry_now = now.max(cx.calendar_now());
        let found = cx
            .find_challenge(token, &[Purpose::LoginMagicLink], expiry_now)
            .map_err(|_| TenantError::InvalidChallenge)?;
        let destination = self.link_destination(cx, found.record.redirect_to.as_deref());
        let (Some(destination), Some(challenge)) =
            (destination, found.record.code_challenge.clone())
        else {
            return Err(TenantError::InvalidChallenge);
        };
        let mut fx = cx.effects();
        let user = cx
            .user(found.record.user_id)?
            .filter(|u| !u.is_anonymous && u.email.is_some())
            .filter(|u| u.password_epoch == found.record.epoch);
        fx.batch.remove(Kind::Challenge, &found.key);
        let Some(user) = user else {
            return cx.fail(fx, TenantError::InvalidChallenge);
        };
        let mut code = ChallengeRecord::new(Purpose::HostedCode, &user, None, HOSTED_CODE_TTL, now);
        code.code_challenge = Some(challenge);
        code.oauth = found.record.oauth;
        let secret = cx.store_challenge(&mut fx.batch, Uuid::new_v4(), code)?;
        cx.audit_into(
            &mut fx.batch,
            "auth.magic_link.code_issued",
            ctx,
            serde_json::json!({ "user_id": user.id }),
        )?;
        cx.commit(fx)?;
        Ok((secret, destination))
    }

    /// Exchanges a hosted page's code and its PKCE verifier for a sign-in, as the login link
    /// itself would have signed in (the MFA challenge for a user with MFA). The code is used
    /// up by any attempt, right or wrong; another tenant's, an expired or a used code is
    /// `InvalidChallenge`.
    pub fn exchange_code(
        &mut self,
        cx: &mut TenantCtx,
        code: &str,
        verifier: &str,
        ctx: &AuditContext,
    ) -> Result<(PasswordlessLogin, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let expiry_now = now.max(cx.calendar_now());
        let found = cx
            .find_challenge(code, &[Purpose::HostedCode], expiry_now)
            .map_err(|_| TenantError::InvalidChallenge)?;
        let mut fx = cx.effects();
        fx.batch.remove(Kind::Challenge, &found.key);
        let verified = found
            .record
            .code_challenge
            .as_deref()
            .is_some_and(|c| pkce_s256_matches(verifier, c));
        if !verified {
            cx.audit_into(
                &mut fx.batch,
                "auth.magic_link.code_refused",
                ctx,
                serde_json::json!({ "user_id": found.record.user_id, "reason": "code_verifier" }),
            )?;
            return cx.fail(fx, TenantError::InvalidChallenge);
        }
        let user = cx
            .user(found.record.user_id)?
            .filter(|u| !u.is_anonymous && u.password_epoch == found.record.epoch);
        let Some(user) = user else {
            return cx.fail(fx, TenantError::InvalidChallenge);
        };
        if let Err(e) = cx.flow_enabled(Flow::MagicLink) {
            return cx.fail(fx, e);
        }
        let login =
            cx.passwordless_login(&mut fx, user, Flow::MagicLink, found.record.oauth, ctx, now)?;
        Ok((login, cx.commit(fx)?))
    }
}

#[cfg(test)]
mod tests {
    use super::pkce_s256_matches;

    #[test]
    fn the_rfc_7636_example_verifier_matches_its_challenge() {
        // RFC 7636, appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(pkce_s256_matches(verifier, challenge));
        assert!(!pkce_s256_matches(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXl",
            challenge
        ));
    }
}
