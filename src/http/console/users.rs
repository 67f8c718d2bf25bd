//! A tenant's users in the console: search by address prefix and status, one user's
//! profile, factors and sessions, and the actions the API offers (block, unblock, sign out
//! everywhere, mail a reset link, reset MFA and delete, the last two after a
//! re-authentication), all through `http::users`' functions.

use axum::{
    extract::{Path, Query},
    http::StatusCode,
    response::Response,
};
use serde::Deserialize;
use tessera_actors::{directory::dashboard::MemberOf, tenant::messages::UserAction};
use tessera_wire::{ManagedUser, UserStatus};

use super::{
    moment, sign_in::reauth_page, tenant_path, Area, Cell, Control, DoneQuery, Form as PageForm,
    Section, Select, SelectOption, TenantPost, Visit,
};
use crate::http::{
    pages::FieldView,
    users::{self as api, Manager, UsersQuery},
};

const STATUSES: [&str; 5] = ["active", "blocked", "held", "anonymous", "unverified"];
/// The actions a page offers, by the path segment the API uses.
const ACTIONS: [&str; 6] = [
    "block",
    "unblock",
    "sign-out",
    "send-password-reset",
    "reset-mfa",
    "delete",
];

#[derive(Deserialize)]
pub struct ListQuery {
    email: Option<String>,
    status: Option<String>,
    /// `YYYY-MM-DD`: created on that day or after.
    created_after: Option<String>,
    /// `YYYY-MM-DD`: last signed in before that day (never signed in: not listed).
    last_sign_in_before: Option<String>,
    cursor: Option<String>,
    /// `delete`: the user the reader deleted is gone.
    done: Option<String>,
}

fn status_name(visit: &Visit, s: UserStatus) -> String {
    visit.t(&format!("console-status-{}", s.as_str()))
}

fn or_never(visit: &Visit, t: Option<time::OffsetDateTime>) -> String {
    t.map_or_else(|| visit.t("console-never"), moment)
}

/// The signed-in session's membership of tenant `slug`, and the users' manager it acts as.
#[allow(
    clippy::result_large_err,
    reason = "a page's refusal is the page itself, the handler's own answer"
)]
fn manager(visit: &Visit, slug: &str) -> Result<(MemberOf, Manager), Response> {
    let (auth, m) = visit.member(slug)?;
    let manager = Manager::member(&visit.state, auth, slug).map_err(|e| visit.refused(&e))?;
    Ok((m, manager))
}

