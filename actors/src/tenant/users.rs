//! User management by the tenant's admins (the dashboard and management keys), and the
//! users' own GDPR rights: the export of everything held about them and the erasure.
//!
//! The list walks the creation index (`created_at | id`, newest first), so a cursor is a key of
//! that index and users created after a page was read never shift the pages after it. An
//! e-mail prefix is served by the e-mail index (its keys are the normalised, lowercase
//! addresses, and its entries carry `created_at` to sort the matches), a phone number by the
//! phone index; other filters are checked on the users the walk reads, at most
//! [`MAX_EXAMINED`] a page, so no request holds the actor for long.
//!
//! Invariant: every record keyed to a user is found from the user (its indexes, its sessions,
//! its link tokens, its audit index) or by a bounded scan of short-lived records (challenges,
//! the mail queue), and [`TenantCtx::erase_user`] removes all of them in one batch.

mod error;
pub use error::UserError;
pub mod msg;

use std::collections::HashSet;

use tessera_storage::Kind;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{
    audit::{AuditContext, AuditEvent},
    credentials::{Credential, Ending},
    effects::{subject_of, user_audit_key, Effects},
    messages::{
        AdminSessionView, Bearer, HeldCredential, ManagedUser, NewUser, SessionFacts, Trace,
        UserAction, UserActivity, UserDetail, UserFactors, UserPage, UserPatch, UserQuery,
        UserStatus,
    },
    records::{
        created_key, EmailIndex, IndexBuilt, LinkPurpose, PhoneIndex, SessionRecord,
        UserAuditIndex, UserCreatedIndex, UserRecord,
    },
    usage::month_of,
    webhooks::Revoked,
};
use crate::tenant::ctx::TenantCtx;
use crate::{
    error::TenantError,
    outbound::{MailJob, MailKind},
};

/// The user-management flow: it keeps nothing in memory and works on the context.
#[derive(Default)]
pub struct Users;

/// Users a list page reads at most while filtering.
pub const MAX_EXAMINED: usize = 5_000;
/// E-mail prefix matches sorted in memory at most; a broader prefix walks the creation index
/// with the prefix as a filter instead.
pub const MAX_PREFIX_MATCHES: usize = 5_000;
/// An admin's invitation link lives this long.
pub const INVITE_TTL: Duration = Duration::days(7);
/// The audit events an export carries at most (the newest).
pub const MAX_EXPORTED_EVENTS: usize = 10_000;

/// What an admin's change answers: the user's detail as it now stands, and the mail the
/// change queued.
type AdminChange = Result<(UserDetail, Vec<MailJob>), TenantError>;

/// The name of the index build that added the creation index, `created_at` on e-mail index
/// entries and the per-user audit index to tenants written before them.
const USER_INDEXES_V1: &[u8] = b"user-indexes-v1";

impl UserRecord {
    pub fn status(&self) -> UserStatus {
        let guardian = self.guardian.as_ref().map(|g| g.status);
        if self.blocked_at.is_some() || guardian == Some(super::records::ChildStatus::Blocked) {
            UserStatus::Blocked
        } else if guardian == Some(super::records::ChildStatus::Held) {
            UserStatus::Held
        } else if self.is_anonymous {
            UserStatus::Anonymous
        } else if self.email.is_some() && !self.email_verified {
            UserStatus::Unverified
        } else {
            UserStatus::Active
        }
    }

    fn summary(&self) -> ManagedUser {
        ManagedUser::of(
            self.view(),
            self.status(),
            self.blocked_at,
            self.app_metadata.clone(),
        )
    }

    fn matches(&self, q: &UserQuery) -> bool {
        let email_ok = q
            .email_prefix
            .as_deref()
            .is_none_or(|p| self.email.as_deref().is_some_and(|e| e.starts_with(p)));
        let phone_ok = q
            .phone
            .as_deref()
            .is_none_or(|p| self.phone.as_deref() == Some(p));
        let status_ok = q.status.is_none_or(|s| s == self.status());
        let after_ok = q.created_after.is_none_or(|t| self.created_at > t);
        let before_ok = q.created_before.is_none_or(|t| self.created_at < t);
        let signed_ok = q
            .last_sign_in_before
            .is_none_or(|t| self.last_sign_in_at.is_some_and(|s| s < t));
        email_ok && phone_ok && status_ok && after_ok && before_ok && signed_ok
    }
}

