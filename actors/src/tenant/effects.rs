//! The kernel every capability writes through: one command's effects (its batch and its
//! mail), committed together or, for a refused command, with only what a refusal must keep;
//! the audit log, user lookups, the sealed mail queue and decoys, and the failure counts of
//! the login throttles.
//!
//! A command builds an [`Effects`], stages its writes, and ends in exactly one of
//! [`TenantState::commit`] (success: everything, and the mail to hand to delivery once it is
//! durable) or [`TenantState::fail`] (a refusal: the counted failure, its audit event, a dead
//! token removed, whatever was staged; then the error).

use tessera_storage::{Kind, TenantBatch, TenantRecord};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    audit::{AuditContext, AuditEvent},
    records::{
        created_key, DecoyRecord, EmailIndex, QueuedMail, UserAuditIndex, UserCreatedIndex,
        UserRecord, DECOY_KEY,
    },
    state::TenantState,
    usage::{month_of, MAU_KEY},
};
use crate::{
    error::TenantError,
    login_guard::{Attempt, Refusal},
    outbound::{MailJob, MailKind},
};

/// The user an audit event is about: its metadata's `user_id`.
pub(super) fn subject_of(event: &AuditEvent) -> Option<Uuid> {
    event
        .metadata
        .get("user_id")
        .and_then(|v| v.as_str())
        .and_then(|s| Uuid::parse_str(s).ok())
}

/// The key of an event in its user's audit index.
pub(super) fn user_audit_key(user: Uuid, event_key: &[u8]) -> Vec<u8> {
    let mut k = user.as_bytes().to_vec();
    k.extend_from_slice(event_key);
    k
}

/// Writes and messages produced by one command, applied together.
pub(super) struct Effects {
    pub batch: TenantBatch,
    pub mail: Vec<MailJob>,
    /// The language of the mail this command queues, when the command knows it better than
    /// the store does (a user it creates in this very batch).
    pub locale: Option<String>,
    /// Agent tokens this command denylisted: published to the edge once the batch is applied.
    pub denied_agent_tokens: Vec<Uuid>,
}

impl TenantState {
    pub(super) fn effects(&self) -> Effects {
        Effects {
            batch: self.store.batch(),
            mail: Vec::new(),
            locale: None,
            denied_agent_tokens: Vec::new(),
        }
    }

    /// Applies the writes of one command at once, with the throttle entries it changed (a
    /// failed attempt's count is durable with its audit event); its mail goes out once they
    /// are durable.
    pub(super) fn commit(&mut self, mut effects: Effects) -> Result<Vec<MailJob>, TenantError> {
        self.throttle_changes_into(&mut effects.batch)?;
        self.store.apply(effects.batch)?;
        self.publish_denied(&effects.denied_agent_tokens);
        Ok(effects.mail)
    }

    pub(super) fn audit_into(
        &mut self,
        batch: &mut TenantBatch,
        event_type: &str,
        ctx: &AuditContext,
        metadata: serde_json::Value,
    ) -> Result<(), TenantError> {
        let mut event = AuditEvent::new(event_type, ctx, Vec::new());
        event.metadata = metadata;
        let key = self.next_event_key(event.at);
        batch.put(&key, &event)?;
        if let Some(user) = subject_of(&event) {
            batch.put(&user_audit_key(user, &key), &UserAuditIndex::default())?;
        }
        Ok(())
    }

    /// Writes a user created just now: its record, its place in the creation index and, with
    /// an address, the e-mail index.
    pub(super) fn put_new_user(
        &self,
        batch: &mut TenantBatch,
        user: &UserRecord,
    ) -> Result<(), TenantError> {
        batch.put(user.id.as_bytes(), user)?;
        batch.put(
            &created_key(user.created_at, user.id),
            &UserCreatedIndex::default(),
        )?;
        if let Some(email) = &user.email {
            batch.put(email.as_bytes(), &EmailIndex::of(user))?;
        }
        Ok(())
    }

    pub(super) fn user(&self, id: Uuid) -> Result<Option<UserRecord>, TenantError> {
        Ok(self.store.get::<UserRecord>(id.as_bytes())?)
    }

