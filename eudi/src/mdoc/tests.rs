//! Unit tests of ISO mdoc presentations.

use super::*;
use serde_json::json;

const NOW: i64 = 1_750_000_000;
const FROM: i64 = NOW - 86_400;
const UNTIL: i64 = NOW + 86_400;
const DOCTYPE: &str = "org.iso.18013.5.1.mDL";
const NS: &str = "org.iso.18013.5.1";
const AAMVA: &str = "org.iso.18013.5.1.aamva";
const STATUS_URI: &str = "https://issuer.example/status/1";

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// OpenID4VP 1.0 Appendix B.2.6.1: the example OpenID4VPHandoverInfo inputs and the
/// resulting SessionTranscript.
#[test]
fn session_transcript_matches_openid4vp_b_2_6_1() {
    let thumbprint: [u8; 32] =
        hex("4283ec927ae0f208daaa2d026a814f2b22dca52cf85ffa8f3f8626c6bd669047")
            .try_into()
            .unwrap();
    let transcript = session_transcript(
        "x509_san_dns:example.com",
        "exc7gBkxjx1rdc9udRrveKvSsJIq80avlXeLHhGwqtA",
        Some(&thumbprint),
        "https://example.com/response",
    );
    assert_eq!(
        transcript,
        hex(
            "83f6f682714f70656e494434565048616e646f7665725820048bc053c00442af9b8e
                 ed494cefdd9d95240d254b046b11b68013722aad38ac"
        )
    );
    // The example's OpenID4VPHandoverInfo hashes to the same handover digest.
    let info = hex(
        "847818783530395f73616e5f646e733a6578616d706c652e636f6d782b6578633767
            426b786a7831726463397564527276654b7653734a4971383061766c58654c486847
            7771744158204283ec927ae0f208daaa2d026a814f2b22dca52cf85ffa8f3f8626c6
            bd669047781c68747470733a2f2f6578616d706c652e636f6d2f726573706f6e7365",
    );
    assert_eq!(transcript[transcript.len() - 32..], sha256(info));
    let unencrypted = session_transcript("a", "n", None, "https://r");
    assert_ne!(unencrypted, session_transcript("a", "m", None, "https://r"));
}

fn cert_key(alg: Alg) -> (SigningKey, Vec<u8>) {
    let kp = rcgen::KeyPair::generate_for(match alg {
        Alg::Es256 => &rcgen::PKCS_ECDSA_P256_SHA256,
        Alg::EdDsa => &rcgen::PKCS_ED25519,
    })
    .unwrap();
    let key = SigningKey::from_pkcs8(&kp.serialize_der()).unwrap();
    let params = rcgen::CertificateParams::new(vec!["issuer.example".to_string()]).unwrap();
    let cert = params.self_signed(&kp).unwrap();
    (key, cert.der().to_vec())
}

fn leaf(chain: &[Vec<u8>], _alg: Alg) -> Result<PublicKey> {
    PublicKey::from_cert_der(&chain[0])
}

fn transcript(nonce: &str) -> Vec<u8> {
    session_transcript(
        "x509_san_dns:verifier.example",
        nonce,
        Some(&[7u8; 32]),
        "https://verifier.example/response",
    )
}

fn elements() -> Vec<(&'static str, Vec<(&'static str, Value)>)> {
    vec![
        (
            NS,
            vec![
                ("family_name", json!("Doe")),
                ("given_name", json!("Jane")),
                ("birth_date", json!("1990-05-17")),
                ("age_over_18", json!(true)),
                ("age_in_years", json!(35)),
                (
                    "driving_privileges",
                    json!([{"vehicle_category_code": "B", "codes": [{"code": "01"}]}]),
                ),
            ],
        ),
        (AAMVA, vec![("DHS_compliance", json!("F"))]),
    ]
}

struct Fixture {
    issuer_cert: Vec<u8>,
    device: SigningKey,
    issued: Vec<u8>,
}

fn fixture(issuer_alg: Alg, device_alg: Alg) -> Fixture {
    let (issuer, issuer_cert) = cert_key(issuer_alg);
    let device = SigningKey::generate(device_alg).unwrap();
    let issued = issue(
        &issuer,
        std::slice::from_ref(&issuer_cert),
        DOCTYPE,
        &elements(),
        &device.public_key(),
        FROM,
        UNTIL,
        Some((STATUS_URI, 42)),
    )
    .unwrap();
    Fixture {
        issuer_cert,
        device,
        issued,
    }
}

