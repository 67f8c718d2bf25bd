//! Secrets at rest and hashes of bearer secrets.
//!
//! - Envelope encryption: each sealed value gets its own random data key (XChaCha20-Poly1305),
//!   and that data key is wrapped by the master key. The associated data binds the ciphertext to
//!   where it belongs (a tenant, a purpose), so a sealed value copied elsewhere does not open.
//!   The wrap itself (format 2) is bound to nothing but the master key, so rotating the master
//!   key can re-wrap every data key without knowing where each value belongs
//!   ([`MasterKey::rewrap`]); values written before that (format 1, wrap bound to the same
//!   associated data) are re-wrapped into format 2 by the same call.
//! - Keyed hashes derive from a hash root, not from the master key itself: the hashes of
//!   refresh tokens or recovery codes cannot be recomputed without the secrets, so they must
//!   outlive a master-key rotation. The root is stored sealed beside the data (see
//!   `Store::bind_master_key`); data written before it existed keep the old master key's bytes
//!   as their root, which keeps every stored hash valid.
//! - Tokens, API keys, codes: stored only as SHA-256 (high-entropy secrets) or as a keyed hash
//!   (low-entropy inputs such as e-mail domains or request bodies); compared in constant time.

use std::{
    io::Write,
    path::{Path, PathBuf},
};

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

use crate::{error::StorageError, files};

const NONCE_LEN: usize = 24;
/// The length of a wrapped data key: nonce, 32-byte key, Poly1305 tag.
const WRAPPED_LEN: usize = NONCE_LEN + 32 + 16;
/// The associated data of a format-2 wrap.
const WRAP_AAD: &[u8] = b"tessera/data-key/v2";
/// The format [`MasterKey::seal`] writes.
const SEALED_V2: u8 = 2;

/// The 32-byte key that wraps every data key, with the hash root its keyed hashes derive
/// from. Its `Debug` never shows the bytes.
#[derive(Clone)]
pub struct MasterKey {
    key: Zeroizing<[u8; 32]>,
    /// Until the store sets it ([`MasterKey::with_hash_root`]), the key's own bytes.
    hash_root: Zeroizing<[u8; 32]>,
}

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(<redacted>)")
    }
}

/// A key file that users other than its owner may read or write ([`MasterKey::shared_file`]).
/// Its `Display` names the file, its mode and the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedKeyFile {
    pub path: PathBuf,
    /// Its permission bits.
    pub mode: u32,
}

impl std::fmt::Display for SharedKeyFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{path} has mode {mode:04o}: group or others may read or write the master key; \
             make it the owner's alone with `chmod 600 {path}`",
            path = self.path.display(),
            mode = self.mode,
        )
    }
}

