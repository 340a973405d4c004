//! `memsync watch`: keeps the current repository's team dir live, in the foreground, until it is
//! stopped (SIGINT, SIGTERM, or `--until-pid` gone).
//!
//! It pulls at the start, then whenever the server's event stream (`GET …/events`) announces a
//! revision past the one the team dir reflects (falling back to long-poll pulls on a server
//! without the stream), and pushes local changes once the team dir has been quiet for
//! `--quiet-period`. Pulls and pushes are `memsync pull`'s and `memsync push`'s own (the engine
//! in `memsync::sync`): local edits are never overwritten, guards run before anything leaves the
//! machine, conflicts are kept and reported. The state lock is taken for each pull or push only,
//! so `memsync status`, `pull` or a hook can run beside a watcher.
//!
//! The event stream is read by its own task, which only passes on what the server said
//! (revisions, connection changes, the end of the stream); pulls and pushes run one at a time in
//! the main loop, never cut short: a signal is handled once the operation under way is done.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use memsync::api::{ApiClient, ApiError, Page, Pulled};
use memsync::config::Settings;
use memsync::fsops::TeamDir;
use memsync::sse::Item;
use memsync::state::{StateError, StateStore};
use memsync::sync::{Engine, Report, SyncError};
use memsync::watch::{Fingerprint, Taken, WatchInfo, WatchLock, pid_alive};
use memsync_core::ProjectId;
use memsync_core::wire::{EndEvent, RevisionEvent};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{ENV, Fail, OK, api_client, require_project, runtime, settings_at};
use crate::Global;

/// How often the team dir is looked at for local changes.
const POLL: Duration = Duration::from_millis(500);
/// How often `--until-pid` is checked.
const PID_CHECK: Duration = Duration::from_secs(1);
/// How long a pull or push waits for another memsync holding the project's state lock before
/// it tries again later.
const STATE_LOCK_WAIT: Duration = Duration::from_secs(5);
/// A stream that sends nothing, not even a heartbeat (every 15 s by default), for this long is
/// taken for dead and opened again.
const STREAM_IDLE: Duration = Duration::from_secs(45);
/// The reconnection delay until the server says otherwise (`retry:`).
const DEFAULT_RETRY: Duration = Duration::from_secs(2);
/// The longest wait between two attempts after failures.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The `wait=` of a long-poll, on a server without the event stream.
const LONG_POLL_WAIT: u32 = 30;
/// A long-poll answered "nothing new" faster than this (a server that does not wait) is not
/// repeated before this much time has passed.
const MIN_POLL_CYCLE: Duration = Duration::from_secs(5);

pub struct Options {
    pub quiet_period: Duration,
    pub until_pid: Option<i32>,
    pub session_id: Option<String>,
}

pub fn run(g: &Global, cwd: &Path, opts: Options) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let project = require_project(&settings)?;
    let api = api_client(g, &settings)?;
    let team = TeamDir::open(&settings.team_dir).map_err(Fail::env)?;
    if let Some(pid) = opts.until_pid
        && !pid_alive(pid)
    {
        return Err(Fail::env(format!(
            "--until-pid {pid}: no such process (it has exited already)"
        )));
    }
    let info = WatchInfo {
        pid: std::process::id(),
        session_id: opts.session_id.clone(),
        until_pid: opts.until_pid,
        team_dir: settings.team_dir.clone(),
        started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    };
    let _lock = match WatchLock::acquire(&settings.state_dir, &info) {
        Ok(Ok(lock)) => lock,
        Ok(Err(Taken(holder))) => {
            let who = holder
                .map(|h| {
                    let session = h
                        .session_id
                        .map(|s| format!(", for agent session {s}"))
                        .unwrap_or_default();
                    format!(" (pid {}{session}, since {})", h.pid, h.started_at)
                })
                .unwrap_or_default();
            return Err(Fail::env(format!(
                "another memsync watch{who} already keeps {} live; stop it first (SIGTERM), or let it be",
                settings.team_dir.display()
            )));
        }
        Err(e) => {
            return Err(Fail::env(format!(
                "cannot take the watch lock in {}: {e}",
                settings.state_dir.display()
            )));
        }
    };
    let rt = runtime()?;
    let mut w = Watcher {
        out: Out {
            json: g.json,
            quiet: g.quiet,
        },
        settings,
        project,
        api,
        team,
        opts,
        recorded: 0,
        head: 0,
        changed_at: None,
        fingerprint: Fingerprint::default(),
        conflicts: BTreeSet::new(),
        refused: BTreeSet::new(),
        pull_failures: 0,
        push_failures: 0,
        pull_after: None,
        push_after: None,
    };
    rt.block_on(w.run())
}

