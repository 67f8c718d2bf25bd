//! The directory as supervisor of the tenant actors: it starts one the first time its tenant is
//! used (`EnsureRunning`), restarts a crashed one within a budget, stops the ones left idle, and
//! keeps the published map of running actors in step with all of it.

use std::{
    path::PathBuf,
    sync::{atomic::AtomicU64, Arc},
    time::{Duration, Instant},
};

use ractor::{Actor, ActorId, ActorRef, ActorStatus, SupervisionEvent};
use tessera_storage::{MasterKey, RotationReport, TenantId};

use super::{
    messages::DirectoryMsg,
    state::{DirectoryState, RestartBudget},
    tenants::info_of,
};
use crate::{
    error::DirectoryError,
    published::{unix_now, RunningTenant},
    sealed_fields::SEALED_FIELDS,
    tenant::{
        records::QueuedMail, webhooks::WebhookDueIndex, TenantActor, TenantArgs, TenantCells,
    },
};

/// Crashes tolerated per tenant within [`RESTART_WINDOW`] before it answers 503 for a while.
const MAX_RESTARTS: u32 = 5;
const RESTART_WINDOW: Duration = Duration::from_secs(60);
/// How long an idle tenant actor may take to finish the messages it already has.
const RETIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// How often idle tenant actors are looked for: a few times per idle period, between once a
/// second and once a minute.
fn idle_tick(idle: Duration) -> Duration {
    (idle / 4).clamp(Duration::from_secs(1), Duration::from_secs(60))
}

impl RestartBudget {
    /// A budget with no crash counted, its window opening at `now`.
    fn new(now: Instant) -> Self {
        RestartBudget {
            window_start: now,
            count: 0,
            failed_until: None,
        }
    }

    /// Counts a crash at `now`; false when it is one more than [`MAX_RESTARTS`] within
    /// [`RESTART_WINDOW`]: the tenant then answers 503 for a window.
    fn charge(&mut self, now: Instant) -> bool {
        if now.duration_since(self.window_start) > RESTART_WINDOW {
            self.window_start = now;
            self.count = 0;
        }
        self.count += 1;
        if self.count > MAX_RESTARTS {
            self.failed_until = Some(now + RESTART_WINDOW);
            false
        } else {
            true
        }
    }

    /// Whether the tenant may be started at `now`: not while it answers 503; once that
    /// period is over, its count starts again from zero.
    fn admits(&mut self, now: Instant) -> bool {
        match self.failed_until {
            Some(until) if now < until => false,
            Some(_) => {
                self.failed_until = None;
                self.count = 0;
                true
            }
            None => true,
        }
    }
}

impl DirectoryState {
    /// Starts the tenants that have mail or webhook deliveries waiting from the last run, so
    /// they go out now rather than at the tenant's next request. Only the existence of a
    /// queued message or a due delivery is read here; the tenant's own actor reads and sends
    /// them (and wakes the webhook worker).
    pub(super) async fn start_tenants_with_mail(&mut self, myself: &ActorRef<DirectoryMsg>) {
        let pending: Vec<TenantId> = self
            .tenants
            .keys()
            .copied()
            .filter(|id| {
                let store = self.root.tenant(*id);
                store.scan::<QueuedMail>(b"").next().is_some()
                    || store.scan::<WebhookDueIndex>(b"").next().is_some()
            })
            .collect();
        for id in pending {
            if let Err(e) = self.ensure_running(myself, id).await {
                tracing::error!(tenant = %id, error = %e, "cannot start a tenant with queued mail or webhooks");
            }
        }
    }