impl Users {
    /// This month's active users and the last `days` days' sign-ins, oldest first (at most
    /// 90 days; a day without a record is a day without sign-ins).
    pub(super) fn activity(
        &self,
        cx: &TenantCtx,
        days: u32,
    ) -> Result<super::messages::TenantActivity, TenantError> {
        use super::usage::{activity_key, day_of, month_of, ActivityDay};
        let now = OffsetDateTime::now_utc();
        let mut out = Vec::new();
        for back in (0..days.clamp(1, 90)).rev() {
            let day = day_of(now - Duration::days(i64::from(back)));
            let record = if day == cx.activity.day {
                cx.activity.clone()
            } else {
                cx.store
                    .get::<ActivityDay>(&activity_key(&day))?
                    .unwrap_or(ActivityDay {
                        day,
                        ..ActivityDay::default()
                    })
            };
            out.push(record);
        }
        Ok(super::messages::TenantActivity {
            month: month_of(now),
            active_users: cx.mau.in_month(now),
            days: out,
        })
    }

    /// Builds, once per tenant, the user indexes that came after its first users: the
    /// creation index, `created_at` in e-mail index entries, and the per-user audit index.
    /// One batch: a crash before it lands builds again from scratch at the next start.
    pub(super) fn ensure_user_indexes(&mut self, cx: &mut TenantCtx) -> Result<(), TenantError> {
        if cx.store.get::<IndexBuilt>(USER_INDEXES_V1)?.is_some() {
            return Ok(());
        }
        let mut batch = cx.store.batch();
        let mut users = 0usize;
        for item in cx.store.scan::<UserRecord>(b"") {
            let (_, user) = item?;
            batch.put(
                &created_key(user.created_at, user.id),
                &UserCreatedIndex::default(),
            )?;
            if let Some(email) = &user.email {
                let indexed = cx.store.get::<EmailIndex>(email.as_bytes())?;
                if indexed.is_some_and(|ix| ix.user_id == user.id) {
                    batch.put(email.as_bytes(), &EmailIndex::of(&user))?;
                }
            }
            users += 1;
        }
        for item in cx.store.scan::<AuditEvent>(b"") {
            let (key, event) = item?;
            if let Some(user) = subject_of(&event) {
                batch.put(&user_audit_key(user, &key), &UserAuditIndex::default())?;
            }
        }
        batch.put(
            USER_INDEXES_V1,
            &IndexBuilt {
                at: OffsetDateTime::now_utc(),
            },
        )?;
        cx.store.apply(batch)?;
        if users > 0 {
            tracing::info!(tenant = %cx.info.slug, users, "built the user indexes");
        }
        Ok(())
    }