/// Output: one line per event, JSON (`--json`) or text with the time.
struct Out {
    json: bool,
    quiet: bool,
}

impl Out {
    /// `fields` gets `"event"` and `"at"`; `text` is the human line. A `problem` is printed even
    /// with `--quiet`.
    fn emit(&self, event: &str, mut fields: Value, problem: bool, text: impl FnOnce() -> String) {
        if self.quiet && !problem {
            return;
        }
        if self.json {
            let mut line = serde_json::Map::new();
            line.insert("event".into(), event.into());
            if let Value::Object(map) = &mut fields {
                line.append(map);
            }
            line.insert(
                "at".into(),
                chrono::Utc::now()
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                    .into(),
            );
            println!("{}", Value::Object(line));
        } else {
            println!("[{}] {}", chrono::Local::now().format("%H:%M:%S"), text());
        }
    }
}

/// What the event task tells the main loop.
#[derive(Debug)]
enum Msg {
    Connected {
        mode: &'static str,
    },
    Disconnected {
        reason: String,
        retry_in: Duration,
    },
    Revision(i64),
    Review(Value),
    /// The stream ended for good (token revoked or expired, project archived or unreachable).
    Fatal {
        reason: String,
        message: String,
    },
}

/// Why the watch stops.
enum Stop {
    /// Asked to: exit 0.
    Done(&'static str),
    /// Cannot go on: exit 2 with this reason (a word) and message.
    Fatal(String, String),
}

struct Watcher {
    out: Out,
    settings: Settings,
    project: ProjectId,
    api: ApiClient,
    team: TeamDir,
    opts: Options,
    /// The revision the team dir was last pulled to (the state's, or past it when a page could
    /// not be written whole: that one is retried when the server moves on).
    recorded: i64,
    /// The newest revision the server announced or a pull reached.
    head: i64,
    /// When the team dir last changed, while that change is not pushed.
    changed_at: Option<Instant>,
    fingerprint: Fingerprint,
    /// Open conflicts and refused files already reported (each is reported once).
    conflicts: BTreeSet<String>,
    refused: BTreeSet<(String, String)>,
    pull_failures: u32,
    push_failures: u32,
    /// After failures: not before this instant.
    pull_after: Option<Instant>,
    push_after: Option<Instant>,
}

impl Watcher {
    async fn run(&mut self) -> Result<u8, Fail> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())
            .map_err(|e| Fail::env(format!("cannot handle SIGTERM: {e}")))?;
        let mut int = signal(SignalKind::interrupt())
            .map_err(|e| Fail::env(format!("cannot handle SIGINT: {e}")))?;
        self.out.emit(
            "started",
            json!({
                "project": self.project.as_str(), "team_dir": self.settings.team_dir,
                "quiet_period_ms": self.opts.quiet_period.as_millis() as u64,
                "until_pid": self.opts.until_pid, "pid": std::process::id(),
            }),
            false,
            || {
                format!(
                    "watching {} for {} (local changes are pushed after {:?} of quiet; Ctrl-C stops)",
                    self.settings.team_dir.display(),
                    self.project,
                    self.opts.quiet_period
                )
            },
        );
        // Changes already there when the watch starts are pushed after the quiet period too.
        self.fingerprint = Fingerprint::of(&self.settings.team_dir);
        self.changed_at = Some(Instant::now());
        // The first pull: everything up to now (paged), before listening for more. When it
        // fails (offline, or a project nobody has pushed to yet), the loop below tries again.
        if let Err(stop) = self.pull(true).await {
            return Ok(self.finish(stop));
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(events(
            self.api.clone(),
            self.project.clone(),
            self.recorded,
            tx,
        ));
        let mut tick = tokio::time::interval(POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut pid_checked = Instant::now();
        let stop = loop {
            tokio::select! {
                _ = term.recv() => break Stop::Done("SIGTERM"),
                _ = int.recv() => break Stop::Done("SIGINT"),
                msg = rx.recv() => match msg {
                    Some(msg) => if let Some(stop) = self.message(msg) { break stop },
                    None => break Stop::Fatal("internal".into(), "the event stream reader stopped".into()),
                },
                _ = tick.tick() => {}
            }
            if pid_checked.elapsed() >= PID_CHECK {
                pid_checked = Instant::now();
                if self.until_pid_gone() {
                    break Stop::Done("until-pid");
                }
            }
            if let Err(stop) = self.step().await {
                break stop;
            }
        };
        task.abort();
        Ok(self.finish(stop))
    }

    fn until_pid_gone(&self) -> bool {
        self.opts.until_pid.is_some_and(|pid| !pid_alive(pid))
    }

    /// The exit code, after the last line.
    fn finish(&self, stop: Stop) -> u8 {
        let pending = self.changed_at.is_some() && self.has_local_changes();
        match stop {
            Stop::Done(why) => {
                self.out.emit(
                    "stopped",
                    json!({ "reason": why, "unpushed_changes": pending }),
                    false,
                    || {
                        let what = match why {
                            "until-pid" => format!(
                                "process {} exited",
                                self.opts.until_pid.unwrap_or_default()
                            ),
                            other => format!("{other} received"),
                        };
                        let left = if pending {
                            "; local changes are not pushed yet: run `memsync push`"
                        } else {
                            ""
                        };
                        format!("stopped: {what}{left}")
                    },
                );
                OK
            }
            Stop::Fatal(reason, message) => {
                self.out.emit(
                    "stopped",
                    json!({ "reason": reason, "error": message, "unpushed_changes": pending }),
                    true,
                    || format!("stopped: {message}"),
                );
                eprintln!("memsync: watch stopped: {message}");
                ENV
            }
        }
    }

    /// Whether the team dir holds changes a push would send (read without the state lock).
    fn has_local_changes(&self) -> bool {
        let Some(state) = StateStore::peek(&self.settings.state_dir) else {
            return !Fingerprint::of(&self.settings.team_dir).is_empty();
        };
        memsync::sync::local_status(&self.team, &state)
            .is_ok_and(|s| !(s.modified.is_empty() && s.added.is_empty() && s.deleted.is_empty()))
    }

    /// One message of the event task; Some to stop.
    fn message(&mut self, msg: Msg) -> Option<Stop> {
        match msg {
            Msg::Connected { mode } => {
                self.out
                    .emit("connected", json!({ "mode": mode }), false, || match mode {
                        "events" => format!("connected to {}'s event stream", self.api.server()),
                        _ => format!(
                            "{} has no event stream: watching with long-poll pulls",
                            self.api.server()
                        ),
                    })
            }
            Msg::Disconnected { reason, retry_in } => self.out.emit(
                "disconnected",
                json!({ "reason": reason, "retry_in_ms": retry_in.as_millis() as u64 }),
                false,
                || format!("disconnected ({reason}); reconnecting in {retry_in:.1?}"),
            ),
            Msg::Revision(n) => self.head = self.head.max(n),
            Msg::Review(data) => {
                let text = format!(
                    "review queue: proposal {} {}",
                    data["proposal"].as_str().unwrap_or("?"),
                    data["status"].as_str().unwrap_or("changed")
                );
                self.out
                    .emit("review", json!({ "review": data }), false, || text);
            }
            Msg::Fatal { reason, message } => return Some(Stop::Fatal(reason, message)),
        }
        None
    }

    /// After a tick or a message: look at the team dir, pull when the server is ahead, push once
    /// local changes are quiet.
    async fn step(&mut self) -> Result<(), Stop> {
        let now = Instant::now();
        let fp = Fingerprint::of(&self.settings.team_dir);
        if fp != self.fingerprint {
            self.fingerprint = fp;
            self.changed_at = Some(now);
            self.push_after = None;
        }
        let behind = self.pull_failures > 0 || self.head > self.recorded;
        if behind && self.pull_after.is_none_or(|t| now >= t) {
            self.pull(false).await?;
        }
        let quiet = self
            .changed_at
            .is_some_and(|t| now.duration_since(t) >= self.opts.quiet_period);
        if quiet && self.push_after.is_none_or(|t| now >= t) {
            self.push().await?;
        }
        Ok(())
    }

    /// The state store, locked for one operation; None (reported) when another memsync holds it
    /// for longer than [`STATE_LOCK_WAIT`].
    fn store(&self) -> Result<Option<StateStore>, Stop> {
        match StateStore::open(&self.settings.state_dir, STATE_LOCK_WAIT) {
            Ok(s) => Ok(Some(s)),
            Err(e @ StateError::Busy(_)) => {
                self.error(&e.to_string(), STATE_LOCK_WAIT);
                Ok(None)
            }
            Err(e) => Err(Stop::Fatal("state".into(), e.to_string())),
        }
    }

    fn engine<'a>(
        &'a self,
        store: &'a StateStore,
        progress: &'a dyn Fn(usize, usize),
    ) -> Engine<'a> {
        Engine {
            api: &self.api,
            project: &self.project,
            team: &self.team,
            store,
            max_file_bytes: memsync_core::memory::DEFAULT_MAX_FILE_BYTES,
            progress,
            repo: self.settings.repo.as_ref(),
            session_id: self.opts.session_id.clone(),
            page_size: memsync::sync::pull_page_size(),
        }
    }

    fn error(&self, message: &str, retry_in: Duration) {
        self.out.emit(
            "error",
            json!({ "message": message, "retry_in_ms": retry_in.as_millis() as u64 }),
            true,
            || format!("error: {message} (trying again in {retry_in:.1?})"),
        );
    }

    /// A pull; `initial` reports it even when nothing changed.
    async fn pull(&mut self, initial: bool) -> Result<(), Stop> {
        let Some(store) = self.store()? else {
            self.pull_after = Some(Instant::now() + STATE_LOCK_WAIT);
            return Ok(());
        };
        let result = {
            let mut state = store
                .load(self.api.server(), self.project.as_str())
                .map_err(|e| Stop::Fatal("state".into(), e.to_string()))?;
            let progress = |_: usize, _: usize| {};
            let engine = self.engine(&store, &progress);
            let r = engine.pull(&mut state).await;
            self.recorded = state.revision;
            r
        };
        drop(store);
        match result {
            Ok(r) => {
                self.pull_failures = 0;
                self.pull_after = None;
                // A page that could not be written whole is not asked for again until the
                // server moves on (the next pull retries it, as `memsync pull` would).
                self.head = self.head.max(r.reached).max(r.revision);
                self.recorded = self.recorded.max(r.reached.min(self.head));
                self.report_pull(&r, initial);
                if !r.merged.is_empty() || !r.kept.is_empty() {
                    // Local edits merged with the server's or kept: they go with the next push.
                    self.changed_at.get_or_insert_with(Instant::now);
                }
                Ok(())
            }
            Err(e) => {
                self.pull_failures += 1;
                let wait = backoff(self.pull_failures, DEFAULT_RETRY);
                self.pull_after = Some(Instant::now() + wait);
                self.sync_failure("pull", e, wait)
            }
        }
    }

    /// A push of every local change, as `memsync push` does it.
    async fn push(&mut self) -> Result<(), Stop> {
        let Some(store) = self.store()? else {
            self.push_after = Some(Instant::now() + STATE_LOCK_WAIT);
            return Ok(());
        };
        let result = {
            let mut state = store
                .load(self.api.server(), self.project.as_str())
                .map_err(|e| Stop::Fatal("state".into(), e.to_string()))?;
            let progress = |_: usize, _: usize| {};
            let engine = self.engine(&store, &progress);
            let r = engine.push(&mut state, false).await;
            self.recorded = state.revision;
            r
        };
        drop(store);
        match result {
            Ok(r) => {
                self.push_failures = 0;
                self.push_after = None;
                self.changed_at = None;
                if let Some(rev) = r.pushed_revision {
                    // Someone else's revisions in between are pulled next.
                    self.head = self.head.max(rev);
                }
                self.report_push(&r);
                Ok(())
            }
            Err(SyncError::Refused(message)) => {
                // The server refused the batch as a whole (e.g. a feedback contradiction): tried
                // again when the files change.
                self.changed_at = None;
                self.out
                    .emit("refused", json!({ "message": message }), true, || {
                        format!("push refused: {message}")
                    });
                Ok(())
            }
            Err(e) => {
                self.push_failures += 1;
                let wait = backoff(self.push_failures, DEFAULT_RETRY);
                self.push_after = Some(Instant::now() + wait);
                self.sync_failure("push", e, wait)
            }
        }
    }

    /// A failed pull or push: the end of the watch when the token or project is the problem,
    /// else reported and tried again after `wait`.
    fn sync_failure(&self, what: &str, e: SyncError, wait: Duration) -> Result<(), Stop> {
        if let SyncError::Api(api) = &e
            && let Some((reason, message)) = fatal(api)
        {
            return Err(Stop::Fatal(reason, message));
        }
        self.error(&format!("{what} failed: {e}"), wait);
        Ok(())
    }

    fn report_pull(&mut self, r: &Report, initial: bool) {
        let files = r.updated.len() + r.deleted.len() + r.merged.len();
        if files > 0 || initial {
            self.out.emit(
                "pulled",
                json!({
                    "revision": r.revision, "files": files, "pages": r.pages,
                    "updated": r.updated, "deleted": r.deleted, "merged": r.merged,
                }),
                false,
                || {
                    if files == 0 {
                        format!("up to date at revision {}", r.revision)
                    } else {
                        format!(
                            "pulled revision {}: {}",
                            r.revision,
                            names(&r.updated, &r.deleted, &r.merged)
                        )
                    }
                },
            );
        }
        self.report_common(r);
    }

    fn report_push(&mut self, r: &Report) {
        let files = r.pushed.len() + r.pushed_deletes.len();
        if files > 0 {
            self.out.emit(
                "pushed",
                json!({
                    "revision": r.pushed_revision, "files": files,
                    "pushed": r.pushed, "deleted": r.pushed_deletes, "merged": r.merged,
                }),
                false,
                || {
                    format!(
                        "pushed {}{}",
                        names(&r.pushed, &r.pushed_deletes, &[]),
                        r.pushed_revision
                            .map(|v| format!(" (revision {v})"))
                            .unwrap_or_default()
                    )
                },
            );
        }
        for p in &r.proposed {
            self.out.emit(
                "proposed",
                json!({ "path": p.path, "id": p.id, "op": p.op }),
                false,
                || {
                    format!(
                        "proposed {} for review (#{}): published once a reviewer approves",
                        p.path, p.id
                    )
                },
            );
        }
        for f in &r.refused {
            if self.refused.insert((f.path.clone(), f.rule.clone())) {
                self.out.emit(
                    "refused",
                    json!({ "path": f.path, "rule": f.rule, "message": f.message }),
                    true,
                    || format!("REFUSED {} [{}]: {}", f.path, f.rule, f.message),
                );
            }
        }
        if let Some(h) = &r.held_deletes {
            self.out.emit("held", json!({ "message": h }), true, || {
                format!("HELD: {h}")
            });
        }
        self.report_common(r);
    }

    /// Conflicts (each once while it stays open), local edits kept, skipped entries.
    fn report_common(&mut self, r: &Report) {
        let open: BTreeSet<String> = r.conflicts.iter().map(|c| c.path.clone()).collect();
        for c in &r.conflicts {
            if !self.conflicts.contains(&c.path) {
                self.out.emit(
                    "conflict",
                    json!({ "path": c.path, "reason": c.reason }),
                    true,
                    || {
                        format!(
                            "CONFLICT {} ({}): your file is kept; see `memsync diff {}`, then `memsync resolve {} --take local|server|merged`",
                            c.path, c.reason, c.path, c.path
                        )
                    },
                );
            }
        }
        self.conflicts = open;
        for k in &r.kept {
            self.out.emit(
                "kept",
                json!({ "path": k.path, "reason": k.reason }),
                false,
                || format!("kept local {}: {}", k.path, k.reason),
            );
        }
        for s in &r.skipped {
            self.out.emit(
                "skipped",
                json!({ "path": s.path, "reason": s.reason }),
                true,
                || format!("skipped {}: {}", s.path, s.reason),
            );
        }
        // A refusal no longer reported (the file changed or went) may be reported again later.
        self.refused
            .retain(|(p, rule)| r.refused.iter().any(|f| &f.path == p && &f.rule == rule));
    }
}