    /// Sends `RetireIdle` a few times per idle period, when tenant actors are ever retired;
    /// the timer ends with the directory.
    pub(super) fn start_idle_timer(&self, myself: &ActorRef<DirectoryMsg>) {
        let Some(idle) = self.tenant_idle else {
            return;
        };
        let period = idle_tick(idle);
        let directory = myself.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                if directory.cast(DirectoryMsg::RetireIdle).is_err() {
                    break;
                }
            }
        });
    }

    /// A tenant actor crashed or stopped: it leaves the published map, and a crashed one is
    /// started again while within its restart budget.
    pub(super) async fn supervise(
        &mut self,
        myself: &ActorRef<DirectoryMsg>,
        event: SupervisionEvent,
    ) {
        match event {
            SupervisionEvent::ActorFailed(cell, err) => {
                let Some(id) = self.by_actor.remove(&cell.get_id()) else {
                    return;
                };
                tracing::error!(tenant = %id, error = %err, "tenant actor crashed");
                if !self.is_current(id, cell.get_id()) {
                    // A predecessor that crashed on its way out: its successor runs on. The
                    // crash still counts against the tenant's budget.
                    self.charge_restart(id);
                    return;
                }
                self.unpublish(id);
                if self.charge_restart(id) {
                    if let Err(e) = self.spawn_tenant(myself, id).await {
                        tracing::error!(tenant = %id, error = %e, "tenant actor restart failed");
                    }
                } else {
                    tracing::error!(tenant = %id, "tenant over its restart budget; answering 503");
                }
            }
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                if let Some(id) = self.by_actor.remove(&cell.get_id()) {
                    if self.is_current(id, cell.get_id()) {
                        self.unpublish(id);
                    }
                }
            }
            _ => {}
        }
    }

    /// Stops every tenant actor (the directory is stopping).
    pub(super) async fn stop_all(&mut self) {
        self.published.running.clear();
        self.by_actor.clear();
        for (_, running) in self.running.drain() {
            running
                .actor
                .stop_and_wait(Some("shutdown".into()), Some(Duration::from_secs(5)))
                .await
                .ok();
        }
    }

    /// Takes a stopped (or stopping) actor out of the directory's map and the published one.
    /// Its entry in `by_actor` stays until its supervision event comes, so the event is known
    /// for the tenant's, and for a predecessor's, whatever runs by then.
    fn unpublish(&mut self, id: TenantId) -> Option<RunningTenant> {
        let r = self.running.remove(&id)?;
        self.published.running.remove(&id);
        Some(r)
    }

    /// Whether `actor` is the tenant's actor now (not a predecessor a successor replaced).
    fn is_current(&self, id: TenantId, actor: ActorId) -> bool {
        self.running
            .get(&id)
            .is_some_and(|r| r.actor.get_id() == actor)
    }

    /// Records a crash; false when the tenant is over its budget (it then answers 503 until
    /// the window passes).
    fn charge_restart(&mut self, id: TenantId) -> bool {
        let now = Instant::now();
        self.restarts
            .entry(id)
            .or_insert_with(|| RestartBudget::new(now))
            .charge(now)
    }

    /// Stops every tenant actor unused for longer than `tenant_idle`, one at a time. Each is
    /// first taken out of the published map (new requests then come here, and wait behind this
    /// message), then drained: it refuses new messages (their senders retry through
    /// `EnsureRunning`), handles those already queued, and stops. Only then can a successor
    /// start, so one tenant never has two actors.
    pub(super) async fn retire_idle(&mut self) {
        let Some(idle) = self.tenant_idle else {
            return;
        };
        let idle_ids: Vec<TenantId> = self
            .running
            .iter()
            // Whole seconds on both sides: `>` means more than `idle` has really passed.
            .filter(|(_, r)| r.idle_secs() > idle.as_secs())
            .map(|(id, _)| *id)
            .collect();
        if idle_ids.is_empty() {
            return;
        }
        self.retire(&idle_ids).await;
        tracing::info!(
            retired = idle_ids.len(),
            running = self.running.len(),
            "idle tenant actors stopped"
        );
    }

    /// Stops these tenant actors as [`DirectoryState::retire_idle`] describes.
    async fn retire(&mut self, ids: &[TenantId]) {
        for id in ids {
            let Some(r) = self.unpublish(*id) else {
                continue;
            };
            let drained = r.actor.drain_and_wait(Some(RETIRE_TIMEOUT)).await;
            if drained.is_err() {
                tracing::warn!(tenant = %id, "a tenant actor did not drain in time; stopping it");
                r.actor.kill_and_wait(Some(RETIRE_TIMEOUT)).await.ok();
            }
        }
    }

    /// Rotates the master key (see `DirectoryMsg::RotateMasterKey`). Every tenant actor is
    /// drained first; the directory answers nothing else until the rotation ends, so no actor
    /// starts with the old key after it, or with the new one before it.
    pub(super) async fn rotate_master_key(
        &mut self,
        myself: &ActorRef<DirectoryMsg>,
        new: MasterKey,
        key_path: PathBuf,
    ) -> Result<RotationReport, DirectoryError> {
        let running: Vec<TenantId> = self.running.keys().copied().collect();
        self.retire(&running).await;
        let (store, old) = (self.root.clone(), self.master_key.clone());
        let started = Instant::now();
        let outcome = tokio::task::spawn_blocking(move || {
            store.rotate_master_key(&old, &new, &key_path, SEALED_FIELDS)
        })
        .await;
        let answer = match outcome {
            Ok(Ok((key, report))) => {
                self.master_key = key;
                tracing::warn!(
                    records = report.records,
                    values = report.total_values(),
                    ms = started.elapsed().as_millis() as u64,
                    "the master key was rotated"
                );
                Ok(report)
            }
            Ok(Err(e)) => {
                tracing::error!(error = %e, "the master-key rotation failed; the old key stays");
                Err(DirectoryError::KeyRotation(e.to_string()))
            }
            Err(e) => Err(DirectoryError::Internal(e.to_string())),
        };
        self.start_tenants_with_mail(myself).await;
        answer
    }

    /// The tenant's running actor, started unless it runs; `TenantUnavailable` while the
    /// tenant is over its restart budget.
    pub(super) async fn ensure_running(
        &mut self,
        myself: &ActorRef<DirectoryMsg>,
        id: TenantId,
    ) -> Result<RunningTenant, DirectoryError> {
        if let Some(r) = self.running.get(&id) {
            if takes_messages(r.actor.get_status()) {
                return Ok(r.clone());
            }
            // A predecessor on its way out (draining or stopping): its successor starts only
            // once it has stopped, so one tenant never has two actors.
            let old = r.actor.clone();
            if old.wait(Some(RETIRE_TIMEOUT)).await.is_err() {
                tracing::warn!(tenant = %id, "a stopping tenant actor did not stop in time; killing it");
                old.kill_and_wait(Some(RETIRE_TIMEOUT)).await.ok();
            }
            self.unpublish(id);
        }
        if let Some(b) = self.restarts.get_mut(&id) {
            if !b.admits(Instant::now()) {
                return Err(DirectoryError::TenantUnavailable);
            }
        }
        self.spawn_tenant(myself, id).await
    }

    async fn spawn_tenant(
        &mut self,
        myself: &ActorRef<DirectoryMsg>,
        id: TenantId,
    ) -> Result<RunningTenant, DirectoryError> {
        let rec = self
            .tenants
            .get(&id)
            .ok_or(DirectoryError::TenantNotFound)?;
        let cells = TenantCells::empty();
        let args = TenantArgs {
            info: info_of(rec),
            store: self.root.tenant(id),
            master_key: self.master_key.clone(),
            fault_injection: self.fault_injection,
            runtime: self.runtime.clone(),
            cells: cells.clone(),
        };
        let (actor, _) = Actor::spawn_linked(None, TenantActor, args, myself.get_cell())
            .await
            .map_err(|e| {
                tracing::error!(tenant = %id, error = %e, "tenant actor failed to start");
                DirectoryError::TenantUnavailable
            })?;
        let running = RunningTenant {
            actor,
            cells,
            last_used: Arc::new(AtomicU64::new(unix_now())),
        };
        self.running.insert(id, running.clone());
        self.by_actor.insert(running.actor.get_id(), id);
        self.published.running.insert(id, running.clone());
        Ok(running)
    }
}

