//! Unit tests of the OAuth client registry: authentication, rotation, caps, registration.

use tessera_storage::sha256;

use super::*;
use crate::error::OAuthClientError;
use crate::{
    error::TenantError,
    tenant::{
        accounts::tests::tenant,
        audit::AuditContext,
        keys::KeyAlg,
        oauth::{ClientAuth, OAuthFailure},
        state::TenantState,
    },
};

fn new_client(client_type: ClientType, method: Option<TokenAuthMethod>) -> NewOAuthClient {
    NewOAuthClient {
        profile: OAuthClientProfile {
            name: "App".into(),
            description: None,
            logo_url: None,
            client_type,
            token_endpoint_auth_method: method,
            redirect_uris: vec!["https://app.example/cb".into()],
            post_logout_redirect_uris: Vec::new(),
            allowed_scopes: vec!["openid".into()],
            first_party: false,
        },
        id_token_signed_response_alg: KeyAlg::ES256,
    }
}

/// A tenant in a fresh directory (kept while the tenant is used).
fn fresh() -> (tempfile::TempDir, TenantState) {
    let dir = tempfile::tempdir().unwrap();
    let t = tenant(dir.path());
    (dir, t)
}

/// A client of `client_type` an owner registered without a method.
fn create(t: &mut TenantState, client_type: ClientType, ctx: &AuditContext) -> IssuedClient {
    t.oauth_clients
        .oauth_client_create(&mut t.cx, new_client(client_type, None), ctx)
        .unwrap()
}

fn auth(client_id: &str, secret: Option<&str>, method: TokenAuthMethod) -> ClientAuth {
    ClientAuth {
        client_id: client_id.into(),
        secret: secret.map(str::to_owned),
        method,
    }
}

fn authenticate(t: &TenantState, a: &ClientAuth) -> Result<String, OAuthFailure> {
    t.cx.cells
        .oauth_clients
        .load()
        .authenticate(a)
        .map(|c| c.client_id.clone())
}

#[test]
fn auth_method_names_round_trip_and_unknown_ones_are_refused() {
    for m in [
        TokenAuthMethod::ClientSecretBasic,
        TokenAuthMethod::ClientSecretPost,
        TokenAuthMethod::None,
    ] {
        assert_eq!(TokenAuthMethod::parse(m.as_str()), Some(m));
        assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
    }
    for bad in ["private_key_jwt", "client_secret_jwt", "", "NONE"] {
        assert_eq!(TokenAuthMethod::parse(bad), None, "{bad}");
    }
}

#[tokio::test]
async fn a_confidential_client_authenticates_only_with_its_secret_by_a_method_it_takes() {
    let (_dir, mut t) = fresh();
    let ctx = AuditContext::default();
    let issued = create(&mut t, ClientType::Confidential, &ctx);
    let id = issued.record.client_id.clone();
    assert!(id.starts_with("tc_") && id.len() == 3 + 32, "{id}");
    let secret = issued.client_secret.unwrap();
    assert!(secret.starts_with("tcs_"));
    assert_eq!(issued.record.secret_prefix.as_deref(), Some(&secret[..12]));
    // Only the hash is kept.
    assert_eq!(issued.record.secret_hash, Some(sha256(secret.as_bytes())));
    let stored = t.cx.oauth_client(&id).unwrap();
    assert!(!serde_json::to_string(&stored).unwrap().contains(&secret));
    // Registered without a method: either secret method.
    for m in [
        TokenAuthMethod::ClientSecretBasic,
        TokenAuthMethod::ClientSecretPost,
    ] {
        assert_eq!(
            authenticate(&t, &auth(&id, Some(&secret), m)),
            Ok(id.clone())
        );
    }
    for refused in [
        auth(&id, Some(&secret), TokenAuthMethod::None),
        auth(&id, None, TokenAuthMethod::ClientSecretBasic),
        auth(&id, Some("tcs_wrong"), TokenAuthMethod::ClientSecretBasic),
        auth(&id, Some(""), TokenAuthMethod::ClientSecretPost),
        auth(
            "tc_unknown",
            Some(&secret),
            TokenAuthMethod::ClientSecretBasic,
        ),
    ] {
        assert_eq!(
            authenticate(&t, &refused),
            Err(OAuthFailure::InvalidClient),
            "{refused:?}"
        );
    }
}