    /// One page of the users list (see the module's documentation).
    pub fn list_users(&self, cx: &TenantCtx, q: &UserQuery) -> Result<UserPage, TenantError> {
        let limit = q.limit.max(1);
        // The creation bounds narrow the walk: it starts below `created_before` (or the
        // cursor, whichever is lower) and ends at `created_after`.
        let mut start = q.cursor.clone();
        if let Some(before) = q.created_before {
            let bound = created_key(before, Uuid::nil());
            if start.as_ref().is_none_or(|c| *c > bound) {
                start = Some(bound);
            }
        }
        let floor = q.created_after.map(|t| created_key(t, Uuid::max()));
        if let Some(phone) = &q.phone {
            let found = cx.store.get::<PhoneIndex>(phone.as_bytes())?;
            let candidates = match found {
                Some(ix) => cx
                    .user(ix.user_id)?
                    .map(|u| vec![created_key(u.created_at, u.id)])
                    .unwrap_or_default(),
                None => Vec::new(),
            };
            return self.page_of(cx, candidates, start.as_deref(), q, limit);
        }
        if let Some(prefix) = &q.email_prefix {
            let mut matches = Vec::new();
            let mut broad = false;
            for item in cx.store.scan::<EmailIndex>(prefix.as_bytes()) {
                let (_, ix) = item?;
                if matches.len() == MAX_PREFIX_MATCHES {
                    broad = true;
                    break;
                }
                let key = match ix.created_key() {
                    Some(k) => k,
                    None => match cx.user(ix.user_id)? {
                        Some(u) => created_key(u.created_at, u.id),
                        None => continue,
                    },
                };
                matches.push(key);
            }
            if !broad {
                matches.sort_unstable_by(|a, b| b.cmp(a));
                return self.page_of(cx, matches, start.as_deref(), q, limit);
            }
        }
        let mut users = Vec::new();
        let mut examined = 0usize;
        let mut before = start;
        loop {
            let chunk = cx
                .store
                .scan_rev::<UserCreatedIndex>(before.as_deref(), 256)?;
            let exhausted = chunk.len() < 256;
            for (key, _) in chunk {
                if floor.as_ref().is_some_and(|f| key <= *f) {
                    return Ok(UserPage {
                        users,
                        next_cursor: None,
                    });
                }
                before = Some(key.clone());
                examined += 1;
                if let Some(user) = self.user_at(cx, &key)? {
                    if user.matches(q) {
                        users.push(user.summary());
                        if users.len() == limit {
                            return Ok(UserPage {
                                next_cursor: self.more_after(cx, &key, floor.as_deref())?,
                                users,
                            });
                        }
                    }
                }
                if examined >= MAX_EXAMINED {
                    return Ok(UserPage {
                        next_cursor: self.more_after(cx, &key, floor.as_deref())?,
                        users,
                    });
                }
            }
            if exhausted {
                return Ok(UserPage {
                    users,
                    next_cursor: None,
                });
            }
        }
    }

    /// A page from candidate keys already in list order (newest first).
    fn page_of(
        &self,
        cx: &TenantCtx,
        candidates: Vec<Vec<u8>>,
        start: Option<&[u8]>,
        q: &UserQuery,
        limit: usize,
    ) -> Result<UserPage, TenantError> {
        let mut users = Vec::new();
        let mut examined = 0usize;
        let mut rest = candidates
            .into_iter()
            .filter(|k| start.is_none_or(|s| k.as_slice() < s))
            .peekable();
        while let Some(key) = rest.next() {
            examined += 1;
            if let Some(user) = self.user_at(cx, &key)? {
                if user.matches(q) {
                    users.push(user.summary());
                }
            }
            if users.len() == limit || examined >= MAX_EXAMINED {
                let next_cursor = rest.peek().map(|_| key);
                return Ok(UserPage { users, next_cursor });
            }
        }
        Ok(UserPage {
            users,
            next_cursor: None,
        })
    }

    /// The user of a creation-index key.
    fn user_at(&self, cx: &TenantCtx, key: &[u8]) -> Result<Option<UserRecord>, TenantError> {
        let Some(id) = key.get(8..).and_then(|b| Uuid::from_slice(b).ok()) else {
            return Ok(None);
        };
        cx.user(id)
    }

    /// `key` as the next cursor when the creation index goes on below it (above `floor`).
    fn more_after(
        &self,
        cx: &TenantCtx,
        key: &[u8],
        floor: Option<&[u8]>,
    ) -> Result<Option<Vec<u8>>, TenantError> {
        let next = cx.store.scan_rev::<UserCreatedIndex>(Some(key), 1)?;
        let more = next
            .first()
            .is_some_and(|(k, _)| floor.is_none_or(|f| k.as_slice() > f));
        Ok(more.then(|| key.to_vec()))
    }

    fn found(&self, cx: &TenantCtx, id: Uuid) -> Result<UserRecord, TenantError> {
        cx.user(id)?.ok_or(TenantError::NotFound)
    }

    /// Commits an admin's change and answers the user's detail as it now stands, with the
    /// mail the change queued.
    fn committed(&mut self, cx: &mut TenantCtx, fx: Effects, user: &UserRecord) -> AdminChange {
        let mail = cx.commit(fx)?;
        Ok((cx.detail(user)?, mail))
    }