/// Whether a tenant actor takes messages: spawned (its `pre_start` ran; ractor marks it
/// `Running` only once its task first runs, so a just-spawned actor reads `Starting`) and
/// neither draining nor stopping.
pub fn takes_messages(status: ActorStatus) -> bool {
    matches!(
        status,
        ActorStatus::Starting | ActorStatus::Running | ActorStatus::Upgrading
    )
}

#[cfg(test)]
mod tests {
    use ractor::{concurrency::JoinHandle, ActorProcessingErr};

    use super::*;
    use crate::directory::state::tests::{directory, tenant};

    /// A supervisor that lets the test deliver supervision events to the state itself.
    struct Inert;

    impl Actor for Inert {
        type Msg = DirectoryMsg;
        type State = ();
        type Arguments = ();

        async fn pre_start(
            &self,
            _myself: ActorRef<DirectoryMsg>,
            _args: (),
        ) -> Result<(), ActorProcessingErr> {
            Ok(())
        }

        async fn handle_supervisor_evt(
            &self,
            _myself: ActorRef<DirectoryMsg>,
            _event: SupervisionEvent,
            _state: &mut (),
        ) -> Result<(), ActorProcessingErr> {
            Ok(())
        }
    }

    /// A directory holding the tenant "Acme", with an inert supervisor for its actors.
    async fn acme_supervised(
        dir: &std::path::Path,
    ) -> (
        DirectoryState,
        TenantId,
        ActorRef<DirectoryMsg>,
        JoinHandle<()>,
    ) {
        let mut d = directory(dir);
        let (acme, _) = tenant(&mut d, "Acme");
        let (sup, sup_handle) = Actor::spawn(None, Inert, ()).await.unwrap();
        (d, acme, sup, sup_handle)
    }