const DISCLOSE: [&str; 5] = [
    "family_name",
    "birth_date",
    "age_over_18",
    "driving_privileges",
    "DHS_compliance",
];

fn presented(f: &Fixture, nonce: &str) -> String {
    present(&f.issued, DOCTYPE, &DISCLOSE, &f.device, &transcript(nonce)).unwrap()
}

fn check(vp: &str) -> Result<Vec<Document>> {
    verify(vp, &transcript("n-1"), NOW, &mut leaf)
}

#[test]
fn round_trip_es256_and_eddsa() {
    for (issuer_alg, device_alg) in [
        (Alg::Es256, Alg::Es256),
        (Alg::EdDsa, Alg::EdDsa),
        (Alg::Es256, Alg::EdDsa),
        (Alg::EdDsa, Alg::Es256),
    ] {
        let f = fixture(issuer_alg, device_alg);
        let docs = check(&presented(&f, "n-1")).unwrap();
        assert_eq!(docs.len(), 1);
        let doc = &docs[0];
        assert_eq!(doc.doctype, DOCTYPE);
        assert_eq!(doc.alg, issuer_alg);
        assert_eq!(doc.x5chain, vec![f.issuer_cert.clone()]);
        assert_eq!((doc.valid_from, doc.valid_until), (FROM, UNTIL));
        assert_eq!(
            doc.status,
            Some(StatusRef {
                uri: STATUS_URI.into(),
                idx: 42
            })
        );
        let mdl = &doc.namespaces[NS];
        assert_eq!(mdl.len(), 4);
        assert_eq!(mdl["family_name"], json!("Doe"));
        assert_eq!(mdl["birth_date"], json!("1990-05-17"));
        assert_eq!(mdl["age_over_18"], json!(true));
        assert_eq!(
            mdl["driving_privileges"][0]["codes"][0]["code"],
            json!("01")
        );
        assert!(!mdl.contains_key("given_name"));
        assert_eq!(doc.namespaces[AAMVA]["DHS_compliance"], json!("F"));
    }
}

#[test]
fn birth_date_is_a_full_date_and_skew_is_accepted() {
    let f = fixture(Alg::Es256, Alg::Es256);
    let vp = presented(&f, "n-1");
    let value: Cbor = ciborium::from_reader(f.issued.as_slice()).unwrap();
    let mut dump = Vec::new();
    ciborium::into_writer(&value, &mut dump).unwrap();
    assert_eq!(dump, f.issued, "issue() writes canonical CBOR");
    // The tag 1004 head (d9 03ec) appears in an item.
    assert!(f.issued.windows(3).any(|w| w == [0xd9, 0x03, 0xec]));
    let t = transcript("n-1");
    assert!(verify(&vp, &t, UNTIL + SKEW_SECS - 1, &mut leaf).is_ok());
    assert!(verify(&vp, &t, FROM - SKEW_SECS, &mut leaf).is_ok());
}

fn edit(vp: &str, f: impl FnOnce(&mut Cbor)) -> String {
    let mut v: Cbor = ciborium::from_reader(b64d(vp).unwrap().as_slice()).unwrap();
    f(&mut v);
    let mut out = Vec::new();
    ciborium::into_writer(&v, &mut out).unwrap();
    b64e(out)
}

fn at<'v>(v: &'v mut Cbor, key: &str) -> &'v mut Cbor {
    match v {
        Cbor::Map(entries) => entries
            .iter_mut()
            .find(|(k, _)| k.as_text() == Some(key))
            .map(|(_, v)| v)
            .unwrap(),
        _ => panic!("not a map"),
    }
}

fn doc0(v: &mut Cbor) -> &mut Cbor {
    &mut at(v, "documents").as_array_mut().unwrap()[0]
}

fn items(v: &mut Cbor) -> &mut Vec<Cbor> {
    at(at(at(doc0(v), "issuerSigned"), "nameSpaces"), NS)
        .as_array_mut()
        .unwrap()
}

/// Decodes, changes and re-encodes one IssuerSignedItem.
fn edit_item(item: &mut Cbor, f: impl FnOnce(&mut Cbor)) {
    let Cbor::Tag(24, inner) = item else {
        panic!("not tag 24")
    };
    let Cbor::Bytes(bytes) = inner.as_mut() else {
        panic!("not bytes")
    };
    let mut decoded: Cbor = ciborium::from_reader(bytes.as_slice()).unwrap();
    f(&mut decoded);
    bytes.clear();
    ciborium::into_writer(&decoded, &mut *bytes).unwrap();
}