    /// Mails `user` a link of `purpose` at their address for an admin's change (no hosted
    /// page to return to); a user without an address is sent nothing.
    fn admin_link(
        cx: &mut TenantCtx,
        fx: &mut Effects,
        user: &mut UserRecord,
        purpose: LinkPurpose,
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        match user.email.clone() {
            Some(to) => cx.send_link(fx, user, (purpose, None), &to, now),
            None => Ok(()),
        }
    }

    pub fn get_user(&self, cx: &TenantCtx, id: Uuid) -> Result<UserDetail, TenantError> {
        cx.detail(&self.found(cx, id)?)
    }

    /// A user made by an admin: with a password, confirmed or sent a verification link, or
    /// (`invite`) without one and sent a link to choose it.
    pub fn create_user(
        &mut self,
        cx: &mut TenantCtx,
        new: NewUser,
        ctx: &AuditContext,
    ) -> AdminChange {
        if cx.user_by_email(&new.email)?.is_some() {
            return Err(TenantError::User(UserError::EmailInUse));
        }
        let now = OffsetDateTime::now_utc();
        let mut fx = cx.effects();
        let mut user = UserRecord::blank(Uuid::now_v7(), now);
        user.email = Some(new.email.clone());
        user.email_verified = new.email_verified;
        user.password_hash = new.password_hash;
        cx.count_active(&mut fx.batch, None, now)?;
        if new.invite {
            let token = cx.issue_link_for(
                &mut fx.batch,
                &mut user,
                (LinkPurpose::ResetPassword, None),
                INVITE_TTL,
                now,
            )?;
            let link = cx.link("reset-password", &token);
            cx.queue_mail(&mut fx, &new.email, MailKind::Invitation { link })?;
        } else if !new.email_verified {
            Self::admin_link(cx, &mut fx, &mut user, LinkPurpose::VerifyEmail, now)?;
        }
        cx.put_new_user(&mut fx.batch, &user)?;
        cx.emit_user_created(&mut fx.batch, &user, "admin")?;
        cx.audit_into(
            &mut fx.batch,
            "user.created",
            ctx,
            serde_json::json!({
                "user_id": user.id,
                "invited": new.invite,
                "email_verified": new.email_verified,
            }),
        )?;
        self.committed(cx, fx, &user)
    }

