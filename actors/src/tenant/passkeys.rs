//! Passkeys (WebAuthn, spec 2.6 and 4.1): registration, sign-in with or without a user
//! handle, step-up at AAL2, and the owner's list, rename and delete.
//!
//! The WebAuthn checks are `webauthn-rs-core`'s (the core of the webauthn-rs project; its
//! opinionated wrapper cannot ask for a resident key with user verification preferred, and
//! cannot tell the caller why an assertion failed). The relying party is built per call from
//! the settings: the RP id is `passkey_rp_id`, else the accounts URL's host; the accepted
//! origins are `https://<rp id>` with its subdomains, and `passkey_origins` exactly.
//!
//! A ceremony (the state between begin and finish) lives in memory for 5 minutes, keyed by
//! its challenge, which the finish finds inside `clientDataJSON`; the first finish that
//! names it takes it out, whatever its outcome, so of any number of concurrent finishes at
//! most one can succeed. A restart forgets the pending ceremonies: the user starts again.
//!
//! Sign-in requires user verification and gives AAL2 (`amr` `hwk` for a device-bound
//! credential, `swk` for a synced one); the passkey is both factors, so no MFA challenge
//! follows. The signature counter is the store's: one that does not increase (when either
//! value is non-zero) refuses the assertion and marks the passkey `suspected_clone`.
//!
//! A sign-in writes only the passkey's use state ([`PasskeyUse`]: counter, backup flags, last
//! use, clone mark), about 130 bytes beside the credential; every lookup here reads the two
//! together.

pub mod memory;
pub mod msg;

use std::{net::IpAddr, time::Instant};

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use tessera_storage::{sha256, Kind};
use time::OffsetDateTime;
use url::Url;
use uuid::Uuid;
use webauthn_rs_core::{
    proto::{
        AllowCredentials, AttestationConveyancePreference, AuthenticationState,
        AuthenticatorTransport, COSEAlgorithm, Credential, PublicKeyCredential,
        RegisterPublicKeyCredential, RequestRegistrationExtensions, UserVerificationPolicy,
    },
    WebauthnCore,
};

use super::assertion;
use super::{
    audit::AuditContext,
    ceremonies::{Ceremony, CEREMONY_TTL},
    credentials::Credential as CredentialKind,
    effects::{refused, Effects},
    inventory::may_add,
    messages::{Bearer, LoginOutcome, PasskeyView, StepUpGrant},
    records::{passkey_key, PasskeyCredentialIndex, PasskeyRecord, PasskeyUse, UserRecord},
    sessions::Proof,
    state::TenantState,
};
use crate::{error::TenantError, outbound::MailJob, throttle::throttle_ip};

/// Passkeys a user may hold.
pub const MAX_PASSKEYS: usize = 10;
/// Extra origins a tenant may accept.
pub use super::settings::rules::MAX_PASSKEY_ORIGINS;
/// Sign-in and step-up both require user verification: a passkey is both factors only
/// with it (spec 5 rule 4).
const ASSERTION_UV: UserVerificationPolicy = UserVerificationPolicy::Required;

/// What the WebAuthn checks said of an assertion (see [`PasskeyCheck::verify`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssertionVerdict {
    /// Every check passed; what the authenticator data said.
    Valid {
        counter: u32,
        backup_eligible: bool,
        backup_state: bool,
    },
    /// A good signature without user verification where it was required.
    UserNotVerified,
    /// A signature counter at or below the one the check was given.
    CounterRegression,
    /// Anything else: origin, RP id, challenge, type, flags, signature.
    Invalid,
}

/// An assertion with everything needed to check it, taken from the actor so the signature
/// (a P-256 verification, the costly part of a sign-in) is checked on a request's thread.
pub struct PasskeyCheck {
    rp: RelyingPartyParts,
    assertion: PublicKeyCredential,
    state: Box<AuthenticationState>,
    /// The ceremony's challenge (the key it was found by) and user-verification policy.
    challenge: Vec<u8>,
    policy: UserVerificationPolicy,
    credential: Credential,
    /// The passkey checked, for the finish.
    pub passkey: CheckedPasskey,
}

/// The passkey an assertion was checked against, as the finish of a sign-in or step-up needs
/// it: whose, which, and the relying-party id it was registered under (a record never
/// changes it, so the finish need not read the credential again).
#[derive(Clone, Debug)]
pub struct CheckedPasskey {
    pub user_id: Uuid,
    pub passkey_id: Uuid,
    rp_id: String,
}

impl CheckedPasskey {
    fn of(record: &PasskeyRecord) -> Self {
        CheckedPasskey {
            user_id: record.user_id,
            passkey_id: record.id,
            rp_id: record.rp_id.clone(),
        }
    }
}

