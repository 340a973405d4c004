//! Keeps a serving process usable through database outages without a human: watches the
//! database, restarts the embedded PostgreSQL when its postmaster dies, makes requests fail fast
//! (503) while the database is down instead of each waiting out the pool's acquire timeout, and
//! reports the state to `/readyz` and `/healthz`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection, PgPool};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::EmbeddedPostgres;

/// How often the embedded postmaster's pid is checked (a file read and a `readlink`).
const WATCH_INTERVAL: Duration = Duration::from_millis(200);
/// How often the database is asked `SELECT 1` while up, and how long it may take to answer.
const PROBE_INTERVAL: Duration = Duration::from_millis(500);
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a down database is probed.
const RECOVER_INTERVAL: Duration = Duration::from_millis(200);
/// Backoff between failed restarts of the embedded cluster.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// sqlx's pool retries a refused connection until its acquire timeout (5 s) and has no hook to
/// fail an acquire sooner. While the database is known to be down, the pool is pointed at a
/// Unix socket that cannot exist: every acquire then fails at once (a missing socket is not
/// retried) and the request answers 503 right away. The supervisor's probe keeps the real
/// options and puts them back the moment the database answers.
const FAIL_FAST_SOCKET_DIR: &str = "/proc/self/memsync-database-is-down";

/// Where the database stands, as `/readyz` and `/healthz` report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Up,
    /// Unreachable; waiting for it to answer again.
    Down,
    /// The embedded postmaster died; restarting it.
    Restarting,
    /// The embedded cluster could not be restarted the configured number of times in a row.
    /// Still retried, but only a restart of the process may help: `/healthz` answers 503.
    Failed,
}

