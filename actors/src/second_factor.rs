//! What end users' and dashboard accounts' second factors share: TOTP (RFC 6238 with
//! totp-rs: SHA-1, 6 digits, 30 s, one step either side, each step accepted once) and
//! recovery codes (ten per set, stored as keyed hashes, compared without case or
//! separators).

use rand::{Rng, RngCore};
use tessera_storage::{ct_eq, KeyedHasher};
use totp_rs::{Algorithm, TOTP};
use zeroize::Zeroizing;

/// Recovery codes per set.
pub const RECOVERY_CODES: usize = 10;
const TOTP_STEP: u64 = 30;
const SEED_BYTES: usize = 20;
/// Recovery-code alphabet: no 0/o, 1/l/i.
const RECOVERY_ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";

/// A new random TOTP seed.
pub fn new_seed() -> Zeroizing<[u8; SEED_BYTES]> {
    let mut seed = Zeroizing::new([0u8; SEED_BYTES]);
    rand::rngs::OsRng.fill_bytes(seed.as_mut_slice());
    seed
}

/// Whether `code` has a TOTP code's shape (six digits).
pub fn is_totp_code(code: &str) -> bool {
    code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit())
}

/// Lowercase, without separators: how recovery codes are compared.
pub fn normalize_recovery(code: &str) -> String {
    code.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The generator of `seed`, labelled `issuer:account` in its otpauth URI.
pub fn totp(seed: &[u8], issuer: &str, account: &str) -> TOTP {
    // The otpauth label is `issuer:account`: neither part may hold a colon.
    let clean = |s: &str| s.replace(':', " ");
    TOTP::new_unchecked(
        Algorithm::SHA1,
        6,
        1,
        TOTP_STEP,
        seed.to_vec(),
        Some(clean(issuer)),
        clean(account),
    )
}

/// The time step whose code `code` is (within one step of `now`), if it is later than
/// `last_step`. Every candidate is compared, in constant time.
pub fn totp_step(seed: &[u8], code: &str, now_unix: u64, last_step: u64) -> Option<u64> {
    let t = totp(seed, "", "");
    let current = now_unix / TOTP_STEP;
    let mut matched = None;
    for step in current.saturating_sub(1)..=current + 1 {
        let expected = t.generate(step * TOTP_STEP);
        if ct_eq(expected.as_bytes(), code.as_bytes()) && step > last_step {
            matched = Some(step);
        }
    }
    matched
}

/// A fresh set of recovery codes: the plain codes (`xxxxx-xxxxx`, shown once), and their
/// keyed hashes (hex) for the record.
pub fn new_recovery_codes(hasher: &KeyedHasher) -> (Vec<String>, Vec<String>) {
    let mut rng = rand::rngs::OsRng;
    let mut plain = Vec::with_capacity(RECOVERY_CODES);
    let mut hashes = Vec::with_capacity(RECOVERY_CODES);
    while plain.len() < RECOVERY_CODES {
        let raw: String = (0..10)
            .map(|_| char::from(RECOVERY_ALPHABET[rng.gen_range(0..RECOVERY_ALPHABET.len())]))
            .collect();
        let code = format!("{}-{}", &raw[..5], &raw[5..]);
        if plain.contains(&code) {
            continue;
        }
        hashes.push(hex::encode(hasher.hash(raw.as_bytes())));
        plain.push(code);
    }
    (plain, hashes)
}

/// The index of the unused recovery code `code` is among the `stored` hashes; every one is
/// compared, in constant time.
pub fn recovery_index(hasher: &KeyedHasher, stored: &[String], code: &str) -> Option<usize> {
    let presented = hex::encode(hasher.hash(normalize_recovery(code).as_bytes()));
    let mut matched = None;
    for (i, s) in stored.iter().enumerate() {
        if ct_eq(s.as_bytes(), presented.as_bytes()) {
            matched = Some(i);
        }
    }
    matched
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const SEED: &[u8] = b"12345678901234567890";

    #[test]
    fn rfc6238_vectors_and_the_one_step_window() {
        // RFC 6238 appendix B, SHA-1, truncated to 6 digits: T = 59 s -> 94287082.
        let t = totp(SEED, "x", "y");
        assert_eq!(t.generate(59), "287082");
        assert_eq!(t.generate(1_111_111_109), "081804");
        let now = 1_111_111_109;
        assert_eq!(totp_step(SEED, "081804", now, 0), Some(now / 30));
        // The previous and next steps are accepted; two away is not.
        assert_eq!(
            totp_step(SEED, &t.generate(now - 30), now, 0),
            Some(now / 30 - 1)
        );
        assert_eq!(
            totp_step(SEED, &t.generate(now + 30), now, 0),
            Some(now / 30 + 1)
        );
        assert_eq!(totp_step(SEED, &t.generate(now - 60), now, 0), None);
        assert_eq!(totp_step(SEED, "000000", now, 0), None);
        assert_eq!(totp_step(SEED, "0818", now, 0), None);
    }

    #[test]
    fn a_code_is_accepted_once_and_never_an_older_one() {
        let t = totp(SEED, "x", "y");
        let now = 1_700_000_000;
        let step = totp_step(SEED, &t.generate(now), now, 0).unwrap();
        assert_eq!(totp_step(SEED, &t.generate(now), now, step), None);
        assert_eq!(totp_step(SEED, &t.generate(now - 30), now, step), None);
        assert_eq!(
            totp_step(SEED, &t.generate(now + 30), now, step),
            Some(step + 1)
        );
    }

    #[test]
    fn recovery_codes_compare_without_case_or_separators() {
        assert_eq!(normalize_recovery("AbCdE-fGh23"), "abcdefgh23");
        assert_eq!(normalize_recovery(" abcde fgh23 "), "abcdefgh23");
        let hasher = tessera_storage::MasterKey::generate().hasher("t");
        let (plain, hashes) = new_recovery_codes(&hasher);
        assert_eq!(plain.len(), RECOVERY_CODES);
        let upper = plain[3].to_uppercase().replace('-', " ");
        assert_eq!(recovery_index(&hasher, &hashes, &upper), Some(3));
        assert_eq!(recovery_index(&hasher, &hashes, "aaaaa-aaaaa"), None);
    }
}
