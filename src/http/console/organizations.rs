//! A tenant's organizations in the console: the list and a new one; one organization with
//! its name, members and pending invitations, its domains and its single sign-on
//! connections (made by `org_sso.rs`); renamed, deleted (after a recent re-authentication), people
//! invited or removed. All through the organization routes' own handlers
//! (`http::organizations`), with their rules: any member reads, admins and owners write.

use axum::{
    extract::{Path, Query, State},
    http::StatusCode,
    response::Response,
};
use serde::Deserialize;
use uuid::Uuid;

use super::{
    choice, dash, json_body, moment, org_sso, reasons, tenant_path, Area, Cell, Control,
    FormFields, Link, Refused, Section, TenantCaller, TenantPost, Visit,
};
use crate::http::{
    error::ApiError,
    extract::ApiJson,
    organizations::{
        admin::{
            self as api, CreateOrganizationRequest, InviteRequest, PageQuery,
            UpdateOrganizationRequest,
        },
        connections, domains, OrgAdmin,
    },
    pages::FieldView,
};

/// What a page after a form may say was done (`console-org-done-{done}`).
const DONE: [&str; 12] = [
    "created",
    "renamed",
    "deleted",
    "invited",
    "removed",
    "domain-added",
    "domain-verified",
    "domain-changed",
    "domain-removed",
    "connection-added",
    "connection-changed",
    "connection-deleted",
];

#[derive(Deserialize)]
pub struct ListQuery {
    done: Option<String>,
    cursor: Option<String>,
}

pub(super) fn base(slug: &str) -> String {
    format!("{}/organizations", tenant_path(slug))
}

/// The page of one organization.
pub(super) fn org_path(slug: &str, org: &str) -> String {
    format!("{}/{org}", base(slug))
}

fn done_notice(visit: &Visit, done: Option<String>) -> Option<String> {
    done.filter(|d| DONE.contains(&d.as_str()))
        .map(|d| visit.t(&format!("console-org-done-{d}")))
}

/// The organization handlers' caller: the session acting in tenant `c.slug`, with the values
/// of the route's path the handler reads.
#[allow(
    clippy::result_large_err,
    reason = "a page's refusal is the page itself, the handler's own answer"
)]
pub(super) fn admin(
    visit: &Visit,
    c: &TenantCaller,
    params: &[(&str, &str)],
) -> Result<OrgAdmin, Response> {
    OrgAdmin::member(&visit.state, &c.auth, &c.slug, params).map_err(|e| visit.refused(&e))
}

/// An organization's page being made: who reads it, acting as whom, on which
/// organization (its id as the organization says it), whether they may change it, and the
/// form refused, if one was.
pub(super) struct OrgView<'a> {
    pub visit: &'a Visit,
    pub c: &'a TenantCaller,
    pub org: &'a str,
    pub writer: bool,
    pub refused: Option<&'a Refused>,
}

impl OrgView<'_> {
    /// What was typed in `field` of `form` when that form was refused, else empty.
    pub(super) fn typed(&self, form: &str, field: &str) -> String {
        Refused::typed(self.refused, form, field)
    }

    /// Why `form` was refused, said beside its first field.
    pub(super) fn error_of(&self, form: &str) -> Option<String> {
        Refused::error_of(self.refused, self.visit, form)
    }

    /// The organization handlers' caller with the organization and `more` path values.
    #[allow(
        clippy::result_large_err,
        reason = "a page's refusal is the page itself, the handler's own answer"
    )]
    pub(super) fn admin(&self, more: &[(&str, &str)]) -> Result<OrgAdmin, Response> {
        let mut params = vec![("org_id", self.org)];
        params.extend_from_slice(more);
        admin(self.visit, self.c, &params)
    }

    /// The organization's page.
    pub(super) fn here(&self) -> String {
        org_path(&self.c.slug, self.org)
    }
}

/// Whether the member may change organizations (admins and owners).
pub(super) fn writes(role: &str) -> bool {
    role != "viewer"
}

