//! The admin socket server.

use std::{os::unix::fs::PermissionsExt, path::Path, time::Duration};
use tessera_actors::tenant::{KeysMsg, UsersMsg};

use serde_json::{json, Value};
use tessera_actors::{
    directory::{is_valid_slug, RotatedKey, TenantDetails},
    is_argon2id_phc,
    policy::normalize_email,
    records::Tier,
    tenant::{
        audit::AuditContext,
        eudi::{EudiAnswer, EudiCmd, VerifierIdentity},
        import::{ImportedUser, MAX_IMPORT_BATCH},
        messages::{UserAction, UserQuery, UserStatus},
        oauth_clients::OAuthClientCmd,
    },
    CallError, DirectoryMsg, Password, TenantHandle, TenantMsg,
};
use tessera_eudi::x509;
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::{UnixListener, UnixStream},
};

use super::protocol::{AdminError, AdminRequest, AdminResponse, ImportLine};
use crate::{
    app::{AppState, TenantCreation},
    config::{MailTransport, SmsTransport},
    delivery::outbox,
    http::{
        catalog::CatalogEntry,
        dashboard::{
            audit_in,
            oauth_clients::{one, registry, OAuthClientResponse},
        },
        error::{is_email, len_between, mailer_accepts, ApiError, FieldErrors},
        fields::is_app_url,
        onboarding::SignupResponse,
    },
};

/// Longest request line accepted.
const MAX_REQUEST: u64 = 64 * 1024;

/// Binds the socket (replacing a stale one: the data-directory lock proves no other server
/// owns it) and restricts it to its owner.
pub fn bind(path: &Path) -> std::io::Result<UnixListener> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Serves admin connections until the task is aborted.
pub async fn run(listener: UnixListener, state: AppState) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let state = state.clone();
                tokio::spawn(async move {
                    if let Err(e) = serve_one(stream, state).await {
                        tracing::warn!(error = %e, "admin connection failed");
                    }
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "admin accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn serve_one(stream: UnixStream, state: AppState) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    BufReader::new(read.take(MAX_REQUEST))
        .read_line(&mut line)
        .await?;
    let response = match serde_json::from_str::<AdminRequest>(&line) {
        Ok(req) => {
            let command = command_name(&req);
            let out = dispatch(req, &state).await;
            tracing::info!(command, ok = out.is_ok(), "admin command");
            out
        }
        Err(e) => Err(ApiError::invalid_field("command", e.to_string())),
    };
    let body = match response {
        Ok(result) => AdminResponse {
            ok: true,
            result: Some(result),
            error: None,
        },
        Err(e) => AdminResponse {
            ok: false,
            result: None,
            error: Some(AdminError {
                code: e.code,
                message: e.message,
                details: e.details,
            }),
        },
    };
    let mut bytes = serde_json::to_vec(&body).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    write.write_all(&bytes).await?;
    write.shutdown().await
}

fn command_name(req: &AdminRequest) -> &'static str {
    match req {
        AdminRequest::TenantCreate { .. } => "tenant create",
        AdminRequest::TenantList => "tenant list",
        AdminRequest::DashboardResetMfa { .. } => "dashboard reset-mfa",
        AdminRequest::TenantShow { .. } => "tenant show",
        AdminRequest::TenantSetTier { .. } => "tenant set-tier",
        AdminRequest::ApikeyRotate { .. } => "apikey rotate",
        AdminRequest::KeysRotate { .. } => "keys rotate",
        AdminRequest::OauthClientAttest { .. } => "oauth-client attest",
        AdminRequest::ResourceRegister { .. } => "resource register",
        AdminRequest::ScopeList { .. } => "scope list",
        AdminRequest::ScopeApprove { .. } => "scope approve",
        AdminRequest::TenantSetLimits { .. } => "tenant set-limits",
        AdminRequest::PurgeRun { .. } => "purge run",
        AdminRequest::FaultPanicTenant { .. } => "fault panic-tenant",
        AdminRequest::FaultStallTenant { .. } => "fault stall-tenant",
        AdminRequest::FaultHangStorage => "fault hang-storage",
        AdminRequest::OutboxList { .. } => "outbox list",
        AdminRequest::OutboxShow { .. } => "outbox show",
        AdminRequest::EudiSetVerifier { .. } => "eudi set-verifier-cert",
        AdminRequest::EudiDevCert { .. } => "eudi dev-cert",
        AdminRequest::EudiShow { .. } => "eudi show",
        AdminRequest::UserImport { .. } => "user import",
        AdminRequest::UserList { .. } => "user list",
        AdminRequest::UserShow { .. } => "user show",
        AdminRequest::UserBlock { block: true, .. } => "user block",
        AdminRequest::UserBlock { block: false, .. } => "user unblock",
        AdminRequest::UserDelete { .. } => "user delete",
        AdminRequest::UserTraces { .. } => "user traces",
        AdminRequest::Backup { .. } => "backup",
        AdminRequest::MasterKeyRotate { .. } => "master-key rotate",
    }
}

