//! Secrets at rest and hashes of bearer secrets.
//!
//! - Envelope encryption: each sealed value gets its own random data key (XChaCha20-Poly1305),
//!   and that data key is wrapped by the master key. The associated data binds a ciphertext to
//!   where it belongs (a tenant, a purpose), so a sealed value copied elsewhere does not open.
//! - Tokens, API keys, codes: stored only as SHA-256 (high-entropy secrets) or as a keyed hash
//!   (low-entropy inputs such as e-mail domains or request bodies); compared in constant time.

use std::{fs::OpenOptions, io::Write, os::unix::fs::OpenOptionsExt, path::Path};

use base64::{engine::general_purpose::STANDARD, engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use chacha20poly1305::{
    aead::{Aead, KeyInit, Payload},
    XChaCha20Poly1305, XNonce,
};
use hmac::{Hmac, Mac};
use rand::{rngs::OsRng, RngCore};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::error::StorageError;

const NONCE_LEN: usize = 24;

/// The 32-byte key that wraps every data key. Its `Debug` never shows the bytes.
#[derive(Clone)]
pub struct MasterKey(Zeroizing<[u8; 32]>);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(<redacted>)")
    }
}

impl MasterKey {
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        MasterKey(Zeroizing::new(bytes))
    }

    pub fn generate() -> Self {
        let mut k = [0u8; 32];
        OsRng.fill_bytes(&mut k);
        Self::from_bytes(k)
    }

    /// Reads an existing key file (never creates one).
    pub fn load(path: &Path) -> Result<Self, StorageError> {
        let text = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| {
            StorageError::MasterKey(format!("cannot read {}: {e}", path.display()))
        })?);
        Self::parse(text.trim(), path)
    }

    /// Reads the key file, or creates it (mode 0600, base64 of 32 random bytes) when absent.
    /// Returns the key and whether it was created now.
    pub fn load_or_create(path: &Path) -> Result<(Self, bool), StorageError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok((Self::parse(text.trim(), path)?, false)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let dir = path.parent().unwrap_or(Path::new("."));
                std::fs::create_dir_all(dir)?;
                let key = Self::generate();
                // Written whole or not at all: a temporary file, fsynced, renamed, and the
                // directory fsynced, so a crash never leaves a half key or loses a new one.
                let tmp = path.with_extension("tmp");
                let _ = std::fs::remove_file(&tmp);
                let mut file = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&tmp)
                    .map_err(|e| {
                        StorageError::MasterKey(format!("cannot create {}: {e}", tmp.display()))
                    })?;
                let encoded = Zeroizing::new(STANDARD.encode(key.0.as_slice()));
                file.write_all(encoded.as_bytes())?;
                file.write_all(b"\n")?;
                file.sync_all()?;
                std::fs::rename(&tmp, path)?;
                std::fs::File::open(dir)?.sync_all()?;
                Ok((key, true))
            }
            Err(e) => Err(StorageError::MasterKey(format!(
                "cannot read {}: {e}",
                path.display()
            ))),
        }
    }

    fn parse(text: &str, path: &Path) -> Result<Self, StorageError> {
        let bytes =
            Zeroizing::new(STANDARD.decode(text).map_err(|_| {
                StorageError::MasterKey(format!("{} is not base64", path.display()))
            })?);
        let arr: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
            StorageError::MasterKey(format!(
                "{} must hold 32 bytes, it holds {}",
                path.display(),
                bytes.len()
            ))
        })?;
        Ok(Self::from_bytes(arr))
    }

    /// Encrypts `plaintext` under a fresh data key; `aad` must be given again to open it.
    pub fn seal(&self, aad: &[u8], plaintext: &[u8]) -> Result<Sealed, StorageError> {
        let mut dek = Zeroizing::new([0u8; 32]);
        OsRng.fill_bytes(dek.as_mut_slice());
        let data = encrypt(dek.as_slice(), aad, plaintext)?;
        let wrapped_key = encrypt(self.0.as_slice(), aad, dek.as_slice())?;
        Ok(Sealed {
            v: 1,
            wrapped_key,
            data,
        })
    }

    /// Decrypts a sealed value; fails on a wrong key, wrong `aad` or any tampering.
    pub fn open(&self, aad: &[u8], sealed: &Sealed) -> Result<Zeroizing<Vec<u8>>, StorageError> {
        if sealed.v != 1 {
            return Err(StorageError::Crypto);
        }
        let dek = decrypt(self.0.as_slice(), aad, &sealed.wrapped_key)?;
        decrypt(dek.as_slice(), aad, &sealed.data)
    }

    /// A value that proves which key this is without revealing it: stored beside the data so
    /// a start with another key is refused instead of silently unable to open secrets.
    pub fn check_value(&self) -> [u8; 32] {
        self.hasher("key-check").hash(b"tessera master key")
    }

    /// A keyed hasher for one purpose, derived from the master key (HMAC-SHA256 of the purpose).
    pub fn hasher(&self, purpose: &str) -> KeyedHasher {
        let mut key = [0u8; 32];
        key.copy_from_slice(&hmac_sha256(self.0.as_slice(), purpose.as_bytes()));
        KeyedHasher(Zeroizing::new(key))
    }
}

