//! The tenant's state: the kernel's context and each flow's memory, loaded from sled; the
//! throttles' persistence, key rotation, settings writes and the audit listing.

use std::{collections::HashMap, sync::Arc, time::Instant};

use arc_swap::ArcSwap;
use tessera_storage::{MasterKey, TenantStore};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    accounts::memory::Accounts,
    agents::memory::Agents,
    audit::{AuditContext, AuditEvent, AuditPage},
    ctx::TenantCtx,
    eudi::memory::Eudi,
    eudi::EudiPurpose,
    guardian::memory::Guardian,
    guardian::{GuardianAnswer, GuardianCmd, GuardianStep},
    guests::memory::Guests,
    hosted::Hosted,
    keys::{KeyRing, RotatedKeys, TokenKeys},
    messages::{SettingsView, TenantInfo, TenantOverview},
    mfa::Mfa,
    oauth::OAuth,
    oauth_clients::memory::OAuthClients,
    organizations::Organizations,
    passkeys::memory::Passkeys,
    passwordless::Passwordless,
    runtime::{TenantCells, TenantRuntime},
    sessions::Sessions,
    settings::{
        ApplyContext, ByokToken, EdgePolicy, SettingsChange, TenantSecret, TenantSettings,
        BYOK_AUTH_TOKEN,
    },
    sms::memory::Sms,
    social::memory::Social,
    sso::Sso,
    step_up::memory::StepUp,
    usage::{MauRecord, MAU_KEY, SMS_USAGE_KEY},
    users::Users,
    webhooks::Webhooks,
};
use crate::{
    error::TenantError,
    login_guard::LoginThrottles,
    outbound::MailJob,
    tenant::limits::{FIRST_LOGIN_BLOCK, FREE_LOGIN_FAILURES, MAX_LOGIN_BLOCK, REQUEST_SPACING},
    throttle::{
        saved_key, Clocks, ConsumedCodes, RateWindow, SavedCount, TenantThrottleRecord, Throttle,
        ThrottleKey,
    },
};

/// Puts each changed entry of one throttle in `batch` (or removes its record).
fn put_changes<K: ThrottleKey>(
    batch: &mut tessera_storage::TenantBatch,
    throttle: u8,
    changes: Vec<(K, Option<SavedCount>)>,
) -> Result<(), TenantError> {
    for (key, saved) in changes {
        let key = saved_key(throttle, &key);
        match saved {
            Some(saved) => batch.put(&key, &TenantThrottleRecord(saved))?,
            None => batch.remove(tessera_storage::Kind::Throttle, &key),
        }
    }
    Ok(())
}

/// The persisted step-up code throttle, as numbered in its records' keys (never renumber; the
/// sign-in rules' numbers are [`LoginThrottles`]'s).
const THROTTLE_STEP_UP_CODES: u8 = 3;

/// Key of the single settings record under the tenant's prefix.
const SETTINGS_KEY: &[u8] = b"";

/// A tenant's actor state: the kernel's context and each flow's own memory.
pub struct TenantState {
    pub(super) cx: TenantCtx,
    pub(super) accounts: Accounts,
    pub(super) guests: Guests,
    pub(super) step_up: StepUp,
    pub(super) passwordless: Passwordless,
    pub(super) sms: Sms,
    pub(super) passkeys: Passkeys,
    pub(super) social: Social,
    pub(super) eudi: Eudi,
    pub(super) guardian: Guardian,
    pub(super) agents: Agents,
    pub(super) oauth_clients: OAuthClients,
    pub(super) mfa: Mfa,
    pub(super) hosted: Hosted,
    pub(super) oauth: OAuth,
    pub(super) sessions: Sessions,
    pub(super) users: Users,
    pub(super) webhooks: Webhooks,
    pub(super) organizations: Organizations,
    pub(super) sso: Sso,
}

