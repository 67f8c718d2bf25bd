//! The guardian's wallet age check (`POST /v1/guardian/consent/wallet`): proof of adulthood
//! with the EU wallet, tied to the consent link, as JSON or from the consent page's form. The
//! transaction is `crate::http::eudi`'s; its answer's `page_url` shows the QR code.
//!
//! Its own file: the wallet's step of the guardian's consent.

use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use tessera_actors::tenant::guardian::{GuardianAnswer, GuardianCmd};
use utoipa::ToSchema;

use super::link::{
    guardian, is_form, json_answer, json_body, link_field_errors, posted_tenant, CONSENT_PATH,
};
use crate::{
    app::AppState,
    http::{
        error::{ApiError, ErrorBody},
        extract::{ClientIp, RequestCtx},
        pages::{field, form_fields, see_other, Problem, Reader},
    },
};

/// A consent link and its page's CSRF value.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GuardianWalletRequest {
    #[schema(min_length = 1, max_length = 512)]
    pub token: String,
    #[schema(min_length = 1, max_length = 512)]
    pub csrf: String,
}

/// The guardian proves adulthood with the EU wallet: an age check (the tenant's wallet age
/// verification) tied to the consent link. Once the wallet proves 18 or over, the consent
/// context says `adult_proven` and a consent records `consent_method` `eudi_wallet`. As JSON
/// the answer is the transaction (its `page_url` shows the QR code); the page's form is
/// redirected to that page.
#[utoipa::path(post, path = "/v1/guardian/consent/wallet", tag = "guardian",
    request_body = GuardianWalletRequest,
    responses(
        (status = 200, description = "The age check (5 minutes)", body = crate::http::eudi::EudiInitiateResponse),
        (status = 303, description = "The page's form: to the QR page"),
        (status = 400, description = "`validation/invalid_request`; `guardian/invalid_token`", body = ErrorBody),
        (status = 403, description = "`guardian/csrf_failed`; `eudi/disabled`: the tenant's wallet age verification is off", body = ErrorBody),
        (status = 409, description = "`eudi/verifier_not_configured`, `eudi/verifier_expired`", body = ErrorBody),
        (status = 415, description = "Neither JSON nor the page's form", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited` (30 age checks a minute per address; 120 calls of the guardian routes)", body = ErrorBody),
    ))]
pub async fn consent_wallet(
    State(state): State<AppState>,
    headers: HeaderMap,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    body: Bytes,
) -> Response {
    let form = is_form(&headers);
    let (token, csrf) = if form {
        let f = form_fields(&body);
        (field(&f, "token").to_owned(), field(&f, "csrf").to_owned())
    } else {
        match json_body::<GuardianWalletRequest>(&headers, &body) {
            Ok(r) => (r.token, r.csrf),
            Err(e) => return e.into_response(),
        }
    };
    let reader = Reader::new(&state, &headers, None);
    let began = async {
        link_field_errors(&token, &csrf).finish()?;
        let tenant = posted_tenant(&state, &reader, CONSENT_PATH, &token, &csrf)?;
        let cmd = GuardianCmd::WalletBegin {
            token: token.clone(),
            ip,
        };
        match guardian(&tenant, (ctx, ip), cmd).await? {
            GuardianAnswer::WalletBegun(answer) => {
                crate::http::eudi::begun_response(&state, *answer)
            }
            _ => Err(ApiError::internal("unexpected guardian answer")),
        }
    }
    .await;
    match (began, form) {
        (Ok(tx), false) => json_answer(&reader, StatusCode::OK, &tx),
        (Ok(tx), true) => see_other(&reader, &tx.page_url, StatusCode::SEE_OTHER),
        (Err(e), false) => e.into_response(),
        (Err(_), true) => reader.problem(Problem::Invalid),
    }
}
