//! Unit tests of the tenant settings: defaults, changes and the edge policy.

use time::macros::datetime;

use super::*;
use crate::error::{SettingsError, SmsError};

const T0: OffsetDateTime = datetime!(2026-03-01 12:00:00 UTC);
const NOW: OffsetDateTime = datetime!(2026-03-10 08:00:00 UTC);

fn cx(byok_token_set: bool) -> ApplyContext {
    ApplyContext {
        byok_token_set,
        tier: Tier::Free,
        platform_sms_cap: 1_000,
        now: NOW,
    }
}

fn security(patch: SecurityPatch) -> SettingsChange {
    SettingsChange::Security(Box::new(patch))
}

fn guests(enabled: bool, confirmed_privileged: bool) -> SettingsChange {
    SettingsChange::Anonymous {
        enabled: Some(enabled),
        ttl_days: None,
        confirmed_privileged,
    }
}

#[test]
fn enabling_guests_under_a_privileged_role_needs_confirmation_the_first_time_only() {
    let s = TenantSettings::defaults(T0);
    assert!(s.default_role.is_privileged());
    assert!(matches!(
        s.apply(guests(true, false), &cx(false)),
        Err(TenantError::Settings(
            SettingsError::PrivilegedDefaultRoleUnconfirmed {
                default_role: DefaultRole::Member
            }
        ))
    ));
    let on = s.apply(guests(true, true), &cx(false)).unwrap();
    assert!(on.next.anonymous.anonymous_signins_enabled);
    assert!(on.next.anonymous_ever_enabled);
    assert_eq!(on.changed, ["anonymous_signins_enabled"]);
    assert_eq!(on.event_type, "settings.anonymous.updated");
    // Off and on again: the first confirmation stands.
    let off = on.next.apply(guests(false, false), &cx(false)).unwrap();
    assert!(off.next.anonymous_ever_enabled);
    let again = off.next.apply(guests(true, false), &cx(false)).unwrap();
    assert!(again.next.anonymous.anonymous_signins_enabled);
    // Guests already on: changing the TTL needs no confirmation.
    let ttl = SettingsChange::Anonymous {
        enabled: Some(true),
        ttl_days: Some(60),
        confirmed_privileged: false,
    };
    let mut never = TenantSettings::defaults(T0);
    never.anonymous.anonymous_signins_enabled = true;
    assert_eq!(
        never.apply(ttl, &cx(false)).unwrap().changed,
        ["anonymous_user_ttl_days"]
    );
}

#[test]
fn only_the_reader_role_is_unprivileged() {
    assert!(!DefaultRole::Reader.is_privileged());
    assert!(DefaultRole::Member.is_privileged());
    assert!(DefaultRole::Admin.is_privileged());
    let mut s = TenantSettings::defaults(T0);
    s.default_role = DefaultRole::Reader;
    let on = s.apply(guests(true, false), &cx(false)).unwrap();
    assert!(on.next.anonymous.anonymous_signins_enabled);
    // Admin is as privileged as member.
    s.default_role = DefaultRole::Admin;
    assert!(s.apply(guests(true, false), &cx(false)).is_err());
}

#[test]
fn an_sms_cap_above_the_tier_needs_the_tenants_own_complete_provider_account() {
    let s = TenantSettings::defaults(T0);
    let cap = |n| SecurityPatch {
        sms_otp_monthly_cap: Some(n),
        ..Default::default()
    };
    // The tier's ceiling itself is allowed; one above is not.
    assert!(s.apply(security(cap(1_000)), &cx(false)).is_ok());
    assert!(matches!(
        s.apply(security(cap(1_001)), &cx(false)),
        Err(TenantError::Sms(SmsError::CapAboveTier {
            max: 1_000,
            tier: Tier::Free
        }))
    ));
    // The two identifiers without a stored token are not an account of the tenant's.
    let sids = SecurityPatch {
        byok_provider_account_sid: Some(Some(format!("AC{}", "a".repeat(32)))),
        byok_provider_messaging_service_sid: Some(Some(format!("MG{}", "b".repeat(32)))),
        ..cap(50_000)
    };
    assert!(matches!(
        s.apply(security(sids.clone()), &cx(false)),
        Err(TenantError::Sms(SmsError::CapAboveTier { .. }))
    ));
    // The token in the same patch completes it.
    let full = SecurityPatch {
        byok_provider_auth_token: Some(Some("t".repeat(32))),
        ..sids.clone()
    };
    let applied = s.apply(security(full), &cx(false)).unwrap();
    assert_eq!(applied.next.security.sms_otp_monthly_cap, 50_000);
    assert!(applied.byok_token_set);
    // A token stored earlier counts too.
    assert!(s.apply(security(sids.clone()), &cx(true)).is_ok());
    // Clearing the token in the patch that raises the cap leaves the platform paying.
    let clearing = SecurityPatch {
        byok_provider_auth_token: Some(None),
        ..sids
    };
    assert!(matches!(
        s.apply(security(clearing), &cx(true)),
        Err(TenantError::Sms(SmsError::CapAboveTier { .. }))
    ));
}

