//! A tenant's AI agents in the console: the registry (revoked ones too), a new agent (its
//! secret shown once), one agent's registration and its activity feed, its secret rotated
//! (shown once), the agent revoked. All through the dashboard API's handlers
//! (`dashboard::agents`), with their rules: owners write, a secret is made only after a
//! recent re-authentication, the tier must allow agents.

use axum::{
    extract::{Path, Query, State},
    http::StatusCode,
    response::Response,
};

use super::{
    dash, joined, json_body, moment, reasons, sign_in::reauth_page, tenant_path, Area, Cell,
    CheckGroup, CheckOption, Control, DoneQuery, Lines, Section, TenantPost, Visit,
};
use crate::http::{
    dashboard::agents::{
        self as api, ActivityParams, AgentSettingsBody, ListQuery, RegisterAgentRequest,
        UpdateAgentRequest,
    },
    error::ApiError,
    extract::ApiJson,
    pages::FieldView,
};

/// The grants an agent may use, as the API names them.
const GRANTS: [&str; 4] = [
    "client_credentials",
    "urn:ietf:params:oauth:grant-type:token-exchange",
    "urn:openid:params:grant-type:ciba",
    "urn:ietf:params:oauth:grant-type:device_code",
];

fn base(slug: &str) -> String {
    format!("{}/agents", tenant_path(slug))
}

/// The registry, and an owner's form for a new agent.
pub async fn list(visit: Visit, Path(slug): Path<String>, Query(q): Query<DoneQuery>) -> Response {
    let notice = q.notice(&visit, "revoked", "console-agents-revoked");
    render_list(&visit, &slug, notice, None).await
}

async fn render_list(
    visit: &Visit,
    slug: &str,
    notice: Option<String>,
    refusal: Option<(Typed, String)>,
) -> Response {
    let (c, m) = match visit.tenant(slug) {
        Ok(t) => t,
        Err(r) => return r,
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
    let table = visit.table(
        ("agents", "console-agents-caption"),
        &[
            "console-col-name",
            "console-col-client-id",
            "console-col-created",
            "console-col-revoked",
        ],
        rows,
        "console-agents-empty",
    );
    page.sections
        .push(visit.listing("console-agents-intro", table));
    if m.role.as_str() == "owner" {
        let (typed, reason) = refusal.unwrap_or_else(|| (Typed::new(), String::new()));
        let f = registration_form(
            visit,
            (format!("{at}/create"), "console-agents-create"),
            &typed,
        );
        visit.new_item(&mut page, "console-agents-new", f, &reason);
    }
    visit.answer_page(page)
}

/// A page showing an agent's client id and, once, its secret.
fn issued_page(visit: &Visit, back: String, client_id: &str, secret: String) -> Response {
    let intro = vec![visit.t("console-agents-secret-intro")];
    let facts = vec![(visit.t("console-col-client-id"), client_id.to_owned())];
    visit.shown_once("console-client-issued", (intro, facts), Some(secret), back)
}

/// Registers an agent (owner, re-authenticated): its secret, shown once.
pub async fn create(Path(slug): Path<String>, p: TenantPost) -> Response {
    let (visit, form, c) = p.into_parts();
    let at = base(&slug);
    let typed = Typed::posted(&form);
    let (ttl, settings) = match typed.numbers() {
        Ok(n) => n,
        Err(reason) => return render_list(&visit, &slug, None, Some((typed, reason))).await,
    };
    let req = RegisterAgentRequest {
        name: typed.name.trim().to_owned(),
        description: super::optional(&typed.description),
        agent_class: super::optional(&typed.agent_class),
        logo_url: super::optional(&typed.logo_url),
        scopes: form.lines("scopes"),
        grant_types: typed.grants.clone(),
        redirect_uris: Vec::new(),
        agent_token_max_ttl_sec: ttl,
        agent_settings: settings,
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
            render_list(&visit, &slug, None, Some((typed, reasons(&e)))).await
        }
        Err(e) => visit.refused(&e),
    }
}

/// One agent: its registration, its activity (newest first), and an owner's actions.
pub async fn detail(
    visit: Visit,
    Path((slug, id)): Path<(String, String)>,
    Query(q): Query<DoneQuery>,
) -> Response {
    let notice = q.notice(&visit, "saved", "console-saved");
    render_detail(&visit, &slug, &id, (notice, None)).await
}

