//! Text messages: the provider behind [`Texter`] (a local outbox, or the Messages REST API
//! with the platform's or the tenant's own account), the courier that sends tenants' messages
//! off their actors with retries, and the outbox listing for the admin CLI.
//!
//! The number, the code and the account's token never reach a log: errors are described by
//! the provider's HTTP status and error code only. A provider's error message (which often
//! quotes the number) is handed only to the dashboard owner who asked for a test message.

use std::{path::PathBuf, sync::Arc, time::Duration};

use serde::{Deserialize, Serialize};
use tessera_actors::outbound::{SmsAccount, SmsJob, SmsKind};
use tessera_storage::files;
use time::{format_description::well_known::Rfc3339, OffsetDateTime};
use tokio::{sync::mpsc::UnboundedReceiver, task::JoinSet};

use tracing::Instrument;

use super::{
    backlog::{Backlog, Entry},
    retry::{self, Backoff, Failure, Job, Lane, Words},
};
use crate::config::{Config, SmsTransport};

/// Messages sent at the same time, at most.
pub const CONCURRENCY: usize = 8;
/// The retry schedule: 6 attempts, with waits of 1, 2, 4, 8 and 16 s between them, so a
/// message is given up about half a minute after it was asked for, long before its code
/// expires.
pub const BACKOFF: Backoff = Backoff {
    first: Duration::from_secs(1),
    cap: Duration::from_secs(16),
    attempts: 6,
};

/// Why a message was not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmsError {
    /// Sending again fails the same way (a 4xx other than 429).
    pub permanent: bool,
    /// What failed, without the number or the content: safe to log.
    pub what: String,
    /// The provider's own message; it may quote the number, so it is never logged.
    pub provider_message: Option<String>,
}

impl std::fmt::Display for SmsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.what)
    }
}

impl Failure for SmsError {
    fn is_permanent(&self) -> bool {
        self.permanent
    }
}

impl SmsError {
    fn transient(what: impl Into<String>) -> Self {
        SmsError {
            permanent: false,
            what: what.into(),
            provider_message: None,
        }
    }
}

/// The platform account, from `[sms]`.
struct PlatformAccount {
    account_sid: String,
    auth_token: String,
    messaging_service_sid: String,
    from: String,
}

/// Sends one text message through the right provider.
pub struct Texter {
    transport: SmsTransport,
    outbox: PathBuf,
    base_url: String,
    platform: PlatformAccount,
    client: reqwest::Client,
}

/// A message as the outbox keeps it (and the admin CLI lists it).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct OutboxSms {
    /// The file name, `<id>.json` (filled in by [`list`]).
    #[serde(default)]
    pub file: String,
    pub id: String,
    pub tenant: String,
    pub kind: String,
    pub to: String,
    pub body: String,
    /// RFC 3339.
    pub date: String,
}

/// The provider's success answer.
#[derive(Deserialize)]
struct Created {
    sid: String,
}

/// The provider's error answer.
#[derive(Deserialize)]
struct Refused {
    code: Option<i64>,
    message: Option<String>,
}

