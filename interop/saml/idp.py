#!/usr/bin/env python3
"""A SAML 2.0 test identity provider for the interop suite, built on pysaml2.

Started as `python3 interop/saml/idp.py --port 0`, it prints one JSON line on stdout,
`{"base": ..., "entity_id": ..., "metadata_url": ...}`, then serves (threaded, stdlib
`http.server`):

  GET  /metadata        the IdP's metadata (its signing certificate, the HTTP-Redirect SSO URL)
  POST /sp              registers a service provider: the body is the SP's metadata XML
  GET  /sso/redirect    answers an AuthnRequest (HTTP-Redirect binding) with an auto-posting
                        form carrying a Response; the test appends `user`, `groups`, `sign`
                        (response | assertion | both), `encrypt` (0 | 1) and `variant`
  GET  /idp-initiated   the same form with an unsolicited Response: `sp` (the SP's entity id)
                        and the same parameters

`variant` produces the bad responses of the negative tests: unsigned, xsw1 … xsw8,
wrong_audience, wrong_recipient, wrong_destination, expired, not_yet_valid, comment_nameid,
other_key, two_assertions, sha1. Signatures are RSA-SHA256 over SHA-256 digests (exclusive
C14N) and encrypted assertions AES-256-CBC under RSA-OAEP, never pysaml2's SHA-1 and 3DES
defaults (except the sha1 variant, which exists to be refused).

The same `Idp.response` makes the fixtures of the `tessera-saml` crate
(saml/tests/fixtures/make.py), so what the suite gets for a variant is what the crate's tests
were made from. The signing key is made at start (or read from `--key`/`--cert`); every key
here is for tests only.
"""

import argparse
import base64
import datetime
import html
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import urllib.parse
import uuid
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.config import IdPConfig
from saml2.metadata import create_metadata_string
from saml2.saml import NAMEID_FORMAT_EMAILADDRESS, NameID
from saml2.server import Server
from saml2.sigver import RSA_OAEP_MGF1P, pre_encryption_part

NS = {
    "samlp": "urn:oasis:names:tc:SAML:2.0:protocol",
    "saml": "urn:oasis:names:tc:SAML:2.0:assertion",
    "ds": "http://www.w3.org/2000/09/xmldsig#",
    "xenc": "http://www.w3.org/2001/04/xmlenc#",
    "xs": "http://www.w3.org/2001/XMLSchema",
    "xsi": "http://www.w3.org/2001/XMLSchema-instance",
}
for _prefix, _uri in NS.items():
    ET.register_namespace(_prefix, _uri)

ASSERTION_NODE = NS["saml"] + ":Assertion"
RESPONSE_NODE = NS["samlp"] + ":Response"
AES256_CBC = "http://www.w3.org/2001/04/xmlenc#aes256-cbc"
EXC_C14N = "http://www.w3.org/2001/10/xml-exc-c14n#"
ENVELOPED = "http://www.w3.org/2000/09/xmldsig#enveloped-signature"
ALGS = {
    "sha256": ("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256", "http://www.w3.org/2001/04/xmlenc#sha256"),
    "sha1": ("http://www.w3.org/2000/09/xmldsig#rsa-sha1", "http://www.w3.org/2000/09/xmldsig#sha1"),
}
VARIANTS = {
    "none", "unsigned", "xsw1", "xsw2", "xsw3", "xsw4", "xsw5", "xsw6", "xsw7", "xsw8",
    "wrong_audience", "wrong_recipient", "wrong_destination", "expired", "not_yet_valid",
    "comment_nameid", "other_key", "two_assertions", "sha1",
}
OTHER = "https://other-sp.example"
EVIL_USER = "attacker@evil.example"


