//! A tenant's members and invitations in the console: who administers the tenant and in
//! which role, inviting a colleague by mail (they accept on `/dashboard/accept-invite`),
//! withdrawing an invitation, changing a role, removing a member or leaving, all through the
//! dashboard API's own handlers (`dashboard::members`).

use axum::{
    extract::{Path, Query, State},
    http::StatusCode,
    response::Response,
};

use super::{
    home::role_name, moment, tenant_path, Area, Cell, Control, DoneQuery, Section, Select,
    SelectOption, TenantPost, Visit,
};
use crate::http::{
    dashboard::members::{self as api, InviteMemberRequest, UpdateMemberRequest},
    error::ApiError,
    extract::ApiJson,
    pages::FieldView,
};

const ROLES: [&str; 3] = ["owner", "admin", "viewer"];
const DONE: [&str; 5] = ["invited", "revoked", "role", "removed", "left"];

fn role_select(visit: &Visit, id: String, current: &str, error: Option<String>) -> Control {
    Control::Select(Select {
        id,
        name: "role".to_owned(),
        label: visit.t("console-col-role-of"),
        options: ROLES
            .iter()
            .map(|r| SelectOption {
                value: (*r).to_owned(),
                label: role_name(visit, r),
                selected: *r == current,
            })
            .collect(),
        error,
    })
}

/// The members page: the members, the pending invitations, and an owner's forms.
pub async fn page(visit: Visit, Path(slug): Path<String>, Query(q): Query<DoneQuery>) -> Response {
    let notice = q
        .done
        .filter(|d| DONE.contains(&d.as_str()))
        .map(|d| visit.t(&format!("console-members-done-{d}")));
    render(&visit, &slug, notice, (String::new(), None)).await
}

async fn render(
    visit: &Visit,
    slug: &str,
    notice: Option<String>,
    (typed, error): (String, Option<String>),
) -> Response {
    let (c, m) = match visit.tenant(slug) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let me = c.auth.session.account_id;
    let list = match api::list(State(visit.state.clone()), c).await {
        Ok(axum::Json(l)) => l,
        Err(e) => return visit.refused(&e),
    };
    let owner = m.role.as_str() == "owner";
    let base = format!("{}/members", tenant_path(slug));
    let mut page = visit.tenant_page(&m, Area::Members, "console-members");
    page.notice = notice;
    page.error_summary = error.clone();
    let rows = list
        .data
        .iter()
        .map(|x| {
            vec![
                Cell::text(x.email.clone()),
                Cell::text(role_name(visit, &x.role)),
                Cell::text(moment(x.added_at)),
            ]
        })
        .collect();
    page.sections.push(Section {
        table: Some(visit.table(
            ("members", "console-members-caption"),
            &["console-email", "console-col-role-of", "console-col-added"],
            rows,
            "console-members-empty",
        )),
        ..Section::default()
    });
    // One small form a member: an owner changes roles and removes; anyone leaves.
    let mut forms = Vec::new();
    for x in &list.data {
        let at = format!("{base}/{}", x.account_id);
        if owner && x.account_id != me {
            let action = format!("{at}/role");
            let mut f = visit.button(
                action.clone(),
                visit.t_with("console-members-change", &[("email", &x.email)]),
                true,
            );
            f.controls.push(role_select(
                visit,
                format!("role-{}", x.account_id),
                &x.role,
                None,
            ));
            forms.push(f);
            let action = format!("{at}/remove");
            let f = visit.button(
                action.clone(),
                visit.t_with("console-members-remove", &[("email", &x.email)]),
                true,
            );
            forms.push(f);
        }
        if x.account_id == me {
            let action = format!("{at}/remove");
            let f = visit.button(action.clone(), visit.t("console-members-leave"), true);
            forms.push(f);
        }
    }
    if !forms.is_empty() {
        page.sections.push(Section {
            heading: Some(visit.t("console-members-manage")),
            forms,
            ..Section::default()
        });
    }
    let rows = list
        .invitations
        .iter()
        .map(|i| {
            vec![
                Cell::text(i.email.clone()),
                Cell::text(role_name(visit, &i.role)),
                Cell::text(moment(i.expires_at)),
            ]
        })
        .collect();
    let mut invitations = Section {
        heading: Some(visit.t("console-invitations")),
        table: Some(visit.table(
            ("invitations", "console-invitations-caption"),
            &[
                "console-email",
                "console-col-role-of",
                "console-col-expires",
            ],
            rows,
            "console-invitations-empty",
        )),
        ..Section::default()
    };
    if owner {
        let revoke = format!("{}/invitations/revoke", tenant_path(slug));
        for i in &list.invitations {
            let mut f = visit.button(
                revoke.clone(),
                visit.t_with("console-invitations-revoke", &[("email", &i.email)]),
                true,
            );
            f.hidden.push(("email", i.email.clone()));
            invitations.forms.push(f);
        }
        let action = format!("{base}/invite");
        let mut f = visit.form(action.clone(), visit.t("console-invite"));
        let mut email = FieldView::input(
            "invite-email",
            "email",
            "email",
            visit.t("console-email"),
            "off",
        );
        email.value = typed;
        email.max = 254;
        email.min = 3;
        email.error = error;
        f.controls.push(Control::Input(email));
        f.controls
            .push(role_select(visit, "invite-role".to_owned(), "admin", None));
        page.sections.push(invitations);
        page.sections.push(Section {
            heading: Some(visit.t("console-invite-heading")),
            paragraphs: vec![visit.t("console-invite-intro")],
            forms: vec![f],
            ..Section::default()
        });
    } else {
        page.sections.push(invitations);
    }
    visit.answer_page(page)
}

