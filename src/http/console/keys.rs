//! A tenant's keys in the console: rotating the API key, and the management keys a back
//! end uses (created, listed, revoked); a new key is shown once. Creating or rotating needs
//! a recent re-authentication, as in the API, whose handlers these pages call
//! (`dashboard::session::rotate_api_key`, `dashboard::management_keys`).

use axum::{
    extract::{Path, Query, State},
    http::StatusCode,
    response::Response,
};
use serde_json::Value;

use super::{
    dash, home::role_name, json_body, moment, reasons, sign_in::reauth_page, tenant_path, Area,
    Cell, Control, DoneQuery, Section, Select, SelectOption, TenantPost, Visit,
};
use crate::http::{
    dashboard::{
        management_keys::{self as api, CreateManagementKeyRequest},
        session::rotate_api_key,
    },
    error::ApiError,
    extract::ApiJson,
    pages::FieldView,
};

fn keys_path(slug: &str) -> String {
    format!("{}/keys", tenant_path(slug))
}

/// The keys page: the API key's rotation, the management keys, and the form for a new one.
pub async fn page(visit: Visit, Path(slug): Path<String>, Query(q): Query<DoneQuery>) -> Response {
    let notice = q.notice(&visit, "revoked", "console-keys-revoked");
    render(&visit, &slug, notice, None).await
}

async fn render(
    visit: &Visit,
    slug: &str,
    notice: Option<String>,
    error: Option<(String, String)>,
) -> Response {
    let (c, m) = match visit.tenant(slug) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let list = match api::list(State(visit.state.clone()), c).await {
        Ok(axum::Json(l)) => l,
        Err(e) => return visit.refused(&e),
    };
    let owner = m.role.as_str() == "owner";
    let base = keys_path(slug);
    let mut page = visit.tenant_page(&m, Area::Keys, "console-keys");
    page.notice = notice;
    let mut api_key = Section {
        heading: Some(visit.t("console-api-key")),
        paragraphs: vec![visit.t("console-api-key-intro")],
        ..Section::default()
    };
    if owner {
        api_key.forms.push(visit.button(
            format!("{base}/api-key/rotate"),
            visit.t("console-api-key-rotate"),
            true,
        ));
    }
    page.sections.push(api_key);
    let rows = list
        .data
        .iter()
        .map(|k| {
            vec![
                Cell::text(k.name.clone()),
                Cell::text(role_name(visit, &k.role)),
                Cell::text(format!("{}…", k.prefix)),
                Cell::text(moment(k.created_at)),
                Cell::text(k.expires_at.map_or_else(dash, moment)),
                Cell::text(k.revoked_at.map_or_else(dash, moment)),
            ]
        })
        .collect();
    let table = visit.table(
        ("management-keys", "console-management-keys-caption"),
        &[
            "console-col-name",
            "console-col-role-of",
            "console-col-prefix",
            "console-col-created",
            "console-col-expires",
            "console-col-revoked",
        ],
        rows,
        "console-management-keys-empty",
    );
    let mut keys = visit.listing("console-management-keys-intro", table);
    keys.heading = Some(visit.t("console-management-keys"));
    if owner {
        for k in list.data.iter().filter(|k| k.revoked_at.is_none()) {
            let label = visit.t_with("console-management-keys-revoke", &[("name", &k.name)]);
            keys.forms
                .push(visit.button(format!("{base}/{}/revoke", k.id), label, true));
        }
    }
    page.sections.push(keys);
    if owner {
        let (typed, reason) = error.unwrap_or_default();
        let action = format!("{base}/create");
        let mut f = visit.form(action, visit.t("console-management-keys-create"));
        let mut name = visit.name_input("key-name", typed);
        name.error = (!reason.is_empty()).then(|| visit.not_accepted(&reason));
        page.error_summary = name.error.clone();
        f.controls.push(Control::Input(name));
        f.controls.push(Control::Select(Select {
            id: "key-role".to_owned(),
            name: "role".to_owned(),
            label: visit.t("console-col-role-of"),
            options: ["viewer", "admin"]
                .iter()
                .map(|r| SelectOption {
                    value: (*r).to_owned(),
                    label: role_name(visit, r),
                    selected: *r == "viewer",
                })
                .collect(),
            error: None,
        }));
        let label = visit.t("console-col-expires");
        let mut expires = FieldView::input("key-expires", "expires_at", "text", label, "off");
        expires.hint = Some(visit.t("console-key-expires-hint"));
        expires.max = 40;
        f.controls.push(Control::Input(expires));
        page.sections.push(Section {
            heading: Some(visit.t("console-management-keys-new")),
            forms: vec![f],
            ..Section::default()
        });
    }
    visit.answer_page(page)
}

/// A page showing a new key once.
fn shown_once(visit: &Visit, slug: &str, title: &str, key: String) -> Response {
    visit.shown_once(title, (Vec::new(), Vec::new()), Some(key), keys_path(slug))
}

/// Replaces the API key (owner, re-authenticated): the new key, shown once.
pub async fn rotate(Path(slug): Path<String>, p: TenantPost) -> Response {
    let (visit, _, c) = p.into_parts();
    let base = keys_path(&slug);
    match rotate_api_key(State(visit.state.clone()), c).await {
        Ok(axum::Json(rotated)) => {
            shown_once(&visit, &slug, "console-api-key-new", rotated.api_key)
        }
        Err(e) if e.code == "dashboard/reauth_required" => reauth_page(&visit, &base, None),
        Err(e) => visit.refused(&e),
    }
}

/// Creates a management key (owner, re-authenticated): the key, shown once.
pub async fn create(Path(slug): Path<String>, p: TenantPost) -> Response {
    let (visit, form, c) = p.into_parts();
    let base = keys_path(&slug);
    let name = form.one("name");
    let expires_at = Some(form.one("expires_at").trim().to_owned()).filter(|e| !e.is_empty());
    let req = CreateManagementKeyRequest {
        name: name.clone(),
        role: form.one("role"),
        expires_at,
    };
    let answer = match api::create(State(visit.state.clone()), c, ApiJson(req)).await {
        Ok(resp) => resp,
        Err(e) if e.code == "dashboard/reauth_required" => return reauth_page(&visit, &base, None),
        Err(e) if e.status == StatusCode::BAD_REQUEST => {
            return render(&visit, &slug, None, Some((name, reasons(&e)))).await;
        }
        Err(e) => return visit.refused(&e),
    };
    // The route answers the created key as JSON: read it back for the page.
    let key = json_body(answer)
        .await
        .and_then(|v| v.get("key").and_then(Value::as_str).map(str::to_owned));
    match key {
        Some(key) => shown_once(&visit, &slug, "console-management-keys-new", key),
        None => visit.refused(&ApiError::internal("the new key could not be read")),
    }
}

/// Revokes a management key (owner).
pub async fn revoke(
    _visit: Visit,
    Path((slug, id)): Path<(String, String)>,
    p: TenantPost,
) -> Response {
    let (visit, _, c) = p.into_parts();
    let base = keys_path(&slug);
    let path = Path((slug.clone(), id));
    match api::revoke(State(visit.state.clone()), c, path).await {
        Ok(_) => visit.go(&format!("{base}?done=revoked")),
        Err(e) => visit.refused(&e),
    }
}