impl Texter {
    pub fn from_config(config: &Config) -> Result<Self, String> {
        let outbox = config.data_path(&config.sms.outbox_dir);
        if config.sms.transport == SmsTransport::Outbox {
            files::create_private_dir(&outbox)
                .map_err(|e| format!("sms.outbox_dir {}: {e}", outbox.display()))?;
        }
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(config.sms.timeout_ms))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("sms client: {e}"))?;
        Ok(Texter {
            transport: config.sms.transport,
            outbox,
            base_url: config.sms.base_url.trim_end_matches('/').to_owned(),
            platform: PlatformAccount {
                account_sid: config.sms.account_sid.clone(),
                auth_token: config.sms.auth_token.0.clone(),
                messaging_service_sid: config.sms.messaging_service_sid.clone(),
                from: config.sms.from.clone(),
            },
            client,
        })
    }

    /// Which provider sends `job`: `byok` (the tenant's own account), `platform` or `outbox`.
    pub fn provider(&self, job: &SmsJob) -> &'static str {
        match (&job.account, self.transport) {
            (SmsAccount::Own { .. }, _) => "byok",
            (SmsAccount::Platform, SmsTransport::Http) => "platform",
            (SmsAccount::Platform, SmsTransport::Outbox) => "outbox",
        }
    }

    /// Sends `job` once; answers the provider's message id.
    pub async fn send(&self, job: &SmsJob) -> Result<String, SmsError> {
        let body = text(job);
        match (&job.account, self.transport) {
            (
                SmsAccount::Own {
                    account_sid,
                    auth_token,
                    messaging_service_sid,
                },
                _,
            ) => {
                self.post(
                    job,
                    &body,
                    account_sid,
                    auth_token,
                    ("MessagingServiceSid", messaging_service_sid),
                )
                .await
            }
            (SmsAccount::Platform, SmsTransport::Http) => {
                let p = &self.platform;
                let sender = if p.messaging_service_sid.is_empty() {
                    ("From", &p.from)
                } else {
                    ("MessagingServiceSid", &p.messaging_service_sid)
                };
                self.post(job, &body, &p.account_sid, &p.auth_token, sender)
                    .await
            }
            (SmsAccount::Platform, SmsTransport::Outbox) => self.write_outbox(job, body).await,
        }
    }

    /// `POST {base}/2010-04-01/Accounts/{sid}/Messages.json`.
    async fn post(
        &self,
        job: &SmsJob,
        body: &str,
        account_sid: &str,
        auth_token: &str,
        sender: (&str, &String),
    ) -> Result<String, SmsError> {
        let url = format!(
            "{}/2010-04-01/Accounts/{}/Messages.json",
            self.base_url, account_sid
        );
        let form = [
            ("To", job.to.as_str()),
            ("Body", body),
            (sender.0, sender.1),
        ];
        let answer = self
            .client
            .post(&url)
            .basic_auth(account_sid, Some(auth_token))
            .form(&form)
            .send()
            .await
            .map_err(|e| {
                SmsError::transient(if e.is_timeout() {
                    "the provider did not answer in time".to_owned()
                } else {
                    "the provider cannot be reached".to_owned()
                })
            })?;
        let status = answer.status();
        let raw = answer
            .bytes()
            .await
            .map_err(|_| SmsError::transient("the provider's answer was cut off"))?;
        if status.is_success() {
            return serde_json::from_slice::<Created>(&raw)
                .map(|c| c.sid)
                .map_err(|_| SmsError {
                    permanent: true,
                    what: format!(
                        "the provider answered {} without a message sid",
                        status.as_u16()
                    ),
                    provider_message: None,
                });
        }
        let refused = serde_json::from_slice::<Refused>(&raw).ok();
        let code = refused.as_ref().and_then(|r| r.code);
        let what = match code {
            Some(c) => format!("the provider answered {} (error {c})", status.as_u16()),
            None => format!("the provider answered {}", status.as_u16()),
        };
        Err(SmsError {
            permanent: status.is_client_error() && status.as_u16() != 429,
            what,
            provider_message: refused.and_then(|r| r.message),
        })
    }

    /// Writes the message to the outbox (`<id>.json`, mode 0600: it holds the code; written
    /// whole then renamed).
    async fn write_outbox(&self, job: &SmsJob, body: String) -> Result<String, SmsError> {
        let id = job.id.to_string();
        let record = OutboxSms {
            file: format!("{id}.json"),
            id: id.clone(),
            tenant: job.tenant_slug.clone(),
            kind: job.kind.name().to_owned(),
            to: job.to.clone(),
            body,
            date: OffsetDateTime::now_utc()
                .format(&Rfc3339)
                .unwrap_or_default(),
        };
        let bytes = serde_json::to_vec_pretty(&record)
            .map_err(|e| SmsError::transient(format!("cannot encode the message: {e}")))?;
        let path = self.outbox.join(format!("{id}.json"));
        tokio::task::spawn_blocking(move || files::write_private_file(&path, &bytes))
            .await
            .map_err(|_| SmsError::transient("outbox: the write stopped"))?
            .map_err(|e| SmsError::transient(format!("outbox: {}", e.kind())))?;
        Ok(id)
    }
}

/// The words of a message. Short, so it fits one segment with most tenant names.
pub fn text(job: &SmsJob) -> String {
    let tenant: String = job.tenant_name.chars().take(40).collect();
    let code = job.code.as_deref().unwrap_or_default();
    match job.kind {
        SmsKind::LoginCode => {
            format!(
                "{code} is your {tenant} sign-in code. It expires in 10 minutes. Do not share it."
            )
        }
        SmsKind::PhoneVerify => format!(
            "{code} is your {tenant} code to confirm this phone number. It expires in 10 minutes."
        ),
        SmsKind::Test => format!("Test message from {tenant}: text messages are set up."),
    }
}

/// Sends tenants' messages from `rx` until it closes, at most [`CONCURRENCY`] at once, each
/// retried on its own task after transient failures. `pending` holds each message from its
/// arrival until it is sent, given up or dropped.
pub async fn run(texter: Arc<Texter>, rx: UnboundedReceiver<SmsJob>, pending: Backlog) {
    run_with(texter, rx, BACKOFF, pending).await;
}

