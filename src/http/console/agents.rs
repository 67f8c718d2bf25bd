//! A tenant's AI agents in the console: the registry (revoked ones too), a new agent (its
//! secret shown once), one agent's registration and its activity feed, its secret rotated
//! (shown once), the agent revoked. All through the dashboard API's handlers
//! (`dashboard::agents`), with their rules: owners write, a secret is made only after a
//! recent re-authentication, the tier must allow agents.

use axum::{
    body::Bytes,
    extract::{Path, Query, State},
    http::StatusCode,
    response::Response,
    Form,
};
use serde::Deserialize;
use serde_json::Value;

use super::{
    json_body, moment, sign_in::reauth_page, tenant_path, Area, Cell, CheckGroup, CheckOption,
    Control, Form as PageForm, Lines, Link, Section, Table, Visit,
};
use crate::http::{
    dashboard::{
        agents::{self as api, ActivityParams, AgentSettingsBody, ListQuery, RegisterAgentRequest},
        TenantCaller,
    },
    error::ApiError,
    extract::ApiJson,
    pages::{see_other, FieldView},
};

/// The grants an agent may use, as the API names them.
const GRANTS: [&str; 4] = [
    "client_credentials",
    "urn:ietf:params:oauth:grant-type:token-exchange",
    "urn:openid:params:grant-type:ciba",
    "urn:ietf:params:oauth:grant-type:device_code",
];

#[derive(Deserialize)]
pub struct DoneQuery {
    done: Option<String>,
}

#[derive(Deserialize)]
pub struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

#[allow(
    clippy::result_large_err,
    reason = "a page's refusal is the page itself, the handler's own answer"
)]
fn caller(visit: &Visit, slug: &str) -> Result<TenantCaller, Response> {
    let auth = visit.signed_in()?;
    Ok(TenantCaller {
        auth: auth.clone(),
        slug: slug.to_owned(),
    })
}

fn base(slug: &str) -> String {
    format!("{}/agents", tenant_path(slug))
}

