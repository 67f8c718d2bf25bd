//! SAML metadata: ours (`sp_metadata`, an EntityDescriptor with an SPSSODescriptor) and the
//! IdP's (`parse_idp_metadata`: entity id, signing certificates, HTTP-Redirect SSO URL).

use crate::request::HTTP_POST;
use crate::xml::{self, cert_body, escape, DS, MD};
use crate::{SamlError, SpConfig};
use bergshamra::core::algorithm as alg;
use uppsala::{Document, NodeId};

/// The HTTP-Redirect binding, how we send AuthnRequests.
pub const HTTP_REDIRECT: &str = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect";
const EMAIL: &str = "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress";
const PROTOCOL: &str = "urn:oasis:names:tc:SAML:2.0:protocol";

/// What the server needs of an IdP's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdpMetadata {
    /// The IdP's entity id (the Issuer of its responses).
    pub entity_id: String,
    /// Its SingleSignOnService for the HTTP-Redirect binding.
    pub sso_redirect_url: String,
    /// Its signing certificates (bare base64 DER), from KeyDescriptors with use="signing"
    /// or no use.
    pub certs: Vec<String>,
}

/// Our metadata: AuthnRequestsSigned=false, WantAssertionsSigned=true, the HTTP-POST ACS,
/// and a KeyDescriptor use="encryption" (with the algorithms we decrypt) when a certificate
/// is given.
pub fn sp_metadata(sp: &SpConfig, encryption_cert_pem: Option<&str>) -> String {
    let key = encryption_cert_pem
        .map(|pem| {
            let methods: String = [
                alg::AES256_GCM,
                alg::AES128_GCM,
                alg::AES256_CBC,
                alg::AES128_CBC,
                alg::RSA_OAEP,
                alg::RSA_OAEP_ENC11,
            ]
            .iter()
            .map(|a| format!(r#"<md:EncryptionMethod Algorithm="{a}"/>"#))
            .collect();
            format!(
                concat!(
                    r#"<md:KeyDescriptor use="encryption"><ds:KeyInfo xmlns:ds="{ds}">"#,
                    r#"<ds:X509Data><ds:X509Certificate>{cert}</ds:X509Certificate>"#,
                    r#"</ds:X509Data></ds:KeyInfo>{methods}</md:KeyDescriptor>"#
                ),
                ds = DS,
                cert = escape(&cert_body(pem)),
                methods = methods,
            )
        })
        .unwrap_or_default();
    format!(
        concat!(
            r#"<?xml version="1.0" encoding="UTF-8"?>"#,
            "\n",
            r#"<md:EntityDescriptor xmlns:md="{md}" entityID="{entity}">"#,
            r#"<md:SPSSODescriptor AuthnRequestsSigned="false" WantAssertionsSigned="true" "#,
            r#"protocolSupportEnumeration="{protocol}">{key}"#,
            r#"<md:NameIDFormat>{email}</md:NameIDFormat>"#,
            r#"<md:AssertionConsumerService Binding="{post}" Location="{acs}" index="0" isDefault="true"/>"#,
            r#"</md:SPSSODescriptor></md:EntityDescriptor>"#,
            "\n"
        ),
        md = MD,
        entity = escape(&sp.entity_id),
        protocol = PROTOCOL,
        key = key,
        email = EMAIL,
        post = HTTP_POST,
        acs = escape(&sp.acs_url),
    )
}

fn idp_descriptor(doc: &Document<'_>, root: NodeId) -> Result<(NodeId, NodeId), SamlError> {
    let entities = if xml::is(doc, root, MD, "EntityDescriptor") {
        vec![root]
    } else if xml::is(doc, root, MD, "EntitiesDescriptor") {
        xml::descendants(doc, MD, "EntityDescriptor")
    } else {
        return Err(SamlError::Malformed("not SAML metadata".into()));
    };
    let mut found = Vec::new();
    for entity in entities {
        for descriptor in xml::children(doc, entity, MD, "IDPSSODescriptor") {
            found.push((entity, descriptor));
        }
    }
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(SamlError::Malformed("no IDPSSODescriptor".into())),
        _ => Err(SamlError::Malformed(
            "more than one IDPSSODescriptor".into(),
        )),
    }
}

/// Reads an IdP's metadata (an EntityDescriptor, or an EntitiesDescriptor holding one IdP).
pub fn parse_idp_metadata(xml_text: &str) -> Result<IdpMetadata, SamlError> {
    let doc = xml::parse(xml_text)?;
    let root = doc
        .document_element()
        .ok_or_else(|| SamlError::Malformed("empty metadata".into()))?;
    let (entity, descriptor) = idp_descriptor(&doc, root)?;
    let entity_id = xml::attr(&doc, entity, "entityID")
        .filter(|e| !e.is_empty())
        .ok_or_else(|| SamlError::Malformed("no entityID".into()))?
        .to_owned();
    let mut certs = Vec::new();
    for key in xml::children(&doc, descriptor, MD, "KeyDescriptor") {
        if !matches!(xml::attr(&doc, key, "use"), None | Some("signing")) {
            continue;
        }
        for info in xml::children(&doc, key, DS, "KeyInfo") {
            for data in xml::children(&doc, info, DS, "X509Data") {
                for cert in xml::children(&doc, data, DS, "X509Certificate") {
                    let body = cert_body(&xml::strict_text(&doc, cert)?);
                    if !body.is_empty() && !certs.contains(&body) {
                        certs.push(body);
                    }
                }
            }
        }
    }
    if certs.is_empty() {
        return Err(SamlError::Malformed("no signing certificate".into()));
    }
    let sso_redirect_url = xml::children(&doc, descriptor, MD, "SingleSignOnService")
        .into_iter()
        .find(|s| xml::attr(&doc, *s, "Binding") == Some(HTTP_REDIRECT))
        .and_then(|s| xml::attr(&doc, s, "Location"))
        .filter(|l| !l.is_empty())
        .ok_or_else(|| SamlError::Malformed("no HTTP-Redirect SingleSignOnService".into()))?
        .to_owned();
    Ok(IdpMetadata {
        entity_id,
        sso_redirect_url,
        certs,
    })
}
