//! Token Status Lists (draft-ietf-oauth-status-list, draft 12 and later semantics): the
//! `status.status_list` reference a credential carries, and the signed `statuslist+jwt` that
//! holds the compressed list of statuses.
//!
//! A Status List is a byte array packed `bits` (1, 2, 4 or 8) per entry, least significant bits
//! first within each byte, compressed with DEFLATE in the ZLIB format (RFC 1950) and carried
//! base64url-encoded in the `lst` member. Inflating is capped by the caller so that a small
//! token cannot expand into an unbounded buffer.

use std::io::{Read, Write};

use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use serde_json::{Map, Value};

use crate::jose::{Jws, SigningKey};
use crate::{b64d, b64e, malformed, numeric_date, Error, Result};

/// The header `typ` of a Status List Token in JWT form.
pub const TYP: &str = "statuslist+jwt";

/// Status value 0: the referenced token is valid.
pub const VALID: u8 = 0;
/// Status value 1: the referenced token is revoked for good.
pub const INVALID: u8 = 1;
/// Status value 2: the referenced token is temporarily suspended.
pub const SUSPENDED: u8 = 2;

/// Where a referenced token's status lives: entry `idx` of the list published at `uri`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusRef {
    /// The Status List Token's URI; it must equal that token's `sub`.
    pub uri: String,
    /// The index of the referenced token in that list.
    pub idx: u64,
}

impl StatusRef {
    /// Reads a referenced token's `status` claim value (the object holding `status_list`);
    /// Ok(None) when it has no `status_list`.
    pub fn from_claim(status: &Value) -> Result<Option<StatusRef>> {
        let status = status
            .as_object()
            .ok_or_else(|| malformed("the status claim must be an object"))?;
        let Some(list) = status.get("status_list") else {
            return Ok(None);
        };
        let list = list
            .as_object()
            .ok_or_else(|| malformed("status_list must be an object"))?;
        let idx = list
            .get("idx")
            .and_then(Value::as_u64)
            .ok_or_else(|| malformed("status_list.idx must be a non-negative integer"))?;
        let uri = list
            .get("uri")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
            .ok_or_else(|| malformed("status_list.uri must be a string"))?;
        Ok(Some(StatusRef {
            uri: uri.to_string(),
            idx,
        }))
    }
}

/// A Status List read from a Status List Token, inflated and ready to answer look-ups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusList {
    /// Bits per entry: 1, 2, 4 or 8.
    pub bits: u8,
    /// The token's `sub`: the URI of this list.
    pub sub: String,
    /// When the token was issued (Unix seconds).
    pub iat: i64,
    /// When the token expires (Unix seconds), if it says.
    pub exp: Option<i64>,
    /// How long (seconds) the token may be cached, if it says.
    pub ttl: Option<u64>,
    bytes: Vec<u8>,
}

fn check_bits(bits: u8) -> Result<()> {
    match bits {
        1 | 2 | 4 | 8 => Ok(()),
        other => Err(malformed(format!(
            "status list bits {other} (1, 2, 4 or 8)"
        ))),
    }
}