/// The users page: the filters, then a page of users newest first.
pub async fn list(visit: Visit, Path(slug): Path<String>, Query(q): Query<ListQuery>) -> Response {
    let (m, manager) = match manager(&visit, &slug) {
        Ok(m) => m,
        Err(r) => return r,
    };
    let email = q.email.clone().filter(|e| !e.trim().is_empty());
    let status = q.status.clone().filter(|s| STATUSES.contains(&s.as_str()));
    // A day from a date input, as the API's RFC 3339 moment (its start, UTC).
    let day = |d: &Option<String>| d.clone().filter(|d| !d.trim().is_empty());
    let (created_after, signed_in_before) = (day(&q.created_after), day(&q.last_sign_in_before));
    let moment_of = |d: &Option<String>| d.as_ref().map(|d| format!("{}T00:00:00Z", d.trim()));
    let query = UsersQuery {
        email: email.clone(),
        status: status.clone(),
        created_after: moment_of(&created_after),
        last_sign_in_before: moment_of(&signed_in_before),
        cursor: q.cursor.clone().filter(|c| !c.is_empty()),
        ..UsersQuery::default()
    };
    let page_of_users = match api::list(manager, query).await {
        Ok(axum::Json(p)) => p,
        Err(e) => return visit.refused(&e),
    };
    let base = format!("{}/users", tenant_path(&slug));
    let mut page = visit.tenant_page(&m, Area::Users, "console-users");
    page.notice = q
        .done
        .filter(|d| d == "delete")
        .map(|_| visit.t("console-done-delete"));
    let mut filter = PageForm::search(base.clone(), visit.t("console-search"));
    let mut f = FieldView::input(
        "email-prefix",
        "email",
        "search",
        visit.t("console-email-prefix"),
        "off",
    );
    f.value = email.clone().unwrap_or_default();
    f.max = 254;
    filter.controls.push(Control::Input(f));
    for (id, name, label, value) in [
        (
            "created-after",
            "created_after",
            "console-created-after",
            &created_after,
        ),
        (
            "signed-in-before",
            "last_sign_in_before",
            "console-signed-in-before",
            &signed_in_before,
        ),
    ] {
        let mut d = FieldView::input(id, name, "date", visit.t(label), "off");
        d.value = value.clone().unwrap_or_default();
        d.max = 10;
        filter.controls.push(Control::Input(d));
    }
    let mut options = vec![SelectOption {
        value: String::new(),
        label: visit.t("console-status-any"),
        selected: status.is_none(),
    }];
    options.extend(STATUSES.iter().map(|s| SelectOption {
        value: (*s).to_owned(),
        label: visit.t(&format!("console-status-{s}")),
        selected: status.as_deref() == Some(*s),
    }));
    filter.controls.push(Control::Select(Select {
        id: "status".to_owned(),
        name: "status".to_owned(),
        label: visit.t("console-col-status"),
        options,
        error: None,
    }));
    let rows = page_of_users
        .data
        .iter()
        .map(|u: &ManagedUser| {
            let name = u
                .email
                .clone()
                .or_else(|| u.phone.clone())
                .unwrap_or_else(|| u.id.to_string());
            vec![
                Cell::link(name, format!("{base}/{}", u.id)),
                Cell::text(status_name(&visit, u.status)),
                Cell::text(moment(u.created_at)),
                Cell::text(or_never(&visit, u.last_sign_in_at)),
            ]
        })
        .collect();
    let mut links = Vec::new();
    if let Some(next) = page_of_users.pagination.next_cursor {
        let mut query = form_urlencoded::Serializer::new(String::new());
        if let Some(e) = &email {
            query.append_pair("email", e);
        }
        if let Some(s) = &status {
            query.append_pair("status", s);
        }
        if let Some(d) = &created_after {
            query.append_pair("created_after", d);
        }
        if let Some(d) = &signed_in_before {
            query.append_pair("last_sign_in_before", d);
        }
        query.append_pair("cursor", &next);
        links.push(super::Link {
            href: format!("{base}?{}", query.finish()),
            label: visit.t("console-next-page"),
        });
    }
    page.sections.push(Section {
        forms: vec![filter],
        table: Some(visit.table(
            ("users", "console-users-caption"),
            &[
                "console-col-user",
                "console-col-status",
                "console-col-created",
                "console-col-last-sign-in",
            ],
            rows,
            "console-users-empty",
        )),
        links,
        ..Section::default()
    });
    visit.answer(StatusCode::OK, page)
}

