//! Text messages: passwordless login by a texted code (AMR `sms`), confirming a signed-in
//! user's phone number, and the dashboard's test message.
//!
//! Every send passes [`Sms::admit_sms`] first: the destination country must be on the
//! tenant's allowlist (or the platform's), the number and the client are rate limited, and the
//! tenant's monthly cap must not be reached. These checks run the same way whether or not a
//! number has an account, so a request's answer tells nothing about accounts.
//!
//! Codes are single-use challenges (see `challenges.rs`): a login code in the number's slot (the
//! account may not exist until the code is verified), a confirmation code in the user's slot.
//! Only confirmed numbers are indexed ([`PhoneIndex`]), and a number belongs to one user at a
//! time: confirming it moves it from whoever had it.
//!
//! A message leaves only once the change that caused it is durable; messages are not kept for
//! a later retry after a restart (see [`SmsJob`]).

mod error;
pub mod memory;
pub mod msg;

use std::{net::IpAddr, time::Instant};

use tessera_storage::{Kind, TenantBatch};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    audit::AuditContext,
    challenges::{challenge_key, ChallengeRecord, CodeVerdict, OAuthResume, Purpose},
    credentials::Credential,
    effects::Effects,
    inventory::may_add,
    messages::{Bearer, PasswordlessLogin, User},
    passwordless::{to_value, CodeTarget, Flow},
    records::{PhoneIndex, UserRecord},
    usage::SMS_USAGE_KEY,
};
use crate::{
    error::TenantError,
    outbound::{MailJob, MailKind, SmsAccount, SmsJob, SmsKind},
    throttle::throttle_ip,
};

pub use super::messages::Phone;
use crate::tenant::ctx::TenantCtx;
use crate::tenant::sms::memory::Sms;
pub use error::SmsError;

/// A texted code lives this long.
pub const SMS_CODE_TTL: Duration = Duration::minutes(10);
impl Sms {
    /// Checks and counts one message to `phone` requested from `ip` (none for the dashboard's
    /// test): the country, the per-number and per-client limits, then the monthly cap.
    fn admit_sms(
        &mut self,
        cx: &mut TenantCtx,
        phone: &Phone,
        ip: Option<IpAddr>,
    ) -> Result<(), TenantError> {
        if !self.country_allowed(cx, &phone.country) {
            return Err(TenantError::Sms(SmsError::CountryNotAllowed));
        }
        let now = Instant::now();
        let limited = |retry_after| TenantError::RateLimited { retry_after };
        if let Some(ip) = ip {
            self.per_ip.hit(&throttle_ip(ip), now).map_err(limited)?;
        }
        cx.space_request(Flow::SmsOtp, &phone.e164)?;
        self.per_number.hit(&phone.e164, now).map_err(limited)?;
        let wall = OffsetDateTime::now_utc();
        if self.sms_sent_this_month(wall) >= u64::from(self.effective_sms_cap(cx)) {
            return Err(TenantError::Sms(SmsError::CapReached {
                retry_after: seconds_to_next_month(wall),
            }));
        }
        Ok(())
    }

    /// Whether this tenant may text `country`. Its own list (when not null or empty) decides;
    /// on the platform's account it can only narrow the platform's list, so no tenant opens
    /// countries the operator pays for and did not allow.
    fn country_allowed(&self, cx: &TenantCtx, country: &str) -> bool {
        let platform = cx.runtime.sms_countries.iter().any(|c| c == country);
        let own_account = self.sms_account_is_own(cx);
        match cx
            .settings
            .security
            .sms_allowed_countries
            .as_ref()
            .filter(|l| !l.is_empty())
        {
            Some(list) => list.iter().any(|c| c == country) && (own_account || platform),
            None => platform,
        }
    }

    /// The monthly cap that applies: the setting, and on the platform's account at most the
    /// tier's ceiling (a setting made on the tenant's own account, or before a tier change,
    /// does not raise what the operator pays for).
    fn effective_sms_cap(&self, cx: &TenantCtx) -> u32 {
        let cap = cx.settings.security.sms_otp_monthly_cap;
        if self.sms_account_is_own(cx) {
            cap
        } else {
            cap.min(cx.runtime.sms_platform_caps.for_tier(cx.info.tier))
        }
    }

    /// Whether all three `byok_provider_*` settings are set.
    fn sms_account_is_own(&self, cx: &TenantCtx) -> bool {
        let sec = &cx.settings.security;
        sec.byok_provider_account_sid.is_some()
            && sec.byok_provider_messaging_service_sid.is_some()
            && cx.byok_token_set()
    }

