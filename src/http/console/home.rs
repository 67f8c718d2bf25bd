//! The console's first pages: the signed-in account's tenants (with its own second factor's
//! state), and a tenant's overview.

use axum::{extract::Path, http::StatusCode, response::Response};

use super::{tenant_path, Area, Cell, Link, Section, Table, Visit};

/// The role's name in the reader's language.
pub fn role_name(visit: &Visit, role: &str) -> String {
    visit.t(&format!("console-role-{role}"))
}

/// The tenants the account is a member of, each a link to its overview.
pub async fn tenants(visit: Visit) -> Response {
    let auth = match visit.signed_in() {
        Ok(a) => a,
        Err(r) => return r,
    };
    let mut page = visit.page("console-tenants-title");
    let rows = auth
        .session
        .memberships
        .iter()
        .map(|m| {
            vec![
                Cell::link(m.name.clone(), tenant_path(&m.slug)),
                Cell::text(m.slug.clone()),
                Cell::text(role_name(&visit, m.role.as_str())),
            ]
        })
        .collect();
    page.sections.push(Section {
        table: Some(Table {
            id: "tenants",
            caption: visit.t("console-tenants-caption"),
            head: vec![
                visit.t("console-col-tenant"),
                visit.t("console-col-slug"),
                visit.t("console-col-role"),
            ],
            rows,
            empty: visit.t("console-tenants-empty"),
        }),
        ..Section::default()
    });
    let s = &auth.session;
    let yes_no = |b: bool| visit.t(if b { "console-yes" } else { "console-no" });
    page.sections.push(Section {
        heading: Some(visit.t("console-account")),
        facts: vec![
            (visit.t("console-email"), s.email.clone()),
            (
                visit.t("console-account-verified"),
                yes_no(s.email_verified),
            ),
            (visit.t("console-account-mfa"), yes_no(s.mfa_enabled)),
        ],
        links: vec![Link {
            href: "/console/account".to_owned(),
            label: visit.t("console-account-manage"),
        }],
        ..Section::default()
    });
    visit.answer(StatusCode::OK, page)
}

/// A tenant's overview: what it is, the reader's role, and where to go.
pub async fn overview(visit: Visit, Path(slug): Path<String>) -> Response {
    let auth = match visit.signed_in() {
        Ok(a) => a,
        Err(r) => return r,
    };
    let (m, _) = match auth.member(&visit.state, &slug) {
        Ok(m) => m,
        Err(e) => return visit.refused(&e),
    };
    let mut page = visit.tenant_page(&m, Area::Overview, "console-overview");
    let base = tenant_path(&m.slug);
    page.sections.push(Section {
        facts: vec![
            (visit.t("console-col-tenant"), m.name.clone()),
            (visit.t("console-col-slug"), m.slug.clone()),
            (
                visit.t("console-col-role"),
                role_name(&visit, m.role.as_str()),
            ),
        ],
        links: vec![
            Link {
                href: format!("{base}/users"),
                label: visit.t("console-users"),
            },
            Link {
                href: format!("{base}/audit"),
                label: visit.t("console-audit"),
            },
        ],
        ..Section::default()
    });
    visit.answer(StatusCode::OK, page)
}
