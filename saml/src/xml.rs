//! XML helpers over `uppsala`'s DOM: parsing without DTDs, namespace-aware child lookup,
//! text read strictly (one text node, nothing splitting it) and escaping for the XML we write.

use crate::SamlError;
use uppsala::{Document, NodeId, NodeKind};

/// SAML 2.0 protocol namespace.
pub const SAMLP: &str = "urn:oasis:names:tc:SAML:2.0:protocol";
/// SAML 2.0 assertion namespace.
pub const SAML: &str = "urn:oasis:names:tc:SAML:2.0:assertion";
/// SAML 2.0 metadata namespace.
pub const MD: &str = "urn:oasis:names:tc:SAML:2.0:metadata";
/// XML Signature namespace.
pub const DS: &str = "http://www.w3.org/2000/09/xmldsig#";
/// XML Encryption namespace.
pub const XENC: &str = "http://www.w3.org/2001/04/xmlenc#";
/// XML Schema instance namespace (xsi:nil).
pub const XSI: &str = "http://www.w3.org/2001/XMLSchema-instance";

/// Parses XML, refusing any DTD (and so every entity declaration).
pub fn parse(xml: &str) -> Result<Document<'_>, SamlError> {
    if xml.contains("<!DOCTYPE") || xml.contains("<!ENTITY") {
        return Err(SamlError::Malformed("DTDs are not accepted".into()));
    }
    uppsala::Parser::new()
        .with_forbid_dtd(true)
        .parse(xml)
        .map_err(|e| SamlError::Malformed(format!("XML: {e}")))
}

/// Whether `node` is the element `{ns}local`.
pub fn is(doc: &Document<'_>, node: NodeId, ns: &str, local: &str) -> bool {
    doc.element(node)
        .is_some_and(|e| e.matches_name_ns(ns, local))
}

/// The child elements of `node` named `{ns}local`, in document order.
pub fn children(doc: &Document<'_>, node: NodeId, ns: &str, local: &str) -> Vec<NodeId> {
    doc.children(node)
        .into_iter()
        .filter(|c| is(doc, *c, ns, local))
        .collect()
}

/// The single child element `{ns}local` of `node`, if any; several are malformed.
pub fn child(
    doc: &Document<'_>,
    node: NodeId,
    ns: &str,
    local: &str,
) -> Result<Option<NodeId>, SamlError> {
    let found = children(doc, node, ns, local);
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        _ => Err(SamlError::Malformed(format!("more than one {local}"))),
    }
}

/// Every element of the document named `{ns}local`, in document order.
pub fn descendants(doc: &Document<'_>, ns: &str, local: &str) -> Vec<NodeId> {
    doc.descendants(doc.root())
        .into_iter()
        .filter(|n| is(doc, *n, ns, local))
        .collect()
}

/// An attribute without namespace.
pub fn attr<'d>(doc: &'d Document<'_>, node: NodeId, name: &str) -> Option<&'d str> {
    doc.element(node).and_then(|e| {
        e.attributes
            .iter()
            .find(|a| a.name.namespace_uri.is_none() && *a.name.local_name == *name)
            .map(|a| &*a.value)
    })
}

/// The text of an element that must hold text only: one text node, or several that are
/// plain text in a row (entity references). A comment, processing instruction, CDATA
/// section or element inside refuses it: such splits are how a signed
/// `alice@corp.example<!---->.evil.example` reads as two different names to two readers.
pub fn strict_text(doc: &Document<'_>, node: NodeId) -> Result<String, SamlError> {
    let mut text = String::new();
    let kids = doc.children(node);
    for kid in &kids {
        match doc.node_kind(*kid) {
            Some(NodeKind::Text(t)) => text.push_str(t),
            _ => return Err(SamlError::SplitText),
        }
    }
    if kids.len() > 1 {
        // Adjacent text nodes are only legitimate when the parser split at entity
        // references; the source then has no markup between them.
        let raw = doc.node_source(node).unwrap_or("");
        let inner = raw
            .split_once('>')
            .map(|(_, rest)| rest)
            .and_then(|rest| rest.rsplit_once("</"))
            .map(|(inner, _)| inner)
            .unwrap_or("");
        if inner.contains('<') {
            return Err(SamlError::SplitText);
        }
    }
    Ok(text.trim().to_owned())
}

/// Escapes text for an attribute value or element content.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(c),
        }
    }
    out
}

/// The base64 body of a certificate given as PEM or bare base64 (whitespace removed).
pub fn cert_body(pem_or_b64: &str) -> String {
    pem_or_b64
        .lines()
        .filter(|l| !l.contains("-----"))
        .flat_map(|l| l.chars())
        .filter(|c| !c.is_whitespace())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(xml: &str) -> Result<String, SamlError> {
        let doc = parse(xml)?;
        let root = doc.document_element().ok_or(SamlError::SplitText)?;
        strict_text(&doc, root)
    }

    #[test]
    fn plain_text_and_entities_are_read_whole() {
        assert_eq!(
            text_of("<a> alice@corp.example </a>").unwrap(),
            "alice@corp.example"
        );
        assert_eq!(text_of("<a>AT&amp;T&#x40;x</a>").unwrap(), "AT&T@x");
        assert_eq!(text_of("<a/>").unwrap(), "");
    }

    #[test]
    fn markup_splitting_text_is_refused() {
        for xml in [
            "<a>alice@corp.example<!---->.evil.example</a>",
            "<a>alice@corp.example<?pi x?>.evil.example</a>",
            "<a>alice@corp.example<![CDATA[.evil.example]]></a>",
            "<a><![CDATA[alice@corp.example]]></a>",
            "<a>alice@corp.example<b/></a>",
        ] {
            assert_eq!(text_of(xml).unwrap_err().code(), "saml/split_text", "{xml}");
        }
    }

    #[test]
    fn dtds_are_refused() {
        let xml = "<!DOCTYPE a [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><a>&e;</a>";
        assert_eq!(parse(xml).unwrap_err().code(), "saml/malformed");
    }
}