async fn render_detail(
    visit: &Visit,
    slug: &str,
    id: &str,
    (notice, refused): (Option<String>, Option<String>),
) -> Response {
    let (slug, id) = (slug.to_owned(), id.to_owned());
    let (c, m) = match visit.tenant(&slug) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let again = c.clone();
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
    page.sections.push(Section {
        facts: vec![
            (visit.t("console-col-name"), a.name.clone()),
            (visit.t("console-col-client-id"), a.client_id.clone()),
            (
                visit.t("console-field-description"),
                a.description.clone().unwrap_or_else(dash),
            ),
            (
                visit.t("console-agents-class"),
                a.agent_class.clone().unwrap_or_else(dash),
            ),
            (visit.t("console-client-scopes"), joined(&a.scopes)),
            (visit.t("console-agents-grants"), joined(&a.grant_types)),
            (
                visit.t("console-agents-ttl"),
                a.agent_token_max_ttl_sec.to_string(),
            ),
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
        table: Some(visit.table(
            ("agent-activity", "console-agents-activity-caption"),
            &[
                "console-col-time",
                "console-col-event",
                "console-agents-method",
                "console-agents-on-behalf",
            ],
            rows,
            "console-agents-activity-empty",
        )),
        ..Section::default()
    });
    page.notice = notice;
    page.error_summary = refused.map(|r| visit.not_accepted(&r));
    if m.role.as_str() == "owner" && a.revoked_at.is_none() {
        // The registration as a form: every field the update takes.
        let f = registration_form(
            visit,
            (format!("{here}/edit"), "console-save"),
            &Typed::of(&a),
        );
        page.sections.push(Section {
            heading: Some(visit.t("console-client-edit")),
            forms: vec![f],
            ..Section::default()
        });
        page.sections.push(visit.actions(vec![
            (format!("{here}/rotate"), "console-client-rotate", true),
            (format!("{here}/revoke"), "console-agents-revoke", true),
        ]));
    }
    visit.answer_page(page)
}

/// The rate-limit fields of an agent's settings, as the API names them.
const LIMITS: [&str; 5] = [
    "api_calls_per_min",
    "token_exchange_per_min",
    "ciba_initiate_per_min",
    "device_code_per_min",
    "client_credentials_per_min",
];

/// An agent's registration as the form shows it: from the agent, or as typed.
struct Typed {
    name: String,
    description: String,
    agent_class: String,
    logo_url: String,
    scopes: String,
    grants: Vec<String>,
    ttl: String,
    /// Each of [`LIMITS`], in order.
    limits: [String; 5],
    max_concurrent: String,
}

impl Typed {
    /// A new agent's: client credentials ticked, the rest empty.
    fn new() -> Self {
        Typed {
            name: String::new(),
            description: String::new(),
            agent_class: String::new(),
            logo_url: String::new(),
            scopes: String::new(),
            grants: vec!["client_credentials".to_owned()],
            ttl: String::new(),
            limits: Default::default(),
            max_concurrent: String::new(),
        }
    }

    /// The agent's own.
    fn of(a: &api::AgentResponse) -> Self {
        let n = |v: Option<u32>| v.map(|n| n.to_string()).unwrap_or_default();
        let r = &a.agent_settings.rate_limits;
        Typed {
            name: a.name.clone(),
            description: a.description.clone().unwrap_or_default(),
            agent_class: a.agent_class.clone().unwrap_or_default(),
            logo_url: a.logo_url.clone().unwrap_or_default(),
            scopes: a.scopes.join("\n"),
            grants: a.grant_types.clone(),
            ttl: a.agent_token_max_ttl_sec.to_string(),
            limits: [
                n(r.api_calls_per_min),
                n(r.token_exchange_per_min),
                n(r.ciba_initiate_per_min),
                n(r.device_code_per_min),
                n(r.client_credentials_per_min),
            ],
            max_concurrent: n(a.agent_settings.max_concurrent_tokens),
        }
    }

    /// As the form posted it.
    fn posted(form: &super::FormFields) -> Self {
        let one = |n: &str| form.one(n).trim().to_owned();
        Typed {
            name: form.one("name"),
            description: one("description"),
            agent_class: one("agent_class"),
            logo_url: one("logo_url"),
            scopes: form.one("scopes"),
            grants: form.all("grant_types"),
            ttl: one("agent_token_max_ttl_sec"),
            limits: LIMITS.map(&one),
            max_concurrent: one("max_concurrent_tokens"),
        }
    }

    /// The token lifetime and the settings, or which number is not one.
    fn numbers(&self) -> Result<(Option<u32>, AgentSettingsBody), String> {
        let number = |name: &str, v: &str| -> Result<Option<u32>, String> {
            if v.is_empty() {
                return Ok(None);
            }
            v.parse::<u32>()
                .map(Some)
                .map_err(|_| format!("{name}: must be a whole number"))
        };
        let [api_calls, exchange, ciba, device, credentials] = &self.limits;
        let settings = AgentSettingsBody {
            rate_limits: api::RateLimitsBody {
                api_calls_per_min: number(LIMITS[0], api_calls)?,
                token_exchange_per_min: number(LIMITS[1], exchange)?,
                ciba_initiate_per_min: number(LIMITS[2], ciba)?,
                device_code_per_min: number(LIMITS[3], device)?,
                client_credentials_per_min: number(LIMITS[4], credentials)?,
            },
            max_concurrent_tokens: number("max_concurrent_tokens", &self.max_concurrent)?,
        };
        Ok((number("agent_token_max_ttl_sec", &self.ttl)?, settings))
    }
}

/// An agent's registration as a form posting to `action` (its button's text id).
fn registration_form(visit: &Visit, (action, button): (String, &str), t: &Typed) -> super::Form {
    let mut f = visit.form(action, visit.t(button));
    f.controls.push(Control::Input(
        visit.name_input("agent-name", t.name.clone()),
    ));
    f.controls.extend(super::profile_inputs(
        visit,
        "agent",
        &t.description,
        &t.logo_url,
    ));
    f.controls.push(Control::Input(
        FieldView::input(
            "agent-class",
            "agent_class",
            "text",
            visit.t("console-agents-class"),
            "off",
        )
        .sized(0, 64)
        .filled(t.agent_class.clone(), None),
    ));
    f.controls.push(Control::Lines(Lines {
        id: "agent-scopes".to_owned(),
        name: "scopes".to_owned(),
        label: visit.t("console-client-scopes"),
        hint: Some(visit.t("console-hint-lines")),
        error: None,
        value: t.scopes.clone(),
    }));
    f.controls.push(grants_group(visit, &t.grants));
    let number = |id: &str, name: &'static str, label: &str, value: &str| {
        let mut input = FieldView::input(id, name, "text", visit.t(label), "off")
            .sized(0, 10)
            .filled(value.to_owned(), None);
        input.inputmode = "numeric";
        input.hint = Some(visit.t("console-hint-empty-platform"));
        Control::Input(input)
    };
    f.controls.push(number(
        "agent-ttl",
        "agent_token_max_ttl_sec",
        "console-agents-ttl",
        &t.ttl,
    ));
    for (limit, value) in LIMITS.iter().zip(&t.limits) {
        f.controls.push(number(
            &format!("agent-{}", limit.replace('_', "-")),
            limit,
            &format!("console-agents-{}", limit.replace('_', "-")),
            value,
        ));
    }
    f.controls.push(number(
        "agent-max-concurrent",
        "max_concurrent_tokens",
        "console-agents-max-concurrent",
        &t.max_concurrent,
    ));
    f
}