/// A value sealed by [`MasterKey::seal`]: the wrapped data key and the ciphertext, each with its
/// nonce in front. Serialised as base64 strings.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Sealed {
    v: u8,
    #[serde(with = "b64")]
    wrapped_key: Vec<u8>,
    #[serde(with = "b64")]
    data: Vec<u8>,
}

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealed(<ciphertext>)")
    }
}

/// HMAC-SHA256 under a purpose key: for values that must be looked up or compared without
/// being stored (request fingerprints, e-mail domains in audit events).
#[derive(Clone)]
pub struct KeyedHasher(Zeroizing<[u8; 32]>);

impl std::fmt::Debug for KeyedHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyedHasher(<redacted>)")
    }
}

impl KeyedHasher {
    pub fn hash(&self, data: &[u8]) -> [u8; 32] {
        hmac_sha256(self.0.as_slice(), data)
    }
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(key) else {
        unreachable!("HMAC takes keys of any length")
    };
    mac.update(data);
    mac.finalize().into_bytes().into()
}

fn encrypt(key: &[u8], aad: &[u8], msg: &[u8]) -> Result<Vec<u8>, StorageError> {
    let cipher = XChaCha20Poly1305::new_from_slice(key).map_err(|_| StorageError::Crypto)?;
    let mut nonce = [0u8; NONCE_LEN];
    OsRng.fill_bytes(&mut nonce);
    let ct = cipher
        .encrypt(XNonce::from_slice(&nonce), Payload { msg, aad })
        .map_err(|_| StorageError::Crypto)?;
    let mut out = nonce.to_vec();
    out.extend_from_slice(&ct);
    Ok(out)
}

fn decrypt(key: &[u8], aad: &[u8], blob: &[u8]) -> Result<Zeroizing<Vec<u8>>, StorageError> {
    if blob.len() < NONCE_LEN {
        return Err(StorageError::Crypto);
    }
    let (nonce, ct) = blob.split_at(NONCE_LEN);
    let cipher = XChaCha20Poly1305::new_from_slice(key).map_err(|_| StorageError::Crypto)?;
    cipher
        .decrypt(XNonce::from_slice(nonce), Payload { msg: ct, aad })
        .map(Zeroizing::new)
        .map_err(|_| StorageError::Crypto)
}

/// SHA-256 of a high-entropy secret (API key, token): what is stored instead of the secret.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// Constant-time equality; slices of different lengths are unequal (the length is not secret).
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

/// `bytes` random bytes from the OS, base64url without padding.
pub fn random_token(bytes: usize) -> String {
    let mut buf = Zeroizing::new(vec![0u8; bytes]);
    OsRng.fill_bytes(buf.as_mut_slice());
    URL_SAFE_NO_PAD.encode(buf.as_slice())
}

mod b64 {
    use base64::{engine::general_purpose::STANDARD, Engine};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(v))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        STANDARD.decode(s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn sealed_values_open_only_with_the_same_key_and_aad() {
        let k = MasterKey::generate();
        let s = k.seal(b"tenant-a/totp", b"secret seed").unwrap();
        assert_eq!(
            k.open(b"tenant-a/totp", &s).unwrap().as_slice(),
            b"secret seed"
        );
        assert!(k.open(b"tenant-b/totp", &s).is_err());
        assert!(MasterKey::generate().open(b"tenant-a/totp", &s).is_err());
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("secret"));
        let back: Sealed = serde_json::from_str(&json).unwrap();
        assert_eq!(
            k.open(b"tenant-a/totp", &back).unwrap().as_slice(),
            b"secret seed"
        );
    }

    #[test]
    fn the_key_file_is_created_0600_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys/master.key");
        let (k1, created) = MasterKey::load_or_create(&path).unwrap();
        assert!(created);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let (k2, created) = MasterKey::load_or_create(&path).unwrap();
        assert!(!created);
        let s = k1.seal(b"", b"x").unwrap();
        assert_eq!(k2.open(b"", &s).unwrap().as_slice(), b"x");
        std::fs::write(&path, "not base64!").unwrap();
        assert!(MasterKey::load_or_create(&path).is_err());
    }

    #[test]
    fn keyed_hashes_differ_by_purpose_and_ct_eq_compares() {
        let k = MasterKey::generate();
        assert_ne!(k.hasher("a").hash(b"x"), k.hasher("b").hash(b"x"));
        assert_eq!(k.hasher("a").hash(b"x"), k.hasher("a").hash(b"x"));
        assert!(ct_eq(&sha256(b"x"), &sha256(b"x")));
        assert!(!ct_eq(&sha256(b"x"), &sha256(b"y")));
        assert!(!ct_eq(b"short", b"longer"));
        assert_eq!(random_token(32).len(), 43);
    }
}