#[tokio::test]
async fn a_client_registered_with_a_method_takes_that_one_only() {
    let (_dir, mut t) = fresh();
    let issued = t
        .oauth_clients
        .oauth_client_create(
            &mut t.cx,
            new_client(
                ClientType::Confidential,
                Some(TokenAuthMethod::ClientSecretPost),
            ),
            &AuditContext::default(),
        )
        .unwrap();
    let id = issued.record.client_id.as_str();
    let secret = issued.client_secret.as_deref();
    assert!(authenticate(&t, &auth(id, secret, TokenAuthMethod::ClientSecretPost)).is_ok());
    assert_eq!(
        authenticate(&t, &auth(id, secret, TokenAuthMethod::ClientSecretBasic)),
        Err(OAuthFailure::InvalidClient)
    );
}

#[tokio::test]
async fn a_public_client_has_no_secret_and_presents_none() {
    let (_dir, mut t) = fresh();
    let ctx = AuditContext::default();
    let issued = create(&mut t, ClientType::Public, &ctx);
    assert!(issued.client_secret.is_none());
    assert!(issued.record.secret_hash.is_none());
    let id = issued.record.client_id.as_str();
    assert!(authenticate(&t, &auth(id, None, TokenAuthMethod::None)).is_ok());
    for refused in [
        auth(id, Some("anything"), TokenAuthMethod::None),
        auth(id, None, TokenAuthMethod::ClientSecretBasic),
        auth(id, Some("anything"), TokenAuthMethod::ClientSecretPost),
    ] {
        assert_eq!(authenticate(&t, &refused), Err(OAuthFailure::InvalidClient));
    }
    assert!(matches!(
        t.oauth_clients
            .oauth_client_rotate_secret(&mut t.cx, id, &ctx),
        Err(TenantError::OAuthClient(OAuthClientError::Public))
    ));
}

#[tokio::test]
async fn a_rotated_secret_replaces_the_old_one_at_once_and_a_deleted_client_is_gone() {
    let (_dir, mut t) = fresh();
    let ctx = AuditContext::default();
    let issued = create(&mut t, ClientType::Confidential, &ctx);
    let id = issued.record.client_id.clone();
    let old = issued.client_secret.unwrap();
    let rotated = t
        .oauth_clients
        .oauth_client_rotate_secret(&mut t.cx, &id, &ctx)
        .unwrap();
    let new = rotated.client_secret.unwrap();
    assert_ne!(old, new);
    assert!(rotated.record.secret_rotated_at.is_some());
    let basic = TokenAuthMethod::ClientSecretBasic;
    assert_eq!(
        authenticate(&t, &auth(&id, Some(&old), basic)),
        Err(OAuthFailure::InvalidClient)
    );
    assert!(authenticate(&t, &auth(&id, Some(&new), basic)).is_ok());
    t.oauth_clients
        .oauth_client_delete(&mut t.cx, &id, &ctx)
        .unwrap();
    assert_eq!(
        authenticate(&t, &auth(&id, Some(&new), basic)),
        Err(OAuthFailure::InvalidClient)
    );
    assert!(matches!(t.cx.oauth_client(&id), Err(TenantError::NotFound)));
}

#[tokio::test]
async fn verification_is_first_party_then_attested_and_attesting_again_keeps_the_date() {
    let (_dir, mut t) = fresh();
    let ctx = AuditContext::default();
    let id = create(&mut t, ClientType::Public, &ctx).record.client_id;
    assert_eq!(t.cx.oauth_client(&id).unwrap().verification(), "unverified");
    let first = t
        .oauth_clients
        .oauth_client_attest(&mut t.cx, &id, &ctx)
        .unwrap();
    assert_eq!(first.verification(), "attested");
    let again = t
        .oauth_clients
        .oauth_client_attest(&mut t.cx, &id, &ctx)
        .unwrap();
    assert_eq!(again.attested_at, first.attested_at);
    let patch = OAuthClientPatch {
        first_party: Some(true),
        ..Default::default()
    };
    let own = t
        .oauth_clients
        .oauth_client_update(&mut t.cx, &id, patch, &ctx)
        .unwrap();
    assert_eq!(own.verification(), "first_party");
}