    /// Stops the inert supervisor and waits for it.
    async fn stop_supervisor(sup: ActorRef<DirectoryMsg>, handle: JoinHandle<()>) {
        sup.stop(None);
        handle.await.unwrap();
    }

    /// Waits until the actor has left `Starting` (`spawn` answers before its status is
    /// `Running`).
    async fn started(r: &RunningTenant) {
        while matches!(r.actor.get_status(), ActorStatus::Starting) {
            tokio::task::yield_now().await;
        }
    }

    #[test]
    fn a_budget_allows_its_restarts_within_the_window_then_refuses_for_a_window() {
        let start = Instant::now();
        let mut b = RestartBudget::new(start);
        for i in 0..MAX_RESTARTS {
            assert!(
                b.charge(start + Duration::from_secs(u64::from(i))),
                "crash {i}"
            );
        }
        let refused_at = start + Duration::from_secs(10);
        assert!(!b.charge(refused_at));
        assert_eq!(b.failed_until, Some(refused_at + RESTART_WINDOW));
        assert!(!b.admits(refused_at));
        assert!(!b.admits(refused_at + RESTART_WINDOW - Duration::from_millis(1)));
        // Once the window has passed the tenant starts again, with its count from zero.
        assert!(b.admits(refused_at + RESTART_WINDOW));
        assert_eq!((b.count, b.failed_until), (0, None));
        assert!(b.admits(refused_at + RESTART_WINDOW));
    }

    #[test]
    fn a_window_without_crashes_starts_the_count_again() {
        let start = Instant::now();
        let mut b = RestartBudget::new(start);
        for _ in 0..MAX_RESTARTS {
            assert!(b.charge(start));
        }
        // At the window's end exactly, the crash still counts in it.
        assert!(!b.charge(start + RESTART_WINDOW));
        let mut b = RestartBudget::new(start);
        for _ in 0..MAX_RESTARTS {
            assert!(b.charge(start));
        }
        let later = start + RESTART_WINDOW + Duration::from_millis(1);
        assert!(b.charge(later));
        assert_eq!((b.count, b.window_start), (1, later));
        assert_eq!(b.failed_until, None);
        assert!(b.admits(later));
    }

    #[test]
    fn idle_actors_are_looked_for_a_few_times_per_idle_period() {
        assert_eq!(idle_tick(Duration::from_secs(120)), Duration::from_secs(30));
        assert_eq!(idle_tick(Duration::from_secs(2)), Duration::from_secs(1));
        assert_eq!(idle_tick(Duration::ZERO), Duration::from_secs(1));
        assert_eq!(
            idle_tick(Duration::from_secs(3600)),
            Duration::from_secs(60)
        );
    }

    #[tokio::test]
    async fn a_crashed_tenant_is_restarted_within_its_budget_then_answers_unavailable() {
        let dir = tempfile::tempdir().unwrap();
        let (mut d, acme, sup, sup_handle) = acme_supervised(dir.path()).await;
        assert!(matches!(
            d.ensure_running(&sup, TenantId::new()).await,
            Err(DirectoryError::TenantNotFound)
        ));
        let first = d.ensure_running(&sup, acme).await.unwrap();
        started(&first).await;
        let again = d.ensure_running(&sup, acme).await.unwrap();
        assert_eq!(first.actor.get_id(), again.actor.get_id());
        assert_eq!(
            d.published.running.get(&acme).unwrap().actor.get_id(),
            first.actor.get_id()
        );
        let mut current = first.actor.clone();
        for crash in 0..=MAX_RESTARTS {
            current
                .stop_and_wait(None, Some(Duration::from_secs(5)))
                .await
                .unwrap();
            d.supervise(
                &sup,
                SupervisionEvent::ActorFailed(current.get_cell(), "crash".into()),
            )
            .await;
            if crash < MAX_RESTARTS {
                let next = d.published.running.get(&acme).unwrap().clone();
                started(&next).await;
                let next = next.actor;
                assert_ne!(next.get_id(), current.get_id());
                assert_eq!(d.by_actor.get(&next.get_id()), Some(&acme));
                assert!(!d.by_actor.contains_key(&current.get_id()));
                current = next;
            }
        }
        assert!(d.published.running.get(&acme).is_none());
        assert!(d.running.is_empty() && d.by_actor.is_empty());
        assert!(matches!(
            d.ensure_running(&sup, acme).await,
            Err(DirectoryError::TenantUnavailable)
        ));
        // An event of an actor the directory does not know changes nothing.
        d.supervise(
            &sup,
            SupervisionEvent::ActorFailed(sup.get_cell(), "unrelated".into()),
        )
        .await;
        assert_eq!(d.restarts[&acme].count, MAX_RESTARTS + 1);
        d.stop_all().await;
        stop_supervisor(sup, sup_handle).await;
    }