def make_key_pair(directory, name, common_name):
    """A fresh RSA 2048 key and a self-signed certificate, written as PEM files."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .sign(key, hashes.SHA256())
    )
    key_file = os.path.join(directory, name + ".key.pem")
    cert_file = os.path.join(directory, name + ".cert.pem")
    with open(key_file, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
    with open(cert_file, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    return key_file, cert_file


def cert_b64(cert_file):
    """The base64 DER body of a PEM certificate file."""
    with open(cert_file) as f:
        return "".join(line.strip() for line in f if "-----" not in line)


def iso(instant):
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ")


class Idp:
    """A pysaml2 `Server` plus the shaping of good and bad responses."""

    def __init__(self, base, workdir, key_file=None, cert_file=None):
        self.base = base
        self.entity_id = base + "/metadata"
        self.workdir = workdir
        if not key_file:
            key_file, cert_file = make_key_pair(workdir, "idp", "tessera test idp")
        self.key_file, self.cert_file = key_file, cert_file
        self.other_key_file, self.other_cert_file = make_key_pair(workdir, "other", "not the idp")
        config = IdPConfig()
        config.load(
            {
                "entityid": self.entity_id,
                "service": {
                    "idp": {
                        "endpoints": {
                            "single_sign_on_service": [(base + "/sso/redirect", BINDING_HTTP_REDIRECT)],
                        },
                        "name_id_format": [NAMEID_FORMAT_EMAILADDRESS],
                        "policy": {"default": {"lifetime": {"minutes": 5}, "attribute_restrictions": None}},
                        "want_authn_requests_signed": False,
                    }
                },
                "key_file": key_file,
                "cert_file": cert_file,
                "xmlsec_binary": os.environ.get("XMLSEC1") or shutil.which("xmlsec1") or "/usr/bin/xmlsec1",
                "signing_algorithm": ALGS["sha256"][0],
                "digest_algorithm": ALGS["sha256"][1],
                "metadata": {},
            }
        )
        self.server = Server(config=config)
        self.lock = threading.Lock()

    def metadata(self):
        return create_metadata_string(None, config=self.server.config, sign=False).decode()

    def register_sp(self, xml):
        with self.lock:
            self.server.metadata.load("inline", xml)

    def parse_request(self, saml_request):
        """The AuthnRequest's ID, issuer and ACS URL (HTTP-Redirect binding)."""
        with self.lock:
            req = self.server.parse_authn_request(saml_request, BINDING_HTTP_REDIRECT)
        msg = req.message
        acs = msg.assertion_consumer_service_url or self.acs(msg.issuer.text)
        return msg.id, msg.issuer.text, acs

    def acs(self, sp_entity_id):
        with self.lock:
            services = self.server.metadata.assertion_consumer_service(sp_entity_id, BINDING_HTTP_POST)
        if not services:
            raise ValueError("unknown SP or no HTTP-POST ACS: " + sp_entity_id)
        return services[0]["location"]

    def encryption_cert(self, sp_entity_id):
        with self.lock:
            certs = self.server.metadata.certs(sp_entity_id, "spsso", use="encryption")
        return certs[0][1] if certs else None

    def sign(self, xml, node, node_id, key_file=None, alg="sha256"):
        """Inserts a signature template after the element's Issuer and signs it with xmlsec1."""
        sig_alg, digest_alg = ALGS[alg]
        key_file = key_file or self.key_file
        cert_file = self.cert_file if key_file == self.key_file else self.other_cert_file
        template = (
            f'<ds:Signature xmlns:ds="{NS["ds"]}"><ds:SignedInfo>'
            f'<ds:CanonicalizationMethod Algorithm="{EXC_C14N}"/>'
            f'<ds:SignatureMethod Algorithm="{sig_alg}"/>'
            f'<ds:Reference URI="#{node_id}"><ds:Transforms>'
            f'<ds:Transform Algorithm="{ENVELOPED}"/><ds:Transform Algorithm="{EXC_C14N}"/>'
            f'</ds:Transforms><ds:DigestMethod Algorithm="{digest_alg}"/><ds:DigestValue/>'
            f"</ds:Reference></ds:SignedInfo><ds:SignatureValue/><ds:KeyInfo><ds:X509Data>"
            f"<ds:X509Certificate>{cert_b64(cert_file)}</ds:X509Certificate>"
            f"</ds:X509Data></ds:KeyInfo></ds:Signature>"
        )
        start = xml.index(f'ID="{node_id}"')
        issuer_end = xml.index("</saml:Issuer>", start) + len("</saml:Issuer>")
        xml = xml[:issuer_end] + template + xml[issuer_end:]
        name = ASSERTION_NODE if node == "assertion" else RESPONSE_NODE
        return self.server.sec.crypto.sign_statement(xml, name, key_file, node_id)

    def encrypt(self, xml, cert):
        """Wraps the Assertion in an EncryptedAssertion and encrypts it (AES-256-CBC, RSA-OAEP)."""
        start = xml.index("<saml:Assertion")
        end = xml.index("</saml:Assertion>") + len("</saml:Assertion>")
        xml = xml[:start] + "<saml:EncryptedAssertion>" + xml[start:end] + "</saml:EncryptedAssertion>" + xml[end:]
        template = str(pre_encryption_part(msg_enc=AES256_CBC, key_enc=RSA_OAEP_MGF1P, encrypt_cert=cert))
        cert_file = os.path.join(self.workdir, "enc-" + uuid.uuid4().hex + ".pem")
        with open(cert_file, "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\n" + cert + "\n-----END CERTIFICATE-----\n")
        try:
            out = self.server.sec.crypto.encrypt_assertion(xml, cert_file, template, "aes-256")
        finally:
            os.unlink(cert_file)
        return re.sub(r"^<\?xml[^>]*\?>\s*", "", out)

    def response(self, sp_entity_id, acs, in_response_to, user, groups=(), variant="none", sign="assertion",
                 encrypt=False, given_name="Alice", family_name="Example"):
        """A SAMLResponse (XML text) for `user`, shaped by `variant`."""
        if variant not in VARIANTS:
            raise ValueError("unknown variant: " + variant)
        if sign not in ("response", "assertion", "both"):
            raise ValueError("sign is response, assertion or both")
        identity = {"email": [user], "given_name": [given_name], "family_name": [family_name]}
        if groups:
            identity["groups"] = list(groups)
        with self.lock:
            resp = self.server.create_authn_response(
                identity,
                in_response_to,
                acs,
                sp_entity_id,
                name_id=NameID(format=NAMEID_FORMAT_EMAILADDRESS, text=user),
                authn={"class_ref": "urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"},
                sign_response=False,
                sign_assertion=False,
                encrypt_assertion=False,
            )
        xml = re.sub(r"^<\?xml[^>]*\?>\s*", "", str(resp))
        xml = self.shape(xml, variant)
        rid = re.search(r'<samlp:Response[^>]* ID="([^"]+)"', xml).group(1)
        aids = re.findall(r'<saml:Assertion[^>]* ID="([^"]+)"', xml)
        alg = "sha1" if variant == "sha1" else "sha256"
        key_file = self.other_key_file if variant == "other_key" else self.key_file
        if variant != "unsigned":
            if sign in ("assertion", "both") or variant in ("xsw3", "xsw4", "xsw5", "xsw6", "xsw7", "xsw8"):
                for aid in aids:
                    xml = self.sign(xml, "assertion", aid, key_file, alg)
                    xml = re.sub(r"^<\?xml[^>]*\?>\s*", "", xml)
        cert = self.encryption_cert(sp_entity_id) if encrypt else None
        if encrypt:
            if not cert:
                raise ValueError("the SP's metadata has no encryption certificate")
            xml = self.encrypt(xml, cert)
        if variant != "unsigned" and (sign in ("response", "both") or variant in ("xsw1", "xsw2")):
            xml = self.sign(xml, "response", rid, key_file, alg)
            xml = re.sub(r"^<\?xml[^>]*\?>\s*", "", xml)
        return self.wrap(xml, variant)

    def shape(self, xml, variant):
        """The changes made before signing."""
        # Self-contained assertions (an encrypted one is serialised on its own).
        xml = xml.replace(
            "<saml:Assertion ",
            f'<saml:Assertion xmlns:saml="{NS["saml"]}" xmlns:xs="{NS["xs"]}" xmlns:xsi="{NS["xsi"]}" ',
            1,
        )
        issue = re.search(r'IssueInstant="([^"]+)"', xml).group(1)
        issued = datetime.datetime.strptime(issue[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
        if variant == "wrong_audience":
            xml = re.sub(r"<saml:Audience>[^<]*</saml:Audience>", f"<saml:Audience>{OTHER}</saml:Audience>", xml)
        elif variant == "wrong_recipient":
            xml = re.sub(r'Recipient="[^"]*"', f'Recipient="{OTHER}/acs"', xml)
        elif variant == "wrong_destination":
            xml = re.sub(r'Destination="[^"]*"', f'Destination="{OTHER}/acs"', xml, count=1)
        elif variant == "expired":
            xml = re.sub(r'NotOnOrAfter="[^"]*"', f'NotOnOrAfter="{iso(issued - datetime.timedelta(minutes=10))}"', xml)
            xml = re.sub(r'NotBefore="[^"]*"', f'NotBefore="{iso(issued - datetime.timedelta(minutes=20))}"', xml)
        elif variant == "not_yet_valid":
            xml = re.sub(r'NotBefore="[^"]*"', f'NotBefore="{iso(issued + datetime.timedelta(minutes=10))}"', xml)
            xml = re.sub(r'NotOnOrAfter="[^"]*"', f'NotOnOrAfter="{iso(issued + datetime.timedelta(minutes=20))}"', xml)
        elif variant == "comment_nameid":
            xml = re.sub(
                r"(<saml:NameID[^>]*>)[^<]*(</saml:NameID>)",
                lambda m: m.group(1) + "alice@corp.example<!---->.evil.example" + m.group(2),
                xml,
            )
        elif variant == "two_assertions":
            start = xml.index("<saml:Assertion")
            end = xml.index("</saml:Assertion>") + len("</saml:Assertion>")
            second = re.sub(r' ID="[^"]+"', f' ID="id-{uuid.uuid4().hex}"', xml[start:end], count=1)
            second = second.replace(xml[start:end].split("<saml:NameID", 1)[1].split(">", 1)[1].split("<", 1)[0], EVIL_USER)
            xml = xml[:end] + second + xml[end:]
        return xml

    def wrap(self, xml, variant):
        """XML-signature-wrapping shapes made from a validly signed response (after signing)."""
        if not variant.startswith("xsw"):
            return xml
        root = ET.fromstring(xml)
        q = lambda ns, tag: f"{{{NS[ns]}}}{tag}"  # noqa: E731
        ds_sig = q("ds", "Signature")

        def evil(element):
            for name_id in element.iter(q("saml", "NameID")):
                name_id.text = EVIL_USER
            for value in element.iter(q("saml", "AttributeValue")):
                if value.text and "@" in value.text:
                    value.text = EVIL_USER
            return element

        def strip_signature(element):
            for sig in element.findall(ds_sig):
                element.remove(sig)
            return element

        def copy(element):
            return ET.fromstring(ET.tostring(element))

        def new_id(element):
            element.set("ID", "id-" + uuid.uuid4().hex)
            return element

        if variant in ("xsw1", "xsw2"):
            # The signed Response moved away; a forged Response (its own ID) on top.
            original = copy(root)
            forged = evil(strip_signature(new_id(copy(root))))
            signature = original.find(ds_sig)
            if variant == "xsw1":
                # The original as a child of the (still valid) signature in the forged Response.
                original.remove(signature)
                sig_copy = copy(signature)
                obj = ET.SubElement(sig_copy, q("ds", "Object"))
                obj.append(original)
                forged.insert(1, sig_copy)
            else:
                # The original (without its signature) a sibling of the signature.
                original.remove(signature)
                forged.insert(1, copy(signature))
                forged.insert(2, original)
            return ET.tostring(forged, encoding="unicode")
        assertion = root.find(q("saml", "Assertion"))
        index = list(root).index(assertion)
        signature = assertion.find(ds_sig)
        if variant == "xsw3":
            # A forged assertion (new ID, unsigned) before the signed one.
            root.insert(index, evil(strip_signature(new_id(copy(assertion)))))
        elif variant == "xsw4":
            # The signed assertion inside a forged one.
            forged = evil(strip_signature(new_id(copy(assertion))))
            root.remove(assertion)
            forged.append(assertion)
            root.insert(index, forged)
        elif variant == "xsw5":
            # The forged assertion keeps the ID and the signature; the untouched copy is appended.
            original = strip_signature(copy(assertion))
            evil(assertion)
            root.append(original)
        elif variant == "xsw6":
            # The forged assertion keeps the signature, which holds the original directly.
            original = strip_signature(copy(assertion))
            evil(assertion)
            signature.append(original)
        elif variant == "xsw7":
            # The signed assertion inside an Extensions element; a forged one in its place.
            forged = evil(strip_signature(new_id(copy(assertion))))
            root.remove(assertion)
            ext = ET.Element(q("samlp", "Extensions"))
            ext.append(assertion)
            root.insert(1, ext)
            root.insert(index + 1, forged)
        elif variant == "xsw8":
            # The forged assertion carries the signature; the original (unsigned) in its Object.
            original = strip_signature(copy(assertion))
            evil(assertion)
            obj = ET.SubElement(signature, q("ds", "Object"))
            obj.append(original)
        return ET.tostring(root, encoding="unicode")


def auto_post(action, saml_response, relay_state):
    """The standard auto-submitting HTML form of the HTTP-POST binding."""
    value = base64.b64encode(saml_response.encode()).decode()
    relay = (
        f'<input type="hidden" name="RelayState" value="{html.escape(relay_state)}"/>' if relay_state is not None else ""
    )
    return (
        "<!DOCTYPE html><html><head><title>SAML</title></head>"
        '<body onload="document.forms[0].submit()">'
        f'<form method="post" action="{html.escape(action)}">'
        f'<input type="hidden" name="SAMLResponse" value="{value}"/>{relay}'
        '<noscript><button type="submit">Continue</button></noscript></form></body></html>'
    )


def handler_for(idp):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):
            sys.stderr.write("idp: " + (fmt % args) + "\n")

        def answer(self, status, body, content_type="text/html; charset=utf-8"):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def options(self, query):
            return {
                "user": query.get("user", ["alice@corp.example"])[0],
                "groups": [g for g in query.get("groups", [""])[0].split(",") if g],
                "variant": query.get("variant", ["none"])[0],
                "sign": query.get("sign", ["assertion"])[0],
                "encrypt": query.get("encrypt", ["0"])[0] == "1",
            }

        def do_GET(self):  # noqa: N802
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query)
            try:
                if url.path == "/metadata":
                    return self.answer(200, idp.metadata(), "application/samlmetadata+xml")
                if url.path == "/sso/redirect":
                    request_id, sp, acs = idp.parse_request(query["SAMLRequest"][0])
                    relay = query.get("RelayState", [None])[0]
                    xml = idp.response(sp, acs, request_id, **self.options(query))
                    return self.answer(200, auto_post(acs, xml, relay))
                if url.path == "/idp-initiated":
                    sp = query["sp"][0]
                    acs = idp.acs(sp)
                    relay = query.get("RelayState", [None])[0]
                    xml = idp.response(sp, acs, None, **self.options(query))
                    return self.answer(200, auto_post(acs, xml, relay))
                return self.answer(404, "not found", "text/plain")
            except Exception as e:  # a test IdP: say what went wrong
                return self.answer(400, f"{type(e).__name__}: {e}", "text/plain")

        def do_POST(self):  # noqa: N802
            if self.path != "/sp":
                return self.answer(404, "not found", "text/plain")
            body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            try:
                idp.register_sp(body)
            except Exception as e:
                return self.answer(400, f"{type(e).__name__}: {e}", "text/plain")
            return self.answer(204, "")

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--key", help="the IdP's signing key (PEM); made at start when absent")
    parser.add_argument("--cert", help="the IdP's certificate (PEM), with --key")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="tessera-saml-idp-")
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), BaseHTTPRequestHandler)
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    idp = Idp(base, workdir, args.key, args.cert)
    httpd.RequestHandlerClass = handler_for(idp)
    print(json.dumps({"base": base, "entity_id": idp.entity_id, "metadata_url": base + "/metadata"}), flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
