//! A tenant's audit log in the console: newest first, filtered by event type, a page at a
//! time, and downloaded whole (up to 10,000 events) as CSV or JSON, through
//! `dashboard::audit`'s function.

use axum::{
    extract::{Path, Query},
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use serde::Deserialize;

use super::{moment, tenant_path, Area, Cell, Control, Form as PageForm, Link, Section, Visit};
use crate::http::{
    dashboard::audit::{page as audit_page, AuditEventResponse, AuditQuery},
    pages::{protect, FieldView},
};

/// The most events one download holds.
pub const EXPORT_MAX: usize = 10_000;
const EXPORT_PAGE: usize = 200;

#[derive(Deserialize)]
pub struct ListQuery {
    #[serde(rename = "type")]
    event_type: Option<String>,
    cursor: Option<String>,
}

#[derive(Deserialize)]
pub struct DownloadQuery {
    #[serde(rename = "type")]
    event_type: Option<String>,
    format: Option<String>,
}

fn who(visit: &Visit, e: &AuditEventResponse) -> String {
    match (e.actor_account_id, e.actor_management_key_id) {
        (Some(a), _) => visit.t_with("console-actor-account", &[("id", &a.to_string())]),
        (None, Some(k)) => visit.t_with("console-actor-key", &[("id", &k.to_string())]),
        (None, None) => visit.t("console-actor-system"),
    }
}

/// The query string of a filter (and a cursor).
fn query_of(event_type: Option<&str>, extra: &[(&str, &str)]) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    if let Some(t) = event_type {
        q.append_pair("type", t);
    }
    for (k, v) in extra {
        q.append_pair(k, v);
    }
    q.finish()
}

/// The audit log page: the filter, the download links, then a page of events.
pub async fn list(visit: Visit, Path(slug): Path<String>, Query(q): Query<ListQuery>) -> Response {
    let (auth, m) = match visit.member(&slug) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let event_type = q.event_type.filter(|t| !t.trim().is_empty());
    let query = AuditQuery {
        cursor: q.cursor.filter(|c| !c.is_empty()),
        limit: Some("50".to_owned()),
        event_type: event_type.clone(),
    };
    let events = match audit_page(&visit.state, auth, &slug, &query).await {
        Ok(p) => p,
        Err(e) => return visit.refused(&e),
    };
    let base = format!("{}/audit", tenant_path(&slug));
    let mut page = visit.tenant_page(&m, Area::Audit, "console-audit");
    let mut filter = PageForm::search(base.clone(), visit.t("console-filter"));
    let mut f = FieldView::input(
        "event-type",
        "type",
        "search",
        visit.t("console-audit-type"),
        "off",
    );
    f.value = event_type.clone().unwrap_or_default();
    f.hint = Some(visit.t("console-audit-type-hint"));
    f.max = 100;
    filter.controls.push(Control::Input(f));
    let rows = events
        .data
        .iter()
        .map(|e| {
            vec![
                Cell::text(moment(e.created_at)),
                Cell::text(e.event_type.clone()),
                Cell::text(who(&visit, e)),
                Cell::text(e.fields.join(", ")),
            ]
        })
        .collect();
    let t = event_type.as_deref();
    let mut links = vec![
        Link {
            href: format!("{base}/download?{}", query_of(t, &[("format", "csv")])),
            label: visit.t("console-download-csv"),
        },
        Link {
            href: format!("{base}/download?{}", query_of(t, &[("format", "json")])),
            label: visit.t("console-download-json"),
        },
    ];
    if let Some(next) = events.pagination.next_cursor {
        links.push(Link {
            href: format!("{base}?{}", query_of(t, &[("cursor", &next)])),
            label: visit.t("console-next-page"),
        });
    }
    page.sections.push(Section {
        forms: vec![filter],
        table: Some(visit.table(
            ("events", "console-audit-caption"),
            &[
                "console-col-time",
                "console-col-event",
                "console-col-actor",
                "console-col-fields",
            ],
            rows,
            "console-audit-empty",
        )),
        links,
        ..Section::default()
    });
    visit.answer(StatusCode::OK, page)
}

/// The log (the filter's events, newest first, at most [`EXPORT_MAX`]) as a file:
/// `format=csv` (one row an event, the metadata as JSON) or `format=json` (the API's
/// events, in an array).
pub async fn download(
    visit: Visit,
    Path(slug): Path<String>,
    Query(q): Query<DownloadQuery>,
) -> Response {
    let auth = match visit.signed_in() {
        Ok(a) => a,
        Err(r) => return r,
    };
    let csv = match q.format.as_deref() {
        Some("csv") => true,
        Some("json") => false,
        _ => return visit.reader.problem(crate::http::pages::Problem::Invalid),
    };
    let mut all: Vec<AuditEventResponse> = Vec::new();
    let mut cursor = None;
    loop {
        let query = AuditQuery {
            cursor: cursor.take(),
            limit: Some(EXPORT_PAGE.to_string()),
            event_type: q.event_type.clone().filter(|t| !t.trim().is_empty()),
        };
        let page = match audit_page(&visit.state, auth, &slug, &query).await {
            Ok(p) => p,
            Err(e) => return visit.refused(&e),
        };
        all.extend(page.data);
        match page.pagination.next_cursor {
            Some(next) if all.len() < EXPORT_MAX => cursor = Some(next),
            _ => break,
        }
    }
    all.truncate(EXPORT_MAX);
    let body = if csv {
        to_csv(&all)
    } else {
        serde_json::to_vec(&all).map_err(|e| e.to_string())
    };
    let Ok(body) = body else {
        return visit.reader.problem(crate::http::pages::Problem::Internal);
    };
    let (kind, ext) = if csv {
        ("text/csv; charset=utf-8", "csv")
    } else {
        ("application/json", "json")
    };
    let mut resp = (StatusCode::OK, body).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"audit-{slug}.{ext}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    protect(h);
    resp
}

/// The events as CSV, with a header row; the changed fields joined by spaces, the metadata
/// as JSON.
fn to_csv(events: &[AuditEventResponse]) -> Result<Vec<u8>, String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let fail = |e: csv::Error| e.to_string();
    w.write_record([
        "id",
        "created_at",
        "type",
        "actor_account_id",
        "actor_management_key_id",
        "fields",
        "ip_hash_prefix",
        "ua_family",
        "metadata",
    ])
    .map_err(fail)?;
    for e in events {
        let at = e
            .created_at
            .format(&time::format_description::well_known::Rfc3339)
            .map_err(|e| e.to_string())?;
        w.write_record([
            e.id.as_str(),
            at.as_str(),
            e.event_type.as_str(),
            &e.actor_account_id
                .map(|a| a.to_string())
                .unwrap_or_default(),
            &e.actor_management_key_id
                .map(|k| k.to_string())
                .unwrap_or_default(),
            &e.fields.join(" "),
            e.ip_hash_prefix.as_deref().unwrap_or(""),
            e.ua_family.as_deref().unwrap_or(""),
            &e.metadata.to_string(),
        ])
        .map_err(fail)?;
    }
    w.into_inner().map_err(|e| e.to_string())
}
