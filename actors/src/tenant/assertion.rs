//! The check of a passkey assertion signed with ES256 (ECDSA on P-256 with SHA-256, COSE
//! algorithm -7: what every platform authenticator and security key uses for passkeys).
//!
//! `webauthn-rs-core` checks an assertion in one call whose P-256 signature check (RustCrypto
//! `p256`) was most of a sign-in's CPU. For ES256 credentials this module takes the same
//! steps in the same order, with the library's own parsers (`CollectedClientData`,
//! `AuthenticatorData`) and origin rule (`origins_match`), and verifies the signature with
//! aws-lc-rs instead. Every other algorithm goes through the library
//! ([`PasskeyCheck::verify`](super::passkeys::PasskeyCheck::verify)). The unit tests run both
//! on the same assertions, valid and broken in each way, and require the same verdict.
//!
//! W3C WebAuthn Level 3, 7.2 "Verifying an Authentication Assertion", steps 7-21, as the
//! library takes them:
//! 1. the credential is the one the assertion names (`rawId`);
//! 2. `clientDataJSON` parses, its `type` is `webauthn.get`, its `challenge` the ceremony's,
//!    its `origin` one the relying party accepts;
//! 3. the authenticator data parses and its RP id hash is SHA-256 of the RP id;
//! 4. user presence is set; user verification where the ceremony or the registration
//!    required it (or the registration showed it was done);
//! 5. the backup-eligible flag is the one registered, and backed up implies eligible;
//! 6. the signature over `authenticatorData || SHA-256(clientDataJSON)` is valid;
//! 7. a counter that does not increase (when either value is non-zero) shows a clone.

use aws_lc_rs::{
    digest,
    signature::{UnparsedPublicKey, ECDSA_P256_SHA256_ASN1},
};
use url::Url;
use webauthn_rs_core::{
    error::WebauthnError,
    internals::AuthenticatorData,
    proto::{
        origin::origins_match, Authentication, AuthenticationState, COSEAlgorithm, COSEKeyType,
        CollectedClientData, Credential, ECDSACurve, PublicKeyCredential, UserVerificationPolicy,
    },
    WebauthnCore,
};

use super::passkeys::AssertionVerdict;

/// The relying party an assertion is checked against.
pub struct RelyingParty<'a> {
    pub rp_id: &'a str,
    /// Accepted exactly, and (`allow_subdomains`) their subdomains on the same scheme and port.
    pub origins: &'a [Url],
    pub allow_subdomains: bool,
}

/// What a pending ceremony asked for.
pub struct Expected<'a> {
    pub challenge: &'a [u8],
    pub policy: UserVerificationPolicy,
}

/// The verdict of `webauthn-rs-core`'s whole check.
pub fn library_check(
    rp: &WebauthnCore,
    state: &AuthenticationState,
    credential: &Credential,
    assertion: &PublicKeyCredential,
) -> AssertionVerdict {
    match rp.authenticate_single_credential(assertion, state, credential) {
        Ok(result) => AssertionVerdict::Valid {
            counter: result.counter(),
            backup_eligible: result.backup_eligible(),
            backup_state: result.backup_state(),
        },
        Err(WebauthnError::CredentialPossibleCompromise) => AssertionVerdict::CounterRegression,
        Err(WebauthnError::UserNotVerified) => AssertionVerdict::UserNotVerified,
        Err(e) => {
            tracing::debug!(error = %e, "passkey assertion refused");
            AssertionVerdict::Invalid
        }
    }
}

/// The uncompressed P-256 point (`04 || x || y`) of an ES256 credential; `None` for any
/// other algorithm or curve, which the library checks instead.
pub fn es256_point(credential: &Credential) -> Option<Vec<u8>> {
    match (&credential.cred.type_, &credential.cred.key) {
        (COSEAlgorithm::ES256, COSEKeyType::EC_EC2(k))
            if k.curve == ECDSACurve::SECP256R1 && k.x.len() == 32 && k.y.len() == 32 =>
        {
            let mut point = Vec::with_capacity(65);
            point.push(0x04);
            point.extend_from_slice(&k.x);
            point.extend_from_slice(&k.y);
            Some(point)
        }
        _ => None,
    }
}