impl StatusList {
    /// From a status list token whose signature the caller has already checked (`jws` =
    /// `jose::Jws::decode` of it): header `typ` must be `statuslist+jwt`, `sub` must equal
    /// `expected_uri`, `exp` (if present) must be > now, bits in {1,2,4,8}, `lst` base64url of
    /// zlib data; inflating stops at `max_bytes` inflated bytes (a bigger list is refused).
    pub fn from_token(
        jws: &Jws,
        expected_uri: &str,
        now: i64,
        max_bytes: usize,
    ) -> Result<StatusList> {
        match jws.header_str("typ") {
            Some(t) if t == TYP || t == "application/statuslist+jwt" => {}
            other => {
                return Err(Error::Unsupported(format!(
                    "status list token typ {}",
                    other.unwrap_or("-")
                )))
            }
        }
        let claims = jws.claims()?;
        let sub = claims
            .get("sub")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed("status list token sub"))?;
        if sub != expected_uri {
            return Err(Error::Binding(format!(
                "status list token is for {sub}, not {expected_uri}"
            )));
        }
        let iat =
            numeric_date(&claims, "iat")?.ok_or_else(|| malformed("status list token iat"))?;
        let exp = numeric_date(&claims, "exp")?;
        if let Some(exp) = exp {
            if exp <= now {
                return Err(Error::Validity(format!(
                    "status list token expired at {exp}"
                )));
            }
        }
        let ttl = match claims.get("ttl") {
            None => None,
            Some(v) => Some(
                v.as_u64()
                    .filter(|t| *t > 0)
                    .ok_or_else(|| malformed("ttl must be a positive integer"))?,
            ),
        };
        let list = claims
            .get("status_list")
            .and_then(Value::as_object)
            .ok_or_else(|| malformed("status_list claim"))?;
        let bits = list
            .get("bits")
            .and_then(Value::as_u64)
            .and_then(|b| u8::try_from(b).ok())
            .ok_or_else(|| malformed("status_list.bits"))?;
        check_bits(bits)?;
        let lst = list
            .get("lst")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed("status_list.lst"))?;
        let bytes = inflate(&b64d(lst)?, max_bytes)?;
        Ok(StatusList {
            bits,
            sub: sub.to_string(),
            iat,
            exp,
            ttl,
            bytes,
        })
    }

    /// The status value at idx (0 = VALID, 1 = INVALID, 2 = SUSPENDED, ...); an idx beyond the
    /// list is an error.
    pub fn get(&self, idx: u64) -> Result<u8> {
        let per_byte = u64::from(8 / self.bits);
        let byte = usize::try_from(idx / per_byte)
            .ok()
            .and_then(|i| self.bytes.get(i))
            .ok_or_else(|| malformed(format!("index {idx} is beyond the status list")))?;
        let shift = (idx % per_byte) as u32 * u32::from(self.bits);
        let mask = if self.bits == 8 {
            0xff
        } else {
            (1u8 << self.bits) - 1
        };
        Ok((byte >> shift) & mask)
    }

    /// How many entries the list holds (its inflated size times entries per byte).
    pub fn entries(&self) -> u64 {
        self.bytes.len() as u64 * u64::from(8 / self.bits)
    }

    /// For test servers and the benchmark: builds the compressed, base64url `lst` for
    /// `statuses` (each < 2^bits).
    pub fn encode_lst(bits: u8, statuses: &[u8]) -> Result<String> {
        check_bits(bits)?;
        let per_byte = usize::from(8 / bits);
        let mut bytes = vec![0u8; statuses.len().div_ceil(per_byte)];
        for (i, &s) in statuses.iter().enumerate() {
            if bits < 8 && s >> bits != 0 {
                return Err(malformed(format!("status {s} does not fit in {bits} bits")));
            }
            let shift = (i % per_byte) * usize::from(bits);
            bytes[i / per_byte] |= s << shift;
        }
        let mut encoder = ZlibEncoder::new(Vec::new(), Compression::best());
        encoder
            .write_all(&bytes)
            .map_err(|_| malformed("compressing the status list"))?;
        let compressed = encoder
            .finish()
            .map_err(|_| malformed("compressing the status list"))?;
        Ok(b64e(compressed))
    }

    /// For test servers: a signed status list token (header `typ: statuslist+jwt`, then the
    /// `extra_header` members such as x5c or kid, which win over it) with `sub` = `uri`.
    #[allow(clippy::too_many_arguments)]
    pub fn issue_token(
        key: &SigningKey,
        extra_header: Map<String, Value>,
        uri: &str,
        bits: u8,
        statuses: &[u8],
        iat: i64,
        exp: Option<i64>,
        ttl: Option<u64>,
    ) -> Result<String> {
        let mut header = Map::new();
        header.insert("typ".into(), Value::from(TYP));
        header.extend(extra_header);
        let mut list = Map::new();
        list.insert("bits".into(), Value::from(bits));
        list.insert(
            "lst".into(),
            Value::from(StatusList::encode_lst(bits, statuses)?),
        );
        let mut claims = Map::new();
        claims.insert("sub".into(), Value::from(uri));
        claims.insert("iat".into(), Value::from(iat));
        if let Some(exp) = exp {
            claims.insert("exp".into(), Value::from(exp));
        }
        if let Some(ttl) = ttl {
            claims.insert("ttl".into(), Value::from(ttl));
        }
        claims.insert("status_list".into(), Value::Object(list));
        let payload = serde_json::to_vec(&claims).map_err(|_| malformed("status list claims"))?;
        key.sign_compact(header, &payload)
    }
}