impl MasterKey {
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        MasterKey {
            key: Zeroizing::new(bytes),
            hash_root: Zeroizing::new(bytes),
        }
    }

    /// The same key whose keyed hashes derive from `root`.
    pub(crate) fn with_hash_root(&self, root: &[u8; 32]) -> Self {
        MasterKey {
            key: self.key.clone(),
            hash_root: Zeroizing::new(*root),
        }
    }

    /// This key's hash root, and the key's own bytes (what data written before hash roots
    /// existed derive their hashes from).
    pub(crate) fn hash_root(&self) -> &[u8; 32] {
        &self.hash_root
    }

    pub(crate) fn key_bytes(&self) -> &[u8; 32] {
        &self.key
    }

    pub fn generate() -> Self {
        let mut k = [0u8; 32];
        OsRng.fill_bytes(&mut k);
        Self::from_bytes(k)
    }

    /// The key file at `path` when group or others may read or write it; `None` when only its
    /// owner may, or when there is no file yet ([`MasterKey::load_or_create`] makes it 0600).
    /// Whoever could read the file has every secret the key seals; whoever could write it can
    /// make the server seal new secrets under a key of their choosing.
    pub fn shared_file(path: &Path) -> Result<Option<SharedKeyFile>, StorageError> {
        let mode = files::mode_of(path)
            .map_err(|e| StorageError::MasterKey(format!("cannot read {}: {e}", path.display())))?;
        Ok(mode
            .filter(|m| files::open_to_others(*m))
            .map(|mode| SharedKeyFile {
                path: path.to_path_buf(),
                mode,
            }))
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
                let key = Self::generate();
                key.write_file(path)?;
                Ok((key, true))
            }
            Err(e) => Err(StorageError::MasterKey(format!(
                "cannot read {}: {e}",
                path.display()
            ))),
        }
    }

    /// Writes the key to `path` (mode 0600, base64) whole or not at all: a temporary file,
    /// fsynced, renamed over `path`, and the directory fsynced, so a crash never leaves a half
    /// key or loses a new one.
    pub fn write_file(&self, path: &Path) -> Result<(), StorageError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
        tmp_name.push(".tmp");
        let tmp = path.with_file_name(tmp_name);
        let _ = std::fs::remove_file(&tmp);
        let mut file = files::create_private_file(&tmp).map_err(|e| {
            StorageError::MasterKey(format!("cannot create {}: {e}", tmp.display()))
        })?;
        let encoded = Zeroizing::new(STANDARD.encode(self.key.as_slice()));
        file.write_all(encoded.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()?;
        Ok(())
    }

    /// A key given as the key file's text (base64 of 32 bytes).
    pub fn from_base64(text: &str) -> Result<Self, StorageError> {
        Self::parse(text.trim(), Path::new("the key"))
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
        let wrapped_key = encrypt(self.key.as_slice(), WRAP_AAD, dek.as_slice())?;
        Ok(Sealed {
            v: SEALED_V2,
            wrapped_key,
            data,
        })
    }

    /// Decrypts a sealed value; fails on a wrong key, wrong `aad` or any tampering.
    pub fn open(&self, aad: &[u8], sealed: &Sealed) -> Result<Zeroizing<Vec<u8>>, StorageError> {
        let wrap_aad = match sealed.v {
            1 => aad,
            SEALED_V2 => WRAP_AAD,
            _ => return Err(StorageError::Crypto),
        };
        let dek = decrypt(self.key.as_slice(), wrap_aad, &sealed.wrapped_key)?;
        decrypt(dek.as_slice(), aad, &sealed.data)
    }

    /// The wrapped data key of `sealed` (format 1 or 2, wrapped by this key) wrapped again by
    /// `new`, in format 2; the ciphertext is unchanged. A format-2 wrap is authenticated here;
    /// a format-1 wrap is bound to associated data this call does not know, so its data key is
    /// decrypted without its tag, and a tampered wrap then yields a wrong data key, which the
    /// ciphertext's own tag refuses at the next [`MasterKey::open`], as before.
    pub fn rewrap(&self, new: &MasterKey, sealed: &Sealed) -> Result<Sealed, StorageError> {
        let dek = match sealed.v {
            1 => self.unwrap_unauthenticated(&sealed.wrapped_key)?,
            SEALED_V2 => decrypt(self.key.as_slice(), WRAP_AAD, &sealed.wrapped_key)?,
            _ => return Err(StorageError::Crypto),
        };
        Ok(Sealed {
            v: SEALED_V2,
            wrapped_key: encrypt(new.key.as_slice(), WRAP_AAD, dek.as_slice())?,
            data: sealed.data.clone(),
        })
    }

    /// Whether this key authenticates `sealed`'s format-2 wrap (a format-1 wrap cannot be
    /// checked without its associated data: false).
    pub(crate) fn wraps(&self, sealed: &Sealed) -> bool {
        sealed.v == SEALED_V2 && decrypt(self.key.as_slice(), WRAP_AAD, &sealed.wrapped_key).is_ok()
    }

    /// XChaCha20-Poly1305's ciphertext is the XChaCha20 keystream from block 1 (block 0 keys
    /// Poly1305) XORed with the message: the data key without checking the tag.
    fn unwrap_unauthenticated(&self, wrapped: &[u8]) -> Result<Zeroizing<Vec<u8>>, StorageError> {
        use chacha20::cipher::{KeyIvInit, StreamCipher, StreamCipherSeek};
        if wrapped.len() != WRAPPED_LEN {
            return Err(StorageError::Crypto);
        }
        let (nonce, rest) = wrapped.split_at(NONCE_LEN);
        let mut dek = Zeroizing::new(rest[..32].to_vec());
        let mut cipher = chacha20::XChaCha20::new(self.key.as_slice().into(), nonce.into());
        cipher.seek(64u64);
        cipher.apply_keystream(dek.as_mut_slice());
        Ok(dek)
    }

    /// A value that proves which key this is without revealing it: stored beside the data so
    /// a start with another key is refused instead of silently unable to open secrets.
    pub fn check_value(&self) -> [u8; 32] {
        let check_key = Zeroizing::new(hmac_sha256(self.key.as_slice(), b"key-check"));
        hmac_sha256(check_key.as_slice(), b"tessera master key")
    }

    /// A keyed hasher for one purpose, derived from the hash root (HMAC-SHA256 of the purpose).
    pub fn hasher(&self, purpose: &str) -> KeyedHasher {
        KeyedHasher(Zeroizing::new(hmac_sha256(
            self.hash_root.as_slice(),
            purpose.as_bytes(),
        )))
    }
}

