//! A tenant's resource scope catalog in the console: the resources the operator registered
//! for the tenant, each with its scopes (status, sensitivity, consent text), a form that
//! registers one (it waits for the operator's review) and a button that removes one. Owners
//! only, as in the API, whose handlers these pages call (`http::catalog`).

use axum::{
    extract::{Path, Query, State},
    http::StatusCode,
    response::Response,
};
use serde_json::{json, Value};
use tessera_actors::DirectoryMsg;

use super::{
    reasons, tenant_path, Area, Cell, Control, DoneQuery, Refused, Section, Select, SelectOption,
    TenantPost, Visit,
};
use crate::http::{
    catalog::{self as api, RegisterScopeRequest},
    extract::ApiJson,
    pages::FieldView,
};

/// The languages a scope's consent text is written in, in the form's order.
const LOCALES: [&str; 5] = ["en", "pl", "de", "fr", "es"];

fn scopes_path(slug: &str) -> String {
    format!("{}/scopes", tenant_path(slug))
}

/// `GET /console/t/{slug}/scopes`.
pub async fn page(visit: Visit, Path(slug): Path<String>, Query(q): Query<DoneQuery>) -> Response {
    let notice = match q.done.as_deref() {
        Some("registered") => Some(visit.t("console-scopes-registered")),
        Some("removed") => Some(visit.t("console-scopes-removed")),
        _ => None,
    };
    render(&visit, &slug, notice, None).await
}

async fn render(
    visit: &Visit,
    slug: &str,
    notice: Option<String>,
    refused: Option<Refused>,
) -> Response {
    let (c, m) = match visit.tenant(slug) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let mut page = visit.tenant_page(&m, Area::Clients, "console-scopes");
    page.notice = notice;
    if m.role.as_str() != "owner" {
        page.paragraphs.push(visit.t("console-scopes-owners"));
        return visit.answer(StatusCode::OK, page);
    }
    let tenant = m.tenant;
    let resources = visit
        .state
        .directory
        .request(|reply| DirectoryMsg::TenantCatalog { tenant, reply })
        .await;
    let resources = match resources {
        Ok(r) => r,
        Err(e) => return visit.refused(&e.into()),
    };
    page.paragraphs.push(visit.t("console-scopes-intro"));
    if resources.is_empty() {
        page.paragraphs.push(visit.t("console-scopes-no-resources"));
    }
    let base = scopes_path(slug);
    for (n, r) in resources.iter().enumerate() {
        let rid = r.resource.id;
        let entries = match api::list(
            State(visit.state.clone()),
            c.auth.clone(),
            Path(rid.to_string()),
        )
        .await
        {
            Ok(axum::Json(l)) => l.data,
            Err(e) => return visit.refused(&e),
        };
        let rows = entries
            .iter()
            .map(|e| {
                vec![
                    Cell::text(e.scope_name.clone()),
                    Cell::text(visit.t(&format!("console-scope-status-{}", e.status))),
                    Cell::text(visit.t(&format!("console-scope-{}", e.sensitivity))),
                    Cell::text(consent_text(&e.display_metadata, visit.reader.lang)),
                ]
            })
            .collect();
        let mut section = Section {
            heading: Some(visit.t_with(
                "console-scopes-resource",
                &[("name", &r.resource.name), ("uri", &r.resource.uri)],
            )),
            table: Some(visit.table(
                (caption_id(n), "console-scopes-caption"),
                &[
                    "console-col-scope",
                    "console-col-status",
                    "console-col-sensitivity",
                    "console-col-consent-text",
                ],
                rows,
                "console-scopes-empty",
            )),
            ..Section::default()
        };
        for e in &entries {
            let label = visit.t_with("console-scopes-remove", &[("scope", &e.scope_name)]);
            section
                .forms
                .push(visit.button(format!("{base}/{rid}/{}/remove", e.id), label, true));
        }
        // The refused form is named by its resource's id.
        let failed = refused.as_ref().filter(|f| f.form == rid.to_string());
        section.forms.push(register_form(visit, &base, rid, failed));
        if let Some(f) = failed {
            page.error_summary = Some(visit.not_accepted(&f.reason));
        }
        page.sections.push(section);
    }
    let status = refused.as_ref().map_or(StatusCode::OK, |r| r.status);
    visit.answer(status, page)
}

