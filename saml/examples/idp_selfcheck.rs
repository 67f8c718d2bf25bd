//! End-to-end check of the interop suite's pysaml2 IdP against this crate, without the
//! server: starts `interop/saml/idp.py`, registers `sp_metadata` (with a fresh
//! `sp_keypair` certificate), sends `authn_request`s, reads the auto-post form and verifies
//! its SAMLResponse with `verify_response` — every signing mode, encrypted or not, the
//! IdP-initiated path, and every bad variant refused with its code.
//!
//! Run from the repository root, with pysaml2 on the path (interop/requirements.txt):
//!
//! ```sh
//! PYTHONPATH=target/interop-python/<hash> cargo run -p tessera-saml --example idp_selfcheck
//! ```
//!
//! Not run in CI (pysaml2 is Python); exits non-zero on the first surprise.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use tessera_saml::{
    authn_request, parse_idp_metadata, sp_keypair, sp_metadata, verify_response, SpConfig,
};

type Failure = Box<dyn std::error::Error>;

/// A minimal HTTP/1.0 exchange with the local IdP: (status, body).
fn http(
    base: &str,
    method: &str,
    path_and_query: &str,
    body: &str,
) -> Result<(u16, String), Failure> {
    let host = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(host)?;
    write!(
        stream,
        "{method} {path_and_query} HTTP/1.0\r\nHost: {host}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").ok_or("no HTTP header")?;
    let status = head.split_whitespace().nth(1).ok_or("no status")?.parse()?;
    Ok((status, body.to_owned()))
}

/// The value of a hidden input in the auto-post form.
fn form_value(page: &str, name: &str) -> Option<String> {
    let at = page.find(&format!(r#"name="{name}" value=""#))?;
    let rest = &page[at + name.len() + 15..];
    Some(
        rest[..rest.find('"')?]
            .replace("&amp;", "&")
            .replace("&quot;", "\""),
    )
}

fn main() -> Result<(), Failure> {
    let mut child = Command::new("python3")
        .args(["interop/saml/idp.py", "--port", "0"])
        .stdout(Stdio::piped())
        .spawn()?;
    let result = run(&mut child);
    let _ = child.kill();
    let _ = child.wait();
    result
}

fn run(child: &mut std::process::Child) -> Result<(), Failure> {
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let base = line
        .split(r#""base": ""#)
        .nth(1)
        .and_then(|r| r.split('"').next())
        .ok_or("no base in the IdP's first line")?
        .to_owned();
    println!("IdP at {base}");

    let (_, metadata) = http(&base, "GET", "/metadata", "")?;
    let idp = parse_idp_metadata(&metadata)?;
    let (key, cert) = sp_keypair("selfcheck sp")?;
    let sp = SpConfig {
        entity_id: "https://sp.selfcheck.example/saml".into(),
        acs_url: "https://sp.selfcheck.example/saml/acs".into(),
        idp_entity_id: idp.entity_id.clone(),
        idp_certs: idp.certs.clone(),
        decryption_key_pem: Some(key),
        skew: time::Duration::seconds(120),
    };
    let (status, body) = http(&base, "POST", "/sp", &sp_metadata(&sp, Some(&cert)))?;
    if status != 204 {
        return Err(format!("registering the SP: {status} {body}").into());
    }

    let mut cases: Vec<(String, Option<&str>)> = Vec::new();
    for sign in ["response", "assertion", "both"] {
        for encrypt in ["0", "1"] {
            cases.push((format!("sign={sign}&encrypt={encrypt}"), None));
        }
    }
    for (variant, code) in [
        ("unsigned", "saml/unsigned"),
        ("other_key", "saml/signature_invalid"),
        ("sha1", "saml/algorithm_refused"),
        ("wrong_audience", "saml/audience"),
        ("wrong_recipient", "saml/recipient"),
        ("wrong_destination", "saml/destination"),
        ("expired", "saml/expired"),
        ("not_yet_valid", "saml/not_yet_valid"),
        ("comment_nameid", "saml/split_text"),
        ("two_assertions", "saml/wrapped"),
        ("xsw1", "saml/wrapped"),
        ("xsw2", "saml/wrapped"),
        ("xsw3", "saml/wrapped"),
        ("xsw4", "saml/wrapped"),
        ("xsw5", "saml/wrapped"),
        ("xsw6", "saml/wrapped"),
        ("xsw7", "saml/wrapped"),
        ("xsw8", "saml/wrapped"),
    ] {
        cases.push((format!("variant={variant}"), Some(code)));
    }

    let mut failures = 0;
    for (n, (params, want)) in cases.iter().enumerate() {
        let request_id = format!("id-selfcheck-{n}");
        let url = authn_request(
            &sp,
            &idp.sso_redirect_url,
            &request_id,
            "rs-1",
            time::OffsetDateTime::now_utc(),
        )?;
        let path = url.trim_start_matches(&base);
        let (status, page) = http(
            &base,
            "GET",
            &format!("{path}&user=alice@corp.example&groups=a,b&{params}"),
            "",
        )?;
        if status != 200 {
            return Err(format!("{params}: {status} {page}").into());
        }
        let action = page
            .split(r#"action=""#)
            .nth(1)
            .and_then(|r| r.split('"').next());
        let response = form_value(&page, "SAMLResponse").ok_or("no SAMLResponse")?;
        let relay = form_value(&page, "RelayState");
        let got = verify_response(
            &response,
            &sp,
            Some(&request_id),
            time::OffsetDateTime::now_utc(),
        );
        let ok = match (&got, want) {
            (Ok(a), None) => {
                a.name_id == "alice@corp.example"
                    && a.attributes.get("groups") == Some(&vec!["a".to_owned(), "b".to_owned()])
                    && action == Some(sp.acs_url.as_str())
                    && relay.as_deref() == Some("rs-1")
            }
            (Err(e), Some(code)) => e.code() == *code,
            _ => false,
        };
        let shown = match &got {
            Ok(a) => format!("accepted {}", a.name_id),
            Err(e) => format!("{} ({e})", e.code()),
        };
        println!("{} {params}: {shown}", if ok { "ok  " } else { "FAIL" });
        failures += usize::from(!ok);
    }

    let (_, page) = http(
        &base,
        "GET",
        &format!("/idp-initiated?sp={}&user=bob@corp.example", sp.entity_id),
        "",
    )?;
    let response = form_value(&page, "SAMLResponse").ok_or("no SAMLResponse (IdP-initiated)")?;
    let unsolicited = verify_response(&response, &sp, None, time::OffsetDateTime::now_utc());
    let ok = unsolicited
        .as_ref()
        .is_ok_and(|a| a.name_id == "bob@corp.example" && a.in_response_to.is_none());
    println!(
        "{} idp-initiated: {:?}",
        if ok { "ok  " } else { "FAIL" },
        unsolicited.map(|a| a.name_id)
    );
    failures += usize::from(!ok);
    let expected = verify_response(
        &response,
        &sp,
        Some("id-x"),
        time::OffsetDateTime::now_utc(),
    );
    let ok = expected
        .as_ref()
        .is_err_and(|e| e.code() == "saml/unsolicited");
    println!(
        "{} idp-initiated where a request was expected: refused",
        if ok { "ok  " } else { "FAIL" }
    );
    failures += usize::from(!ok);

    if failures > 0 {
        return Err(format!("{failures} case(s) failed").into());
    }
    println!("all {} cases as expected", cases.len() + 2);
    Ok(())
}
