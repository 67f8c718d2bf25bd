//! The request side of a wallet transaction: the DCQL query (the PID in the formats some
//! trust anchor accepts, or a proof of age), the transaction's URLs and the signed request
//! object.
//!
//! Its own file: what a transaction asks of a wallet, apart from the checks of its answer.

use serde_json::{json, Map, Value};
use tessera_actors::tenant::{
    eudi::{EudiPurpose, TxView, AGE_THRESHOLD},
    settings::EudiConfig,
};

use super::pid::{attribute_paths, AV_DOCTYPE, IDENTIFYING, PID_DOCTYPE, PID_VCTS};

/// The attributes a sign-in asks for: the tenant's, and what identifies the person.
fn login_attributes(config: &EudiConfig) -> Vec<String> {
    let mut out: Vec<String> = IDENTIFYING.iter().map(|s| (*s).to_owned()).collect();
    for a in &config.requested_attributes {
        if !out.contains(a) {
            out.push(a.clone());
        }
    }
    out
}

fn formats_accepted(config: &EudiConfig) -> (bool, bool) {
    let any = |f: &str| {
        config
            .trust_anchors
            .iter()
            .any(|a| a.allowed_formats.iter().any(|x| x == f))
    };
    (any("dc+sd-jwt"), any("mso_mdoc"))
}

/// The DCQL query (OpenID4VP 1.0 §6) of a transaction: the PID in the formats some trust
/// anchor accepts (sign-in), or a proof of age (age verification).
pub fn dcql_query(purpose: EudiPurpose, config: &EudiConfig) -> Value {
    let (sd_jwt, mso) = formats_accepted(config);
    let mut credentials = Vec::new();
    let mut options = Vec::new();
    match purpose {
        EudiPurpose::Login => {
            let attrs = login_attributes(config);
            if sd_jwt {
                let claims: Vec<Value> = attrs
                    .iter()
                    .filter_map(|a| attribute_paths(a).0.into_iter().next())
                    .map(|p| json!({ "path": p }))
                    .collect();
                credentials.push(json!({
                    "id": "pid_sd_jwt",
                    "format": "dc+sd-jwt",
                    "meta": { "vct_values": PID_VCTS },
                    "claims": claims,
                }));
                options.push(json!(["pid_sd_jwt"]));
            }
            if mso {
                let claims: Vec<Value> = attrs
                    .iter()
                    .map(|a| attribute_paths(a).1)
                    .filter(|e| !e.is_empty())
                    .map(|e| json!({ "path": [PID_DOCTYPE, e], "intent_to_retain": false }))
                    .collect();
                credentials.push(json!({
                    "id": "pid_mdoc",
                    "format": "mso_mdoc",
                    "meta": { "doctype_value": PID_DOCTYPE },
                    "claims": claims,
                }));
                options.push(json!(["pid_mdoc"]));
            }
        }
        EudiPurpose::Age => {
            let over = format!("{AGE_THRESHOLD}");
            if mso {
                credentials.push(json!({
                    "id": "av_mdoc",
                    "format": "mso_mdoc",
                    "meta": { "doctype_value": AV_DOCTYPE },
                    "claims": [{ "path": [AV_DOCTYPE, format!("age_over_{over}")] }],
                }));
                options.push(json!(["av_mdoc"]));
                credentials.push(json!({
                    "id": "pid_age_mdoc",
                    "format": "mso_mdoc",
                    "meta": { "doctype_value": PID_DOCTYPE },
                    "claims": [
                        { "id": "over", "path": [PID_DOCTYPE, format!("age_over_{over}")] },
                        { "id": "born", "path": [PID_DOCTYPE, "birth_date"] },
                    ],
                    "claim_sets": [["over"], ["born"]],
                }));
                options.push(json!(["pid_age_mdoc"]));
            }
            if sd_jwt {
                credentials.push(json!({
                    "id": "pid_age_sd_jwt",
                    "format": "dc+sd-jwt",
                    "meta": { "vct_values": PID_VCTS },
                    "claims": [
                        { "id": "over", "path": ["age_equal_or_over", over] },
                        { "id": "born", "path": ["birthdate"] },
                    ],
                    "claim_sets": [["over"], ["born"]],
                }));
                options.push(json!(["pid_age_sd_jwt"]));
            }
        }
    }
    json!({
        "credentials": credentials,
        "credential_sets": [{ "options": options }],
    })
}

/// The absolute URLs of a transaction.
pub struct TxUrls {
    pub request_uri: String,
    pub response_uri: String,
    pub wallet_url: String,
    pub page_url: String,
}

impl TxUrls {
    pub fn of(tx: &TxView, base: &str, accounts: &str) -> TxUrls {
        let request_uri = format!("{base}/v1/auth/eudi/request/{}", tx.request_id);
        let wallet_url = format!(
            "openid4vp://?client_id={}&request_uri={}&request_uri_method=post",
            urlencode(&tx.verifier.client_id),
            urlencode(&request_uri)
        );
        TxUrls {
            response_uri: format!("{base}/v1/auth/eudi/response"),
            page_url: format!("{accounts}/eudi/{}", tx.request_id),
            request_uri,
            wallet_url,
        }
    }
}

fn urlencode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The signed request object (RFC 9101, `typ oauth-authz-req+jwt`) of a transaction: its
/// `x5c` is the verifier's chain without the root, its client id the `x509_hash:` of the leaf.
pub fn request_object(
    tx: &TxView,
    response_uri: &str,
    wallet_nonce: Option<&str>,
    now: i64,
) -> Result<String, String> {
    use base64::{engine::general_purpose::STANDARD, Engine};
    let v = &tx.verifier;
    let mut header = Map::new();
    header.insert("typ".into(), json!("oauth-authz-req+jwt"));
    header.insert(
        "x5c".into(),
        Value::Array(v.chain.iter().map(|c| json!(STANDARD.encode(c))).collect()),
    );
    let algs = json!(["ES256", "EdDSA"]);
    let mut claims = json!({
        "iss": v.client_id,
        "aud": "https://self-issued.me/v2",
        "client_id": v.client_id,
        "response_type": "vp_token",
        "response_mode": "direct_post.jwt",
        "response_uri": response_uri,
        "nonce": tx.nonce,
        "state": tx.oid_state,
        "dcql_query": dcql_query(tx.purpose, &tx.config),
        "client_metadata": {
            "jwks": { "keys": [tx.enc_jwk] },
            "encrypted_response_enc_values_supported": ["A128GCM", "A256GCM"],
            "vp_formats_supported": {
                "dc+sd-jwt": { "sd-jwt_alg_values": algs, "kb-jwt_alg_values": algs },
                "mso_mdoc": { "issuerauth_alg_values": [-7, -8], "deviceauth_alg_values": [-7, -8] },
            },
        },
        "iat": now,
        "exp": tx.expires_at.unix_timestamp(),
    });
    if let Some(o) = claims.as_object_mut() {
        if let Some(n) = wallet_nonce {
            o.insert("wallet_nonce".into(), json!(n));
        }
        if let Some(p) = &tx.purpose_text {
            o.insert("purpose".into(), json!(p));
        }
    }
    let payload = serde_json::to_vec(&claims).map_err(|e| e.to_string())?;
    v.key
        .sign_compact(header, &payload)
        .map_err(|e| e.to_string())
}
