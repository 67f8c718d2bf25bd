//! The account page itself: what the account holds, each part with the forms that change
//! it; read through the API's own functions for the signed-in user.
//!
//! Its own file: the one page every action returns to.

use axum::{extract::Query, http::StatusCode, response::Response};
use serde::Deserialize;

use super::{Account, AccountPage};
use crate::http::{
    accounts,
    extract::RequestCtx,
    my_agents,
    oauth::consents,
    pages::FieldView,
    passkeys,
    sections::{
        moment, Cell, CheckGroup, CheckOption, Control, Section, Select, SelectOption, Table,
    },
};

#[derive(Deserialize)]
pub struct DoneQuery {
    done: Option<String>,
}

/// `GET /oauth/{slug}/account`.
pub async fn page(account: Account, Query(q): Query<DoneQuery>) -> Response {
    let notice = match q.done.as_deref() {
        Some(
            done @ ("password" | "mfa-off" | "passkey" | "passkey-added" | "session" | "others"
            | "app" | "agent"),
        ) => Some(account.t(&format!("account-done-{done}"))),
        _ => None,
    };
    let mut page = full(&account).await;
    page.notice = notice;
    account.answer(StatusCode::OK, page)
}

/// The account page again after a refused action, with the reason and the refusal's status.
pub async fn page_with_error(account: &Account, status: StatusCode, reason: String) -> Response {
    let mut page = full(account).await;
    page.error_summary = Some(reason);
    account.answer(status, page)
}

/// The whole page: each part read as the API reads it; a part that cannot be read says so
/// instead of failing the page.
async fn full(a: &Account) -> AccountPage {
    let mut page = a.page("account-title");
    page.sections.push(profile(a));
    page.sections.push(password(a));
    page.sections.push(two_step(a));
    page.sections.push(passkey_part(a).await);
    page.sections.push(sessions(a).await);
    page.sections.push(apps(a).await);
    page.sections.push(agents(a).await);
    page.sections.push(data(a));
    page
}

fn yes_no(a: &Account, b: bool) -> String {
    a.t(if b { "account-yes" } else { "account-no" })
}

fn profile(a: &Account) -> Section {
    let me = &a.me;
    let none = || a.t("account-none");
    let mut facts = vec![
        (a.t("account-email"), me.email.clone().unwrap_or_else(none)),
        (a.t("account-email-verified"), yes_no(a, me.email_verified)),
    ];
    if let Some(phone) = &me.phone {
        facts.push((a.t("account-phone"), phone.clone()));
        facts.push((a.t("account-phone-verified"), yes_no(a, me.phone_verified)));
    }
    facts.push((a.t("account-created"), moment(me.created_at)));
    if let Some(at) = me.last_sign_in_at {
        facts.push((a.t("account-last-sign-in"), moment(at)));
    }
    let mut section = Section {
        heading: Some(a.t("account-profile")),
        facts,
        ..Section::default()
    };
    if !me.is_anonymous {
        let mut form = a.form("email", "account-email-change", false);
        let mut new = FieldView::input(
            "new-email",
            "email",
            "email",
            a.t("account-email-new"),
            "email",
        );
        new.min = 3;
        form.controls = vec![Control::Input(new), a.password_field("email-password")];
        a.or_code(&mut form);
        section.paragraphs.push(a.t("account-email-intro"));
        section.forms.push(form);
    }
    section
}

fn password(a: &Account) -> Section {
    let mut form = a.form("password", "account-password-change", false);
    let current = FieldView::input(
        "current-password",
        "current_password",
        "password",
        a.t("account-password-current"),
        "current-password",
    )
    .sized(1, crate::http::pages::PASSWORD_MAX);
    let new = FieldView::new_password(
        "new_password",
        a.t("account-password-new"),
        Some(a.t("account-password-rule")),
    );
    form.controls = vec![Control::Input(current), Control::Input(new)];
    Section {
        heading: Some(a.t("account-password")),
        paragraphs: vec![a.t("account-password-intro")],
        forms: vec![form],
        ..Section::default()
    }
}

/// A code field (TOTP, or a recovery code where `recovery`).
pub fn code_field(a: &Account, id: &str, recovery: bool) -> Control {
    let label = if recovery {
        "account-code-or-recovery"
    } else {
        "account-code"
    };
    let max = if recovery { 64 } else { 6 };
    let mut code = FieldView::one_time_code(id, "code", a.t(label), (6, max));
    if recovery {
        // A recovery code has letters too.
        code.inputmode = "";
    }
    Control::Input(code)
}