#[test]
fn untouched_reencoding_and_tagged_issuer_auth_still_verify() {
    let f = fixture(Alg::Es256, Alg::Es256);
    let vp = presented(&f, "n-1");
    assert_eq!(edit(&vp, |_| {}), vp);
    let tagged = edit(&vp, |v| {
        let auth = at(at(doc0(v), "issuerSigned"), "issuerAuth");
        *auth = Cbor::Tag(18, Box::new(auth.clone()));
    });
    assert!(check(&tagged).is_ok());
}

#[test]
fn tampered_value_missing_digest_and_duplicates_are_refused() {
    let f = fixture(Alg::Es256, Alg::Es256);
    let vp = presented(&f, "n-1");
    let tampered = edit(&vp, |v| {
        edit_item(&mut items(v)[0], |item| {
            *at(item, "elementValue") = Cbor::Text("Mallory".into())
        })
    });
    assert!(matches!(check(&tampered), Err(Error::Digest(m)) if m.contains("does not match")));
    let unknown = edit(&vp, |v| {
        edit_item(&mut items(v)[0], |item| {
            *at(item, "digestID") = Cbor::from(1_000_000u64)
        })
    });
    assert!(matches!(check(&unknown), Err(Error::Digest(m)) if m.contains("not in the MSO")));
    let duplicated = edit(&vp, |v| {
        let first = items(v)[0].clone();
        items(v).push(first);
    });
    assert!(matches!(check(&duplicated), Err(Error::Digest(_))));
}

#[test]
fn validity_window_is_enforced() {
    let f = fixture(Alg::EdDsa, Alg::Es256);
    let vp = presented(&f, "n-1");
    let t = transcript("n-1");
    assert!(matches!(
        verify(&vp, &t, UNTIL + SKEW_SECS, &mut leaf),
        Err(Error::Validity(m)) if m.contains("expired")
    ));
    assert!(matches!(
        verify(&vp, &t, FROM - SKEW_SECS - 1, &mut leaf),
        Err(Error::Validity(m)) if m.contains("not yet")
    ));
}

#[test]
fn device_signature_binds_the_transcript_and_the_device_key() {
    let f = fixture(Alg::Es256, Alg::Es256);
    assert!(matches!(
        check(&presented(&f, "other nonce")),
        Err(Error::Binding(_))
    ));
    let other = SigningKey::generate(Alg::Es256).unwrap();
    let vp = present(&f.issued, DOCTYPE, &DISCLOSE, &other, &transcript("n-1")).unwrap();
    assert!(matches!(check(&vp), Err(Error::Binding(_))));
    let wrong_type = SigningKey::generate(Alg::EdDsa).unwrap();
    let vp = present(
        &f.issued,
        DOCTYPE,
        &DISCLOSE,
        &wrong_type,
        &transcript("n-1"),
    )
    .unwrap();
    assert!(matches!(check(&vp), Err(Error::Signature(_))));
}

#[test]
fn issuer_signature_and_trust_are_enforced() {
    // Signed by one key, with another key's certificate as x5chain.
    let (issuer, _) = cert_key(Alg::Es256);
    let (_, other_cert) = cert_key(Alg::Es256);
    let device = SigningKey::generate(Alg::Es256).unwrap();
    let issued = issue(
        &issuer,
        &[other_cert],
        DOCTYPE,
        &elements(),
        &device.public_key(),
        FROM,
        UNTIL,
        None,
    )
    .unwrap();
    let vp = present(
        &issued,
        DOCTYPE,
        &["family_name"],
        &device,
        &transcript("n-1"),
    )
    .unwrap();
    assert!(matches!(check(&vp), Err(Error::Signature(_))));

    // A flipped signature bit.
    let f = fixture(Alg::EdDsa, Alg::EdDsa);
    let vp = presented(&f, "n-1");
    let flipped = edit(&vp, |v| {
        let auth = at(at(doc0(v), "issuerSigned"), "issuerAuth");
        let sig = &mut auth.as_array_mut().unwrap()[3];
        let Cbor::Bytes(b) = sig else { panic!() };
        b[0] ^= 1;
    });
    assert!(matches!(check(&flipped), Err(Error::Signature(_))));

    // The trust closure refusing the chain, or the algorithm.
    let refused = verify(&vp, &transcript("n-1"), NOW, &mut |_, _| {
        Err(Error::Untrusted("not an anchor".into()))
    });
    assert!(matches!(refused, Err(Error::Untrusted(_))));
    let mut es256_only = |chain: &[Vec<u8>], alg: Alg| {
        if alg != Alg::Es256 {
            return Err(Error::Unsupported(alg.name().into()));
        }
        leaf(chain, alg)
    };
    let refused = verify(&vp, &transcript("n-1"), NOW, &mut es256_only);
    assert!(matches!(refused, Err(Error::Unsupported(_))));
}