/// The organizations, and a writer's form for a new one.
pub async fn list(visit: Visit, Path(slug): Path<String>, Query(q): Query<ListQuery>) -> Response {
    let notice = done_notice(&visit, q.done);
    render_list(&visit, &slug, notice, q.cursor, Default::default()).await
}

async fn render_list(
    visit: &Visit,
    slug: &str,
    notice: Option<String>,
    cursor: Option<String>,
    (typed_name, typed_external, reason): (String, String, String),
) -> Response {
    let (c, m) = match visit.tenant(slug) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let a = match admin(visit, &c, &[]) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let query = PageQuery {
        limit: Some("50".to_owned()),
        cursor: cursor.filter(|c| !c.is_empty()),
    };
    let listed = match api::list(a, Query(query)).await {
        Ok(axum::Json(l)) => l,
        Err(e) => return visit.refused(&e),
    };
    let at = base(slug);
    let mut page = visit.tenant_page(&m, Area::Organizations, "console-organizations");
    page.notice = notice;
    let rows = listed
        .data
        .iter()
        .map(|o| {
            vec![
                Cell::link(o.name.clone(), format!("{at}/{}", o.id)),
                Cell::text(o.external_id.clone().unwrap_or_else(dash)),
                Cell::text(moment(o.created_at)),
            ]
        })
        .collect();
    let table = visit.table(
        ("organizations", "console-organizations-caption"),
        &[
            "console-col-name",
            "console-col-external-id",
            "console-col-created",
        ],
        rows,
        "console-organizations-empty",
    );
    let mut section = visit.listing("console-organizations-intro", table);
    if let Some(next) = listed.pagination.next_cursor {
        section.links.push(Link {
            href: format!("{at}?cursor={next}"),
            label: visit.t("console-next-page"),
        });
    }
    page.sections.push(section);
    if writes(m.role.as_str()) {
        let mut f = visit.form(
            format!("{at}/create"),
            visit.t("console-organizations-create"),
        );
        let name = visit
            .text_input("org-name", "name", "console-col-name", (1, 200))
            .filled(typed_name, None);
        let mut external = visit
            .text_input(
                "org-external-id",
                "external_id",
                "console-col-external-id",
                (0, 200),
            )
            .filled(typed_external, None);
        external.hint = Some(visit.t("console-org-external-id-hint"));
        f.controls.push(Control::Input(name));
        f.controls.push(Control::Input(external));
        visit.new_item(&mut page, "console-organizations-new", f, &reason);
    }
    visit.answer_page(page)
}

/// Creates an organization (admin, owner), then shows it.
pub async fn create(Path(slug): Path<String>, p: TenantPost) -> Response {
    let (visit, form, c) = p.into_parts();
    let name = form.one("name");
    let external = form.one("external_id").trim().to_owned();
    let a = match admin(&visit, &c, &[]) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let req = CreateOrganizationRequest {
        name: name.clone(),
        external_id: Some(external.clone()).filter(|x| !x.is_empty()),
        metadata: serde_json::Value::Null,
    };
    match api::create(a, ApiJson(req)).await {
        Ok(resp) => {
            let id = json_body(resp)
                .await
                .and_then(|v| v.get("id")?.as_str().map(str::to_owned));
            match id {
                Some(id) => visit.go(&format!("{}?done=created", org_path(&slug, &id))),
                None => visit.refused(&ApiError::internal(
                    "the new organization could not be read",
                )),
            }
        }
        Err(e) if e.status == StatusCode::BAD_REQUEST || e.status == StatusCode::CONFLICT => {
            render_list(&visit, &slug, None, None, (name, external, reasons(&e))).await
        }
        Err(e) => visit.acted(Err(e), &base(&slug)),
    }
}

#[derive(Deserialize)]
pub struct DetailQuery {
    done: Option<String>,
}