/// The id of the `n`th resource's table caption (unique on the page).
fn caption_id(n: usize) -> &'static str {
    const IDS: [&str; 8] = [
        "scopes-0", "scopes-1", "scopes-2", "scopes-3", "scopes-4", "scopes-5", "scopes-6",
        "scopes-7",
    ];
    IDS.get(n).copied().unwrap_or("scopes-more")
}

/// The consent text of an entry in the reader's language (English when it has none), or its
/// i18n key.
fn consent_text(metadata: &Value, lang: &str) -> String {
    if let Some(texts) = metadata.get("locale_text") {
        return texts
            .get(lang)
            .or_else(|| texts.get("en"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
    }
    metadata
        .get("i18n_key")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// The form that registers a scope on resource `rid`, with what was typed when it was refused.
fn register_form(
    visit: &Visit,
    base: &str,
    rid: uuid::Uuid,
    failed: Option<&Refused>,
) -> super::Form {
    let typed = |name: &str| Refused::typed(failed, &rid.to_string(), name);
    let mut f = visit.form(
        format!("{base}/{rid}/register"),
        visit.t("console-scopes-register"),
    );
    let mut name = FieldView::input(
        &format!("scope-name-{rid}"),
        "scope_name",
        "text",
        visit.t("console-col-scope"),
        "off",
    )
    .sized(1, 64);
    name.value = typed("scope_name");
    name.hint = Some(visit.t("console-scopes-name-hint"));
    f.controls.push(Control::Input(name));
    let chosen = typed("sensitivity");
    f.controls.push(Control::Select(Select {
        id: format!("scope-sensitivity-{rid}"),
        name: "sensitivity".to_owned(),
        label: visit.t("console-col-sensitivity"),
        options: ["elevated", "normal"]
            .iter()
            .map(|s| SelectOption {
                value: (*s).to_owned(),
                label: visit.t(&format!("console-scope-{s}")),
                selected: chosen == *s,
            })
            .collect(),
        error: None,
    }));
    for lang in LOCALES {
        let mut text = FieldView::input(
            &format!("scope-text-{lang}-{rid}"),
            match lang {
                "en" => "text_en",
                "pl" => "text_pl",
                "de" => "text_de",
                "fr" => "text_fr",
                _ => "text_es",
            },
            "text",
            visit.t(&format!("console-scopes-text-{lang}")),
            "off",
        )
        .sized(1, 256);
        text.value = typed(&format!("text_{lang}"));
        f.controls.push(Control::Input(text));
    }
    f
}

/// `POST /console/t/{slug}/scopes/{resource}/register`: registers the scope through the
/// API's handler; a refusal shows the form again with the reason.
pub async fn register(Path((slug, resource)): Path<(String, String)>, p: TenantPost) -> Response {
    let TenantPost {
        visit,
        form,
        caller,
    } = p;
    let texts: serde_json::Map<String, Value> = LOCALES
        .iter()
        .map(|l| {
            (
                (*l).to_owned(),
                json!(form.one(&format!("text_{l}")).trim()),
            )
        })
        .collect();
    let req = RegisterScopeRequest {
        scope_name: Some(form.one("scope_name").trim().to_owned()),
        sensitivity: Some(form.one("sensitivity")),
        display_metadata: Some(json!({ "kind": "locale_text", "locale_text": texts })),
    };
    let answer = api::register(
        State(visit.state.clone()),
        caller.auth,
        Path(resource.clone()),
        ApiJson(req),
    )
    .await;
    match answer {
        Ok(_) => visit.go(&format!("{}?done=registered", scopes_path(&slug))),
        Err(e) if e.status == StatusCode::BAD_REQUEST || e.status == StatusCode::CONFLICT => {
            let Ok(rid) = uuid::Uuid::parse_str(&resource) else {
                return visit.refused(&e);
            };
            let refused = Refused {
                form: rid.to_string(),
                reason: reasons(&e),
                fields: form,
                status: StatusCode::BAD_REQUEST,
            };
            render(&visit, &slug, None, Some(refused)).await
        }
        Err(e) => visit.refused(&e),
    }
}

/// `POST /console/t/{slug}/scopes/{resource}/{id}/remove`.
pub async fn remove(
    Path((slug, resource, id)): Path<(String, String, String)>,
    p: TenantPost,
) -> Response {
    let TenantPost { visit, caller, .. } = p;
    let answer = api::delete(
        State(visit.state.clone()),
        caller.auth,
        Path((resource, id)),
    )
    .await;
    match answer {
        Ok(_) => visit.go(&format!("{}?done=removed", scopes_path(&slug))),
        Err(e) => visit.refused(&e),
    }
}