impl TenantState {
    /// Loads the tenant from sled; a tenant seen for the first time gets the default settings,
    /// written before the actor takes any message.
    pub fn load(
        info: TenantInfo,
        store: TenantStore,
        master_key: MasterKey,
        fault_injection: bool,
        runtime: TenantRuntime,
        cells: TenantCells,
    ) -> Result<Self, TenantError> {
        let settings = match store.get::<TenantSettings>(SETTINGS_KEY)? {
            Some(s) => s,
            None => {
                let s = TenantSettings::defaults(OffsetDateTime::now_utc());
                let mut batch = store.batch();
                batch.put(SETTINGS_KEY, &s)?;
                store.apply(batch)?;
                s
            }
        };
        let byok_token_set = store.get::<TenantSecret>(BYOK_AUTH_TOKEN)?.is_some();
        let (key_ring, token_keys) =
            KeyRing::load_or_create(&store, &master_key, OffsetDateTime::now_utc())?;
        cells.keys.store(Arc::new(token_keys));
        cells.edge.store(Arc::new(EdgePolicy::of(&settings)));
        cells
            .oauth_clients
            .store(Arc::new(super::oauth_clients::PublishedClients::load(
                &store,
            )?));
        cells
            .agents
            .store(Arc::new(super::agents::PublishedAgents::load(&store)?));
        let mau = store.get::<MauRecord>(MAU_KEY)?.unwrap_or_default();
        let today = super::usage::day_of(OffsetDateTime::now_utc());
        let activity = store
            .get::<super::usage::ActivityDay>(&super::usage::activity_key(&today))?
            .unwrap_or_default();
        let sms_usage = store.get::<MauRecord>(SMS_USAGE_KEY)?.unwrap_or_default();
        let dcr_per_hour = runtime.agents.registrations_per_ip_hourly;
        let per_address = runtime.login_failures_per_address;
        let mut state = TenantState {
            cx: TenantCtx {
                info,
                store,
                refresh_hasher: master_key.hasher("refresh-token"),
                oauth_hasher: master_key.hasher("oauth-consent"),
                domain_hasher: master_key.hasher("email-domain"),
                otp_hasher: master_key.hasher("step-up-otp"),
                recovery_hasher: master_key.hasher("recovery-code"),
                eudi_hasher: master_key.hasher("eudi-subject"),
                master_key,
                settings,
                byok_token_set,
                fault_injection,
                audit_seq: 0,
                runtime,
                cells,
                key_ring,
                verifier: None,
                login: LoginThrottles::new(per_address),
                mail_sent: HashMap::new(),
                mau,
                activity,
                consumed_codes: ConsumedCodes::default(),
                webhooks: Default::default(),
                code_fails: Throttle::new(FREE_LOGIN_FAILURES, FIRST_LOGIN_BLOCK, MAX_LOGIN_BLOCK),
                ceremonies: Default::default(),
                request_spacing: RateWindow::new(1, REQUEST_SPACING),
                denied_epoch: 0,
                member_counts: Default::default(),
            },
            accounts: Accounts::default(),
            guests: Guests::default(),
            step_up: StepUp::default(),
            passwordless: Passwordless,
            sms: Sms::new(sms_usage),
            passkeys: Passkeys::default(),
            social: Social::default(),
            eudi: Eudi::default(),
            guardian: Guardian::default(),
            agents: Agents::default(),
            oauth_clients: OAuthClients::new(dcr_per_hour),
            mfa: Mfa,
            hosted: Hosted,
            oauth: OAuth,
            sessions: Sessions,
            users: Users,
            webhooks: Webhooks,
            organizations: Organizations::default(),
            sso: Sso::default(),
        };
        state.cx.verifier = Eudi::load_verifier(&state.cx)?;
        state.cx.restore_throttles()?;
        state.users.ensure_user_indexes(&mut state.cx)?;
        Ok(state)
    }
}

impl TenantCtx {
    /// Loads the throttles' entries written by earlier runs; expired or unreadable ones are
    /// deleted.
    fn restore_throttles(&mut self) -> Result<(), TenantError> {
        let clocks = Clocks::at(self.calendar_now());
        let mut stale = self.store.batch();
        let mut any_stale = false;
        for item in self.store.scan::<TenantThrottleRecord>(b"") {
            let (key, TenantThrottleRecord(saved)) = item?;
            let kept = match key.split_first() {
                Some((&THROTTLE_STEP_UP_CODES, k)) => Uuid::from_key_bytes(k)
                    .is_some_and(|k| self.code_fails.restore(k, &saved, clocks)),
                _ => self.login.restore(&key, &saved, clocks),
            };
            if !kept {
                stale.remove(tessera_storage::Kind::Throttle, &key);
                any_stale = true;
            }
        }
        if any_stale {
            self.store.apply(stale)?;
        }
        Ok(())
    }