/// Inflates ZLIB data, refusing anything that inflates to more than `max_bytes`.
fn inflate(compressed: &[u8], max_bytes: usize) -> Result<Vec<u8>> {
    let limit = u64::try_from(max_bytes)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    let mut out = Vec::new();
    ZlibDecoder::new(compressed)
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|_| malformed("status list is not valid ZLIB data"))?;
    if out.len() > max_bytes {
        return Err(malformed(format!(
            "status list inflates to more than {max_bytes} bytes"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jose::Alg;
    use serde_json::json;

    fn list(bits: u8, lst: &str) -> StatusList {
        StatusList {
            bits,
            sub: "https://example.com/statuslists/1".into(),
            iat: 0,
            exp: None,
            ttl: None,
            bytes: inflate(&b64d(lst).unwrap(), 1 << 20).unwrap(),
        }
    }

    /// draft-ietf-oauth-status-list §4.1: 16 one-bit statuses → bytes B9 A3 → "eNrbuRgAAhcBXQ".
    #[test]
    fn draft_one_bit_example() {
        let expected = [1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1];
        let l = list(1, "eNrbuRgAAhcBXQ");
        assert_eq!(l.bytes, [0xb9, 0xa3]);
        for (i, s) in expected.iter().enumerate() {
            assert_eq!(l.get(i as u64).unwrap(), *s, "index {i}");
        }
        assert_eq!(l.entries(), 16);
        assert!(l.get(16).is_err());
        // The compressed form the draft prints (hex 78dadbb918000217015d).
        assert_eq!(
            b64d("eNrbuRgAAhcBXQ").unwrap(),
            [0x78, 0xda, 0xdb, 0xb9, 0x18, 0x00, 0x02, 0x17, 0x01, 0x5d]
        );
        assert_eq!(
            StatusList::encode_lst(1, &expected).unwrap(),
            "eNrbuRgAAhcBXQ"
        );
    }

    /// draft-ietf-oauth-status-list §4.1: 12 two-bit statuses → bytes C9 44 F9.
    #[test]
    fn draft_two_bit_example() {
        let expected = [1, 2, 0, 3, 0, 1, 0, 1, 1, 2, 3, 3];
        let l = list(2, "eNo76fITAAPfAgc");
        assert_eq!(l.bytes, [0xc9, 0x44, 0xf9]);
        for (i, s) in expected.iter().enumerate() {
            assert_eq!(l.get(i as u64).unwrap(), *s, "index {i}");
        }
        assert!(l.get(12).is_err());
        assert_eq!(
            StatusList::encode_lst(2, &expected).unwrap(),
            "eNo76fITAAPfAgc"
        );
    }

    /// The draft's test vectors (appendix "Test vectors for Status List encoding"): 2^20
    /// entries, all VALID but the listed ones.
    #[test]
    fn draft_long_test_vectors() {
        let one = concat!(
            "eNrt3AENwCAMAEGogklACtKQPg9LugC9k_ACvreiogE",
            "AAKkeCQAAAAAAAAAAAAAAAAAAAIBylgQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "AAAAAAAAAAAAAAAAAAAXG9IAAAAAAAAAPwsJAAAAAAAAAAAAAAAvhsSAAAAAAAAAAA",
            "A7KpLAAAAAAAAAAAAAAAAAAAAAJsLCQAAAAAAAAAAADjelAAAAAAAAAAAKjDMAQAAA",
            "ACAZC8L2AEb"
        );
        let set = [
            0u64, 1993, 25460, 159495, 495669, 554353, 645645, 723232, 854545, 934534, 1000345,
        ];
        let l = list(1, one);
        assert_eq!(l.entries(), 1 << 20);
        for i in [
            0u64,
            1,
            1992,
            1993,
            1994,
            25460,
            500000,
            1000345,
            (1 << 20) - 1,
        ] {
            assert_eq!(l.get(i).unwrap(), u8::from(set.contains(&i)), "index {i}");
        }
        let ones = (0..1u64 << 20).filter(|i| l.get(*i).unwrap() == 1).count();
        assert_eq!(ones, set.len());

        let two = concat!(
            "eNrt2zENACEQAEEuoaBABP5VIO01fCjIHTMStt9ovGV",
            "IAAAAAABAbiEBAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEB5WwIAAAAAA",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAID0ugQAAAAAAAAAAAAAAAAAQG12SgAAA",
            "AAAAAAAAAAAAAAAAAAAAAAAAOCSIQEAAAAAAAAAAAAAAAAAAAAAAAD8ExIAAAAAAAA",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAwJEuAQAAAAAAAAAAAAAAAAAAAAAAAMB9S",
            "wIAAAAAAAAAAAAAAAAAAACoYUoAAAAAAAAAAAAAAEBqH81gAQw"
        );
        let set2 = [
            (0u64, 1u8),
            (1993, 2),
            (25460, 1),
            (159495, 3),
            (495669, 1),
            (554353, 1),
            (645645, 2),
            (723232, 1),
            (854545, 1),
            (934534, 2),
            (1000345, 3),
        ];
        let l = list(2, two);
        assert_eq!(l.entries(), 1 << 20);
        for (i, s) in set2 {
            assert_eq!(l.get(i).unwrap(), s, "index {i}");
        }
        let nonzero = (0..1u64 << 20).filter(|i| l.get(*i).unwrap() != 0).count();
        assert_eq!(nonzero, set2.len());
    }

    /// The draft's Status List Token example (examples/status_list_jwt_raw); its signature is
    /// the caller's business, so only the claims are read here.
    #[test]
    fn draft_status_list_token_example() {
        let raw = concat!(
            "eyJhbGciOiJFUzI1NiIsImtpZCI6IjEyIiwidHlwIjoic3RhdHVzbGlzdCtqd3QifQ.e",
            "yJleHAiOjIyOTE3MjAxNzAsImlhdCI6MTY4NjkyMDE3MCwiaXNzIjoiaHR0cHM6Ly9le",
            "GFtcGxlLmNvbSIsInN0YXR1c19saXN0Ijp7ImJpdHMiOjEsImxzdCI6ImVOcmJ1UmdBQ",
            "WhjQlhRIn0sInN1YiI6Imh0dHBzOi8vZXhhbXBsZS5jb20vc3RhdHVzbGlzdHMvMSIsI",
            "nR0bCI6NDMyMDB9.2lKUUNG503R9htu4aHAYi7vjmr3sgApbfoDvPrl65N3URUO1EYqq",
            "Ql45Jfzd-Av4QzlKa3oVALpLwOEUOq-U_g"
        );
        let jws = Jws::decode(raw).unwrap();
        let uri = "https://example.com/statuslists/1";
        let l = StatusList::from_token(&jws, uri, 1686920170, 1024).unwrap();
        assert_eq!(
            (l.bits, l.iat, l.exp, l.ttl),
            (1, 1686920170, Some(2291720170), Some(43200))
        );
        assert_eq!(l.sub, uri);
        assert_eq!(l.get(0).unwrap(), INVALID);
        assert_eq!(l.get(2).unwrap(), VALID);
    }

    #[test]
    fn encode_round_trips_every_width() {
        for bits in [1u8, 2, 4, 8] {
            let max = if bits == 8 {
                255
            } else {
                (1u16 << bits) as u8 - 1
            };
            let statuses: Vec<u8> = (0..1000u32)
                .map(|i| ((i * 7 + i / 3) % (u32::from(max) + 1)) as u8)
                .collect();
            let lst = StatusList::encode_lst(bits, &statuses).unwrap();
            let l = list(bits, &lst);
            for (i, s) in statuses.iter().enumerate() {
                assert_eq!(l.get(i as u64).unwrap(), *s);
            }
            if bits < 8 {
                assert!(StatusList::encode_lst(bits, &[max + 1]).is_err());
            }
        }
        assert!(StatusList::encode_lst(3, &[0]).is_err());
        assert_eq!(
            list(1, &StatusList::encode_lst(1, &[]).unwrap()).entries(),
            0
        );
    }

    fn token(typ: Option<&str>, sub: &str, exp: Option<i64>, statuses: &[u8]) -> Jws {
        let key = SigningKey::generate(Alg::Es256).unwrap();
        let mut extra = Map::new();
        extra.insert("kid".into(), json!("k1"));
        if let Some(typ) = typ {
            extra.insert("typ".into(), json!(typ));
        }
        let t =
            StatusList::issue_token(&key, extra, sub, 2, statuses, 1000, exp, Some(300)).unwrap();
        let jws = Jws::decode(&t).unwrap();
        jws.verify(&key.public_key(), &[Alg::Es256]).unwrap();
        jws
    }

    const URI: &str = "https://status.example/lists/7";

    #[test]
    fn issued_token_reads_back() {
        let jws = token(None, URI, Some(5000), &[0, 1, 2, 3]);
        assert_eq!(jws.header_str("typ"), Some(TYP));
        assert_eq!(jws.header_str("kid"), Some("k1"));
        let l = StatusList::from_token(&jws, URI, 1000, 1024).unwrap();
        assert_eq!(
            (l.bits, l.iat, l.exp, l.ttl),
            (2, 1000, Some(5000), Some(300))
        );
        assert_eq!(
            (0..4).map(|i| l.get(i).unwrap()).collect::<Vec<_>>(),
            [VALID, INVALID, SUSPENDED, 3]
        );
        assert_eq!(l.entries(), 4);
        assert!(l.get(4).is_err(), "idx out of range");
        assert!(l.get(u64::MAX).is_err());
    }

    #[test]
    fn refuses_wrong_sub_expired_wrong_typ() {
        let jws = token(None, URI, Some(5000), &[0]);
        assert!(matches!(
            StatusList::from_token(&jws, "https://status.example/lists/8", 1000, 1024),
            Err(Error::Binding(_))
        ));
        assert!(matches!(
            StatusList::from_token(&jws, URI, 5000, 1024),
            Err(Error::Validity(_))
        ));
        assert!(StatusList::from_token(&jws, URI, 4999, 1024).is_ok());
        let no_exp = token(None, URI, None, &[0]);
        assert!(StatusList::from_token(&no_exp, URI, i64::MAX, 1024).is_ok());
        for typ in ["JWT", "dc+sd-jwt", "statuslist+cwt"] {
            let jws = token(Some(typ), URI, None, &[0]);
            assert!(matches!(
                StatusList::from_token(&jws, URI, 1000, 1024),
                Err(Error::Unsupported(_))
            ));
        }
    }

    #[test]
    fn refuses_oversize_inflate() {
        // 1 MiB of zeros compresses to about a kilobyte: a small zip bomb.
        let lst = StatusList::encode_lst(8, &vec![0u8; 1 << 20]).unwrap();
        assert!(lst.len() < 4096);
        assert!(inflate(&b64d(&lst).unwrap(), (1 << 20) - 1).is_err());
        assert_eq!(
            inflate(&b64d(&lst).unwrap(), 1 << 20).unwrap().len(),
            1 << 20
        );

        let key = SigningKey::generate(Alg::EdDsa).unwrap();
        let t =
            StatusList::issue_token(&key, Map::new(), URI, 1, &vec![0u8; 80_000], 1, None, None)
                .unwrap();
        let jws = Jws::decode(&t).unwrap();
        assert!(matches!(
            StatusList::from_token(&jws, URI, 2, 9_999),
            Err(Error::Malformed(_))
        ));
        assert_eq!(
            StatusList::from_token(&jws, URI, 2, 10_000)
                .unwrap()
                .entries(),
            80_000
        );
    }

    #[test]
    fn refuses_bad_bits_and_lst() {
        let key = SigningKey::generate(Alg::EdDsa).unwrap();
        let mut header = Map::new();
        header.insert("typ".into(), json!(TYP));
        for list in [
            json!({"bits": 3, "lst": "eNrbuRgAAhcBXQ"}),
            json!({"bits": 1, "lst": "not zlib"}),
            json!({"bits": 1, "lst": "AAAA"}),
            json!({"bits": 1}),
        ] {
            let payload = json!({"sub": URI, "iat": 1, "status_list": list});
            let t = key
                .sign_compact(header.clone(), payload.to_string().as_bytes())
                .unwrap();
            let jws = Jws::decode(&t).unwrap();
            assert!(
                StatusList::from_token(&jws, URI, 2, 1024).is_err(),
                "{list}"
            );
        }
    }

    #[test]
    fn status_ref_reads_the_claim() {
        let r = StatusRef::from_claim(&json!({"status_list": {"idx": 0, "uri": URI}})).unwrap();
        assert_eq!(
            r,
            Some(StatusRef {
                uri: URI.into(),
                idx: 0
            })
        );
        assert_eq!(StatusRef::from_claim(&json!({"other": {}})).unwrap(), None);
        for bad in [
            json!("x"),
            json!({"status_list": {"idx": -1, "uri": URI}}),
            json!({"status_list": {"idx": 1}}),
            json!({"status_list": {"idx": 1.5, "uri": URI}}),
            json!({"status_list": "x"}),
        ] {
            assert!(StatusRef::from_claim(&bad).is_err(), "{bad}");
        }
    }
}
