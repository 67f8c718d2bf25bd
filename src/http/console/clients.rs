//! A tenant's OAuth clients in the console: the registry, a new client (its secret, for a
//! confidential one, shown once), one client's registration, its secret rotated (shown
//! once), the client deleted. All through the dashboard API's handlers
//! (`dashboard::oauth_clients`), with their rules: owners write, and a secret is made only
//! after a recent re-authentication.

use axum::{
    extract::{Path, Query, State},
    http::StatusCode,
    response::Response,
};

use super::{
    choice, dash, joined, json_body, moment, reasons, sign_in::reauth_page, tenant_path, Area,
    Cell, Control, DoneQuery, Section, TenantPost, Visit,
};
use crate::http::{
    dashboard::oauth_clients::{self as api, CreateOAuthClientRequest, UpdateOAuthClientRequest},
    error::ApiError,
    extract::ApiJson,
};

fn base(slug: &str) -> String {
    format!("{}/clients", tenant_path(slug))
}

/// What the reader typed in the new client's form, and why it was refused.
#[derive(Default)]
struct Typed {
    name: String,
    redirect_uris: String,
    post_logout: String,
    scopes: String,
    description: String,
    logo_url: String,
    client_type: String,
    first_party: String,
    alg: String,
    reason: String,
}

fn lines(id: &str, name: &str, label: String, hint: String, value: String) -> Control {
    super::lines((id, name, label), Some(hint), value, None)
}

/// Whether it is the tenant's own app: no, or yes.
fn first_party_select(visit: &Visit, chosen: &str) -> Control {
    choice(
        (
            "client-first-party",
            "first_party",
            visit.t("console-client-first-party"),
        ),
        vec![
            ("false".to_owned(), visit.t("console-no")),
            ("true".to_owned(), visit.t("console-yes")),
        ],
        chosen,
    )
}

/// The algorithm of the client's ID tokens.
fn alg_select(visit: &Visit, chosen: &str) -> Control {
    choice(
        (
            "client-alg",
            "id_token_signed_response_alg",
            visit.t("console-client-id-token-alg"),
        ),
        ["RS256", "ES256"]
            .iter()
            .map(|a| ((*a).to_owned(), (*a).to_owned()))
            .collect(),
        chosen,
    )
}

/// The registry, and an owner's form for a new client.
pub async fn list(visit: Visit, Path(slug): Path<String>, Query(q): Query<DoneQuery>) -> Response {
    let notice = q.notice(&visit, "deleted", "console-clients-deleted");
    render_list(&visit, &slug, notice, Typed::default()).await
}

async fn render_list(visit: &Visit, slug: &str, notice: Option<String>, typed: Typed) -> Response {
    let (c, m) = match visit.tenant(slug) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let clients = match api::list(State(visit.state.clone()), c).await {
        Ok(axum::Json(l)) => l.data,
        Err(e) => return visit.refused(&e),
    };
    let at = base(slug);
    let mut page = visit.tenant_page(&m, Area::Clients, "console-clients");
    page.notice = notice;
    let rows = clients
        .iter()
        .map(|c| {
            vec![
                Cell::link(c.name.clone(), format!("{at}/{}", c.client_id)),
                Cell::text(c.client_id.clone()),
                Cell::text(visit.t(&format!("console-client-type-{}", c.client_type))),
                Cell::text(visit.t(&format!("console-client-verification-{}", c.verification))),
                Cell::text(moment(c.created_at)),
            ]
        })
        .collect();
    let table = visit.table(
        ("clients", "console-clients-caption"),
        &[
            "console-col-name",
            "console-col-client-id",
            "console-col-type",
            "console-col-verification",
            "console-col-created",
        ],
        rows,
        "console-clients-empty",
    );
    let mut listing = visit.listing("console-clients-intro", table);
    listing.links.push(super::Link {
        href: format!("{}/scopes", super::tenant_path(&m.slug)),
        label: visit.t("console-scopes-link"),
    });
    page.sections.push(listing);
    if m.role.as_str() == "owner" {
        let mut f = visit.form(format!("{at}/create"), visit.t("console-clients-create"));
        f.controls
            .push(Control::Input(visit.name_input("client-name", typed.name)));
        f.controls.extend(super::profile_inputs(
            visit,
            "client",
            &typed.description,
            &typed.logo_url,
        ));
        f.controls.push(choice(
            ("client-type", "client_type", visit.t("console-col-type")),
            ["confidential", "public"]
                .iter()
                .map(|t| {
                    (
                        (*t).to_owned(),
                        visit.t(&format!("console-client-type-{t}")),
                    )
                })
                .collect(),
            &typed.client_type,
        ));
        f.controls.push(lines(
            "client-redirects",
            "redirect_uris",
            visit.t("console-client-redirect-uris"),
            visit.t("console-hint-lines"),
            typed.redirect_uris,
        ));
        f.controls.push(lines(
            "client-logout",
            "post_logout_redirect_uris",
            visit.t("console-client-logout-uris"),
            visit.t("console-hint-lines"),
            typed.post_logout,
        ));
        f.controls.push(lines(
            "client-scopes",
            "allowed_scopes",
            visit.t("console-client-scopes"),
            visit.t("console-client-scopes-hint"),
            if typed.scopes.is_empty() {
                "openid".to_owned()
            } else {
                typed.scopes
            },
        ));
        f.controls
            .push(first_party_select(visit, &typed.first_party));
        f.controls.push(alg_select(visit, &typed.alg));
        visit.new_item(&mut page, "console-clients-new", f, &typed.reason);
    }
    visit.answer_page(page)
}

