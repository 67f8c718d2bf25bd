//! Unit tests of wallet sign-in and age verification through the tenant's state.

use std::net::IpAddr;

use tessera_storage::sha256;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;
use zeroize::Zeroizing;

use super::{outcome::floor_level, records::tx_key, *};
use crate::{
    error::TenantError,
    tenant::{
        accounts::tests::tenant,
        audit::AuditContext,
        messages::LoginOutcome,
        records::UserRecord,
        settings::{AssuranceFloor, AssuranceKind},
        state::TenantState,
    },
};

fn ip() -> IpAddr {
    "192.0.2.1".parse().unwrap()
}

/// A tenant with wallet sign-in and age verification on, under a development verifier
/// valid for `days` (negative: expired).
fn wallet_tenant(dir: &std::path::Path, days: i64) -> TenantState {
    let mut t = tenant(dir);
    let dev = tessera_eudi::x509::dev_chain("Verifier", "verifier.example", 30).unwrap();
    let not_after = (OffsetDateTime::now_utc() + Duration::days(days)).unix_timestamp();
    t.eudi
        .eudi_cmd(
            &mut t.cx,
            EudiCmd::SetVerifier {
                key_pkcs8: Zeroizing::new(dev.leaf_key_pkcs8),
                chain: vec![dev.leaf_der],
                not_after,
                development: true,
            },
            &AuditContext::default(),
        )
        .unwrap();
    t.cx.settings.eudi.enabled = true;
    t.cx.settings.eudi_age.age_verification_enabled = true;
    t.cx.settings.urls.site_url = Some("https://app.example/wallet".into());
    t
}

fn begin(
    t: &mut TenantState,
    purpose: EudiPurpose,
    redirect_uri: Option<&str>,
) -> Result<(TxView, String), TenantError> {
    let cmd = EudiCmd::Begin {
        purpose,
        redirect_uri: redirect_uri.map(str::to_owned),
        ip: ip(),
    };
    match t.eudi.eudi_cmd(&mut t.cx, cmd, &AuditContext::default())? {
        EudiAnswer::Begun { tx, state } => Ok((tx, state)),
        other => panic!("{other:?}"),
    }
}

fn identity(level: Eidas, email: Option<&str>) -> WalletOutcome {
    let mut claims = serde_json::Map::new();
    claims.insert("given_name".into(), "Ada".into());
    WalletOutcome::Login(Box::new(WalletIdentity {
        issuer: "https://pid.example".into(),
        identifier: "person-1".into(),
        claims,
        level,
        email: email.map(str::to_owned),
    }))
}

fn complete(
    t: &mut TenantState,
    tx: &TxView,
    outcome: WalletOutcome,
) -> Result<Option<String>, TenantError> {
    let cmd = EudiCmd::Complete {
        request_id: tx.request_id.clone(),
        outcome,
    };
    match t.eudi.eudi_cmd(&mut t.cx, cmd, &AuditContext::default())? {
        EudiAnswer::Completed { redirect_uri } => Ok(redirect_uri),
        other => panic!("{other:?}"),
    }
}

fn poll(
    t: &mut TenantState,
    purpose: EudiPurpose,
    state: &str,
    response_code: Option<&str>,
) -> Result<PollAnswer, TenantError> {
    let cmd = EudiCmd::Result {
        purpose,
        state: state.to_owned(),
        response_code: response_code.map(str::to_owned),
    };
    match t.eudi.eudi_cmd(&mut t.cx, cmd, &AuditContext::default())? {
        EudiAnswer::Poll(p) => Ok(p),
        other => panic!("{other:?}"),
    }
}

fn refusal(r: Result<impl std::fmt::Debug, TenantError>) -> EudiRefusal {
    match r {
        Err(TenantError::Eudi(refusal)) => refusal,
        other => panic!("not a wallet refusal: {other:?}"),
    }
}

#[test]
fn eidas_levels_parse_order_and_name_their_acr() {
    assert_eq!(Eidas::parse("low"), Some(Eidas::Low));
    assert_eq!(Eidas::parse("substantial"), Some(Eidas::Substantial));
    assert_eq!(Eidas::parse("high"), Some(Eidas::High));
    for bad in ["Low", "HIGH", "eidas_high", "", "medium"] {
        assert_eq!(Eidas::parse(bad), None, "{bad}");
    }
    assert!(Eidas::Low < Eidas::Substantial && Eidas::Substantial < Eidas::High);
    for level in [Eidas::Low, Eidas::Substantial, Eidas::High] {
        assert_eq!(serde_json::to_value(level).unwrap(), level.acr());
    }
}

