//! A passkey registered by a signed-in user: the ceremony begun (a resident key, user
//! verification preferred) and finished into a record with its credential index.

use crate::tenant::ctx::TenantCtx;
use crate::tenant::passkeys::memory::Passkeys;

use std::time::Instant;

use tessera_storage::sha256;
use time::OffsetDateTime;
use uuid::Uuid;
use webauthn_rs_core::proto::{
    AttestationConveyancePreference, AuthenticatorTransport, COSEAlgorithm,
    RegisterPublicKeyCredential, RequestRegistrationExtensions, UserVerificationPolicy,
};

use super::check::signed_challenge;
use crate::error::PasskeyError;
use crate::{
    error::TenantError,
    outbound::MailJob,
    tenant::{
        audit::AuditContext,
        ceremonies::Ceremony,
        credentials::Credential as CredentialKind,
        inventory::may_add,
        messages::{Bearer, PasskeyView},
        records::{passkey_key, PasskeyCredentialIndex, PasskeyRecord},
    },
};

/// Passkeys a user may hold.
pub const MAX_PASSKEYS: usize = 10;

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

impl Passkeys {
    /// The creation options for the signed-in user (its step-up already consumed): a
    /// resident key, user verification preferred, no attestation, the user's passkeys
    /// excluded.
    pub fn passkey_register_begin(
        &mut self,
        cx: &mut TenantCtx,
        bearer: Bearer,
    ) -> Result<serde_json::Value, TenantError> {
        let now = OffsetDateTime::now_utc();
        let (session, user) = cx.live_session(bearer, now)?;
        if user.is_anonymous {
            return Err(TenantError::GuestNotAllowed);
        }
        may_add(&user, CredentialKind::Passkeys)?;
        let existing = cx.passkeys_of(user.id)?;
        if existing.len() >= MAX_PASSKEYS {
            return Err(TenantError::Passkey(PasskeyError::Limit));
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
        let rp = self.relying_party(cx)?;
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
        cx.ceremonies.insert(
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
        cx: &mut TenantCtx,
        bearer: Bearer,
        response: serde_json::Value,
        nickname: Option<String>,
        ctx: &AuditContext,
    ) -> Result<(PasskeyView, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let (session, user) = cx.live_session(bearer, now)?;
        may_add(&user, CredentialKind::Passkeys)?;
        let reg: RegisterPublicKeyCredential = serde_json::from_value(response)
            .map_err(|_| TenantError::Passkey(PasskeyError::InvalidRegistration))?;
        let challenge = signed_challenge(&reg.response.client_data_json)
            .ok_or(TenantError::Passkey(PasskeyError::InvalidRegistration))?;
        let state = match cx.ceremonies.take(&challenge, Instant::now()) {
            Some(Ceremony::Register {
                session: s,
                user: u,
                state,
            }) if s == session.id && u == user.id => state,
            _ => return Err(TenantError::Passkey(PasskeyError::CeremonyNotFound)),
        };
        let mut credential = self
            .relying_party(cx)?
            .register_credential(&reg, &state, None)
            .map_err(|e| {
                tracing::debug!(error = %e, "passkey registration refused");
                TenantError::Passkey(PasskeyError::InvalidRegistration)
            })?;
        // A hint for later options (`allowCredentials`), as the browser reported it; the
        // library leaves it to the caller.
        credential.transports = reg.response.transports.clone().map(|t| {
            t.into_iter()
                .filter(|t| !matches!(t, AuthenticatorTransport::Unknown))
                .collect()
        });
        let index_key = sha256(&credential.cred_id);
        if cx
            .store
            .get::<PasskeyCredentialIndex>(&index_key)?
            .is_some()
        {
            return Err(TenantError::Passkey(PasskeyError::AlreadyRegistered));
        }
        if cx.passkeys_of(user.id)?.len() >= MAX_PASSKEYS {
            return Err(TenantError::Passkey(PasskeyError::Limit));
        }
        let record = PasskeyRecord {
            id: Uuid::now_v7(),
            user_id: user.id,
            nickname,
            aaguid: aaguid_of(&reg.response.attestation_object),
            credential,
            rp_id: cx.passkey_rp_id(),
            created_at: now,
            last_used_at: None,
            suspected_clone: false,
        };
        let mut fx = cx.effects();
        fx.batch.put(&passkey_key(user.id, record.id), &record)?;
        fx.batch.put(
            &index_key,
            &PasskeyCredentialIndex {
                user_id: user.id,
                passkey_id: record.id,
            },
        )?;
        self.passkey_audit(cx, &mut fx, "auth.passkey.registered", &record, ctx)?;
        Ok((record.view(), cx.commit(fx)?))
    }
}