impl std::fmt::Debug for PasskeyCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasskeyCheck")
            .field("passkey_id", &self.passkey.passkey_id)
            .finish_non_exhaustive()
    }
}

impl PasskeyCheck {
    /// The WebAuthn checks of the assertion (client data type, challenge and origin, RP id
    /// hash, user presence, user verification as the ceremony required, backup flags, the
    /// signature, the counter against the one taken): for ES256 credentials the same steps
    /// with the signature verified by aws-lc-rs ([`super::assertion`]), for any other
    /// algorithm by `webauthn-rs-core`.
    pub fn verify(&self) -> AssertionVerdict {
        match assertion::es256_point(&self.credential) {
            Some(point) => assertion::check_es256(
                &self.rp.borrowed(),
                &assertion::Expected {
                    challenge: &self.challenge,
                    policy: self.policy,
                },
                &self.credential,
                &point,
                &self.assertion,
            ),
            None => self.verify_with_library(),
        }
    }

    /// The whole check by `webauthn-rs-core`.
    fn verify_with_library(&self) -> AssertionVerdict {
        assertion::library_check(
            &self.rp.core(),
            &self.state,
            &self.credential,
            &self.assertion,
        )
    }
}

/// A tenant's relying party: its id and the origins it accepts (`https://<rp id>` with its
/// subdomains, and `passkey_origins` exactly; no other port).
#[derive(Clone)]
struct RelyingPartyParts {
    name: String,
    rp_id: String,
    origins: Vec<Url>,
}

impl RelyingPartyParts {
    fn borrowed(&self) -> assertion::RelyingParty<'_> {
        assertion::RelyingParty {
            rp_id: &self.rp_id,
            origins: &self.origins,
            allow_subdomains: true,
        }
    }

    fn core(&self) -> WebauthnCore {
        WebauthnCore::new_unsafe_experts_only(
            &self.name,
            &self.rp_id,
            self.origins.clone(),
            CEREMONY_TTL,
            Some(true),
            Some(false),
        )
    }
}

/// The challenge a browser signed, from `clientDataJSON`.
fn signed_challenge(client_data_json: &[u8]) -> Option<Vec<u8>> {
    let v: serde_json::Value = serde_json::from_slice(client_data_json).ok()?;
    URL_SAFE_NO_PAD
        .decode(v.get("challenge")?.as_str()?.trim_end_matches('='))
        .ok()
}

/// The AAGUID in a registration's attestation object (zeros when absent).
fn aaguid_of(attestation_object: &[u8]) -> Uuid {
    let auth_data = ciborium::from_reader::<ciborium::Value, _>(attestation_object)
        .ok()
        .and_then(|v| {
            v.as_map()?.iter().find_map(|(k, v)| {
                (k.as_text() == Some("authData")).then(|| v.as_bytes().cloned())?
            })
        });
    // rp id hash (32), flags (1), counter (4), then the attested credential data.
    auth_data
        .and_then(|d| d.get(37..53).map(<[u8]>::to_vec))
        .and_then(|b| Uuid::from_slice(&b).ok())
        .unwrap_or(Uuid::nil())
}

/// The user handle of a sign-in request: the user id's 16 bytes in base64url (as the
/// authenticator returns it), or the id as text.
fn parse_user_handle(handle: &str) -> Option<Uuid> {
    if let Ok(id) = Uuid::parse_str(handle) {
        return Some(id);
    }
    let bytes = URL_SAFE_NO_PAD.decode(handle.trim_end_matches('=')).ok()?;
    Uuid::from_slice(&bytes).ok()
}

/// RFC 8176: `hwk` for a key bound to its device, `swk` for one that may be copied (synced).
fn amr_of(used: &PasskeyUse) -> &'static str {
    if used.backup_eligible {
        "swk"
    } else {
        "hwk"
    }
}

impl PasskeyRecord {
    pub fn view(&self) -> PasskeyView {
        let transports = self
            .credential
            .transports
            .iter()
            .flatten()
            .filter_map(|t| serde_json::to_value(t).ok())
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        PasskeyView {
            id: self.id,
            nickname: self.nickname.clone(),
            created_at: self.created_at,
            last_used_at: self.last_used_at,
            backup_eligible: self.credential.backup_eligible,
            backed_up: self.credential.backup_state,
            transports,
            aaguid: self.aaguid,
            suspected_clone: self.suspected_clone,
        }
    }
}

impl TenantState {
    /// The relying-party id in force: the setting, else the accounts URL's host.
    pub(super) fn passkey_rp_id(&self) -> String {
        self.rp_id_for(self.cx.settings.passkey_rp_id.as_deref())
    }