    /// Whether a throttle changed since its entries were last written.
    pub fn throttles_changed(&self) -> bool {
        self.login.has_changes() || self.code_fails.has_changes()
    }

    /// Writes (or deletes) the throttle entries changed since the last time into `batch`.
    pub(super) fn throttle_changes_into(
        &mut self,
        batch: &mut tessera_storage::TenantBatch,
    ) -> Result<(), TenantError> {
        if !self.throttles_changed() {
            return Ok(());
        }
        let clocks = Clocks::at(self.calendar_now());
        for (key, saved) in self.login.take_changes(clocks) {
            match saved {
                Some(saved) => batch.put(&key, &TenantThrottleRecord(saved))?,
                None => batch.remove(tessera_storage::Kind::Throttle, &key),
            }
        }
        put_changes(
            batch,
            THROTTLE_STEP_UP_CODES,
            self.code_fails.take_changes(clocks),
        )?;
        Ok(())
    }

    /// Writes the throttle changes no command's batch took (a reset on a path that writes
    /// nothing else), in a batch of their own.
    pub fn persist_throttles(&mut self) -> Result<(), TenantError> {
        if !self.throttles_changed() {
            return Ok(());
        }
        let mut batch = self.store.batch();
        self.throttle_changes_into(&mut batch)?;
        self.store.apply(batch)?;
        Ok(())
    }

    /// [`Self::persist_throttles`], logging a failure.
    pub fn persist_throttles_logged(&mut self) {
        if let Err(e) = self.persist_throttles() {
            tracing::error!(tenant = %self.info.slug, error = %e, "cannot write throttle state");
        }
    }

    /// Forgets the throttle entries with nothing left to hold (the daily run), so their
    /// records go too.
    pub(super) fn sweep_throttles(&mut self) {
        let now = Instant::now();
        self.login.sweep();
        self.code_fails.sweep(now);
    }

    /// A new signing key, and a new RS256 key (`rsa_pkcs8`, made off the actor) when the
    /// tenant has one (applied, not yet durable). The caller publishes the answered keys to
    /// handlers once the rotation is on disk, so no token is signed with a key that a crash
    /// could lose.
    pub fn rotate_signing_key(
        &mut self,
        rsa_pkcs8: Option<&[u8]>,
    ) -> Result<(RotatedKeys, TokenKeys), TenantError> {
        let (rotated, token_keys) = self.key_ring.rotate(
            &self.store,
            &self.master_key,
            OffsetDateTime::now_utc(),
            self.runtime.tokens.access_ttl,
            rsa_pkcs8,
        )?;
        let mut batch = self.store.batch();
        let ctx = AuditContext::default();
        let mut event = AuditEvent::new("tokens.signing_key.rotated", &ctx, Vec::new());
        event.metadata = serde_json::json!({
            "kid": rotated.kid,
            "previous_kid": rotated.previous_kid,
            "rsa_kid": rotated.rsa_kid,
            "previous_rsa_kid": rotated.previous_rsa_kid,
        });
        batch.put(&self.next_event_key(event.at), &event)?;
        self.store.apply(batch)?;
        Ok((rotated, token_keys))
    }

    /// The tenant's first RS256 key (`pkcs8`, made off the actor), unless it has one (then
    /// nothing is written). Answers the keys to publish once the write is durable, if any.
    pub fn add_id_token_key(&mut self, pkcs8: &[u8]) -> Result<Option<TokenKeys>, TenantError> {
        let (keys, wrote) = self.key_ring.add_rsa(
            &self.store,
            &self.master_key,
            pkcs8,
            OffsetDateTime::now_utc(),
        )?;
        if !wrote {
            return Ok(None);
        }
        let mut batch = self.store.batch();
        let mut event = AuditEvent::new(
            "tokens.signing_key.added",
            &AuditContext::default(),
            Vec::new(),
        );
        event.metadata = serde_json::json!({ "alg": "RS256", "kid": keys.current_kid_of(super::keys::KeyAlg::RS256) });
        batch.put(&self.next_event_key(event.at), &event)?;
        self.store.apply(batch)?;
        Ok(Some(keys))
    }

    /// Where handlers read the signing keys.
    pub fn keys_cell(&self) -> Arc<ArcSwap<TokenKeys>> {
        self.cells.keys.clone()
    }

    pub fn info(&self) -> &TenantInfo {
        &self.info
    }

    pub fn store(&self) -> &TenantStore {
        &self.store
    }