#[test]
fn a_floor_asks_for_its_eidas_level_or_what_its_aal_needs() {
    let eidas = |v| floor_level(AssuranceKind::Eidas, v);
    assert_eq!(eidas("low"), Eidas::Low);
    assert_eq!(eidas("substantial"), Eidas::Substantial);
    // A level that cannot be read asks for the most.
    assert_eq!(eidas("nonsense"), Eidas::High);
    let aal = |v| floor_level(AssuranceKind::Aal, v);
    for two in ["aal2", "AAL2", "2", "aal3"] {
        assert_eq!(aal(two), Eidas::Substantial, "{two}");
    }
    for one in ["aal1", "1", "0", "aal", "x"] {
        assert_eq!(aal(one), Eidas::Low, "{one}");
    }
}

#[test]
fn a_request_id_names_its_tenant_and_a_bounded_key() {
    assert_eq!(tx_key("abc.r4nd0m", "abc"), Some(b"r4nd0m".to_vec()));
    assert_eq!(tx_key("abd.r4nd0m", "abc"), None);
    assert_eq!(tx_key("abc.", "abc"), None);
    assert_eq!(tx_key("abc", "abc"), None);
    assert_eq!(
        tx_key(&format!("abc.{}", "x".repeat(64)), "abc").map(|k| k.len()),
        Some(64)
    );
    assert_eq!(tx_key(&format!("abc.{}", "x".repeat(65)), "abc"), None);
    assert_eq!(tenant_of_request("abc.r4nd0m"), Some("abc"));
    assert_eq!(tenant_of_request("abc"), None);
}

#[tokio::test]
async fn a_wallet_answer_is_taken_once_and_the_poll_opens_the_session_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = wallet_tenant(dir.path(), 30);
    let (tx, state) = begin(&mut t, EudiPurpose::Login, None).unwrap();
    assert!(!tx.same_device);
    // The poll handle is not in the request object's values.
    assert!(!tx.oid_state.contains(&state) && tx.nonce != state);
    assert!(matches!(
        poll(&mut t, EudiPurpose::Login, &state, None).unwrap(),
        PollAnswer::Pending
    ));
    let outcome = identity(Eidas::Substantial, None);
    assert_eq!(complete(&mut t, &tx, outcome.clone()).unwrap(), None);
    assert_eq!(
        refusal(complete(&mut t, &tx, outcome)),
        EudiRefusal::Replayed
    );
    match poll(&mut t, EudiPurpose::Login, &state, None).unwrap() {
        PollAnswer::Consumed(Some(login)) => match *login {
            LoginOutcome::Signed { grant, .. } => {
                // Substantial is two factors: AAL2 without an MFA step.
                assert_eq!(grant.aal, 2);
                assert_eq!(grant.acr, Some(Eidas::Substantial));
                assert_eq!(grant.amr, ["pop"]);
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        poll(&mut t, EudiPurpose::Login, &state, None).unwrap(),
        PollAnswer::Consumed(None)
    ));
    // The same wallet identity signs in as the same account next time.
    let all = crate::tenant::messages::UserQuery {
        limit: 100,
        ..Default::default()
    };
    assert_eq!(t.users.list_users(&t.cx, &all).unwrap().users.len(), 1);
    let (tx2, state2) = begin(&mut t, EudiPurpose::Login, None).unwrap();
    complete(&mut t, &tx2, identity(Eidas::Low, None)).unwrap();
    match poll(&mut t, EudiPurpose::Login, &state2, None).unwrap() {
        PollAnswer::Consumed(Some(login)) => match *login {
            LoginOutcome::Signed { grant, .. } => {
                assert_eq!(grant.aal, 1);
                assert_eq!(grant.acr, Some(Eidas::Low));
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert_eq!(t.users.list_users(&t.cx, &all).unwrap().users.len(), 1);
}

#[tokio::test]
async fn a_credential_below_the_floor_is_refused_and_the_transaction_stays_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = wallet_tenant(dir.path(), 30);
    t.cx.settings.eudi.required_assurance_floor = Some(AssuranceFloor {
        kind: AssuranceKind::Eidas,
        value: "high".into(),
    });
    let (tx, state) = begin(&mut t, EudiPurpose::Login, None).unwrap();
    assert_eq!(
        refusal(complete(&mut t, &tx, identity(Eidas::Substantial, None))),
        EudiRefusal::BelowFloor
    );
    assert!(matches!(
        poll(&mut t, EudiPurpose::Login, &state, None).unwrap(),
        PollAnswer::Pending
    ));
    assert_eq!(
        complete(&mut t, &tx, identity(Eidas::High, None)).unwrap(),
        None
    );
}

#[tokio::test]
async fn a_wallet_address_never_opens_an_account_that_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = wallet_tenant(dir.path(), 30);
    let mut owner = UserRecord::blank(Uuid::now_v7(), OffsetDateTime::now_utc());
    owner.email = Some("ada@example.com".into());
    owner.email_verified = true;
    let mut b = t.cx.store.batch();
    t.cx.put_new_user(&mut b, &owner).unwrap();
    t.cx.store.apply(b).unwrap();
    let (tx, _) = begin(&mut t, EudiPurpose::Login, None).unwrap();
    // As the wallet wrote it: the address is normalised before the lookup.
    assert_eq!(
        refusal(complete(
            &mut t,
            &tx,
            identity(Eidas::High, Some(" ADA@Example.com "))
        )),
        EudiRefusal::EmailExists
    );
}

#[tokio::test]
async fn a_same_device_result_needs_the_redirects_response_code() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = wallet_tenant(dir.path(), 30);
    assert_eq!(
        refusal(begin(
            &mut t,
            EudiPurpose::Login,
            Some("https://evil.example/")
        )),
        EudiRefusal::RedirectNotAllowed
    );
    let (tx, state) = begin(
        &mut t,
        EudiPurpose::Login,
        Some("https://app.example/wallet"),
    )
    .unwrap();
    assert!(tx.same_device);
    let redirect = complete(&mut t, &tx, identity(Eidas::High, None))
        .unwrap()
        .unwrap();
    let code = redirect
        .strip_prefix("https://app.example/wallet#response_code=")
        .unwrap()
        .to_owned();
    for shown in [None, Some("wrong")] {
        assert_eq!(
            refusal(poll(&mut t, EudiPurpose::Login, &state, shown)),
            EudiRefusal::ResponseCodeMismatch
        );
    }
    assert!(matches!(
        poll(&mut t, EudiPurpose::Login, &state, Some(&code)).unwrap(),
        PollAnswer::Consumed(Some(_))
    ));
}

