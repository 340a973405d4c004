//! The git export (SPEC §7): one bare repository per project under `--export-dir`
//! (`<team>/<name>.git`), one commit per revision, whose tree is the project's team directory at
//! that revision. The commit is authored by the user who pushed (name and email from the
//! revision; `<sub>@memsync.invalid` without an email), committed by `memsync
//! <memsync@localhost>` at the revision's time, and its message lists what changed, with
//! `Memsync-Revision: N` and `Memsync-Project: team/name` trailers. Nothing but memory files ever
//! enters a tree.
//!
//! **Feeding it.** A trigger on `revisions` writes an `export_outbox` row in the transaction that
//! records the revision and notifies `memsync_export`. One `serve` process at a time runs the
//! export: the one holding the Postgres advisory lock (`pg_try_advisory_lock`, on a connection of
//! its own, held for as long as that session lives). Every other process tries to take the lock
//! when notified and every `--export-interval`, so when the exporting process dies (its session
//! ends with it) another one takes over within that time. A process that takes the lock first
//! compares every project's repository in its own `--export-dir` with Postgres and catches it up:
//! its repositories may be missing, stale, or written before a purge (they are then rebuilt),
//! since replicas need not share a disk. Only then does it push every repository to the mirror.
//! Per project it reads the newest exported revision from the repository itself (the trailer of
//! the branch head), appends the revisions after it up to the newest pending one, read from
//! `revisions` and `memory_versions`, and only then deletes the outbox rows. A crash between a
//! commit and the delete leaves rows for revisions the repository already has: they are skipped,
//! never committed twice; a crash before the commit leaves the rows, so nothing is skipped.
//! Because the commits come from the revisions table and not from the rows, a repository that
//! lost commits (or was deleted) is completed from Postgres, and one that is ahead of the
//! database (e.g. after a restore) is rebuilt. Commits are deterministic: the same revisions give
//! the same commit ids, so a repository rebuilt on another replica continues the mirror's history
//! (a fast-forward). The exporter holds no pooled connection (its LISTEN and its lock have
//! connections of their own) and no lock a push waits on.
//!
//! **Rebuilds and purges.** `memsync-server export rebuild [--project P]` and every purge rewrite
//! a repository from Postgres: it is built from scratch in a scratch directory and swapped in
//! with two renames, so the purged content (stored versions whose content is NULL) is in no
//! commit and in no object of the new repository. The request is recorded in `export_rebuilds`
//! in the purge's own transaction, so an interrupted rewrite is finished by the exporter. The
//! trade-off: every commit from the first purged version on gets a new id, so clones made before
//! a purge no longer share history with the export (re-clone), and a mirror is force-updated.
//!
//! **Mirror.** With `--mirror-url-template`, the exporting process pushes every exported or
//! rewritten repository with `git push --mirror` in a task of its own (retried with exponential
//! backoff, each push time-limited); a slow or failing mirror never delays pushes to memsync or
//! the export. A process that is not (or no longer) the exporter never pushes, so the mirror only
//! ever receives the newest history. A rewrite stays in `export_rebuilds` until the mirror has it.
//! A hosting service may keep objects a force-push made unreachable (GitHub keeps them until
//! support runs a GC): purge there too.
//!
//! **Clones.** `git clone http://host/git/<team>/<name>.git` with a token as the HTTP password
//! (or `Authorization: Bearer`), served read-only by `git http-backend` (see [`http`]) from the
//! process's own export directory, and only from a copy known to be current and free of purged
//! content (see [`current`]): on replicas that do not share the exporter's directory that is
//! rarely the case, and they answer 503 pointing at the mirror (docs/operations.md).

mod current;
pub mod http;
mod mirror;
pub mod repo;
mod worker;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, bail};
use memsync_core::ProjectId;
use sqlx::{PgConnection, PgPool};

use crate::config::SecretString;
use crate::error::{ApiError, ApiResult};
use crate::store::outbox;

