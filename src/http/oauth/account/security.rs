//! The account page's ways in: changing the password, two-step verification (set up with a
//! QR code and a first code, the recovery codes shown once; new codes; off) and removing a
//! passkey, each through the API's function for it.
//!
//! Its own file: the actions that change how the person signs in.

use axum::{
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use tessera_actors::tenant::messages::MfaWho;

use super::{page::code_field, Account, PasskeyAdd, Posted};
use crate::http::{
    accounts::{self, ChangeEmailRequest, ChangePasswordRequest},
    extract::{ApiJson, RequestCtx},
    mfa::{self, MfaCaller, MfaManageRequest, MfaRegenerateCodesRequest, MfaVerifySetupRequest},
    pages::{field, qr_svg},
    passkeys::{self, PasskeyRegisterFinishRequest},
    sections::Section,
};

/// `POST .../account/password`: the current password and the new one; the person's other
/// sessions end (this one stays).
pub async fn password(p: Posted) -> Response {
    let Posted { account: a, form } = p;
    let req = ChangePasswordRequest {
        current_password: field(&form, "current_password").to_owned(),
        new_password: field(&form, "new_password").to_owned(),
    };
    let (state, user, ctx) = a.api();
    let changed = accounts::change_password(state, user, ctx, ApiJson(req)).await;
    a.finish(changed, "password").await
}

/// `POST .../account/email`: steps up with the password, then asks to move the account to
/// the new address; the page that follows says to open the link mailed there (said alike
/// whatever the address, as the API answers).
pub async fn email(p: Posted) -> Result<Response, Response> {
    let Posted { account: a, form } = p;
    let step_up = a.stepped(&form, "email").await?;
    let req = ChangeEmailRequest {
        email: field(&form, "email").to_owned(),
    };
    let (state, user, ctx) = a.api();
    if let Err(e) = accounts::change_email(state, user, step_up, ctx, ApiJson(req)).await {
        return Err(a.refused(&e).await);
    }
    let mut page = a.after("account-email-sent-title");
    page.paragraphs.push(a.t("account-email-sent"));
    Ok(a.answer(StatusCode::OK, page))
}

/// The MFA caller of the signed-in session.
fn caller(a: &Account) -> MfaCaller {
    MfaCaller {
        tenant: a.user.tenant.clone(),
        who: MfaWho::Session(a.user.bearer),
        user: Some(a.user.clone()),
    }
}

/// The set-up page: the QR code, the secret for typing, and the form for the first code.
fn setup_page(a: &Account, secret: &str, uri: &str, error: Option<String>) -> Response {
    let status = if error.is_some() {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::OK
    };
    let mut page = a.after("account-mfa-setup-title");
    page.error_summary = error;
    let mut form = a.form("mfa/confirm", "account-mfa-confirm", false);
    form.hidden.push(("secret", secret.to_owned()));
    form.hidden.push(("uri", uri.to_owned()));
    form.controls.push(code_field(a, "code", false));
    page.sections.push(Section {
        paragraphs: vec![a.t("account-mfa-scan")],
        qr: qr_svg(uri),
        ..Section::default()
    });
    page.sections.push(Section {
        paragraphs: vec![a.t("account-mfa-type")],
        codes: vec![secret.to_owned()],
        forms: vec![form],
        ..Section::default()
    });
    a.answer(status, page)
}

/// The page that shows new recovery codes, once.
fn codes_page(a: &Account, title: &str, codes: Vec<String>) -> Response {
    let mut page = a.after(title);
    page.sections.push(Section {
        heading: Some(a.t("account-recovery-codes")),
        paragraphs: vec![a.t("account-recovery-codes-intro")],
        codes,
        ..Section::default()
    });
    a.answer(StatusCode::OK, page)
}

/// `POST .../account/mfa/setup`: steps up with the password, then a new pending seed.
pub async fn mfa_setup(p: Posted) -> Result<Response, Response> {
    let Posted { account: a, form } = p;
    let step_up = a.stepped(&form, "mfa/setup").await?;
    match mfa::setup(State(a.state.clone()), caller(&a), step_up).await {
        Ok(axum::Json(s)) => Ok(setup_page(&a, &s.secret, &s.otpauth_uri, None)),
        Err(e) => Err(a.refused(&e).await),
    }
}

/// `POST .../account/mfa/confirm`: the first code; the recovery codes, shown once. A wrong
/// code shows the same seed again (the page's own, echoed).
pub async fn mfa_confirm(p: Posted) -> Response {
    let Posted { account: a, form } = p;
    let req = MfaVerifySetupRequest {
        code: field(&form, "code").trim().to_owned(),
    };
    let answer = mfa::verify_setup(caller(&a), RequestCtx(a.ctx.clone()), ApiJson(req)).await;
    match answer {
        Ok(axum::Json(codes)) => codes_page(&a, "account-mfa-on-title", codes.recovery_codes),
        Err(e) if matches!(e.status, StatusCode::BAD_REQUEST | StatusCode::UNAUTHORIZED) => {
            let (secret, uri) = (field(&form, "secret"), field(&form, "uri"));
            if secret.len() > 128 || !uri.starts_with("otpauth://") || uri.len() > 1024 {
                return a.refused(&e).await;
            }
            setup_page(&a, secret, uri, Some(a.t("account-error-code")))
        }
        Err(e) => a.refused(&e).await,
    }
}

/// `POST .../account/mfa/disable`: the password and a code (TOTP or recovery).
pub async fn mfa_disable(p: Posted) -> Response {
    let Posted { account: a, form } = p;
    let req = MfaManageRequest {
        code: field(&form, "code").trim().to_owned(),
        password: field(&form, "password").to_owned(),
    };
    let (state, user, ctx) = a.api();
    let off = mfa::disable(state, user, ctx, ApiJson(req)).await;
    a.finish(off, "mfa-off").await
}

/// `POST .../account/mfa/codes`: the password and a TOTP code; ten new recovery codes.
pub async fn mfa_codes(p: Posted) -> Response {
    let Posted { account: a, form } = p;
    let req = MfaRegenerateCodesRequest {
        code: field(&form, "code").trim().to_owned(),
        password: field(&form, "password").to_owned(),
    };
    let (state, user, ctx) = a.api();
    match mfa::recovery_codes(state, user, ctx, ApiJson(req)).await {
        Ok(axum::Json(codes)) => codes_page(&a, "account-codes-title", codes.recovery_codes),
        Err(e) => a.refused(&e).await,
    }
}

/// `POST .../account/passkeys/remove`: steps up with the password, then removes the passkey
/// (the account's last way in is refused, as by the API).
pub async fn passkey_remove(p: Posted) -> Result<Response, Response> {
    let Posted { account: a, form } = p;
    let step_up = a.stepped(&form, "passkeys/remove").await?;
    let (state, user, ctx) = a.api();
    let id = axum::extract::Path(field(&form, "passkey").to_owned());
    let removed = passkeys::delete(state, user, step_up, id, ctx).await;
    Ok(a.finish(removed, "passkey").await)
}

/// `POST .../account/passkeys/add`: steps up with the password, then the creation options,
/// on the page whose script asks the browser for the new passkey.
pub async fn passkey_add(p: Posted) -> Result<Response, Response> {
    let Posted { account: a, form } = p;
    let step_up = a.stepped(&form, "passkeys/add").await?;
    let (state, user, _) = a.api();
    let options = match passkeys::register_begin(state, user, step_up).await {
        Ok(axum::Json(o)) => o.public_key,
        Err(e) => return Err(a.refused(&e).await),
    };
    let Ok(options) = serde_json::to_string(&options) else {
        return Err(a.reader.problem(crate::http::pages::Problem::Internal));
    };
    let mut page = a.after("account-passkey-add-title");
    page.paragraphs.push(a.t("account-passkey-add-intro"));
    page.passkey_add = Some(PasskeyAdd {
        options,
        finish: a.path("passkeys/finish"),
        csrf: a.csrf("passkeys/finish"),
        failed: a.t("account-passkey-add-failed"),
        name_label: a.t("account-passkey-add-name"),
        button: a.t("account-passkey-add-button"),
        no_script: a.t("account-passkey-add-no-script"),
    });
    Ok(a.answer(StatusCode::OK, page))
}

/// `POST .../account/passkeys/finish` (the script's): the new credential, checked and kept as
/// the API's register/finish does; answers JSON, `redirect_to` or the reader's `error`.
pub async fn passkey_finish(p: Posted) -> Response {
    let Posted { account: a, form } = p;
    let failed = |status: StatusCode, text: String| {
        let mut resp = (status, axum::Json(serde_json::json!({ "error": text }))).into_response();
        crate::http::pages::protect(resp.headers_mut());
        resp
    };
    let Ok(credential) = serde_json::from_str::<serde_json::Value>(field(&form, "credential"))
    else {
        return failed(StatusCode::BAD_REQUEST, a.t("account-passkey-add-failed"));
    };
    let nickname = Some(field(&form, "nickname").trim().to_owned()).filter(|n| !n.is_empty());
    let req = PasskeyRegisterFinishRequest {
        response: Some(credential),
        nickname,
    };
    match passkeys::register_finish(a.user.clone(), RequestCtx(a.ctx.clone()), ApiJson(req)).await {
        Ok(_) => {
            let mut resp = axum::Json(serde_json::json!({
                "redirect_to": format!("{}?done=passkey-added", a.path("")),
            }))
            .into_response();
            crate::http::pages::protect(resp.headers_mut());
            resp
        }
        Err(e) if e.code == "passkey/already_registered" => {
            failed(e.status, a.t("account-passkey-add-known"))
        }
        Err(e) if e.status.is_client_error() => failed(e.status, a.t("account-passkey-add-failed")),
        Err(e) => failed(e.status, a.t("account-error-invalid")),
    }
}
