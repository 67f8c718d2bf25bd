//! How a command is answered, as data, and the one [`finish`] that applies it, for the tenant
//! actors and the directory alike.
//!
//! A command's [`Outcome`] carries its result, the [`Timing`] its answer needs, and what goes
//! out once its writes are on disk (mail, a text message, keys to publish). The actor applies
//! the change, hands the outcome to [`finish`] and takes its next message at once: a reply
//! that must wait for the group flush waits in a task of its own, never in the mailbox. Mail
//! never leaves before the change that caused it is durable.

use std::sync::Arc;

use ractor::RpcReplyPort;
use tessera_storage::flusher::Ticket;
use uuid::Uuid;

use crate::{
    error::{DirectoryError, TenantError},
    outbound::{MailJob, Outbound, SmsJob},
};

/// When a command's answer may leave the actor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// At once: the command wrote nothing its caller could rely on (a read, a check).
    Now,
    /// Once every write applied so far is on disk, success and refusal alike (a refusal can
    /// have written too: a counted failure, a revoked token family).
    Durable,
    /// A success once durable; a refusal at once (a refusal of this command writes nothing).
    DurableSuccess,
    /// A success at once; a refusal once durable (the check wrote nothing, a refusal counted a
    /// failure).
    DurableRefusal,
    /// At once, the same for a known and an unknown address (`202`): the command wrote as much
    /// for either (a link or code and its sealed message, or a decoy of the same size), and
    /// the flush that carries the write, whose time depends on what it writes, is never
    /// waited for. Whatever goes out leaves once it is durable.
    Alike,
}

/// Where a command's result goes: the caller's port, which [`finish`] answers.
pub type Reply<T, E> = RpcReplyPort<Result<T, E>>;

/// A tenant command's reply port (the last field of every tenant command).
pub type TenantReply<T> = Reply<T, TenantError>;

/// A directory command's reply port, for the commands that can be refused.
pub type DirectoryReply<T> = Reply<T, DirectoryError>;

/// Work to do once the writes are durable, before the answer leaves (publishing new signing
/// keys to the request handlers, so no token is signed with a key a crash could lose).
type Publish = Box<dyn FnOnce() + Send>;

/// One command's result and how it must be answered.
#[must_use = "an outcome is answered by `finish`"]
pub struct Outcome<T, E> {
    result: Result<T, E>,
    timing: Timing,
    mail: Vec<MailJob>,
    sms: Option<SmsJob>,
    withdrawn: Vec<Uuid>,
    publish: Option<Publish>,
}

impl<T, E> Outcome<T, E> {
    fn new(result: Result<T, E>, timing: Timing) -> Self {
        Outcome {
            result,
            timing,
            mail: Vec::new(),
            sms: None,
            withdrawn: Vec::new(),
            publish: None,
        }
    }

    /// Answered at once.
    pub fn now(result: Result<T, E>) -> Self {
        Self::new(result, Timing::Now)
    }

    /// Answered once durable, whatever the result.
    pub fn durable(result: Result<T, E>) -> Self {
        Self::new(result, Timing::Durable)
    }

    /// A success answered once durable, a refusal at once.
    pub fn durable_success(result: Result<T, E>) -> Self {
        Self::new(result, Timing::DurableSuccess)
    }

    /// A success answered at once, a refusal once durable.
    pub fn durable_refusal(result: Result<T, E>) -> Self {
        Self::new(result, Timing::DurableRefusal)
    }

    /// Answered once durable, whatever the result; a success's mail goes to delivery then.
    pub fn with_mail(result: Result<(T, Vec<MailJob>), E>) -> Self {
        match result {
            Ok((value, mail)) => Outcome {
                mail,
                ..Self::durable(Ok(value))
            },
            Err(e) => Self::durable(Err(e)),
        }
    }

    /// A read (`reads_only`) answered at once, or a write answered with its mail once durable.
    pub fn read_or_mail(reads_only: bool, result: Result<(T, Vec<MailJob>), E>) -> Self {
        if reads_only {
            Self::now(result.map(|(value, _)| value))
        } else {
            Self::with_mail(result)
        }
    }

    /// A success that wrote (`wrote`) answered once durable, otherwise at once.
    pub fn wrote(result: Result<(T, bool), E>) -> Self {
        match result {
            Ok((value, true)) => Self::durable(Ok(value)),
            other => Self::now(other.map(|(value, _)| value)),
        }
    }

