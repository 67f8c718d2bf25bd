//! Reading the file outbox back for `tessera admin outbox list`: with `mail.transport = "file"`
//! the mailer writes each message as `<uuid>.eml` (mode 0600), and an operator (or a newcomer
//! trying the server without a mail server) wants to see what was sent, for which tenant,
//! without opening files.
//!
//! Only the header block of each file is read. The listing shows the recipient, which is fine
//! on the 0600 admin socket; nothing here is logged.

use std::{io::Read, path::Path, time::SystemTime};

use base64::Engine;
use serde::Serialize;
use time::{
    format_description::well_known::{Rfc2822, Rfc3339},
    OffsetDateTime,
};

use super::mail::{KIND_HEADER, TENANT_HEADER};

/// At most this much of a file is read: headers are far shorter, bodies are not needed.
const HEADER_LIMIT: u64 = 64 * 1024;

/// One message in the outbox. Fields are `None` when the header is absent (invitations carry
/// no tenant or kind) or unreadable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OutboxEntry {
    /// The file name, `<uuid>.eml`.
    pub file: String,
    pub tenant: Option<String>,
    pub kind: Option<String>,
    pub to: Option<String>,
    pub subject: Option<String>,
    /// RFC 3339 when the Date header parses, else the header as written.
    pub date: Option<String>,
}

/// The messages in `dir`, newest first; with `tenant`, only that tenant's (a message without
/// a tenant header belongs to no tenant). A missing directory is an empty outbox.
pub fn list(dir: &Path, tenant: Option<&str>) -> std::io::Result<Vec<OutboxEntry>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut found: Vec<(Option<SystemTime>, OutboxEntry)> = Vec::new();
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let Some(file) = path
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| n.ends_with(".eml"))
            .map(str::to_owned)
        else {
            continue;
        };
        let meta = match entry.metadata() {
            Ok(m) if m.is_file() => m,
            Ok(_) => continue,
            // Removed while listing: not an error.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let mut head = Vec::new();
        match std::fs::File::open(&path) {
            Ok(f) => {
                f.take(HEADER_LIMIT).read_to_end(&mut head)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        }
        let parsed = parse(file, &head);
        if let Some(want) = tenant {
            if parsed.tenant.as_deref() != Some(want) {
                continue;
            }
        }
        found.push((meta.modified().ok(), parsed));
    }
    // The write time has sub-second precision where the Date header has seconds; the file
    // name breaks ties so the order is stable.
    found.sort_by(|(ta, a), (tb, b)| tb.cmp(ta).then_with(|| b.file.cmp(&a.file)));
    Ok(found.into_iter().map(|(_, e)| e).collect())
}

/// Reads the headers of one message.
fn parse(file: String, raw: &[u8]) -> OutboxEntry {
    let headers = headers(raw);
    let get = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
    };
    let date = get("Date").map(|d| {
        OffsetDateTime::parse(&d, &Rfc2822)
            .ok()
            .and_then(|t| t.format(&Rfc3339).ok())
            .unwrap_or(d)
    });
    OutboxEntry {
        file,
        tenant: get(TENANT_HEADER),
        kind: get(KIND_HEADER),
        to: get("To").map(|v| decode_words(&v)),
        subject: get("Subject").map(|v| decode_words(&v)),
        date,
    }
}

/// The unfolded header fields before the first empty line, in order.
fn headers(raw: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(raw);
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            // A folded continuation: unfolding removes only the line break.
            if let Some((_, value)) = out.last_mut() {
                value.push_str(line);
            }
            continue;
        }
        if let Some((name, value)) = line.split_once(':') {
            out.push((name.trim().to_owned(), value.to_owned()));
        }
    }
    out
}