#[test]
fn device_mac_and_doctype_mismatch_are_refused() {
    let f = fixture(Alg::Es256, Alg::Es256);
    let vp = presented(&f, "n-1");
    let mac = edit(&vp, |v| {
        let auth = at(at(doc0(v), "deviceSigned"), "deviceAuth");
        *auth = Cbor::Map(vec![(
            text("deviceMac"),
            Cbor::Array(vec![
                Cbor::Bytes(vec![0xa1, 0x01, 0x05]),
                Cbor::Map(vec![]),
                Cbor::Null,
                Cbor::Bytes(vec![0; 32]),
            ]),
        )]);
    });
    assert!(matches!(check(&mac), Err(Error::Unsupported(m)) if m.contains("deviceMac")));

    let other = present(
        &f.issued,
        "org.example.other",
        &DISCLOSE,
        &f.device,
        &transcript("n-1"),
    )
    .unwrap();
    assert!(matches!(check(&other), Err(Error::Malformed(m)) if m.contains("docType")));
    let renamed = edit(&vp, |v| *at(doc0(v), "docType") = text("org.example.other"));
    assert!(matches!(check(&renamed), Err(Error::Malformed(_))));
}

#[test]
fn garbage_and_limits_are_refused() {
    for bad in [
        "",
        "!!!",
        "AAA=",
        &b64e([0xff, 0x00]),
        &b64e([0x05]),
        &b64e([0xa1, 0x61]),
    ] {
        assert!(matches!(check(bad), Err(Error::Malformed(_))), "{bad}");
    }
    // A map repeating a key.
    assert!(matches!(
        check(&b64e([0xa2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02])),
        Err(Error::Malformed(_))
    ));
    // Absurd lengths do not allocate.
    assert!(matches!(
        check(&b64e([
            0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
        ])),
        Err(Error::Malformed(_))
    ));
    let f = fixture(Alg::Es256, Alg::Es256);
    let vp = presented(&f, "n-1");
    let status = edit(&vp, |v| *at(v, "status") = Cbor::from(10u64));
    assert!(matches!(check(&status), Err(Error::Malformed(_))));
    let eleven = edit(&vp, |v| {
        let docs = at(v, "documents").as_array_mut().unwrap();
        let first = docs[0].clone();
        docs.extend(std::iter::repeat_n(first, 10));
    });
    assert!(matches!(check(&eleven), Err(Error::Malformed(m)) if m.contains("documents")));
    let ten = edit(&vp, |v| {
        let docs = at(v, "documents").as_array_mut().unwrap();
        let first = docs[0].clone();
        docs.extend(std::iter::repeat_n(first, 9));
    });
    assert_eq!(check(&ten).unwrap().len(), 10);

    let (issuer, cert) = cert_key(Alg::Es256);
    let many: Vec<(String, Value)> = (0..65).map(|i| (format!("e{i}"), json!(i))).collect();
    let names: Vec<&str> = many.iter().map(|(n, _)| n.as_str()).collect();
    let items = many.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
    let issued = issue(
        &issuer,
        &[cert],
        DOCTYPE,
        &[(NS, items)],
        &f.device.public_key(),
        FROM,
        UNTIL,
        None,
    )
    .unwrap();
    let vp = present(&issued, DOCTYPE, &names, &f.device, &transcript("n-1")).unwrap();
    assert!(matches!(check(&vp), Err(Error::Malformed(m)) if m.contains("elements")));
    let vp = present(
        &issued,
        DOCTYPE,
        &names[..64],
        &f.device,
        &transcript("n-1"),
    )
    .unwrap();
    let docs = check(&vp).unwrap();
    assert_eq!(docs[0].namespaces[NS]["e63"], json!(63));
    assert_eq!(docs[0].status, None);
    assert!(present(&issued, DOCTYPE, &["absent"], &f.device, &transcript("n-1")).is_err());
}