    /// A text message handed to delivery once the writes are durable.
    pub fn texting(mut self, sms: Option<SmsJob>) -> Self {
        self.sms = sms;
        self
    }

    /// Queued messages the command removed: withdrawn from delivery at once.
    fn withdrawing(mut self, ids: Vec<Uuid>) -> Self {
        self.withdrawn = ids;
        self
    }

    /// Work done once the writes are durable, before a success is answered.
    pub fn publishing(mut self, publish: impl FnOnce() + Send + 'static) -> Self {
        self.publish = Some(Box::new(publish));
        self
    }
}

impl<E> Outcome<(), E> {
    /// The `202` answer that must not tell whether an address has an account: see
    /// [`Timing::Alike`]. A refusal (the switch, the per-address spacing) comes before any
    /// lookup, alike for every address, and is answered at once.
    pub fn alike(result: Result<Vec<MailJob>, E>) -> Self {
        match result {
            Ok(mail) => Outcome {
                mail,
                ..Self::new(Ok(()), Timing::Alike)
            },
            Err(e) => Self::now(Err(e)),
        }
    }
}

impl<E> Outcome<(), E> {
    /// An erasure: the queued messages it removed (`Ok`: their ids) are withdrawn from
    /// delivery at once, so none is attempted again, and the answer waits for the erasure to
    /// be on disk.
    pub fn erased(result: Result<Vec<Uuid>, E>) -> Self {
        match result {
            Ok(withdrawn) => Self::durable_success(Ok(())).withdrawing(withdrawn),
            Err(e) => Self::now(Err(e)),
        }
    }
}

/// An actor's error for a write that could not be made durable.
pub trait FlushFailure {
    fn flush_failed(reason: String) -> Self;
}

impl FlushFailure for TenantError {
    fn flush_failed(reason: String) -> Self {
        TenantError::Internal(reason)
    }
}

impl FlushFailure for DirectoryError {
    fn flush_failed(reason: String) -> Self {
        DirectoryError::Internal(reason)
    }
}

/// Where an actor's writes become durable and its messages leave.
pub trait Durability {
    /// A ticket that resolves once every write applied so far is on disk.
    fn ticket(&self) -> Ticket;
    /// Where mail and text messages go (`None`: this actor sends none).
    fn outbound(&self) -> Option<Arc<dyn Outbound>>;
}

/// Answers `outcome` on `reply` as its timing says, and hands what it sends to delivery once
/// its writes are durable.
pub fn finish<T, E>(actor: &impl Durability, reply: Reply<T, E>, outcome: Outcome<T, E>)
where
    T: Send + 'static,
    E: FlushFailure + Send + 'static,
{
    let Outcome {
        result,
        timing,
        mail,
        sms,
        withdrawn,
        publish,
    } = outcome;
    let outbound = actor.outbound();
    if !withdrawn.is_empty() {
        if let Some(outbound) = &outbound {
            outbound.withdraw(&withdrawn);
        }
    }
    let waits = match (timing, result.is_ok()) {
        (Timing::Now, _)
        | (Timing::DurableSuccess, false)
        | (Timing::DurableRefusal, true)
        | (Timing::Alike, false) => false,
        (Timing::Alike, true) => {
            let _ = reply.send(result);
            let ticket = actor.ticket();
            tokio::spawn(async move {
                match ticket.wait().await {
                    Ok(()) => deliver(outbound.as_deref(), mail, sms),
                    Err(e) => tracing::error!(error = %e, "a write could not be made durable"),
                }
            });
            return;
        }
        (Timing::Durable | Timing::DurableSuccess | Timing::DurableRefusal, _) => true,
    };
    if !waits {
        let _ = reply.send(result);
        return;
    }
    let ticket = actor.ticket();
    tokio::spawn(async move {
        let out = match ticket.wait().await {
            Ok(()) => {
                if result.is_ok() {
                    if let Some(publish) = publish {
                        publish();
                    }
                    deliver(outbound.as_deref(), mail, sms);
                }
                result
            }
            Err(e) => {
                tracing::error!(error = %e, "a write could not be made durable");
                Err(E::flush_failed(e.to_string()))
            }
        };
        let _ = reply.send(out);
    });
}

/// Answers on a port that carries no result once the writes applied so far are durable (a
/// failed flush is logged: the answer has nothing to fail).
pub fn after_flush(actor: &impl Durability, reply: RpcReplyPort<()>) {
    let ticket = actor.ticket();
    tokio::spawn(async move {
        if let Err(e) = ticket.wait().await {
            tracing::error!(error = %e, "a write could not be made durable");
        }
        let _ = reply.send(());
    });
}

