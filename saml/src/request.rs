//! `authn_request`: the URL that sends the browser to the IdP with an AuthnRequest
//! (HTTP-Redirect binding: raw DEFLATE, base64, URL-encoded `SAMLRequest`, plus
//! `RelayState`). Requests are not signed (the SP metadata says AuthnRequestsSigned=false).

use crate::xml::escape;
use crate::{SamlError, SpConfig};
use base64::Engine;
use flate2::write::DeflateEncoder;
use flate2::Compression;
use std::io::Write;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The HTTP-POST binding, where we want the Response.
pub const HTTP_POST: &str = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST";

/// Whether `id` is usable as an xs:ID (an NCName, here ASCII only).
fn is_ncname(id: &str) -> bool {
    let mut chars = id.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The AuthnRequest XML itself.
pub fn authn_request_xml(
    sp: &SpConfig,
    idp_sso_url: &str,
    request_id: &str,
    now: OffsetDateTime,
) -> Result<String, SamlError> {
    if !is_ncname(request_id) {
        return Err(SamlError::Config(
            "the request id must be an NCName (start with a letter or _)".into(),
        ));
    }
    let instant = now
        .to_offset(time::UtcOffset::UTC)
        .replace_nanosecond(0)
        .map_err(|e| SamlError::Config(e.to_string()))?
        .format(&Rfc3339)
        .map_err(|e| SamlError::Config(e.to_string()))?;
    Ok(format!(
        concat!(
            r#"<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" "#,
            r#"xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="{id}" Version="2.0" "#,
            r#"IssueInstant="{instant}" Destination="{dest}" AssertionConsumerServiceURL="{acs}" "#,
            r#"ProtocolBinding="{binding}"><saml:Issuer>{issuer}</saml:Issuer>"#,
            r#"<samlp:NameIDPolicy AllowCreate="true"/></samlp:AuthnRequest>"#
        ),
        id = escape(request_id),
        instant = instant,
        dest = escape(idp_sso_url),
        acs = escape(&sp.acs_url),
        binding = HTTP_POST,
        issuer = escape(&sp.entity_id),
    ))
}

/// The IdP URL to redirect the browser to, carrying the AuthnRequest `request_id`.
pub fn authn_request(
    sp: &SpConfig,
    idp_sso_url: &str,
    request_id: &str,
    relay_state: &str,
    now: OffsetDateTime,
) -> Result<String, SamlError> {
    let xml = authn_request_xml(sp, idp_sso_url, request_id, now)?;
    let mut deflate = DeflateEncoder::new(Vec::new(), Compression::default());
    deflate
        .write_all(xml.as_bytes())
        .map_err(|e| SamlError::Config(format!("deflate: {e}")))?;
    let deflated = deflate
        .finish()
        .map_err(|e| SamlError::Config(format!("deflate: {e}")))?;
    let encoded = base64::engine::general_purpose::STANDARD.encode(deflated);
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("SAMLRequest", &encoded);
    if !relay_state.is_empty() {
        query.append_pair("RelayState", relay_state);
    }
    let separator = if idp_sso_url.contains('?') { '&' } else { '?' };
    Ok(format!("{idp_sso_url}{separator}{}", query.finish()))
}