    fn sms_sent_this_month(&self, now: OffsetDateTime) -> u64 {
        self.usage.in_month(now)
    }

    /// Counts one message in this month's total, in `batch`.
    fn count_sms(
        &mut self,
        batch: &mut TenantBatch,
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        self.usage.add(now);
        batch.put(SMS_USAGE_KEY, &self.usage)?;
        Ok(())
    }

    /// The account that sends this tenant's messages: its own when all three `byok_provider_*`
    /// settings are set, else the platform's.
    fn sms_account(&self, cx: &TenantCtx) -> Result<SmsAccount, TenantError> {
        let sec = &cx.settings.security;
        let (Some(account_sid), Some(messaging_service_sid)) = (
            sec.byok_provider_account_sid.clone(),
            sec.byok_provider_messaging_service_sid.clone(),
        ) else {
            return Ok(SmsAccount::Platform);
        };
        Ok(match cx.byok_auth_token()? {
            Some(auth_token) => SmsAccount::Own {
                account_sid,
                auth_token,
                messaging_service_sid,
            },
            None => SmsAccount::Platform,
        })
    }

    fn sms_job(
        &self,
        cx: &TenantCtx,
        phone: &Phone,
        kind: SmsKind,
        code: Option<String>,
    ) -> Result<SmsJob, TenantError> {
        Ok(SmsJob {
            id: Uuid::now_v7(),
            tenant: cx.info.id,
            tenant_slug: cx.info.slug.clone(),
            tenant_name: cx.info.name.clone(),
            to: phone.e164.clone(),
            kind,
            code,
            account: self.sms_account(cx)?,
        })
    }

    /// Texts a login code to this number when a user has confirmed it, or (`create`) whatever
    /// it is: the account is then created when the code is verified. `None`: nothing to send.
    pub fn sms_otp_request(
        &mut self,
        cx: &mut TenantCtx,
        phone: &Phone,
        create: bool,
        oauth: Option<OAuthResume>,
        ip: IpAddr,
    ) -> Result<Option<SmsJob>, TenantError> {
        cx.flow_enabled(Flow::SmsOtp)?;
        self.admit_sms(cx, phone, Some(ip))?;
        let user = cx.user_by_phone(&phone.e164)?;
        let now = OffsetDateTime::now_utc();
        if user.is_none() && !create {
            // As much prepared and written as for a user (see `write_decoy`; the stand-in's
            // shape does not matter, only its size); the message is dropped.
            let code = super::step_up::six_digit_code();
            let _ = self.sms_job(cx, phone, SmsKind::LoginCode, Some(code.clone()))?;
            let blank = UserRecord::blank(Uuid::nil(), now);
            let mut record =
                ChallengeRecord::new(Purpose::LoginSmsOtp, &blank, None, SMS_CODE_TTL, now);
            record.secret_hash = cx.otp_hash(Uuid::nil(), &code);
            record.phone = Some(phone.e164.clone());
            record.oauth = oauth;
            let records = [to_value(&record)?, to_value(&self.usage)?];
            cx.write_decoy(&cx.decoy_of(&phone.e164, MailKind::EmailOtp { code }, &records)?)?;
            return Ok(None);
        }
        let slot = cx.number_slot(&phone.e164);
        let user = user.unwrap_or_else(|| UserRecord::blank(Uuid::nil(), now));
        let code = super::step_up::six_digit_code();
        let job = self.sms_job(cx, phone, SmsKind::LoginCode, Some(code.clone()))?;
        let mut record = ChallengeRecord::new(Purpose::LoginSmsOtp, &user, None, SMS_CODE_TTL, now);
        record.secret_hash = cx.otp_hash(slot, &code);
        record.phone = Some(phone.e164.clone());
        record.oauth = oauth;
        let mut batch = cx.store.batch();
        batch.put(&challenge_key(slot, Purpose::LoginSmsOtp), &record)?;
        self.count_sms(&mut batch, now)?;
        cx.store.apply(batch)?;
        Ok(Some(job))
    }

    /// Signs in (or, for `login_or_create`, signs up) with a texted code.
    pub fn sms_otp_verify(
        &mut self,
        cx: &mut TenantCtx,
        e164: &str,
        code: &str,
        binding_hash: Option<&str>,
        ip: IpAddr,
        ctx: &AuditContext,
    ) -> Result<(PasswordlessLogin, Vec<MailJob>), TenantError> {
        cx.code_login(CodeTarget::Phone(e164), (code, binding_hash, ip), ctx)
    }