    pub(super) fn user_by_email(&self, email: &str) -> Result<Option<UserRecord>, TenantError> {
        let Some(ix) = self.store.get::<EmailIndex>(email.as_bytes())? else {
            return Ok(None);
        };
        self.user(ix.user_id)
    }

    /// Binds a sealed user secret to this tenant, this user and its name.
    pub(super) fn user_aad(&self, user: Uuid, name: &str) -> Vec<u8> {
        let mut aad = self.store.tenant_id().as_bytes().to_vec();
        aad.extend_from_slice(b"/user/");
        aad.extend_from_slice(user.as_bytes());
        aad.push(b'/');
        aad.extend_from_slice(name.as_bytes());
        aad
    }

    /// A fresh secret for a mailed link kept as a `LinkTokenRecord`: `base64url(tenant id |
    /// 32 random bytes)`. Like a challenge token it begins with the tenant's id, so the hosted
    /// page that opens it knows whose it is (see `challenges::tenant_of_token`).
    pub(super) fn link_token(&self) -> String {
        use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
        use rand::RngCore;
        let mut raw = self.store.tenant_id().as_bytes().to_vec();
        let mut secret = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut secret);
        raw.extend_from_slice(&secret);
        URL_SAFE_NO_PAD.encode(raw)
    }

    /// `{accounts_url}/{path}?token=...`
    pub(super) fn link(&self, path: &str, token: &str) -> String {
        format!(
            "{}/{path}?token={token}",
            self.runtime.accounts_url.trim_end_matches('/')
        )
    }

    /// A new message of this tenant.
    fn mail_job(&self, to: &str, kind: MailKind, locale: String) -> MailJob {
        MailJob {
            locale,
            id: Uuid::now_v7(),
            tenant: self.info.id,
            tenant_slug: self.info.slug.clone(),
            tenant_name: self.info.name.clone(),
            to: to.to_owned(),
            kind,
        }
    }

    /// Queues a message in the same batch as the change that caused it.
    pub(super) fn queue_mail(
        &self,
        fx: &mut Effects,
        to: &str,
        kind: MailKind,
    ) -> Result<(), TenantError> {
        let locale = match fx.locale.clone() {
            Some(l) => l,
            None => self
                .user_by_email(to)?
                .and_then(|u| u.locale)
                .unwrap_or_else(|| self.settings.users.default_locale.clone()),
        };
        let job = self.mail_job(to, kind, locale);
        let plain = serde_json::to_vec(&job).map_err(|e| TenantError::Internal(e.to_string()))?;
        let sealed = self.master_key.seal(&self.mail_aad(job.id), &plain)?;
        fx.batch.put(job.id.as_bytes(), &QueuedMail { sealed })?;
        fx.mail.push(job);
        Ok(())
    }

    /// For a request that answers 202 whatever the address and found nothing to send: seals
    /// `stand_in` (the message that would have gone out, with as many bytes again as the
    /// records that would have been written) as `queue_mail` seals a message, and writes it over
    /// the tenant's decoy record. The request for an existing account and the one for an unknown
    /// address then both seal and write about as much before their answer and leave about as
    /// much for the next flush (see `reply_alike`), so the answer's time does not tell them
    /// apart.
    pub(super) fn write_decoy(&self, stand_in: &[u8]) -> Result<(), TenantError> {
        let sealed = self
            .master_key
            .seal(&self.mail_aad(Uuid::now_v7()), stand_in)?;
        let mut batch = self.store.batch();
        batch.put(DECOY_KEY, &DecoyRecord { sealed })?;
        self.store.apply(batch)?;
        Ok(())
    }

    /// The bytes a decoy stands in for: the message of `kind` to `to`, as `queue_mail` would
    /// serialise it, followed by as many bytes as `records` (what the real request writes
    /// besides the message) take encoded.
    pub(super) fn decoy_of(
        &self,
        to: &str,
        kind: MailKind,
        records: &[serde_json::Value],
    ) -> Result<Vec<u8>, TenantError> {
        let job = self.mail_job(to, kind, self.settings.users.default_locale.clone());
        let mut plain =
            serde_json::to_vec(&job).map_err(|e| TenantError::Internal(e.to_string()))?;
        for r in records {
            let bytes = serde_json::to_vec(r).map_err(|e| TenantError::Internal(e.to_string()))?;
            plain.extend_from_slice(&bytes);
        }
        Ok(plain)
    }

    fn mail_aad(&self, id: Uuid) -> Vec<u8> {
        let mut aad = self.store.tenant_id().as_bytes().to_vec();
        aad.extend_from_slice(b"/mail/");
        aad.extend_from_slice(id.as_bytes());
        aad
    }

    /// Every message still queued (after a restart, to submit again).
    pub fn queued_mail(&self) -> Result<Vec<MailJob>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<QueuedMail>(b"") {
            let (key, q) = item?;
            let Ok(id) = Uuid::from_slice(&key) else {
                continue;
            };
            let Ok(plain) = self.master_key.open(&self.mail_aad(id), &q.sealed) else {
                tracing::error!(tenant = %self.info.id, message = %id, "a queued message cannot be opened; skipped");
                continue;
            };
            match serde_json::from_slice::<MailJob>(&plain) {
                Ok(job) => out.push(job),
                Err(e) => tracing::error!(error = %e, "a queued message cannot be read"),
            }
        }
        Ok(out)
    }

    /// Delivery is done with a message: it leaves the queue.
    pub fn mail_settled(&self, id: Uuid) -> Result<(), TenantError> {
        let mut batch = self.store.batch();
        batch.remove(Kind::MailQueue, id.as_bytes());
        self.store.apply(batch)?;
        Ok(())
    }

    /// Ends a refused command: commits what it staged (a counted failure is durable with its
    /// audit event; a dead token found on the way is removed) and answers `err`. Nothing it
    /// staged is mail: a refusal sends none.
    /// The kind and key of every record of kind `R` that `pred` holds for (a walk of them
    /// all: for the short-lived kinds the credential inventory looks through).
    pub(super) fn keys_where<R: TenantRecord>(
        &self,
        pred: impl Fn(&R) -> bool,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<R>(b"") {
            let (key, record) = item?;
            if pred(&record) {
                out.push((R::KIND, key));
            }
        }
        Ok(out)
    }

    pub(super) fn fail<T>(&mut self, fx: Effects, err: TenantError) -> Result<T, TenantError> {
        debug_assert!(fx.mail.is_empty(), "a refused command queued mail");
        self.commit(fx)?;
        Err(err)
    }

    /// Whether the sign-in rules let `attempt` be checked now; a refusal as its error.
    pub(super) fn login_gate(&self, attempt: &Attempt<'_>) -> Result<(), TenantError> {
        self.login.check(attempt).map_err(refused)
    }

    /// Counts a failed check of `attempt` (a password, a sign-in code) against the sign-in
    /// rules; each rule that begins to refuse with it writes `auth.login.locked` into `batch`,
    /// naming the rule, the account's user (if any) and how long.
    pub(super) fn count_failed_login(
        &mut self,
        batch: &mut TenantBatch,
        attempt: &Attempt<'_>,
        user: Option<Uuid>,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        for (rule, retry_after) in self.login.fail(attempt) {
            self.audit_into(
                batch,
                "auth.login.locked",
                ctx,
                serde_json::json!({
                    "rule": rule,
                    "user_id": user,
                    "retry_after": retry_after,
                    "ip_hash": ctx.ip_hash,
                }),
            )?;
        }
        Ok(())
    }

    /// Counts `now` as activity of a user last active at `previous` (`None`: a new user):
    /// the month's count grows when this is the user's first activity of the month.
    pub(super) fn count_active(
        &mut self,
        batch: &mut TenantBatch,
        previous: Option<OffsetDateTime>,
        now: OffsetDateTime,
    ) -> Result<(), TenantError> {
        if previous.is_some_and(|p| month_of(p) == month_of(now)) {
            return Ok(());
        }
        self.mau.add(now);
        batch.put(MAU_KEY, &self.mau)?;
        Ok(())
    }
}

/// The answer to a sign-in rule's refusal.
pub(super) fn refused(refusal: Refusal) -> TenantError {
    match refusal {
        Refusal::Throttled { retry_after, .. } => TenantError::TooManyAttempts { retry_after },
        Refusal::CaptchaRequired => TenantError::CaptchaRequired,
    }
}
