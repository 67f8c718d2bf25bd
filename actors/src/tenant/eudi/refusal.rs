//! Why a wallet command was refused: the refusal each part answers with, which the HTTP
//! layer names in its error.

/// Why a wallet command was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EudiRefusal {
    /// Wallet sign-in (or age verification) is off for the tenant.
    Disabled,
    /// No verifier certificate is set.
    VerifierMissing,
    /// The verifier certificate has expired.
    VerifierExpired,
    /// `redirect_uri` is not one of the tenant's URLs.
    RedirectNotAllowed,
    /// Unknown, finished or expired request id.
    RequestUnknown,
    /// The transaction was already answered.
    Replayed,
    /// The wallet's identity links to a blocked account.
    AccountBlocked,
    /// The wallet's address belongs to another account.
    EmailExists,
    /// The credential's assurance is below the tenant's floor.
    BelowFloor,
    /// A same-device result polled without its `response_code` (or with a wrong one).
    ResponseCodeMismatch,
    /// Minor protection: a new account for a wallet whose birth date is below the consent age
    /// (or undisclosed).
    AgeRequired,
}

impl EudiRefusal {
    pub fn as_str(self) -> &'static str {
        match self {
            EudiRefusal::Disabled => "disabled",
            EudiRefusal::VerifierMissing => "verifier_not_configured",
            EudiRefusal::VerifierExpired => "verifier_certificate_expired",
            EudiRefusal::RedirectNotAllowed => "redirect_not_allowed",
            EudiRefusal::RequestUnknown => "request_not_found",
            EudiRefusal::Replayed => "response_replayed",
            EudiRefusal::AccountBlocked => "account_blocked",
            EudiRefusal::EmailExists => "email_exists",
            EudiRefusal::BelowFloor => "assurance_below_floor",
            EudiRefusal::ResponseCodeMismatch => "response_code_mismatch",
            EudiRefusal::AgeRequired => "age_required",
        }
    }
}