/// A page showing a client's id and, once, its secret.
fn issued_page(visit: &Visit, back: String, client_id: &str, secret: Option<String>) -> Response {
    let intro = if secret.is_some() {
        vec![visit.t("console-client-secret-intro")]
    } else {
        Vec::new()
    };
    let facts = vec![(visit.t("console-col-client-id"), client_id.to_owned())];
    visit.shown_once("console-client-issued", (intro, facts), secret, back)
}

/// Registers a client (owner; a confidential one after a recent re-authentication).
pub async fn create(Path(slug): Path<String>, p: TenantPost) -> Response {
    let (visit, form, c) = p.into_parts();
    let one = |name: &str| form.one(name);
    let at = base(&slug);
    let scopes = form.lines("allowed_scopes");
    let req = CreateOAuthClientRequest {
        name: one("name").trim().to_owned(),
        description: super::optional(&one("description")),
        logo_url: super::optional(&one("logo_url")),
        client_type: one("client_type"),
        token_endpoint_auth_method: None,
        redirect_uris: form.lines("redirect_uris"),
        post_logout_redirect_uris: form.lines("post_logout_redirect_uris"),
        allowed_scopes: (!scopes.is_empty()).then_some(scopes),
        first_party: one("first_party") == "true",
        id_token_signed_response_alg: super::optional(&one("id_token_signed_response_alg")),
    };
    match api::create(State(visit.state.clone()), c, ApiJson(req)).await {
        Ok(resp) => {
            let Some(v) = json_body(resp).await else {
                return visit.refused(&ApiError::internal("the new client could not be read"));
            };
            let id = v["client_id"].as_str().unwrap_or("").to_owned();
            let secret = v["client_secret"].as_str().map(str::to_owned);
            issued_page(&visit, format!("{at}/{id}"), &id, secret)
        }
        Err(e) if e.code == "dashboard/reauth_required" => reauth_page(&visit, &at, None),
        Err(e) if e.status == StatusCode::BAD_REQUEST || e.status == StatusCode::CONFLICT => {
            let typed = Typed {
                name: one("name"),
                redirect_uris: one("redirect_uris"),
                post_logout: one("post_logout_redirect_uris"),
                scopes: one("allowed_scopes"),
                description: one("description"),
                logo_url: one("logo_url"),
                client_type: one("client_type"),
                first_party: one("first_party"),
                alg: one("id_token_signed_response_alg"),
                reason: reasons(&e),
            };
            render_list(&visit, &slug, None, typed).await
        }
        Err(e) => visit.refused(&e),
    }
}