#[tokio::test]
async fn a_poll_finds_only_its_own_purpose_and_handle() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = wallet_tenant(dir.path(), 30);
    let (tx, state) = begin(&mut t, EudiPurpose::Login, None).unwrap();
    assert!(matches!(
        poll(&mut t, EudiPurpose::Age, &state, None).unwrap(),
        PollAnswer::NotFound
    ));
    // The request id, which the QR code shows, is no poll handle.
    assert!(matches!(
        poll(&mut t, EudiPurpose::Login, &tx.request_id, None).unwrap(),
        PollAnswer::NotFound
    ));
    assert!(matches!(
        poll(&mut t, EudiPurpose::Login, &tx.oid_state, None).unwrap(),
        PollAnswer::NotFound
    ));
}

#[tokio::test]
async fn an_expired_transaction_takes_no_answer_and_polls_as_expired() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = wallet_tenant(dir.path(), 30);
    t.cx.runtime.eudi_request_ttl = Duration::ZERO;
    let (tx, state) = begin(&mut t, EudiPurpose::Login, None).unwrap();
    assert_eq!(
        refusal(complete(&mut t, &tx, identity(Eidas::High, None))),
        EudiRefusal::RequestUnknown
    );
    assert!(matches!(
        poll(&mut t, EudiPurpose::Login, &state, None).unwrap(),
        PollAnswer::Expired
    ));
}

