//! The one error type of the crate, [`SamlError`], and its stable codes.
//!
//! The server logs and counts failures by [`SamlError::code`]; the codes never change
//! meaning. The `String` details are for logs only and never shown to the end user.

/// Why a SAML message was refused or could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SamlError {
    /// Not base64, not UTF-8, not well-formed XML, a DTD, or not the SAML shape expected.
    #[error("malformed SAML message: {0}")]
    Malformed(String),
    /// The encoded or decoded message is over the size limit.
    #[error("SAML message over the size limit")]
    TooLarge,
    /// Neither the Response nor the Assertion carries a signature.
    #[error("the response is not signed")]
    Unsigned,
    /// A signature is present but does not verify with any configured IdP certificate.
    #[error("signature invalid: {0}")]
    SignatureInvalid(String),
    /// A signature, digest, canonicalisation, transform or encryption algorithm not allowed.
    #[error("algorithm refused: {0}")]
    AlgorithmRefused(String),
    /// The document's structure is not what a signature covers (signature wrapping, several
    /// assertions, duplicate IDs, signatures in odd places).
    #[error("response structure refused: {0}")]
    Wrapped(String),
    /// An Issuer differs from the configured IdP entity id.
    #[error("unexpected issuer")]
    Issuer,
    /// The audience restriction does not name this SP.
    #[error("audience restriction does not name this service provider")]
    Audience,
    /// The Response's Destination is not this SP's ACS URL.
    #[error("destination is not this ACS")]
    Destination,
    /// The bearer SubjectConfirmationData's Recipient is not this SP's ACS URL.
    #[error("subject confirmation recipient is not this ACS")]
    Recipient,
    /// InResponseTo names another request, or is present where none was expected.
    #[error("InResponseTo does not match the request")]
    InResponseTo,
    /// A request id was expected but the response answers no request.
    #[error("unsolicited response where a request was expected")]
    Unsolicited,
    /// A NotOnOrAfter bound has passed (beyond the allowed skew).
    #[error("assertion expired")]
    Expired,
    /// A NotBefore bound is still ahead (beyond the allowed skew).
    #[error("assertion not yet valid")]
    NotYetValid,
    /// The IdP answered with a status other than Success (its status code(s) attached).
    #[error("IdP status {0}")]
    Status(String),
    /// The EncryptedAssertion could not be decrypted (or no decryption key is configured).
    #[error("decryption failed: {0}")]
    Decryption(String),
    /// A NameID, Issuer, Audience or attribute value whose text is split by comments,
    /// processing instructions, CDATA or elements (the comment-injection trap).
    #[error("text content split by markup")]
    SplitText,
    /// The assertion's Subject has no NameID.
    #[error("no NameID in the assertion")]
    MissingNameId,
    /// The SP configuration or a caller's argument is unusable (bad certificate, key, id).
    #[error("configuration error: {0}")]
    Config(String),
}

impl SamlError {
    /// A stable, machine-readable code for logs, metrics and API errors.
    pub fn code(&self) -> &'static str {
        match self {
            SamlError::Malformed(_) => "saml/malformed",
            SamlError::TooLarge => "saml/too_large",
            SamlError::Unsigned => "saml/unsigned",
            SamlError::SignatureInvalid(_) => "saml/signature_invalid",
            SamlError::AlgorithmRefused(_) => "saml/algorithm_refused",
            SamlError::Wrapped(_) => "saml/wrapped",
            SamlError::Issuer => "saml/issuer",
            SamlError::Audience => "saml/audience",
            SamlError::Destination => "saml/destination",
            SamlError::Recipient => "saml/recipient",
            SamlError::InResponseTo => "saml/in_response_to",
            SamlError::Unsolicited => "saml/unsolicited",
            SamlError::Expired => "saml/expired",
            SamlError::NotYetValid => "saml/not_yet_valid",
            SamlError::Status(_) => "saml/status",
            SamlError::Decryption(_) => "saml/decryption",
            SamlError::SplitText => "saml/split_text",
            SamlError::MissingNameId => "saml/missing_name_id",
            SamlError::Config(_) => "saml/config",
        }
    }
}