/// The tenant a fault drill targets, when drills are enabled.
fn fault_target(state: &AppState, slug: &str) -> Result<TenantHandle, ApiError> {
    if !state.config.testing.fault_injection {
        return Err(fault_injection_disabled());
    }
    tenant_of(state, slug)
}

fn fault_injection_disabled() -> ApiError {
    ApiError::new(
        axum::http::StatusCode::FORBIDDEN,
        "admin/fault_injection_disabled",
        "fault injection is off; set [testing] fault_injection = true",
    )
}

fn tenant_of(state: &AppState, slug: &str) -> Result<TenantHandle, ApiError> {
    state
        .directory
        .tenant_for_slug(slug)
        .ok_or_else(|| ApiError::not_found("tenant"))
}

/// A user id; a malformed one is answered like one that exists nowhere.
fn user_id(id: &str) -> Result<uuid::Uuid, ApiError> {
    uuid::Uuid::parse_str(id).map_err(|_| ApiError::not_found("user"))
}

/// The audit context of an operator's command.
fn cli_context() -> AuditContext {
    AuditContext {
        actor: None,
        ip_hash: None,
        ua_family: Some("admin-cli".into()),
        management_key: None,
        ua_hash: None,
    }
}

fn to_value<T: serde::Serialize>(v: T) -> Result<Value, ApiError> {
    serde_json::to_value(v).map_err(ApiError::internal)
}

/// Checks every line of an import batch, naming each bad field by its index.
fn import_batch(users: Vec<ImportLine>) -> Result<Vec<ImportedUser>, ApiError> {
    let mut e = FieldErrors::new();
    if users.len() > MAX_IMPORT_BATCH {
        e.check(
            "users",
            false,
            format!("at most {MAX_IMPORT_BATCH} users a batch"),
        );
    }
    let mut out = Vec::with_capacity(users.len());
    for (i, u) in users.into_iter().enumerate() {
        let email =
            normalize_email(&u.email).filter(|n| is_email(u.email.trim()) && mailer_accepts(n));
        e.check(
            &format!("users[{i}].email"),
            email.is_some(),
            "must be a valid e-mail address",
        );
        e.check(
            &format!("users[{i}].password_hash"),
            is_argon2id_phc(&u.password_hash),
            "must be an Argon2id (v=19) PHC string",
        );
        if let Some(email) = email {
            out.push(ImportedUser {
                email,
                password_hash: u.password_hash,
                email_verified: u.email_verified,
            });
        }
    }
    e.finish()?;
    Ok(out)
}

