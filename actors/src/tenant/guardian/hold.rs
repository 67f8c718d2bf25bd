//! The decision at registration (a minor's account is held until a guardian consents) and
//! the gate every sign-in and token path checks: a held or declined account, like a blocked
//! one, holds no session.

use crate::tenant::ctx::TenantCtx;

use time::OffsetDateTime;

use crate::error::GuardianError;
use crate::{
    error::TenantError,
    tenant::{
        messages::Registration,
        records::{ChildConsent, ChildStatus, UserRecord},
    },
};

impl UserRecord {
    /// Whether the account may hold no session or token: blocked by the tenant's admins, or a
    /// minor's account without a guardian's consent (held, or declined).
    pub fn suspended(&self) -> bool {
        self.blocked_at.is_some() || self.guardian_gate().is_err()
    }

    /// Whether the account may sign in as far as guardian consent goes.
    pub fn guardian_gate(&self) -> Result<(), TenantError> {
        match self.guardian.as_ref().map(|g| g.status) {
            Some(ChildStatus::Held) => Err(TenantError::Guardian(GuardianError::ConsentPending)),
            Some(ChildStatus::Blocked) => {
                Err(TenantError::Guardian(GuardianError::ConsentDeclined))
            }
            _ => Ok(()),
        }
    }
}

/// Whole years from `born` to `today`.
pub(super) fn age_on(born: time::Date, today: time::Date) -> i32 {
    let mut age = today.year() - born.year();
    if (today.month() as u8, today.day()) < (born.month() as u8, born.day()) {
        age -= 1;
    }
    age
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// For a registration under minor protection: whether the new account is held. With the
    /// protection off, `None`. A wallet's proof decides when it says enough: over a threshold
    /// at or above the consent age is an adult, under one at or below it a minor. Otherwise
    /// the date of birth decides; with neither, the registration is refused.
    pub(in crate::tenant) fn guardian_hold(
        &self,
        r: &Registration,
        wallet: Option<(bool, u8)>,
        now: OffsetDateTime,
    ) -> Result<Option<bool>, TenantError> {
        let minors = &self.settings.minors;
        if !minors.minor_protection_enabled {
            return Ok(None);
        }
        let age = minors.digital_consent_age;
        match wallet {
            Some((true, threshold)) if threshold >= age => return Ok(Some(false)),
            Some((false, threshold)) if threshold <= age => return Ok(Some(true)),
            _ => {}
        }
        let format = time::macros::format_description!("[year]-[month]-[day]");
        match r
            .date_of_birth
            .as_deref()
            .and_then(|d| time::Date::parse(d, &format).ok())
        {
            Some(born) => Ok(Some(age_on(born, now.date()) < i32::from(age))),
            // An inconclusive wallet proof without a date: held, the safe side.
            None if wallet.is_some() => Ok(Some(true)),
            None => Err(TenantError::Guardian(GuardianError::DateOfBirthRequired)),
        }
    }

    /// Whether a sign-up that brings no age may make an account: not under minor protection.
    pub(in crate::tenant) fn age_unknown_signup(&self) -> Result<(), TenantError> {
        if self.settings.minors.minor_protection_enabled {
            return Err(TenantError::Guardian(GuardianError::AgeRequired));
        }
        Ok(())
    }

    /// Whether someone born on `born` (`YYYY-MM-DD`) has the tenant's consent age.
    pub(in crate::tenant) fn adult_for_consent(&self, born: &str, now: OffsetDateTime) -> bool {
        let format = time::macros::format_description!("[year]-[month]-[day]");
        time::Date::parse(born, &format).is_ok_and(|b| {
            age_on(b, now.date()) >= i32::from(self.settings.minors.digital_consent_age)
        })
    }

    /// A new minor's account, held.
    pub(in crate::tenant) fn hold_child(user: &mut UserRecord, now: OffsetDateTime) {
        user.guardian = Some(ChildConsent {
            status: ChildStatus::Held,
            status_at: now,
            asked: None,
            consent_token: None,
            consented_by: None,
            receipt: None,
        });
    }
}