/// One user: profile, factors, sessions, and the actions the reader's role allows.
pub async fn detail(
    visit: Visit,
    Path((slug, id)): Path<(String, String)>,
    Query(q): Query<DoneQuery>,
) -> Response {
    let (m, manager) = match manager(&visit, &slug) {
        Ok(m) => m,
        Err(r) => return r,
    };
    let d = match api::show(manager, &id).await {
        Ok(axum::Json(d)) => d,
        Err(e) => return visit.refused(&e),
    };
    let u = &d.user;
    let mut page = visit.tenant_page(&m, Area::Users, "console-user-title");
    page.notice = q
        .done
        .filter(|a| ACTIONS.contains(&a.as_str()))
        .map(|a| visit.t(&format!("console-done-{a}")));
    let yes_no = |b: bool| visit.t(if b { "console-yes" } else { "console-no" });
    let dash = || "—".to_owned();
    let mut facts = vec![
        (visit.t("console-user-id"), u.id.to_string()),
        (
            visit.t("console-email"),
            u.email.clone().unwrap_or_else(dash),
        ),
        (visit.t("console-user-verified"), yes_no(u.email_verified)),
        (
            visit.t("console-user-phone"),
            u.phone.clone().unwrap_or_else(dash),
        ),
        (visit.t("console-col-status"), status_name(&visit, u.status)),
        (visit.t("console-col-created"), moment(u.created_at)),
        (
            visit.t("console-col-last-sign-in"),
            or_never(&visit, u.last_sign_in_at),
        ),
    ];
    if let Some(at) = u.blocked_at {
        facts.push((visit.t("console-user-blocked-at"), moment(at)));
    }
    page.sections.push(Section {
        facts,
        ..Section::default()
    });
    let providers = if d.factors.linked_providers.is_empty() {
        dash()
    } else {
        d.factors.linked_providers.join(", ")
    };
    page.sections.push(Section {
        heading: Some(visit.t("console-factors")),
        facts: vec![
            (visit.t("console-user-mfa"), yes_no(d.factors.totp_enabled)),
            (
                visit.t("console-user-recovery"),
                d.factors.recovery_codes_remaining.to_string(),
            ),
            (
                visit.t("console-user-passkeys"),
                d.factors.passkeys.to_string(),
            ),
            (visit.t("console-user-providers"), providers),
        ],
        ..Section::default()
    });
    page.sections.push(Section {
        heading: Some(visit.t("console-user-activity")),
        facts: vec![
            (
                visit.t("console-user-last-active"),
                moment(d.activity.last_active_at),
            ),
            (
                visit.t_with("console-user-active-month", &[("month", &d.activity.month)]),
                yes_no(d.activity.active_this_month),
            ),
        ],
        ..Section::default()
    });
    let rows = d
        .sessions
        .iter()
        .map(|s| {
            vec![
                Cell::text(moment(s.created_at)),
                Cell::text(moment(s.last_used_at)),
                Cell::text(s.device.clone().unwrap_or_else(dash)),
                Cell::text(s.amr.join(", ")),
            ]
        })
        .collect();
    page.sections.push(Section {
        heading: Some(visit.t("console-sessions")),
        table: Some(visit.table(
            ("sessions", "console-sessions-caption"),
            &[
                "console-col-started",
                "console-col-last-used",
                "console-col-device",
                "console-col-methods",
            ],
            rows,
            "console-sessions-empty",
        )),
        ..Section::default()
    });
    if m.role.as_str() != "viewer" {
        let here = format!("{}/users/{}", tenant_path(&slug), u.id);
        let mut offered = Vec::new();
        offered.push(if u.status == UserStatus::Blocked {
            "unblock"
        } else {
            "block"
        });
        offered.push("sign-out");
        if u.email.is_some() {
            offered.push("send-password-reset");
        }
        if d.factors.totp_enabled {
            offered.push("reset-mfa");
        }
        offered.push("delete");
        let forms = offered
            .into_iter()
            .map(|a| {
                let action = format!("{here}/{a}");
                let mut f = PageForm::post(
                    action.clone(),
                    visit.csrf(&action),
                    visit.t(&format!("console-action-{a}")),
                    a != "block" && a != "unblock",
                );
                f.inline = true;
                f
            })
            .collect();
        page.sections.push(Section {
            heading: Some(visit.t("console-actions")),
            paragraphs: vec![visit.t("console-actions-intro")],
            forms,
            ..Section::default()
        });
    }
    visit.answer(StatusCode::OK, page)
}

/// An action on a user: the API's function, then the user's page saying it was done (the
/// users list after a deletion). A sensitive one without a recent re-authentication asks for
/// the password, then returns to the user's page.
pub async fn act(
    Path((slug, id, action)): Path<(String, String, String)>,
    p: TenantPost,
) -> Response {
    let TenantPost { visit, caller, .. } = p;
    let users = format!("{}/users", tenant_path(&slug));
    let here = format!("{users}/{id}");
    let manager = match Manager::member(&visit.state, &caller.auth, &slug) {
        Ok(m) => m,
        Err(e) => return visit.refused(&e),
    };
    let done = if action == "delete" {
        api::delete(manager, &id).await.map(|_| users.clone())
    } else {
        let what: UserAction = match api::action_of(&action) {
            Ok(a) => a,
            Err(e) => return visit.refused(&e),
        };
        api::act(manager, &id, what).await.map(|_| here.clone())
    };
    match done {
        Ok(to) => visit.go(&format!("{to}?done={action}")),
        Err(e) if e.code == "dashboard/reauth_required" => reauth_page(&visit, &here, None),
        Err(e) => visit.refused(&e),
    }
}