fn reasons(e: &ApiError) -> String {
    e.details
        .as_ref()
        .and_then(|d| d.get("fields"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k} {}", v.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_else(|| e.message.clone())
}

/// The registry, and an owner's form for a new agent.
pub async fn list(visit: Visit, Path(slug): Path<String>, Query(q): Query<DoneQuery>) -> Response {
    let notice = q
        .done
        .filter(|d| d == "revoked")
        .map(|_| visit.t("console-agents-revoked"));
    render_list(&visit, &slug, notice, None).await
}

async fn render_list(
    visit: &Visit,
    slug: &str,
    notice: Option<String>,
    refusal: Option<(String, String)>,
) -> Response {
    let c = match caller(visit, slug) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let (m, _) = match c.member(&visit.state) {
        Ok(m) => m,
        Err(e) => return visit.refused(&e),
    };
    let query = ListQuery {
        cursor: None,
        limit: Some("100".to_owned()),
        include_revoked: Some("true".to_owned()),
    };
    let agents = match api::list(State(visit.state.clone()), c, Query(query)).await {
        Ok(axum::Json(l)) => l.data,
        Err(e) => return visit.refused(&e),
    };
    let at = base(slug);
    let mut page = visit.tenant_page(&m, Area::Agents, "console-agents");
    page.notice = notice;
    let dash = || "—".to_owned();
    let rows = agents
        .iter()
        .map(|a| {
            vec![
                Cell::link(a.name.clone(), format!("{at}/{}", a.id)),
                Cell::text(a.client_id.clone()),
                Cell::text(moment(a.created_at)),
                Cell::text(a.revoked_at.map_or_else(dash, moment)),
            ]
        })
        .collect();
    page.sections.push(Section {
        paragraphs: vec![visit.t("console-agents-intro")],
        table: Some(Table {
            id: "agents",
            caption: visit.t("console-agents-caption"),
            head: vec![
                visit.t("console-col-name"),
                visit.t("console-col-client-id"),
                visit.t("console-col-created"),
                visit.t("console-col-revoked"),
            ],
            rows,
            empty: visit.t("console-agents-empty"),
        }),
        ..Section::default()
    });
    if m.role.as_str() == "owner" {
        let (typed_name, reason) = refusal.unwrap_or_default();
        let action = format!("{at}/create");
        let mut f = PageForm::post(
            action.clone(),
            visit.csrf(&action),
            visit.t("console-agents-create"),
            false,
        );
        let mut name = FieldView::input(
            "agent-name",
            "name",
            "text",
            visit.t("console-col-name"),
            "off",
        );
        name.min = 1;
        name.max = 64;
        name.value = typed_name;
        f.controls.push(Control::Input(name));
        f.controls.push(Control::Lines(Lines {
            id: "agent-scopes".to_owned(),
            name: "scopes".to_owned(),
            label: visit.t("console-client-scopes"),
            hint: Some(visit.t("console-hint-lines")),
            error: None,
            value: String::new(),
        }));
        f.controls.push(Control::Checks(CheckGroup {
            legend: visit.t("console-agents-grants"),
            name: "grant_types".to_owned(),
            options: GRANTS
                .iter()
                .enumerate()
                .map(|(i, g)| CheckOption {
                    id: format!("grant-{i}"),
                    value: (*g).to_owned(),
                    label: (*g).to_owned(),
                    checked: i == 0,
                })
                .collect(),
            error: None,
        }));
        if !reason.is_empty() {
            page.error_summary = Some(visit.t_with("console-not-accepted", &[("reason", &reason)]));
        }
        page.sections.push(Section {
            heading: Some(visit.t("console-agents-new")),
            forms: vec![f],
            ..Section::default()
        });
    }
    let status = if page.error_summary.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    visit.answer(status, page)
}

/// A page showing an agent's client id and, once, its secret.
fn issued_page(visit: &Visit, back: String, client_id: &str, secret: String) -> Response {
    let mut page = visit.page("console-client-issued");
    page.sections.push(Section {
        facts: vec![(visit.t("console-col-client-id"), client_id.to_owned())],
        paragraphs: vec![
            visit.t("console-agents-secret-intro"),
            visit.t("console-key-once"),
        ],
        codes: vec![secret],
        links: vec![Link {
            href: back,
            label: visit.t("console-key-saved"),
        }],
        ..Section::default()
    });
    visit.answer(StatusCode::OK, page)
}

/// Registers an agent (owner, re-authenticated): its secret, shown once.
pub async fn create(visit: Visit, Path(slug): Path<String>, body: Bytes) -> Response {
    let c = match caller(&visit, &slug) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let form: Vec<(String, String)> = form_urlencoded::parse(&body).into_owned().collect();
    let one = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map_or(String::new(), |(_, v)| v.clone())
    };
    let at = base(&slug);
    if let Err(r) = visit.check(&format!("{at}/create"), &one("csrf")) {
        return r;
    }
    let req = RegisterAgentRequest {
        name: one("name").trim().to_owned(),
        description: None,
        agent_class: None,
        logo_url: None,
        scopes: one("scopes")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect(),
        grant_types: form
            .iter()
            .filter(|(k, _)| k == "grant_types")
            .map(|(_, v)| v.clone())
            .collect(),
        redirect_uris: Vec::new(),
        agent_token_max_ttl_sec: None,
        agent_settings: AgentSettingsBody::default(),
    };
    match api::create(State(visit.state.clone()), c, ApiJson(req)).await {
        Ok(resp) => {
            let Some(v) = json_body(resp).await else {
                return visit.refused(&ApiError::internal("the new agent could not be read"));
            };
            let (Some(id), Some(client_id), Some(secret)) = (
                v["id"].as_str(),
                v["client_id"].as_str(),
                v["client_secret"].as_str(),
            ) else {
                return visit.refused(&ApiError::internal("the new agent could not be read"));
            };
            issued_page(&visit, format!("{at}/{id}"), client_id, secret.to_owned())
        }
        Err(e) if e.code == "dashboard/reauth_required" => reauth_page(&visit, &at, None),
        Err(e)
            if e.status == StatusCode::BAD_REQUEST
                || e.status == StatusCode::CONFLICT
                || e.status == StatusCode::FORBIDDEN && e.code != "dashboard/forbidden" =>
        {
            render_list(&visit, &slug, None, Some((one("name"), reasons(&e)))).await
        }
        Err(e) => visit.refused(&e),
    }
}