    /// An admin's change to a user's address, number or metadata.
    pub fn update_user(
        &mut self,
        cx: &mut TenantCtx,
        id: Uuid,
        patch: UserPatch,
        ctx: &AuditContext,
    ) -> AdminChange {
        let mut user = self.found(cx, id)?;
        let was_verified = user.email_verified;
        // An address the account held without confirming it: confirming one now (that
        // address or another) hands the account to the address's owner.
        let held_unconfirmed = user.email.is_some() && !user.email_verified;
        let now = OffsetDateTime::now_utc();
        let mut fx = cx.effects();
        let mut changed: Vec<&str> = Vec::new();
        if let Some(email) = patch.email.filter(|e| user.email.as_deref() != Some(e)) {
            if cx.user_by_email(&email)?.is_some() {
                return Err(TenantError::User(UserError::EmailInUse));
            }
            if let Some(old) = user.email.take() {
                fx.batch.remove(Kind::UserEmail, old.as_bytes());
                cx.login.forget_account(&old);
            }
            user.email = Some(email.clone());
            user.is_anonymous = false;
            fx.batch.remove(Kind::Guest, user.id.as_bytes());
            fx.batch.put(email.as_bytes(), &EmailIndex::of(&user))?;
            // Links mailed to the old address die with it.
            for slot in [
                user.verify_token.take(),
                user.reset_token.take(),
                user.change_token.take(),
            ] {
                if let Some(h) = slot.and_then(|h| hex::decode(h).ok()) {
                    fx.batch.remove(Kind::LinkToken, &h);
                }
            }
            user.email_verified = patch.email_verified == Some(true);
            if !user.email_verified {
                Self::admin_link(cx, &mut fx, &mut user, LinkPurpose::VerifyEmail, now)?;
            }
            changed.push("email");
        } else if let Some(verified) = patch.email_verified {
            if user.email.is_none() {
                return Err(TenantError::User(UserError::NoEmail));
            }
            if verified != user.email_verified {
                user.email_verified = verified;
                changed.push("email_verified");
            }
        }
        let patch_phone = patch.phone.clone().flatten();
        if let Some(phone) = patch.phone.filter(|p| *p != user.phone) {
            if let Some(p) = &phone {
                if cx.user_by_phone(p)?.is_some_and(|h| h.id != user.id) {
                    return Err(TenantError::User(UserError::PhoneInUse));
                }
            }
            cx.drop_phone(&mut fx.batch, &mut user)?;
            if let Some(p) = phone {
                fx.batch
                    .put(p.as_bytes(), &PhoneIndex { user_id: user.id })?;
                user.phone = Some(p);
                user.phone_verified = true;
            }
            changed.push("phone");
        }
        if let Some(meta) = patch.app_metadata.filter(|m| *m != user.app_metadata) {
            user.app_metadata = meta;
            changed.push("app_metadata");
        }
        if let Some(meta) = patch.public_metadata.filter(|m| *m != user.public_metadata) {
            user.public_metadata = meta;
            changed.push("public_metadata");
        }
        if changed.is_empty() {
            return Ok((cx.detail(&user)?, Vec::new()));
        }
        // A confirmed address that was not one before (unconfirmed, or another address).
        let confirmed = user.email_verified && (!was_verified || changed.contains(&"email"));
        if confirmed && held_unconfirmed {
            // Whoever held the unconfirmed address keeps no way in; the address's owner gets
            // a reset link to set a password. The recovery writes the verified event.
            user.email_verified = false;
            cx.recover_address(&mut fx, &mut user, "admin", ctx)?;
            Self::admin_link(cx, &mut fx, &mut user, LinkPurpose::ResetPassword, now)?;
            // An admin's number stays: the admin set it in this very change.
            if let Some(p) = patch_phone.filter(|_| changed.contains(&"phone")) {
                fx.batch
                    .put(p.as_bytes(), &PhoneIndex { user_id: user.id })?;
                user.phone = Some(p);
                user.phone_verified = true;
            }
        } else if confirmed {
            cx.emit_email_verified(&mut fx.batch, user.id)?;
        }
        fx.batch.put(user.id.as_bytes(), &user)?;
        cx.audit_into(
            &mut fx.batch,
            "user.updated",
            ctx,
            serde_json::json!({ "user_id": user.id, "fields": changed }),
        )?;
        self.committed(cx, fx, &user)
    }

    /// Block, unblock, sign out everywhere, reset MFA, or mail a password-reset link.
    pub fn act_on_user(
        &mut self,
        cx: &mut TenantCtx,
        id: Uuid,
        action: UserAction,
        ctx: &AuditContext,
    ) -> AdminChange {
        let mut user = self.found(cx, id)?;
        let now = OffsetDateTime::now_utc();
        let mut fx = cx.effects();
        let (event, mut metadata) = match action {
            UserAction::Block => {
                if user.blocked_at.is_none() {
                    user.blocked_at = Some(now);
                }
                let mut ended = 0;
                for grants in [false, true] {
                    ended += cx
                        .session_records(user.id, grants)?
                        .iter()
                        .filter(|(k, _)| *k == Kind::Session)
                        .count();
                }
                let removed =
                    cx.end_holds(&mut fx, std::slice::from_mut(&mut user), Ending::Block)?;
                if removed
                    .iter()
                    .any(|k| matches!(k, Credential::Sessions | Credential::OAuthGrants))
                {
                    cx.emit_session_revoked(&mut fx.batch, user.id, Revoked::All, "blocked")?;
                }
                (
                    "user.blocked",
                    serde_json::json!({ "sessions_revoked": ended, "removed": removed }),
                )
            }
            UserAction::Unblock => {
                user.blocked_at = None;
                ("user.unblocked", serde_json::json!({}))
            }
            UserAction::SignOut => {
                let ended = cx.revoke_user_sessions(&mut fx.batch, user.id, None)?;
                if ended > 0 {
                    cx.emit_session_revoked(
                        &mut fx.batch,
                        user.id,
                        Revoked::All,
                        "admin_sign_out",
                    )?;
                }
                (
                    "user.signed_out",
                    serde_json::json!({ "sessions_revoked": ended }),
                )
            }
            UserAction::ResetMfa => {
                let had = user.totp_seed.is_some() || !user.recovery_codes.is_empty();
                user.mfa_enabled = false;
                user.totp_seed = None;
                user.totp_pending = None;
                user.recovery_codes.clear();
                if had {
                    if let Some(email) = user.email.clone() {
                        cx.queue_mail(&mut fx, &email, MailKind::MfaReset)?;
                    }
                }
                ("user.mfa_reset", serde_json::json!({ "had_mfa": had }))
            }
            UserAction::SendPasswordReset => {
                if user.email.is_none() {
                    return Err(TenantError::User(UserError::NoEmail));
                }
                Self::admin_link(cx, &mut fx, &mut user, LinkPurpose::ResetPassword, now)?;
                ("user.password_reset_sent", serde_json::json!({}))
            }
        };
        metadata["user_id"] = serde_json::json!(user.id);
        fx.batch.put(user.id.as_bytes(), &user)?;
        cx.audit_into(&mut fx.batch, event, ctx, metadata)?;
        self.committed(cx, fx, &user)
    }