/// "a.md, b.md, deleted c.md, merged d.md".
fn names(written: &[String], deleted: &[String], merged: &[String]) -> String {
    let mut parts: Vec<String> = written.to_vec();
    parts.extend(deleted.iter().map(|p| format!("deleted {p}")));
    parts.extend(merged.iter().map(|p| format!("merged {p}")));
    const SHOWN: usize = 8;
    if parts.len() > SHOWN {
        let more = parts.len() - SHOWN;
        parts.truncate(SHOWN);
        parts.push(format!("and {more} more"));
    }
    parts.join(", ")
}

/// The failures no retry fixes: (reason, message). A project that is not found is not one of
/// them: a member's first push creates it, and the watch may be the one to push first.
fn fatal(e: &ApiError) -> Option<(String, String)> {
    match e {
        ApiError::Unauthenticated(_) => Some(("unauthenticated".into(), e.to_string())),
        ApiError::SignInExpired(_) => Some(("expired".into(), e.to_string())),
        ApiError::Forbidden(_) => Some(("forbidden".into(), e.to_string())),
        _ => None,
    }
}

/// The wait before attempt `failures + 1`: `base` doubled per failure, at most [`MAX_BACKOFF`],
/// spread over its upper half so clients that failed together do not come back together.
fn backoff(failures: u32, base: Duration) -> Duration {
    let full = base
        .saturating_mul(1 << failures.saturating_sub(1).min(10))
        .min(MAX_BACKOFF);
    full.mul_f64(0.5 + rand::random::<f64>() / 2.0)
}

