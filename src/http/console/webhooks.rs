//! A tenant's webhooks in the console: the endpoints, one endpoint's delivery log with
//! redelivery of a failed event, a test event, the signing secret rotated (shown once), the
//! endpoint enabled, disabled or deleted; and a new endpoint (its secret shown once). All
//! through the dashboard API's handlers (`dashboard::webhooks`), with their rules: owners
//! write, a new or rotated secret needs a recent re-authentication.

use axum::{
    extract::{Path, Query, State},
    http::StatusCode,
    response::Response,
};
use serde::Deserialize;
use tessera_actors::tenant::webhooks::EVENT_TYPES;

use super::{
    dash, json_body, moment, reasons, sign_in::reauth_page, tenant_path, Area, Cell, CheckGroup,
    CheckOption, Control, Link, Section, TenantPost, Visit,
};
use crate::http::{
    dashboard::webhooks::{
        self as api, CreateWebhookRequest, DeliveriesQuery, UpdateWebhookRequest,
    },
    error::ApiError,
    extract::ApiJson,
    pages::FieldView,
};

const DONE: [&str; 6] = [
    "tested",
    "redelivered",
    "enabled",
    "disabled",
    "deleted",
    "saved",
];

#[derive(Deserialize)]
pub struct PageQuery {
    done: Option<String>,
    cursor: Option<String>,
}

fn base(slug: &str) -> String {
    format!("{}/webhooks", tenant_path(slug))
}

fn done_notice(visit: &Visit, done: Option<String>) -> Option<String> {
    done.filter(|d| DONE.contains(&d.as_str()))
        .map(|d| visit.t(&format!("console-webhooks-done-{d}")))
}

fn state_of(visit: &Visit, enabled: bool, reason: Option<&str>) -> String {
    match (enabled, reason) {
        (true, _) => visit.t("console-webhooks-enabled"),
        (false, Some("failing")) => visit.t("console-webhooks-disabled-failing"),
        (false, _) => visit.t("console-webhooks-disabled"),
    }
}

/// The events a form may subscribe to, ticked as `chosen`.
fn events_group(visit: &Visit, chosen: &[String], error: Option<String>) -> Control {
    Control::Checks(CheckGroup {
        legend: visit.t("console-webhooks-events"),
        name: "event_types".to_owned(),
        options: EVENT_TYPES
            .iter()
            .map(|e| CheckOption {
                id: format!("event-{}", e.replace(['.', '_'], "-")),
                value: (*e).to_owned(),
                label: (*e).to_owned(),
                checked: chosen.iter().any(|c| c == e),
            })
            .collect(),
        error,
    })
}

/// The endpoints, and an owner's form for a new one.
pub async fn list(visit: Visit, Path(slug): Path<String>, Query(q): Query<PageQuery>) -> Response {
    render_list(&visit, &slug, done_notice(&visit, q.done), None).await
}

async fn render_list(
    visit: &Visit,
    slug: &str,
    notice: Option<String>,
    refusal: Option<(String, Vec<String>, String)>,
) -> Response {
    let (c, m) = match visit.tenant(slug) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let endpoints = match api::list(State(visit.state.clone()), c).await {
        Ok(axum::Json(l)) => l.data,
        Err(e) => return visit.refused(&e),
    };
    let at = base(slug);
    let mut page = visit.tenant_page(&m, Area::Webhooks, "console-webhooks");
    page.notice = notice;
    let rows = endpoints
        .iter()
        .map(|e| {
            vec![
                Cell::link(e.url.clone(), format!("{at}/{}", e.id)),
                Cell::text(e.event_types.join(", ")),
                Cell::text(state_of(visit, e.enabled, e.disabled_reason.as_deref())),
                Cell::text(e.failing_since.map_or_else(dash, moment)),
            ]
        })
        .collect();
    let table = visit.table(
        ("endpoints", "console-webhooks-caption"),
        &[
            "console-col-url",
            "console-webhooks-events",
            "console-col-status",
            "console-col-failing",
        ],
        rows,
        "console-webhooks-empty",
    );
    page.sections
        .push(visit.listing("console-webhooks-intro", table));
    if m.role.as_str() == "owner" {
        let (typed_url, typed_events, reason) = refusal.unwrap_or_default();
        let mut f = visit.form(format!("{at}/create"), visit.t("console-webhooks-create"));
        let mut url = FieldView::input(
            "webhook-url",
            "url",
            "url",
            visit.t("console-col-url"),
            "url",
        )
        .sized(1, 2048)
        .filled(typed_url, None);
        url.hint = Some(visit.t("console-webhooks-url-hint"));
        let label = visit.t("console-col-description");
        let description =
            FieldView::input("webhook-description", "description", "text", label, "off")
                .sized(0, 500);
        f.controls.push(Control::Input(url));
        f.controls.push(Control::Input(description));
        f.controls.push(events_group(visit, &typed_events, None));
        visit.new_item(&mut page, "console-webhooks-new", f, &reason);
    }
    visit.answer_page(page)
}