#[test]
fn the_byok_token_is_set_cleared_or_kept_and_clearing_none_is_no_change() {
    let s = TenantSettings::defaults(T0);
    let token = |t: Option<Option<String>>| SecurityPatch {
        byok_provider_auth_token: t,
        ..Default::default()
    };
    let set = s
        .apply(security(token(Some(Some("x".repeat(40))))), &cx(false))
        .unwrap();
    assert_eq!(set.byok_token, ByokToken::Set("x".repeat(40)));
    assert!(set.byok_token_set);
    assert_eq!(set.changed, ["byok_provider_auth_token"]);
    let clear = s.apply(security(token(Some(None))), &cx(true)).unwrap();
    assert_eq!(clear.byok_token, ByokToken::Clear);
    assert!(!clear.byok_token_set);
    assert_eq!(clear.changed, ["byok_provider_auth_token"]);
    let nothing = s.apply(security(token(Some(None))), &cx(false)).unwrap();
    assert_eq!(nothing.byok_token, ByokToken::Keep);
    assert!(nothing.changed.is_empty());
    let kept = s.apply(security(token(None)), &cx(true)).unwrap();
    assert_eq!(kept.byok_token, ByokToken::Keep);
    assert!(kept.byok_token_set);
}

#[test]
fn the_mfa_grace_starts_when_the_policy_becomes_required_and_later_writes_keep_it() {
    let s = TenantSettings::defaults(T0);
    let required = SecurityPatch {
        mfa_policy: Some(MfaPolicy::Required),
        ..Default::default()
    };
    let first = s.apply(security(required.clone()), &cx(false)).unwrap();
    assert_eq!(first.next.security.mfa_required_since, Some(NOW));
    assert_eq!(first.changed, ["mfa_policy"]);
    // Another write later, the policy named again or not: the moment stays.
    let later = ApplyContext {
        now: NOW + Duration::days(3),
        ..cx(false)
    };
    let again = first.next.apply(security(required), &later).unwrap();
    assert_eq!(again.next.security.mfa_required_since, Some(NOW));
    assert!(again.changed.is_empty());
    let other = SecurityPatch {
        magic_link_enabled: Some(false),
        ..Default::default()
    };
    let other = first.next.apply(security(other), &later).unwrap();
    assert_eq!(other.next.security.mfa_required_since, Some(NOW));
    // Settings written before the moment was kept: pinned to their last change.
    let mut legacy = TenantSettings::defaults(T0);
    legacy.security.mfa_policy = MfaPolicy::Required;
    let pinned = legacy
        .apply(
            security(SecurityPatch {
                email_otp_enabled: Some(false),
                ..Default::default()
            }),
            &later,
        )
        .unwrap();
    assert_eq!(pinned.next.security.mfa_required_since, Some(T0));
}

#[test]
fn an_empty_country_list_restores_the_platform_allowlist() {
    let s = TenantSettings::defaults(T0);
    let countries = |c: Option<Option<Vec<String>>>| SecurityPatch {
        sms_allowed_countries: c,
        ..Default::default()
    };
    let fr = s
        .apply(
            security(countries(Some(Some(vec!["FR".into()])))),
            &cx(false),
        )
        .unwrap();
    assert_eq!(
        fr.next.security.sms_allowed_countries,
        Some(vec!["FR".to_owned()])
    );
    assert_eq!(fr.changed, ["sms_allowed_countries"]);
    for restore in [Some(None), Some(Some(Vec::new()))] {
        let all = fr
            .next
            .apply(security(countries(restore)), &cx(false))
            .unwrap();
        assert_eq!(all.next.security.sms_allowed_countries, None);
        assert_eq!(all.changed, ["sms_allowed_countries"]);
    }
    // Already the full list: an empty one changes nothing.
    let same = s
        .apply(security(countries(Some(Some(Vec::new())))), &cx(false))
        .unwrap();
    assert!(same.changed.is_empty());
}