async fn run_with(
    texter: Arc<Texter>,
    mut rx: UnboundedReceiver<SmsJob>,
    backoff: Backoff,
    pending: Backlog,
) {
    // Never flipped: at the end the tasks are aborted, retries and sends alike.
    let (lane, _stopping) = Lane::new(CONCURRENCY, backoff, &WORDS);
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            job = rx.recv() => {
                let Some(job) = job else { break };
                // Every message is sent, even one whose id were already held (ids are fresh
                // UUIDs: it does not happen); only the first is counted.
                let entry = pending.enter(job.id);
                tasks.spawn(deliver(job, texter.clone(), lane.clone(), entry));
            }
            Some(_) = tasks.join_next() => {}
        }
    }
    tasks.shutdown().await;
    tracing::info!("text message delivery stopped");
}

/// What the courier's log lines say.
const WORDS: Words = Words {
    delivered: "text message sent",
    refused: "text message refused; not retrying",
    gave_up: "text message not sent; giving up",
    will_retry: "text message not sent yet; will retry",
    stopped: "stopping; the text message is dropped",
};

/// Sends one message (see [`retry::deliver`]); the log lines name the provider. `_entry`
/// keeps it in the courier's backlog meanwhile.
async fn deliver(job: SmsJob, texter: Arc<Texter>, lane: Lane, _entry: Option<Entry>) {
    let which = Job {
        id: job.id,
        kind: job.kind.name(),
    };
    let span = tracing::info_span!("sms", provider = texter.provider(&job));
    let send = || async { texter.send(&job).await.map(|_| ()) };
    retry::deliver(which, lane, send).instrument(span).await;
}

/// The messages in the outbox, newest first; with `tenant`, only that tenant's. A missing
/// directory is an empty outbox.
pub fn list(dir: &std::path::Path, tenant: Option<&str>) -> std::io::Result<Vec<OutboxSms>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut found = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let raw = match std::fs::read(&path) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let Ok(mut sms) = serde_json::from_slice::<OutboxSms>(&raw) else {
            continue;
        };
        sms.file = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if tenant.is_some_and(|t| t != sms.tenant) {
            continue;
        }
        found.push(sms);
    }
    // Ids are UUID v7: their order is the order of creation.
    found.sort_by(|a, b| b.id.cmp(&a.id));
    Ok(found)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use tessera_storage::TenantId;
    use uuid::Uuid;

    use super::*;

    fn job(kind: SmsKind, code: Option<&str>) -> SmsJob {
        SmsJob {
            id: Uuid::now_v7(),
            tenant: TenantId::new(),
            tenant_slug: "acme".into(),
            tenant_name: "Acme".into(),
            to: "+33612345678".into(),
            kind,
            code: code.map(str::to_owned),
            account: SmsAccount::Platform,
        }
    }

    #[test]
    fn retries_wait_one_two_four_eight_sixteen_then_stop() {
        let waits: Vec<_> = (1..=BACKOFF.attempts)
            .map(|a| BACKOFF.delay(a).map(|d| d.as_secs()))
            .collect();
        assert_eq!(
            waits,
            vec![Some(1), Some(2), Some(4), Some(8), Some(16), None]
        );
    }

    #[test]
    fn messages_carry_their_code_and_tenant() {
        let login = text(&job(SmsKind::LoginCode, Some("123456")));
        assert!(
            login.starts_with("123456 is your Acme sign-in code"),
            "{login}"
        );
        let verify = text(&job(SmsKind::PhoneVerify, Some("654321")));
        assert!(
            verify.contains("654321") && verify.contains("confirm"),
            "{verify}"
        );
        let test = text(&job(SmsKind::Test, None));
        assert!(test.contains("Acme") && !test.chars().any(|c| c.is_ascii_digit()));
    }

    #[tokio::test]
    async fn the_outbox_keeps_each_message_and_lists_newest_first() {
        let tmp = tempfile::tempdir().unwrap();
        let config = Config::from_toml_str(
            &format!(
                "[storage]\ndata_dir = {:?}\n",
                tmp.path().display().to_string()
            ),
            &crate::config::Overrides::default(),
        )
        .unwrap();
        let texter = Texter::from_config(&config).unwrap();
        let first = job(SmsKind::LoginCode, Some("111111"));
        let second = job(SmsKind::Test, None);
        assert_eq!(texter.provider(&first), "outbox");
        assert_eq!(texter.send(&first).await.unwrap(), first.id.to_string());
        texter.send(&second).await.unwrap();
        let dir = config.data_path(&config.sms.outbox_dir);
        {
            use std::os::unix::fs::PermissionsExt;
            let mode =
                |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&dir), 0o700);
            assert_eq!(mode(&dir.join(format!("{}.json", first.id))), 0o600);
        }
        let all = list(&dir, None).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].kind, "test");
        assert_eq!(all[1].kind, "login_code");
        assert_eq!(all[1].to, "+33612345678");
        assert!(all[1].body.contains("111111"));
        assert!(list(&dir, Some("other")).unwrap().is_empty());
        assert_eq!(list(&dir, Some("acme")).unwrap().len(), 2);
    }
}