/// A page showing a new signing secret once.
fn secret_page(visit: &Visit, back: String, secret: String) -> Response {
    let intro = vec![visit.t("console-webhooks-secret-intro")];
    visit.shown_once(
        "console-webhooks-secret",
        (intro, Vec::new()),
        Some(secret),
        back,
    )
}

/// Registers an endpoint (owner, re-authenticated): its secret, shown once.
pub async fn create(Path(slug): Path<String>, p: TenantPost) -> Response {
    let (visit, form, c) = p.into_parts();
    let one = |name: &str| form.one(name).trim().to_owned();
    let at = base(&slug);
    let events = form.all("event_types");
    let req = CreateWebhookRequest {
        url: one("url"),
        event_types: events.clone(),
        description: Some(one("description")).filter(|d| !d.is_empty()),
    };
    match api::create(State(visit.state.clone()), c, ApiJson(req)).await {
        Ok(resp) => match json_body(resp).await.and_then(|v| {
            let secret = v.get("secret")?.as_str()?.to_owned();
            let id = v.get("id")?.as_str()?.to_owned();
            Some((id, secret))
        }) {
            Some((id, secret)) => secret_page(&visit, format!("{at}/{id}"), secret),
            None => visit.refused(&ApiError::internal("the new endpoint could not be read")),
        },
        Err(e) if e.code == "dashboard/reauth_required" => reauth_page(&visit, &at, None),
        Err(e) if e.status == StatusCode::BAD_REQUEST || e.status == StatusCode::CONFLICT => {
            render_list(&visit, &slug, None, Some((one("url"), events, reasons(&e)))).await
        }
        Err(e) => visit.refused(&e),
    }
}

