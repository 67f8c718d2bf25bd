//! Guests (anonymous users): sign-in with its limits, the claim that turns a guest into a
//! registered user with the same id, the purge of stale guests, and the monthly-active-user
//! count that caps new guests.

mod error;
pub mod memory;
pub mod msg;

use std::{net::IpAddr, time::Instant};

use serde::{Deserialize, Serialize};
use tessera_storage::Kind;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    audit::AuditContext,
    messages::{Bearer, Grant, Registration, User},
    records::UserRecord,
};
use crate::{error::TenantError, outbound::MailJob, throttle::throttle_ip};

pub use super::messages::PurgeReport;
use crate::tenant::ctx::TenantCtx;
use crate::tenant::guests::memory::Guests;
pub use error::GuestError;

/// Largest `public_metadata` of a guest, serialised.
pub const MAX_METADATA_BYTES: usize = 16 * 1024;
/// Guests deleted per tenant per purge run at most (spec section 8).
pub const PURGE_LIMIT: usize = 1000;

/// `user id` -> marker: the tenant's guests, so the purge never scans registered users.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct GuestIndex {}

tessera_storage::record!(GuestIndex in TenantRecord: Kind::Guest, "guest index", version 1);

impl Guests {
    /// This month's active users so far.
    fn active_this_month(&self, cx: &TenantCtx, now: OffsetDateTime) -> u64 {
        cx.mau.in_month(now)
    }

    /// A new guest with a session: the tenant must allow guests, the address and the key must
    /// be under their limits, and the month under the tenant's cap.
    pub fn anonymous_signin(
        &mut self,
        cx: &mut TenantCtx,
        ip: IpAddr,
        public_metadata: serde_json::Value,
        ctx: &AuditContext,
    ) -> Result<(Grant, Vec<MailJob>), TenantError> {
        if !cx.settings.anonymous.anonymous_signins_enabled {
            return Err(TenantError::Guest(GuestError::Disabled));
        }
        let now = OffsetDateTime::now_utc();
        let at = Instant::now();
        self.per_ip
            .hit(&throttle_ip(ip), at)
            .map_err(|retry_after| TenantError::Guest(GuestError::RateLimited { retry_after }))?;
        self.per_key
            .hit(&(), at)
            .map_err(|retry_after| TenantError::Guest(GuestError::RateLimited { retry_after }))?;
        if cx
            .info
            .mau_cap
            .is_some_and(|cap| self.active_this_month(cx, now) >= cap)
        {
            return Err(TenantError::Guest(GuestError::MauExhausted));
        }
        let mut fx = cx.effects();
        let mut user = UserRecord::blank(Uuid::now_v7(), now);
        user.is_anonymous = true;
        user.public_metadata = public_metadata;
        cx.count_active(&mut fx.batch, None, now)?;
        cx.put_new_user(&mut fx.batch, &user)?;
        fx.batch.put(user.id.as_bytes(), &GuestIndex::default())?;
        let grant = cx.open_session(
            &mut fx.batch,
            &user,
            (1, vec!["anonymous".into()]),
            ctx,
            now,
        )?;
        cx.audit_into(
            &mut fx.batch,
            "auth.anonymous.signin",
            ctx,
            serde_json::json!({ "user_id": user.id, "session_id": grant.session_id }),
        )?;
        let mail = cx.commit(fx)?;
        Ok((grant, mail))
    }

    /// Claims the guest behind `bearer` by registration (see `register_or_claim`). A user that
    /// is not (or no longer) a guest is `AlreadyClaimed`: two claims racing are serialised here
    /// and the second finds a registered user.
    pub fn claim(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        registration: Registration,
        ctx: &AuditContext,
    ) -> Result<(User, Vec<MailJob>), TenantError> {
        let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
        if !user.is_anonymous {
            return Err(TenantError::Guest(GuestError::AlreadyClaimed));
        }
        cx.register_or_claim(registration, Some(user), ctx)
    }

