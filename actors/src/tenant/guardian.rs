//! Minor protection (GDPR art. 8): a minor's account waits, `held`, until a guardian consents.
//!
//! - Registration ([`TenantState::guardian_hold`]): with the tenant's protection on, a date of
//!   birth (or a wallet's age proof) is required; someone younger than the consent age gets
//!   an account marked held (`UserRecord::guardian`), which cannot sign in
//!   ([`UserRecord::guardian_gate`], checked by the sign-in kernel).
//! - The child asks a guardian ([`GuardianCmd::Request`], after the child's password is
//!   checked): a consent link (7 days, single use, the one live link of that child) is mailed
//!   to the guardian.
//! - The guardian accepts (the child becomes `active`, with the consent receipt of spec 2.7) or
//!   declines (`blocked`; the account is erased 30 days later by the daily purge).
//! - The guardian who consented can ask for a portal link (an hour, reusable) and from the
//!   portal withdraw consent (held again, sessions ended), have the child's data mailed as a
//!   download link (24 hours), or erase the account (a second call with the nonce the first
//!   answered).
//!
//! Guardian links are [`GuardianTokenRecord`]s under the SHA-256 of their token; the token
//! names the tenant (`TenantState::link_token`). Nothing here writes the date of birth into
//! an event or a log line.

pub mod memory;

use serde::{Deserialize, Serialize};
use tessera_storage::{random_token, sha256, Kind, Record, Sealed, TenantBatch, TenantRecord};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    audit::AuditContext,
    effects::Effects,
    messages::{Credential, Registration},
    records::{ChildConsent, ChildStatus, ConsentReceipt, UserRecord},
    state::TenantState,
};
use crate::{
    error::TenantError,
    login_guard::{Attempt, Captcha},
    outbound::MailJob,
    outbound::MailKind,
};

/// How long a consent link lives.
pub const CONSENT_TTL: Duration = Duration::days(7);
/// How long a portal link lives (it may be used for several actions).
pub const PORTAL_TTL: Duration = Duration::hours(1);
/// How long an export's download link lives.
pub const EXPORT_TTL: Duration = Duration::hours(24);
/// How long the nonce of a deletion's second call lives.
pub const CONFIRM_TTL: Duration = Duration::minutes(10);
/// Exports one portal link may ask for (each seals a copy of the child's data).
pub const EXPORTS_PER_LINK: u8 = 3;
/// How long a declined minor's account is kept before it is erased.
pub const DECLINED_RETENTION: Duration = Duration::days(30);

/// What a guardian's link is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardianPurpose {
    Consent,
    Portal,
    Export,
}

/// A guardian's link, stored under the SHA-256 of its token.
#[derive(Clone, Serialize, Deserialize)]
pub struct GuardianTokenRecord {
    pub purpose: GuardianPurpose,
    pub child: Uuid,
    /// The guardian's normalised address.
    pub guardian: String,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// A portal's pending deletion: the SHA-256 (hex) of the nonce the second call must
    /// bring, and until when.
    #[serde(default)]
    pub confirm: Option<(String, i64)>,
    /// An export's archive (sealed JSON).
    #[serde(default)]
    pub archive: Option<Sealed>,
    /// A consent link whose guardian proved adulthood with the EU wallet's age check.
    #[serde(default)]
    pub adult_proven: bool,
    /// A portal link's exports so far (at most [`EXPORTS_PER_LINK`]).
    #[serde(default)]
    pub exports: u8,
}

impl Record for GuardianTokenRecord {
    const KIND: Kind = Kind::GuardianToken;
    const NAME: &'static str = "guardian token";
    const VERSION: u16 = 1;
}
impl TenantRecord for GuardianTokenRecord {}

/// A declined minor's account, by user id: erased by the purge once `at` is 30 days old.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChildBlockedIndex {
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

impl Record for ChildBlockedIndex {
    const KIND: Kind = Kind::ChildBlocked;
    const NAME: &'static str = "declined minor";
    const VERSION: u16 = 1;
}
impl TenantRecord for ChildBlockedIndex {}

/// A portal action (spec 2.7 GuardianManagementMutate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortalAction {
    Withdraw,
    Export,
    Delete,
}

impl PortalAction {
    pub fn as_str(self) -> &'static str {
        match self {
            PortalAction::Withdraw => "withdraw",
            PortalAction::Export => "export",
            PortalAction::Delete => "delete",
        }
    }
}