/// The verdict on an assertion by an ES256 credential whose public point is `point`.
pub fn check_es256(
    rp: &RelyingParty<'_>,
    expected: &Expected<'_>,
    credential: &Credential,
    point: &[u8],
    assertion: &PublicKeyCredential,
) -> AssertionVerdict {
    use AssertionVerdict::Invalid;
    if credential.cred_id.as_slice() != assertion.raw_id.as_slice() {
        return Invalid;
    }
    let response = &assertion.response;
    let Ok(client) = serde_json::from_slice::<CollectedClientData>(&response.client_data_json)
    else {
        return Invalid;
    };
    let Ok(data) =
        AuthenticatorData::<Authentication>::try_from(response.authenticator_data.as_ref())
    else {
        return Invalid;
    };
    if client.type_ != "webauthn.get" || client.challenge.as_slice() != expected.challenge {
        return Invalid;
    }
    let origin_ok = rp
        .origins
        .iter()
        .any(|allowed| origins_match(rp.allow_subdomains, false, &client.origin, allowed));
    if !origin_ok {
        return Invalid;
    }
    // The parser has read at least the 37 fixed bytes: RP id hash (32), flags, counter.
    let rp_id_hash = digest::digest(&digest::SHA256, rp.rp_id.as_bytes());
    if response.authenticator_data.get(..32) != Some(rp_id_hash.as_ref()) {
        return Invalid;
    }
    if !data.user_present {
        return Invalid;
    }
    let uv_required = expected.policy == UserVerificationPolicy::Required
        || credential.registration_policy == UserVerificationPolicy::Required
        || (credential.registration_policy == UserVerificationPolicy::Preferred
            && credential.user_verified);
    if uv_required && !data.user_verified {
        return AssertionVerdict::UserNotVerified;
    }
    if credential.backup_eligible != data.backup_eligible
        || (data.backup_state && !credential.backup_eligible)
    {
        return Invalid;
    }
    let client_hash = digest::digest(&digest::SHA256, &response.client_data_json);
    let mut signed = Vec::with_capacity(response.authenticator_data.len() + 32);
    signed.extend_from_slice(&response.authenticator_data);
    signed.extend_from_slice(client_hash.as_ref());
    if UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, point)
        .verify(&signed, &response.signature)
        .is_err()
    {
        return Invalid;
    }
    if (data.counter > 0 || credential.counter > 0) && data.counter <= credential.counter {
        return AssertionVerdict::CounterRegression;
    }
    AssertionVerdict::Valid {
        counter: data.counter,
        backup_eligible: data.backup_eligible,
        backup_state: data.backup_state,
    }
}

#[cfg(test)]
pub(super) mod tests {
    //! The two checks on the same assertions: valid ones, and ones broken in each way the
    //! steps above refuse, each re-signed so that only the step under test can refuse it.
    use std::time::Duration;

    use serde_json::{json, Value};
    use tessera_testkit::webauthn::{b64url, SoftAuthenticator, SoftCredential};
    use webauthn_rs_core::proto::{
        AttestationConveyancePreference, RegisterPublicKeyCredential, RequestRegistrationExtensions,
    };

    use super::*;

    const RP_ID: &str = "login.example.com";
    const ORIGIN: &str = "https://login.example.com";
    const UP: u8 = 0x01;
    const UV: u8 = 0x04;
    const BE: u8 = 0x08;
    const BS: u8 = 0x10;

    fn origins() -> Vec<Url> {
        [
            ORIGIN,
            "http://localhost:5173",
            "android:apk-key-hash:q1w2e3",
        ]
        .iter()
        .filter_map(|o| Url::parse(o).ok())
        .collect()
    }

    fn core() -> WebauthnCore {
        WebauthnCore::new_unsafe_experts_only(
            "Test",
            RP_ID,
            origins(),
            Duration::from_secs(300),
            Some(true),
            Some(false),
        )
    }

    /// A credential registered through the library, as the server registers one.
    pub(in crate::tenant) fn registered(
        mut authenticator: SoftAuthenticator,
    ) -> (Credential, SoftCredential) {
        let rp = core();
        let builder = rp
            .new_challenge_register_builder(&[7; 16], "ada", "Ada")
            .map(|b| {
                b.attestation(AttestationConveyancePreference::None)
                    .credential_algorithms(COSEAlgorithm::secure_algs())
                    .require_resident_key(true)
                    .user_verification_policy(UserVerificationPolicy::Preferred)
                    .extensions(Some(RequestRegistrationExtensions {
                        cred_props: Some(true),
                        ..Default::default()
                    }))
            })
            .expect("builder");
        let (ccr, state) = rp.generate_challenge_register(builder).expect("options");
        let options = serde_json::to_value(&ccr.public_key).expect("options json");
        let response = authenticator.create(&options, ORIGIN).expect("create");
        let reg: RegisterPublicKeyCredential =
            serde_json::from_value(response).expect("registration json");
        let credential = rp
            .register_credential(&reg, &state, None)
            .expect("registered");
        (credential, authenticator.credentials.remove(0))
    }