    /// Deletes (or, dry, counts) up to [`PURGE_LIMIT`] guests inactive for longer than the
    /// tenant's `anonymous_user_ttl_days` as of `as_of`, with their sessions; one audit event
    /// per run.
    pub fn purge_guests(
        &mut self,
        cx: &mut TenantCtx,
        as_of: OffsetDateTime,
        dry_run: bool,
    ) -> Result<PurgeReport, TenantError> {
        let ttl = Duration::days(i64::from(cx.settings.anonymous.anonymous_user_ttl_days));
        let cutoff = as_of - ttl;
        let mut fx = cx.effects();
        let mut purged = 0;
        let mut guests = Vec::new();
        for item in cx.store.scan::<GuestIndex>(b"") {
            if purged == PURGE_LIMIT {
                break;
            }
            let (key, _) = item?;
            let Ok(id) = Uuid::from_slice(&key) else {
                continue;
            };
            let Some(user) = cx.user(id)? else {
                fx.batch.remove(Kind::Guest, &key);
                continue;
            };
            if !user.is_anonymous || user.last_active_at >= cutoff {
                continue;
            }
            purged += 1;
            if dry_run {
                continue;
            }
            guests.push(user);
        }
        // Their records, indexes, credentials and per-user audit index, in one walk.
        if !guests.is_empty() {
            cx.erase_user_records(&mut fx, guests)?;
        }
        // Expired challenges and step-up tokens go with the same daily run, and so do the
        // throttle entries with nothing left to hold (their records leave with this batch).
        let swept = if dry_run {
            0
        } else {
            cx.sweep_throttles();
            cx.sweep_challenges(&mut fx.batch, as_of, PURGE_LIMIT)?
                + cx.sweep_oauth_codes(&mut fx.batch, as_of, PURGE_LIMIT)?
                + cx.sweep_social(&mut fx.batch, as_of)?
                + cx.sweep_sso(
                    &mut fx.batch,
                    as_of,
                    crate::tenant::sso::records::SSO_SWEEP_MAX,
                )?
                + cx.sweep_agents(&mut fx.batch, as_of, PURGE_LIMIT)?
                + cx.sweep_eudi(&mut fx.batch, as_of, PURGE_LIMIT)?
                + cx.sweep_webhooks(&mut fx.batch, as_of, PURGE_LIMIT)?
                + cx.sweep_guardian(&mut fx.batch, as_of, PURGE_LIMIT)?
        };
        // Minors whose guardian declined, 30 days on.
        let declined = if dry_run {
            0
        } else {
            cx.purge_declined(&mut fx, as_of, PURGE_LIMIT)?
        };
        cx.audit_into(
            &mut fx.batch,
            "anonymous.purged",
            &AuditContext::default(),
            serde_json::json!({
                "count": purged,
                "dry_run": dry_run,
                "as_of": as_of.unix_timestamp(),
                "ttl_days": cx.settings.anonymous.anonymous_user_ttl_days,
                "expired_challenges_removed": swept,
                "declined_minors_erased": declined,
            }),
        )?;
        cx.commit(fx)?;
        Ok(PurgeReport {
            tenant: cx.info.slug.clone(),
            purged,
            dry_run,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant::accounts::tests::tenant;
    use crate::tenant::usage::month_of;

    #[tokio::test]
    async fn a_purge_run_deletes_at_most_1000_guests_and_never_a_registered_user() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let old = OffsetDateTime::now_utc() - Duration::days(400);
        let mut batch = t.cx.store.batch();
        for _ in 0..1005 {
            let mut g = UserRecord::blank(Uuid::now_v7(), old);
            g.is_anonymous = true;
            batch.put(g.id.as_bytes(), &g).unwrap();
            batch.put(g.id.as_bytes(), &GuestIndex::default()).unwrap();
        }
        // A registered user that is (wrongly) still in the guest index is never purged.
        let registered = UserRecord::blank(Uuid::now_v7(), old);
        batch.put(registered.id.as_bytes(), &registered).unwrap();
        batch
            .put(registered.id.as_bytes(), &GuestIndex::default())
            .unwrap();
        t.cx.store.apply(batch).unwrap();
        let now = OffsetDateTime::now_utc();
        assert_eq!(
            t.guests.purge_guests(&mut t.cx, now, true).unwrap().purged,
            1000
        );
        assert_eq!(
            t.guests.purge_guests(&mut t.cx, now, false).unwrap().purged,
            1000
        );
        assert_eq!(
            t.guests.purge_guests(&mut t.cx, now, false).unwrap().purged,
            5
        );
        assert_eq!(
            t.guests.purge_guests(&mut t.cx, now, false).unwrap().purged,
            0
        );
        assert!(t.cx.user(registered.id).unwrap().is_some());
    }

    #[test]
    fn months_are_utc_calendar_months() {
        let t = time::macros::datetime!(2026-03-31 23:59:59 UTC);
        assert_eq!(month_of(t), "2026-03");
        assert_eq!(month_of(t + Duration::seconds(1)), "2026-04");
    }
}