    #[tokio::test]
    async fn a_tenant_just_started_is_not_started_twice() {
        let dir = tempfile::tempdir().unwrap();
        let (mut d, acme, sup, sup_handle) = acme_supervised(dir.path()).await;
        // Back to back, as two first requests to a cold tenant: the first actor may still
        // read `Starting`, and is the one answered both times.
        let a = d.ensure_running(&sup, acme).await.unwrap();
        let b = d.ensure_running(&sup, acme).await.unwrap();
        assert_eq!(a.actor.get_id(), b.actor.get_id());
        assert_eq!(d.by_actor.len(), 1);
        d.stop_all().await;
        stop_supervisor(sup, sup_handle).await;
    }

    #[tokio::test]
    async fn a_late_event_of_a_predecessor_leaves_its_successor_running() {
        let dir = tempfile::tempdir().unwrap();
        let (mut d, acme, sup, sup_handle) = acme_supervised(dir.path()).await;
        let first = d.ensure_running(&sup, acme).await.unwrap();
        started(&first).await;
        // The actor stops on its own; its event has not reached the directory yet.
        first.actor.stop(None);
        while takes_messages(first.actor.get_status()) {
            tokio::task::yield_now().await;
        }
        let second = d.ensure_running(&sup, acme).await.unwrap();
        assert_ne!(second.actor.get_id(), first.actor.get_id());
        assert!(matches!(first.actor.get_status(), ActorStatus::Stopped));
        // The predecessor's event (a crash, say) comes late: the successor stays published
        // and running, and no third actor starts.
        d.supervise(
            &sup,
            SupervisionEvent::ActorFailed(first.actor.get_cell(), "late".into()),
        )
        .await;
        let published = d.published.running.get(&acme).map(|r| r.actor.get_id());
        assert_eq!(published, Some(second.actor.get_id()));
        assert!(takes_messages(second.actor.get_status()));
        assert_eq!(d.by_actor.len(), 1);
        // A stop of the successor itself still takes it out.
        second.actor.stop(None);
        second.actor.wait(None).await.unwrap();
        d.supervise(
            &sup,
            SupervisionEvent::ActorTerminated(second.actor.get_cell(), None, None),
        )
        .await;
        assert!(!d.published.running.contains_key(&acme));
        stop_supervisor(sup, sup_handle).await;
    }

    #[tokio::test]
    async fn a_retired_tenant_leaves_the_published_map_and_starts_again_on_use() {
        let dir = tempfile::tempdir().unwrap();
        let (mut d, acme, sup, sup_handle) = acme_supervised(dir.path()).await;
        let first = d.ensure_running(&sup, acme).await.unwrap();
        started(&first).await;
        // Never retired while no idle period is set.
        first
            .last_used
            .store(0, std::sync::atomic::Ordering::Relaxed);
        d.retire_idle().await;
        assert!(d.published.running.contains_key(&acme));
        d.tenant_idle = Some(Duration::from_secs(60));
        d.retire_idle().await;
        assert!(!d.published.running.contains_key(&acme));
        assert!(d.running.is_empty());
        assert!(matches!(
            first.actor.get_status(),
            ActorStatus::Stopped | ActorStatus::Stopping
        ));
        // Its stop is no crash: nothing is charged.
        d.supervise(
            &sup,
            SupervisionEvent::ActorTerminated(first.actor.get_cell(), None, None),
        )
        .await;
        assert!(d.restarts.is_empty() && d.by_actor.is_empty());
        let second = d.ensure_running(&sup, acme).await.unwrap();
        assert_ne!(second.actor.get_id(), first.actor.get_id());
        // One just used is kept.
        d.retire_idle().await;
        assert!(d.published.running.contains_key(&acme));
        d.stop_all().await;
        assert!(d.published.running.is_empty());
        stop_supervisor(sup, sup_handle).await;
    }
}