/// A guardian command. The HTTP layer checks the forms' CSRF values before it sends one.
#[derive(Clone)]
pub enum GuardianCmd {
    /// A held child asks `guardian` (normalised) for consent, after its password was checked
    /// off the actor (`credential` from `LoginBegin`).
    Request {
        email: String,
        credential: Credential,
        password_ok: bool,
        guardian: String,
        ip: std::net::IpAddr,
    },
    /// The consent page's look at its link (nothing is used).
    ConsentView { token: String },
    /// The guardian's answer.
    Consent { token: String, accept: bool },
    /// The guardian proves adulthood with the EU wallet: an age check tied to the link.
    WalletBegin { token: String, ip: std::net::IpAddr },
    /// The portal's look at its link.
    PortalView { token: String },
    /// A portal action; a deletion without `confirm_nonce` answers the nonce to send.
    Portal {
        token: String,
        action: PortalAction,
        confirm_nonce: Option<String>,
    },
    /// An export's download.
    Download { token: String },
}

impl std::fmt::Debug for GuardianCmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GuardianCmd::Request { .. } => "GuardianCmd::Request",
            GuardianCmd::ConsentView { .. } => "GuardianCmd::ConsentView",
            GuardianCmd::Consent { .. } => "GuardianCmd::Consent",
            GuardianCmd::WalletBegin { .. } => "GuardianCmd::WalletBegin",
            GuardianCmd::PortalView { .. } => "GuardianCmd::PortalView",
            GuardianCmd::Portal { .. } => "GuardianCmd::Portal",
            GuardianCmd::Download { .. } => "GuardianCmd::Download",
        })
    }
}

impl GuardianCmd {
    /// Whether the command only reads.
    pub fn reads_only(&self) -> bool {
        matches!(
            self,
            GuardianCmd::ConsentView { .. }
                | GuardianCmd::PortalView { .. }
                | GuardianCmd::Download { .. }
        )
    }
}

/// The tenant as a guardian's page shows it.
#[derive(Clone, Debug)]
pub struct GuardianTenant {
    pub name: String,
    pub default_locale: String,
}

/// What the consent page shows.
#[derive(Clone, Debug)]
pub struct ConsentView {
    pub tenant: GuardianTenant,
    pub child_email: String,
    pub controller: String,
    pub lawful_basis: String,
    pub purposes: Vec<String>,
    pub data_categories: Vec<String>,
    pub retention: String,
    pub expires_at: OffsetDateTime,
    /// Whether the guardian may prove adulthood with the EU wallet here.
    pub wallet_available: bool,
    /// Whether the guardian did.
    pub adult_proven: bool,
}

/// What the portal shows (spec 2.7 GuardianPortalContext, without the page's CSRF value).
#[derive(Clone, Debug)]
pub struct PortalView {
    pub tenant: GuardianTenant,
    pub child_email: String,
    pub status: ChildStatus,
    pub registered_at: OffsetDateTime,
    pub last_login_at: Option<OffsetDateTime>,
    pub data_categories: Vec<String>,
    pub receipt: Option<ConsentReceipt>,
    pub controller: String,
    pub actions: Vec<PortalAction>,
    /// After a deletion's first call: the nonce its second call must bring.
    pub confirm_token: Option<String>,
}

/// What a guardian command answers.
pub enum GuardianAnswer {
    Requested {
        expires_at: OffsetDateTime,
    },
    Consent(Box<ConsentView>),
    Answered {
        tenant: GuardianTenant,
        status: ChildStatus,
    },
    /// The wallet age check the guardian started (`EudiAnswer::Begun`).
    WalletBegun(Box<super::eudi::EudiAnswer>),
    Portal(Box<PortalView>),
    /// The account was erased.
    Deleted {
        tenant: GuardianTenant,
    },
    Archive(serde_json::Value),
}

/// The archive and the child's address stay out of logs.
impl std::fmt::Debug for GuardianAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GuardianAnswer::Requested { .. } => "GuardianAnswer::Requested",
            GuardianAnswer::Consent(_) => "GuardianAnswer::Consent",
            GuardianAnswer::Answered { .. } => "GuardianAnswer::Answered",
            GuardianAnswer::WalletBegun(_) => "GuardianAnswer::WalletBegun",
            GuardianAnswer::Portal(_) => "GuardianAnswer::Portal",
            GuardianAnswer::Deleted { .. } => "GuardianAnswer::Deleted",
            GuardianAnswer::Archive(_) => "GuardianAnswer::Archive",
        })
    }
}