    /// The relying-party id a `passkey_rp_id` setting gives.
    fn rp_id_for(&self, setting: Option<&str>) -> String {
        setting.map(str::to_owned).unwrap_or_else(|| {
            Url::parse(&self.cx.runtime.accounts_url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_else(|| "localhost".to_owned())
        })
    }

    /// The relying party as the settings define it now.
    fn relying_party_parts(&self) -> Result<RelyingPartyParts, TenantError> {
        let rp_id = self.passkey_rp_id();
        let mut origins = vec![Url::parse(&format!("https://{rp_id}"))
            .map_err(|e| TenantError::Internal(format!("relying-party origin: {e}")))?];
        origins.extend(
            self.cx
                .settings
                .passkey_origins
                .iter()
                .filter_map(|o| Url::parse(o).ok()),
        );
        Ok(RelyingPartyParts {
            name: self.cx.info.name.clone(),
            rp_id,
            origins,
        })
    }

    fn relying_party(&self) -> Result<WebauthnCore, TenantError> {
        Ok(self.relying_party_parts()?.core())
    }

    /// The user's passkeys, oldest first, each with its use applied.
    pub(super) fn passkeys_of(&self, user: Uuid) -> Result<Vec<PasskeyRecord>, TenantError> {
        let mut out = Vec::new();
        for item in self.cx.store.scan::<PasskeyRecord>(user.as_bytes()) {
            let (_, record) = item?;
            out.push(self.in_use(record)?);
        }
        out.sort_by_key(|p| p.created_at);
        Ok(out)
    }

    /// `record` with its use state applied, when it has one.
    fn in_use(&self, record: PasskeyRecord) -> Result<PasskeyRecord, TenantError> {
        let key = passkey_key(record.user_id, record.id);
        Ok(match self.cx.store.get::<PasskeyUse>(&key)? {
            Some(used) => record.with_use(used),
            None => record,
        })
    }

    /// A passkey's use state as stored now; `None` when the passkey is gone.
    fn use_now(&self, user: Uuid, passkey: Uuid) -> Result<Option<PasskeyUse>, TenantError> {
        let key = passkey_key(user, passkey);
        if let Some(used) = self.cx.store.get::<PasskeyUse>(&key)? {
            return Ok(Some(used));
        }
        // Never used since registration: the record's own values.
        Ok(self
            .cx
            .store
            .get::<PasskeyRecord>(&key)?
            .map(|r| r.use_state()))
    }

    /// One passkey with its use applied.
    fn passkey(&self, user: Uuid, passkey: Uuid) -> Result<Option<PasskeyRecord>, TenantError> {
        self.cx
            .store
            .get::<PasskeyRecord>(&passkey_key(user, passkey))?
            .map(|r| self.in_use(r))
            .transpose()
    }

    /// The user's passkeys that can sign in now: under the RP id in force, not suspect.
    pub(super) fn usable_passkeys(&self, user: Uuid) -> Result<Vec<PasskeyRecord>, TenantError> {
        let rp_id = self.passkey_rp_id();
        Ok(self
            .passkeys_of(user)?
            .into_iter()
            .filter(|p| p.rp_id == rp_id && !p.suspected_clone)
            .collect())
    }

    /// How many passkeys of all users were registered under `rp_id`.
    pub(super) fn passkeys_under(&self, rp_id: &str) -> Result<usize, TenantError> {
        let mut n = 0;
        for item in self.cx.store.scan::<PasskeyRecord>(b"") {
            let (_, record) = item?;
            if record.rp_id == rp_id {
                n += 1;
            }
        }
        Ok(n)
    }

    /// The records of the user's passkeys: each credential, its use record and its index
    /// entry.
    pub(super) fn passkey_keys(&self, user: Uuid) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for p in self.passkeys_of(user)? {
            out.push((Kind::Passkey, passkey_key(user, p.id)));
            out.push((Kind::PasskeyUse, passkey_key(user, p.id)));
            out.push((
                Kind::PasskeyCredential,
                sha256(&p.credential.cred_id).to_vec(),
            ));
        }
        Ok(out)
    }

    fn passkey_audit(
        &mut self,
        fx: &mut Effects,
        event: &str,
        record: &PasskeyRecord,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        let metadata = serde_json::json!({
            "user_id": record.user_id,
            "passkey_id": record.id,
            "backup_eligible": record.credential.backup_eligible,
            "ip_hash": ctx.ip_hash,
            "ua_family": ctx.ua_family,
        });
        self.audit_into(&mut fx.batch, event, ctx, metadata)
    }