/// One endpoint: what it is, its delivery log (a page of it), and an owner's actions.
pub async fn detail(
    visit: Visit,
    Path((slug, id)): Path<(String, String)>,
    Query(q): Query<PageQuery>,
) -> Response {
    let (c, m) = match visit.tenant(&slug) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let path = Path((slug.clone(), id.clone()));
    let e = match api::show(State(visit.state.clone()), c.clone(), path).await {
        Ok(axum::Json(e)) => e,
        Err(err) => return visit.refused(&err),
    };
    let query = DeliveriesQuery {
        cursor: q.cursor.filter(|c| !c.is_empty()),
        limit: Some("20".to_owned()),
    };
    let path = Path((slug.clone(), id.clone()));
    let log = match api::deliveries(State(visit.state.clone()), c, path, Query(query)).await {
        Ok(axum::Json(l)) => l,
        Err(err) => return visit.refused(&err),
    };
    let here = format!("{}/{}", base(&slug), e.id);
    let owner = m.role.as_str() == "owner";
    let mut page = visit.tenant_page(&m, Area::Webhooks, "console-webhook");
    page.notice = done_notice(&visit, q.done);
    page.sections.push(Section {
        facts: vec![
            (visit.t("console-col-url"), e.url.clone()),
            (
                visit.t("console-col-description"),
                e.description.clone().unwrap_or_else(dash),
            ),
            (visit.t("console-webhooks-events"), e.event_types.join(", ")),
            (
                visit.t("console-col-status"),
                state_of(&visit, e.enabled, e.disabled_reason.as_deref()),
            ),
            (
                visit.t("console-col-failing"),
                e.failing_since.map_or_else(dash, moment),
            ),
            (visit.t("console-col-created"), moment(e.created_at)),
        ],
        ..Section::default()
    });
    let rows = log
        .data
        .iter()
        .map(|d| {
            vec![
                Cell::text(moment(d.created_at)),
                Cell::text(d.event_type.clone()),
                Cell::text(visit.t(&format!("console-delivery-{}", d.status))),
                Cell::text(d.attempts.to_string()),
                Cell::text(
                    d.http_status
                        .map(|s| s.to_string())
                        .or_else(|| d.error.clone())
                        .unwrap_or_else(dash),
                ),
            ]
        })
        .collect();
    let mut deliveries = Section {
        heading: Some(visit.t("console-deliveries")),
        table: Some(visit.table(
            ("deliveries", "console-deliveries-caption"),
            &[
                "console-col-time",
                "console-col-event",
                "console-col-status",
                "console-col-attempts",
                "console-col-answer",
            ],
            rows,
            "console-deliveries-empty",
        )),
        ..Section::default()
    };
    if let Some(next) = log.pagination.next_cursor {
        deliveries.links.push(Link {
            href: format!("{here}?cursor={next}"),
            label: visit.t("console-next-page"),
        });
    }
    if owner {
        for d in log.data.iter().filter(|d| d.status != "pending") {
            let label = visit.t_with(
                "console-deliveries-redeliver",
                &[("event", &d.event_type), ("at", &moment(d.created_at))],
            );
            let action = format!("{here}/deliveries/{}/redeliver", d.id);
            deliveries.forms.push(visit.button(action, label, true));
        }
    }
    page.sections.push(deliveries);
    if owner {
        let toggle = if e.enabled {
            ("disable", "console-webhooks-disable", true)
        } else {
            ("enable", "console-webhooks-enable", false)
        };
        page.sections.push(
            visit.actions(
                [
                    ("test", "console-webhooks-test", false),
                    toggle,
                    ("rotate", "console-webhooks-rotate", true),
                    ("delete", "console-webhooks-delete", true),
                ]
                .into_iter()
                .map(|(what, label, secondary)| (format!("{here}/{what}"), label, secondary))
                .collect(),
            ),
        );
    }
    visit.answer(StatusCode::OK, page)
}

/// An owner's action on an endpoint: `test`, `enable`, `disable`, `rotate` (its secret,
/// shown once) or `delete`.
pub async fn act(
    Path((slug, id, what)): Path<(String, String, String)>,
    p: TenantPost,
) -> Response {
    let (visit, _, c) = p.into_parts();
    let here = format!("{}/{id}", base(&slug));
    let state = State(visit.state.clone());
    let path = Path((slug.clone(), id.clone()));
    let done = |d: &str| visit.go(&format!("{here}?done={d}"));
    let answer = match what.as_str() {
        "test" => api::test(state, c, path).await.map(|_| done("tested")),
        "enable" | "disable" => {
            let req = UpdateWebhookRequest {
                url: None,
                event_types: None,
                description: None,
                enabled: Some(what == "enable"),
            };
            let d = if what == "enable" {
                "enabled"
            } else {
                "disabled"
            };
            api::update(state, c, path, ApiJson(req))
                .await
                .map(|_| done(d))
        }
        "rotate" => api::rotate_secret(state, c, path)
            .await
            .map(|axum::Json(r)| secret_page(&visit, here.clone(), r.secret)),
        "delete" => api::delete(state, c, path)
            .await
            .map(|_| visit.go(&format!("{}?done=deleted", base(&slug)))),
        _ => Err(ApiError::not_found("action")),
    };
    visit.acted(answer, &here)
}

/// Sends a delivery's event again (owner).
pub async fn redeliver(
    Path((slug, id, delivery)): Path<(String, String, String)>,
    p: TenantPost,
) -> Response {
    let (visit, _, c) = p.into_parts();
    let here = format!("{}/{id}", base(&slug));
    let path = Path((slug.clone(), id, delivery));
    match api::redeliver(State(visit.state.clone()), c, path).await {
        Ok(_) => visit.go(&format!("{here}?done=redelivered")),
        Err(e) => visit.refused(&e),
    }
}
