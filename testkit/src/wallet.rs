//! A test wallet and test issuers for OpenID4VP 1.0 (the integration tests' and the
//! benchmark's): issuers that sign PID credentials as SD-JWT VC and mdoc from their own
//! X.509 chains, and a wallet that opens a signed request object (checking its `x5c` chain
//! against the verifier roots it trusts and its `x509_hash` client id), answers its DCQL query
//! with key-bound presentations, and encrypts the answer to the request's key (ECDH-ES,
//! A128GCM) for `direct_post.jwt`.

use serde_json::{json, Map, Value};
use tessera_eudi::{
    jose::{self, Alg, Enc, Jws, PublicKey, SigningKey},
    mdoc, sdjwt,
    x509::{self, Usage},
};

use crate::Result;

/// The PID's mdoc doctype and namespace.
pub const PID_DOCTYPE: &str = "eu.europa.ec.eudi.pid.1";
/// The proof-of-age attestation's doctype and namespace.
pub const AV_DOCTYPE: &str = "eu.europa.ec.av.1";

/// An issuer with a root and a leaf of its own.
pub struct TestIssuer {
    pub key: SigningKey,
    pub leaf_der: Vec<u8>,
    pub root_der: Vec<u8>,
}

impl TestIssuer {
    /// An issuer whose leaf is for `usage` (SD-JWT issuers: [`Usage::Issuer`]; mdoc:
    /// [`Usage::MdocDocumentSigner`]), valid from a day ago for a year.
    pub fn new(name: &str, alg: Alg, usage: Usage) -> Result<TestIssuer> {
        let now = now();
        let chain = x509::issuer_chain(name, alg, usage, now - 86_400, now + 365 * 86_400)?;
        Ok(TestIssuer {
            key: SigningKey::from_pkcs8(&chain.leaf_key_pkcs8)?,
            leaf_der: chain.leaf_der,
            root_der: chain.root_der,
        })
    }

    /// The root as a trust anchor's `x5cRoots` entry (standard base64 DER).
    pub fn root_b64(&self) -> String {
        use base64::{engine::general_purpose::STANDARD, Engine};
        STANDARD.encode(&self.root_der)
    }

    /// A PID as SD-JWT VC (`vct urn:eudi:pid:1`) for `holder`: every claim selectively
    /// disclosable; `x5c` = the leaf; `status` when given.
    pub fn pid_sd_jwt(
        &self,
        iss: &str,
        claims: &Map<String, Value>,
        holder: &PublicKey,
        exp: i64,
        status: Option<(&str, u64)>,
    ) -> Result<String> {
        use base64::{engine::general_purpose::STANDARD, Engine};
        let mut header = Map::new();
        header.insert("x5c".into(), json!([STANDARD.encode(&self.leaf_der)]));
        self.pid_with_header(header, iss, claims, holder, exp, status)
    }

    /// A PID as SD-JWT VC under `header` (`x5c` or `kid`).
    fn pid_with_header(
        &self,
        header: Map<String, Value>,
        iss: &str,
        claims: &Map<String, Value>,
        holder: &PublicKey,
        exp: i64,
        status: Option<(&str, u64)>,
    ) -> Result<String> {
        let mut payload = claims.clone();
        let names: Vec<String> = claims.keys().cloned().collect();
        payload.insert("iss".into(), json!(iss));
        payload.insert("vct".into(), json!("urn:eudi:pid:1"));
        payload.insert("iat".into(), json!(now() - 60));
        payload.insert("exp".into(), json!(exp));
        if let Some((uri, idx)) = status {
            payload.insert(
                "status".into(),
                json!({ "status_list": { "uri": uri, "idx": idx } }),
            );
        }
        let disclosable: Vec<&str> = names.iter().map(String::as_str).collect();
        Ok(sdjwt::issue(
            &self.key,
            header,
            payload,
            &disclosable,
            holder,
        )?)
    }

    /// An mdoc of `doctype` (namespace = doctype) for `device`, valid for a year.
    pub fn mdoc(
        &self,
        doctype: &str,
        elements: &Map<String, Value>,
        device: &PublicKey,
        status: Option<(&str, u64)>,
    ) -> Result<Vec<u8>> {
        let items: Vec<(&str, Value)> = elements
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        let now = now();
        Ok(mdoc::issue(
            &self.key,
            std::slice::from_ref(&self.leaf_der),
            doctype,
            &[(doctype, items)],
            device,
            now - 3600,
            now + 365 * 86_400,
            status,
        )?)
    }