fn deliver(outbound: Option<&dyn Outbound>, mail: Vec<MailJob>, sms: Option<SmsJob>) {
    let Some(outbound) = outbound else {
        if !mail.is_empty() || sms.is_some() {
            tracing::error!("an actor without delivery queued a message");
        }
        return;
    };
    for job in mail {
        outbound.submit(job);
    }
    if let Some(job) = sms {
        outbound.submit_sms(job);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use ractor::concurrency::{oneshot, OneshotReceiver};
    use tessera_storage::{PlatformStore, TenantId};

    use super::*;
    use crate::outbound::MailKind;

    /// What reached delivery, in order: `mail <id>`, `withdraw <id>`, `sms`.
    #[derive(Default)]
    struct Log(Mutex<Vec<String>>);

    impl Log {
        fn push(&self, line: String) {
            self.0.lock().unwrap().push(line);
        }

        fn lines(&self) -> Vec<String> {
            self.0.lock().unwrap().clone()
        }
    }

    impl Outbound for Log {
        fn submit(&self, job: MailJob) {
            self.push(format!("mail {}", job.id));
        }

        fn submit_sms(&self, _job: SmsJob) {
            self.push("sms".into());
        }

        fn withdraw(&self, ids: &[Uuid]) {
            for id in ids {
                self.push(format!("withdraw {id}"));
            }
        }

        fn webhooks_due(&self, _tenant: TenantId, _at: time::OffsetDateTime) {}
    }

    struct Actor {
        store: PlatformStore,
        log: Arc<Log>,
    }

    impl Durability for Actor {
        fn ticket(&self) -> Ticket {
            self.store.ticket()
        }

        fn outbound(&self) -> Option<Arc<dyn Outbound>> {
            Some(self.log.clone())
        }
    }

    fn actor(dir: &std::path::Path) -> Actor {
        Actor {
            store: crate::tenant::accounts::tests::test_store(dir).platform(),
            log: Arc::default(),
        }
    }

    fn mail() -> MailJob {
        MailJob {
            id: Uuid::now_v7(),
            tenant: TenantId::new(),
            tenant_slug: "acme".into(),
            tenant_name: "Acme".into(),
            to: "ada@example.com".into(),
            kind: MailKind::PasswordChanged,
            locale: "en".into(),
        }
    }

    /// The answer, if it was sent already (the runtime has one thread: a spawned wait has not
    /// run before the test awaits).
    fn sent<T>(rx: &mut OneshotReceiver<T>) -> Option<T> {
        rx.try_recv().ok()
    }

    type Rx = OneshotReceiver<Result<u8, TenantError>>;

    fn answer(a: &Actor, outcome: Outcome<u8, TenantError>) -> Rx {
        let (tx, rx) = oneshot();
        finish(a, tx.into(), outcome);
        rx
    }

    #[tokio::test(flavor = "current_thread")]
    async fn each_timing_answers_when_it_says() {
        let dir = tempfile::tempdir().unwrap();
        let a = actor(dir.path());
        let refused = || Err(TenantError::NotFound);
        // (outcome, answered at once?)
        let cases: Vec<(&str, Outcome<u8, TenantError>, bool)> = vec![
            ("now ok", Outcome::now(Ok(1)), true),
            ("now refused", Outcome::now(refused()), true),
            ("durable ok", Outcome::durable(Ok(1)), false),
            ("durable refused", Outcome::durable(refused()), false),
            ("durable_success ok", Outcome::durable_success(Ok(1)), false),
            (
                "durable_success refused",
                Outcome::durable_success(refused()),
                true,
            ),
            ("durable_refusal ok", Outcome::durable_refusal(Ok(1)), true),
            (
                "durable_refusal refused",
                Outcome::durable_refusal(refused()),
                false,
            ),
            ("wrote", Outcome::wrote(Ok((1, true))), false),
            ("wrote nothing", Outcome::wrote(Ok((1, false))), true),
            (
                "read",
                Outcome::read_or_mail(true, Ok((1, vec![mail()]))),
                true,
            ),
            (
                "write",
                Outcome::read_or_mail(false, Ok((1, vec![mail()]))),
                false,
            ),
        ];
        for (name, outcome, at_once) in cases {
            let mut rx = answer(&a, outcome);
            assert_eq!(sent(&mut rx).is_some(), at_once, "{name}");
            if !at_once {
                rx.await.unwrap().ok();
            }
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn mail_leaves_once_durable_and_only_with_a_success() {
        let dir = tempfile::tempdir().unwrap();
        let a = actor(dir.path());
        let job = mail();
        let id = job.id;
        let mut rx = answer(&a, Outcome::with_mail(Ok((7, vec![job]))));
        assert!(sent(&mut rx).is_none());
        assert!(a.log.lines().is_empty(), "mail left before the flush");
        assert!(matches!(rx.await, Ok(Ok(7))));
        assert_eq!(a.log.lines(), [format!("mail {id}")]);
        // A read answered at once sends nothing, not even the mail it was handed.
        let rx = answer(&a, Outcome::read_or_mail(true, Ok((1, vec![mail()]))));
        assert!(matches!(rx.await, Ok(Ok(1))));
        let rx = answer(&a, Outcome::with_mail(Err(TenantError::NotFound)));
        assert!(matches!(rx.await, Ok(Err(TenantError::NotFound))));
        tokio::task::yield_now().await;
        assert_eq!(a.log.lines().len(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_alike_answer_leaves_at_once_and_its_mail_after_the_flush() {
        let dir = tempfile::tempdir().unwrap();
        let a = actor(dir.path());
        let (tx, mut rx) = oneshot();
        let job = mail();
        let id = job.id;
        finish(
            &a,
            tx.into(),
            Outcome::alike(Ok::<_, TenantError>(vec![job])),
        );
        assert!(matches!(sent(&mut rx), Some(Ok(()))));
        assert!(a.log.lines().is_empty(), "mail left before the flush");
        // The same for no mail (an unknown address): answered at once, nothing sent.
        let (tx, mut rx) = oneshot();
        finish(
            &a,
            tx.into(),
            Outcome::alike(Ok::<_, TenantError>(Vec::new())),
        );
        assert!(matches!(sent(&mut rx), Some(Ok(()))));
        for _ in 0..200 {
            if !a.log.lines().is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(a.log.lines(), [format!("mail {id}")]);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_erasure_withdraws_at_once_and_answers_once_durable() {
        let dir = tempfile::tempdir().unwrap();
        let a = actor(dir.path());
        let gone = Uuid::now_v7();
        let (tx, mut rx) = oneshot();
        finish(
            &a,
            tx.into(),
            Outcome::erased(Ok::<_, TenantError>(vec![gone])),
        );
        assert_eq!(a.log.lines(), [format!("withdraw {gone}")]);
        assert!(sent(&mut rx).is_none());
        assert!(matches!(rx.await, Ok(Ok(()))));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn what_is_published_is_published_before_the_answer_and_never_for_a_refusal() {
        let dir = tempfile::tempdir().unwrap();
        let a = actor(dir.path());
        let log = a.log.clone();
        let rx = answer(
            &a,
            Outcome::durable_success(Ok(3)).publishing(move || log.push("published".into())),
        );
        assert!(a.log.lines().is_empty());
        assert!(matches!(rx.await, Ok(Ok(3))));
        assert_eq!(a.log.lines(), ["published"]);
        let log = a.log.clone();
        let rx = answer(
            &a,
            Outcome::durable(Err(TenantError::NotFound))
                .publishing(move || log.push("published".into())),
        );
        assert!(matches!(rx.await, Ok(Err(TenantError::NotFound))));
        assert_eq!(a.log.lines(), ["published"]);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_text_message_leaves_after_the_flush() {
        let dir = tempfile::tempdir().unwrap();
        let a = actor(dir.path());
        let sms = SmsJob {
            id: Uuid::now_v7(),
            tenant: TenantId::new(),
            tenant_slug: "acme".into(),
            tenant_name: "Acme".into(),
            to: "+33612345678".into(),
            kind: crate::outbound::SmsKind::LoginCode,
            code: Some("123456".into()),
            account: crate::outbound::SmsAccount::Platform,
        };
        let (tx, mut rx) = oneshot();
        finish(
            &a,
            tx.into(),
            Outcome::durable_success(Ok::<_, TenantError>(())).texting(Some(sms)),
        );
        assert!(sent(&mut rx).is_none());
        assert!(a.log.lines().is_empty());
        rx.await.unwrap().unwrap();
        assert_eq!(a.log.lines(), ["sms"]);
    }
}