impl UserRecord {
    /// Whether the account may hold no session or token: blocked by the tenant's admins, or a
    /// minor's account without a guardian's consent (held, or declined).
    pub fn suspended(&self) -> bool {
        self.blocked_at.is_some() || self.guardian_gate().is_err()
    }

    /// Whether the account may sign in as far as guardian consent goes.
    pub fn guardian_gate(&self) -> Result<(), TenantError> {
        match self.guardian.as_ref().map(|g| g.status) {
            Some(ChildStatus::Held) => Err(TenantError::GuardianConsentPending),
            Some(ChildStatus::Blocked) => Err(TenantError::GuardianConsentDeclined),
            _ => Ok(()),
        }
    }
}

/// Whole years from `born` to `today`.
fn age_on(born: time::Date, today: time::Date) -> i32 {
    let mut age = today.year() - born.year();
    if (today.month() as u8, today.day()) < (born.month() as u8, born.day()) {
        age -= 1;
    }
    age
}

impl TenantState {
    fn guardian_tenant(&self) -> GuardianTenant {
        GuardianTenant {
            name: self.cx.info.name.clone(),
            default_locale: self.cx.settings.users.default_locale.clone(),
        }
    }

    fn controller(&self) -> String {
        self.cx
            .settings
            .minors
            .controller_name
            .clone()
            .unwrap_or_else(|| self.cx.info.name.clone())
    }

