//! Reading the file outbox back for `tessera admin outbox list` and `show` and the
//! development mail viewer: with `mail.transport = "file"` the mailer writes each message as
//! `<uuid>.eml` (mode 0600), and an operator (or a newcomer trying the server without a mail
//! server) wants to see what was sent, for which tenant, and follow its links, without opening
//! files. The MIME parsing is `mail-parser`'s, the links are found by `linkify`.
//!
//! A listing reads only the header block of each file; `show` reads one message whole. The listing shows the recipient, which is fine
//! on the 0600 admin socket; nothing here is logged.

use std::{io::Read, path::Path, time::SystemTime};

use linkify::{LinkFinder, LinkKind};
use mail_parser::MessageParser;
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

/// Reads the headers of one message (RFC 2047 words decoded by the MIME parser).
fn parse(file: String, raw: &[u8]) -> OutboxEntry {
    let Some(msg) = MessageParser::default().parse_headers(raw) else {
        return OutboxEntry {
            file,
            tenant: None,
            kind: None,
            to: None,
            subject: None,
            date: None,
        };
    };
    let raw_header = |name: &str| msg.header_raw(name).map(|v| v.trim().to_owned());
    let date = raw_header("Date").map(|d| {
        OffsetDateTime::parse(&d, &Rfc2822)
            .ok()
            .and_then(|t| t.format(&Rfc3339).ok())
            .unwrap_or(d)
    });
    let to = msg.to().map(|to| {
        to.iter()
            .filter_map(|a| a.address())
            .collect::<Vec<_>>()
            .join(", ")
    });
    OutboxEntry {
        file,
        tenant: raw_header(TENANT_HEADER),
        kind: raw_header(KIND_HEADER),
        to,
        subject: msg.subject().map(str::to_owned),
        date,
    }
}

/// A message's largest size read back whole: the server's mails are a few KiB.
const MESSAGE_LIMIT: u64 = 1024 * 1024;

/// One message read back whole: its headers, its text (the plain part, decoded) and the links
/// in that text, in order, each once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OutboxMessage {
    #[serde(flatten)]
    pub entry: OutboxEntry,
    pub text: String,
    pub links: Vec<String>,
}

/// The file of message `id` in `dir`: `id` is the listing's file name (`<uuid>.eml`) or its
/// UUID; anything else names no message (and no other file).
fn message_file(dir: &Path, id: &str) -> Option<(String, std::path::PathBuf)> {
    let uuid = uuid::Uuid::parse_str(id.strip_suffix(".eml").unwrap_or(id)).ok()?;
    let file = format!("{}.eml", uuid.hyphenated());
    let path = dir.join(&file);
    Some((file, path))
}

/// Message `id` of the outbox in `dir`, or `None` when there is no such message.
pub fn show(dir: &Path, id: &str) -> std::io::Result<Option<OutboxMessage>> {
    let Some((file, path)) = message_file(dir, id) else {
        return Ok(None);
    };
    let mut raw = Vec::new();
    match std::fs::File::open(&path) {
        Ok(f) => {
            f.take(MESSAGE_LIMIT).read_to_end(&mut raw)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    let text = MessageParser::default()
        .parse(&raw)
        .and_then(|m| m.body_text(0).map(|t| t.into_owned()))
        .unwrap_or_default();
    let mut links: Vec<String> = Vec::new();
    for link in LinkFinder::new().kinds(&[LinkKind::Url]).links(&text) {
        let link = link.as_str();
        if (link.starts_with("https://") || link.starts_with("http://"))
            && !links.iter().any(|l| l == link)
        {
            links.push(link.to_owned());
        }
    }
    Ok(Some(OutboxMessage {
        entry: parse(file, &raw),
        text,
        links,
    }))
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
    fn encoded_words_are_decoded_and_folded_headers_unfolded() {
        let raw = "To: x@example.com\r\nSubject: =?utf-8?b?Q2Fm?=\r\n  =?utf-8?b?w6k=?= Acme\r\n\
                   X-Tessera-Tenant: acme\r\n\r\nSubject: body\r\n";
        let e = parse("f.eml".into(), raw.as_bytes());
        assert_eq!(e.subject.as_deref(), Some("Café Acme"));
        assert_eq!(e.to.as_deref(), Some("x@example.com"));
        let raw = "Subject: Re: =?iso-8859-1?q?caf=E9_cr=E8me?= now\r\n\r\n";
        let e = parse("f.eml".into(), raw.as_bytes());
        assert_eq!(e.subject.as_deref(), Some("Re: café crème now"));
        assert_eq!(e.tenant, None);
    }

    #[test]
    fn only_an_outbox_file_name_or_its_uuid_names_a_message() {
        let dir = Path::new("/data/outbox");
        let id = "0192f0c4-7a1e-7cc0-9b7e-3f2a1d4c5b6a";
        for given in [id.to_owned(), format!("{id}.eml"), id.to_uppercase()] {
            let (file, path) = message_file(dir, &given).unwrap();
            assert_eq!(file, format!("{id}.eml"));
            assert_eq!(path, dir.join(&file));
        }
        for bad in [
            "../master.key",
            "x.eml",
            "",
            "/etc/passwd",
            &format!("{id}/../x"),
        ] {
            assert!(message_file(dir, bad).is_none(), "{bad}");
        }
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

        // Read back whole: the plain text decoded (the HTML part aside) and its links once.
        let reset = show(&outbox, &all[1].file).unwrap().unwrap();
        assert_eq!(reset.entry, all[1]);
        assert!(
            reset.text.contains("https://a.example.com/reset?token=t"),
            "{}",
            reset.text
        );
        assert!(!reset.text.contains("<a "), "{}", reset.text);
        assert_eq!(reset.links, ["https://a.example.com/reset?token=t"]);
        let plain = show(&outbox, all[0].file.trim_end_matches(".eml"))
            .unwrap()
            .unwrap();
        assert_eq!(plain.text.trim(), "hello");
        assert!(plain.links.is_empty());
        let unknown = uuid::Uuid::now_v7().to_string();
        assert_eq!(show(&outbox, &unknown).unwrap(), None);
        assert_eq!(show(&outbox, "../config.toml").unwrap(), None);

        let acme = list(&outbox, Some("acme")).unwrap();
        assert_eq!(acme.len(), 1);
        assert_eq!(acme[0].file, all[1].file);
        assert!(list(&outbox, Some("other")).unwrap().is_empty());
    }
}
