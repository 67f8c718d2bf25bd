//! The development mail viewer (`mail.dev_viewer`, off by default): `{accounts_url}/dev/mail`
//! lists what the file transport wrote, newest first, and `/dev/mail/{file}` shows one message
//! with its links to follow, so a developer trying the server reads the verification or reset
//! mail in the browser that then opens its link. The configuration refuses it with SMTP and
//! on a listener that is not loopback: the messages carry live links.
//!
//! The pages are the hosted pages' (template, headers, CSP, languages), for people and not
//! in the OpenAPI document. Reading goes through `delivery::outbox`, as `admin outbox` does.

use axum::{
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::Response,
    routing::get,
    Router,
};

use crate::{
    app::AppState,
    delivery::outbox,
    http::pages::{LinkView, Problem, Reader},
};

/// The viewer's routes, merged only when `mail.dev_viewer` is on.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/dev/mail", get(list))
        .route("/dev/mail/{file}", get(message))
}

/// The outbox, read off the runtime (a directory listing and file reads).
async fn read<T: Send + 'static>(
    state: &AppState,
    read: impl FnOnce(&std::path::Path) -> std::io::Result<T> + Send + 'static,
) -> Result<T, Problem> {
    let dir = state.config.data_path(&state.config.mail.outbox_dir);
    match tokio::task::spawn_blocking(move || read(&dir)).await {
        Ok(Ok(found)) => Ok(found),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "the mail outbox could not be read");
            Err(Problem::Internal)
        }
        Err(_) => Err(Problem::Internal),
    }
}

async fn list(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let reader = Reader::new(&state, &headers, None);
    let entries = match read(&state, |dir| outbox::list(dir, None)).await {
        Ok(e) => e,
        Err(p) => return reader.problem(p),
    };
    let mut page = reader.page("dev-mail-title");
    page.paragraphs.push(reader.t("dev-mail-intro"));
    if entries.is_empty() {
        page.paragraphs.push(reader.t("dev-mail-empty"));
    }
    page.links = entries
        .into_iter()
        .map(|e| {
            let parts = [e.date, e.to, e.subject];
            LinkView {
                href: format!("/dev/mail/{}", e.file),
                label: parts.into_iter().flatten().collect::<Vec<_>>().join(" · "),
            }
        })
        .collect();
    reader.answer(StatusCode::OK, page, &[])
}

async fn message(
    State(state): State<AppState>,
    Path(file): Path<String>,
    headers: HeaderMap,
) -> Response {
    let reader = Reader::new(&state, &headers, None);
    let found = match read(&state, move |dir| outbox::show(dir, &file)).await {
        Ok(found) => found,
        Err(p) => return reader.problem(p),
    };
    let Some(m) = found else {
        return reader.problem_page(
            StatusCode::NOT_FOUND,
            "dev-mail-missing-title",
            "dev-mail-missing",
        );
    };
    let mut page = reader.page("dev-mail-message-title");
    let e = m.entry;
    for (label, value) in [
        ("dev-mail-to", e.to),
        ("dev-mail-subject", e.subject),
        ("dev-mail-date", e.date),
        ("dev-mail-tenant", e.tenant),
    ] {
        if let Some(v) = value {
            page.paragraphs
                .push(reader.t_with(label, &[("value", v.as_str())]));
        }
    }
    page.text = Some(m.text);
    page.links = m
        .links
        .into_iter()
        .map(|href| LinkView {
            label: href.clone(),
            href,
        })
        .collect();
    page.link = Some(LinkView {
        href: "/dev/mail".to_owned(),
        label: reader.t("dev-mail-back"),
    });
    reader.answer(StatusCode::OK, page, &[])
}