/// One organization: what it is, its members and invitations, its domains and connections,
/// and a writer's forms.
pub async fn detail(
    visit: Visit,
    Path((slug, org)): Path<(String, String)>,
    Query(q): Query<DetailQuery>,
) -> Response {
    let notice = done_notice(&visit, q.done);
    render_detail(&visit, &slug, &org, notice, None).await
}

/// The organization's page, saying `notice` (what was done) or which form was refused,
/// why, with what was typed in it (the page answers the refusal's status then).
pub(super) async fn render_detail(
    visit: &Visit,
    slug: &str,
    org: &str,
    notice: Option<String>,
    refused: Option<Refused>,
) -> Response {
    let (c, m) = match visit.tenant(slug) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let params = [("org_id", org)];
    let found = match admin(visit, &c, &params) {
        Ok(a) => api::show(a).await,
        Err(r) => return r,
    };
    let o = match found {
        Ok(axum::Json(o)) => o,
        Err(e) => return visit.refused(&e),
    };
    // The organization's own spelling of its id, whatever form of it the path held.
    let id = o.id.to_string();
    let here = org_path(slug, &id);
    let writer = writes(m.role.as_str());
    let mut page = visit.tenant_page(&m, Area::Organizations, "console-organization");
    page.title = o.name.clone();
    page.notice = notice;
    page.error_summary = refused.as_ref().map(|r| visit.not_accepted(&r.reason));
    let view = OrgView {
        visit,
        c: &c,
        org: &id,
        writer,
        refused: refused.as_ref(),
    };
    let mut about = Section {
        facts: vec![
            (visit.t("console-col-name"), o.name.clone()),
            (visit.t("console-user-id"), id.clone()),
            (
                visit.t("console-col-external-id"),
                o.external_id.clone().unwrap_or_else(dash),
            ),
            (visit.t("console-col-created"), moment(o.created_at)),
        ],
        links: vec![Link {
            href: base(slug),
            label: visit.t("console-organizations-all"),
        }],
        ..Section::default()
    };
    if writer {
        let mut rename = visit.form(format!("{here}/rename"), visit.t("console-org-rename"));
        let error = view.error_of("rename");
        let value = if error.is_some() {
            view.typed("rename", "name")
        } else {
            o.name.clone()
        };
        let name = visit
            .text_input("org-rename", "name", "console-col-name", (1, 200))
            .filled(value, error);
        rename.controls.push(Control::Input(name));
        about.forms.push(rename);
    }
    page.sections.push(about);
    match members_sections(&view).await {
        Ok(mut sections) => page.sections.append(&mut sections),
        Err(r) => return r,
    }
    match sign_in_sections(&view).await {
        Ok(mut sections) => page.sections.append(&mut sections),
        Err(r) => return r,
    }
    if writer {
        let mut actions =
            visit.actions(vec![(format!("{here}/delete"), "console-org-delete", true)]);
        actions.paragraphs.push(visit.t("console-org-delete-intro"));
        page.sections.push(actions);
    }
    let status = refused.as_ref().map_or(StatusCode::OK, |r| r.status);
    visit.answer(status, page)
}

