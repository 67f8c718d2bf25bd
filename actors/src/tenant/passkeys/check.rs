//! An assertion's check, which the handler runs on the request's thread, not the actor's:
//! what the ceremony hands it, the verdict it answers, the user verification it requires,
//! the challenge the client signed, and the `amr` a verified passkey gives.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use uuid::Uuid;
use webauthn_rs_core::proto::{
    AuthenticationState, Credential, PublicKeyCredential, UserVerificationPolicy,
};

use super::relying_party::RelyingPartyParts;
use crate::tenant::ctx::TenantCtx;
use crate::tenant::passkeys::memory::Passkeys;
use crate::{
    error::TenantError,
    tenant::{
        assertion,
        records::{PasskeyRecord, PasskeyUse},
    },
};

/// Sign-in and step-up both require user verification: a passkey is both factors only
/// with it (spec 5 rule 4).
pub(super) const ASSERTION_UV: UserVerificationPolicy = UserVerificationPolicy::Required;

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
    pub(super) rp_id: String,
}

impl CheckedPasskey {
    pub(super) fn of(record: &PasskeyRecord) -> Self {
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
    /// with the signature verified by aws-lc-rs ([`crate::tenant::assertion`]), for any other
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

impl Passkeys {
    /// The check the handler runs of `assertion`, made with `record`, for the ceremony of
    /// `challenge` (user verification required).
    pub(super) fn passkey_check(
        &self,
        cx: &TenantCtx,
        assertion: PublicKeyCredential,
        state: Box<AuthenticationState>,
        challenge: Vec<u8>,
        record: PasskeyRecord,
    ) -> Result<PasskeyCheck, TenantError> {
        Ok(PasskeyCheck {
            rp: self.relying_party_parts(cx)?,
            assertion,
            state,
            challenge,
            policy: ASSERTION_UV,
            passkey: CheckedPasskey::of(&record),
            credential: record.credential,
        })
    }
}

/// The challenge a browser signed, from `clientDataJSON`.
pub(super) fn signed_challenge(client_data_json: &[u8]) -> Option<Vec<u8>> {
    let v: serde_json::Value = serde_json::from_slice(client_data_json).ok()?;
    URL_SAFE_NO_PAD
        .decode(v.get("challenge")?.as_str()?.trim_end_matches('='))
        .ok()
}

/// RFC 8176: `hwk` for a key bound to its device, `swk` for one that may be copied (synced).
pub(super) fn amr_of(used: &PasskeyUse) -> &'static str {
    if used.backup_eligible {
        "swk"
    } else {
        "hwk"
    }
}