/// The export's configuration.
#[derive(Debug, Clone)]
pub struct ExportConfig {
    /// The root of the repositories (absolute: `git http-backend` is given it). None: this
    /// process does not export; it forwards clones to the process that does.
    pub dir: Option<PathBuf>,
    /// The URL other replicas forward clones to while this process runs the export.
    pub advertise_url: Option<String>,
    /// How often the exporter looks for work without a notification.
    pub interval: Duration,
    /// Don't run the background exporter in this process (clones are still served).
    pub paused: bool,
    pub mirror: Option<MirrorConfig>,
    /// Test hook (hidden flag): `after-commit` exits the process right after a batch of commits
    /// is written and before the outbox rows are deleted, the worst moment for a crash.
    pub failpoint: Option<String>,
}

#[derive(Debug, Clone)]
pub struct MirrorConfig {
    /// A git URL with `{team}` and `{name}`, e.g. `git@github.com:acme-memsync/{team}-{name}.git`.
    /// It may carry a credential, so it is never logged.
    pub url_template: SecretString,
    /// Time limit for one `git push`.
    pub timeout: Duration,
}

impl MirrorConfig {
    fn url(&self, project: &ProjectId) -> String {
        self.url_template
            .expose()
            .replace("{team}", project.team())
            .replace("{name}", project.name())
    }
}

impl ExportConfig {
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.dir.is_none() && self.mirror.is_some() {
            bail!(
                "--mirror-url-template needs --export-dir: only the process that runs the git export pushes the mirror"
            );
        }
        if let Some(m) = &self.mirror
            && !m.url_template.expose().contains("{name}")
        {
            bail!(
                "--mirror-url-template must contain `{{name}}` (and `{{team}}` when there is more than one team), e.g. git@github.com:acme-memsync/{{team}}-{{name}}.git"
            );
        }
        if let Some(f) = &self.failpoint
            && f != "after-commit"
        {
            bail!("unknown export failpoint `{f}`");
        }
        Ok(())
    }
}

/// Counters of what this process did, for `/metrics` ([`MetricsCollector`]).
#[derive(Default)]
struct Stats {
    commits: AtomicU64,
    rebuilds: AtomicU64,
    failures: AtomicU64,
    mirror_ok: AtomicU64,
    mirror_failed: AtomicU64,
}

/// The export as one process runs it.
pub struct Exporter {
    cfg: ExportConfig,
    /// The root of the repositories (`cfg.dir`, which an exporter always has).
    dir: PathBuf,
    /// The URL other replicas forward clones to while this process runs the export.
    advertise: String,
    stats: Arc<Stats>,
    mirror: Option<mirror::Mirror>,
    /// This process holds the export lock: it writes the repositories and pushes the mirror.
    leader: Arc<AtomicBool>,
    /// Since taking the export lock, this process has compared every repository with the
    /// database and caught it up: its copies are current or catching up.
    caught_up: AtomicBool,
    /// The database the clone checks read (the project's revision, pending rewrites, purges).
    pool: PgPool,
    purge_checks: current::PurgeChecks,
    /// Wakes this process's exporter at once (a purge waiting for its rewrite).
    wake: tokio::sync::Notify,
}

impl Exporter {
    fn repo_path(&self, project: &ProjectId) -> PathBuf {
        repo::path(&self.dir, project)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether this process runs the export now (it holds the export lock).
    pub fn is_leader(&self) -> bool {
        self.leader.load(Ordering::Relaxed)
    }

    /// Whether this process runs the export and has caught its repositories up since it took
    /// the export lock.
    fn is_caught_up(&self) -> bool {
        self.caught_up.load(Ordering::Relaxed)
    }
}

/// The exporter of this `serve` process. Purges and the clone handlers reach it here rather than
/// through the HTTP state, which the export does not own.
static EXPORTER: OnceLock<Arc<Exporter>> = OnceLock::new();

fn installed() -> Option<&'static Arc<Exporter>> {
    EXPORTER.get()
}

