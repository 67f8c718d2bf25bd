//! Tessera's SAML 2.0 service provider, as a pure library: no HTTP, no storage.
//!
//! The server calls it to make an AuthnRequest (HTTP-Redirect binding,
//! [`authn_request`]), to publish its metadata ([`sp_metadata`]), to read an IdP's
//! metadata ([`parse_idp_metadata`]), to make the key pair an IdP encrypts assertions to
//! ([`sp_keypair`]), and to check the SAMLResponse posted to its ACS
//! ([`verify_response`]), which answers an [`Assertion`] only when every check passed.
//!
//! XML signatures and encryption are `bergshamra`'s; this crate adds the SAML rules
//! around them: the algorithm allowlist, exactly one assertion read only from the element
//! the signature covers (no signature wrapping), text never split by comments, no DTDs.

mod error;
mod keys;
mod metadata;
mod request;
mod response;
mod signature;
mod xml;

use std::collections::BTreeMap;

pub use error::SamlError;
pub use keys::sp_keypair;
pub use metadata::{parse_idp_metadata, sp_metadata, IdpMetadata};
pub use request::authn_request;
pub use response::{verify_response, MAX_RESPONSE_BYTES};

/// One service provider's settings against one IdP.
#[derive(Debug, Clone)]
pub struct SpConfig {
    /// Our SP entity id (the Audience the IdP must name, the Issuer of our requests).
    pub entity_id: String,
    /// Our ACS URL: the Response's Destination and the bearer Recipient must equal it.
    pub acs_url: String,
    /// The IdP's entity id: the expected Issuer.
    pub idp_entity_id: String,
    /// The IdP's signing certificates, PEM or bare base64 DER (several during rollover).
    pub idp_certs: Vec<String>,
    /// Our private key (PKCS#8 PEM) for EncryptedAssertions, if the IdP encrypts.
    pub decryption_key_pem: Option<String>,
    /// The clock skew allowed on every time bound.
    pub skew: time::Duration,
}

/// A verified assertion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assertion {
    /// The Assertion's ID (for the caller's replay cache).
    pub id: String,
    /// The IdP's entity id.
    pub issuer: String,
    /// The subject's NameID.
    pub name_id: String,
    /// The NameID's Format, if given.
    pub name_id_format: Option<String>,
    /// The request this answers (None for an IdP-initiated response).
    pub in_response_to: Option<String>,
    /// The AuthnStatement's SessionIndex, if given.
    pub session_index: Option<String>,
    /// The last instant the assertion may be used: the earliest of the bearer
    /// SubjectConfirmationData's and the Conditions' NotOnOrAfter. The replay cache keeps
    /// the id until then.
    pub not_on_or_after: time::OffsetDateTime,
    /// Attribute values by Name, and by FriendlyName too when present.
    pub attributes: BTreeMap<String, Vec<String>>,
}