    /// The creation options for the signed-in user (its step-up already consumed): a
    /// resident key, user verification preferred, no attestation, the user's passkeys
    /// excluded.
    pub fn passkey_register_begin(
        &mut self,
        bearer: Bearer,
    ) -> Result<serde_json::Value, TenantError> {
        let now = OffsetDateTime::now_utc();
        let (session, user) = self.live_session(bearer, now)?;
        if user.is_anonymous {
            return Err(TenantError::GuestNotAllowed);
        }
        may_add(&user, CredentialKind::Passkeys)?;
        let existing = self.passkeys_of(user.id)?;
        if existing.len() >= MAX_PASSKEYS {
            return Err(TenantError::PasskeyLimit);
        }
        let name = user
            .email
            .clone()
            .or_else(|| user.phone.clone())
            .unwrap_or_else(|| user.id.to_string());
        let exclude = existing
            .iter()
            .map(|p| p.credential.cred_id.clone())
            .collect();
        let rp = self.relying_party()?;
        let builder = rp
            .new_challenge_register_builder(user.id.as_bytes(), &name, &name)
            .map_err(|e| TenantError::Internal(format!("passkey options: {e}")))?
            .attestation(AttestationConveyancePreference::None)
            .credential_algorithms(COSEAlgorithm::secure_algs())
            .require_resident_key(true)
            .user_verification_policy(UserVerificationPolicy::Preferred)
            .exclude_credentials(Some(exclude))
            .extensions(Some(RequestRegistrationExtensions {
                cred_props: Some(true),
                ..Default::default()
            }));
        let (ccr, state) = rp
            .generate_challenge_register(builder)
            .map_err(|e| TenantError::Internal(format!("passkey options: {e}")))?;
        let challenge = ccr.public_key.challenge.to_vec();
        let options = serde_json::to_value(&ccr.public_key)
            .map_err(|e| TenantError::Internal(e.to_string()))?;
        self.passkeys.ceremonies.insert(
            challenge,
            Ceremony::Register {
                session: session.id,
                user: user.id,
                state: Box::new(state),
            },
            Instant::now(),
        );
        Ok(options)
    }

    /// Verifies the browser's new credential against the session's ceremony and stores it.
    pub fn passkey_register_finish(
        &mut self,
        bearer: Bearer,
        response: serde_json::Value,
        nickname: Option<String>,
        ctx: &AuditContext,
    ) -> Result<(PasskeyView, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let (session, user) = self.live_session(bearer, now)?;
        may_add(&user, CredentialKind::Passkeys)?;
        let reg: RegisterPublicKeyCredential = serde_json::from_value(response)
            .map_err(|_| TenantError::PasskeyInvalidRegistration)?;
        let challenge = signed_challenge(&reg.response.client_data_json)
            .ok_or(TenantError::PasskeyInvalidRegistration)?;
        let state = match self.passkeys.ceremonies.take(&challenge, Instant::now()) {
            Some(Ceremony::Register {
                session: s,
                user: u,
                state,
            }) if s == session.id && u == user.id => state,
            _ => return Err(TenantError::PasskeyCeremonyNotFound),
        };
        let mut credential = self
            .relying_party()?
            .register_credential(&reg, &state, None)
            .map_err(|e| {
                tracing::debug!(error = %e, "passkey registration refused");
                TenantError::PasskeyInvalidRegistration
            })?;
        // A hint for later options (`allowCredentials`), as the browser reported it; the
        // library leaves it to the caller.
        credential.transports = reg.response.transports.clone().map(|t| {
            t.into_iter()
                .filter(|t| !matches!(t, AuthenticatorTransport::Unknown))
                .collect()
        });
        let index_key = sha256(&credential.cred_id);
        if self
            .cx
            .store
            .get::<PasskeyCredentialIndex>(&index_key)?
            .is_some()
        {
            return Err(TenantError::PasskeyAlreadyRegistered);
        }
        if self.passkeys_of(user.id)?.len() >= MAX_PASSKEYS {
            return Err(TenantError::PasskeyLimit);
        }
        let record = PasskeyRecord {
            id: Uuid::now_v7(),
            user_id: user.id,
            nickname,
            aaguid: aaguid_of(&reg.response.attestation_object),
            credential,
            rp_id: self.passkey_rp_id(),
            created_at: now,
            last_used_at: None,
            suspected_clone: false,
        };
        let mut fx = self.effects();
        fx.batch.put(&passkey_key(user.id, record.id), &record)?;
        fx.batch.put(
            &index_key,
            &PasskeyCredentialIndex {
                user_id: user.id,
                passkey_id: record.id,
            },
        )?;
        self.passkey_audit(&mut fx, "auth.passkey.registered", &record, ctx)?;
        Ok((record.view(), self.commit(fx)?))
    }