#[tokio::test]
async fn an_update_that_changes_nothing_writes_nothing() {
    let (_dir, mut t) = fresh();
    let ctx = AuditContext::default();
    let created = create(&mut t, ClientType::Public, &ctx).record;
    let events = |t: &TenantState| t.cx.list_audit(None, 100, None).unwrap().events.len();
    let before = events(&t);
    let same = OAuthClientPatch {
        name: Some("App".into()),
        redirect_uris: Some(created.profile.redirect_uris.clone()),
        id_token_signed_response_alg: Some(KeyAlg::ES256),
        ..Default::default()
    };
    let unchanged = t
        .oauth_clients
        .oauth_client_update(&mut t.cx, &created.client_id, same, &ctx)
        .unwrap();
    assert_eq!(unchanged.updated_at, created.updated_at);
    assert_eq!(events(&t), before);
    let moved = OAuthClientPatch {
        redirect_uris: Some(vec!["https://app.example/cb2".into()]),
        ..Default::default()
    };
    let changed = t
        .oauth_clients
        .oauth_client_update(&mut t.cx, &created.client_id, moved, &ctx)
        .unwrap();
    assert_eq!(changed.profile.redirect_uris, ["https://app.example/cb2"]);
    assert_eq!(events(&t), before + 1);
    let event = &t.cx.list_audit(None, 1, None).unwrap().events[0].1;
    assert_eq!(event.event_type, "oauth_client.updated");
    assert_eq!(
        event.metadata["changed"],
        serde_json::json!(["redirect_uris"])
    );
    // The edge sees the new URI list.
    let published = t.cx.cells.oauth_clients.load();
    assert_eq!(
        published
            .get(&created.client_id)
            .unwrap()
            .profile
            .redirect_uris,
        ["https://app.example/cb2"]
    );
}

#[tokio::test]
async fn rs256_id_tokens_need_the_tenants_rsa_key_and_older_clients_stay_es256() {
    let (_dir, mut t) = fresh();
    let ctx = AuditContext::default();
    let mut rs = new_client(ClientType::Public, None);
    rs.id_token_signed_response_alg = KeyAlg::RS256;
    assert!(matches!(
        t.oauth_clients.oauth_client_create(&mut t.cx, rs, &ctx),
        Err(TenantError::Internal(_))
    ));
    assert!(t.oauth_clients.oauth_clients(&t.cx).unwrap().is_empty());
    let mut older = create(&mut t, ClientType::Public, &ctx).record;
    assert_eq!(older.id_token_alg(), KeyAlg::ES256);
    older.id_token_signed_response_alg = None;
    assert_eq!(older.id_token_alg(), KeyAlg::ES256);
}

#[tokio::test]
async fn owners_clients_and_self_registered_ones_have_caps_of_their_own() {
    let (_dir, mut t) = fresh();
    let ctx = AuditContext::default();
    let make = |t: &mut TenantState, dynamic| {
        t.oauth_clients.oauth_client_make(
            &mut t.cx,
            new_client(ClientType::Public, None),
            dynamic,
            &ctx,
        )
    };
    // As many self-registered clients as owners may have: the owners keep their places.
    for _ in 0..MAX_OAUTH_CLIENTS {
        assert!(make(&mut t, true).unwrap().record.dynamic);
    }
    for _ in 0..MAX_OAUTH_CLIENTS {
        assert!(!make(&mut t, false).unwrap().record.dynamic);
    }
    assert!(matches!(
        make(&mut t, false),
        Err(TenantError::OAuthClient(OAuthClientError::Limit))
    ));
    // The owners' full registry takes no self-registered place either.
    for _ in MAX_OAUTH_CLIENTS..MAX_DYNAMIC_CLIENTS {
        make(&mut t, true).unwrap();
    }
    assert!(matches!(
        make(&mut t, true),
        Err(TenantError::OAuthClient(OAuthClientError::Limit))
    ));
    assert_eq!(
        t.oauth_clients.oauth_clients(&t.cx).unwrap().len(),
        MAX_OAUTH_CLIENTS + MAX_DYNAMIC_CLIENTS
    );
}