    pub fn set_info(&mut self, info: TenantInfo) {
        if info.id == self.store.tenant_id() {
            self.info = info;
        }
    }

    pub fn fault_injection(&self) -> bool {
        self.fault_injection
    }

    pub fn overview(&self) -> TenantOverview {
        TenantOverview {
            info: self.info.clone(),
            settings: self.settings.clone(),
        }
    }

    pub fn settings_view(&self) -> SettingsView {
        SettingsView {
            settings: self.settings.clone(),
            byok_token_set: self.byok_token_set,
        }
    }

    /// Appends one audit event (applied, not yet durable).
    pub fn append_audit(&mut self, event: AuditEvent) -> Result<(), TenantError> {
        let mut batch = self.store.batch();
        batch.put(&self.next_event_key(event.at), &event)?;
        self.store.apply(batch)?;
        Ok(())
    }

    /// Applies one settings change and its audit event in one batch. Nothing is written when
    /// nothing changes; nothing changes when anything fails.
    pub fn update_settings(
        &mut self,
        change: SettingsChange,
        ctx: &AuditContext,
    ) -> Result<SettingsView, TenantError> {
        let now = OffsetDateTime::now_utc();
        let applied = self.settings.apply(
            change,
            &ApplyContext {
                byok_token_set: self.byok_token_set,
                tier: self.info.tier,
                platform_sms_cap: self.runtime.sms_platform_caps.for_tier(self.info.tier),
                now,
            },
        )?;
        if applied.changed.is_empty() {
            return Ok(self.settings_view());
        }
        let mut batch = self.store.batch();
        match &applied.byok_token {
            ByokToken::Keep => {}
            ByokToken::Set(token) => {
                let sealed = self
                    .master_key
                    .seal(&self.secret_aad(BYOK_AUTH_TOKEN), token.as_bytes())?;
                batch.put(BYOK_AUTH_TOKEN, &TenantSecret { sealed })?;
            }
            ByokToken::Clear => {
                batch.remove(tessera_storage::Kind::TenantSecret, BYOK_AUTH_TOKEN);
            }
        }
        batch.put(SETTINGS_KEY, &applied.next)?;
        let mut event = AuditEvent::new(applied.event_type, ctx, applied.changed);
        event.at = now;
        batch.put(&self.next_event_key(now), &event)?;
        self.store.apply(batch)?;
        let edge = EdgePolicy::of(&applied.next);
        if **self.cells.edge.load() != edge {
            self.cells.edge.store(Arc::new(edge));
        }
        self.settings = applied.next;
        self.byok_token_set = applied.byok_token_set;
        Ok(self.settings_view())
    }

    /// Binds a sealed secret to this tenant and its name.
    pub(super) fn secret_aad(&self, name: &[u8]) -> Vec<u8> {
        let mut aad = self.store.tenant_id().as_bytes().to_vec();
        aad.push(b'/');
        aad.extend_from_slice(name);
        aad
    }

    /// The BYOK SMS auth token, opened (for the SMS sender; never for a response).
    pub(super) fn byok_token_set(&self) -> bool {
        self.byok_token_set
    }

    pub fn byok_auth_token(&self) -> Result<Option<String>, TenantError> {
        let Some(secret) = self.store.get::<TenantSecret>(BYOK_AUTH_TOKEN)? else {
            return Ok(None);
        };
        let plain = self
            .master_key
            .open(&self.secret_aad(BYOK_AUTH_TOKEN), &secret.sealed)?;
        Ok(Some(String::from_utf8_lossy(&plain).into_owned()))
    }

    /// A page of audit events, newest first, strictly older than `cursor`.
    pub fn list_audit(
        &self,
        cursor: Option<&[u8]>,
        limit: usize,
        event_type: Option<&str>,
    ) -> Result<AuditPage, TenantError> {
        let mut events = Vec::new();
        let mut before = cursor.map(<[u8]>::to_vec);
        let mut more = false;
        'scan: loop {
            let chunk = self.store.scan_rev::<AuditEvent>(before.as_deref(), 256)?;
            let exhausted = chunk.len() < 256;
            for (key, event) in chunk {
                before = Some(key.clone());
                if event_type.is_some_and(|t| t != event.event_type) {
                    continue;
                }
                if events.len() == limit {
                    more = true;
                    break 'scan;
                }
                events.push((key, event));
            }
            if exhausted {
                break;
            }
        }
        let next_cursor = if more {
            events.last().map(|(k, _)| k.clone())
        } else {
            None
        };
        Ok(AuditPage {
            events,
            next_cursor,
        })
    }
}