    /// The request options of a sign-in: for the user `user_handle` names (their usable
    /// passkeys; for an unknown user or one without passkeys, a credential id derived from
    /// the handle, so the answer does not tell), or discoverable without one.
    pub fn passkey_assert_begin(
        &mut self,
        user_handle: Option<&str>,
        ip: IpAddr,
    ) -> Result<serde_json::Value, TenantError> {
        let clock = Instant::now();
        self.cx.login.address_gate(ip).map_err(refused)?;
        self.passkeys
            .begins
            .hit(&throttle_ip(ip), clock)
            .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
        let rp = self.relying_party()?;
        let (user, creds, decoy) = match user_handle {
            None => (None, Vec::new(), None),
            Some(handle) => {
                let found = parse_user_handle(handle)
                    .map(|id| self.user(id))
                    .transpose()?
                    .flatten()
                    .filter(|u| u.blocked_at.is_none());
                let creds: Vec<Credential> = match &found {
                    Some(u) => self
                        .usable_passkeys(u.id)?
                        .into_iter()
                        .map(|p| p.credential)
                        .collect(),
                    None => Vec::new(),
                };
                if creds.is_empty() {
                    let decoy = self.cx.otp_hasher.hash(handle.as_bytes()).to_vec();
                    (Some(Uuid::nil()), creds, Some(decoy))
                } else {
                    (found.map(|u| u.id), creds, None)
                }
            }
        };
        let builder = rp
            .new_challenge_authenticate_builder(creds, Some(ASSERTION_UV))
            .map_err(|e| TenantError::Internal(format!("passkey options: {e}")))?;
        let (mut rcr, state) = rp
            .generate_challenge_authenticate(builder)
            .map_err(|e| TenantError::Internal(format!("passkey options: {e}")))?;
        if let Some(id) = decoy {
            rcr.public_key.allow_credentials = vec![AllowCredentials {
                type_: "public-key".into(),
                id,
                transports: None,
            }];
        }
        let challenge = rcr.public_key.challenge.to_vec();
        let options = serde_json::to_value(&rcr.public_key)
            .map_err(|e| TenantError::Internal(e.to_string()))?;
        self.passkeys.ceremonies.insert(
            challenge,
            Ceremony::SignIn {
                user,
                state: Box::new(state),
            },
            clock,
        );
        Ok(options)
    }

    /// Applies what the checks said of an assertion to the passkey's use as stored now: a
    /// counter that did not increase past the stored one (when either is non-zero) marks it
    /// a suspected clone (written with `fx`, with its audit event); a valid one moves the
    /// counter and the backup flags, and the last use to `now`. A passkey made under another
    /// RP id than the tenant's now, or already suspect, is refused whatever the verdict.
    fn apply_verdict(
        &mut self,
        fx: &mut Effects,
        passkey: &CheckedPasskey,
        used: &mut PasskeyUse,
        verdict: AssertionVerdict,
        now: OffsetDateTime,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        if passkey.rp_id != self.passkey_rp_id() || used.suspected_clone {
            return Err(TenantError::PasskeyInvalidAssertion);
        }
        let key = passkey_key(passkey.user_id, passkey.passkey_id);
        let stored = used.counter;
        let counted = |c: u32| (c > 0 || stored > 0) && c <= stored;
        match verdict {
            AssertionVerdict::Valid {
                counter,
                backup_eligible,
                backup_state,
            } if !counted(counter) => {
                used.counter = counter.max(stored);
                used.backup_eligible = backup_eligible;
                used.backed_up = backup_state;
                used.last_used_at = Some(now);
                fx.batch.put(&key, &*used)?;
                Ok(())
            }
            AssertionVerdict::Valid { .. } | AssertionVerdict::CounterRegression => {
                used.suspected_clone = true;
                fx.batch.put(&key, &*used)?;
                let metadata = serde_json::json!({
                    "user_id": passkey.user_id,
                    "passkey_id": passkey.passkey_id,
                    "stored_counter": stored,
                    "ip_hash": ctx.ip_hash,
                    "ua_family": ctx.ua_family,
                });
                self.audit_into(
                    &mut fx.batch,
                    "auth.passkey.counter_regression",
                    ctx,
                    metadata,
                )?;
                Err(TenantError::PasskeyInvalidAssertion)
            }
            AssertionVerdict::UserNotVerified => Err(TenantError::PasskeyStepUpRequired),
            AssertionVerdict::Invalid => Err(TenantError::PasskeyInvalidAssertion),
        }
    }

    /// The stored passkey an assertion names, if any.
    fn passkey_named(
        &self,
        assertion: &PublicKeyCredential,
    ) -> Result<Option<PasskeyRecord>, TenantError> {
        let Some(ix) = self
            .cx
            .store
            .get::<PasskeyCredentialIndex>(&sha256(&assertion.raw_id))?
        else {
            return Ok(None);
        };
        self.passkey(ix.user_id, ix.passkey_id)
    }