    /// Guests hold no number; nor does an account whose address is not confirmed yet: its
    /// holder may be someone who registered an address they do not own, and the owner's proof
    /// of the address must leave them no way in.
    fn may_hold_phone(user: &UserRecord) -> Result<(), TenantError> {
        if user.is_anonymous {
            return Err(TenantError::GuestNotAllowed);
        }
        may_add(user, Credential::Phone)
    }

    /// Texts a code confirming `phone` to the signed-in user; a new code replaces the
    /// previous one.
    pub fn phone_verify_request(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        phone: &Phone,
        ip: IpAddr,
        ctx: &AuditContext,
    ) -> Result<SmsJob, TenantError> {
        let now = OffsetDateTime::now_utc();
        let (_, user) = cx.live_session(bearer, now)?;
        Self::may_hold_phone(&user)?;
        self.admit_sms(cx, phone, Some(ip))?;
        let code = super::step_up::six_digit_code();
        let job = self.sms_job(cx, phone, SmsKind::PhoneVerify, Some(code.clone()))?;
        let mut record = ChallengeRecord::new(Purpose::PhoneVerify, &user, None, SMS_CODE_TTL, now);
        record.secret_hash = cx.otp_hash(user.id, &code);
        record.phone = Some(phone.e164.clone());
        let mut batch = cx.store.batch();
        batch.put(&challenge_key(user.id, Purpose::PhoneVerify), &record)?;
        self.count_sms(&mut batch, now)?;
        cx.audit_into(
            &mut batch,
            "user.phone.verification_sent",
            ctx,
            serde_json::json!({ "user_id": user.id, "country": phone.country }),
        )?;
        cx.store.apply(batch)?;
        Ok(job)
    }

    /// Confirms the number a code was texted to: it becomes the user's (and leaves any other
    /// user who had it). Five wrong codes kill the code.
    pub fn phone_confirm(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        e164: &str,
        code: &str,
        ctx: &AuditContext,
    ) -> Result<(User, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let (_, mut user) = cx.live_session(bearer, now)?;
        Self::may_hold_phone(&user)?;
        let expiry_now = now.max(cx.calendar_now());
        let mut fx = cx.effects();
        let at = (user.id, Purpose::PhoneVerify);
        let found = match cx.check_code(at, code, |_| true, expiry_now)? {
            CodeVerdict::Missing { .. } => return Err(TenantError::InvalidChallenge),
            // The previous code, just used, sent again: no guess at this one.
            CodeVerdict::Wrong {
                resubmitted: true, ..
            } => return Err(TenantError::InvalidChallenge),
            CodeVerdict::Right(found) if found.record.phone.as_deref() == Some(e164) => found,
            // A wrong code, or the right code for another number.
            CodeVerdict::Wrong { mut found, .. } | CodeVerdict::Right(mut found) => {
                cx.challenge_failed(&mut fx.batch, &mut found)?;
                return cx.fail(fx, TenantError::InvalidChallenge);
            }
        };
        cx.consume_code(&mut fx.batch, &found, expiry_now);
        let ending = ending_of(e164);
        if let Some(holder) = cx.user_by_phone(e164)?.filter(|h| h.id != user.id) {
            let mut holder = holder;
            holder.phone = None;
            holder.phone_verified = false;
            fx.batch.put(holder.id.as_bytes(), &holder)?;
            if let Some(email) = holder.email.clone().filter(|_| holder.email_verified) {
                let kind = MailKind::PhoneRemoved {
                    ending: ending.clone(),
                };
                cx.queue_mail(&mut fx, &email, kind)?;
            }
            cx.audit_into(
                &mut fx.batch,
                "user.phone.removed",
                ctx,
                serde_json::json!({ "user_id": holder.id, "reason": "confirmed_by_another_user" }),
            )?;
        }
        if let Some(old) = user.phone.take().filter(|p| p != e164) {
            fx.batch.remove(Kind::UserPhone, old.as_bytes());
        }
        user.phone = Some(e164.to_owned());
        user.phone_verified = true;
        cx.put_new_user(&mut fx.batch, &user)?;
        fx.batch
            .put(e164.as_bytes(), &PhoneIndex { user_id: user.id })?;
        cx.audit_into(
            &mut fx.batch,
            "user.phone.verified",
            ctx,
            serde_json::json!({ "user_id": user.id }),
        )?;
        // A stolen access token could add the thief's number: the owner hears of it.
        if let Some(email) = user.email.clone().filter(|_| user.email_verified) {
            cx.queue_mail(&mut fx, &email, MailKind::PhoneAdded { ending })?;
        }
        Ok((user.view(), cx.commit(fx)?))
    }