/// The event task: reads `GET …/events` and passes on what matters, reconnecting (with
/// `Last-Event-ID`) after a dropped stream; on a server without the stream, long-polls instead.
async fn events(api: ApiClient, project: ProjectId, mut last: i64, tx: mpsc::UnboundedSender<Msg>) {
    let send = |m: Msg| tx.send(m).is_ok();
    let mut retry = DEFAULT_RETRY;
    let mut failures: u32 = 0;
    loop {
        let id = last.to_string();
        let mut stream = match api.events(&project, Some(&id), STREAM_IDLE).await {
            Ok(s) => s,
            Err(e) if e.error.is_unknown_route() => {
                long_poll(&api, &project, last, &tx).await;
                return;
            }
            Err(e) => {
                if let Some((reason, message)) = fatal(&e.error) {
                    send(Msg::Fatal { reason, message });
                    return;
                }
                failures += 1;
                let wait = e
                    .retry_after
                    .map_or_else(|| backoff(failures, retry), |w| w.min(MAX_BACKOFF * 4));
                if !send(Msg::Disconnected {
                    reason: e.error.to_string(),
                    retry_in: wait,
                }) {
                    return;
                }
                tokio::time::sleep(wait).await;
                continue;
            }
        };
        if !send(Msg::Connected { mode: "events" }) {
            return;
        }
        let mut shutdown = false;
        let reason = loop {
            match stream.next().await {
                Ok(Some(Item::Event { event, data, id })) => match event.as_str() {
                    "revision" => {
                        let rev = serde_json::from_str::<RevisionEvent>(&data)
                            .map(|e| e.revision)
                            .ok()
                            .or_else(|| id.and_then(|i| i.parse().ok()));
                        if let Some(rev) = rev {
                            failures = 0;
                            last = last.max(rev);
                            if !send(Msg::Revision(rev)) {
                                return;
                            }
                        }
                    }
                    "review" => {
                        let v = serde_json::from_str(&data).unwrap_or(Value::String(data));
                        if !send(Msg::Review(v)) {
                            return;
                        }
                    }
                    "end" => {
                        let end: EndEvent = serde_json::from_str(&data).unwrap_or(EndEvent {
                            reason: "unknown".into(),
                            message: data,
                        });
                        match end.reason.as_str() {
                            "revoked" | "expired" => {
                                let message = format!(
                                    "the server ended the event stream: {} ({}); run `memsync login` with a new token",
                                    end.message, end.reason
                                );
                                send(Msg::Fatal {
                                    reason: end.reason,
                                    message,
                                });
                                return;
                            }
                            "archived" => {
                                let message = format!(
                                    "the server ended the event stream: {} (project archived; pulls still work, pushes are refused until a team admin unarchives it)",
                                    end.message
                                );
                                send(Msg::Fatal {
                                    reason: end.reason,
                                    message,
                                });
                                return;
                            }
                            "shutdown" => {
                                shutdown = true;
                                break format!("the server is shutting down: {}", end.message);
                            }
                            other => break format!("the server ended the stream ({other})"),
                        }
                    }
                    _ => {}
                },
                Ok(Some(Item::Retry(ms))) => {
                    retry =
                        Duration::from_millis(ms).clamp(Duration::from_millis(100), MAX_BACKOFF);
                }
                Ok(Some(Item::Comment(_))) => failures = 0,
                Ok(None) => break "the server closed the stream".to_owned(),
                Err(e) => break e,
            }
        };
        if let Some(id) = stream.last_id().and_then(|i| i.parse::<i64>().ok()) {
            last = last.max(id);
        }
        drop(stream);
        // A restart is expected to take a moment: come back after the server's retry time. A
        // stream that broke otherwise backs off further each time it breaks without events.
        let wait = if shutdown {
            retry.mul_f64(0.5 + rand::random::<f64>() / 2.0)
        } else {
            failures += 1;
            backoff(failures, retry)
        };
        if !send(Msg::Disconnected {
            reason,
            retry_in: wait,
        }) {
            return;
        }
        tokio::time::sleep(wait).await;
    }
}