    /// A refused sign-in: counted against the client address, and audited.
    fn passkey_sign_in_failed<T>(
        &mut self,
        mut fx: Effects,
        ip: IpAddr,
        user: Option<Uuid>,
        reason: &str,
        ctx: &AuditContext,
    ) -> Result<T, TenantError> {
        self.cx.login.fail_address(ip);
        self.audit_into(
            &mut fx.batch,
            "auth.login.failed",
            ctx,
            serde_json::json!({
                "user_id": user,
                "method": "passkey",
                "reason": reason,
                "ip_hash": ctx.ip_hash,
                "ua_family": ctx.ua_family,
            }),
        )?;
        self.fail(fx, TenantError::PasskeyInvalidAssertion)
    }

    /// The first half of a sign-in: takes the ceremony the assertion names and finds the
    /// passkey, so the signature can be checked off the actor ([`PasskeyCheck::verify`]);
    /// [`Self::passkey_assert_finish`] then applies the verdict. Refusals here are counted
    /// and audited like a wrong signature.
    pub fn passkey_assert_take(
        &mut self,
        response: serde_json::Value,
        ip: IpAddr,
        ctx: &AuditContext,
    ) -> Result<PasskeyCheck, TenantError> {
        let clock = Instant::now();
        let fx = self.effects();
        let Ok(assertion) = serde_json::from_value::<PublicKeyCredential>(response) else {
            return self.passkey_sign_in_failed(fx, ip, None, "malformed", ctx);
        };
        let challenge = signed_challenge(&assertion.response.client_data_json)
            .ok_or(TenantError::PasskeyCeremonyNotFound)?;
        let (named, state) = match self.passkeys.ceremonies.take(&challenge, clock) {
            Some(Ceremony::SignIn { user, state }) => (user, state),
            _ => return Err(TenantError::PasskeyCeremonyNotFound),
        };
        self.cx.login.address_gate(ip).map_err(refused)?;
        let Some(record) = self.passkey_named(&assertion)? else {
            return self.passkey_sign_in_failed(fx, ip, None, "unknown_credential", ctx);
        };
        let owner = record.user_id;
        let handle_ok = match &assertion.response.user_handle {
            Some(h) => h.as_slice() == owner.as_bytes(),
            // A discoverable sign-in must say whose credential it is.
            None => named.is_some(),
        };
        if !handle_ok || named.is_some_and(|u| u != owner) {
            return self.passkey_sign_in_failed(fx, ip, Some(owner), "wrong_user", ctx);
        }
        Ok(PasskeyCheck {
            rp: self.relying_party_parts()?,
            assertion,
            state,
            challenge,
            policy: ASSERTION_UV,
            passkey: CheckedPasskey::of(&record),
            credential: record.credential,
        })
    }

    /// The second half of a sign-in: the verdict on the signature applied to the passkey as
    /// stored now (its counter may have moved since the take), then AAL2, `hwk` or `swk`, no
    /// second step.
    pub fn passkey_assert_finish(
        &mut self,
        passkey: CheckedPasskey,
        verdict: AssertionVerdict,
        ip: IpAddr,
        ctx: &AuditContext,
    ) -> Result<(LoginOutcome, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let mut fx = self.effects();
        let user_id = passkey.user_id;
        let Some(mut used) = self.use_now(user_id, passkey.passkey_id)? else {
            // Deleted while its signature was being checked.
            return self.passkey_sign_in_failed(fx, ip, Some(user_id), "unknown_credential", ctx);
        };
        if let Err(e) = self.apply_verdict(&mut fx, &passkey, &mut used, verdict, now, ctx) {
            let reason = match e {
                TenantError::PasskeyStepUpRequired => "user_not_verified",
                _ => "invalid_assertion",
            };
            return self.passkey_sign_in_failed(fx, ip, Some(user_id), reason, ctx);
        }
        let mut user: UserRecord = self
            .user(user_id)?
            .ok_or(TenantError::PasskeyInvalidAssertion)?;
        let mut proof = Proof::first_factor(amr_of(&used), "passkey");
        proof.aal = 2;
        proof
            .audit
            .insert("passkey_id".into(), serde_json::json!(passkey.passkey_id));
        let grant = match self.signed_in(&mut fx, &mut user, proof, ctx, now) {
            Ok(g) => g,
            Err(e) => return self.fail(fx, e),
        };
        let outcome = LoginOutcome::Signed {
            grant,
            enrollment_required_by: None,
        };
        Ok((outcome, self.commit(fx)?))
    }