    /// Erases a user for an admin; answers the queued messages withdrawn from delivery.
    pub fn delete_user(
        &mut self,
        cx: &mut TenantCtx,
        id: Uuid,
        ctx: &AuditContext,
    ) -> Result<Vec<Uuid>, TenantError> {
        let user = self.found(cx, id)?;
        self.erase_and_record(cx, user, "admin", ctx)
    }

    /// Erases the caller, when the tenant lets users do so.
    pub fn delete_me(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
        ctx: &AuditContext,
    ) -> Result<Vec<Uuid>, TenantError> {
        let (_, user) = cx.live_session(bearer, OffsetDateTime::now_utc())?;
        if !cx.settings.users.self_service_deletion_enabled {
            return Err(TenantError::User(UserError::SelfDeletionDisabled));
        }
        self.erase_and_record(cx, user, "self", ctx)
    }

    fn erase_and_record(
        &mut self,
        cx: &mut TenantCtx,
        user: UserRecord,
        by: &str,
        ctx: &AuditContext,
    ) -> Result<Vec<Uuid>, TenantError> {
        let mut fx = cx.effects();
        let withdrawn = cx.erase_user(&mut fx, &user)?;
        // The event names the erased id and nothing else about the user; it is not indexed
        // under the user (that index is gone with them).
        let mut event = AuditEvent::new("user.deleted", ctx, Vec::new());
        event.metadata = serde_json::json!({ "deleted_user_id": user.id, "by": by });
        let key = cx.next_event_key(event.at);
        fx.batch.put(&key, &event)?;
        cx.commit(fx)?;
        Ok(withdrawn)
    }

    /// Everything held about the caller, as one JSON document: the profile, how they sign in
    /// (never a secret), their sessions and the audit events about them.
    pub fn export_me(
        &self,
        cx: &TenantCtx,
        bearer: Bearer,
    ) -> Result<serde_json::Value, TenantError> {
        let now = OffsetDateTime::now_utc();
        let (_, user) = cx.live_session(bearer, now)?;
        cx.export_of(&user, now)
    }

    /// What the user holds of each kind of credential (an unknown user holds nothing).
    pub fn user_credentials(
        &self,
        cx: &TenantCtx,
        id: Uuid,
    ) -> Result<Vec<HeldCredential>, TenantError> {
        let Some(user) = cx.user(id)? else {
            return Ok(Vec::new());
        };
        Ok(cx
            .holdings(&user)?
            .into_iter()
            .map(|(kind, count)| HeldCredential { kind, count })
            .collect())
    }