fn two_step(a: &Account) -> Section {
    let me = &a.me;
    let mut section = Section {
        heading: Some(a.t("account-mfa")),
        ..Section::default()
    };
    if me.mfa_enabled {
        section.paragraphs.push(a.t("account-mfa-on"));
        let mut codes = a.form("mfa/codes", "account-mfa-codes", false);
        codes.controls = vec![
            code_field(a, "codes-code", false),
            a.password_field("codes-password"),
        ];
        let mut off = a.form("mfa/disable", "account-mfa-disable", true);
        off.controls = vec![
            code_field(a, "off-code", true),
            a.password_field("off-password"),
        ];
        section.forms = vec![codes, off];
    } else if me.is_anonymous {
        section.paragraphs.push(a.t("account-mfa-guest"));
    } else if !me.email_verified {
        section.paragraphs.push(a.t("account-mfa-verify-first"));
    } else {
        section.paragraphs.push(a.t("account-mfa-off"));
        let mut setup = a.form("mfa/setup", "account-mfa-setup", false);
        setup.controls = vec![a.password_field("setup-password")];
        a.or_code(&mut setup);
        section.forms.push(setup);
    }
    section
}

/// A form that picks one of `options` (value, label) by `name` and confirms with the password
/// when `gated`.
fn pick_form(
    a: &Account,
    action: &str,
    button: &str,
    (name, label): (&str, &str),
    options: Vec<(String, String)>,
    gated: bool,
) -> crate::http::sections::Form {
    let mut form = a.form(action, button, true);
    let id = action.replace('/', "-");
    form.controls.push(Control::Select(Select {
        id: format!("{id}-pick"),
        name: name.to_owned(),
        label: a.t(label),
        options: options
            .into_iter()
            .map(|(value, label)| SelectOption {
                value,
                label,
                selected: false,
            })
            .collect(),
        error: None,
    }));
    if gated {
        form.controls
            .push(a.password_field(&format!("{id}-password")));
        a.or_code(&mut form);
    }
    form
}

async fn passkey_part(a: &Account) -> Section {
    let mut section = Section {
        heading: Some(a.t("account-passkeys")),
        ..Section::default()
    };
    let list = match passkeys::list(a.user.clone()).await {
        Ok(axum::Json(l)) => l.passkeys,
        Err(_) => {
            section.paragraphs.push(a.t("account-unavailable"));
            return section;
        }
    };
    let name = |p: &passkeys::PasskeyResponse| {
        p.nickname
            .clone()
            .unwrap_or_else(|| a.t_with("account-passkey-unnamed", &[("date", &p.created_at)]))
    };
    section.table = Some(Table {
        id: "passkeys-caption",
        caption: a.t("account-passkeys"),
        head: vec![
            a.t("account-passkey-name"),
            a.t("account-created"),
            a.t("account-passkey-used"),
        ],
        rows: list
            .iter()
            .map(|p| {
                vec![
                    Cell::text(name(p)),
                    Cell::text(p.created_at.clone()),
                    Cell::text(
                        p.last_used_at
                            .clone()
                            .unwrap_or_else(|| a.t("account-never")),
                    ),
                ]
            })
            .collect(),
        empty: a.t("account-passkeys-none"),
    });
    if a.passkeys_on && a.me.email_verified && !a.me.is_anonymous {
        let mut add = a.form("passkeys/add", "account-passkey-add", false);
        add.controls.push(a.password_field("add-passkey-password"));
        a.or_code(&mut add);
        section.forms.push(add);
    }
    if !list.is_empty() {
        let options = list.iter().map(|p| (p.id.to_string(), name(p))).collect();
        section.forms.push(pick_form(
            a,
            "passkeys/remove",
            "account-passkey-remove",
            ("passkey", "account-passkey"),
            options,
            true,
        ));
    }
    section
}

async fn sessions(a: &Account) -> Section {
    let mut section = Section {
        heading: Some(a.t("account-sessions")),
        ..Section::default()
    };
    let list = match accounts::sessions(a.user.clone()).await {
        Ok(axum::Json(l)) => l.data,
        Err(_) => {
            section.paragraphs.push(a.t("account-unavailable"));
            return section;
        }
    };
    let label = |s: &accounts::SessionResponse| {
        let started = moment(s.created_at);
        if s.current {
            a.t_with("account-session-this", &[("date", &started)])
        } else {
            a.t_with("account-session-other", &[("date", &started)])
        }
    };
    section.table = Some(Table {
        id: "sessions-caption",
        caption: a.t("account-sessions"),
        head: vec![
            a.t("account-session"),
            a.t("account-session-active"),
            a.t("account-session-ways"),
        ],
        rows: list
            .iter()
            .map(|s| {
                vec![
                    Cell::text(label(s)),
                    Cell::text(moment(s.last_active_at)),
                    Cell::text(s.amr.join(", ")),
                ]
            })
            .collect(),
        empty: a.t("account-unavailable"),
    });
    let others: Vec<(String, String)> = list
        .iter()
        .filter(|s| !s.current)
        .map(|s| (s.id.to_string(), label(s)))
        .collect();
    if !others.is_empty() {
        section.forms.push(pick_form(
            a,
            "sessions/end",
            "account-session-end",
            ("session", "account-session"),
            others,
            false,
        ));
        section
            .forms
            .push(a.form("sessions/others", "account-sessions-end-others", true));
    }
    section
}