impl TenantState {
    /// Carries out one guardian command. A wallet age check is where two flows meet: the
    /// guardian flow proves the consent link, the wallet flow begins the presentation for it.
    pub fn guardian_cmd(
        &mut self,
        cmd: GuardianCmd,
        ip: std::net::IpAddr,
        ctx: &AuditContext,
    ) -> Result<(GuardianAnswer, Vec<MailJob>), TenantError> {
        match self.guardian.guardian_cmd(&mut self.cx, cmd, ip, ctx)? {
            GuardianStep::Answered(answer, mail) => Ok((answer, mail)),
            GuardianStep::AgeCheck { link, ip, now } => {
                let begun = self.eudi.eudi_begin(
                    &mut self.cx,
                    EudiPurpose::Age,
                    None,
                    ip,
                    now,
                    Some(link),
                )?;
                Ok((GuardianAnswer::WalletBegun(Box::new(begun)), Vec::new()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SmsError;
    use crate::tenant::{
        accounts::tests::{raw_contains, tenant},
        settings::{MfaPolicy, SecurityPatch},
    };

    fn security(patch: SecurityPatch) -> SettingsChange {
        SettingsChange::Security(Box::new(patch))
    }

    fn event_count(t: &TenantState) -> usize {
        t.cx.list_audit(None, 1000, None).unwrap().events.len()
    }

    #[tokio::test]
    async fn the_byok_token_is_sealed_at_rest_and_opens_for_the_sender() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        let token = "byok-token-0123456789abcdef0123456789";
        let view =
            t.cx.update_settings(
                security(SecurityPatch {
                    byok_provider_auth_token: Some(Some(token.into())),
                    ..Default::default()
                }),
                &ctx,
            )
            .unwrap();
        assert!(view.byok_token_set);
        assert_eq!(t.cx.byok_auth_token().unwrap().as_deref(), Some(token));
        assert!(!raw_contains(&t, token.as_bytes()));
        // The audit event names the field, never the value.
        let event = &t.cx.list_audit(None, 1, None).unwrap().events[0].1;
        assert_eq!(event.event_type, "settings.security.updated");
        assert_eq!(event.fields, ["byok_provider_auth_token"]);
        let view =
            t.cx.update_settings(
                security(SecurityPatch {
                    byok_provider_auth_token: Some(None),
                    ..Default::default()
                }),
                &ctx,
            )
            .unwrap();
        assert!(!view.byok_token_set);
        assert_eq!(t.cx.byok_auth_token().unwrap(), None);
    }

    #[tokio::test]
    async fn a_settings_change_is_stored_with_its_event_and_no_change_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        let before = event_count(&t);
        let required = || {
            security(SecurityPatch {
                mfa_policy: Some(MfaPolicy::Required),
                ..Default::default()
            })
        };
        t.cx.update_settings(required(), &ctx).unwrap();
        assert_eq!(event_count(&t), before + 1);
        let stored =
            t.cx.store
                .get::<TenantSettings>(SETTINGS_KEY)
                .unwrap()
                .unwrap();
        assert_eq!(stored.security.mfa_policy, MfaPolicy::Required);
        assert_eq!(stored, t.cx.settings);
        t.cx.update_settings(required(), &ctx).unwrap();
        assert_eq!(event_count(&t), before + 1);
    }

    #[tokio::test]
    async fn a_refused_settings_change_leaves_everything_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        let settings = t.cx.settings.clone();
        let before = event_count(&t);
        let over_cap = security(SecurityPatch {
            magic_link_enabled: Some(false),
            byok_provider_auth_token: Some(Some("t".repeat(32))),
            sms_otp_monthly_cap: Some(t.cx.runtime.sms_platform_caps.free + 1),
            ..Default::default()
        });
        assert!(matches!(
            t.cx.update_settings(over_cap, &ctx),
            Err(TenantError::Sms(SmsError::CapAboveTier { .. }))
        ));
        assert_eq!(t.cx.settings, settings);
        assert_eq!(
            t.cx.store
                .get::<TenantSettings>(SETTINGS_KEY)
                .unwrap()
                .unwrap(),
            settings
        );
        assert!(!t.cx.settings_view().byok_token_set);
        assert_eq!(t.cx.byok_auth_token().unwrap(), None);
        assert_eq!(event_count(&t), before);
    }

    #[tokio::test]
    async fn the_edge_sees_new_origins_and_redirect_urls_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        assert!(t.cx.cells.edge.load().allows_origin("https://any.example"));
        t.cx.update_settings(
            SettingsChange::AllowedOrigins(vec!["https://app.example".into()]),
            &ctx,
        )
        .unwrap();
        let edge = t.cx.cells.edge.load();
        assert!(edge.allows_origin("https://app.example"));
        assert!(!edge.allows_origin("https://any.example"));
        t.cx.update_settings(
            SettingsChange::Urls(crate::tenant::settings::UrlSettings {
                site_url: Some("https://app.example/".into()),
                redirect_urls: Vec::new(),
            }),
            &ctx,
        )
        .unwrap();
        assert!(t.cx.cells.edge.load().urls.allows("https://app.example/"));
    }

    #[tokio::test]
    async fn the_audit_log_pages_newest_first_with_a_cursor_and_a_type_filter() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        // Whatever loading wrote comes before these.
        let base = event_count(&t);
        let at = OffsetDateTime::now_utc();
        for i in 0..5 {
            let kind = if i % 2 == 0 { "even" } else { "odd" };
            let mut e = AuditEvent::new(kind, &ctx, Vec::new());
            // All in one instant: the sequence keeps them apart and in order.
            e.at = at;
            e.metadata = serde_json::json!({ "i": i });
            t.cx.append_audit(e).unwrap();
        }
        let first = t.cx.list_audit(None, 2, None).unwrap();
        let seen: Vec<i64> = first
            .events
            .iter()
            .map(|(_, e)| e.metadata["i"].as_i64().unwrap())
            .collect();
        assert_eq!(seen, [4, 3]);
        let second =
            t.cx.list_audit(first.next_cursor.as_deref(), 2, None)
                .unwrap();
        let seen: Vec<i64> = second
            .events
            .iter()
            .map(|(_, e)| e.metadata["i"].as_i64().unwrap())
            .collect();
        assert_eq!(seen, [2, 1]);
        let odd = t.cx.list_audit(None, 10, Some("odd")).unwrap();
        assert_eq!(odd.events.len(), 2);
        assert!(odd.next_cursor.is_none());
        let even = t.cx.list_audit(None, 2, Some("even")).unwrap();
        assert_eq!(even.events.len(), 2);
        // One more "even" is left: the page says so.
        assert!(even.next_cursor.is_some());
        let rest =
            t.cx.list_audit(even.next_cursor.as_deref(), 2, Some("even"))
                .unwrap();
        assert_eq!(rest.events.len(), 1);
        assert!(rest.next_cursor.is_none());
        assert_eq!(event_count(&t), base + 5);
    }

