//! How an organization's people sign in, on its console page: the domains it claims (the
//! TXT record that proves each, checked when asked; joining by the domain and single sign-on
//! only, turned on and off; a claim removed) and its single sign-on connections (what the
//! identity provider is told, turned on and off, deleted; a new SAML 2.0 connection by its
//! metadata, a new OpenID Connect one by its issuer and client). All through the organization
//! routes' handlers (`organizations::domains`, `organizations::connections`); the pages and
//! routes that use these are `organizations.rs`'s.

use axum::extract::State;

use super::{dash, joined, lines, Cell, Control, FormFields, Refused, Section, Visit};
use crate::{
    app::AppState,
    http::{
        error::ApiError,
        extract::ApiJson,
        organizations::{
            connections::{self, Connection, ConnectionRequest, OidcBody, SamlBody},
            domains::{self, OrganizationDomain, UpdateDomainRequest},
            OrgAdmin,
        },
        pages::FieldView,
    },
};

/// The domains' and the connections' sections of the organization whose page is `here`
/// (a writer's forms when `writer`).
pub(super) fn sections(
    visit: &Visit,
    (here, writer, refused): (&str, bool, Option<&Refused>),
    (claimed, connected): (&[OrganizationDomain], &[Connection]),
) -> Vec<Section> {
    let yes_no = |b: bool| visit.yes_no(b);
    let rows = claimed
        .iter()
        .map(|d| {
            vec![
                Cell::text(d.domain.clone()),
                Cell::text(yes_no(d.verified)),
                Cell::text(d.txt_name.clone()),
                Cell::text(d.txt_value.clone()),
                Cell::text(yes_no(d.auto_join)),
                Cell::text(yes_no(d.sso_only)),
            ]
        })
        .collect();
    let mut domains = Section {
        heading: Some(visit.t("console-org-domains")),
        paragraphs: vec![visit.t("console-org-domains-intro")],
        table: Some(visit.table(
            ("org-domains", "console-org-domains-caption"),
            &[
                "console-col-domain",
                "console-col-proven",
                "console-col-txt-name",
                "console-col-txt-value",
                "console-col-auto-join",
                "console-col-sso-only",
            ],
            rows,
            "console-org-domains-empty",
        )),
        ..Section::default()
    };
    if writer {
        for d in claimed {
            let at = format!("{here}/domains/{}", d.domain);
            let mut buttons = Vec::new();
            if !d.verified {
                buttons.push(("verify", "console-org-domain-verify", false));
            }
            buttons.push(if d.auto_join {
                ("auto-join-off", "console-org-domain-auto-join-off", true)
            } else {
                ("auto-join-on", "console-org-domain-auto-join-on", true)
            });
            buttons.push(if d.sso_only {
                ("sso-only-off", "console-org-domain-sso-only-off", true)
            } else {
                ("sso-only-on", "console-org-domain-sso-only-on", true)
            });
            buttons.push(("remove", "console-org-domain-remove", true));
            for (what, label, secondary) in buttons {
                let label = visit.t_with(label, &[("domain", &d.domain)]);
                domains
                    .forms
                    .push(visit.button(format!("{at}/{what}"), label, secondary));
            }
        }
        let mut f = visit.form(
            format!("{here}/add-domain"),
            visit.t("console-org-domain-add"),
        );
        let domain = visit
            .text_input("org-domain", "domain", "console-col-domain", (1, 253))
            .filled(
                Refused::typed(refused, "add-domain", "domain"),
                Refused::error_of(refused, visit, "add-domain"),
            );
        f.controls.push(Control::Input(domain));
        domains.forms.push(f);
    }
    let mut out = vec![domains, connections_intro(visit, connected.is_empty())];
    for conn in connected {
        out.push(connection_section(visit, here, conn, writer));
    }
    if writer {
        out.push(new_connection(visit, here, "saml", refused));
        out.push(new_connection(visit, here, "oidc", refused));
    }
    out
}

fn connections_intro(visit: &Visit, none: bool) -> Section {
    let mut paragraphs = vec![visit.t("console-org-connections-intro")];
    if none {
        paragraphs.push(visit.t("console-org-connections-empty"));
    }
    Section {
        heading: Some(visit.t("console-org-connections")),
        paragraphs,
        ..Section::default()
    }
}