#[tokio::test]
async fn an_age_token_is_handed_out_on_the_first_poll_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = wallet_tenant(dir.path(), 30);
    let (tx, state) = begin(&mut t, EudiPurpose::Age, None).unwrap();
    complete(&mut t, &tx, WalletOutcome::Age(Some(true))).unwrap();
    let token = match poll(&mut t, EudiPurpose::Age, &state, None).unwrap() {
        PollAnswer::Determined(Some(token)) => token,
        other => panic!("{other:?}"),
    };
    assert!(matches!(
        poll(&mut t, EudiPurpose::Age, &state, None).unwrap(),
        PollAnswer::Determined(None)
    ));
    let record =
        t.cx.store
            .get::<AgeTokenRecord>(&sha256(token.as_bytes()))
            .unwrap()
            .unwrap();
    assert!(record.over);
    assert_eq!(record.threshold, AGE_THRESHOLD);
    assert_eq!(record.expires_at - record.verified_at, AGE_TOKEN_TTL);
    // A sign-in answer to an age check is nothing usable.
    let (tx, state) = begin(&mut t, EudiPurpose::Age, None).unwrap();
    complete(&mut t, &tx, identity(Eidas::High, None)).unwrap();
    assert!(matches!(
        poll(&mut t, EudiPurpose::Age, &state, None).unwrap(),
        PollAnswer::Fallback
    ));
}

#[tokio::test]
async fn a_declined_age_check_falls_back_and_a_declined_sign_in_stays_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = wallet_tenant(dir.path(), 30);
    let ctx = AuditContext::default();
    let declined = |state: &str| EudiCmd::Declined {
        state: state.to_owned(),
        ip: ip(),
    };
    let (age, age_state) = begin(&mut t, EudiPurpose::Age, None).unwrap();
    // A forged state naming the request is refused.
    let forged = format!("{}.forged", age.request_id);
    assert_eq!(
        refusal(t.eudi.eudi_cmd(&mut t.cx, declined(&forged), &ctx)),
        EudiRefusal::RequestUnknown
    );
    t.eudi
        .eudi_cmd(&mut t.cx, declined(&age.oid_state), &ctx)
        .unwrap();
    assert!(matches!(
        poll(&mut t, EudiPurpose::Age, &age_state, None).unwrap(),
        PollAnswer::Fallback
    ));
    let (login, login_state) = begin(&mut t, EudiPurpose::Login, None).unwrap();
    t.eudi
        .eudi_cmd(&mut t.cx, declined(&login.oid_state), &ctx)
        .unwrap();
    assert!(matches!(
        poll(&mut t, EudiPurpose::Login, &login_state, None).unwrap(),
        PollAnswer::Pending
    ));
    assert_eq!(
        complete(&mut t, &login, identity(Eidas::High, None)).unwrap(),
        None
    );
}

#[tokio::test]
async fn nothing_begins_while_disabled_or_without_a_live_verifier() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = tenant(dir.path());
    t.cx.settings.eudi.enabled = true;
    assert_eq!(
        refusal(begin(&mut t, EudiPurpose::Login, None)),
        EudiRefusal::VerifierMissing
    );
    let dir = tempfile::tempdir().unwrap();
    let mut t = wallet_tenant(dir.path(), -1);
    assert_eq!(
        refusal(begin(&mut t, EudiPurpose::Login, None)),
        EudiRefusal::VerifierExpired
    );
    let dir = tempfile::tempdir().unwrap();
    let mut t = wallet_tenant(dir.path(), 30);
    t.cx.settings.eudi_age.age_verification_enabled = false;
    assert_eq!(
        refusal(begin(&mut t, EudiPurpose::Age, None)),
        EudiRefusal::Disabled
    );
    t.cx.settings.eudi.enabled = false;
    assert_eq!(
        refusal(begin(&mut t, EudiPurpose::Login, None)),
        EudiRefusal::Disabled
    );
}

#[tokio::test]
async fn another_tenants_request_id_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = wallet_tenant(dir.path(), 30);
    let (tx, _) = begin(&mut t, EudiPurpose::Login, None).unwrap();
    let (_, random) = tx.request_id.split_once('.').unwrap();
    let foreign = format!("{}.{random}", Uuid::new_v4().simple());
    let cmd = EudiCmd::Request {
        request_id: foreign,
        ip: ip(),
    };
    assert_eq!(
        refusal(t.eudi.eudi_cmd(&mut t.cx, cmd, &AuditContext::default())),
        EudiRefusal::RequestUnknown
    );
    let own = EudiCmd::Request {
        request_id: tx.request_id.clone(),
        ip: ip(),
    };
    assert!(matches!(
        t.eudi
            .eudi_cmd(&mut t.cx, own, &AuditContext::default())
            .unwrap(),
        EudiAnswer::Tx(_)
    ));
}