async fn dispatch(req: AdminRequest, state: &AppState) -> Result<Value, ApiError> {
    let dir = &state.directory;
    match req {
        AdminRequest::TenantCreate {
            name,
            slug,
            owner_email,
            owner_password,
        } => {
            let name = name.trim().to_owned();
            let mut e = FieldErrors::new();
            e.check("name", len_between(&name, 2, 50), "must be 2-50 characters");
            if let Some(s) = &slug {
                e.check(
                    "slug",
                    is_valid_slug(s),
                    "must be 2-50 of a-z, 0-9 and '-', not starting or ending with '-'",
                );
            }
            if let Some(email) = &owner_email {
                e.check(
                    "owner_email",
                    is_email(email),
                    "must be a valid e-mail address",
                );
                e.check(
                    "owner_password",
                    owner_password
                        .as_deref()
                        .is_some_and(|p| len_between(p, 12, 128)),
                    "must be 12-128 characters (read from stdin)",
                );
            }
            e.finish()?;
            let owner =
                owner_email.map(|email| (email, Password::new(owner_password.unwrap_or_default())));
            let outcome = state
                .create_tenant(TenantCreation {
                    name,
                    slug,
                    owner,
                    idempotency: None,
                })
                .await?;
            to_value(SignupResponse::from(outcome.created))
        }
        AdminRequest::UserImport { tenant, users } => {
            let users = import_batch(users)?;
            let handle = dir
                .tenant_for_slug(&tenant)
                .ok_or_else(|| ApiError::not_found("tenant"))?;
            let ctx = cli_context();
            let outcome = handle
                .call(|reply| UsersMsg::ImportUsers {
                    users: users.clone(),
                    ctx: ctx.clone(),
                    reply,
                })
                .await?;
            to_value(outcome)
        }
        AdminRequest::UserList {
            tenant,
            email,
            status,
            limit,
            cursor,
        } => {
            let handle = tenant_of(state, &tenant)?;
            let mut e = FieldErrors::new();
            let status = status.map(|s| UserStatus::parse(&s));
            e.check(
                "status",
                status.is_none_or(|s| s.is_some()),
                "must be active, blocked, held, anonymous or unverified",
            );
            let limit = limit.unwrap_or(50);
            e.check("limit", (1..=200).contains(&limit), "must be 1-200");
            let cursor = cursor.map(|c| hex::decode(c).ok().filter(|b| b.len() == 24));
            e.check(
                "cursor",
                cursor.as_ref().is_none_or(Option::is_some),
                "is not a cursor of this list",
            );
            e.finish()?;
            let query = UserQuery {
                email_prefix: email.map(|p| p.trim().to_lowercase()),
                status: status.flatten(),
                cursor: cursor.flatten(),
                limit,
                ..UserQuery::default()
            };
            let page = handle
                .call(|reply| UsersMsg::ListUsers {
                    query: query.clone(),
                    reply,
                })
                .await?;
            Ok(json!({
                "users": page.users,
                "next_cursor": page.next_cursor.map(hex::encode),
            }))
        }
        AdminRequest::UserShow { tenant, id } => {
            let handle = tenant_of(state, &tenant)?;
            let id = user_id(&id)?;
            to_value(handle.call(|reply| UsersMsg::GetUser { id, reply }).await?)
        }
        AdminRequest::UserBlock { tenant, id, block } => {
            let handle = tenant_of(state, &tenant)?;
            let id = user_id(&id)?;
            let action = if block {
                UserAction::Block
            } else {
                UserAction::Unblock
            };
            let detail = handle
                .call(|reply| UsersMsg::ActOnUser {
                    id,
                    action,
                    ctx: cli_context(),
                    reply,
                })
                .await?;
            to_value(detail)
        }
        AdminRequest::UserDelete { tenant, id } => {
            let handle = tenant_of(state, &tenant)?;
            let id = user_id(&id)?;
            handle
                .call(|reply| UsersMsg::DeleteUser {
                    id,
                    ctx: cli_context(),
                    reply,
                })
                .await?;
            Ok(json!({ "deleted": id }))
        }
        AdminRequest::UserTraces { tenant, needles } => {
            let handle = tenant_of(state, &tenant)?;
            let mut bytes: Vec<Vec<u8>> = Vec::new();
            let mut ids = Vec::new();
            for n in needles {
                if let Ok(id) = uuid::Uuid::parse_str(&n) {
                    ids.push(id);
                    bytes.push(id.as_bytes().to_vec());
                    bytes.push(id.to_string().into_bytes());
                } else {
                    bytes.push(n.into_bytes());
                }
            }
            let traces = handle
                .call(|reply| UsersMsg::UserTraces {
                    needles: bytes.clone(),
                    reply,
                })
                .await?;
            // What each user named by id still holds of each kind of credential.
            let mut credentials = serde_json::Map::new();
            for id in ids {
                let held = handle
                    .call(|reply| UsersMsg::UserCredentials { id, reply })
                    .await?;
                credentials.insert(id.to_string(), json!(held));
            }
            Ok(json!({ "traces": traces, "credentials": credentials }))
        }
        AdminRequest::TenantList => {
            let tenants: Vec<TenantDetails> = dir
                .call(|reply| DirectoryMsg::ListTenants { reply })
                .await?;
            Ok(json!({ "tenants": tenants }))
        }
        AdminRequest::TenantShow { slug } => to_value(
            dir.request(|reply| DirectoryMsg::ShowTenant { slug, reply })
                .await?,
        ),
        AdminRequest::TenantSetTier { slug, tier } => {
            let tier = Tier::parse(&tier).ok_or_else(|| {
                ApiError::invalid_field("tier", "must be free, pro or enterprise")
            })?;
            to_value(
                dir.request(|reply| DirectoryMsg::SetTier { slug, tier, reply })
                    .await?,
            )
        }
        AdminRequest::ApikeyRotate { slug } => {
            let target = slug.clone();
            let rotated: RotatedKey = dir
                .request(|reply| DirectoryMsg::RotateApiKey {
                    slug: target,
                    reply,
                })
                .await?;
            let ctx = cli_context();
            crate::http::dashboard::audit_in(
                state,
                vec![slug],
                "api_key.rotated",
                &ctx,
                Value::Null,
            )
            .await;
            to_value(rotated)
        }
        AdminRequest::TenantSetLimits { slug, mau_cap } => to_value(
            dir.request(|reply| DirectoryMsg::SetLimits {
                slug,
                mau_cap,
                reply,
            })
            .await?,
        ),
        AdminRequest::PurgeRun {
            tenant,
            as_of,
            dry_run,
        } => {
            let as_of = match as_of {
                None => time::OffsetDateTime::now_utc(),
                Some(s) => {
                    time::OffsetDateTime::parse(&s, &time::format_description::well_known::Rfc3339)
                        .map_err(|_| {
                            ApiError::invalid_field("as_of", "must be an RFC 3339 timestamp")
                        })?
                }
            };
            to_value(state.purge(tenant.as_deref(), as_of, dry_run).await?)
        }
        AdminRequest::KeysRotate { slug } => {
            let tenant = state
                .directory
                .tenant_for_slug(&slug)
                .ok_or_else(|| ApiError::not_found("tenant"))?;
            // A tenant with an RS256 key gets a new one too, made here, off its actor.
            let rsa_pkcs8 = if tenant.keys().await?.has_rsa() {
                Some(
                    tokio::task::spawn_blocking(tessera_actors::tenant::keys::generate_rsa_pkcs8)
                        .await
                        .map_err(ApiError::internal)??,
                )
            } else {
                None
            };
            to_value(
                tenant
                    .call(|reply| KeysMsg::RotateSigningKey {
                        rsa_pkcs8: rsa_pkcs8.clone(),
                        reply,
                    })
                    .await?,
            )
        }
        AdminRequest::ResourceRegister { tenant, name, uri } => {
            let handle = tenant_of(state, &tenant)?;
            let mut e = FieldErrors::new();
            let name = name.trim().to_owned();
            e.check("name", len_between(&name, 1, 64), "must be 1-64 characters");
            e.check(
                "uri",
                is_app_url(&uri),
                "must be an absolute https URL (http on 127.0.0.1 or localhost) without user info or fragment, at most 2048 characters",
            );
            e.finish()?;
            let id = handle.id;
            let record = state
                .directory
                .request(|reply| DirectoryMsg::RegisterResource {
                    tenant: id,
                    name: name.clone(),
                    uri: uri.clone(),
                    reply,
                })
                .await?;
            let body = json!({
                "id": record.id,
                "tenant_id": record.tenant,
                "tenant": tenant,
                "name": record.name,
                "uri": record.uri,
                "created_at": record.created_at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default(),
            });
            audit_in(
                state,
                vec![tenant],
                "resource.registered",
                &cli_context(),
                body.clone(),
            )
            .await;
            Ok(body)
        }
        AdminRequest::ScopeList { pending } => {
            let scopes = state
                .directory
                .request(|reply| DirectoryMsg::CatalogScopes {
                    pending_only: pending,
                    reply,
                })
                .await?;
            let data: Vec<Value> = scopes
                .into_iter()
                .map(|s| {
                    let tenant = s.tenant;
                    let mut v = to_value(CatalogEntry::from(s)).unwrap_or(Value::Null);
                    v["tenant_id"] = json!(tenant);
                    v
                })
                .collect();
            Ok(json!({ "data": data }))
        }
        AdminRequest::ScopeApprove {
            resource_id,
            scope_id,
        } => {
            let not_found = || ApiError::not_found("catalog entry");
            let resource = uuid::Uuid::parse_str(&resource_id).map_err(|_| not_found())?;
            let scope = uuid::Uuid::parse_str(&scope_id).map_err(|_| not_found())?;
            let (entry, approved_now) = state
                .directory
                .request(|reply| DirectoryMsg::ApproveCatalogScope {
                    resource,
                    scope,
                    reply,
                })
                .await
                .map_err(|e| match ApiError::from(e) {
                    e if e.status == axum::http::StatusCode::NOT_FOUND => not_found(),
                    e => e,
                })?;
            if approved_now {
                if let Some(t) = state.directory.tenant_by_id(entry.tenant) {
                    let slug = t.slug;
                    let meta = json!({
                        "resource_id": entry.resource_id,
                        "scope_id": entry.id,
                        "scope_name": entry.scope_name,
                    });
                    audit_in(
                        state,
                        vec![slug],
                        "resource_scope.approved",
                        &cli_context(),
                        meta,
                    )
                    .await;
                }
            }
            to_value(CatalogEntry::from(entry))
        }
        AdminRequest::OauthClientAttest { slug, client_id } => {
            let tenant = tenant_of(state, &slug)?;
            let attest = OAuthClientCmd::Attest(client_id);
            let client = one(registry(&tenant, &cli_context(), attest).await?)?;
            to_value(OAuthClientResponse::from(client))
        }
        AdminRequest::FaultPanicTenant { slug } => {
            let tenant = fault_target(state, &slug)?;
            match tenant.call(|reply| TenantMsg::InjectPanic { reply }).await {
                Err(CallError::Unavailable) => Ok(json!({ "panicked": true, "tenant": slug })),
                Ok(()) => Ok(json!({ "panicked": false, "tenant": slug })),
                Err(e) => Err(e.into()),
            }
        }
        AdminRequest::FaultStallTenant { slug, millis } => {
            let tenant = fault_target(state, &slug)?;
            let millis = millis.min(60_000);
            // The stall outlasts the actor timeout: the caller is answered "unavailable" while
            // the mailbox stays held, which is the point of the drill.
            match tenant
                .call(|reply| TenantMsg::InjectStall { millis, reply })
                .await
            {
                Ok(()) | Err(CallError::Unavailable) => {
                    Ok(json!({ "stalled_ms": millis, "tenant": slug }))
                }
                Err(e) => Err(e.into()),
            }
        }
        AdminRequest::FaultHangStorage => {
            if !state.config.testing.fault_injection {
                return Err(fault_injection_disabled());
            }
            tessera_storage::watch::hang_next_apply();
            Ok(json!({
                "armed": true,
                "watchdog_secs": state.config.storage.watchdog_secs,
            }))
        }
        AdminRequest::EudiSetVerifier {
            slug,
            key_pem,
            chain_pem,
        } => {
            let tenant = tenant_of(state, &slug)?;
            let key = x509::signing_key_from_pem(&key_pem)
                .map_err(|e| ApiError::invalid_field("key_file", e.to_string()))?;
            let mut chain = x509::certs_from_pem(&chain_pem)
                .map_err(|e| ApiError::invalid_field("chain_file", e.to_string()))?;
            // Wallets take `x5c` without the root: a root at the end of the file is dropped.
            while chain.len() > 1 && chain.last().is_some_and(|c| x509::is_self_signed(c)) {
                chain.pop();
            }
            let now = time::OffsetDateTime::now_utc().unix_timestamp();
            let not_after = x509::check_verifier_chain(&chain, &key, now)
                .map_err(|e| ApiError::invalid_field("chain_file", e.to_string()))?;
            let pkcs8 = key.to_pkcs8().map_err(ApiError::internal)?;
            let v = set_verifier(&tenant, pkcs8, chain, not_after, false).await?;
            Ok(verifier_json(&v, None))
        }
        AdminRequest::EudiDevCert { slug, days } => {
            let tenant = tenant_of(state, &slug)?;
            if !(1..=365).contains(&days) {
                return Err(ApiError::invalid_field("days", "must be 1-365"));
            }
            let host = url::Url::parse(&state.base_url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_else(|| "localhost".into());
            let dev = x509::dev_chain(
                &format!("Tessera development verifier ({slug})"),
                &host,
                days,
            )
            .map_err(ApiError::internal)?;
            let not_after = x509::check_verifier_chain(
                std::slice::from_ref(&dev.leaf_der),
                &tessera_eudi::jose::SigningKey::from_pkcs8(&dev.leaf_key_pkcs8)
                    .map_err(ApiError::internal)?,
                time::OffsetDateTime::now_utc().unix_timestamp(),
            )
            .map_err(ApiError::internal)?;
            let v = set_verifier(
                &tenant,
                dev.leaf_key_pkcs8,
                vec![dev.leaf_der],
                not_after,
                true,
            )
            .await?;
            Ok(verifier_json(
                &v,
                Some(x509::to_pem("CERTIFICATE", &dev.root_der)),
            ))
        }
        AdminRequest::Backup { out } => {
            let path = std::path::PathBuf::from(&out);
            if !path.is_absolute() {
                return Err(ApiError::invalid_field("out", "must be an absolute path"));
            }
            let store = state.store.clone();
            let now = time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default();
            let started = std::time::Instant::now();
            let header = tokio::task::spawn_blocking(move || {
                store.backup(&path, env!("CARGO_PKG_VERSION"), &now)
            })
            .await
            .map_err(ApiError::internal)?
            .map_err(|e| {
                ApiError::new(
                    axum::http::StatusCode::CONFLICT,
                    "admin/backup_failed",
                    e.to_string(),
                )
            })?;
            let mut body = json!({
                "file": out,
                "seconds": started.elapsed().as_secs_f64(),
                "master_key": format!(
                    "not in the backup: keep {} safe on its own; a restore needs it",
                    state.config.master_key_path().display()
                ),
            });
            body["header"] = serde_json::to_value(&header).map_err(ApiError::internal)?;
            Ok(body)
        }
        AdminRequest::MasterKeyRotate { new_key } => {
            let new = tessera_storage::MasterKey::from_base64(&new_key)
                .map_err(|e| ApiError::invalid_field("new_key", e.to_string()))?;
            let key_path = state.config.master_key_path();
            let started = std::time::Instant::now();
            let report = state
                .directory
                .rotate_master_key(new, key_path.clone())
                .await?;
            Ok(json!({
                "key_file": key_path.display().to_string(),
                "records_rewritten": report.records,
                "records_scanned": report.scanned,
                "sealed_values": report.total_values(),
                "by_field": report.values,
                "seconds": started.elapsed().as_secs_f64(),
                "note": "the old key opens nothing in this data any more; backups taken before now still need it",
            }))
        }
        AdminRequest::EudiShow { slug } => {
            let tenant = tenant_of(state, &slug)?;
            let answer = tenant
                .call(|reply| TenantMsg::Eudi {
                    cmd: EudiCmd::Verifier,
                    ctx: AuditContext::default(),
                    reply,
                })
                .await?;
            match answer {
                EudiAnswer::Verifier(Some(v)) => Ok(verifier_json(&v, None)),
                EudiAnswer::Verifier(None) => Ok(json!({ "configured": false })),
                _ => Err(ApiError::internal("an unexpected wallet answer")),
            }
        }
        AdminRequest::OutboxList { tenant, sms: true } => {
            if state.config.sms.transport != SmsTransport::Outbox {
                return Ok(json!([]));
            }
            let dir = state.config.data_path(&state.config.sms.outbox_dir);
            let entries = tokio::task::spawn_blocking(move || {
                crate::delivery::sms::list(&dir, tenant.as_deref())
            })
            .await
            .map_err(ApiError::internal)?
            .map_err(ApiError::internal)?;
            to_value(entries)
        }
        AdminRequest::OutboxList { tenant, sms: false } => {
            // With SMTP nothing is kept: an empty list, not an error, so scripts need not
            // know the transport.
            if state.config.mail.transport != MailTransport::File {
                return Ok(json!([]));
            }
            let dir = state.config.data_path(&state.config.mail.outbox_dir);
            let entries =
                tokio::task::spawn_blocking(move || outbox::list(&dir, tenant.as_deref()))
                    .await
                    .map_err(ApiError::internal)?
                    .map_err(ApiError::internal)?;
            to_value(entries)
        }
        AdminRequest::DashboardResetMfa { email } => {
            let removed = dir
                .request(|reply| DirectoryMsg::ResetAccountMfa {
                    email: email.trim().to_lowercase(),
                    reply,
                })
                .await
                .map_err(|e| match e {
                    tessera_actors::CallError::Failed(
                        tessera_actors::error::DirectoryError::NotFound,
                    ) => ApiError::not_found("dashboard account"),
                    e => e.into(),
                })?;
            Ok(serde_json::json!({ "mfa_removed": removed }))
        }
        AdminRequest::OutboxShow { id } => {
            // With SMTP nothing is kept, so no message is here.
            if state.config.mail.transport != MailTransport::File {
                return Err(ApiError::not_found("message"));
            }
            let dir = state.config.data_path(&state.config.mail.outbox_dir);
            let message = tokio::task::spawn_blocking(move || outbox::show(&dir, &id))
                .await
                .map_err(ApiError::internal)?
                .map_err(ApiError::internal)?
                .ok_or_else(|| ApiError::not_found("message"))?;
            to_value(message)
        }
    }
}

/// Stores a verifier identity (already checked) in the tenant.
async fn set_verifier(
    tenant: &TenantHandle,
    pkcs8: Vec<u8>,
    chain: Vec<Vec<u8>>,
    not_after: i64,
    development: bool,
) -> Result<std::sync::Arc<VerifierIdentity>, ApiError> {
    let key_pkcs8 = zeroize::Zeroizing::new(pkcs8);
    let answer = tenant
        .call(|reply| TenantMsg::Eudi {
            cmd: EudiCmd::SetVerifier {
                key_pkcs8: key_pkcs8.clone(),
                chain: chain.clone(),
                not_after,
                development,
            },
            ctx: AuditContext::default(),
            reply,
        })
        .await?;
    match answer {
        EudiAnswer::VerifierSet(v) => Ok(v),
        _ => Err(ApiError::internal("an unexpected wallet answer")),
    }
}

/// What the admin commands print of a verifier identity.
fn verifier_json(v: &VerifierIdentity, root_pem: Option<String>) -> serde_json::Value {
    let not_after = time::OffsetDateTime::from_unix_timestamp(v.not_after)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        });
    let mut out = json!({
        "configured": true,
        "client_id": v.client_id,
        "not_after": not_after,
        "development": v.development,
        "chain_length": v.chain.len(),
    });
    if let (Some(root), Some(o)) = (root_pem, out.as_object_mut()) {
        o.insert("root_pem".into(), json!(root));
    }
    out
}
