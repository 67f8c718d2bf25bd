//! Outbound mail through lettre: SMTP in production, a file outbox by default so a newcomer
//! sees mail with no server.
//!
//! Two entry points: [`Mailer::send`], one plain-text message (dashboard invitations), and
//! [`Mailer::send_job`], a templated end-user message from a tenant's queue. The content of a
//! message (its links carry bearer tokens) and the recipient's address never reach a log: the
//! errors built here describe the failure (an SMTP code, "timeout"), never the server's reply
//! text, which often quotes the address.
//!
//! How links survive encoding: lettre would pick quoted-printable for any text with a line of
//! 76 characters or more, which wraps a long link with soft line breaks and writes its `=` as
//! `=3D`. The text part is therefore written as `7bit` (or `8bit` when the tenant name is not
//! ASCII) with lines up to the 998 octets RFC 5322 allows, so each link stays verbatim on its
//! own line. The HTML part, whose lines we do not control as tightly, is base64.

use std::{path::PathBuf, time::Duration};

use lettre::{
    message::{
        header::{ContentTransferEncoding, ContentType, HeaderName, HeaderValue},
        Body, Mailbox, MultiPart, SinglePart,
    },
    transport::smtp::authentication::Credentials,
    AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor,
};
use tessera_actors::outbound::MailJob;
use tessera_storage::files;
use uuid::Uuid;

use super::templates;
use crate::config::{Config, MailTransport, SmtpTls};

/// The tenant (its slug) a message was sent for: lets operators and the outbox listing tell
/// tenants' mail apart without reading bodies.
pub const TENANT_HEADER: &str = "X-Tessera-Tenant";
/// The [`tessera_actors::outbound::MailKind::name`] of a message.
pub const KIND_HEADER: &str = "X-Tessera-Kind";

/// Longest line, in octets without the CRLF, that SMTP and RFC 5322 allow in a `7bit` or
/// `8bit` body.
const MAX_LINE: usize = 998;

enum Transport {
    /// The outbox directory: each message is `<uuid>.eml`, mode 0600 (its links carry bearer
    /// tokens), written whole then renamed. The same files lettre's file transport writes,
    /// which creates them with the process's umask.
    File(PathBuf),
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
}

/// Sends mail through the configured transport. Cheap to share behind an `Arc`: the SMTP
/// transport pools its connections.
pub struct Mailer {
    from: Mailbox,
    transport: Transport,
}

/// One message to send.
pub struct Mail<'a> {
    pub to: &'a str,
    pub subject: &'a str,
    pub text: String,
}

/// Why a message was not sent. The description names the kind of failure only (an SMTP code,
/// "timeout", "invalid recipient address"), never the address or the content, so it can be
/// logged as is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// Sending again will fail the same way: a malformed recipient address, a message that
    /// cannot be built, or an SMTP 5xx answer.
    Permanent(String),
    /// Worth another try later: an SMTP 4xx answer, a network error or timeout, a full disk.
    Transient(String),
}

impl super::retry::Failure for SendError {
    fn is_permanent(&self) -> bool {
        matches!(self, SendError::Permanent(_))
    }
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Permanent(why) => write!(f, "permanent failure: {why}"),
            SendError::Transient(why) => write!(f, "transient failure: {why}"),
        }
    }
}

impl std::error::Error for SendError {}

