//! The kernel every capability writes through: one command's effects (its batch and its
//! mail), committed together or, for a refused command, with only what a refusal must keep;
//! the audit log, user lookups, the sealed mail queue and decoys, the walks over one kind of
//! record that the inventory and the daily sweeps share, and the failure counts of the login
//! throttles.
//!
//! A command builds an [`Effects`], stages its writes, and ends in exactly one of
//! [`TenantCtx::commit`] (success: everything, and the mail to hand to delivery once it is
//! durable) or [`TenantCtx::fail`] (a refusal: the counted failure, its audit event, a dead
//! token removed, whatever was staged; then the error).
//!
//! All of it is the kernel's context, [`TenantCtx`], which every flow's methods take as
//! `cx`. A commit also writes the changed entries of the persisted throttles and, when the
//! command denylisted agent tokens, publishes the denylist to the edge and moves the epoch
//! the agents flow's counts of live tokens follow.

use tessera_storage::{Kind, TenantBatch, TenantRecord};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    audit::{AuditContext, AuditEvent},
    ctx::TenantCtx,
    records::{
        created_key, DecoyRecord, EmailIndex, QueuedMail, UserAuditIndex, UserCreatedIndex,
        UserRecord, DECOY_KEY,
    },
    usage::{activity_key, month_of, MAU_KEY},
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