    /// One assertion's parts, signed by `key`, before any breakage.
    struct Parts {
        client: Value,
        rp_id: String,
        flags: u8,
        counter: u32,
        raw_id: Vec<u8>,
        /// Replaces the signature.
        signature: Option<Vec<u8>>,
        /// Replaces the client data's bytes (after signing them as they are).
        client_bytes: Option<Vec<u8>>,
        /// Cuts the authenticator data to this length (before signing).
        auth_len: Option<usize>,
    }

    impl Parts {
        fn new(key: &SoftCredential, challenge: &[u8], flags: u8, counter: u32) -> Parts {
            Parts {
                client: json!({
                    "type": "webauthn.get",
                    "challenge": b64url(challenge),
                    "origin": ORIGIN,
                    "crossOrigin": false,
                }),
                rp_id: RP_ID.into(),
                flags,
                counter,
                raw_id: key.id.clone(),
                signature: None,
                client_bytes: None,
                auth_len: None,
            }
        }

        fn assertion(&self, key: &SoftCredential) -> PublicKeyCredential {
            let mut auth = aws_lc_rs::digest::digest(&digest::SHA256, self.rp_id.as_bytes())
                .as_ref()
                .to_vec();
            auth.push(self.flags);
            auth.extend_from_slice(&self.counter.to_be_bytes());
            if let Some(n) = self.auth_len {
                auth.truncate(n);
            }
            let client = self.client.to_string().into_bytes();
            let mut message = auth.clone();
            message.extend_from_slice(digest::digest(&digest::SHA256, &client).as_ref());
            let signature = match &self.signature {
                Some(s) => s.clone(),
                None => key.sign(&message).expect("signature"),
            };
            let client = self.client_bytes.clone().unwrap_or(client);
            serde_json::from_value(json!({
                "id": b64url(&self.raw_id),
                "rawId": b64url(&self.raw_id),
                "type": "public-key",
                "response": {
                    "clientDataJSON": b64url(&client),
                    "authenticatorData": b64url(&auth),
                    "signature": b64url(&signature),
                    "userHandle": b64url(&[7; 16]),
                },
                "clientExtensionResults": {},
            }))
            .expect("assertion json")
        }
    }

    /// Both checks of one assertion: they must agree; answers the verdict.
    fn both(
        credential: &Credential,
        key: &SoftCredential,
        parts: &Parts,
        state: &AuthenticationState,
        challenge: &[u8],
    ) -> AssertionVerdict {
        let assertion = parts.assertion(key);
        let point = es256_point(credential).expect("an ES256 credential");
        let origins = origins();
        let fast = check_es256(
            &RelyingParty {
                rp_id: RP_ID,
                origins: &origins,
                allow_subdomains: true,
            },
            &Expected {
                challenge,
                policy: UserVerificationPolicy::Required,
            },
            credential,
            &point,
            &assertion,
        );
        let library = library_check(&core(), state, credential, &assertion);
        assert_eq!(fast, library, "the two checks disagree on {}", parts.client);
        fast
    }

    /// A sign-in ceremony as the server starts one: discoverable, user verification required.
    fn ceremony() -> (AuthenticationState, Vec<u8>) {
        let rp = core();
        let builder = rp
            .new_challenge_authenticate_builder(Vec::new(), Some(UserVerificationPolicy::Required))
            .expect("builder");
        let (rcr, state) = rp
            .generate_challenge_authenticate(builder)
            .expect("options");
        (state, rcr.public_key.challenge.to_vec())
    }

