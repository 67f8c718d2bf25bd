//! The console's first pages: the signed-in account's tenants (with its own second factor's
//! state), and a tenant's overview.

use axum::{
    extract::{Path, Query, State},
    http::StatusCode,
    response::Response,
};

use crate::delivery::templates::escape_html;

use super::{tenant_path, Area, Cell, Link, Section, Visit};
use crate::http::dashboard::activity::{self, ActivityDayResponse, ActivityQuery};

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
        table: Some(visit.table(
            ("tenants", "console-tenants-caption"),
            &["console-col-tenant", "console-col-slug", "console-col-role"],
            rows,
            "console-tenants-empty",
        )),
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

/// A bar chart of the days' sign-ins (blue) and refused sign-ins (red), as inline SVG made
/// from numbers only; `label` names it for assistive technology.
pub fn sign_in_chart(days: &[(u64, u64)], label: &str) -> String {
    const W: u64 = 700;
    const H: u64 = 160;
    let n = days.len().max(1) as u64;
    let top = days
        .iter()
        .map(|(a, b)| (*a).max(*b))
        .max()
        .unwrap_or(0)
        .max(1);
    let slot = W / n;
    let bar = (slot.saturating_sub(4) / 2).max(1);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {}\" role=\"img\" aria-label=\"{}\">",
        H + 2,
        escape_html(label)
    );
    svg.push_str(&format!(
        "<line x1=\"0\" y1=\"{H}\" x2=\"{W}\" y2=\"{H}\" stroke=\"#6e7781\" stroke-width=\"1\"/>"
    ));
    for (i, (ok, failed)) in days.iter().enumerate() {
        let x = i as u64 * slot + 2;
        for (j, (value, colour)) in [(*ok, "#1f4fd1"), (*failed, "#b3261e")].iter().enumerate() {
            let h = value * (H - 4) / top;
            svg.push_str(&format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{bar}\" height=\"{h}\" fill=\"{colour}\"/>",
                x + j as u64 * bar,
                H - h
            ));
        }
    }
    svg.push_str("</svg>");
    svg
}

/// A tenant's overview: what it is, the reader's role, this month's active users and the
/// last two weeks' sign-ins (a chart and its table), and where to go.
pub async fn overview(visit: Visit, Path(slug): Path<String>) -> Response {
    let (caller, m) = match visit.tenant(&slug) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let activity = match activity::get(
        State(visit.state.clone()),
        caller,
        Query(ActivityQuery::default()),
    )
    .await
    {
        Ok(axum::Json(a)) => a,
        Err(e) => return visit.refused(&e),
    };
    let mut page = visit.tenant_page(&m, Area::Overview, "console-overview");
    let base = tenant_path(&m.slug);
    let total = |f: fn(&ActivityDayResponse) -> u64| activity.days.iter().map(f).sum::<u64>();
    page.sections.push(Section {
        facts: vec![
            (visit.t("console-col-tenant"), m.name.clone()),
            (visit.t("console-col-slug"), m.slug.clone()),
            (
                visit.t("console-col-role"),
                role_name(&visit, m.role.as_str()),
            ),
            (
                visit.t_with("console-active-users", &[("month", &activity.month)]),
                activity.active_users.to_string(),
            ),
            (
                visit.t("console-sign-ins-14"),
                total(|d| d.sign_ins).to_string(),
            ),
            (
                visit.t("console-failures-14"),
                total(|d| d.failures).to_string(),
            ),
        ],
        ..Section::default()
    });
    let label = visit.t("console-chart-label");
    let bars: Vec<(u64, u64)> = activity
        .days
        .iter()
        .map(|d| (d.sign_ins, d.failures))
        .collect();
    page.sections.push(Section {
        heading: Some(visit.t("console-activity")),
        chart: Some((
            sign_in_chart(&bars, &label),
            visit.t("console-chart-caption"),
        )),
        table: Some(
            visit.table(
                ("activity", "console-activity-caption"),
                &[
                    "console-col-day",
                    "console-col-sign-ins",
                    "console-col-failures",
                ],
                activity
                    .days
                    .iter()
                    .rev()
                    .map(|d| {
                        vec![
                            Cell::text(d.day.clone()),
                            Cell::text(d.sign_ins.to_string()),
                            Cell::text(d.failures.to_string()),
                        ]
                    })
                    .collect(),
                "",
            ),
        ),
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

#[cfg(test)]
mod tests {
    use super::sign_in_chart;

    #[test]
    fn the_chart_is_numbers_and_an_escaped_label() {
        let svg = sign_in_chart(&[(3, 1), (0, 0), (6, 2)], "Sign-ins <b>&");
        assert!(
            svg.contains("aria-label=\"Sign-ins &lt;b&gt;&amp;\""),
            "{svg}"
        );
        // The tallest bar fills the height; a zero is a bar of no height.
        assert!(svg.contains("height=\"156\""), "{svg}");
        assert!(svg.contains("height=\"0\""), "{svg}");
        assert_eq!(svg.matches("<rect").count(), 6);
        assert!(!svg.contains("<script") && !svg.contains("style="));
    }
}