impl Mailer {
    pub fn from_config(config: &Config) -> Result<Self, String> {
        let from: Mailbox = config
            .mail
            .from
            .parse()
            .map_err(|e| format!("mail.from: {e}"))?;
        let transport = match config.mail.transport {
            MailTransport::File => {
                let dir = config.data_path(&config.mail.outbox_dir);
                files::create_private_dir(&dir)
                    .map_err(|e| format!("mail.outbox_dir {}: {e}", dir.display()))?;
                Transport::File(dir)
            }
            MailTransport::Smtp => {
                let smtp = &config.mail.smtp;
                let builder = match smtp.tls {
                    SmtpTls::None => {
                        AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&smtp.host)
                    }
                    SmtpTls::Starttls => {
                        AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&smtp.host)
                            .map_err(|e| format!("mail.smtp.host: {e}"))?
                    }
                    SmtpTls::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&smtp.host)
                        .map_err(|e| format!("mail.smtp.host: {e}"))?,
                };
                let mut builder = builder
                    .port(smtp.port)
                    .timeout(Some(Duration::from_secs(15)));
                if !smtp.username.is_empty() {
                    builder = builder.credentials(Credentials::new(
                        smtp.username.clone(),
                        smtp.password.0.clone(),
                    ));
                }
                Transport::Smtp(builder.build())
            }
        };
        Ok(Mailer { from, transport })
    }

    /// Sends one plain-text message. The error is safe to log (see [`SendError`]).
    pub async fn send(&self, mail: Mail<'_>) -> Result<(), String> {
        let to = recipient(mail.to).map_err(|e| e.to_string())?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(mail.subject)
            .singlepart(text_part(mail.text))
            .map_err(|e| format!("building the message: {e}"))?;
        self.deliver(message).await.map_err(|e| e.to_string())
    }

    /// Sends one templated end-user message: `multipart/alternative` (text, then HTML) with
    /// the tenant and the kind in `X-Tessera-Tenant` and `X-Tessera-Kind`.
    ///
    /// The Message-ID is derived from the job id, so a message sent twice (delivery is at
    /// least once) carries the same id and receiving systems can fold the copies.
    pub async fn send_job(&self, job: &MailJob) -> Result<(), SendError> {
        let to = recipient(&job.to)?;
        let rendered = templates::render(job);
        let html = Body::new_with_encoding(rendered.html, ContentTransferEncoding::Base64)
            .map_err(|_| SendError::Permanent("encoding the HTML part".into()))?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(rendered.subject)
            .message_id(Some(format!("<{}@{}>", job.id, self.from.email.domain())))
            .raw_header(HeaderValue::new(
                HeaderName::new_from_ascii_str(TENANT_HEADER),
                job.tenant_slug.clone(),
            ))
            .raw_header(HeaderValue::new(
                HeaderName::new_from_ascii_str(KIND_HEADER),
                job.kind.name().to_owned(),
            ))
            .multipart(
                MultiPart::alternative()
                    .singlepart(text_part(rendered.text))
                    .singlepart(
                        SinglePart::builder()
                            .header(ContentType::TEXT_HTML)
                            .body(html),
                    ),
            )
            .map_err(|e| SendError::Permanent(format!("building the message: {e}")))?;
        self.deliver(message).await
    }

    async fn deliver(&self, message: Message) -> Result<(), SendError> {
        match &self.transport {
            // A failed write (full disk, permissions) may be fixed by the operator.
            Transport::File(dir) => {
                let path = dir.join(format!("{}.eml", Uuid::new_v4()));
                let bytes = message.formatted();
                let failed = |e: &dyn std::fmt::Display| {
                    SendError::Transient(format!("writing to the outbox: {e}"))
                };
                tokio::task::spawn_blocking(move || files::write_private_file(&path, &bytes))
                    .await
                    .map_err(|e| failed(&e))?
                    .map_err(|e| failed(&e))
            }
            Transport::Smtp(t) => t
                .send(message)
                .await
                .map(|_| ())
                .map_err(|e| smtp_error(&e)),
        }
    }
}

/// Parses the recipient. The parse error is not kept: it may quote the address.
fn recipient(to: &str) -> Result<Mailbox, SendError> {
    to.parse()
        .map_err(|_| SendError::Permanent("invalid recipient address".into()))
}

/// Classifies an SMTP failure without its reply text (servers quote the recipient there).
fn smtp_error(e: &lettre::transport::smtp::Error) -> SendError {
    if let Some(code) = e.status() {
        let why = format!("the server answered SMTP {code}");
        return if e.is_permanent() {
            SendError::Permanent(why)
        } else {
            SendError::Transient(why)
        };
    }
    if e.is_response() {
        return SendError::Transient("unreadable SMTP answer".into());
    }
    let what = if e.is_timeout() {
        "timeout"
    } else if e.is_tls() {
        "TLS"
    } else if e.is_client() {
        "SMTP client"
    } else if e.is_transport_shutdown() {
        "transport shut down"
    } else {
        "network"
    };
    // The sources of these kinds are I/O, TLS or lettre's own messages: no reply text.
    match std::error::Error::source(e) {
        Some(source) => SendError::Transient(format!("{what}: {source}")),
        None => SendError::Transient(what.into()),
    }
}

/// The `text/plain` part, with its lines kept whole when SMTP allows it (see the module docs).
fn text_part(text: String) -> SinglePart {
    let body = match crlf_within_limits(&text) {
        Some(crlf) => {
            let encoding = if crlf.is_ascii() {
                ContentTransferEncoding::SevenBit
            } else {
                ContentTransferEncoding::EightBit
            };
            // "Pre-encoded" is right here: 7bit and 8bit are the identity encoding, and
            // `crlf_within_limits` has checked what lettre would otherwise check (CRLF line
            // ends, no NUL, no line over 998 octets).
            Body::dangerous_pre_encoded(crlf.into_bytes(), encoding)
        }
        // A line too long for SMTP: let lettre choose quoted-printable or base64.
        None => Body::new(text),
    };
    SinglePart::builder()
        .header(ContentType::TEXT_PLAIN)
        .body(body)
}