/// On a server without the event stream: `wait=` pulls of one file, to learn of each new
/// revision (the main loop pulls it). A server that does not wait either is asked every
/// [`MIN_POLL_CYCLE`].
async fn long_poll(
    api: &ApiClient,
    project: &ProjectId,
    mut last: i64,
    tx: &mpsc::UnboundedSender<Msg>,
) {
    let send = |m: Msg| tx.send(m).is_ok();
    if !send(Msg::Connected { mode: "long-poll" }) {
        return;
    }
    let mut failures = 0;
    loop {
        let started = Instant::now();
        let page = Page {
            limit: Some(1),
            wait: Some(LONG_POLL_WAIT),
        };
        let mut moved = false;
        match api.pull(project, last, None, page).await {
            Ok(Pulled::NotModified) => failures = 0,
            Ok(Pulled::Changes { body, .. }) => {
                failures = 0;
                let head = body.head.unwrap_or(body.revision).max(body.revision);
                if head > last {
                    last = head;
                    moved = true;
                    if !send(Msg::Revision(head)) {
                        return;
                    }
                }
            }
            Err(e) => {
                if let Some((reason, message)) = fatal(&e) {
                    send(Msg::Fatal { reason, message });
                    return;
                }
                failures += 1;
                let wait = backoff(failures, DEFAULT_RETRY);
                if !send(Msg::Disconnected {
                    reason: e.to_string(),
                    retry_in: wait,
                }) {
                    return;
                }
                tokio::time::sleep(wait).await;
                continue;
            }
        }
        let spent = started.elapsed();
        if !moved && spent < MIN_POLL_CYCLE {
            tokio::time::sleep(MIN_POLL_CYCLE - spent).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_to_a_cap_with_jitter() {
        for failures in 1..20 {
            let full = DEFAULT_RETRY
                .saturating_mul(1 << (failures - 1).min(10))
                .min(MAX_BACKOFF);
            let b = backoff(failures, DEFAULT_RETRY);
            assert!(b >= full / 2 && b <= full, "{failures}: {b:?}");
        }
        assert!(backoff(30, DEFAULT_RETRY) <= MAX_BACKOFF);
    }

    #[test]
    fn only_the_token_or_the_project_ends_a_watch() {
        assert!(fatal(&ApiError::Unauthenticated("revoked".into())).is_some());
        assert!(fatal(&ApiError::Forbidden("not a member".into())).is_some());
        assert!(fatal(&ApiError::NotFound("no project yet".into())).is_none());
        assert!(fatal(&ApiError::Timeout(Duration::from_secs(1))).is_none());
        assert!(
            fatal(&ApiError::Server {
                status: 503,
                code: "unavailable".into(),
                message: "busy".into()
            })
            .is_none()
        );
    }
}