/// The grants an agent may use, ticked as `chosen`.
fn grants_group(visit: &Visit, chosen: &[String]) -> Control {
    Control::Checks(CheckGroup {
        legend: visit.t("console-agents-grants"),
        name: "grant_types".to_owned(),
        options: GRANTS
            .iter()
            .enumerate()
            .map(|(i, g)| CheckOption {
                id: format!("grant-{i}"),
                value: (*g).to_owned(),
                label: (*g).to_owned(),
                checked: chosen.iter().any(|c| c == g),
            })
            .collect(),
        error: None,
    })
}

/// An owner's action on an agent: `rotate` (the new secret, shown once) or `revoke`.
pub async fn act(
    Path((slug, id, what)): Path<(String, String, String)>,
    p: TenantPost,
) -> Response {
    let (visit, form, c) = p.into_parts();
    let here = format!("{}/{id}", base(&slug));
    let state = State(visit.state.clone());
    let path = Path((slug.clone(), id.clone()));
    let answer = match what.as_str() {
        "edit" => {
            let typed = Typed::posted(&form);
            let (ttl, settings) = match typed.numbers() {
                Ok(n) => n,
                Err(reason) => {
                    return render_detail(&visit, &slug, &id, (None, Some(reason))).await;
                }
            };
            let req = UpdateAgentRequest {
                name: Some(typed.name.trim().to_owned()),
                description: Some(super::optional(&typed.description)),
                agent_class: Some(super::optional(&typed.agent_class)),
                logo_url: Some(super::optional(&typed.logo_url)),
                scopes: Some(form.lines("scopes")),
                grant_types: Some(typed.grants.clone()),
                redirect_uris: None,
                agent_token_max_ttl_sec: ttl,
                agent_settings: Some(settings),
            };
            let updated = api::update(state, c, path, ApiJson(req)).await;
            let again = |r| render_detail(&visit, &slug, &id, (None, Some(r)));
            return visit.saved(updated, &here, again).await;
        }
        "rotate" => api::rotate_secret(state, c, path)
            .await
            .map(|axum::Json(r)| {
                issued_page(&visit, here.clone(), &r.agent.client_id, r.client_secret)
            }),
        "revoke" => api::revoke(state, c, path)
            .await
            .map(|_| visit.go(&format!("{}?done=revoked", base(&slug)))),
        _ => Err(ApiError::not_found("action")),
    };
    visit.acted(answer, &here)
}