    /// Every record of this tenant whose key or plain value contains one of `needles`.
    pub fn user_traces(
        &self,
        cx: &TenantCtx,
        needles: &[Vec<u8>],
    ) -> Result<Vec<Trace>, TenantError> {
        let holds = |hay: &[u8]| {
            needles
                .iter()
                .filter(|n| !n.is_empty())
                .any(|n| hay.windows(n.len()).any(|w| w == n.as_slice()))
        };
        let mut out = Vec::new();
        for item in cx.store.raw_entries() {
            let (kind, key, value) = item?;
            let found_in = if holds(&key) {
                "key"
            } else if holds(&value) {
                "value"
            } else {
                continue;
            };
            out.push(Trace {
                kind: format!("{kind:02x}"),
                key: hex::encode(&key),
                found_in: found_in.to_owned(),
            });
        }
        // The mail queue is sealed: open it to look inside.
        for job in cx.queued_mail()? {
            let plain = serde_json::to_vec(&job).unwrap_or_default();
            if holds(&plain) {
                out.push(Trace {
                    kind: format!("{:02x}", Kind::MailQueue as u8),
                    key: hex::encode(job.id.as_bytes()),
                    found_in: "sealed value".to_owned(),
                });
            }
        }
        Ok(out)
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// A user's live sessions, newest first.
    fn sessions_of(
        &self,
        user: Uuid,
        now: OffsetDateTime,
    ) -> Result<Vec<SessionRecord>, TenantError> {
        let mut out = Vec::new();
        for item in self.session_index(user) {
            let (_, sid) = item?;
            if let Some(s) = self.store.get::<SessionRecord>(sid.as_bytes())? {
                if s.expires_at > now {
                    out.push(s);
                }
            }
        }
        out.reverse();
        Ok(out)
    }

    fn detail(&self, user: &UserRecord) -> Result<UserDetail, TenantError> {
        let now = OffsetDateTime::now_utc();
        let sessions = self
            .sessions_of(user.id, now)?
            .into_iter()
            .map(|s| AdminSessionView {
                session: SessionFacts::of(&s),
                device: s.ua_family,
                ip_hash_prefix: s.ip_hash.map(|h| h.chars().take(12).collect()),
            })
            .collect();
        Ok(UserDetail {
            summary: user.summary(),
            factors: UserFactors {
                totp_enabled: user.totp_seed.is_some(),
                recovery_codes_remaining: user.recovery_codes.len(),
                passkeys: self.passkeys_of(user.id)?.len(),
                linked_providers: Vec::new(),
            },
            sessions,
            activity: UserActivity {
                last_active_at: user.last_active_at,
                month: month_of(now),
                active_this_month: month_of(user.last_active_at) == month_of(now),
            },
        })
    }

    /// Stages the removal of `user` and everything keyed to them: the record and its
    /// indexes (e-mail, phone, creation, guest), every credential of the inventory (see
    /// `credentials.rs`), the queued mail to their address, the per-user audit index, the
    /// declined-consent entry and their throttle entries. The audit events themselves stay
    /// (the security record), naming only the user's id. Answers the ids of the withdrawn
    /// messages.
    pub(super) fn erase_user(
        &mut self,
        fx: &mut Effects,
        user: &UserRecord,
    ) -> Result<Vec<Uuid>, TenantError> {
        self.erase_user_records(fx, vec![user.clone()])?;
        fx.batch.remove(Kind::ChildBlocked, user.id.as_bytes());
        self.emit_user_deleted(&mut fx.batch, user.id)?;
        let mut withdrawn = Vec::new();
        let addresses: HashSet<&str> = user
            .email
            .iter()
            .chain(user.phone.iter())
            .map(String::as_str)
            .collect();
        if !addresses.is_empty() {
            for job in self.queued_mail()? {
                // Mail to a minor's guardian names the child's address.
                let about = match &job.kind {
                    MailKind::GuardianConsent { child_email, .. }
                    | MailKind::GuardianPortal { child_email, .. }
                    | MailKind::GuardianExport { child_email, .. } => Some(child_email.as_str()),
                    _ => None,
                };
                if addresses.contains(job.to.as_str())
                    || about.is_some_and(|a| addresses.contains(a))
                {
                    fx.batch.remove(Kind::MailQueue, job.id.as_bytes());
                    withdrawn.push(job.id);
                }
            }
        }
        // The throttles forget the account's identifiers (throttle keys hold them).
        for identifier in user.email.iter().chain(user.phone.iter()) {
            self.login.forget_account(identifier);
        }
        self.code_fails.reset(&user.id);
        self.mail_sent.remove(&user.id);
        Ok(withdrawn)
    }

    /// The records of `users` and every credential they hold (what a guest purge removes
    /// too, for many guests in one walk of the inventory).
    pub(super) fn erase_user_records(
        &mut self,
        fx: &mut Effects,
        mut users: Vec<UserRecord>,
    ) -> Result<(), TenantError> {
        self.end_holds(fx, &mut users, Ending::Erasure)?;
        let batch = &mut fx.batch;
        for user in &users {
            batch.remove(Kind::User, user.id.as_bytes());
            batch.remove(Kind::UserCreated, &created_key(user.created_at, user.id));
            batch.remove(Kind::Guest, user.id.as_bytes());
            if let Some(email) = &user.email {
                let indexed = self.store.get::<EmailIndex>(email.as_bytes())?;
                if indexed.is_some_and(|ix| ix.user_id == user.id) {
                    batch.remove(Kind::UserEmail, email.as_bytes());
                }
            }
            for item in self.store.scan::<UserAuditIndex>(user.id.as_bytes()) {
                let (key, _) = item?;
                batch.remove(Kind::UserAudit, &key);
            }
            self.erase_memberships(batch, user)?;
        }
        Ok(())
    }

    /// The export document of `user` (for the user, or for a minor's guardian).
    pub(super) fn export_of(
        &self,
        user: &UserRecord,
        now: OffsetDateTime,
    ) -> Result<serde_json::Value, TenantError> {
        let user = user.clone();
        let detail = self.detail(&user)?;
        let date_of_birth = match &user.date_of_birth {
            Some(sealed) => {
                let plain = self
                    .master_key
                    .open(&self.user_aad(user.id, "date_of_birth"), sealed)?;
                Some(String::from_utf8_lossy(&plain).into_owned())
            }
            None => None,
        };
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for item in self.store.scan::<UserAuditIndex>(user.id.as_bytes()) {
            let (key, _) = item?;
            keys.push(key.get(16..).unwrap_or_default().to_vec());
        }
        let mut events = Vec::new();
        for key in keys.iter().rev().take(MAX_EXPORTED_EVENTS) {
            if let Some(e) = self.store.get::<AuditEvent>(key)? {
                events.push(serde_json::json!({
                    "type": e.event_type,
                    "created_at": e.at.format(&time::format_description::well_known::Rfc3339)
                        .unwrap_or_default(),
                    "ip_hash_prefix": e.ip_hash.map(|h| h.chars().take(12).collect::<String>()),
                    "ua_family": e.ua_family,
                    "metadata": e.metadata,
                }));
            }
        }
        let summary = serde_json::to_value(&detail.summary)
            .map_err(|e| TenantError::Internal(e.to_string()))?;
        Ok(serde_json::json!({
            "format": "tessera.user-export.v1",
            "exported_at": now.format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            "tenant": { "slug": self.info.slug, "name": self.info.name },
            "profile": summary,
            "date_of_birth": date_of_birth,
            "identities": {
                "email": user.email.as_ref().map(|e| serde_json::json!({
                    "address": e, "verified": user.email_verified,
                })),
                "phone": user.phone.as_ref().map(|p| serde_json::json!({
                    "number": p, "verified": user.phone_verified,
                })),
                "password_set": user.password_hash.is_some(),
                "social": self.identities_of(user.id)?,
                "passkeys": self
                    .passkeys_of(user.id)?
                    .iter()
                    .map(|p| p.view())
                    .collect::<Vec<_>>(),
            },
            "factors": detail.factors,
            "sessions": detail.sessions,
            "activity": detail.activity,
            "consents": self.consent_records(user.id)?,
            "agents": self.agents_of_user(user.id)?,
            "organizations": self.exported_memberships(user.id)?,
            "sso_links": self.exported_sso_links(user.id)?,
            "wallet": self.wallet_claims_of(user.id)?,
            "guardian_consent": user.guardian.as_ref().map(|g| serde_json::json!({
                "status": g.status,
                "consent_receipt": g.receipt,
            })),
            "audit_events": events,
            "audit_events_truncated": keys.len() > MAX_EXPORTED_EVENTS,
        }))
    }
}

#[cfg(test)]
mod tests;