/// One connection: what it is and what its identity provider is told; a writer's buttons.
fn connection_section(visit: &Visit, here: &str, conn: &Connection, writer: bool) -> Section {
    let yes_no = |b: bool| visit.yes_no(b);
    let mut facts = vec![
        (
            visit.t("console-col-type"),
            visit.t(&format!("console-org-connection-{}", conn.protocol)),
        ),
        (visit.t("console-col-status"), yes_no(conn.enabled)),
        (visit.t("console-org-fact-jit"), yes_no(conn.jit)),
        (
            visit.t("console-org-fact-default-role"),
            conn.default_role.clone(),
        ),
        (visit.t("console-org-fact-start"), conn.start_url.clone()),
    ];
    if let Some(s) = &conn.saml {
        facts.push((
            visit.t("console-org-fact-idp-entity-id"),
            s.idp_entity_id.clone(),
        ));
        facts.push((
            visit.t("console-org-fact-sp-entity-id"),
            s.sp.entity_id.clone(),
        ));
        facts.push((visit.t("console-org-fact-acs"), s.sp.acs_url.clone()));
        facts.push((
            visit.t("console-org-fact-sp-metadata"),
            s.sp.metadata_url.clone(),
        ));
    }
    if let Some(o) = &conn.oidc {
        facts.push((visit.t("console-field-issuer"), o.issuer.clone()));
        facts.push((visit.t("console-col-client-id"), o.client_id.clone()));
        facts.push((visit.t("console-field-scopes"), joined(&o.scopes)));
        facts.push((
            visit.t("console-org-fact-redirect-uri"),
            o.redirect_uri.clone(),
        ));
    }
    let mapped = conn
        .group_roles
        .iter()
        .map(|g| format!("{} → {}", g.group, g.role))
        .collect::<Vec<_>>();
    facts.push((
        visit.t("console-org-fact-group-roles"),
        if mapped.is_empty() {
            dash()
        } else {
            mapped.join(", ")
        },
    ));
    let mut section = Section {
        heading: Some(conn.name.clone()),
        facts,
        ..Section::default()
    };
    if writer {
        let at = format!("{here}/connections/{}", conn.id);
        let toggle = if conn.enabled {
            ("disable", "console-org-connection-disable")
        } else {
            ("enable", "console-org-connection-enable")
        };
        for (what, label) in [toggle, ("delete", "console-org-connection-delete")] {
            let label = visit.t_with(label, &[("name", &conn.name)]);
            section
                .forms
                .push(visit.button(format!("{at}/{what}"), label, true));
        }
    }
    section
}

/// A writer's form for a new connection of `kind` (`saml` or `oidc`), with what was typed
/// in it when it was refused (never the client secret).
fn new_connection(
    visit: &Visit,
    here: &str,
    kind: &'static str,
    refused: Option<&Refused>,
) -> Section {
    let mine = Refused::typed(refused, "add-connection", "type") == kind;
    let typed = |field: &str| {
        if mine {
            Refused::typed(refused, "add-connection", field)
        } else {
            String::new()
        }
    };
    let mut f = visit.form(
        format!("{here}/add-connection"),
        visit.t("console-org-connection-create"),
    );
    f.hidden.push(("type", kind.to_owned()));
    let input = |id: &str, name: &'static str, ty: &'static str, label: &str, max: usize| {
        FieldView::input(id, name, ty, visit.t(label), "off")
            .sized(0, max)
            .filled(typed(name), None)
    };
    let mut name = input(
        &format!("{kind}-name"),
        "name",
        "text",
        "console-col-name",
        200,
    )
    .sized(1, 200);
    name.error = mine
        .then(|| Refused::error_of(refused, visit, "add-connection"))
        .flatten();
    f.controls.push(Control::Input(name));
    if kind == "saml" {
        let mut url = input(
            "saml-metadata-url",
            "metadata_url",
            "url",
            "console-field-metadata_url",
            2048,
        );
        url.hint = Some(visit.t("console-org-metadata-hint"));
        f.controls.push(Control::Input(url));
        f.controls.push(lines(
            (
                "saml-metadata-xml",
                "metadata_xml",
                visit.t("console-field-metadata_xml"),
            ),
            None,
            typed("metadata_xml"),
            None,
        ));
    } else {
        let mut issuer =
            input("oidc-issuer", "issuer", "url", "console-field-issuer", 2048).sized(1, 2048);
        issuer.hint = Some(visit.t("console-org-issuer-hint"));
        f.controls.push(Control::Input(issuer));
        f.controls.push(Control::Input(
            input(
                "oidc-client-id",
                "client_id",
                "text",
                "console-field-client_id",
                512,
            )
            .sized(1, 512),
        ));
        // The secret is typed again after a refusal: it is never written into a page.
        let secret = FieldView::input(
            "oidc-client-secret",
            "client_secret",
            "password",
            visit.t("console-field-client_secret"),
            "off",
        )
        .sized(1, 2048);
        f.controls.push(Control::Input(secret));
    }
    Section {
        heading: Some(visit.t(&format!("console-org-connection-{kind}-new"))),
        paragraphs: vec![visit.t(&format!("console-org-connection-{kind}-intro"))],
        forms: vec![f],
        ..Section::default()
    }
}