/// `text` with every line ending made CRLF, or `None` when it holds a NUL or a line longer
/// than [`MAX_LINE`] octets.
fn crlf_within_limits(text: &str) -> Option<String> {
    if text.contains('\0') {
        return None;
    }
    let mut out = String::with_capacity(text.len() + text.len() / 40);
    let normalized = text.replace("\r\n", "\n").replace('\r', "\n");
    for (i, line) in normalized.split('\n').enumerate() {
        if line.len() > MAX_LINE {
            return None;
        }
        if i > 0 {
            out.push_str("\r\n");
        }
        out.push_str(line);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use tessera_actors::outbound::MailKind;

    use crate::delivery::retry::Failure;
    use tessera_storage::TenantId;
    use uuid::Uuid;

    use super::*;
    use crate::config::Overrides;

    fn file_mailer(dir: &std::path::Path) -> Mailer {
        let config = Config::from_toml_str(
            &format!(
                "[storage]\ndata_dir = {:?}\n[mail]\ntransport = \"file\"\n\
                 from = \"Acme via Tessera <no-reply@mail.example.com>\"\n",
                dir.display().to_string()
            ),
            &Overrides::default(),
        )
        .unwrap();
        Mailer::from_config(&config).unwrap()
    }

    /// The one message in the outbox; it, and the outbox, are their owner's alone.
    fn only_eml(dir: &std::path::Path) -> String {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let files: Vec<_> = std::fs::read_dir(dir.join("outbox"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(mode(&dir.join("outbox")), 0o700);
        assert_eq!(mode(&files[0]), 0o600, "its links carry tokens");
        std::fs::read_to_string(&files[0]).unwrap()
    }

    #[test]
    fn crlf_normalizes_and_enforces_the_line_limit() {
        assert_eq!(
            crlf_within_limits("a\nb\r\nc\rd").unwrap(),
            "a\r\nb\r\nc\r\nd"
        );
        assert!(crlf_within_limits(&"x".repeat(998)).is_some());
        assert!(crlf_within_limits(&"x".repeat(999)).is_none());
        assert!(crlf_within_limits("a\0b").is_none());
    }

    #[tokio::test]
    async fn a_job_is_multipart_with_its_headers_and_an_intact_link() {
        let tmp = tempfile::tempdir().unwrap();
        let mailer = file_mailer(tmp.path());
        // Longer than 76 characters and full of `=`: quoted-printable would break it.
        let link = format!(
            "https://accounts.example.com/t/acme/verify-email?token={}&next=%2Fhome",
            "Zx9_-".repeat(20)
        );
        let job = MailJob {
            id: Uuid::now_v7(),
            tenant: TenantId::new(),
            tenant_slug: "acme".into(),
            tenant_name: "Café Acme".into(),
            to: "user@example.com".into(),
            locale: "en".into(),
            kind: MailKind::VerifyEmail { link: link.clone() },
        };
        mailer.send_job(&job).await.unwrap();
        let eml = only_eml(tmp.path());
        assert!(eml.contains("X-Tessera-Tenant: acme\r\n"), "{eml}");
        assert!(eml.contains("X-Tessera-Kind: verify_email\r\n"));
        assert!(eml.contains("multipart/alternative"));
        assert!(eml.contains(&format!("Message-ID: <{}@mail.example.com>", job.id)));
        assert!(eml.contains("Content-Type: text/plain; charset=utf-8"));
        assert!(eml.contains("Content-Transfer-Encoding: 8bit"));
        assert!(eml.contains("Content-Type: text/html; charset=utf-8"));
        assert!(eml.contains("Content-Transfer-Encoding: base64"));
        assert!(
            eml.contains(&format!("\r\n{link}\r\n")),
            "the link is whole"
        );
        // Only once: the HTML part is base64.
        assert_eq!(eml.matches("token=").count(), 1);
        // The non-ASCII subject is encoded (RFC 2047), the body is 8bit UTF-8.
        let subject = eml.lines().find(|l| l.starts_with("Subject: ")).unwrap();
        assert!(subject.contains("=?utf-8?b?"), "{subject}");
        assert!(!subject.contains("Café"), "{subject}");
        assert!(eml.contains("Welcome to Café Acme."));
    }

    #[tokio::test]
    async fn an_ascii_job_is_7bit_and_a_bad_address_is_permanent() {
        let tmp = tempfile::tempdir().unwrap();
        let mailer = file_mailer(tmp.path());
        let mut job = MailJob {
            id: Uuid::now_v7(),
            tenant: TenantId::new(),
            tenant_slug: "acme".into(),
            tenant_name: "Acme".into(),
            to: "not an address".into(),
            locale: "en".into(),
            kind: MailKind::PasswordChanged,
        };
        let err = mailer.send_job(&job).await.unwrap_err();
        assert!(err.is_permanent());
        assert!(!err.to_string().contains("not an address"));
        job.to = "user@example.com".into();
        mailer.send_job(&job).await.unwrap();
        let eml = only_eml(tmp.path());
        assert!(eml.contains("Content-Transfer-Encoding: 7bit"));
        assert!(eml.contains("Subject: Your Acme password was changed"));
    }

    #[tokio::test]
    async fn plain_send_still_works() {
        let tmp = tempfile::tempdir().unwrap();
        let mailer = file_mailer(tmp.path());
        let link = format!(
            "https://x.example.com/accept-invite?token={}",
            "a".repeat(80)
        );
        mailer
            .send(Mail {
                to: "someone@example.com",
                subject: "Your invitation",
                text: format!("Accept here:\n{link}\n"),
            })
            .await
            .unwrap();
        let eml = only_eml(tmp.path());
        assert!(eml.contains(&format!("\r\n{link}\r\n")));
        assert!(eml.contains("Subject: Your invitation"));
    }
}