    #[tokio::test]
    async fn another_tenant_s_info_is_not_taken() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let mut other = t.cx.info().clone();
        other.id = tessera_storage::TenantId::new();
        other.name = "Other".into();
        t.cx.set_info(other);
        assert_eq!(t.cx.info().name, "Acme");
        let mut renamed = t.cx.info().clone();
        renamed.name = "Acme Inc".into();
        t.cx.set_info(renamed);
        assert_eq!(t.cx.info().name, "Acme Inc");
    }

    #[tokio::test]
    async fn failed_step_up_codes_are_written_with_the_next_commit_and_only_then() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let user = uuid::Uuid::now_v7();
        assert!(!t.cx.throttles_changed());
        t.cx.code_fails.fail(&user, Instant::now());
        assert!(t.cx.throttles_changed());
        let fx = t.cx.effects();
        t.cx.commit(fx).unwrap();
        assert!(!t.cx.throttles_changed());
        let saved: Vec<Vec<u8>> =
            t.cx.store
                .scan::<TenantThrottleRecord>(b"")
                .map(|i| i.unwrap().0)
                .collect();
        assert_eq!(saved, [saved_key(THROTTLE_STEP_UP_CODES, &user)]);
        // Forgiven: the record goes with the next write.
        t.cx.code_fails.reset(&user);
        t.cx.persist_throttles().unwrap();
        assert_eq!(t.cx.store.scan::<TenantThrottleRecord>(b"").count(), 0);
    }
}