/// Claims the form's domain.
pub(super) async fn add_domain(a: OrgAdmin, form: &FormFields) -> Result<&'static str, ApiError> {
    let req = domains::AddDomainRequest {
        domain: form.one("domain"),
    };
    domains::add(a, ApiJson(req)).await.map(|_| "domain-added")
}

/// Creates the form's connection (its provider's metadata or discovery document is read now).
pub(super) async fn add_connection(
    state: AppState,
    a: OrgAdmin,
    form: &FormFields,
) -> Result<&'static str, ApiError> {
    let one = |name: &str| Some(form.one(name).trim().to_owned()).filter(|v| !v.is_empty());
    let kind = form.one("type");
    let req = ConnectionRequest {
        name: one("name"),
        protocol: Some(kind.clone()),
        saml: (kind == "saml").then(|| SamlBody {
            metadata_url: one("metadata_url"),
            metadata_xml: one("metadata_xml"),
            ..SamlBody::default()
        }),
        oidc: (kind == "oidc").then(|| OidcBody {
            issuer: one("issuer"),
            client_id: one("client_id"),
            client_secret: one("client_secret"),
            scopes: None,
        }),
        ..ConnectionRequest::default()
    };
    connections::create(State(state), a, ApiJson(req))
        .await
        .map(|_| "connection-added")
}

/// A writer's action on a claimed domain: `verify`, `auto-join-on`, `auto-join-off`,
/// `sso-only-on`, `sso-only-off` or `remove`; what was done.
pub(super) async fn domain_action(
    state: AppState,
    a: OrgAdmin,
    what: &str,
) -> Result<&'static str, ApiError> {
    let change = |auto_join, sso_only| UpdateDomainRequest {
        auto_join,
        sso_only,
    };
    match what {
        "verify" => domains::verify(State(state), a)
            .await
            .map(|_| "domain-verified"),
        "auto-join-on" | "auto-join-off" => {
            let req = change(Some(what == "auto-join-on"), None);
            domains::update(a, ApiJson(req))
                .await
                .map(|_| "domain-changed")
        }
        "sso-only-on" | "sso-only-off" => {
            let req = change(None, Some(what == "sso-only-on"));
            domains::update(a, ApiJson(req))
                .await
                .map(|_| "domain-changed")
        }
        "remove" => domains::remove(a).await.map(|_| "domain-removed"),
        _ => Err(ApiError::not_found("action")),
    }
}

/// A writer's action on a connection: `enable`, `disable` or `delete`; what was done.
pub(super) async fn connection_action(
    state: AppState,
    a: OrgAdmin,
    what: &str,
) -> Result<&'static str, ApiError> {
    match what {
        "enable" | "disable" => {
            let req = ConnectionRequest {
                enabled: Some(what == "enable"),
                ..ConnectionRequest::default()
            };
            connections::update(State(state), a, ApiJson(req))
                .await
                .map(|_| "connection-changed")
        }
        "delete" => connections::delete(a).await.map(|_| "connection-deleted"),
        _ => Err(ApiError::not_found("action")),
    }
}