/// A value sealed by [`MasterKey::seal`]: the wrapped data key and the ciphertext, each with its
/// nonce in front. Serialised as base64 strings.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Sealed {
    pub(crate) v: u8,
    #[serde(with = "b64")]
    pub(crate) wrapped_key: Vec<u8>,
    #[serde(with = "b64")]
    pub(crate) data: Vec<u8>,
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

/// What the storage tests need to write data as earlier builds did.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// A format-1 value (wrap bound to the value's associated data), as written before
    /// format 2.
    pub(crate) fn seal_v1(k: &MasterKey, aad: &[u8], plaintext: &[u8]) -> Sealed {
        let dek = [7u8; 32];
        Sealed {
            v: 1,
            wrapped_key: encrypt(k.key.as_slice(), aad, &dek).unwrap(),
            data: encrypt(&dek, aad, plaintext).unwrap(),
        }
    }

    /// HMAC-SHA256, as keyed hashes were made (purpose keys straight from the master key).
    pub(crate) fn legacy_hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
        hmac_sha256(key, data)
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::seal_v1;
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
    fn rewrap_moves_both_formats_to_the_new_key_and_keeps_the_aad_binding() {
        let old = MasterKey::generate();
        let new = MasterKey::generate();
        let v1 = seal_v1(&old, b"t/user/dob", b"2001-02-03");
        assert_eq!(
            old.open(b"t/user/dob", &v1).unwrap().as_slice(),
            b"2001-02-03"
        );
        let v2 = old.seal(b"t/webhook", b"whsec").unwrap();
        assert_eq!(v2.v, 2);
        assert!(old.wraps(&v2) && !new.wraps(&v2) && !old.wraps(&v1));
        for (aad, sealed, plain) in [
            (&b"t/user/dob"[..], &v1, &b"2001-02-03"[..]),
            (&b"t/webhook"[..], &v2, &b"whsec"[..]),
        ] {
            let moved = old.rewrap(&new, sealed).unwrap();
            assert_eq!(moved.v, 2);
            assert_eq!(moved.data, sealed.data, "the ciphertext is not touched");
            assert_eq!(moved.wrapped_key.len(), sealed.wrapped_key.len());
            assert_eq!(new.open(aad, &moved).unwrap().as_slice(), plain);
            assert!(
                old.open(aad, &moved).is_err(),
                "the old key no longer opens it"
            );
            assert!(
                new.open(b"elsewhere", &moved).is_err(),
                "still bound to its aad"
            );
        }
        // A wrap from another key (or tampered) is refused in format 2, and in format 1 gives
        // a data key the ciphertext's tag refuses.
        let other = MasterKey::generate();
        assert!(other.rewrap(&new, &v2).is_err());
        let wrong = other.rewrap(&new, &v1).unwrap();
        assert!(new.open(b"t/user/dob", &wrong).is_err());
    }

    #[test]
    fn keyed_hashes_follow_the_hash_root_not_the_key() {
        let k = MasterKey::generate();
        let before = k.hasher("refresh-token").hash(b"x");
        let other = MasterKey::generate().with_hash_root(k.hash_root());
        assert_eq!(other.hasher("refresh-token").hash(b"x"), before);
        assert_ne!(other.check_value(), k.check_value());
        let rooted = k.with_hash_root(&[9u8; 32]);
        assert_ne!(rooted.hasher("refresh-token").hash(b"x"), before);
        assert_eq!(rooted.check_value(), k.check_value());
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
    fn a_key_file_open_to_group_or_others_is_named_with_its_mode_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("master.key");
        assert_eq!(MasterKey::shared_file(&path).unwrap(), None, "no file yet");
        MasterKey::load_or_create(&path).unwrap();
        assert_eq!(MasterKey::shared_file(&path).unwrap(), None, "made 0600");
        for (mode, shared) in [(0o644, true), (0o640, true), (0o606, true), (0o400, false)] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let found = MasterKey::shared_file(&path).unwrap();
            assert_eq!(found.is_some(), shared, "{mode:o}");
            if let Some(found) = found {
                assert_eq!(found.mode, mode);
                let text = found.to_string();
                assert!(text.contains(&format!("mode 0{mode:o}")), "{text}");
                assert!(
                    text.contains(&format!("chmod 600 {}", path.display())),
                    "{text}"
                );
            }
        }
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