/// One agent: its registration, its activity (newest first), and an owner's actions.
pub async fn detail(visit: Visit, Path((slug, id)): Path<(String, String)>) -> Response {
    let c = match caller(&visit, &slug) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let (m, _) = match c.member(&visit.state) {
        Ok(m) => m,
        Err(e) => return visit.refused(&e),
    };
    let again = TenantCaller {
        auth: c.auth.clone(),
        slug: c.slug.clone(),
    };
    let path = Path((slug.clone(), id.clone()));
    let a = match api::show(State(visit.state.clone()), c, path).await {
        Ok(axum::Json(a)) => a,
        Err(e) => return visit.refused(&e),
    };
    let params = ActivityParams {
        cursor: None,
        limit: Some("50".to_owned()),
        since: None,
        until: None,
        actor_user_id: None,
        action_type: None,
    };
    let path = Path((slug.clone(), id.clone()));
    let feed = match api::activity(State(visit.state.clone()), again, path, Query(params)).await {
        Ok(axum::Json(f)) => f,
        Err(e) => return visit.refused(&e),
    };
    let here = format!("{}/{}", base(&slug), a.id);
    let mut page = visit.tenant_page(&m, Area::Agents, "console-agent");
    let dash = || "—".to_owned();
    let joined = |v: &[String]| if v.is_empty() { dash() } else { v.join(", ") };
    page.sections.push(Section {
        facts: vec![
            (visit.t("console-col-name"), a.name.clone()),
            (visit.t("console-col-client-id"), a.client_id.clone()),
            (visit.t("console-client-scopes"), joined(&a.scopes)),
            (visit.t("console-agents-grants"), joined(&a.grant_types)),
            (
                visit.t("console-client-secret-prefix"),
                format!("{}…", a.secret_prefix),
            ),
            (visit.t("console-col-created"), moment(a.created_at)),
            (
                visit.t("console-col-revoked"),
                a.revoked_at.map_or_else(dash, moment),
            ),
        ],
        ..Section::default()
    });
    let rows = feed
        .data
        .iter()
        .map(|x| {
            vec![
                Cell::text(moment(x.created_at)),
                Cell::text(x.action.clone()),
                Cell::text(x.method_or_event.clone().unwrap_or_else(dash)),
                Cell::text(
                    x.actor_user_email
                        .clone()
                        .or_else(|| x.actor_user_id.map(|u| u.to_string()))
                        .unwrap_or_else(dash),
                ),
            ]
        })
        .collect();
    page.sections.push(Section {
        heading: Some(visit.t("console-agents-activity")),
        table: Some(Table {
            id: "agent-activity",
            caption: visit.t("console-agents-activity-caption"),
            head: vec![
                visit.t("console-col-time"),
                visit.t("console-col-event"),
                visit.t("console-agents-method"),
                visit.t("console-agents-on-behalf"),
            ],
            rows,
            empty: visit.t("console-agents-activity-empty"),
        }),
        ..Section::default()
    });
    if m.role.as_str() == "owner" && a.revoked_at.is_none() {
        let mut forms = Vec::new();
        for (what, label) in [
            ("rotate", "console-client-rotate"),
            ("revoke", "console-agents-revoke"),
        ] {
            let action = format!("{here}/{what}");
            let mut f = PageForm::post(action.clone(), visit.csrf(&action), visit.t(label), true);
            f.inline = true;
            forms.push(f);
        }
        page.sections.push(Section {
            heading: Some(visit.t("console-actions")),
            forms,
            ..Section::default()
        });
    }
    visit.answer(StatusCode::OK, page)
}

/// An owner's action on an agent: `rotate` (the new secret, shown once) or `revoke`.
pub async fn act(
    visit: Visit,
    Path((slug, id, what)): Path<(String, String, String)>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let c = match caller(&visit, &slug) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let here = format!("{}/{id}", base(&slug));
    if let Err(r) = visit.check(&format!("{here}/{what}"), &form.csrf) {
        return r;
    }
    let state = State(visit.state.clone());
    let path = Path((slug.clone(), id.clone()));
    let answer = match what.as_str() {
        "rotate" => api::rotate_secret(state, c, path)
            .await
            .map(|axum::Json(r)| {
                issued_page(&visit, here.clone(), &r.agent.client_id, r.client_secret)
            }),
        "revoke" => api::revoke(state, c, path).await.map(|_| {
            see_other(
                &visit.reader,
                &format!("{}?done=revoked", base(&slug)),
                StatusCode::SEE_OTHER,
            )
        }),
        _ => Err(ApiError::not_found("action")),
    };
    match answer {
        Ok(r) => r,
        Err(e) if e.code == "dashboard/reauth_required" => reauth_page(&visit, &here, None),
        Err(e) => visit.refused(&e),
    }
}
