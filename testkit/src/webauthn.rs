//! A software WebAuthn authenticator and client, for the passkey tests and the passkey
//! benchmark: it reads the server's
//! options JSON as a browser does, makes real ES256 credentials (P-256 keys from aws-lc-rs,
//! CBOR attestation objects with COSE keys, `none` attestation), signs real assertions over
//! `authenticatorData || SHA-256(clientDataJSON)`, and answers the JSON of
//! `PublicKeyCredential.toJSON()`.
//!
//! Unlike the software tokens of the WebAuthn crates, it can make a credential device-bound
//! (backup-eligible flag 0: `hwk`) or synced (1: `swk`), keep resident keys with their user
//! handle for username-less sign-in, and be told to leave the user-verified flag unset where
//! the server asked for it, which is how the tests show the server refusing such an answer.

use std::sync::Arc;

use aws_lc_rs::{
    digest::{digest, SHA256},
    rand::SystemRandom,
    signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_ASN1_SIGNING},
};
use ciborium::Value as Cbor;
use serde_json::{json, Value};

/// Base64url without padding, as WebAuthn's JSON forms write binary fields.
pub fn b64url(bytes: &[u8]) -> String {
    use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
    URL_SAFE_NO_PAD.encode(bytes)
}

fn b64decode(s: &str) -> Result<Vec<u8>, String> {
    use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
    URL_SAFE_NO_PAD
        .decode(s.trim_end_matches('='))
        .map_err(|e| format!("not base64url: {s}: {e}"))
}

/// The ids of a list of credential descriptors (`excludeCredentials`, `allowCredentials`);
/// an id that is not base64url is an error, as a browser's parse of the options would be.
fn credential_ids(list: &Value) -> Result<Vec<Vec<u8>>, String> {
    list.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c["id"].as_str())
                .map(b64decode)
                .collect()
        })
        .unwrap_or_else(|| Ok(Vec::new()))
}

fn cbor(v: &Cbor) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::into_writer(v, &mut out).unwrap_or_default();
    out
}

/// One credential the authenticator holds. Cloning it clones the private key, as a copied
/// authenticator would.
#[derive(Clone)]
pub struct SoftCredential {
    pub id: Vec<u8>,
    pkcs8: Vec<u8>,
    /// `pkcs8` parsed once: parsing checks the key, which costs as much as a signature.
    key: Arc<EcdsaKeyPair>,
    pub rp_id: String,
    pub user_handle: Vec<u8>,
    pub counter: u32,
    pub backup_eligible: bool,
}

impl SoftCredential {
    /// The private key, PKCS#8 DER: for a test that hands the credential to another
    /// authenticator (a browser's virtual one).
    pub fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// An ES256 (ASN.1 DER) signature of `message` by this credential's key: for tests that
    /// build an assertion's bytes themselves.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, String> {
        Ok(self
            .key
            .sign(&SystemRandom::new(), message)
            .map_err(|e| format!("signature: {e}"))?
            .as_ref()
            .to_vec())
    }
}

/// What the authenticator does on its next operations.
pub struct SoftAuthenticator {
    pub credentials: Vec<SoftCredential>,
    /// New credentials are synced (backup eligible and backed up) rather than device-bound.
    pub synced: bool,
    /// Sets the user-verified flag (a PIN or biometric was checked).
    pub verifies_user: bool,
    /// Signs for this RP id instead of the one the options name (a phishing site's).
    pub rp_id_override: Option<String>,
    /// Counts signatures (device-bound keys do; synced passkeys usually send 0).
    pub counts: bool,
    pub aaguid: [u8; 16],
}

impl SoftAuthenticator {
    /// A device-bound authenticator that verifies the user and counts signatures.
    pub fn device_bound() -> Self {
        SoftAuthenticator {
            credentials: Vec::new(),
            synced: false,
            verifies_user: true,
            rp_id_override: None,
            counts: true,
            aaguid: *b"tessera-test-key",
        }
    }