async fn apps(a: &Account) -> Section {
    let mut section = Section {
        heading: Some(a.t("account-apps")),
        paragraphs: vec![a.t("account-apps-intro")],
        ..Section::default()
    };
    let list = match consents::list(a.user.clone(), RequestCtx(a.ctx.clone())).await {
        Ok(axum::Json(l)) => l.data,
        Err(_) => {
            section.paragraphs.push(a.t("account-unavailable"));
            return section;
        }
    };
    section.table = Some(Table {
        id: "apps-caption",
        caption: a.t("account-apps"),
        head: vec![
            a.t("account-app"),
            a.t("account-app-scopes"),
            a.t("account-app-since"),
        ],
        rows: list
            .iter()
            .map(|c| {
                vec![
                    Cell::text(c.client_name.clone().unwrap_or_else(|| c.client_id.clone())),
                    Cell::text(c.scopes.join(" ")),
                    Cell::text(moment(c.granted_at)),
                ]
            })
            .collect(),
        empty: a.t("account-apps-none"),
    });
    if !list.is_empty() {
        let options = list
            .iter()
            .map(|c| {
                let name = c.client_name.clone().unwrap_or_else(|| c.client_id.clone());
                (c.client_id.clone(), name)
            })
            .collect();
        section.forms.push(pick_form(
            a,
            "apps/withdraw",
            "account-app-withdraw",
            ("client_id", "account-app"),
            options,
            false,
        ));
    }
    section
}

async fn agents(a: &Account) -> Section {
    let mut section = Section {
        heading: Some(a.t("account-agents")),
        paragraphs: vec![a.t("account-agents-intro")],
        ..Section::default()
    };
    let list = match my_agents::list(a.user.clone(), RequestCtx(a.ctx.clone())).await {
        Ok(axum::Json(l)) => l.data,
        Err(_) => {
            section.paragraphs.push(a.t("account-unavailable"));
            return section;
        }
    };
    let state = |g: &my_agents::UserAgentResponse| {
        if g.agent_revoked_at.is_some() {
            a.t("account-agent-blocked")
        } else if g.revoked_at.is_some() {
            a.t("account-agent-revoked")
        } else {
            a.t("account-agent-allowed")
        }
    };
    section.table = Some(Table {
        id: "agents-caption",
        caption: a.t("account-agents"),
        head: vec![
            a.t("account-agent"),
            a.t("account-agent-actions"),
            a.t("account-agent-last"),
            a.t("account-agent-state"),
        ],
        rows: list
            .iter()
            .map(|g| {
                vec![
                    Cell::text(g.agent_name.clone()),
                    Cell::text(g.action_count.to_string()),
                    Cell::text(
                        g.last_action_at
                            .map_or_else(|| a.t("account-never"), moment),
                    ),
                    Cell::text(state(g)),
                ]
            })
            .collect(),
        empty: a.t("account-agents-none"),
    });
    let live: Vec<(String, String)> = list
        .iter()
        .filter(|g| g.revoked_at.is_none())
        .map(|g| (g.agent_client_id.clone(), g.agent_name.clone()))
        .collect();
    if !live.is_empty() {
        section.forms.push(pick_form(
            a,
            "agents/revoke",
            "account-agent-revoke",
            ("agent", "account-agent"),
            live,
            false,
        ));
    }
    section
}

fn data(a: &Account) -> Section {
    let mut export = a.form("export", "account-export", false);
    export.controls = vec![a.password_field("export-password")];
    a.or_code(&mut export);
    let mut delete = a.form("delete", "account-delete", true);
    delete.controls = vec![
        a.password_field("delete-password"),
        Control::Checks(CheckGroup {
            legend: a.t("account-delete-sure"),
            name: "confirm".to_owned(),
            options: vec![CheckOption {
                id: "delete-confirm".to_owned(),
                value: "yes".to_owned(),
                label: a.t("account-delete-confirm"),
                checked: false,
            }],
            error: None,
        }),
    ];
    a.or_code(&mut delete);
    Section {
        heading: Some(a.t("account-data")),
        paragraphs: vec![a.t("account-data-intro"), a.t("account-delete-intro")],
        forms: vec![export, delete],
        ..Section::default()
    }
}
