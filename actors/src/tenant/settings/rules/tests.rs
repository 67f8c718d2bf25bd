//! Unit tests of the settings' own rules.

use time::macros::datetime;

use super::*;
use crate::error::SettingsError;
use crate::{
    records::Tier,
    tenant::settings::{ApplyContext, DpiaLink, TenantSettings},
};

const NOW: time::OffsetDateTime = datetime!(2026-03-10 08:00:00 UTC);

fn cx() -> ApplyContext {
    ApplyContext {
        byok_token_set: false,
        tier: Tier::Free,
        platform_sms_cap: 1_000,
        now: NOW,
    }
}

/// The fields the settings refuse `change` for, with their reasons.
fn refused(change: SettingsChange) -> BTreeMap<String, String> {
    match TenantSettings::defaults(NOW).apply(change, &cx()) {
        Err(TenantError::Settings(SettingsError::Invalid { fields })) => fields,
        other => panic!("not refused for its fields: {other:?}"),
    }
}

#[test]
fn bounds_take_a_number_inside_and_name_the_field_outside() {
    let mut f = SettingsFaults::new();
    assert_eq!(MFA_GRACE_DAYS.take(&mut f, "grace", 3), Some(3));
    assert_eq!(MFA_GRACE_DAYS.take(&mut f, "grace", 30), Some(30));
    assert!(f.is_empty());
    assert_eq!(MFA_GRACE_DAYS.take(&mut f, "grace", -1), None);
    assert_eq!(DPIA_VERSIONS.take(&mut f, "version", 1 << 40), None);
    assert_eq!(
        f.into_fields(),
        BTreeMap::from([
            ("grace".into(), "must be an integer from 3 to 30".into()),
            (
                "version".into(),
                "must be an integer from 1 to 4294967295".into()
            ),
        ])
    );
}

#[test]
fn a_field_keeps_its_first_reason() {
    let mut f = SettingsFaults::new();
    f.check("x", false, "first");
    f.check("x", false, "second");
    f.check("y", true, "never");
    assert_eq!(
        f.into_fields(),
        BTreeMap::from([("x".into(), "first".into())])
    );
}

#[test]
fn the_actor_refuses_a_security_patch_that_breaks_a_rule() {
    let fields = refused(SettingsChange::Security(Box::new(SecurityPatch {
        mfa_grace_period_days: Some(2),
        sms_otp_monthly_cap: Some(100_001),
        byok_provider_account_sid: Some(Some("AC123".into())),
        byok_provider_auth_token: Some(Some("short".into())),
        sms_allowed_countries: Some(Some(vec!["FR".into(), "fr".into()])),
        ..Default::default()
    })));
    let names: Vec<&str> = fields.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "byok_provider_account_sid",
            "byok_provider_auth_token",
            "mfa_grace_period_days",
            "sms_allowed_countries[1]",
            "sms_otp_monthly_cap",
        ]
    );
    assert_eq!(
        fields["sms_otp_monthly_cap"],
        "must be an integer from 0 to 100000"
    );
}

#[test]
fn the_actor_refuses_minor_settings_that_break_a_rule() {
    let mut m = TenantSettings::defaults(NOW).minors;
    m.digital_consent_age = 12;
    m.lawful_basis = "  ".into();
    m.purposes = Vec::new();
    m.dpia = Some(DpiaLink {
        dpia_key: uuid::Uuid::nil(),
        dpia_version: 0,
        dpia_content_hash: String::new(),
        linked_at: datetime!(2026-03-10 08:00:00 +1),
    });
    let fields = refused(SettingsChange::Minors(Box::new(m)));
    let expected: [(&str, &str); 6] = [
        ("digital_consent_age", "must be an integer from 13 to 16"),
        ("dpia.dpia_content_hash", "must be 1-256 characters"),
        (
            "dpia.dpia_version",
            "must be an integer from 1 to 4294967295",
        ),
        ("dpia.linked_at", LINKED_AT_RULE),
        (
            "lawful_basis",
            "must be 1-500 characters without control characters",
        ),
        ("purposes", "must hold 1-20 entries"),
    ];
    let expected: BTreeMap<String, String> = expected
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    assert_eq!(fields, expected);
}

#[test]
fn passkey_origins_are_counted_as_sent_and_kept_once() {
    let many: Vec<String> = (0..21).map(|i| format!("https://a{i}.example")).collect();
    let bad_app = format!("{ANDROID_ORIGIN_PREFIX}short");
    let fields = refused(SettingsChange::PasskeyDomain {
        rp_id: Some(Some("Example.com".into())),
        origins: Some([many, vec![bad_app]].concat()),
    });
    let names: Vec<&str> = fields.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["passkey_origins", "passkey_origins[21]", "passkey_rp_id"]
    );
    let twice = vec![
        "https://a.example".to_owned(),
        "https://a.example".to_owned(),
    ];
    let applied = TenantSettings::defaults(NOW)
        .apply(
            SettingsChange::PasskeyDomain {
                rp_id: None,
                origins: Some(twice),
            },
            &cx(),
        )
        .unwrap();
    assert_eq!(applied.next.passkey_origins, ["https://a.example"]);
}

#[test]
fn a_wallet_anchor_is_checked_under_its_own_index() {
    let mut config = TenantSettings::defaults(NOW).eudi;
    config.requested_attributes = vec!["email".into(), "shoe_size".into()];
    config.on_status_unavailable = "ignore".into();
    config.trust_anchors = vec![TrustAnchor {
        issuer: String::new(),
        member_state: Some("POL".into()),
        allowed_algs: vec!["RS256".into()],
        max_assurance_level: "high".into(),
        allowed_formats: Vec::new(),
        key_resolution: KeyResolution::JwksUri {
            jwks_uri: "ftp://keys.example".into(),
        },
        display_name: None,
    }];
    let fields = refused(SettingsChange::Eudi(Box::new(config)));
    let names: Vec<&str> = fields.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "on_status_unavailable",
            "requested_attributes[1]",
            "trust_anchors[0].allowedAlgs[0]",
            "trust_anchors[0].allowedFormats",
            "trust_anchors[0].issuer",
            "trust_anchors[0].keyResolution.jwksUri",
            "trust_anchors[0].memberState",
        ]
    );
}

#[test]
fn wallet_age_states_are_checked_and_kept_once() {
    let age = |states: &[&str]| {
        SettingsChange::EudiAge(EudiAgeConfig {
            age_verification_enabled: true,
            supported_member_states: states.iter().map(|s| (*s).to_owned()).collect(),
            updated_at: NOW,
        })
    };
    let fields = refused(age(&["PL", "XX"]));
    assert_eq!(
        fields["supported_member_states[1]"],
        "must be one of PL, DE, FR, IE"
    );
    let applied = TenantSettings::defaults(NOW)
        .apply(age(&["PL", "DE", "PL"]), &cx())
        .unwrap();
    assert_eq!(applied.next.eudi_age.supported_member_states, ["PL", "DE"]);
}