#[tokio::test]
async fn dynamic_registration_needs_the_setting_a_public_client_and_a_quiet_address() {
    let (_dir, mut t) = fresh();
    let ctx = AuditContext::default();
    let ip: std::net::IpAddr = "2001:db8:1:2::1".parse().unwrap();
    let register = |kind| OAuthClientCmd::Register(new_client(kind, None), ip);
    assert!(matches!(
        t.oauth_clients
            .oauth_client_cmd(&mut t.cx, register(ClientType::Public), &ctx),
        Err(TenantError::NotFound)
    ));
    t.cx.settings.dynamic_client_registration = true;
    assert!(matches!(
        t.oauth_clients
            .oauth_client_cmd(&mut t.cx, register(ClientType::Confidential), &ctx),
        Err(TenantError::NotFound)
    ));
    let per_hour = t.cx.runtime.agents.registrations_per_ip_hourly;
    for _ in 0..per_hour {
        assert!(matches!(
            t.oauth_clients
                .oauth_client_cmd(&mut t.cx, register(ClientType::Public), &ctx),
            Ok(OAuthClientAnswer::Issued(IssuedClient {
                client_secret: None,
                ..
            }))
        ));
    }
    // The same /64 is the same address.
    let neighbour: std::net::IpAddr = "2001:db8:1:2::ffff".parse().unwrap();
    assert!(matches!(
        t.oauth_clients.oauth_client_cmd(
            &mut t.cx,
            OAuthClientCmd::Register(new_client(ClientType::Public, None), neighbour),
            &ctx
        ),
        Err(TenantError::RateLimited { .. })
    ));
    let elsewhere: std::net::IpAddr = "2001:db8:1:3::1".parse().unwrap();
    assert!(t
        .oauth_clients
        .oauth_client_cmd(
            &mut t.cx,
            OAuthClientCmd::Register(new_client(ClientType::Public, None), elsewhere),
            &ctx
        )
        .is_ok());
}

#[tokio::test]
async fn an_owners_client_and_a_self_registered_one_are_marked_as_such() {
    let (_dir, mut t) = fresh();
    t.cx.settings.dynamic_client_registration = true;
    let ctx = AuditContext::default();
    let issued = |answer| match answer {
        Ok(OAuthClientAnswer::Issued(issued)) => issued.record,
        _ => panic!("no client issued"),
    };
    let owners = issued(t.oauth_clients.oauth_client_cmd(
        &mut t.cx,
        OAuthClientCmd::Create(new_client(ClientType::Public, None)),
        &ctx,
    ));
    assert!(!owners.dynamic);
    let ip: std::net::IpAddr = "192.0.2.7".parse().unwrap();
    let registered = issued(t.oauth_clients.oauth_client_cmd(
        &mut t.cx,
        OAuthClientCmd::Register(new_client(ClientType::Public, None), ip),
        &ctx,
    ));
    assert!(registered.dynamic);
}

#[test]
fn a_stored_client_keeps_its_profile_fields_at_the_top_level() {
    let (_dir, mut t) = fresh();
    let issued = create(&mut t, ClientType::Confidential, &AuditContext::default());
    let stored = serde_json::to_value(&issued.record).unwrap();
    for key in [
        "client_id",
        "name",
        "redirect_uris",
        "allowed_scopes",
        "first_party",
    ] {
        assert!(stored.get(key).is_some(), "{key} in {stored}");
    }
    assert!(stored.get("profile").is_none());
    // A record written before it had `post_logout_redirect_uris` reads back with none.
    let mut old = stored.clone();
    old.as_object_mut()
        .unwrap()
        .remove("post_logout_redirect_uris");
    let back: OAuthClientRecord = serde_json::from_value(old).unwrap();
    assert_eq!(back.profile.name, issued.record.profile.name);
    assert!(back.profile.post_logout_redirect_uris.is_empty());
}