#[test]
fn a_change_that_changes_nothing_names_no_field_and_keeps_the_date() {
    let s = TenantSettings::defaults(T0);
    let same = s
        .apply(SettingsChange::DefaultRole(DefaultRole::Member), &cx(false))
        .unwrap();
    assert!(same.changed.is_empty());
    assert_eq!(same.next.updated_at, T0);
    assert_eq!(same.event_type, "settings.roles.updated");
    let reader = s
        .apply(SettingsChange::DefaultRole(DefaultRole::Reader), &cx(false))
        .unwrap();
    assert_eq!(reader.changed, ["default_role"]);
    assert_eq!(reader.next.updated_at, NOW);
    let domains = s
        .apply(
            SettingsChange::EmailDomains(EmailDomains {
                allowlist: Vec::new(),
                blocklist: vec!["spam.example".into()],
            }),
            &cx(false),
        )
        .unwrap();
    assert_eq!(domains.changed, ["blocklist"]);
}

#[test]
fn wallet_changes_name_their_fields_and_ignore_the_submitted_date() {
    let s = TenantSettings::defaults(T0);
    // The same configuration sent with another date is no change.
    let mut same = s.eudi.clone();
    same.updated_at = NOW + Duration::days(30);
    let applied = s
        .apply(SettingsChange::Eudi(Box::new(same)), &cx(false))
        .unwrap();
    assert!(applied.changed.is_empty());
    assert_eq!(applied.next.eudi.updated_at, T0);
    let mut on = s.eudi.clone();
    on.enabled = true;
    on.purpose = Some("Sign in".into());
    let applied = s
        .apply(SettingsChange::Eudi(Box::new(on)), &cx(false))
        .unwrap();
    let mut changed = applied.changed.clone();
    changed.sort();
    assert_eq!(changed, ["enabled", "purpose"]);
    assert_eq!(applied.next.eudi.updated_at, NOW);
    assert_eq!(applied.next.updated_at, NOW);

    let age = EudiAgeConfig {
        age_verification_enabled: true,
        supported_member_states: vec!["PL".into()],
        updated_at: T0,
    };
    let applied = s.apply(SettingsChange::EudiAge(age), &cx(false)).unwrap();
    assert_eq!(
        applied.changed,
        ["age_verification_enabled", "supported_member_states"]
    );
    assert_eq!(applied.next.eudi_age.updated_at, NOW);
}

#[test]
fn minor_settings_name_each_changed_field() {
    let s = TenantSettings::defaults(T0);
    let mut m = s.minors.clone();
    m.minor_protection_enabled = true;
    m.digital_consent_age = 13;
    let applied = s
        .apply(SettingsChange::Minors(Box::new(m)), &cx(false))
        .unwrap();
    assert_eq!(
        applied.changed,
        ["minor_protection_enabled", "digital_consent_age"]
    );
    assert_eq!(applied.next.minors.digital_consent_age, 13);
    let unchanged = s
        .apply(
            SettingsChange::Minors(Box::new(s.minors.clone())),
            &cx(false),
        )
        .unwrap();
    assert!(unchanged.changed.is_empty());
}

#[test]
fn redirects_go_only_to_the_tenants_exact_urls() {
    let urls = UrlSettings {
        site_url: Some("https://app.example/".into()),
        redirect_urls: vec!["https://app.example/welcome".into()],
    };
    assert!(urls.allows("https://app.example/"));
    assert!(urls.allows("https://app.example/welcome"));
    for other in [
        "https://app.example/welcome/../admin",
        "https://app.example/welcome?next=https://evil.example",
        "https://app.example",
        "HTTPS://APP.EXAMPLE/",
        "https://evil.example/",
        "",
    ] {
        assert!(!urls.allows(other), "{other}");
    }
    assert_eq!(
        urls.destination(Some("https://app.example/welcome"))
            .as_deref(),
        Some("https://app.example/welcome")
    );
    // A URL no longer (or never) allowed falls back to the site.
    assert_eq!(
        urls.destination(Some("https://evil.example/")).as_deref(),
        Some("https://app.example/")
    );
    assert_eq!(
        urls.destination(None).as_deref(),
        Some("https://app.example/")
    );
    let none = UrlSettings::default();
    assert!(!none.allows(""));
    assert_eq!(none.destination(Some("https://evil.example/")), None);
}