/// The members (the first 100, by user id) with a writer's buttons to remove each, the
/// pending invitations, and a writer's form to invite someone.
async fn members_sections(v: &OrgView<'_>) -> Result<Vec<Section>, Response> {
    let (visit, writer) = (v.visit, v.writer);
    let query = PageQuery {
        limit: Some("100".to_owned()),
        cursor: None,
    };
    let members = api::members(v.admin(&[])?, Query(query))
        .await
        .map_err(|e| visit.refused(&e))?
        .0;
    let invitations = api::invitations(v.admin(&[])?)
        .await
        .map_err(|e| visit.refused(&e))?
        .0;
    let here = v.here();
    let rows = members
        .data
        .iter()
        .map(|m| {
            vec![
                Cell::text(m.email.clone().unwrap_or_else(dash)),
                Cell::text(m.role.clone()),
                Cell::text(visit.t(&format!("console-org-joined-{}", m.joined_via))),
                Cell::text(moment(m.created_at)),
            ]
        })
        .collect();
    let mut people = Section {
        heading: Some(visit.t("console-org-members")),
        table: Some(visit.table(
            ("org-members", "console-org-members-caption"),
            &[
                "console-email",
                "console-col-role-of",
                "console-col-joined-via",
                "console-col-added",
            ],
            rows,
            "console-org-members-empty",
        )),
        ..Section::default()
    };
    if members.pagination.next_cursor.is_some() {
        people.paragraphs.push(visit.t("console-org-members-more"));
    }
    if writer {
        for m in &members.data {
            let who = m.email.clone().unwrap_or_else(|| m.user_id.to_string());
            let label = visit.t_with("console-org-member-remove", &[("email", &who)]);
            let action = format!("{here}/members/{}/remove", m.user_id);
            people.forms.push(visit.button(action, label, true));
        }
    }
    let rows = invitations
        .data
        .iter()
        .map(|i| {
            vec![
                Cell::text(i.email.clone()),
                Cell::text(i.role.clone()),
                Cell::text(moment(i.expires_at)),
            ]
        })
        .collect();
    let mut invited = Section {
        heading: Some(visit.t("console-org-invitations")),
        table: Some(visit.table(
            ("org-invitations", "console-org-invitations-caption"),
            &[
                "console-email",
                "console-col-role-of",
                "console-col-expires",
            ],
            rows,
            "console-org-invitations-empty",
        )),
        ..Section::default()
    };
    if writer {
        let roles = api::roles(admin(visit, v.c, &[])?)
            .await
            .map_err(|e| visit.refused(&e))?
            .0;
        let mut f = visit.form(format!("{here}/invite"), visit.t("console-invite"));
        let email = FieldView::input(
            "org-invite-email",
            "email",
            "email",
            visit.t("console-email"),
            "off",
        )
        .sized(3, 320)
        .filled(v.typed("invite", "email"), v.error_of("invite"));
        f.controls.push(Control::Input(email));
        let role = Some(v.typed("invite", "role")).filter(|r| !r.is_empty());
        f.controls.push(choice(
            ("org-invite-role", "role", visit.t("console-col-role-of")),
            roles
                .data
                .iter()
                .map(|r| (r.name.clone(), r.name.clone()))
                .collect(),
            role.as_deref().unwrap_or("member"),
        ));
        invited.paragraphs.push(visit.t("console-org-invite-intro"));
        invited.forms.push(f);
    }
    Ok(vec![people, invited])
}

/// The domains' and the connections' sections (`org_sso.rs`).
async fn sign_in_sections(v: &OrgView<'_>) -> Result<Vec<Section>, Response> {
    let visit = v.visit;
    let claimed = domains::list(v.admin(&[])?)
        .await
        .map_err(|e| visit.refused(&e))?
        .0
        .data;
    let connected = connections::list(State(visit.state.clone()), v.admin(&[])?)
        .await
        .map_err(|e| visit.refused(&e))?
        .0
        .data;
    Ok(org_sso::sections(
        visit,
        (&v.here(), v.writer, v.refused),
        (&claimed, &connected),
    ))
}

