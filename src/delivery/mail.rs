//! Outbound mail through lettre: SMTP in production, a file outbox by default so a newcomer
//! sees mail with no server. The message content never reaches a log.

use std::time::Duration;

use lettre::{
    message::{header::ContentType, Mailbox},
    transport::smtp::authentication::Credentials,
    AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor,
};

use crate::config::{Config, MailTransport, SmtpTls};

enum Transport {
    File(AsyncFileTransport<Tokio1Executor>),
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
}

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
                std::fs::create_dir_all(&dir)
                    .map_err(|e| format!("mail.outbox_dir {}: {e}", dir.display()))?;
                Transport::File(AsyncFileTransport::new(dir))
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

    /// Sends one plain-text message.
    pub async fn send(&self, mail: Mail<'_>) -> Result<(), String> {
        let to: Mailbox = mail.to.parse().map_err(|e| format!("recipient: {e}"))?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(mail.subject)
            .header(ContentType::TEXT_PLAIN)
            .body(mail.text)
            .map_err(|e| format!("building the message: {e}"))?;
        match &self.transport {
            Transport::File(t) => t.send(message).await.map(|_| ()).map_err(|e| e.to_string()),
            Transport::Smtp(t) => t.send(message).await.map(|_| ()).map_err(|e| e.to_string()),
        }
    }
}