/// Decodes RFC 2047 encoded words (`=?utf-8?b?...?=`, `=?iso-8859-1?q?...?=`) in a header
/// value. White space between two encoded words is dropped, as the RFC says; adjacent words'
/// bytes are joined before decoding, so a character split across words survives.
pub fn decode_words(value: &str) -> String {
    let mut out = String::new();
    // Bytes of the current run of encoded words, with their charset.
    let mut run: Option<(String, Vec<u8>)> = None;
    // White space after an encoded word: dropped if another encoded word follows.
    let mut gap = String::new();
    let mut rest = value;
    while let Some(c) = rest.chars().next() {
        if let Some((charset, bytes, len)) = encoded_word(rest) {
            gap.clear();
            match &mut run {
                Some((cs, buf)) if cs.eq_ignore_ascii_case(&charset) => buf.extend(bytes),
                _ => {
                    flush(&mut out, run.take());
                    run = Some((charset, bytes));
                }
            }
            rest = &rest[len..];
            continue;
        }
        if c.is_ascii_whitespace() && run.is_some() {
            gap.push(c);
        } else {
            flush(&mut out, run.take());
            out.push_str(&gap);
            gap.clear();
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    flush(&mut out, run.take());
    out.push_str(&gap);
    out
}

/// Appends a run of decoded bytes in its charset.
fn flush(out: &mut String, run: Option<(String, Vec<u8>)>) {
    let Some((charset, bytes)) = run else { return };
    let cs = charset.to_ascii_lowercase();
    // RFC 2231 allows a language suffix: `utf-8*en`.
    let cs = cs.split('*').next().unwrap_or_default();
    if cs == "iso-8859-1" || cs == "latin1" {
        out.extend(bytes.iter().map(|&b| char::from(b)));
    } else {
        // UTF-8, US-ASCII and anything unknown (shown lossily rather than not at all).
        out.push_str(&String::from_utf8_lossy(&bytes));
    }
}

/// An encoded word at the start of `s`: its charset, decoded bytes and length in `s`.
fn encoded_word(s: &str) -> Option<(String, Vec<u8>, usize)> {
    let inner = s.strip_prefix("=?")?;
    let (charset, inner) = inner.split_once('?')?;
    let (encoding, inner) = inner.split_once('?')?;
    let end = inner.find("?=")?;
    let text = &inner[..end];
    if charset.is_empty() || text.contains([' ', '\t']) {
        return None;
    }
    let bytes = match encoding {
        "b" | "B" => base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()?,
        "q" | "Q" => decode_q(text)?,
        _ => return None,
    };
    let len = 2 + charset.len() + 1 + encoding.len() + 1 + end + 2;
    Some((charset.to_owned(), bytes, len))
}

/// The "Q" encoding: `_` is a space, `=XX` a byte in hex.
fn decode_q(text: &str) -> Option<Vec<u8>> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'_' => out.push(b' '),
            b'=' => {
                let hex = text.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use tessera_actors::outbound::{MailJob, MailKind};
    use tessera_storage::TenantId;
    use uuid::Uuid;

    use super::*;
    use crate::{
        config::{Config, Overrides},
        delivery::mail::{Mail, Mailer},
    };

    #[test]
    fn encoded_words_are_decoded() {
        assert_eq!(decode_words("plain subject"), "plain subject");
        assert_eq!(decode_words("=?utf-8?b?Q2Fmw6k=?= Acme"), "Café Acme");
        // Adjacent words join, white space between them goes.
        assert_eq!(decode_words("=?utf-8?b?Q2Fm?=  =?utf-8?b?w6k=?="), "Café");
        // A character split across two words.
        assert_eq!(
            decode_words("=?UTF-8?B?Q2Fmww==?= =?UTF-8?B?qQ==?="),
            "Café"
        );
        assert_eq!(
            decode_words("=?iso-8859-1?q?caf=E9_cr=E8me?= x"),
            "café crème x"
        );
        assert_eq!(
            decode_words("Re: =?utf-8?q?caf=C3=A9?= now"),
            "Re: café now"
        );
        // Not encoded words: left alone.
        assert_eq!(decode_words("=?broken"), "=?broken");
        assert_eq!(decode_words("a =?x?z?y?= b"), "a =?x?z?y?= b");
    }

    #[test]
    fn headers_unfold_and_stop_at_the_body() {
        let raw = b"Subject: a\r\n b\r\nTo: x@example.com\r\n\r\nSubject: body\r\n";
        let h = headers(raw);
        assert_eq!(
            h,
            vec![
                ("Subject".into(), " a b".into()),
                ("To".into(), " x@example.com".into())
            ]
        );
    }

    #[test]
    fn a_missing_outbox_is_empty() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(list(&tmp.path().join("none"), None).unwrap().is_empty());
    }

    #[tokio::test]
    async fn lists_what_the_mailer_wrote_newest_first_and_filters_by_tenant() {
        let tmp = tempfile::tempdir().unwrap();
        let config = Config::from_toml_str(
            &format!(
                "[storage]\ndata_dir = {:?}\n",
                tmp.path().display().to_string()
            ),
            &Overrides::default(),
        )
        .unwrap();
        let mailer = Mailer::from_config(&config).unwrap();
        let outbox = config.data_path(&config.mail.outbox_dir);
        let long_name = "Ünïcödé Tenant With A Rather Long Name That Folds";
        let job = MailJob {
            id: Uuid::now_v7(),
            tenant: TenantId::new(),
            tenant_slug: "acme".into(),
            tenant_name: long_name.into(),
            to: "user@example.com".into(),
            locale: "en".into(),
            kind: MailKind::PasswordReset {
                link: "https://a.example.com/reset?token=t".into(),
            },
        };
        mailer.send_job(&job).await.unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        mailer
            .send(Mail {
                to: "invitee@example.com",
                subject: "Your invitation",
                text: "hello".into(),
            })
            .await
            .unwrap();

        let all = list(&outbox, None).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].subject.as_deref(), Some("Your invitation"));
        assert_eq!(all[0].tenant, None);
        assert_eq!(all[0].kind, None);
        assert_eq!(all[1].tenant.as_deref(), Some("acme"));
        assert_eq!(all[1].kind.as_deref(), Some("password_reset"));
        assert_eq!(all[1].to.as_deref(), Some("user@example.com"));
        assert_eq!(
            all[1].subject.as_deref(),
            Some(format!("Reset your {long_name} password").as_str())
        );
        assert!(all[1].file.ends_with(".eml"));
        let date = all[1].date.as_deref().unwrap();
        assert!(OffsetDateTime::parse(date, &Rfc3339).is_ok(), "{date}");

        let acme = list(&outbox, Some("acme")).unwrap();
        assert_eq!(acme.len(), 1);
        assert_eq!(acme[0].file, all[1].file);
        assert!(list(&outbox, Some("other")).unwrap().is_empty());
    }
}