#[test]
fn the_edge_allows_any_origin_only_while_the_list_is_empty() {
    let mut s = TenantSettings::defaults(T0);
    assert!(EdgePolicy::of(&s).allows_origin("https://anything.example"));
    s.allowed_origins = vec!["https://app.example".into()];
    let edge = EdgePolicy::of(&s);
    assert!(edge.allows_origin("https://app.example"));
    assert!(!edge.allows_origin("https://app.example:443"));
    assert!(!edge.allows_origin("https://app.example.evil.example"));
    assert!(!edge.allows_origin("null"));
}

#[test]
fn settings_stored_before_newer_fields_read_with_safe_defaults() {
    let mut v = serde_json::to_value(TenantSettings::defaults(T0)).unwrap();
    let o = v.as_object_mut().unwrap();
    for newer in [
        "passkey_origins",
        "allowed_origins",
        "users",
        "urls",
        "dynamic_client_registration",
        "minors",
        "branding",
    ] {
        o.remove(newer).unwrap();
    }
    let sec = o["security"].as_object_mut().unwrap();
    sec.remove("require_email_verification").unwrap();
    sec.remove("mfa_required_since").unwrap();
    let s: TenantSettings = serde_json::from_value(v).unwrap();
    assert!(s.security.require_email_verification);
    assert!(!s.dynamic_client_registration);
    assert!(s.allowed_origins.is_empty());
    assert!(!s.minors.minor_protection_enabled);
    assert_eq!(s.branding, Branding::default());
    assert_eq!(s.users.default_locale, "en");
    assert!(s.users.self_service_deletion_enabled);
}

#[test]
fn a_brand_colour_must_carry_white_text_and_a_logo_must_be_https() {
    use rules::white_text_contrast;
    // The pages' own blue passes; white, a light yellow and a name do not.
    assert!(white_text_contrast("#1f4fd1").unwrap() >= 4.5);
    assert!((white_text_contrast("#ffffff").unwrap() - 1.0).abs() < 1e-9);
    assert!((white_text_contrast("#000000").unwrap() - 21.0).abs() < 1e-9);
    assert!(white_text_contrast("#ffcc00").unwrap() < 4.5);
    for bad in ["blue", "#12345", "#1234567", "1f4fd1", "#gggggg"] {
        assert_eq!(white_text_contrast(bad), None, "{bad}");
    }
    let change = |logo: &str, color: &str| {
        SettingsChange::Branding(Box::new(BrandingPatch {
            logo_url: Some(Some(logo.to_owned())),
            primary_color: Some(Some(color.to_owned())),
            terms_url: None,
            privacy_url: Some(Some("ftp://example.com/privacy".to_owned()))
                .filter(|_| logo.starts_with("http:")),
        }))
    };
    assert!(change("https://cdn.example/logo.svg", "#0B5CAD")
        .validate()
        .is_ok());
    let Err(TenantError::Settings(SettingsError::Invalid { fields })) =
        change("http://cdn.example/logo.svg", "#ffcc00").validate()
    else {
        panic!("refused");
    };
    assert!(fields.contains_key("logo_url") && fields.contains_key("primary_color"));
    assert!(fields.contains_key("privacy_url"), "{fields:?}");

    // Applied: the colour in lower case, each field named in the audit once it changes.
    let s = TenantSettings::defaults(T0);
    let applied = s
        .apply(
            change("https://cdn.example/logo.svg", "#0B5CAD"),
            &cx(false),
        )
        .unwrap();
    assert_eq!(
        applied.next.branding.primary_color.as_deref(),
        Some("#0b5cad")
    );
    assert_eq!(applied.changed, ["logo_url", "primary_color"]);
    assert_eq!(applied.event_type, "settings.branding.updated");
    assert_eq!(
        EdgePolicy::of(&applied.next).branding,
        applied.next.branding
    );
    let cleared = applied
        .next
        .apply(
            SettingsChange::Branding(Box::new(BrandingPatch {
                logo_url: Some(None),
                ..BrandingPatch::default()
            })),
            &cx(false),
        )
        .unwrap();
    assert_eq!(cleared.next.branding.logo_url, None);
    assert_eq!(cleared.changed, ["logo_url"]);
}