    /// For a registration under minor protection: whether the new account is held. With the
    /// protection off, `None`. A wallet's proof decides when it says enough: over a threshold
    /// at or above the consent age is an adult, under one at or below it a minor. Otherwise
    /// the date of birth decides; with neither, the registration is refused.
    pub(super) fn guardian_hold(
        &self,
        r: &Registration,
        wallet: Option<(bool, u8)>,
        now: OffsetDateTime,
    ) -> Result<Option<bool>, TenantError> {
        let minors = &self.cx.settings.minors;
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
            None => Err(TenantError::DateOfBirthRequired),
        }
    }

    /// Whether a sign-up that brings no age may make an account: not under minor protection.
    pub(super) fn age_unknown_signup(&self) -> Result<(), TenantError> {
        if self.cx.settings.minors.minor_protection_enabled {
            return Err(TenantError::AgeRequired);
        }
        Ok(())
    }

    /// Whether someone born on `born` (`YYYY-MM-DD`) has the tenant's consent age.
    pub(super) fn adult_for_consent(&self, born: &str, now: OffsetDateTime) -> bool {
        let format = time::macros::format_description!("[year]-[month]-[day]");
        time::Date::parse(born, &format).is_ok_and(|b| {
            age_on(b, now.date()) >= i32::from(self.cx.settings.minors.digital_consent_age)
        })
    }

    /// A new minor's account, held.
    pub(super) fn hold_child(user: &mut UserRecord, now: OffsetDateTime) {
        user.guardian = Some(ChildConsent {
            status: ChildStatus::Held,
            status_at: now,
            asked: None,
            consent_token: None,
            consented_by: None,
            receipt: None,
        });
    }

    fn put_guardian_token(
        &self,
        batch: &mut TenantBatch,
        rec: &GuardianTokenRecord,
    ) -> Result<String, TenantError> {
        let token = self.link_token();
        batch.put(&sha256(token.as_bytes()), rec)?;
        Ok(token)
    }

    /// The live link of `purpose` behind `token`, with its child; anything else is
    /// `GuardianInvalid`, and a dead link found on the way is staged for removal.
    fn guardian_link(
        &self,
        batch: &mut TenantBatch,
        token: &str,
        purpose: GuardianPurpose,
        now: OffsetDateTime,
    ) -> Result<(GuardianTokenRecord, UserRecord), TenantError> {
        let hash = sha256(token.as_bytes());
        let Some(rec) = self.cx.store.get::<GuardianTokenRecord>(&hash)? else {
            return Err(TenantError::GuardianInvalid);
        };
        if rec.purpose != purpose {
            return Err(TenantError::GuardianInvalid);
        }
        let child = self.user(rec.child)?;
        let live = rec.expires_at > now;
        let child = match child {
            Some(c) if live && c.guardian.is_some() => c,
            _ => {
                batch.remove(Kind::GuardianToken, &hash);
                return Err(TenantError::GuardianInvalid);
            }
        };
        // Portal and export links work only for the guardian who consented (a child who asked
        // someone else after a withdrawal does not take the portal from them).
        if purpose != GuardianPurpose::Consent
            && child
                .guardian
                .as_ref()
                .and_then(|g| g.consented_by.as_deref())
                != Some(rec.guardian.as_str())
        {
            batch.remove(Kind::GuardianToken, &hash);
            return Err(TenantError::GuardianInvalid);
        }
        // A consent link is the child's one live link.
        if purpose == GuardianPurpose::Consent
            && child
                .guardian
                .as_ref()
                .and_then(|g| g.consent_token.as_deref())
                != Some(hex::encode(hash).as_str())
        {
            batch.remove(Kind::GuardianToken, &hash);
            return Err(TenantError::GuardianInvalid);
        }
        Ok((rec, child))
    }

    /// Counts a call of the guardian routes from `ip` (they need no key).
    fn guardian_call(&mut self, ip: std::net::IpAddr) -> Result<(), TenantError> {
        self.guardian
            .calls
            .hit(&crate::throttle::throttle_ip(ip), std::time::Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })
    }

    pub fn guardian_cmd(
        &mut self,
        cmd: GuardianCmd,
        ip: std::net::IpAddr,
        ctx: &AuditContext,
    ) -> Result<(GuardianAnswer, Vec<MailJob>), TenantError> {
        self.guardian_call(ip)?;
        let now = OffsetDateTime::now_utc();
        match cmd {
            GuardianCmd::Request {
                email,
                credential,
                password_ok,
                guardian,
                ip,
            } => self.request_consent(&email, (&credential, password_ok), &guardian, ip, ctx),
            GuardianCmd::ConsentView { token } => {
                let mut batch = self.cx.store.batch();
                let found = self.guardian_link(&mut batch, &token, GuardianPurpose::Consent, now);
                self.cx.store.apply(batch)?;
                let (rec, child) = found?;
                if child.guardian.as_ref().map(|g| g.status) != Some(ChildStatus::Held) {
                    return Err(TenantError::GuardianInvalid);
                }
                let m = &self.cx.settings.minors;
                let view = ConsentView {
                    tenant: self.guardian_tenant(),
                    child_email: child.email.clone().unwrap_or_default(),
                    controller: self.controller(),
                    lawful_basis: m.lawful_basis.clone(),
                    purposes: m.purposes.clone(),
                    data_categories: m.data_categories.clone(),
                    retention: m.retention.clone(),
                    expires_at: rec.expires_at,
                    wallet_available: self.guardian_wallet_available(now),
                    adult_proven: rec.adult_proven,
                };
                Ok((GuardianAnswer::Consent(Box::new(view)), Vec::new()))
            }
            GuardianCmd::Consent { token, accept } => self.answer_consent(&token, accept, ctx),
            GuardianCmd::WalletBegin { token, ip } => {
                let mut batch = self.cx.store.batch();
                let found = self.guardian_link(&mut batch, &token, GuardianPurpose::Consent, now);
                self.cx.store.apply(batch)?;
                let (_, child) = found?;
                if child.guardian.as_ref().map(|g| g.status) != Some(ChildStatus::Held) {
                    return Err(TenantError::GuardianInvalid);
                }
                let link = sha256(token.as_bytes());
                let begun =
                    self.eudi_begin(super::eudi::EudiPurpose::Age, None, ip, now, Some(link))?;
                Ok((GuardianAnswer::WalletBegun(Box::new(begun)), Vec::new()))
            }
            GuardianCmd::PortalView { token } => {
                let mut batch = self.cx.store.batch();
                let found = self.guardian_link(&mut batch, &token, GuardianPurpose::Portal, now);
                self.cx.store.apply(batch)?;
                let (_, child) = found?;
                let view = self.portal_view(&child, None)?;
                Ok((GuardianAnswer::Portal(Box::new(view)), Vec::new()))
            }
            GuardianCmd::Portal {
                token,
                action,
                confirm_nonce,
            } => self.portal_action(&token, action, confirm_nonce, ctx),
            GuardianCmd::Download { token } => {
                let mut batch = self.cx.store.batch();
                let found = self.guardian_link(&mut batch, &token, GuardianPurpose::Export, now);
                self.cx.store.apply(batch)?;
                let (rec, child) = found?;
                let sealed = rec.archive.ok_or(TenantError::GuardianInvalid)?;
                let plain = self
                    .cx
                    .master_key
                    .open(&self.user_aad(child.id, "guardian_export"), &sealed)?;
                let archive = serde_json::from_slice(&plain)
                    .map_err(|e| TenantError::Internal(e.to_string()))?;
                Ok((GuardianAnswer::Archive(archive), Vec::new()))
            }
        }
    }

    /// `POST /v1/auth/parental-consent`: the child's password proves it is them; a held
    /// account gets a new consent link mailed to `guardian` (the previous one dies).
    fn request_consent(
        &mut self,
        email: &str,
        (credential, password_ok): (&Credential, bool),
        guardian: &str,
        ip: std::net::IpAddr,
        ctx: &AuditContext,
    ) -> Result<(GuardianAnswer, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let mut fx = self.effects();
        // As a login: a wrong password finishing after the block began still counts.
        let attempt = Attempt::new(email, ip, Captcha::Off);
        if let Err(refused) = self.login_gate(&attempt) {
            if !password_ok {
                self.count_failed_login(&mut fx.batch, &attempt, credential.user_id, ctx)?;
                self.commit(fx)?;
            }
            return Err(refused);
        }
        let Some(mut child) = self.proven_user(email, credential, password_ok)? else {
            self.count_failed_login(&mut fx.batch, &attempt, credential.user_id, ctx)?;
            self.audit_into(
                &mut fx.batch,
                "guardian.consent_request_failed",
                ctx,
                serde_json::json!({ "user_id": credential.user_id, "reason": "invalid_credentials" }),
            )?;
            return self.fail(fx, TenantError::InvalidCredentials);
        };
        self.cx.login.succeed(&attempt);
        let Some(mut g) = child
            .guardian
            .clone()
            .filter(|g| g.status == ChildStatus::Held)
        else {
            return Err(TenantError::GuardianConsentNotPending);
        };
        if child.blocked_at.is_some() {
            return Err(TenantError::UserBlocked);
        }
        if guardian == email {
            return Err(TenantError::GuardianInvalid);
        }
        // Once a guardian consented (and withdrew), only that guardian is asked again.
        if g.consented_by.as_deref().is_some_and(|c| c != guardian) {
            return Err(TenantError::GuardianOther);
        }
        self.guardian
            .asks
            .hit(&child.id, std::time::Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
        if let Some(old) = g.consent_token.take().and_then(|h| hex::decode(h).ok()) {
            fx.batch.remove(Kind::GuardianToken, &old);
        }
        let expires_at = now + CONSENT_TTL;
        let token = self.put_guardian_token(
            &mut fx.batch,
            &GuardianTokenRecord {
                purpose: GuardianPurpose::Consent,
                child: child.id,
                guardian: guardian.to_owned(),
                expires_at,
                confirm: None,
                archive: None,
                adult_proven: false,
                exports: 0,
            },
        )?;
        g.consent_token = Some(hex::encode(sha256(token.as_bytes())));
        g.asked = Some(guardian.to_owned());
        child.guardian = Some(g);
        fx.batch.put(child.id.as_bytes(), &child)?;
        let link = self.link("v1/guardian/consent", &token);
        fx.locale = child.locale.clone();
        self.queue_mail(
            &mut fx,
            guardian,
            MailKind::GuardianConsent {
                link,
                child_email: email.to_owned(),
            },
        )?;
        self.audit_into(
            &mut fx.batch,
            "guardian.consent_requested",
            ctx,
            serde_json::json!({ "user_id": child.id }),
        )?;
        let mail = self.commit(fx)?;
        Ok((GuardianAnswer::Requested { expires_at }, mail))
    }

    /// The guardian's answer on the consent page: the link is used either way.
    fn answer_consent(
        &mut self,
        token: &str,
        accept: bool,
        ctx: &AuditContext,
    ) -> Result<(GuardianAnswer, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let mut fx = self.effects();
        let (rec, mut child) =
            match self.guardian_link(&mut fx.batch, token, GuardianPurpose::Consent, now) {
                Ok(found) => found,
                Err(e) => return self.fail(fx, e),
            };
        fx.batch
            .remove(Kind::GuardianToken, &sha256(token.as_bytes()));
        let Some(mut g) = child
            .guardian
            .clone()
            .filter(|g| g.status == ChildStatus::Held)
        else {
            return self.fail(fx, TenantError::GuardianInvalid);
        };
        g.consent_token = None;
        g.status_at = now;
        let method = if rec.adult_proven {
            "eudi_wallet"
        } else {
            "email"
        };
        let event = if accept {
            let m = &self.cx.settings.minors;
            g.status = ChildStatus::Active;
            g.consented_by = Some(rec.guardian.clone());
            g.receipt = Some(ConsentReceipt {
                consented_at: now,
                lawful_basis: m.lawful_basis.clone(),
                purposes: m.purposes.clone(),
                data_categories: m.data_categories.clone(),
                retention: m.retention.clone(),
                controller: self.controller(),
                withdrawal_available: true,
                consent_method: method.to_owned(),
            });
            fx.batch.remove(Kind::ChildBlocked, child.id.as_bytes());
            self.emit_event(
                &mut fx.batch,
                "guardian.consent_granted",
                serde_json::json!({ "user_id": child.id, "consent_method": method }),
            )?;
            "guardian.consent_granted"
        } else {
            g.status = ChildStatus::Blocked;
            fx.batch
                .put(child.id.as_bytes(), &ChildBlockedIndex { at: now })?;
            "guardian.consent_declined"
        };
        let status = g.status;
        let dpia =
            self.cx.settings.minors.dpia.as_ref().map(
                |d| serde_json::json!({ "dpia_key": d.dpia_key, "dpia_version": d.dpia_version }),
            );
        child.guardian = Some(g);
        fx.batch.put(child.id.as_bytes(), &child)?;
        self.audit_into(
            &mut fx.batch,
            event,
            ctx,
            serde_json::json!({ "user_id": child.id, "consent_method": method, "dpia": dpia }),
        )?;
        let mail = self.commit(fx)?;
        Ok((
            GuardianAnswer::Answered {
                tenant: self.guardian_tenant(),
                status,
            },
            mail,
        ))
    }

    fn portal_view(
        &self,
        child: &UserRecord,
        confirm_token: Option<String>,
    ) -> Result<PortalView, TenantError> {
        let g = child
            .guardian
            .as_ref()
            .ok_or(TenantError::GuardianInvalid)?;
        let actions = match g.status {
            ChildStatus::Active => vec![
                PortalAction::Withdraw,
                PortalAction::Export,
                PortalAction::Delete,
            ],
            ChildStatus::Held | ChildStatus::Blocked => {
                vec![PortalAction::Export, PortalAction::Delete]
            }
        };
        Ok(PortalView {
            tenant: self.guardian_tenant(),
            child_email: child.email.clone().unwrap_or_default(),
            status: g.status,
            registered_at: child.created_at,
            last_login_at: child.last_sign_in_at,
            data_categories: g
                .receipt
                .as_ref()
                .map(|r| r.data_categories.clone())
                .unwrap_or_else(|| self.cx.settings.minors.data_categories.clone()),
            receipt: g.receipt.clone(),
            controller: g
                .receipt
                .as_ref()
                .map(|r| r.controller.clone())
                .unwrap_or_else(|| self.controller()),
            actions,
            confirm_token,
        })
    }

    /// A portal action by the guardian who consented.
    fn portal_action(
        &mut self,
        token: &str,
        action: PortalAction,
        confirm_nonce: Option<String>,
        ctx: &AuditContext,
    ) -> Result<(GuardianAnswer, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let mut fx = self.effects();
        let (mut rec, mut child) =
            match self.guardian_link(&mut fx.batch, token, GuardianPurpose::Portal, now) {
                Ok(found) => found,
                Err(e) => return self.fail(fx, e),
            };
        let portal_view = self.portal_view(&child, None)?;
        if !portal_view.actions.contains(&action) {
            return Err(TenantError::GuardianConsentNotPending);
        }
        let hash = sha256(token.as_bytes());
        let ids = serde_json::json!({ "user_id": child.id, "action": action.as_str() });
        match action {
            PortalAction::Withdraw => {
                let Some(mut g) = child.guardian.clone() else {
                    return Err(TenantError::GuardianInvalid);
                };
                g.status = ChildStatus::Held;
                g.status_at = now;
                child.guardian = Some(g);
                fx.batch.put(child.id.as_bytes(), &child)?;
                let ended = self.revoke_user_sessions(&mut fx.batch, child.id, None)?;
                if ended > 0 {
                    self.emit_session_revoked(
                        &mut fx.batch,
                        child.id,
                        super::webhooks::Revoked::All,
                        "guardian_consent_withdrawn",
                    )?;
                }
                self.emit_event(
                    &mut fx.batch,
                    "guardian.consent_withdrawn",
                    serde_json::json!({ "user_id": child.id }),
                )?;
                self.audit_into(&mut fx.batch, "guardian.consent_withdrawn", ctx, ids)?;
                let mail = self.commit(fx)?;
                let view = self.portal_view(&child, None)?;
                Ok((GuardianAnswer::Portal(Box::new(view)), mail))
            }
            PortalAction::Export => {
                if rec.exports >= EXPORTS_PER_LINK {
                    let left = (rec.expires_at - now).whole_seconds().max(1);
                    return Err(TenantError::RateLimited {
                        retry_after: u64::try_from(left).unwrap_or(1),
                    });
                }
                rec.exports += 1;
                fx.batch.put(&hash, &rec)?;
                let archive = self.export_of(&child, now)?;
                let plain = serde_json::to_vec(&archive)
                    .map_err(|e| TenantError::Internal(e.to_string()))?;
                let sealed = self
                    .cx
                    .master_key
                    .seal(&self.user_aad(child.id, "guardian_export"), &plain)?;
                let download = self.put_guardian_token(
                    &mut fx.batch,
                    &GuardianTokenRecord {
                        purpose: GuardianPurpose::Export,
                        child: child.id,
                        guardian: rec.guardian.clone(),
                        expires_at: now + EXPORT_TTL,
                        confirm: None,
                        archive: Some(sealed),
                        adult_proven: false,
                        exports: 0,
                    },
                )?;
                let link = self.link("v1/guardian/export", &download);
                self.queue_mail(
                    &mut fx,
                    &rec.guardian,
                    MailKind::GuardianExport {
                        link,
                        child_email: child.email.clone().unwrap_or_default(),
                    },
                )?;
                self.audit_into(&mut fx.batch, "guardian.data_exported", ctx, ids)?;
                let mail = self.commit(fx)?;
                Ok((GuardianAnswer::Portal(Box::new(portal_view)), mail))
            }
            PortalAction::Delete => {
                let confirmed = match (&rec.confirm, &confirm_nonce) {
                    (Some((want, until)), Some(nonce)) => {
                        *until > now.unix_timestamp()
                            && tessera_storage::ct_eq(
                                want.as_bytes(),
                                hex::encode(sha256(nonce.as_bytes())).as_bytes(),
                            )
                    }
                    _ => false,
                };
                if confirm_nonce.is_some() && !confirmed {
                    return Err(TenantError::GuardianInvalid);
                }
                if !confirmed {
                    let nonce = random_token(32);
                    rec.confirm = Some((
                        hex::encode(sha256(nonce.as_bytes())),
                        (now + CONFIRM_TTL).unix_timestamp(),
                    ));
                    fx.batch.put(&hash, &rec)?;
                    self.commit(fx)?;
                    let view = self.portal_view(&child, Some(nonce))?;
                    return Ok((GuardianAnswer::Portal(Box::new(view)), Vec::new()));
                }
                fx.batch.remove(Kind::GuardianToken, &hash);
                self.erase_child(&mut fx, &child)?;
                // The record of the erasure names the erased id and nothing else.
                self.audit_into(
                    &mut fx.batch,
                    "guardian.account_deleted",
                    ctx,
                    serde_json::json!({ "deleted_user_id": child.id }),
                )?;
                let mail = self.commit(fx)?;
                Ok((
                    GuardianAnswer::Deleted {
                        tenant: self.guardian_tenant(),
                    },
                    mail,
                ))
            }
        }
    }

    /// Whether a guardian may prove adulthood with the wallet: age verification on, and a
    /// verifier certificate that has not expired.
    fn guardian_wallet_available(&self, now: OffsetDateTime) -> bool {
        self.cx.settings.eudi_age.age_verification_enabled
            && self
                .eudi
                .verifier
                .as_ref()
                .is_some_and(|v| v.not_after > now.unix_timestamp())
    }

    /// A wallet proved the guardian of the consent link `link` (its token's SHA-256) an adult.
    pub(super) fn mark_guardian_adult(
        &self,
        batch: &mut TenantBatch,
        link: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        if let Some(mut rec) = self.cx.store.get::<GuardianTokenRecord>(link)? {
            if rec.purpose == GuardianPurpose::Consent && rec.expires_at > now {
                rec.adult_proven = true;
                batch.put(link, &rec)?;
            }
        }
        Ok(())
    }

    /// Stages the erasure of a minor's account (with its guardian links, see
    /// `erase_user`); the messages queued about it are withdrawn from delivery.
    fn erase_child(&mut self, fx: &mut Effects, child: &UserRecord) -> Result<(), TenantError> {
        let withdrawn = self.erase_user(fx, child)?;
        self.cx.runtime.outbound.withdraw(&withdrawn);
        Ok(())
    }

    /// The keys of the guardian links (consent, portal, export) about any of `users`.
    pub(super) fn guardian_link_keys(
        &self,
        users: &std::collections::HashSet<Uuid>,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        self.keys_where::<GuardianTokenRecord>(|r| users.contains(&r.child))
    }

    /// Removes up to `limit` expired guardian links (an export's sealed archive among them);
    /// answers how many.
    pub(super) fn sweep_guardian(
        &self,
        batch: &mut TenantBatch,
        as_of: OffsetDateTime,
        limit: usize,
    ) -> Result<usize, TenantError> {
        let mut n = 0;
        for item in self.cx.store.scan::<GuardianTokenRecord>(b"") {
            if n == limit {
                break;
            }
            let (key, rec) = item?;
            if rec.expires_at <= as_of {
                batch.remove(Kind::GuardianToken, &key);
                n += 1;
            }
        }
        Ok(n)
    }

    /// `POST /v1/guardian/management-link`: a portal link to `guardian` when they consented
    /// for the account at `child_email`; otherwise as much written, nothing sent.
    pub fn guardian_management_link(
        &mut self,
        child_email: &str,
        guardian: &str,
        ip: std::net::IpAddr,
        ctx: &AuditContext,
    ) -> Result<Vec<MailJob>, TenantError> {
        // Before any lookup: the refusal tells nothing about the addresses.
        self.guardian_call(ip)?;
        let now = OffsetDateTime::now_utc();
        let child = self.user_by_email(child_email)?.filter(|c| {
            c.guardian
                .as_ref()
                .is_some_and(|g| g.consented_by.as_deref() == Some(guardian))
        });
        let rec = GuardianTokenRecord {
            purpose: GuardianPurpose::Portal,
            child: child.as_ref().map_or_else(Uuid::now_v7, |c| c.id),
            guardian: guardian.to_owned(),
            expires_at: now + PORTAL_TTL,
            confirm: None,
            archive: None,
            adult_proven: false,
            exports: 0,
        };
        let allowed = child
            .as_ref()
            .is_some_and(|c| self.guardian_mail_allowed(c.id, guardian));
        let Some(child) = child.filter(|_| allowed) else {
            let records = [serde_json::to_value(&rec)]
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| TenantError::Internal(e.to_string()))?;
            let kind = MailKind::GuardianPortal {
                link: self.link("v1/guardian/portal", &self.link_token()),
                child_email: child_email.to_owned(),
            };
            self.write_decoy(&self.decoy_of(guardian, kind, &records)?)?;
            return Ok(Vec::new());
        };
        let mut fx = self.effects();
        let token = self.put_guardian_token(&mut fx.batch, &rec)?;
        fx.locale = child.locale.clone();
        self.queue_mail(
            &mut fx,
            guardian,
            MailKind::GuardianPortal {
                link: self.link("v1/guardian/portal", &token),
                child_email: child_email.to_owned(),
            },
        )?;
        self.audit_into(
            &mut fx.batch,
            "guardian.management_link_sent",
            ctx,
            serde_json::json!({ "user_id": child.id }),
        )?;
        self.commit(fx)
    }

    /// Portal links are spaced like other mail to one account.
    fn guardian_mail_allowed(&mut self, child: Uuid, guardian: &str) -> bool {
        let mut seed = child.as_bytes().to_vec();
        seed.extend_from_slice(guardian.as_bytes());
        let digest = sha256(&seed);
        let mut key = [0u8; 16];
        key.copy_from_slice(&digest[..16]);
        self.mail_allowed(Uuid::from_bytes(key))
    }

    /// Erases declined minors' accounts 30 days after the decline (the daily purge).
    pub(super) fn purge_declined(
        &mut self,
        fx: &mut Effects,
        as_of: OffsetDateTime,
        limit: usize,
    ) -> Result<usize, TenantError> {
        let mut due = Vec::new();
        for item in self.cx.store.scan::<ChildBlockedIndex>(b"") {
            let (key, ix) = item?;
            if due.len() == limit {
                break;
            }
            if ix.at + DECLINED_RETENTION <= as_of {
                due.push(key);
            }
        }
        let mut n = 0;
        for key in due {
            fx.batch.remove(Kind::ChildBlocked, &key);
            let Ok(id) = Uuid::from_slice(&key) else {
                continue;
            };
            let Some(child) = self.user(id)? else {
                continue;
            };
            if child.guardian.as_ref().map(|g| g.status) != Some(ChildStatus::Blocked) {
                continue;
            }
            self.erase_child(fx, &child)?;
            // The record of the erasure names the erased id and nothing else.
            self.audit_into(
                &mut fx.batch,
                "guardian.declined_account_erased",
                &AuditContext::default(),
                serde_json::json!({ "deleted_user_id": child.id }),
            )?;
            n += 1;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