    /// The step-up options of the caller's session: their usable passkeys, user
    /// verification required.
    pub fn passkey_step_up_options(
        &mut self,
        bearer: Bearer,
        ctx: &AuditContext,
    ) -> Result<(serde_json::Value, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let (session, user) = self.live_session(bearer, now)?;
        let creds: Vec<Credential> = self
            .usable_passkeys(user.id)?
            .into_iter()
            .map(|p| p.credential)
            .collect();
        if creds.is_empty() {
            return Err(TenantError::StepUpMethodUnavailable);
        }
        self.passkeys
            .step_ups
            .hit(&session.id, Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
        let rp = self.relying_party()?;
        let builder = rp
            .new_challenge_authenticate_builder(creds, Some(ASSERTION_UV))
            .map_err(|e| TenantError::Internal(format!("passkey options: {e}")))?;
        let (rcr, state) = rp
            .generate_challenge_authenticate(builder)
            .map_err(|e| TenantError::Internal(format!("passkey options: {e}")))?;
        let options = serde_json::to_value(&rcr.public_key)
            .map_err(|e| TenantError::Internal(e.to_string()))?;
        self.passkeys.ceremonies.insert(
            rcr.public_key.challenge.to_vec(),
            Ceremony::StepUp {
                session: session.id,
                user: user.id,
                state: Box::new(state),
            },
            Instant::now(),
        );
        let mut fx = self.effects();
        let metadata = serde_json::json!({
            "user_id": user.id,
            "session_id": session.id,
            "step_up_method": "passkey",
            "aal": 2,
            "ip_hash": ctx.ip_hash,
            "ua_family": ctx.ua_family,
        });
        self.audit_into(
            &mut fx.batch,
            "auth.step_up_passkey_options_issued",
            ctx,
            metadata,
        )?;
        Ok((options, self.commit(fx)?))
    }

    /// The first half of a passkey step-up: takes the caller's session's options that the
    /// assertion names and finds the passkey, so the signature is checked off the actor
    /// ([`PasskeyCheck::verify`]); [`Self::passkey_step_up_finish`] applies the verdict.
    pub fn passkey_step_up_take(
        &mut self,
        bearer: Bearer,
        assertion: serde_json::Value,
        ctx: &AuditContext,
    ) -> Result<PasskeyCheck, TenantError> {
        let (session, user) = self.live_session(bearer, OffsetDateTime::now_utc())?;
        let mut fx = self.effects();
        let assertion: PublicKeyCredential = match serde_json::from_value(assertion) {
            Ok(a) => a,
            Err(_) => {
                self.step_up_failed(&mut fx, &user, "passkey", 2, "malformed", ctx)?;
                return self.fail(fx, TenantError::PasskeyInvalidAssertion);
            }
        };
        let challenge = signed_challenge(&assertion.response.client_data_json)
            .ok_or(TenantError::InvalidChallenge)?;
        let state = match self.passkeys.ceremonies.take(&challenge, Instant::now()) {
            Some(Ceremony::StepUp {
                session: s,
                user: u,
                state,
            }) if s == session.id && u == user.id => state,
            _ => {
                self.step_up_failed(&mut fx, &user, "passkey", 2, "no_challenge", ctx)?;
                return self.fail(fx, TenantError::InvalidChallenge);
            }
        };
        let record = match self.passkey_named(&assertion)? {
            Some(r) if r.user_id == user.id => r,
            _ => {
                self.step_up_failed(&mut fx, &user, "passkey", 2, "unknown_credential", ctx)?;
                return self.fail(fx, TenantError::PasskeyInvalidAssertion);
            }
        };
        Ok(PasskeyCheck {
            rp: self.relying_party_parts()?,
            assertion,
            state,
            challenge,
            policy: ASSERTION_UV,
            passkey: CheckedPasskey::of(&record),
            credential: record.credential,
        })
    }

    /// The second half of a passkey step-up: the verdict applied to the passkey as stored
    /// now, then a step-up token of the caller's session at AAL2, `hwk` or `swk`. Without
    /// user verification: `PasskeyStepUpRequired`, nothing issued.
    pub fn passkey_step_up_finish(
        &mut self,
        bearer: Bearer,
        passkey: CheckedPasskey,
        verdict: AssertionVerdict,
        ctx: &AuditContext,
    ) -> Result<(StepUpGrant, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let (session, user) = self.live_session(bearer, now)?;
        let mut fx = self.effects();
        let used = self
            .use_now(user.id, passkey.passkey_id)?
            .filter(|_| passkey.user_id == user.id);
        let Some(mut used) = used else {
            // Deleted while its signature was being checked.
            self.step_up_failed(&mut fx, &user, "passkey", 2, "unknown_credential", ctx)?;
            return self.fail(fx, TenantError::PasskeyInvalidAssertion);
        };
        if let Err(e) = self.apply_verdict(&mut fx, &passkey, &mut used, verdict, now, ctx) {
            let reason = match e {
                TenantError::PasskeyStepUpRequired => "user_not_verified",
                _ => "invalid_assertion",
            };
            self.step_up_failed(&mut fx, &user, "passkey", 2, reason, ctx)?;
            return self.fail(fx, e);
        }
        let grant = self.issue_step_up(
            &mut fx,
            &session,
            2,
            vec![amr_of(&used).to_owned()],
            "passkey",
            None,
            ctx,
        )?;
        Ok((grant, self.commit(fx)?))
    }

    /// The caller's passkeys, oldest first.
    pub fn passkey_list(&self, bearer: Bearer) -> Result<Vec<PasskeyView>, TenantError> {
        let (_, user) = self.live_session(bearer, OffsetDateTime::now_utc())?;
        Ok(self
            .passkeys_of(user.id)?
            .iter()
            .map(PasskeyRecord::view)
            .collect())
    }

    /// One of the caller's passkeys (another's: not found).
    fn own_passkey(
        &self,
        bearer: Bearer,
        id: Uuid,
    ) -> Result<(UserRecord, PasskeyRecord), TenantError> {
        let (_, user) = self.live_session(bearer, OffsetDateTime::now_utc())?;
        let record = self.passkey(user.id, id)?.ok_or(TenantError::NotFound)?;
        Ok((user, record))
    }

    /// Renames one of the caller's passkeys.
    pub fn passkey_rename(
        &mut self,
        bearer: Bearer,
        id: Uuid,
        nickname: String,
        ctx: &AuditContext,
    ) -> Result<(PasskeyView, Vec<MailJob>), TenantError> {
        let (user, mut record) = self.own_passkey(bearer, id)?;
        record.nickname = Some(nickname);
        let mut fx = self.effects();
        fx.batch.put(&passkey_key(user.id, id), &record)?;
        self.passkey_audit(&mut fx, "auth.passkey.renamed", &record, ctx)?;
        Ok((record.view(), self.commit(fx)?))
    }

    /// Deletes one of the caller's passkeys, unless it is their last way in: no password,
    /// no confirmed address or number, no other passkey.
    pub fn passkey_delete(
        &mut self,
        bearer: Bearer,
        id: Uuid,
        ctx: &AuditContext,
    ) -> Result<((), Vec<MailJob>), TenantError> {
        let (user, record) = self.own_passkey(bearer, id)?;
        let other_way_in = user.password_hash.is_some()
            || (user.email.is_some() && user.email_verified)
            || (user.phone.is_some() && user.phone_verified)
            || self.usable_passkeys(user.id)?.iter().any(|p| p.id != id);
        if !other_way_in {
            return Err(TenantError::PasskeyLastCredential);
        }
        let mut fx = self.effects();
        fx.batch.remove(Kind::Passkey, &passkey_key(user.id, id));
        fx.batch.remove(Kind::PasskeyUse, &passkey_key(user.id, id));
        fx.batch
            .remove(Kind::PasskeyCredential, &sha256(&record.credential.cred_id));
        self.passkey_audit(&mut fx, "auth.passkey.deleted", &record, ctx)?;
        Ok(((), self.commit(fx)?))
    }

    /// Changes the relying-party id and the extra origins. A new RP id strands the passkeys
    /// registered under the old one: refused while there are any, unless `confirmed`; then
    /// the audit log says how many stopped working.
    pub fn passkey_domain(
        &mut self,
        rp_id: Option<Option<String>>,
        origins: Option<Vec<String>>,
        confirmed: bool,
        ctx: &AuditContext,
    ) -> Result<super::messages::SettingsView, TenantError> {
        let old = self.passkey_rp_id();
        let stranded = match &rp_id {
            Some(next) if self.rp_id_for(next.as_deref()) != old => self.passkeys_under(&old)?,
            _ => 0,
        };
        if stranded > 0 && !confirmed {
            return Err(TenantError::PasskeyRpIdInUse { passkeys: stranded });
        }
        let view = self.update_settings(
            super::settings::SettingsChange::PasskeyDomain { rp_id, origins },
            ctx,
        )?;
        if stranded > 0 {
            let mut fx = self.effects();
            let metadata = serde_json::json!({
                "old_rp_id": old,
                "new_rp_id": self.passkey_rp_id(),
                "passkeys_stranded": stranded,
            });
            self.audit_into(&mut fx.batch, "auth.passkey.rp_id_changed", ctx, metadata)?;
            self.commit(fx)?;
        }
        Ok(view)
    }
}

#[cfg(test)]
mod tests;