    /// The dashboard's test message to `phone`: checked and counted like any other.
    pub fn sms_test(
        &mut self,
        cx: &mut TenantCtx,
        phone: &Phone,
        ctx: &AuditContext,
    ) -> Result<SmsJob, TenantError> {
        self.tests
            .hit(&(), Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
        self.admit_sms(cx, phone, None)?;
        let job = self.sms_job(cx, phone, SmsKind::Test, None)?;
        let now = OffsetDateTime::now_utc();
        let mut batch = cx.store.batch();
        self.count_sms(&mut batch, now)?;
        let own = matches!(job.account, SmsAccount::Own { .. });
        cx.audit_into(
            &mut batch,
            "tenant.sms_test",
            ctx,
            serde_json::json!({ "country": phone.country, "own_account": own }),
        )?;
        cx.store.apply(batch)?;
        Ok(job)
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// The slot of a number's login code.
    pub(super) fn number_slot(&self, e164: &str) -> Uuid {
        let mut m = b"login-sms:".to_vec();
        m.extend_from_slice(e164.as_bytes());
        let h = self.otp_hasher.hash(&m);
        let mut b = [0u8; 16];
        b.copy_from_slice(&h[..16]);
        Uuid::from_bytes(b)
    }

    /// The user whose confirmed number this is.
    pub(super) fn user_by_phone(&self, e164: &str) -> Result<Option<UserRecord>, TenantError> {
        let Some(ix) = self.store.get::<PhoneIndex>(e164.as_bytes())? else {
            return Ok(None);
        };
        Ok(self
            .user(ix.user_id)?
            .filter(|u| !u.is_anonymous && u.phone.as_deref() == Some(e164)))
    }

    /// A new account for a number proven by a login code: no address, no password.
    pub(super) fn create_sms_user(
        &mut self,
        fx: &mut Effects,
        e164: &str,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<UserRecord, TenantError> {
        self.age_unknown_signup()?;
        let mut user = UserRecord::blank(Uuid::now_v7(), now);
        user.phone = Some(e164.to_owned());
        user.phone_verified = true;
        self.count_active(&mut fx.batch, None, now)?;
        self.put_new_user(&mut fx.batch, &user)?;
        self.emit_user_created(&mut fx.batch, &user, "sms_otp")?;
        fx.batch
            .put(e164.as_bytes(), &PhoneIndex { user_id: user.id })?;
        self.audit_into(
            &mut fx.batch,
            "auth.register",
            ctx,
            serde_json::json!({ "user_id": user.id, "method": "sms_otp" }),
        )?;
        Ok(user)
    }

    /// Removes `user`'s number (and its index entry, when it names this user), in `batch`;
    /// the caller writes the user.
    pub(super) fn drop_phone(
        &self,
        batch: &mut TenantBatch,
        user: &mut UserRecord,
    ) -> Result<(), TenantError> {
        user.phone_verified = false;
        if let Some(old) = user.phone.take() {
            let indexed = self.store.get::<PhoneIndex>(old.as_bytes())?;
            if indexed.is_some_and(|ix| ix.user_id == user.id) {
                batch.remove(Kind::UserPhone, old.as_bytes());
            }
        }
        Ok(())
    }
}

/// The last two digits of a number, all a notice shows of it.
fn ending_of(e164: &str) -> String {
    let digits: Vec<char> = e164.chars().filter(char::is_ascii_digit).collect();
    digits[digits.len().saturating_sub(2)..].iter().collect()
}

/// Seconds from `now` to the first instant of the next calendar month (UTC).
fn seconds_to_next_month(now: OffsetDateTime) -> u64 {
    let (year, month) = match now.month() {
        time::Month::December => (now.year() + 1, time::Month::January),
        m => (now.year(), m.next()),
    };
    time::Date::from_calendar_date(year, month, 1)
        .map(|d| d.midnight().assume_utc() - now)
        .map_or(1, |left| left.whole_seconds().max(1) as u64)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use time::macros::datetime;

    use super::*;

    #[test]
    fn notices_show_only_the_last_two_digits() {
        assert_eq!(ending_of("+33612345678"), "78");
        assert_eq!(ending_of("+1"), "1");
    }

    #[test]
    fn the_cap_resets_at_the_next_month() {
        assert_eq!(
            seconds_to_next_month(datetime!(2026-11-30 23:59:00 UTC)),
            60
        );
        assert_eq!(
            seconds_to_next_month(datetime!(2026-12-31 23:00:00 UTC)),
            3600
        );
        assert_eq!(
            seconds_to_next_month(datetime!(2027-02-01 00:00:00 UTC)),
            28 * 86_400
        );
    }
}