    #[test]
    fn es256_checks_agree_with_the_library_on_every_step() {
        let (mut credential, key) = registered(SoftAuthenticator::device_bound());
        let (state, challenge) = ceremony();
        let run = |credential: &Credential, edit: &dyn Fn(&mut Parts)| {
            let mut parts = Parts::new(&key, &challenge, UP | UV, 1);
            edit(&mut parts);
            both(credential, &key, &parts, &state, &challenge)
        };
        let valid = AssertionVerdict::Valid {
            counter: 1,
            backup_eligible: false,
            backup_state: false,
        };
        let invalid = AssertionVerdict::Invalid;
        assert_eq!(run(&credential, &|_| {}), valid);
        // Origins: the RP's subdomains and the listed ones exactly; nothing else.
        for (origin, verdict) in [
            ("https://app.login.example.com", valid),
            ("http://localhost:5173", valid),
            ("android:apk-key-hash:q1w2e3", valid),
            ("http://localhost:5174", invalid),
            ("https://login.example.com:8443", invalid),
            ("http://login.example.com", invalid),
            ("https://evil.example", invalid),
            ("https://login.example.com.evil.example", invalid),
            ("https://xlogin.example.com", invalid),
            ("android:apk-key-hash:other", invalid),
        ] {
            let verdict_seen = run(&credential, &|p| p.client["origin"] = json!(origin));
            assert_eq!(verdict_seen, verdict, "origin {origin}");
        }
        // Client data: type, challenge, malformed JSON.
        assert_eq!(
            run(&credential, &|p| p.client["type"] =
                json!("webauthn.create")),
            invalid
        );
        assert_eq!(
            run(&credential, &|p| p.client["challenge"] =
                json!(b64url(b"another"))),
            invalid
        );
        assert_eq!(
            run(&credential, &|p| p.client_bytes =
                Some(b"{\"type\":".to_vec())),
            invalid
        );
        // The RP id hash, the flags, short authenticator data.
        assert_eq!(
            run(&credential, &|p| p.rp_id = "example.com".into()),
            invalid
        );
        assert_eq!(run(&credential, &|p| p.flags = UV), invalid);
        assert_eq!(
            run(&credential, &|p| p.flags = UP),
            AssertionVerdict::UserNotVerified
        );
        assert_eq!(run(&credential, &|p| p.flags = UP | UV | BE), invalid);
        assert_eq!(run(&credential, &|p| p.flags = UP | UV | BS), invalid);
        assert_eq!(run(&credential, &|p| p.auth_len = Some(36)), invalid);
        // The signature: another message, flipped bits, empty, not DER; user verification is
        // decided before it, as the library does.
        assert_eq!(
            run(&credential, &|p| p.signature =
                Some(key.sign(b"other").expect("sig"))),
            invalid
        );
        let mut flipped = key.sign(b"x").expect("sig");
        if let Some(b) = flipped.last_mut() {
            *b ^= 1;
        }
        assert_eq!(
            run(&credential, &|p| p.signature = Some(flipped.clone())),
            invalid
        );
        assert_eq!(
            run(&credential, &|p| p.signature = Some(Vec::new())),
            invalid
        );
        assert_eq!(
            run(&credential, &|p| p.signature = Some(vec![0x30; 70])),
            invalid
        );
        assert_eq!(
            run(&credential, &|p| {
                p.flags = UP;
                p.signature = Some(Vec::new());
            }),
            AssertionVerdict::UserNotVerified
        );
        // Another credential's id.
        assert_eq!(run(&credential, &|p| p.raw_id = vec![1; 32]), invalid);
        // The counter against the stored one.
        credential.counter = 5;
        for (counter, verdict) in [
            (4, AssertionVerdict::CounterRegression),
            (5, AssertionVerdict::CounterRegression),
            (0, AssertionVerdict::CounterRegression),
            (
                6,
                AssertionVerdict::Valid {
                    counter: 6,
                    backup_eligible: false,
                    backup_state: false,
                },
            ),
        ] {
            assert_eq!(
                run(&credential, &|p| p.counter = counter),
                verdict,
                "{counter}"
            );
        }
    }

    #[test]
    fn synced_credentials_and_a_zero_counter_agree_too() {
        let (credential, key) = registered(SoftAuthenticator::synced());
        assert!(credential.backup_eligible);
        let (state, challenge) = ceremony();
        let run = |flags: u8, counter: u32| {
            both(
                &credential,
                &key,
                &Parts::new(&key, &challenge, flags, counter),
                &state,
                &challenge,
            )
        };
        assert_eq!(
            run(UP | UV | BE | BS, 0),
            AssertionVerdict::Valid {
                counter: 0,
                backup_eligible: true,
                backup_state: true,
            }
        );
        assert_eq!(
            run(UP | UV | BE, 0),
            AssertionVerdict::Valid {
                counter: 0,
                backup_eligible: true,
                backup_state: false,
            }
        );
        // Eligibility may not disappear.
        assert_eq!(run(UP | UV, 0), AssertionVerdict::Invalid);
        assert_eq!(run(UP | BE | BS, 0), AssertionVerdict::UserNotVerified);
    }
}