    /// A synced passkey provider: backup eligible and backed up, counter always 0.
    pub fn synced() -> Self {
        SoftAuthenticator {
            synced: true,
            counts: false,
            aaguid: [0; 16],
            ..Self::device_bound()
        }
    }

    fn client_data(kind: &str, challenge: &str, origin: &str) -> Vec<u8> {
        json!({
            "type": kind,
            "challenge": challenge,
            "origin": origin,
            "crossOrigin": false,
        })
        .to_string()
        .into_bytes()
    }

    fn flags(&self, attested: bool, backup_eligible: bool) -> u8 {
        let mut f = 0x01; // user present
        if self.verifies_user {
            f |= 0x04;
        }
        if backup_eligible {
            f |= 0x08 | 0x10;
        }
        if attested {
            f |= 0x40;
        }
        f
    }

    /// `navigator.credentials.create({publicKey})` from `origin`: answers the credential's
    /// JSON, or `Err` where a real authenticator refuses (an excluded credential, no ES256).
    pub fn create(&mut self, options: &Value, origin: &str) -> Result<Value, String> {
        let rp_id = options["rp"]["id"].as_str().ok_or("no rp.id")?.to_owned();
        let challenge = options["challenge"].as_str().ok_or("no challenge")?;
        let user_handle = b64decode(options["user"]["id"].as_str().ok_or("no user.id")?)?;
        if !options["pubKeyCredParams"]
            .as_array()
            .is_some_and(|a| a.iter().any(|p| p["alg"] == -7))
        {
            return Err("ES256 not offered".into());
        }
        let excluded = credential_ids(&options["excludeCredentials"])?;
        if self
            .credentials
            .iter()
            .any(|c| c.rp_id == rp_id && excluded.contains(&c.id))
        {
            return Err(
                "InvalidStateError: an excluded credential is on this authenticator".into(),
            );
        }
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
            .map_err(|_| "key generation")?
            .as_ref()
            .to_vec();
        let key =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &pkcs8).map_err(|_| "key")?;
        let point = key.public_key().as_ref();
        let (x, y) = match (point.get(1..33), point.get(33..65)) {
            (Some(x), Some(y)) => (x.to_vec(), y.to_vec()),
            _ => return Err("not an uncompressed P-256 point".into()),
        };
        let cose_key = cbor(&Cbor::Map(vec![
            (Cbor::Integer(1.into()), Cbor::Integer(2.into())),
            (Cbor::Integer(3.into()), Cbor::Integer((-7).into())),
            (Cbor::Integer((-1).into()), Cbor::Integer(1.into())),
            (Cbor::Integer((-2).into()), Cbor::Bytes(x)),
            (Cbor::Integer((-3).into()), Cbor::Bytes(y)),
        ]));
        let id: Vec<u8> = (0..32).map(|_| rand::random::<u8>()).collect();
        let signed_rp = self.rp_id_override.clone().unwrap_or(rp_id.clone());
        let mut auth_data = digest(&SHA256, signed_rp.as_bytes()).as_ref().to_vec();
        auth_data.push(self.flags(true, self.synced));
        auth_data.extend_from_slice(&0u32.to_be_bytes());
        auth_data.extend_from_slice(&self.aaguid);
        auth_data.extend_from_slice(&32u16.to_be_bytes());
        auth_data.extend_from_slice(&id);
        auth_data.extend_from_slice(&cose_key);
        let attestation_object = cbor(&Cbor::Map(vec![
            (Cbor::Text("fmt".into()), Cbor::Text("none".into())),
            (Cbor::Text("attStmt".into()), Cbor::Map(vec![])),
            (Cbor::Text("authData".into()), Cbor::Bytes(auth_data)),
        ]));
        let client_data = Self::client_data("webauthn.create", challenge, origin);
        self.credentials.push(SoftCredential {
            id: id.clone(),
            pkcs8,
            key: Arc::new(key),
            rp_id,
            user_handle,
            counter: 0,
            backup_eligible: self.synced,
        });
        Ok(json!({
            "id": b64url(&id),
            "rawId": b64url(&id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(&client_data),
                "attestationObject": b64url(&attestation_object),
                "transports": ["internal", "hybrid"],
            },
            "clientExtensionResults": {},
            "authenticatorAttachment": "platform",
        }))
    }

    /// `navigator.credentials.get({publicKey})` from `origin` with the credential the
    /// options allow (or, with none listed, the first discoverable one for the RP id).
    pub fn get(&mut self, options: &Value, origin: &str) -> Result<Value, String> {
        let rp_id = options["rpId"].as_str().ok_or("no rpId")?;
        let challenge = options["challenge"].as_str().ok_or("no challenge")?;
        let allowed = credential_ids(&options["allowCredentials"])?;
        let index = self.credential_for(rp_id, &allowed)?;
        self.assert_with(index, challenge, origin)
    }

    /// A username-less `navigator.credentials.get` (no `allowCredentials`) for `rp_id` and
    /// `challenge` from `origin`, as the typed answer: for the load generator, which reads
    /// the options without a JSON tree.
    pub fn get_discoverable(
        &mut self,
        rp_id: &str,
        challenge: &str,
        origin: &str,
    ) -> Result<Assertion, String> {
        let index = self.credential_for(rp_id, &[])?;
        self.assertion(index, challenge, origin)
    }

    /// The credential for `rp_id` that `allowed` lists (any, when it lists none).
    fn credential_for(&self, rp_id: &str, allowed: &[Vec<u8>]) -> Result<usize, String> {
        self.credentials
            .iter()
            .position(|c| c.rp_id == rp_id && (allowed.is_empty() || allowed.contains(&c.id)))
            .ok_or_else(|| "NotAllowedError: no credential for these options".into())
    }

    /// Signs an assertion with credential `index` for `challenge` from `origin`.
    pub fn assert_with(
        &mut self,
        index: usize,
        challenge: &str,
        origin: &str,
    ) -> Result<Value, String> {
        let assertion = self.assertion(index, challenge, origin)?;
        serde_json::to_value(&assertion).map_err(|e| e.to_string())
    }

    /// [`Self::assert_with`], typed.
    fn assertion(
        &mut self,
        index: usize,
        challenge: &str,
        origin: &str,
    ) -> Result<Assertion, String> {
        let counts = self.counts;
        let cred = self
            .credentials
            .get_mut(index)
            .ok_or("no such credential")?;
        if counts {
            cred.counter += 1;
        }
        let cred = self.credentials.get(index).ok_or("no such credential")?;
        let signed_rp = self.rp_id_override.as_deref().unwrap_or(&cred.rp_id);
        let mut auth_data = digest(&SHA256, signed_rp.as_bytes()).as_ref().to_vec();
        auth_data.push(self.flags(false, cred.backup_eligible));
        auth_data.extend_from_slice(&cred.counter.to_be_bytes());
        let client_data = Self::client_data("webauthn.get", challenge, origin);
        let mut message = auth_data.clone();
        message.extend_from_slice(digest(&SHA256, &client_data).as_ref());
        let signature = cred
            .key
            .sign(&SystemRandom::new(), &message)
            .map_err(|e| format!("signature: {e}"))?;
        let id = b64url(&cred.id);
        Ok(Assertion {
            raw_id: id.clone(),
            id,
            kind: "public-key",
            response: AssertionResponse {
                client_data_json: b64url(&client_data),
                authenticator_data: b64url(&auth_data),
                signature: b64url(signature.as_ref()),
                user_handle: b64url(&cred.user_handle),
            },
            client_extension_results: NoExtensions {},
            authenticator_attachment: "platform",
        })
    }
}

/// An assertion as `PublicKeyCredential.toJSON()` writes it.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Assertion {
    id: String,
    raw_id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    response: AssertionResponse,
    client_extension_results: NoExtensions,
    authenticator_attachment: &'static str,
}

#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct AssertionResponse {
    #[serde(rename = "clientDataJSON")]
    client_data_json: String,
    authenticator_data: String,
    signature: String,
    user_handle: String,
}

/// `clientExtensionResults` without any: `{}`.
#[derive(Debug, serde::Serialize)]
struct NoExtensions {}