/// What a refusal of a member change shows: the page again with its reason for a bad field
/// or a last owner, else the console's refusal.
async fn refused(visit: &Visit, slug: &str, e: ApiError, typed: String) -> Response {
    let reason = match (e.status, e.code.as_str()) {
        (StatusCode::BAD_REQUEST, _) => "console-invite-invalid",
        (StatusCode::CONFLICT, "dashboard/already_member") => "console-invite-member",
        (StatusCode::CONFLICT, "dashboard/last_owner") => "console-members-last-owner",
        _ => return visit.refused(&e),
    };
    render(visit, slug, None, (typed, Some(visit.t(reason)))).await
}

fn done(visit: &Visit, slug: &str, what: &str) -> Response {
    visit.go(&format!("{}/members?done={what}", tenant_path(slug)))
}

/// Invites an address with a role (owner): the API's invitation, mailed.
pub async fn invite(Path(slug): Path<String>, p: TenantPost) -> Response {
    let (visit, form, c) = p.into_parts();
    let email = form.one("email");
    let req = InviteMemberRequest {
        email: email.trim().to_owned(),
        role: form.one("role"),
    };
    match api::invite(State(visit.state.clone()), c, ApiJson(req)).await {
        Ok(_) => done(&visit, &slug, "invited"),
        Err(e) => refused(&visit, &slug, e, email).await,
    }
}

/// Withdraws a pending invitation (owner).
pub async fn revoke(Path(slug): Path<String>, p: TenantPost) -> Response {
    let (visit, form, c) = p.into_parts();
    let path = axum::extract::Path((slug.clone(), form.one("email")));
    match api::revoke(State(visit.state.clone()), c, path).await {
        Ok(_) => done(&visit, &slug, "revoked"),
        Err(e) => visit.refused(&e),
    }
}

/// Changes a member's role (owner).
pub async fn change_role(Path((slug, account)): Path<(String, String)>, p: TenantPost) -> Response {
    let (visit, form, c) = p.into_parts();
    let req = UpdateMemberRequest {
        role: form.one("role"),
    };
    let path = axum::extract::Path((slug.clone(), account));
    match api::update(State(visit.state.clone()), c, path, ApiJson(req)).await {
        Ok(_) => done(&visit, &slug, "role"),
        Err(e) => refused(&visit, &slug, e, String::new()).await,
    }
}

/// Removes a member (owner), or the reader leaves.
pub async fn remove(Path((slug, account)): Path<(String, String)>, p: TenantPost) -> Response {
    let (visit, _, c) = p.into_parts();
    let leaving = c.auth.session.account_id.to_string() == account;
    let path = axum::extract::Path((slug.clone(), account));
    match api::remove(State(visit.state.clone()), c, path).await {
        Ok(_) if leaving => visit.go("/console"),
        Ok(_) => done(&visit, &slug, "removed"),
        Err(e) => refused(&visit, &slug, e, String::new()).await,
    }
}