/// Starts the export for `serve` when an export directory is configured: the mirror task (when
/// configured) and the background exporter (unless paused).
pub fn start(
    pool: PgPool,
    cfg: ExportConfig,
    listening: std::net::SocketAddr,
) -> anyhow::Result<Option<Arc<Exporter>>> {
    cfg.validate()?;
    let Some(dir) = cfg.dir.clone() else {
        tracing::info!("no export directory: this process does not run the git export");
        return Ok(None);
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating the export directory {}", dir.display()))?;
    let stats = Arc::new(Stats::default());
    let leader = Arc::new(AtomicBool::new(false));
    let mirror = cfg.mirror.clone().map(|m| {
        mirror::Mirror::spawn(pool.clone(), m, dir.clone(), stats.clone(), leader.clone())
    });
    let advertise = cfg
        .advertise_url
        .clone()
        .unwrap_or_else(|| default_advertise_url(listening));
    tracing::info!(url = %advertise, "other replicas forward git clones here while this process runs the export");
    let ex = Arc::new(Exporter {
        cfg,
        dir,
        advertise,
        stats,
        mirror,
        leader,
        caught_up: AtomicBool::new(false),
        pool: pool.clone(),
        purge_checks: current::PurgeChecks::default(),
        wake: tokio::sync::Notify::new(),
    });
    if EXPORTER.set(ex.clone()).is_err() {
        bail!("the export is already running");
    }
    // Pushes lost to a crash or a restart are made by whichever process takes the export lock,
    // once it has caught its repositories up.
    if ex.cfg.paused {
        tracing::info!("the git exporter is paused in this process (--export-paused)");
    } else {
        worker::spawn(own_pool(&pool), ex.clone());
    }
    Ok(Some(ex))
}

/// `http://<listen address>`, or `http://<host name>:<port>` when listening on every address.
fn default_advertise_url(listening: std::net::SocketAddr) -> String {
    if !listening.ip().is_unspecified() {
        return format!("http://{listening}");
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("http://{host}:{}", listening.port())
}

/// The exporter's own two connections, closed with `pool`: under a push load the request pool
/// is always busy, and an exporter queueing behind 64 pushes for each query fell ever further
/// behind them.
fn own_pool(pool: &PgPool) -> PgPool {
    let own = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .min_connections(0)
        .idle_timeout(Duration::from_secs(60))
        .acquire_timeout(Duration::from_secs(5))
        .connect_lazy_with((*pool.connect_options()).clone());
    let (main, closing) = (pool.clone(), own.clone());
    tokio::spawn(async move {
        main.close_event().await;
        closing.close().await;
    });
    own
}

/// How long a purge waits for the export's rewrite before answering that it did not finish.
const REWRITE_WAIT: Duration = Duration::from_secs(20);
/// How long `export rebuild` waits for a running exporter to rewrite what it asked for.
const REBUILD_WAIT: Duration = Duration::from_secs(600);

/// Records, in the purge's transaction, that the project's repository must be rewritten.
pub async fn request_rebuild(conn: &mut PgConnection, project: &ProjectId) -> sqlx::Result<()> {
    outbox::request_rebuild(conn, project).await
}

/// Rewrites the project's repository after a purge (requested with [`request_rebuild`]) and
/// force-updates the mirror. On failure the request stays for the exporter, and the caller
/// hears that the export still holds the content.
pub async fn rewrite_after_purge(pool: &PgPool, project: &ProjectId) -> ApiResult<()> {
    // Without an export directory, this process waits for the one that runs the export.
    let ex = installed().cloned();
    // In a task of its own: a request cut short by its timeout must not drop the lock while the
    // rewrite is still writing.
    let task = tokio::spawn({
        let (pool, ex, project) = (pool.clone(), ex.clone(), project.clone());
        async move {
            let Some(ex) = ex else {
                outbox::notify(&pool, &project).await?;
                return wait_for_rebuild(&pool, &project, REWRITE_WAIT).await;
            };
            let deadline = tokio::time::Instant::now() + REWRITE_WAIT;
            let mut conn = outbox::connect(&pool).await?;
            // The process that runs the export (this one or another replica) does the rewrite,
            // rebuild requests first in its next pass; the commit of the purge woke it, and so do
            // these. When no process runs it, this one does it itself.
            outbox::notify(&pool, &project).await?;
            loop {
                if outbox::try_lock(&mut conn).await? {
                    let r = worker::rebuild_requested(&pool, &ex, Some(&project)).await;
                    if outbox::unlock(&mut conn).await.is_err() {
                        drop(conn); // closing the session frees the lock
                    }
                    return r;
                }
                ex.wake.notify_one();
                if outbox::rebuild_done(&pool, &project).await? {
                    return Ok(());
                }
                if tokio::time::Instant::now() >= deadline {
                    bail!(
                        "the process that runs the git export did not rewrite {project} within {REWRITE_WAIT:?}"
                    );
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        }
    });
    match task.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => {
            if let Some(ex) = installed() {
                bump(&ex.stats.failures, 1);
            }
            tracing::error!(%project, error = format!("{e:#}"), "rewriting the git export after a purge failed");
            Err(ApiError::Unavailable {
                message: format!(
                    "the content is purged from the database, but rewriting the git export of {project} did not finish; the exporter retries it (memsync_export_pending_rebuilds), and repeating the purge retries it now"
                ),
            })
        }
        Err(e) => Err(ApiError::Internal(anyhow::anyhow!(
            "the export rewrite task failed: {e}"
        ))),
    }
}

/// Waits until the process that runs the export has rewritten `project` as requested.
async fn wait_for_rebuild(
    pool: &PgPool,
    project: &ProjectId,
    wait: Duration,
) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + wait;
    while !outbox::rebuild_done(pool, project).await? {
        if tokio::time::Instant::now() >= deadline {
            bail!("the process that runs the git export did not rewrite {project} within {wait:?}");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Ok(())
}

/// `memsync-server export rebuild`: rewrites the repositories of `projects` (every project when
/// empty) from Postgres, then force-updates the mirror.
pub async fn rebuild(
    pool: &PgPool,
    cfg: ExportConfig,
    projects: Vec<ProjectId>,
) -> anyhow::Result<()> {
    cfg.validate()?;
    let projects = if projects.is_empty() {
        outbox::projects(pool)
            .await?
            .into_iter()
            .map(|(p, _)| p)
            .collect()
    } else {
        for p in &projects {
            if crate::store::memories::revision(pool, p).await?.is_none() {
                bail!("there is no project {p}");
            }
        }
        projects
    };
    let mut conn = outbox::connect(pool).await?;
    if !outbox::try_lock(&mut conn).await? {
        return rebuild_by_the_exporter(pool, &projects).await;
    }
    let Some(dir) = cfg.dir.clone() else {
        let _ = outbox::unlock(&mut conn).await;
        bail!(
            "no server runs the git export now and no export directory is configured here: pass --export-dir (MEMSYNC_EXPORT_DIR) naming the exporting server's directory, or start the server that has one"
        );
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating the export directory {}", dir.display()))?;
    let ex = Arc::new(Exporter {
        cfg,
        dir,
        advertise: String::new(),
        stats: Arc::default(),
        mirror: None,
        leader: Arc::new(AtomicBool::new(false)),
        caught_up: AtomicBool::new(false),
        pool: pool.clone(),
        purge_checks: current::PurgeChecks::default(),
        wake: tokio::sync::Notify::new(),
    });
    let mut result = Ok(());
    for p in &projects {
        // Recorded first: if this is interrupted, a server finishes it.
        let step = async {
            let mut tx = pool.begin().await?;
            outbox::request_rebuild(&mut tx, p).await?;
            tx.commit().await?;
            worker::rebuild_requested(pool, &ex, Some(p)).await
        }
        .await;
        match step {
            Ok(()) => eprintln!("memsync-server: rebuilt {}", ex.repo_path(p).display()),
            Err(e) => {
                eprintln!("memsync-server: rebuilding {p} failed: {e:#}");
                result = Err(anyhow::anyhow!("some repositories were not rebuilt"));
            }
        }
    }
    let _ = outbox::unlock(&mut conn).await;
    if let Some(m) = ex.cfg.mirror.clone() {
        for p in &projects {
            match mirror::push_with_retries(pool, &m, &ex.dir, p, 3).await {
                Ok(()) => eprintln!("memsync-server: mirror of {p} updated"),
                Err(e) => {
                    eprintln!(
                        "memsync-server: updating the mirror of {p} failed ({e:#}); a running server retries it"
                    );
                    result = Err(anyhow::anyhow!("some mirrors were not updated"));
                }
            }
        }
    }
    result
}

/// `export rebuild` while a server runs the export (it holds the lock, and the repositories that
/// matter are in its export directory, which need not be this host's): records the requests,
/// wakes it, and waits until it has rewritten each one. It also updates the mirror.
async fn rebuild_by_the_exporter(pool: &PgPool, projects: &[ProjectId]) -> anyhow::Result<()> {
    eprintln!(
        "memsync-server: a running server exports to git (it holds the export lock); it rebuilds the repositories in its export directory and updates the mirror"
    );
    for p in projects {
        let mut tx = pool.begin().await?;
        outbox::request_rebuild(&mut tx, p).await?;
        tx.commit().await?;
        outbox::notify(pool, p).await?;
    }
    let deadline = tokio::time::Instant::now() + REBUILD_WAIT;
    let mut waiting: Vec<&ProjectId> = projects.iter().collect();
    while !waiting.is_empty() {
        let mut left = Vec::new();
        for p in waiting {
            if outbox::rebuild_done(pool, p).await? {
                eprintln!("memsync-server: {p} rebuilt by the running exporter");
            } else {
                left.push(p);
            }
        }
        waiting = left;
        if waiting.is_empty() {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "the running exporter did not rebuild {} within {REBUILD_WAIT:?}; it retries (memsync_export_pending_rebuilds), see its log",
                waiting
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// `git`, without the server's secrets in its environment, killed if its caller gives up.
fn git_command() -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("git");
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if k.starts_with("MEMSYNC_")
            || k.starts_with("PG")
            || k == "DATABASE_URL"
            || matches!(
                k.as_ref(),
                "GIT_DIR"
                    | "GIT_WORK_TREE"
                    | "GIT_INDEX_FILE"
                    | "GIT_OBJECT_DIRECTORY"
                    | "GIT_ALTERNATE_OBJECT_DIRECTORIES"
                    | "GIT_NAMESPACE"
            )
        {
            cmd.env_remove(&key);
        }
    }
    cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
    cmd
}

/// The export's backlog as last read from the database (it is the same on every replica).
#[derive(Debug, Clone, Copy)]
struct Lag {
    pending: i64,
    age_secs: f64,
    rebuilds: i64,
    mirror_rewrites: i64,
}

/// The last [`Lag`] read (None before the first read, and after a failed one), and what wakes
/// its reader early.
static LAG: std::sync::Mutex<Option<Lag>> = std::sync::Mutex::new(None);
static LAG_WAKE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// How often the export lag is read without being woken.
const LAG_EVERY: Duration = Duration::from_secs(5);
/// The least time between two reads of the export lag, however often it is woken.
const LAG_MIN_GAP: Duration = Duration::from_millis(250);

fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
    // The exporter did something (outbox rows deleted, a rewrite made, a mirror pushed): the
    // backlog gauges are read again soon.
    LAG_WAKE.notify_one();
}

/// Reads the export lag from the database every [`LAG_EVERY`], and soon after this process's
/// exporter did something, never more often than every [`LAG_MIN_GAP`], until `pool` closes;
/// `/metrics` serves the last values read, so a scrape costs no query.
pub fn spawn_lag(pool: PgPool) {
    tokio::spawn(async move {
        loop {
            let read = tokio::time::timeout(LAG_EVERY, outbox::lag(&pool)).await;
            let lag = match read {
                Ok(Ok((pending, age_secs, rebuilds, mirror_rewrites))) => Some(Lag {
                    pending,
                    age_secs,
                    rebuilds,
                    mirror_rewrites,
                }),
                Ok(Err(e)) => {
                    if pool.is_closed() {
                        return;
                    }
                    tracing::warn!(error = %e, "reading the export lag failed");
                    None
                }
                Err(_) => {
                    tracing::warn!("reading the export lag took over {LAG_EVERY:?}");
                    None
                }
            };
            *LAG.lock().unwrap_or_else(|e| e.into_inner()) = lag;
            tokio::time::sleep(LAG_MIN_GAP).await;
            tokio::select! {
                () = LAG_WAKE.notified() => {}
                () = tokio::time::sleep(LAG_EVERY - LAG_MIN_GAP) => {}
                () = pool.close_event() => return,
            }
        }
    });
}

/// The export's metrics, from memory: the backlog gauges (as last read by [`spawn_lag`]; absent
/// until read, and while the database cannot be read), and, where this process has an export
/// directory, its leadership and counters.
#[derive(Debug)]
pub struct MetricsCollector;

impl prometheus_client::collector::Collector for MetricsCollector {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::DescriptorEncoder,
    ) -> Result<(), std::fmt::Error> {
        use prometheus_client::encoding::EncodeMetric;
        use prometheus_client::metrics::MetricType;
        use prometheus_client::metrics::counter::ConstCounter;
        use prometheus_client::metrics::gauge::ConstGauge;
        let lag = *LAG.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(lag) = lag {
            let gauges = [
                (
                    "memsync_export_pending_revisions",
                    "Revisions not yet exported to git.",
                    lag.pending as f64,
                ),
                (
                    "memsync_export_lag_seconds",
                    "Age of the oldest revision not yet exported to git (0 when none).",
                    lag.age_secs,
                ),
                (
                    "memsync_export_pending_rebuilds",
                    "Repositories waiting to be rewritten (after a purge or an export rebuild).",
                    lag.rebuilds as f64,
                ),
                (
                    "memsync_export_pending_mirror_rewrites",
                    "Rewritten repositories the mirror does not have yet.",
                    lag.mirror_rewrites as f64,
                ),
            ];
            for (name, help, v) in gauges {
                ConstGauge::new(v).encode(encoder.encode_descriptor(
                    name,
                    help,
                    None,
                    MetricType::Gauge,
                )?)?;
            }
        }
        let Some(ex) = installed() else {
            return Ok(());
        };
        ConstGauge::new(i64::from(ex.is_leader())).encode(encoder.encode_descriptor(
            "memsync_export_leader",
            "1 when this process runs the git export (it holds the export lock), else 0.",
            None,
            MetricType::Gauge,
        )?)?;
        let s = &ex.stats;
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let counters = [
            (
                "memsync_export_commits",
                "Commits this process wrote to the git export.",
                get(&s.commits),
            ),
            (
                "memsync_export_rebuilds",
                "Repositories this process rewrote from scratch.",
                get(&s.rebuilds),
            ),
            (
                "memsync_export_failures",
                "Failed attempts to export a project (retried).",
                get(&s.failures),
            ),
        ];
        for (name, help, v) in counters {
            ConstCounter::new(v).encode(encoder.encode_descriptor(
                name,
                help,
                None,
                MetricType::Counter,
            )?)?;
        }
        let mut family = encoder.encode_descriptor(
            "memsync_export_mirror_pushes",
            "Pushes to the mirror by result.",
            None,
            MetricType::Counter,
        )?;
        for (result, v) in [("ok", get(&s.mirror_ok)), ("error", get(&s.mirror_failed))] {
            ConstCounter::new(v).encode(family.encode_family(&[("result", result)])?)?;
        }
        Ok(())
    }
}