impl TenantCtx {
    pub(super) fn effects(&self) -> Effects {
        Effects {
            batch: self.store.batch(),
            mail: Vec::new(),
            locale: None,
            denied_agent_tokens: Vec::new(),
        }
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
        // The day's sign-in counts move with the events they count, in the same batch.
        let signed_in = match event_type {
            "auth.login.succeeded" => Some(true),
            "auth.login.failed" => Some(false),
            _ => None,
        };
        if let Some(succeeded) = signed_in {
            self.activity.count(event.at, succeeded);
            batch.put(&activity_key(&self.activity.day), &self.activity)?;
        }
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
    /// much for the next flush (see `reply::Timing::Alike`), so the answer's time does not tell
    /// them apart.
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

    /// Hands at most `limit` records of one kind that are `due` to `remove`; answers how many.
    pub(super) fn sweep_kind<R: TenantRecord>(
        &self,
        limit: usize,
        due: impl Fn(&[u8], &R) -> bool,
        mut remove: impl FnMut(&[u8], &R),
    ) -> Result<usize, TenantError> {
        let mut n = 0;
        for item in self.store.scan::<R>(b"") {
            if n >= limit {
                break;
            }
            let (key, record) = item?;
            if due(&key, &record) {
                remove(&key, &record);
                n += 1;
            }
        }
        Ok(n)
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

    /// Applies the writes of one command at once, with the throttle entries it changed (a
    /// failed attempt's count is durable with its audit event); its mail goes out once they
    /// are durable.
    pub(super) fn commit(&mut self, mut effects: Effects) -> Result<Vec<MailJob>, TenantError> {
        self.throttle_changes_into(&mut effects.batch)?;
        self.store.apply(effects.batch)?;
        if !effects.denied_agent_tokens.is_empty() {
            self.denied_epoch = self.denied_epoch.wrapping_add(1);
            self.publish_agent(None, &effects.denied_agent_tokens);
        }
        Ok(effects.mail)
    }

    /// Ends a refused command: commits what it staged (a counted failure is durable with its
    /// audit event; a dead token found on the way is removed) and answers `err`. Nothing it
    /// staged is mail: a refusal sends none.
    pub(super) fn fail<T>(&mut self, fx: Effects, err: TenantError) -> Result<T, TenantError> {
        debug_assert!(fx.mail.is_empty(), "a refused command queued mail");
        self.commit(fx)?;
        Err(err)
    }
}

/// The answer to a sign-in rule's refusal.
pub(super) fn refused(refusal: Refusal) -> TenantError {
    match refusal {
        Refusal::Throttled { retry_after, .. } => TenantError::TooManyAttempts { retry_after },
        Refusal::CaptchaRequired => TenantError::CaptchaRequired,
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;
    use crate::{
        login_guard::LoginRule,
        tenant::{
            accounts::tests::{raw_contains, tenant},
            challenges::tenant_of_token,
        },
    };

    #[test]
    fn an_event_is_about_the_user_its_metadata_names() {
        let id = Uuid::now_v7();
        let mut e = AuditEvent::new("x", &AuditContext::default(), Vec::new());
        assert_eq!(subject_of(&e), None);
        e.metadata = serde_json::json!({ "user_id": id });
        assert_eq!(subject_of(&e), Some(id));
        e.metadata = serde_json::json!({ "user_id": "not-a-uuid" });
        assert_eq!(subject_of(&e), None);
        e.metadata = serde_json::json!({ "deleted_user_id": id });
        assert_eq!(subject_of(&e), None);
        let k = user_audit_key(id, b"event");
        assert_eq!((&k[..16], &k[16..]), (&id.as_bytes()[..], &b"event"[..]));
    }

    #[test]
    fn a_sign_in_rule_s_refusal_is_answered_as_such() {
        assert!(matches!(
            refused(Refusal::Throttled {
                rule: LoginRule::Account,
                retry_after: 30
            }),
            TenantError::TooManyAttempts { retry_after: 30 }
        ));
        assert!(matches!(
            refused(Refusal::CaptchaRequired),
            TenantError::CaptchaRequired
        ));
    }

    #[tokio::test]
    async fn links_name_the_accounts_site_and_tokens_name_their_tenant() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        t.cx.runtime.accounts_url = "https://accounts.example/".into();
        assert_eq!(
            t.cx.link("magic-link", "abc"),
            "https://accounts.example/magic-link?token=abc"
        );
        let (a, b) = (t.cx.link_token(), t.cx.link_token());
        assert_ne!(a, b);
        assert_eq!(tenant_of_token(&a), Some(t.cx.store.tenant_id().0));
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
    }

    #[tokio::test]
    async fn queued_mail_is_sealed_at_rest_read_back_and_settled() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let mut user = UserRecord::blank(Uuid::now_v7(), OffsetDateTime::now_utc());
        user.email = Some("ada@example.com".into());
        user.locale = Some("pl".into());
        let mut b = t.cx.store.batch();
        t.cx.put_new_user(&mut b, &user).unwrap();
        t.cx.store.apply(b).unwrap();
        t.cx.settings.users.default_locale = "de".into();
        let mut fx = t.cx.effects();
        let link = "https://accounts.example/magic-link?token=s3cr3t-t0ken".to_owned();
        t.cx.queue_mail(&mut fx, "ada@example.com", MailKind::MagicLink { link })
            .unwrap();
        t.cx.queue_mail(&mut fx, "else@example.com", MailKind::PasswordChanged)
            .unwrap();
        fx.locale = Some("fr".into());
        t.cx.queue_mail(&mut fx, "ada@example.com", MailKind::PasswordChanged)
            .unwrap();
        let sent = t.cx.commit(fx).unwrap();
        // The user's language, else the tenant's, unless the command knows better.
        let locales: Vec<&str> = sent.iter().map(|m| m.locale.as_str()).collect();
        assert_eq!(locales, ["pl", "de", "fr"]);
        assert!(!raw_contains(&t, b"s3cr3t-t0ken"));
        // Whereas what is kept in clear is found (the e-mail index's key).
        assert!(raw_contains(&t, b"ada@example.com"));
        let mut queued: Vec<Uuid> = t.cx.queued_mail().unwrap().iter().map(|m| m.id).collect();
        let mut ids: Vec<Uuid> = sent.iter().map(|m| m.id).collect();
        queued.sort();
        ids.sort();
        assert_eq!(queued, ids);
        t.cx.mail_settled(sent[0].id).unwrap();
        assert_eq!(t.cx.queued_mail().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_user_counts_as_active_once_a_month() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let march = datetime!(2026-03-10 10:00:00 UTC);
        let april = datetime!(2026-04-02 10:00:00 UTC);
        let mut b = t.cx.store.batch();
        t.cx.count_active(&mut b, None, march).unwrap();
        t.cx.count_active(&mut b, Some(march), march + time::Duration::days(5))
            .unwrap();
        assert_eq!(t.cx.mau.in_month(march), 1);
        t.cx.count_active(&mut b, Some(march), april).unwrap();
        t.cx.count_active(&mut b, Some(april), april).unwrap();
        assert_eq!(t.cx.mau.in_month(april), 1);
        t.cx.count_active(&mut b, None, april).unwrap();
        assert_eq!(t.cx.mau.in_month(april), 2);
        t.cx.store.apply(b).unwrap();
        let stored =
            t.cx.store
                .get::<super::super::usage::MauRecord>(MAU_KEY)
                .unwrap()
                .unwrap();
        assert_eq!(stored.in_month(april), 2);
    }

    #[tokio::test]
    async fn events_about_a_user_are_indexed_under_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let user = Uuid::now_v7();
        let ctx = AuditContext::default();
        let mut b = t.cx.store.batch();
        t.cx.audit_into(
            &mut b,
            "user.updated",
            &ctx,
            serde_json::json!({ "user_id": user }),
        )
        .unwrap();
        t.cx.audit_into(&mut b, "settings.updated", &ctx, serde_json::json!({}))
            .unwrap();
        t.cx.store.apply(b).unwrap();
        let indexed: Vec<Vec<u8>> =
            t.cx.store
                .scan::<UserAuditIndex>(user.as_bytes())
                .map(|i| i.unwrap().0)
                .collect();
        assert_eq!(indexed.len(), 1);
        let event =
            t.cx.store
                .get::<AuditEvent>(&indexed[0][16..])
                .unwrap()
                .unwrap();
        assert_eq!(event.event_type, "user.updated");
        assert_eq!(t.cx.store.scan::<UserAuditIndex>(b"").count(), 1);
    }

    #[tokio::test]
    async fn a_refusal_keeps_what_it_staged_and_answers_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let mut fx = t.cx.effects();
        t.cx.audit_into(
            &mut fx.batch,
            "auth.step_up_failed",
            &AuditContext::default(),
            serde_json::json!({}),
        )
        .unwrap();
        let r: Result<(), TenantError> = t.cx.fail(fx, TenantError::InvalidChallenge);
        assert!(matches!(r, Err(TenantError::InvalidChallenge)));
        let page =
            t.cx.list_audit(None, 10, Some("auth.step_up_failed"))
                .unwrap();
        assert_eq!(page.events.len(), 1);
    }
}
