//! The tenant's state and its synchronous logic.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::Arc,
    time::{Duration, Instant},
};

use arc_swap::ArcSwap;
use tessera_storage::{KeyedHasher, MasterKey, TenantStore};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    audit::{event_key, AuditContext, AuditEvent, AuditPage},
    keys::{KeyRing, RotatedKeys, TokenKeys},
    limits::{
        FIRST_LOGIN_BLOCK, FREE_LOGIN_FAILURES, GUESTS_PER_IP_PER_MINUTE, GUESTS_PER_KEY_PER_HOUR,
        MAX_LOGIN_BLOCK, PASSKEY_BEGINS_PER_MINUTE, PASSKEY_STEP_UP_OPTIONS_PER_MINUTE,
        REGISTRATIONS_PER_MINUTE, REQUEST_SPACING, SMS_PER_IP_PER_HOUR, SMS_PER_NUMBER_PER_HOUR,
        SMS_TESTS_PER_HOUR, SOCIAL_BEGINS_PER_MINUTE, STEP_UP_MAILS, STEP_UP_MAIL_WINDOW,
    },
    messages::{SettingsView, TenantInfo, TenantOverview},
    runtime::{TenantCells, TenantRuntime},
    settings::{
        ApplyContext, ByokToken, EdgePolicy, SettingsChange, TenantSecret, TenantSettings,
        BYOK_AUTH_TOKEN,
    },
    usage::{MauRecord, MAU_KEY, SMS_USAGE_KEY},
};
use crate::{
    error::TenantError,
    login_guard::LoginThrottles,
    throttle::{
        saved_key, Clocks, RateWindow, SavedCount, TenantThrottleRecord, Throttle, ThrottleKey,
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

pub struct TenantState {
    pub(super) info: TenantInfo,
    pub(super) store: TenantStore,
    pub(super) master_key: MasterKey,
    pub(super) settings: TenantSettings,
    byok_token_set: bool,
    fault_injection: bool,
    audit_seq: u32,
    pub(super) runtime: TenantRuntime,
    /// What request handlers read without a hop: the signing keys, the edge policy.
    pub(super) cells: TenantCells,
    key_ring: KeyRing,
    pub(super) refresh_hasher: KeyedHasher,
    /// Keyed hash of OAuth consent requests (the commitment a decision carries back).
    pub(super) oauth_hasher: KeyedHasher,
    /// Keyed hash of e-mail domains in audit events.
    pub(super) domain_hasher: KeyedHasher,
    /// The sign-in rules: per (address, account), account, address and known device.
    pub(super) login: LoginThrottles,
    pub(super) register_ips: RateWindow<IpAddr>,
    /// When each account was last sent a resend, reset or account-exists message.
    pub(super) mail_sent: HashMap<Uuid, Instant>,
    /// This month's active users (persisted).
    pub(super) mau: MauRecord,
    pub(super) anon_ips: RateWindow<IpAddr>,
    /// Per API key: a tenant has one key, so this is per tenant.
    pub(super) anon_key: RateWindow<()>,
    /// Keyed hash of e-mailed step-up codes.
    pub(super) otp_hasher: KeyedHasher,
    /// Keyed hash of recovery codes.
    pub(super) recovery_hasher: KeyedHasher,
    /// Step-up mails (codes and links) per session.
    pub(super) step_up_mails: RateWindow<Uuid>,
    /// Wrong e-mailed step-up codes per user.
    pub(super) step_up_fails: Throttle<Uuid>,
    /// Passwordless link and code requests per flow and address (or number).
    pub(super) passwordless_requests: RateWindow<String>,
    /// Text messages per number per hour.
    pub(super) sms_numbers: RateWindow<String>,
    /// Text messages requested per client address per hour.
    pub(super) sms_ips: RateWindow<IpAddr>,
    /// This month's text messages (persisted), for the tenant's cap.
    pub(super) sms_usage: MauRecord,
    /// The dashboard's test messages.
    pub(super) sms_tests: RateWindow<()>,
    /// Typed codes consumed recently: sent again, they are not guesses.
    pub(super) consumed_codes: crate::throttle::ConsumedCodes,
    /// Pending passkey ceremonies, by challenge (in memory only).
    pub(super) ceremonies: super::ceremonies::Ceremonies,
    /// Passkey sign-in options requested per client address per minute.
    pub(super) passkey_begins: RateWindow<IpAddr>,
    pub(super) social_begins: RateWindow<IpAddr>,
    /// Wallet transactions begun per client address.
    pub(super) eudi_begins: RateWindow<IpAddr>,
    /// Consent requests per child: each mails a guardian.
    pub(super) guardian_asks: RateWindow<Uuid>,
    /// Calls of the guardian routes per client address.
    pub(super) guardian_calls: RateWindow<IpAddr>,
    /// Calls of the wallet-facing routes per client address.
    pub(super) eudi_wallet_calls: RateWindow<IpAddr>,
    /// Hashes wallet identities into the subjects users are linked by.
    pub(super) eudi_hasher: KeyedHasher,
    /// The wallet verifier identity, opened.
    pub(super) eudi_verifier: Option<Arc<super::eudi::VerifierIdentity>>,
    /// Passkey step-up options per session per minute.
    pub(super) passkey_step_ups: RateWindow<Uuid>,
    /// Agents' per-minute windows and live tokens.
    pub(super) agent_counters: super::agents::AgentCounters,
    /// Breaks ties between agent actions of the same nanosecond.
    agent_seq: u32,
    /// Dynamic client registrations per client address (IPv6: per /64) per hour.
    pub(super) dcr_ips: RateWindow<IpAddr>,
    /// Device-page user code lookups per user per minute.
    pub(super) user_code_tries: RateWindow<Uuid>,
    /// Webhook attempts under way, and the deliveries a command just scheduled.
    pub(super) webhooks: super::webhooks::WebhookMemory,
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
        let sms_usage = store.get::<MauRecord>(SMS_USAGE_KEY)?.unwrap_or_default();
        let dcr_per_hour = runtime.agents.registrations_per_ip_hourly;
        let per_address = runtime.login_failures_per_address;
        let mut state = TenantState {
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
            login: LoginThrottles::new(per_address),
            register_ips: RateWindow::new(REGISTRATIONS_PER_MINUTE, Duration::from_secs(60)),
            mail_sent: HashMap::new(),
            mau,
            anon_ips: RateWindow::new(GUESTS_PER_IP_PER_MINUTE, Duration::from_secs(60)),
            anon_key: RateWindow::new(GUESTS_PER_KEY_PER_HOUR, Duration::from_secs(3600)),
            passwordless_requests: RateWindow::new(1, REQUEST_SPACING),
            step_up_fails: Throttle::new(FREE_LOGIN_FAILURES, FIRST_LOGIN_BLOCK, MAX_LOGIN_BLOCK),
            step_up_mails: RateWindow::new(STEP_UP_MAILS, STEP_UP_MAIL_WINDOW),
            sms_numbers: RateWindow::new(SMS_PER_NUMBER_PER_HOUR, Duration::from_secs(3600)),
            sms_ips: RateWindow::new(SMS_PER_IP_PER_HOUR, Duration::from_secs(3600)),
            sms_usage,
            sms_tests: RateWindow::new(SMS_TESTS_PER_HOUR, Duration::from_secs(3600)),
            consumed_codes: crate::throttle::ConsumedCodes::default(),
            ceremonies: Default::default(),
            passkey_begins: RateWindow::new(PASSKEY_BEGINS_PER_MINUTE, Duration::from_secs(60)),
            social_begins: RateWindow::new(SOCIAL_BEGINS_PER_MINUTE, Duration::from_secs(60)),
            eudi_begins: RateWindow::new(super::eudi::BEGINS_PER_MINUTE, Duration::from_secs(60)),
            guardian_asks: RateWindow::new(
                super::limits::GUARDIAN_ASKS_PER_HOUR,
                Duration::from_secs(3600),
            ),
            guardian_calls: RateWindow::new(
                super::limits::GUARDIAN_CALLS_PER_MINUTE,
                Duration::from_secs(60),
            ),
            eudi_wallet_calls: RateWindow::new(
                super::eudi::WALLET_CALLS_PER_MINUTE,
                Duration::from_secs(60),
            ),
            eudi_verifier: None,
            passkey_step_ups: RateWindow::new(
                PASSKEY_STEP_UP_OPTIONS_PER_MINUTE,
                Duration::from_secs(60),
            ),
            agent_counters: Default::default(),
            agent_seq: 0,
            dcr_ips: RateWindow::new(dcr_per_hour, Duration::from_secs(3600)),
            user_code_tries: RateWindow::new(
                super::agents::USER_CODE_TRIES_PER_MINUTE,
                Duration::from_secs(60),
            ),
            webhooks: Default::default(),
        };
        state.eudi_verifier = state.load_verifier()?;
        state.restore_throttles()?;
        state.ensure_user_indexes()?;
        Ok(state)
    }

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
                    .is_some_and(|k| self.step_up_fails.restore(k, &saved, clocks)),
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
        self.login.has_changes() || self.step_up_fails.has_changes()
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
            self.step_up_fails.take_changes(clocks),
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
        self.step_up_fails.sweep(now);
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

    pub(super) fn next_action_seq(&mut self) -> u32 {
        self.agent_seq = self.agent_seq.wrapping_add(1);
        self.agent_seq
    }

    pub(super) fn next_event_key(&mut self, at: OffsetDateTime) -> Vec<u8> {
        self.audit_seq = self.audit_seq.wrapping_add(1);
        event_key(at, self.audit_seq)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant::{
        accounts::tests::tenant,
        settings::{MfaPolicy, SecurityPatch},
    };

    fn security(patch: SecurityPatch) -> SettingsChange {
        SettingsChange::Security(Box::new(patch))
    }

    fn event_count(t: &TenantState) -> usize {
        t.list_audit(None, 1000, None).unwrap().events.len()
    }

    fn raw_contains(t: &TenantState, needle: &[u8]) -> bool {
        t.store.raw_entries().any(|item| {
            let (_, key, value) = item.unwrap();
            [key, value]
                .iter()
                .any(|hay| hay.windows(needle.len()).any(|w| w == needle))
        })
    }

    #[tokio::test]
    async fn the_byok_token_is_sealed_at_rest_and_opens_for_the_sender() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        let token = "byok-token-0123456789abcdef0123456789";
        let view = t
            .update_settings(
                security(SecurityPatch {
                    byok_provider_auth_token: Some(Some(token.into())),
                    ..Default::default()
                }),
                &ctx,
            )
            .unwrap();
        assert!(view.byok_token_set);
        assert_eq!(t.byok_auth_token().unwrap().as_deref(), Some(token));
        assert!(!raw_contains(&t, token.as_bytes()));
        // The audit event names the field, never the value.
        let event = &t.list_audit(None, 1, None).unwrap().events[0].1;
        assert_eq!(event.event_type, "settings.security.updated");
        assert_eq!(event.fields, ["byok_provider_auth_token"]);
        let view = t
            .update_settings(
                security(SecurityPatch {
                    byok_provider_auth_token: Some(None),
                    ..Default::default()
                }),
                &ctx,
            )
            .unwrap();
        assert!(!view.byok_token_set);
        assert_eq!(t.byok_auth_token().unwrap(), None);
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
        t.update_settings(required(), &ctx).unwrap();
        assert_eq!(event_count(&t), before + 1);
        let stored = t
            .store
            .get::<TenantSettings>(SETTINGS_KEY)
            .unwrap()
            .unwrap();
        assert_eq!(stored.security.mfa_policy, MfaPolicy::Required);
        assert_eq!(stored, t.settings);
        t.update_settings(required(), &ctx).unwrap();
        assert_eq!(event_count(&t), before + 1);
    }

    #[tokio::test]
    async fn a_refused_settings_change_leaves_everything_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        let settings = t.settings.clone();
        let before = event_count(&t);
        let over_cap = security(SecurityPatch {
            magic_link_enabled: Some(false),
            byok_provider_auth_token: Some(Some("t".repeat(32))),
            sms_otp_monthly_cap: Some(t.runtime.sms_platform_caps.free + 1),
            ..Default::default()
        });
        assert!(matches!(
            t.update_settings(over_cap, &ctx),
            Err(TenantError::SmsCapAboveTier { .. })
        ));
        assert_eq!(t.settings, settings);
        assert_eq!(
            t.store
                .get::<TenantSettings>(SETTINGS_KEY)
                .unwrap()
                .unwrap(),
            settings
        );
        assert!(!t.settings_view().byok_token_set);
        assert_eq!(t.byok_auth_token().unwrap(), None);
        assert_eq!(event_count(&t), before);
    }

    #[tokio::test]
    async fn the_edge_sees_new_origins_and_redirect_urls_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        assert!(t.cells.edge.load().allows_origin("https://any.example"));
        t.update_settings(
            SettingsChange::AllowedOrigins(vec!["https://app.example".into()]),
            &ctx,
        )
        .unwrap();
        let edge = t.cells.edge.load();
        assert!(edge.allows_origin("https://app.example"));
        assert!(!edge.allows_origin("https://any.example"));
        t.update_settings(
            SettingsChange::Urls(crate::tenant::settings::UrlSettings {
                site_url: Some("https://app.example/".into()),
                redirect_urls: Vec::new(),
            }),
            &ctx,
        )
        .unwrap();
        assert!(t.cells.edge.load().urls.allows("https://app.example/"));
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
            t.append_audit(e).unwrap();
        }
        let first = t.list_audit(None, 2, None).unwrap();
        let seen: Vec<i64> = first
            .events
            .iter()
            .map(|(_, e)| e.metadata["i"].as_i64().unwrap())
            .collect();
        assert_eq!(seen, [4, 3]);
        let second = t.list_audit(first.next_cursor.as_deref(), 2, None).unwrap();
        let seen: Vec<i64> = second
            .events
            .iter()
            .map(|(_, e)| e.metadata["i"].as_i64().unwrap())
            .collect();
        assert_eq!(seen, [2, 1]);
        let odd = t.list_audit(None, 10, Some("odd")).unwrap();
        assert_eq!(odd.events.len(), 2);
        assert!(odd.next_cursor.is_none());
        let even = t.list_audit(None, 2, Some("even")).unwrap();
        assert_eq!(even.events.len(), 2);
        // One more "even" is left: the page says so.
        assert!(even.next_cursor.is_some());
        let rest = t
            .list_audit(even.next_cursor.as_deref(), 2, Some("even"))
            .unwrap();
        assert_eq!(rest.events.len(), 1);
        assert!(rest.next_cursor.is_none());
        assert_eq!(event_count(&t), base + 5);
    }

    #[tokio::test]
    async fn another_tenant_s_info_is_not_taken() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let mut other = t.info().clone();
        other.id = tessera_storage::TenantId::new();
        other.name = "Other".into();
        t.set_info(other);
        assert_eq!(t.info().name, "Acme");
        let mut renamed = t.info().clone();
        renamed.name = "Acme Inc".into();
        t.set_info(renamed);
        assert_eq!(t.info().name, "Acme Inc");
    }

    #[tokio::test]
    async fn failed_step_up_codes_are_written_with_the_next_commit_and_only_then() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let user = uuid::Uuid::now_v7();
        assert!(!t.throttles_changed());
        t.step_up_fails.fail(&user, Instant::now());
        assert!(t.throttles_changed());
        let fx = t.effects();
        t.commit(fx).unwrap();
        assert!(!t.throttles_changed());
        let saved: Vec<Vec<u8>> = t
            .store
            .scan::<TenantThrottleRecord>(b"")
            .map(|i| i.unwrap().0)
            .collect();
        assert_eq!(saved, [saved_key(THROTTLE_STEP_UP_CODES, &user)]);
        // Forgiven: the record goes with the next write.
        t.step_up_fails.reset(&user);
        t.persist_throttles().unwrap();
        assert_eq!(t.store.scan::<TenantThrottleRecord>(b"").count(), 0);
    }
}