/// One client's registration, and an owner's actions.
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
    let path = Path((slug.clone(), id.clone()));
    let client = match api::show(State(visit.state.clone()), c, path).await {
        Ok(axum::Json(c)) => c,
        Err(e) => return visit.refused(&e),
    };
    let here = format!("{}/{}", base(&slug), client.client_id);
    let mut page = visit.tenant_page(&m, Area::Clients, "console-client");
    page.sections.push(Section {
        facts: vec![
            (visit.t("console-col-name"), client.name.clone()),
            (visit.t("console-col-client-id"), client.client_id.clone()),
            (
                visit.t("console-field-description"),
                client.description.clone().unwrap_or_else(dash),
            ),
            (
                visit.t("console-client-first-party"),
                visit.t(if client.first_party {
                    "console-yes"
                } else {
                    "console-no"
                }),
            ),
            (
                visit.t("console-client-id-token-alg"),
                client.id_token_signed_response_alg.clone(),
            ),
            (
                visit.t("console-col-type"),
                visit.t(&format!("console-client-type-{}", client.client_type)),
            ),
            (
                visit.t("console-col-verification"),
                visit.t(&format!(
                    "console-client-verification-{}",
                    client.verification
                )),
            ),
            (
                visit.t("console-client-redirect-uris"),
                joined(&client.redirect_uris),
            ),
            (
                visit.t("console-client-logout-uris"),
                joined(&client.post_logout_redirect_uris),
            ),
            (
                visit.t("console-client-scopes"),
                joined(&client.allowed_scopes),
            ),
            (
                visit.t("console-client-secret-prefix"),
                client
                    .secret_prefix
                    .as_ref()
                    .map_or_else(dash, |p| format!("{p}…")),
            ),
            (visit.t("console-col-created"), moment(client.created_at)),
        ],
        ..Section::default()
    });
    page.notice = notice;
    page.error_summary = refused.map(|r| visit.not_accepted(&r));
    if m.role.as_str() == "owner" {
        // The registration as a form: what the API's update takes here.
        let mut f = visit.form(format!("{here}/edit"), visit.t("console-save"));
        f.controls.push(Control::Input(
            visit.name_input("client-name", client.name.clone()),
        ));
        f.controls.extend(super::profile_inputs(
            visit,
            "client",
            client.description.as_deref().unwrap_or(""),
            client.logo_url.as_deref().unwrap_or(""),
        ));
        for (id, field, label, hint, values) in [
            (
                "client-redirects",
                "redirect_uris",
                "console-client-redirect-uris",
                "console-hint-lines",
                &client.redirect_uris,
            ),
            (
                "client-logout",
                "post_logout_redirect_uris",
                "console-client-logout-uris",
                "console-hint-lines",
                &client.post_logout_redirect_uris,
            ),
            (
                "client-scopes",
                "allowed_scopes",
                "console-client-scopes",
                "console-client-scopes-hint",
                &client.allowed_scopes,
            ),
        ] {
            f.controls.push(lines(
                id,
                field,
                visit.t(label),
                visit.t(hint),
                values.join("\n"),
            ));
        }
        let first_party = if client.first_party { "true" } else { "false" };
        f.controls.push(first_party_select(visit, first_party));
        f.controls
            .push(alg_select(visit, &client.id_token_signed_response_alg));
        page.sections.push(Section {
            heading: Some(visit.t("console-client-edit")),
            forms: vec![f],
            ..Section::default()
        });
        let mut buttons = Vec::new();
        if client.client_type == "confidential" {
            buttons.push((format!("{here}/rotate"), "console-client-rotate", true));
        }
        buttons.push((format!("{here}/delete"), "console-client-delete", true));
        page.sections.push(visit.actions(buttons));
    }
    visit.answer_page(page)
}

/// An owner's action on a client: `edit` (its registration, as the form says), `rotate`
/// (the new secret, shown once) or `delete`.
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
            let req = UpdateOAuthClientRequest {
                name: Some(form.one("name").trim().to_owned()),
                description: Some(super::optional(&form.one("description"))),
                logo_url: Some(super::optional(&form.one("logo_url"))),
                redirect_uris: Some(form.lines("redirect_uris")),
                post_logout_redirect_uris: Some(form.lines("post_logout_redirect_uris")),
                allowed_scopes: Some(form.lines("allowed_scopes")),
                first_party: Some(form.one("first_party") == "true"),
                id_token_signed_response_alg: super::optional(
                    &form.one("id_token_signed_response_alg"),
                ),
            };
            let updated = api::update(state, c, path, ApiJson(req)).await;
            let again = |r| render_detail(&visit, &slug, &id, (None, Some(r)));
            return visit.saved(updated, &here, again).await;
        }
        "rotate" => api::rotate_secret(state, c, path)
            .await
            .map(|axum::Json(r)| {
                issued_page(&visit, here.clone(), &r.client.client_id, r.client_secret)
            }),
        "delete" => api::delete(state, c, path)
            .await
            .map(|_| visit.go(&format!("{}?done=deleted", base(&slug)))),
        _ => Err(ApiError::not_found("action")),
    };
    visit.acted(answer, &here)
}
