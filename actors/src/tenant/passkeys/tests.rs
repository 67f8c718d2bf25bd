//! Unit tests of passkeys: user handles, use state, and the ceremonies through the tenant's state.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{check::signed_challenge, sign_in::parse_user_handle};
use crate::tenant::{
    assertion,
    records::{PasskeyRecord, PasskeyUse},
};

#[test]
fn user_handles_are_read_as_bytes_or_as_text() {
    let id = Uuid::new_v4();
    assert_eq!(parse_user_handle(&id.to_string()), Some(id));
    let b64 = URL_SAFE_NO_PAD.encode(id.as_bytes());
    assert_eq!(parse_user_handle(&b64), Some(id));
    assert_eq!(parse_user_handle("not-a-handle"), None);
}

#[test]
fn a_record_s_own_use_state_stands_until_a_use_record_is_applied() {
    let (mut credential, _) =
        assertion::tests::registered(tessera_testkit::webauthn::SoftAuthenticator::device_bound());
    // As an earlier build, which kept the use state in the record, left it.
    credential.counter = 7;
    let used_at = OffsetDateTime::now_utc();
    let record = PasskeyRecord {
        id: Uuid::now_v7(),
        user_id: Uuid::now_v7(),
        nickname: None,
        credential,
        rp_id: "app.example".into(),
        aaguid: Uuid::nil(),
        created_at: used_at,
        last_used_at: Some(used_at),
        suspected_clone: false,
    };
    let own = record.use_state();
    assert_eq!(own.counter, 7);
    assert_eq!(own.last_used_at, Some(used_at));
    assert!(!own.backup_eligible && !own.backed_up && !own.suspected_clone);

    let later = PasskeyUse {
        counter: 9,
        backup_eligible: false,
        backed_up: false,
        last_used_at: Some(used_at + time::Duration::hours(1)),
        suspected_clone: true,
    };
    let applied = record.with_use(later);
    assert_eq!(applied.use_state(), later);
    assert_eq!(applied.credential.counter, 9);
    let view = applied.view();
    assert_eq!(view.last_used_at, later.last_used_at);
    assert!(view.suspected_clone);
}

#[test]
fn the_challenge_comes_from_the_client_data() {
    let json = br#"{"type":"webauthn.get","challenge":"AAEC","origin":"https://a.example"}"#;
    assert_eq!(signed_challenge(json), Some(vec![0, 1, 2]));
    assert_eq!(signed_challenge(b"{}"), None);
    assert_eq!(signed_challenge(b"not json"), None);
}
