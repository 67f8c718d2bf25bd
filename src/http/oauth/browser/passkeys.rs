//! The passkey button of the sign-in page: its script asks `/oauth/{slug}/passkey/begin` for
//! a username-less sign-in's options and posts the assertion to `/passkey/finish`, checked as
//! `POST /v1/auth/passkeys/assert/finish` checks it (the signature off the actor). Both answer
//! JSON, the errors in the reader's words.
//!
//! Its own file: the only routes of the hosted pages that a script calls.

use axum::{
    body::Bytes,
    http::{header, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use tessera_actors::tenant::PasskeysMsg;
use tessera_actors::{tenant::messages::LoginOutcome, CallError, TenantError};
use tessera_actors::{GuardianError, PasskeyError};

use super::{
    super::hosted::sign_in_cookie,
    flow::{Flow, Visit},
};
use crate::http::{
    extract::{ClientIp, RequestCtx},
    pages::{field, protect, Reader},
    reauth::passkey_login,
};

/// A JSON answer of the passkey script's calls, with the pages' headers.
fn script_json(status: StatusCode, body: serde_json::Value) -> Response {
    let mut resp = (status, Json(body)).into_response();
    protect(resp.headers_mut());
    resp
}

/// A JSON answer of the passkey script's calls: `{error}` with the reader's words.
fn script_error(reader: &Reader, status: StatusCode, key: &str) -> Response {
    script_json(status, serde_json::json!({ "error": reader.t(key) }))
}

fn script_refusal(reader: &Reader, e: CallError<TenantError>) -> Response {
    match e {
        CallError::Failed(
            TenantError::RateLimited { .. } | TenantError::TooManyAttempts { .. },
        ) => script_error(reader, StatusCode::TOO_MANY_REQUESTS, "error-busy"),
        CallError::Unavailable => {
            script_error(reader, StatusCode::SERVICE_UNAVAILABLE, "error-busy")
        }
        CallError::Failed(
            TenantError::Passkey(PasskeyError::InvalidAssertion)
            | TenantError::Passkey(PasskeyError::CeremonyNotFound)
            | TenantError::UserBlocked,
        ) => script_error(reader, StatusCode::UNAUTHORIZED, "login-passkey-failed"),
        CallError::Failed(TenantError::Guardian(GuardianError::ConsentPending)) => {
            script_error(reader, StatusCode::FORBIDDEN, "error-guardian-pending")
        }
        CallError::Failed(TenantError::Guardian(GuardianError::ConsentDeclined)) => {
            script_error(reader, StatusCode::FORBIDDEN, "error-guardian-declined")
        }
        CallError::Failed(e) => {
            tracing::error!(error = %e, "a hosted passkey sign-in failed");
            script_error(reader, StatusCode::INTERNAL_SERVER_ERROR, "error-internal")
        }
    }
}

/// The passkey button's options: a username-less sign-in (any discoverable credential).
pub async fn passkey_begin(
    visit: Visit,
    ClientIp(ip): ClientIp,
    body: Bytes,
) -> Result<Response, Response> {
    let (reader, flow, _) = visit.form(&body, Flow::authorize_path).await?;
    let options = flow
        .tenant
        .call(|reply| PasskeysMsg::PasskeyAssertBegin {
            user_handle: None,
            ip,
            reply,
        })
        .await
        .map_err(|e| script_refusal(&reader, e))?;
    Ok(script_json(
        StatusCode::OK,
        serde_json::json!({ "publicKey": options }),
    ))
}

/// The passkey button's assertion: checked as `POST /v1/auth/passkeys/assert/finish` checks
/// it (the signature off the actor); a sign-in sets the cookie and answers where to go.
pub async fn passkey_finish(
    visit: Visit,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    body: Bytes,
) -> Result<Response, Response> {
    let (reader, flow, form) = visit.form(&body, Flow::authorize_path).await?;
    let refused = |e| script_refusal(&reader, e);
    let response = match serde_json::from_str::<serde_json::Value>(field(&form, "credential")) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        _ => {
            let failed = "login-passkey-failed";
            return Err(script_error(&reader, StatusCode::BAD_REQUEST, failed));
        }
    };
    let outcome = passkey_login(&flow.tenant, response, ip, &ctx)
        .await
        .map_err(refused)?;
    let grant = match outcome {
        LoginOutcome::Signed { grant, .. } => grant,
        LoginOutcome::MfaRequired { .. } | LoginOutcome::EnrollmentRequired { .. } => {
            return Err(script_error(&reader, StatusCode::FORBIDDEN, "mfa-enrol"))
        }
    };
    let Some(cookie) = sign_in_cookie(&visit.state, &flow.tenant, &grant) else {
        let internal = "error-internal";
        return Err(script_error(
            &reader,
            StatusCode::INTERNAL_SERVER_ERROR,
            internal,
        ));
    };
    let mut resp = script_json(
        StatusCode::OK,
        serde_json::json!({ "redirect_to": flow.again() }),
    );
    resp.headers_mut().append(header::SET_COOKIE, cookie);
    Ok(resp)
}