/// A writer's action on an organization: `rename`, `delete` (re-authenticated; back to the
/// list), `invite`, `add-domain` or `add-connection`.
pub async fn act(
    Path((slug, org, what)): Path<(String, String, String)>,
    p: TenantPost,
) -> Response {
    let (visit, form, c) = p.into_parts();
    let here = org_path(&slug, &org);
    let a = match admin(&visit, &c, &[("org_id", &org)]) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let which = match what.as_str() {
        "rename" => "rename",
        "invite" => "invite",
        "add-domain" => "add-domain",
        "add-connection" => "add-connection",
        _ => "action",
    };
    let answer = match what.as_str() {
        "rename" => {
            let req = UpdateOrganizationRequest {
                name: Some(form.one("name")),
                external_id: None,
                metadata: None,
            };
            api::update(a, ApiJson(req)).await.map(|_| "renamed")
        }
        "delete" => {
            return match api::delete(a).await {
                Ok(_) => visit.go(&format!("{}?done=deleted", base(&slug))),
                Err(e) => visit.acted(Err(e), &here),
            };
        }
        "invite" => {
            let req = InviteRequest {
                email: form.one("email").trim().to_owned(),
                role: Some(form.one("role")).filter(|r| !r.is_empty()),
            };
            api::invite(a, ApiJson(req)).await.map(|_| "invited")
        }
        "add-domain" => org_sso::add_domain(a, &form).await,
        "add-connection" => org_sso::add_connection(visit.state.clone(), a, &form).await,
        _ => Err(ApiError::not_found("action")),
    };
    outcome(&visit, (&slug, &org), answer, (which, form)).await
}

/// Removes a member (admin, owner).
pub async fn remove_member(
    Path((slug, org, user)): Path<(String, String, String)>,
    p: TenantPost,
) -> Response {
    let (visit, form, c) = p.into_parts();
    let answer = match admin(&visit, &c, &[("org_id", &org), ("user_id", &user)]) {
        Ok(a) => api::remove_member(a).await.map(|_| "removed"),
        Err(r) => return r,
    };
    outcome(&visit, (&slug, &org), answer, ("action", form)).await
}

/// What a writer's form on the organization's page answers: back to the page saying it was
/// `done`; the page again saying why, with what was typed in `form` (its name and fields),
/// when a value was refused or a rule stood in the way (400) or no nameserver answered
/// (502); the password asked again when it needs a recent re-authentication; else the
/// refusal's page.
pub(super) async fn outcome(
    visit: &Visit,
    (slug, org): (&str, &str),
    answer: Result<&str, ApiError>,
    (form, fields): (&'static str, FormFields),
) -> Response {
    // The organization's own spelling of its id (the path may hold another form of it).
    let org = Uuid::parse_str(org).map_or_else(|_| org.to_owned(), |u| u.to_string());
    let here = org_path(slug, &org);
    match answer {
        Ok(done) => visit.go(&format!("{here}?done={done}")),
        Err(e)
            if matches!(
                e.status,
                StatusCode::BAD_REQUEST | StatusCode::CONFLICT | StatusCode::BAD_GATEWAY
            ) =>
        {
            let status = if e.status == StatusCode::BAD_GATEWAY {
                StatusCode::BAD_GATEWAY
            } else {
                StatusCode::BAD_REQUEST
            };
            let refused = Refused {
                form: form.to_owned(),
                reason: reasons(&e),
                fields,
                status,
            };
            render_detail(visit, slug, &org, None, Some(refused)).await
        }
        Err(e) => visit.acted(Err(e), &here),
    }
}

/// A writer's action on a claimed domain (`org_sso::domain_action`).
pub async fn domain_act(
    Path((slug, org, domain, what)): Path<(String, String, String, String)>,
    p: TenantPost,
) -> Response {
    let (visit, form, c) = p.into_parts();
    let answer = match admin(&visit, &c, &[("org_id", &org), ("domain", &domain)]) {
        Ok(a) => org_sso::domain_action(visit.state.clone(), a, &what).await,
        Err(r) => return r,
    };
    outcome(&visit, (&slug, &org), answer, ("action", form)).await
}

/// A writer's action on a connection (`org_sso::connection_action`).
pub async fn connection_act(
    Path((slug, org, id, what)): Path<(String, String, String, String)>,
    p: TenantPost,
) -> Response {
    let (visit, form, c) = p.into_parts();
    let answer = match admin(&visit, &c, &[("org_id", &org), ("connection_id", &id)]) {
        Ok(a) => org_sso::connection_action(visit.state.clone(), a, &what).await,
        Err(r) => return r,
    };
    outcome(&visit, (&slug, &org), answer, ("action", form)).await
}