    /// A status list token for `uri` signed by this issuer (header `x5c` = its leaf).
    pub fn status_list(&self, uri: &str, statuses: &[u8], ttl: Option<u64>) -> Result<String> {
        use base64::{engine::general_purpose::STANDARD, Engine};
        let mut header = Map::new();
        header.insert("x5c".into(), json!([STANDARD.encode(&self.leaf_der)]));
        Ok(tessera_eudi::status::StatusList::issue_token(
            &self.key,
            header,
            uri,
            1,
            statuses,
            now(),
            Some(now() + 86_400),
            ttl,
        )?)
    }
}

/// A request object the wallet opened and trusts.
#[derive(Clone, Debug)]
pub struct OpenedRequest {
    pub claims: Map<String, Value>,
    pub client_id: String,
    pub nonce: String,
    pub state: String,
    pub response_uri: String,
    pub enc_jwk: Value,
}

impl OpenedRequest {
    /// The credential query ids of the DCQL query.
    pub fn query_ids(&self) -> Vec<String> {
        self.claims["dcql_query"]["credentials"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|c| c["id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The mdoc SessionTranscript of this request (OpenID4VP 1.0 B.2.6.1, encrypted answer).
    pub fn transcript(&self) -> Result<Vec<u8>> {
        let thumbprint = PublicKey::from_jwk(&self.enc_jwk)?.thumbprint();
        Ok(mdoc::session_transcript(
            &self.client_id,
            &self.nonce,
            Some(&thumbprint),
            &self.response_uri,
        ))
    }
}

/// A holder's wallet: one device key and the credentials issued to it.
pub struct TestWallet {
    pub device: SigningKey,
    /// Verifier roots the wallet trusts.
    pub verifier_roots: Vec<Vec<u8>>,
    pub sd_jwt: Option<String>,
    /// Doctype and IssuerSigned CBOR.
    pub mdocs: Vec<(String, Vec<u8>)>,
}

impl TestWallet {
    pub fn new(verifier_root_pem: &str) -> Result<TestWallet> {
        Ok(TestWallet {
            device: SigningKey::generate(Alg::Es256)?,
            verifier_roots: x509::certs_from_pem(verifier_root_pem)?,
            sd_jwt: None,
            mdocs: Vec::new(),
        })
    }

    /// Checks a request object as a wallet must: `typ`, the `x5c` chain to a trusted root, the
    /// signature by its leaf, the client id `x509_hash:` of that leaf, `direct_post.jwt`, and an
    /// encryption key.
    pub fn open(&self, jar: &str) -> Result<OpenedRequest> {
        let jws = Jws::decode(jar)?;
        if jws.header_str("typ") != Some("oauth-authz-req+jwt") {
            return Err("the request object's typ is not oauth-authz-req+jwt".into());
        }
        let chain = jws.x5c()?.ok_or("the request object has no x5c")?;
        let key = x509::verify_chain(&chain, &self.verifier_roots, now(), Usage::Verifier)?;
        jws.verify(&key, &[Alg::Es256, Alg::EdDsa])?;
        let claims = jws.claims()?;
        let text = |n: &str| claims.get(n).and_then(Value::as_str).map(str::to_owned);
        let client_id = text("client_id").ok_or("no client_id")?;
        if client_id != format!("x509_hash:{}", x509::x509_hash(&chain[0])) {
            return Err("the client id is not the x509_hash of the signing leaf".into());
        }
        if text("response_mode").as_deref() != Some("direct_post.jwt") {
            return Err("not direct_post.jwt".into());
        }
        let enc_jwk = claims["client_metadata"]["jwks"]["keys"][0].clone();
        Ok(OpenedRequest {
            client_id,
            nonce: text("nonce").ok_or("no nonce")?,
            state: text("state").ok_or("no state")?,
            response_uri: text("response_uri").ok_or("no response_uri")?,
            enc_jwk,
            claims,
        })
    }

    /// The SD-JWT presentation for `req` (every disclosure kept), bound to `aud` and `nonce`
    /// (normally the request's own).
    pub fn sd_jwt_presentation(&self, aud: &str, nonce: &str) -> Result<String> {
        let issued = self.sd_jwt.as_deref().ok_or("the wallet holds no SD-JWT")?;
        let names = disclosed_names(issued)?;
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        Ok(sdjwt::present(
            issued,
            &names,
            &self.device,
            aud,
            nonce,
            now(),
        )?)
    }

    /// The mdoc presentation of the held `doctype` over `transcript`, every element disclosed.
    pub fn mdoc_presentation(&self, doctype: &str, transcript: &[u8]) -> Result<String> {
        let (_, issued) = self
            .mdocs
            .iter()
            .find(|(d, _)| d == doctype)
            .ok_or("the wallet holds no such mdoc")?;
        let names = mdoc_elements(issued)?;
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        Ok(mdoc::present(
            issued,
            doctype,
            &names,
            &self.device,
            transcript,
        )?)
    }

    /// The answer a wallet gives: for the first credential query it can serve, its
    /// presentation under the query's id, with the request's `state`.
    pub fn vp_token(&self, req: &OpenedRequest) -> Result<Value> {
        for id in req.query_ids() {
            let value = match id.as_str() {
                "pid_sd_jwt" | "pid_age_sd_jwt" if self.sd_jwt.is_some() => {
                    self.sd_jwt_presentation(&req.client_id, &req.nonce)?
                }
                "pid_mdoc" | "pid_age_mdoc" if self.holds(PID_DOCTYPE) => {
                    self.mdoc_presentation(PID_DOCTYPE, &req.transcript()?)?
                }
                "av_mdoc" if self.holds(AV_DOCTYPE) => {
                    self.mdoc_presentation(AV_DOCTYPE, &req.transcript()?)?
                }
                _ => continue,
            };
            return Ok(json!({ id: [value] }));
        }
        Err("the wallet holds nothing the query asks for".into())
    }

    fn holds(&self, doctype: &str) -> bool {
        self.mdocs.iter().any(|(d, _)| d == doctype)
    }

    /// The form body of the wallet's `direct_post.jwt` answer: `response=<JWE of {vp_token,
    /// state}>`.
    pub fn answer(&self, req: &OpenedRequest) -> Result<String> {
        let payload = json!({ "vp_token": self.vp_token(req)?, "state": req.state });
        encrypt_answer(req, &payload)
    }
}

/// Encrypts `payload` to the request's key (ECDH-ES, A128GCM) as the form body of the answer.
pub fn encrypt_answer(req: &OpenedRequest, payload: &Value) -> Result<String> {
    let jwe = jose::encrypt(
        &serde_json::to_vec(payload)?,
        &req.enc_jwk,
        Enc::A128Gcm,
        None,
        Some(req.nonce.as_bytes()),
    )?;
    Ok(form_urlencoded::Serializer::new(String::new())
        .append_pair("response", &jwe)
        .finish())
}

/// The claim names of an issued SD-JWT's disclosures.
fn disclosed_names(issued: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for d in issued.split('~').skip(1).filter(|d| !d.is_empty()) {
        let v: Value = serde_json::from_slice(&tessera_eudi::b64d(d)?)?;
        if let Some(name) = v.get(1).and_then(Value::as_str) {
            out.push(name.to_owned());
        }
    }
    Ok(out)
}

/// The element identifiers of an issued mdoc (IssuerSigned CBOR).
fn mdoc_elements(issued: &[u8]) -> Result<Vec<String>> {
    let v: ciborium::Value = ciborium::from_reader(issued)?;
    let mut out = Vec::new();
    let map = v.as_map().ok_or("IssuerSigned is a map")?;
    for (k, v) in map {
        if k.as_text() != Some("nameSpaces") {
            continue;
        }
        for (_, items) in v.as_map().ok_or("nameSpaces is a map")? {
            for item in items.as_array().ok_or("items are an array")? {
                let bytes = match item {
                    ciborium::Value::Tag(24, inner) => inner.as_bytes().cloned(),
                    _ => None,
                }
                .ok_or("an item is tag 24")?;
                let inner: ciborium::Value = ciborium::from_reader(bytes.as_slice())?;
                for (k, v) in inner.as_map().ok_or("an item is a map")? {
                    if k.as_text() == Some("elementIdentifier") {
                        if let Some(t) = v.as_text() {
                            out.push(t.to_owned());
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Now, in Unix seconds.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl TestIssuer {
    /// The issuer key's public JWK (for a JWKS at a `jwks_uri`, or a DID document's
    /// `publicKeyJwk`).
    pub fn public_jwk(&self) -> Value {
        self.key.public_key().to_jwk()
    }

    /// A PID as [`TestIssuer::pid_sd_jwt`] makes it, but naming the issuer key by `kid` in the
    /// header instead of carrying `x5c` (issuers found by `jwks_uri` or `did:web`).
    pub fn pid_sd_jwt_with_kid(
        &self,
        kid: &str,
        iss: &str,
        claims: &Map<String, Value>,
        holder: &PublicKey,
        exp: i64,
    ) -> Result<String> {
        let mut header = Map::new();
        header.insert("kid".into(), json!(kid));
        self.pid_with_header(header, iss, claims, holder, exp, None)
    }
}