impl Phase {
    fn as_str(self) -> &'static str {
        match self {
            Phase::Up => "up",
            Phase::Down => "down",
            Phase::Restarting => "restarting",
            Phase::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Status {
    pub phase: Phase,
    /// When the current phase's outage began (or the database came up).
    pub since: Instant,
    pub reason: Option<String>,
    /// Failed restarts of the embedded cluster in this outage.
    pub failed_restarts: u32,
}

/// A shared view of the database's state; cheap to clone.
#[derive(Clone)]
pub struct DbHealth(Arc<Mutex<Status>>);

impl DbHealth {
    fn new() -> DbHealth {
        DbHealth(Arc::new(Mutex::new(Status {
            phase: Phase::Up,
            since: Instant::now(),
            reason: None,
            failed_restarts: 0,
        })))
    }

    pub fn status(&self) -> Status {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn update(&self, f: impl FnOnce(&mut Status)) {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// False once restarting the embedded cluster has failed too often in a row.
    pub fn healthy(&self) -> bool {
        self.status().phase != Phase::Failed
    }

    /// The state as JSON, for the `details` of a 503.
    pub fn details(&self) -> Value {
        let s = self.status();
        json!({
            "database": s.phase.as_str(),
            "reason": s.reason,
            "down_for_ms": if s.phase == Phase::Up { 0 } else { s.since.elapsed().as_millis() as u64 },
            "failed_restarts": s.failed_restarts,
        })
    }
}

/// The running supervisor task of a serving process.
pub struct Supervisor {
    health: DbHealth,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Supervisor {
    /// Starts watching `pool`'s database; `embedded` is restarted when its postmaster dies, and
    /// after `restart_attempts` failed restarts in a row the process reports itself unhealthy.
    pub fn spawn(
        pool: PgPool,
        embedded: Option<Arc<EmbeddedPostgres>>,
        restart_attempts: u32,
    ) -> Supervisor {
        let health = DbHealth::new();
        let (stop, stopping) = watch::channel(false);
        let real = (*pool.connect_options()).clone();
        let watcher = Watcher {
            pool,
            real,
            embedded,
            health: health.clone(),
            restart_attempts: restart_attempts.max(1),
            probe: None,
            postmaster: None,
            stopping,
        };
        let task = tokio::spawn(watcher.run());
        Supervisor { health, stop, task }
    }

    pub fn health(&self) -> DbHealth {
        self.health.clone()
    }

    /// Stops the task, waiting for a restart in progress so that the cluster is not started
    /// again behind the back of the shutdown that stops it.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// Why the database went down.
enum Outage {
    PostmasterDied(Option<i32>),
    Unreachable(String),
}

struct Watcher {
    pool: PgPool,
    /// The pool's real connect options (the pool holds the fail-fast ones while down).
    real: PgConnectOptions,
    embedded: Option<Arc<EmbeddedPostgres>>,
    health: DbHealth,
    restart_attempts: u32,
    /// A connection of its own, so that probing never waits for the pool.
    probe: Option<PgConnection>,
    /// The embedded postmaster's pid when last seen alive.
    postmaster: Option<i32>,
    stopping: watch::Receiver<bool>,
}

impl Watcher {
    async fn run(mut self) {
        loop {
            let Some(outage) = self.watch_up().await else {
                return;
            };
            let down_at = Instant::now();
            self.pool
                .set_connect_options(self.real.clone().socket(FAIL_FAST_SOCKET_DIR));
            let (phase, reason) = match &outage {
                Outage::PostmasterDied(pid) => {
                    tracing::warn!(
                        postmaster_pid = pid,
                        pgdata = %self.embedded.as_ref().map(|pg| pg.pgdata().display().to_string()).unwrap_or_default(),
                        "the embedded PostgreSQL died (its postmaster is gone); restarting it, answering 503 meanwhile"
                    );
                    (
                        Phase::Restarting,
                        "the embedded PostgreSQL died; restarting it".to_owned(),
                    )
                }
                Outage::Unreachable(e) => {
                    tracing::warn!(error = %e, "the database is unreachable; answering 503 until it is back");
                    (Phase::Down, format!("the database is unreachable: {e}"))
                }
            };
            self.health.update(|s| {
                *s = Status {
                    phase,
                    since: down_at,
                    reason: Some(reason),
                    failed_restarts: 0,
                }
            });
            if !self.recover(down_at).await {
                return;
            }
        }
    }

    /// Watches a database that is up until it goes down (None: stopping).
    async fn watch_up(&mut self) -> Option<Outage> {
        let mut last_probe = Instant::now();
        loop {
            if self.pause(WATCH_INTERVAL).await {
                return None;
            }
            if let Some(pg) = &self.embedded {
                let pg = pg.clone();
                match tokio::task::spawn_blocking(move || pg.postmaster_pid()).await {
                    Ok(Some(pid)) => self.postmaster = Some(pid),
                    Ok(None) => return Some(Outage::PostmasterDied(self.postmaster.take())),
                    Err(_) => {}
                }
            }
            if last_probe.elapsed() >= PROBE_INTERVAL {
                last_probe = Instant::now();
                if let Err(e) = self.probe().await {
                    return Some(Outage::Unreachable(e));
                }
            }
        }
    }

    /// Restarts the embedded cluster if its postmaster is dead, until the database answers
    /// again (true) or the process stops (false).
    async fn recover(&mut self, down_at: Instant) -> bool {
        let mut failures = 0u32;
        let mut backoff = FIRST_BACKOFF;
        let mut next_restart = Instant::now();
        loop {
            if let Some(pg) = self.embedded.clone()
                && Instant::now() >= next_restart
            {
                let health = self.health.clone();
                let restart = tokio::task::spawn_blocking(move || {
                    if pg.postmaster_pid().is_some() {
                        // Alive (PostgreSQL restarting its backends, or started by someone
                        // else): nothing to do but wait for it to answer.
                        return Ok(false);
                    }
                    health.update(|s| {
                        if s.phase == Phase::Down {
                            s.phase = Phase::Restarting;
                        }
                    });
                    pg.restart().map(|()| true)
                })
                .await
                .unwrap_or_else(|e| Err(anyhow::anyhow!("the restart task failed: {e}")));
                if *self.stopping.borrow() {
                    return false;
                }
                match restart {
                    Ok(true) => tracing::info!(
                        after_ms = down_at.elapsed().as_millis() as u64,
                        "restarted the embedded PostgreSQL"
                    ),
                    Ok(false) => {}
                    Err(e) => {
                        failures += 1;
                        let e = format!("{e:#}");
                        let gave_up = failures >= self.restart_attempts;
                        if failures == self.restart_attempts {
                            tracing::error!(
                                attempts = failures,
                                error = %e,
                                retry_in = ?MAX_BACKOFF,
                                "the embedded PostgreSQL cannot be restarted; /healthz now answers 503 so that the process is restarted (still retrying)"
                            );
                        } else {
                            tracing::warn!(attempt = failures, error = %e, retry_in = ?backoff, "restarting the embedded PostgreSQL failed");
                        }
                        self.health.update(|s| {
                            s.failed_restarts = failures;
                            s.reason = Some(format!(
                                "the embedded PostgreSQL died and {failures} restart(s) failed, the last with: {e}"
                            ));
                            s.phase = if gave_up {
                                Phase::Failed
                            } else {
                                Phase::Restarting
                            };
                        });
                        next_restart = Instant::now() + if gave_up { MAX_BACKOFF } else { backoff };
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                    }
                }
            }
            if self.probe().await.is_ok() {
                self.pool.set_connect_options(self.real.clone());
                let down_for = down_at.elapsed();
                self.health.update(|s| {
                    *s = Status {
                        phase: Phase::Up,
                        since: Instant::now(),
                        reason: None,
                        failed_restarts: 0,
                    }
                });
                tracing::info!(
                    down_for_ms = down_for.as_millis() as u64,
                    failed_restarts = failures,
                    "the database is back; serving again after {:.2} s",
                    down_for.as_secs_f64()
                );
                return true;
            }
            if self.pause(RECOVER_INTERVAL).await {
                return false;
            }
        }
    }

    /// `SELECT 1` on the probe connection, (re)connecting it with the real options.
    async fn probe(&mut self) -> Result<(), String> {
        let (probe, real) = (&mut self.probe, &self.real);
        let answer = tokio::time::timeout(PROBE_TIMEOUT, async {
            let conn = match probe {
                Some(c) => c,
                None => probe.insert(PgConnection::connect_with(real).await?),
            };
            sqlx::query("SELECT 1").execute(conn).await
        })
        .await;
        match answer {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => {
                self.probe = None;
                Err(e.to_string())
            }
            Err(_) => {
                self.probe = None;
                Err(format!("no answer to SELECT 1 within {PROBE_TIMEOUT:?}"))
            }
        }
    }

    /// Sleeps for `d`; true when the process is stopping.
    async fn pause(&mut self, d: Duration) -> bool {
        tokio::select! {
            () = tokio::time::sleep(d) => *self.stopping.borrow(),
            _ = self.stopping.changed() => true,
        }
    }
}
