//! One project, several agents: `memsync install-hook --agent NAME|auto`, `memsync render`, and
//! the other agent layouts a sync keeps at the same server revision.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use memsync::agent::AgentId;
use memsync::agent::hooks_file::{self, HookSpec, WATCH_FLAG};
use memsync::agent::layouts::{self, Layouts, Rendered};
use memsync::agent::render;
use memsync::config::{self, ProcessEnv, Settings};
use memsync::sync::Report;
use serde::Serialize;
use serde_json::json;

use super::{Fail, OK, runtime, session_with};
use crate::{AgentChoice, Global};

/// The registry of the layouts of `settings`' repository (or directory).
pub fn registry(settings: &Settings) -> Option<PathBuf> {
    let root = config::state_root(&ProcessEnv)?;
    Some(layouts::path(
        &root,
        &config::claude_project_key(&settings.project_root),
    ))
}

/// Records that `settings.agent`'s layout is in use for its repository; quietly does nothing when
/// the registry cannot be written (the layout still syncs; only the others do not follow it).
pub fn register(settings: &Settings) {
    if let Some(path) = registry(settings)
        && let Err(e) = Layouts::register(&path, settings.agent)
    {
        eprintln!("memsync: {e}");
    }
}

/// The registry of `settings`' repository, and where it is (None: no state dir).
fn load_registry(settings: &Settings) -> Option<(PathBuf, Layouts)> {
    let path = registry(settings)?;
    let reg = Layouts::load(&path)
        .map_err(|e| eprintln!("memsync: {e}"))
        .ok()?;
    Some((path, reg))
}

/// `g` working on another agent's layout.
fn with_agent(g: &Global, agent: AgentId) -> Global {
    Global {
        agent: Some(AgentChoice::One(agent)),
        ..g.clone()
    }
}

/// One agent's layout: its agent, `g` working on it, and its settings.
type Layout = (AgentId, Global, Settings);

/// The other agents' layouts in `reg`, the registry of `primary`'s repository, each with a team
/// dir of its own (agents sharing the primary's team dir, through MEMSYNC_TEAM_DIR or
/// `.memsync.toml`, are the same layout).
fn others(g: &Global, cwd: &Path, primary: &Settings, reg: &Layouts) -> Vec<Layout> {
    let mut seen = vec![primary.team_dir.clone()];
    let mut out = Vec::new();
    for &agent in &reg.agents {
        if agent == primary.agent {
            continue;
        }
        let g2 = with_agent(g, agent);
        match super::settings_at(&g2, cwd) {
            Ok(s) if !seen.contains(&s.team_dir) => {
                seen.push(s.team_dir.clone());
                out.push((agent, g2, s));
            }
            Ok(_) => {}
            Err(f) => eprintln!("memsync: the {agent} layout: {}", f.message),
        }
    }
    out
}

/// The hooks' part: pulls the other agents' layouts of the repository of `cwd` (for `g`'s
/// agent) until `until`, and refreshes the rendered blocks.
pub fn pull_others_until(g: &Global, cwd: &Path, until: Instant) -> Vec<Followed> {
    match super::settings_at(g, cwd) {
        Ok(settings) => follow(g, cwd, &settings, Follow::Pull, None, Some(until)).others,
        Err(_) => Vec::new(),
    }
}

/// Another agent's layout as `status` shows it, read from disk only.
#[derive(Debug, Serialize)]
pub struct LayoutStatus {
    pub agent: AgentId,
    pub team_dir: PathBuf,
    /// The revision its last sync recorded (None: never synced).
    pub revision: Option<i64>,
    /// Local changes waiting for a push (modified, new, deleted files).
    pub ahead: usize,
    /// Open conflicts.
    pub conflicts: usize,
}

/// The other agents' layouts of `primary`'s repository, from their state on disk (no server,
/// no lock).
pub fn layout_statuses(g: &Global, cwd: &Path, primary: &Settings) -> Vec<LayoutStatus> {
    let Some((_, reg)) = load_registry(primary) else {
        return Vec::new();
    };
    others(g, cwd, primary, &reg)
        .into_iter()
        .map(|(agent, _, s)| {
            let state = memsync::state::StateStore::peek(&s.state_dir);
            let local = state.as_ref().and_then(|st| {
                let team = memsync::fsops::TeamDir::open(&s.team_dir).ok()?;
                memsync::sync::local_status(&team, st).ok()
            });
            LayoutStatus {
                agent,
                revision: state.as_ref().map(|st| st.revision),
                ahead: local
                    .as_ref()
                    .map_or(0, |l| l.modified.len() + l.added.len() + l.deleted.len()),
                conflicts: local.as_ref().map_or(0, |l| l.conflicts.len()),
                team_dir: s.team_dir,
            }
        })
        .collect()
}

/// What a sync did to one other agent's layout.
#[derive(Debug, Serialize)]
pub struct Followed {
    pub agent: AgentId,
    pub team_dir: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull: Option<Report>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push: Option<Report>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Followed {
    /// One line for people.
    pub fn line(&self) -> String {
        let dir = self.team_dir.display();
        if let Some(e) = &self.error {
            return format!("{} layout ({dir}): not synced: {e}", self.agent);
        }
        let mut parts = Vec::new();
        if let Some(r) = &self.push
            && let Some(rev) = r.pushed_revision
        {
            parts.push(format!(
                "pushed {} file(s), {} deletion(s) (revision {rev})",
                r.pushed.len(),
                r.pushed_deletes.len()
            ));
        }
        if let Some(r) = &self.pull {
            parts.push(
                if r.not_modified || (r.updated.is_empty() && r.deleted.is_empty()) {
                    format!("at revision {}", r.revision)
                } else {
                    format!(
                        "pulled to revision {}: {} updated, {} deleted",
                        r.revision,
                        r.updated.len(),
                        r.deleted.len()
                    )
                },
            );
        }
        let problems: usize = [&self.pull, &self.push]
            .into_iter()
            .flatten()
            .map(|r| r.conflicts.len() + r.refused.len() + r.kept.len())
            .sum();
        if problems > 0 {
            parts.push(format!(
                "{problems} local edit(s), conflict(s) or refusal(s): `memsync --agent {} status`",
                self.agent
            ));
        }
        format!("{} layout ({dir}): {}", self.agent, parts.join("; "))
    }

    pub fn has_problems(&self) -> bool {
        self.error.is_some()
            || [&self.pull, &self.push]
                .into_iter()
                .flatten()
                .any(Report::has_problems)
    }
}

/// What [`follow`] did.
#[derive(Debug, Default)]
pub struct Following {
    /// The other layouts, in the order they were synced.
    pub others: Vec<Followed>,
    /// The primary layout pulled again because another layout pushed after it.
    pub primary_pull: Option<Followed>,
    /// Rendered blocks that could not be refreshed, or are no longer rendered.
    pub notes: Vec<String>,
}

/// What the other layouts should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Pull each to the server's revision.
    Pull,
    /// Push each one's local changes too (then pull, so every layout holds every push).
    Push,
    /// Pull, then push, each.
    Both,
}

/// Brings the other agents' layouts of `primary`'s repository along with a sync of `primary`:
/// pulls each (pushes first, for `Push`/`Both`), then, when any of them pushed, pulls the
/// primary and the layouts synced before the last pusher again, so every layout reflects the
/// same revision. Stops starting new work past `deadline`. Then refreshes every rendered
/// instruction block.
pub fn follow(
    g: &Global,
    cwd: &Path,
    primary: &Settings,
    what: Follow,
    session_id: Option<&str>,
    deadline: Option<Instant>,
) -> Following {
    let Some((reg_path, reg)) = load_registry(primary) else {
        return Following::default();
    };
    let others = others(g, cwd, primary, &reg);
    let mut done: Vec<Followed> = Vec::new();
    let left = |d: Option<Instant>| d.map(|d| d.saturating_duration_since(Instant::now()));
    let out_of_time = || left(deadline).is_some_and(|l| l.is_zero());
    for (agent, g2, s) in &others {
        if out_of_time() {
            break;
        }
        done.push(sync_layout(
            g2,
            *agent,
            s.clone(),
            what,
            session_id,
            left(deadline),
        ));
    }
    let pushed = |f: &Followed| f.push.as_ref().is_some_and(|r| r.pushed_revision.is_some());
    let mut primary_pull = None;
    if let Some(last) = done.iter().rposition(pushed) {
        // Every layout synced before the last pusher (the primary first) misses its push.
        let primary_layout = (primary.agent, g.clone(), primary.clone());
        for (agent, g2, s) in std::iter::once(primary_layout).chain(others.into_iter().take(last)) {
            if out_of_time() {
                break;
            }
            let f = sync_layout(&g2, agent, s, Follow::Pull, None, left(deadline));
            match done.iter_mut().find(|d| d.agent == agent) {
                Some(d) => d.pull = f.pull.or(d.pull.take()),
                None => primary_pull = Some(f),
            }
        }
    }
    Following {
        others: done,
        primary_pull,
        notes: refresh_rendered(g, cwd, &reg_path, reg),
    }
}

fn sync_layout(
    g: &Global,
    agent: AgentId,
    settings: Settings,
    what: Follow,
    session_id: Option<&str>,
    limit: Option<Duration>,
) -> Followed {
    let mut f = Followed {
        agent,
        team_dir: settings.team_dir.clone(),
        pull: None,
        push: None,
        error: None,
    };
    let run = |f: &mut Followed| -> Result<(), String> {
        let wait = limit.unwrap_or(super::LOCK_WAIT);
        let s = session_with(g, settings, wait).map_err(|e| e.message)?;
        let mut state = s.load_state().map_err(|e| e.message)?;
        let api = match limit {
            Some(l) => s.api.clone().with_deadline(Instant::now() + l),
            None => s.api.clone(),
        };
        let prog = |_: usize, _: usize| {};
        let mut engine = s.engine(&api, &prog);
        engine.session_id = session_id.map(str::to_owned);
        let rt = runtime().map_err(|e| e.message)?;
        if matches!(what, Follow::Pull | Follow::Both) {
            f.pull = Some(rt.block_on(within(limit, async {
                engine.pull(&mut state).await.map_err(|e| e.to_string())
            }))?);
        }
        if matches!(what, Follow::Push | Follow::Both) {
            f.push = Some(rt.block_on(within(limit, async {
                engine
                    .push(&mut state, false)
                    .await
                    .map_err(|e| e.to_string())
            }))?);
            // And what the layouts synced before this one pushed.
            f.pull = Some(rt.block_on(within(limit, async {
                engine.pull(&mut state).await.map_err(|e| e.to_string())
            }))?);
        }
        Ok(())
    };
    if let Err(e) = run(&mut f) {
        f.error = Some(e);
    }
    f
}

/// `fut`, cut off after `limit` when there is one.
async fn within<T>(
    limit: Option<Duration>,
    fut: impl std::future::Future<Output = Result<T, String>>,
) -> Result<T, String> {
    match limit {
        Some(l) => tokio::time::timeout(l, fut)
            .await
            .map_err(|_| format!("no answer within {l:?}"))?,
        None => fut.await,
    }
}

/// `path` with `$HOME` written as `~`, as agents read it.
fn shown(path: &Path) -> String {
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from)
        && let Ok(rest) = path.strip_prefix(&home)
    {
        return format!("~/{}", rest.display());
    }
    path.display().to_string()
}

/// The block for the layout of `settings`.
fn block_of(settings: &Settings) -> Result<String, Fail> {
    let project = super::require_project(settings)?;
    let index = std::fs::read(settings.team_dir.join("MEMORY.md"))
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    Ok(render::block(
        project.as_str(),
        &shown(&settings.team_dir),
        index.as_deref(),
    ))
}

/// Writes `agent`'s block into `file`; (whether it changed, the new block's sha).
fn write_block(
    file: &Path,
    block: &str,
    last: Option<&Rendered>,
    force: bool,
    agent: AgentId,
) -> Result<(bool, Option<memsync_core::Sha256>), String> {
    let existing = match std::fs::read(file) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    let applied = render::apply(
        existing.as_deref(),
        block,
        last.and_then(|r| r.block_sha256),
        force,
        file,
        agent.as_str(),
    )
    .map_err(|e| e.to_string())?;
    if applied.changed {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        memsync::atomic::write(
            file,
            applied.text.as_bytes(),
            None,
            memsync::atomic::Durability::Durable,
        )
        .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    }
    Ok((applied.changed, render::block_sha(&applied.text)))
}

/// Rewrites every rendered block of the repository from its agent's team dir; one line per
/// block that could not be refreshed (or that the user took out: then it is forgotten).
fn refresh_rendered(g: &Global, cwd: &Path, path: &Path, mut reg: Layouts) -> Vec<String> {
    if reg.rendered.is_empty() {
        return Vec::new();
    }
    let mut notes = Vec::new();
    let mut changed = false;
    let files: Vec<(PathBuf, Rendered)> = reg.rendered.clone().into_iter().collect();
    for (file, entry) in files {
        // Gone, or the block taken out by hand: memsync stops rendering into it.
        let text = std::fs::read_to_string(&file).ok();
        let why = match &text {
            None => Some("is gone"),
            Some(t) if render::block_sha(t).is_none() && !t.contains(render::BEGIN) => {
                Some("no longer holds memsync's block")
            }
            Some(_) => None,
        };
        if let Some(why) = why {
            notes.push(format!(
                "{} {why}; memsync no longer renders the team index into it (`memsync render --agent {}` starts again)",
                file.display(),
                entry.agent
            ));
            reg.rendered.remove(&file);
            changed = true;
            continue;
        }
        let block = match super::settings_at(&with_agent(g, entry.agent), cwd)
            .and_then(|settings| block_of(&settings))
        {
            Ok(b) => b,
            Err(f) => {
                notes.push(format!("{}: not refreshed: {}", file.display(), f.message));
                continue;
            }
        };
        match write_block(&file, &block, Some(&entry), false, entry.agent) {
            Ok((_, sha)) => {
                if sha != entry.block_sha256 {
                    reg.rendered.insert(
                        file.clone(),
                        Rendered {
                            agent: entry.agent,
                            block_sha256: sha,
                        },
                    );
                    changed = true;
                }
            }
            Err(e) => notes.push(e),
        }
    }
    if changed && let Err(e) = reg.save(path) {
        notes.push(e.to_string());
    }
    notes
}

/// What `render` did.
struct RenderDone {
    file: PathBuf,
    changed: bool,
    /// `--remove`: whether the file held memsync's block.
    removed: bool,
    /// The layout's team dir (not for `--remove`).
    team_dir: Option<PathBuf>,
    tracked_by_git: bool,
    /// The revision the layout was pulled to first, or why it could not be.
    pulled: Result<i64, String>,
}

/// `memsync render --agent NAME [--file F] [--force] [--remove]`.
pub fn render_cmd(
    g: &Global,
    cwd: &Path,
    file: Option<PathBuf>,
    force: bool,
    remove: bool,
) -> Result<u8, Fail> {
    let agent = match g.agent {
        Some(AgentChoice::One(a)) => a,
        Some(AgentChoice::Auto) => {
            return Err(Fail::env(
                "`render` writes one agent's file: name it with --agent codex|gemini|copilot|claude",
            ));
        }
        None => {
            return Err(Fail::env(
                "name the agent whose instruction file gets the team index: --agent codex|gemini|copilot|claude",
            ));
        }
    };
    let d = render(g, cwd, agent, file, force, remove)?;
    let target = &d.file;
    if remove {
        if g.json {
            println!(
                "{}",
                json!({"file": target, "removed": d.removed, "agent": agent})
            );
        } else if !g.quiet {
            println!(
                "{}",
                if d.removed {
                    format!("took memsync's block out of {}", target.display())
                } else {
                    format!("{} holds no memsync block", target.display())
                }
            );
        }
        return Ok(OK);
    }
    let team_dir = d.team_dir.clone().unwrap_or_default();
    if g.json {
        println!(
            "{}",
            json!({"file": target, "changed": d.changed, "agent": agent, "team_dir": team_dir,
                   "tracked_by_git": d.tracked_by_git, "pulled": d.pulled.is_ok()})
        );
    } else if !g.quiet {
        let pull_note = match &d.pulled {
            Ok(revision) => format!("revision {revision}"),
            Err(e) => format!("not pulled now ({e}); the last synced index"),
        };
        println!(
            "{} the team index ({pull_note}) in {} for {}; memsync's block names {} and every `memsync pull` keeps it current",
            if d.changed { "wrote" } else { "already had" },
            target.display(),
            agent.adapter().name(),
            shown(&team_dir)
        );
        if d.tracked_by_git {
            println!(
                "note: {} is tracked by git; the block holds this machine's path and changes as the team memory does. Keep it out of commits, or render into a file git ignores with --file",
                target.display()
            );
        }
    }
    Ok(if d.pulled.is_ok() {
        OK
    } else {
        super::PROBLEMS
    })
}

/// Writes (or with `remove` takes out) `agent`'s block in `file`, by default its instruction
/// file at the repository root, and records it in the registry.
fn render(
    g: &Global,
    cwd: &Path,
    agent: AgentId,
    file: Option<PathBuf>,
    force: bool,
    remove: bool,
) -> Result<RenderDone, Fail> {
    let g2 = with_agent(g, agent);
    let settings = super::settings_at(&g2, cwd)?;
    let repo = settings.repo.clone().ok_or_else(|| {
        Fail::env("not inside a git repository: run `memsync render` in the project")
    })?;
    let target = match file {
        Some(f) if f.is_absolute() => f,
        Some(f) => cwd.join(f),
        None => repo.root.join(agent.adapter().instruction_file()),
    };
    let reg_path = registry(&settings)
        .ok_or_else(|| Fail::env("HOME is not set, so memsync has no state directory"))?;
    let mut reg = Layouts::load(&reg_path).map_err(Fail::env)?;
    if remove {
        let text = match std::fs::read_to_string(&target) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Fail::env(format!("cannot read {}: {e}", target.display()))),
        };
        let removed = match text {
            Some(t) => match render::remove(&t, &target).map_err(Fail::env)? {
                Some(rest) => {
                    memsync::atomic::write(
                        &target,
                        rest.as_bytes(),
                        None,
                        memsync::atomic::Durability::Durable,
                    )
                    .map_err(|e| Fail::env(format!("cannot write {}: {e}", target.display())))?;
                    true
                }
                None => false,
            },
            None => false,
        };
        reg.rendered.remove(&target);
        reg.save(&reg_path).map_err(Fail::env)?;
        return Ok(RenderDone {
            file: target,
            changed: removed,
            removed,
            team_dir: None,
            tracked_by_git: false,
            pulled: Ok(0),
        });
    }
    // The layout syncs from now on with the others: pull it first, so the index is current.
    let pulled = session_with(&g2, settings.clone(), super::LOCK_WAIT)
        .and_then(|s| {
            let mut state = s.load_state()?;
            let prog = |_: usize, _: usize| {};
            let engine = s.engine(&s.api, &prog);
            Ok(runtime()?.block_on(engine.pull(&mut state))?)
        })
        .map(|r| r.revision)
        .map_err(|f| f.message);
    let block = block_of(&settings)?;
    register(&settings);
    let last = reg.rendered.get(&target).cloned();
    let (changed, sha) =
        write_block(&target, &block, last.as_ref(), force, agent).map_err(Fail::problem)?;
    // Read again: the pull above may have recorded this layout meanwhile.
    reg = Layouts::load(&reg_path).map_err(Fail::env)?;
    reg.rendered.insert(
        target.clone(),
        Rendered {
            agent,
            block_sha256: sha,
        },
    );
    reg.save(&reg_path).map_err(Fail::env)?;
    Ok(RenderDone {
        tracked_by_git: git_tracks(&repo.root, &target),
        file: target,
        changed,
        removed: false,
        team_dir: Some(settings.team_dir),
        pulled,
    })
}

/// Whether git tracks `file` in the repository at `root` (false when git cannot say).
fn git_tracks(root: &Path, file: &Path) -> bool {
    std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-files", "--error-unmatch", "--"])
        .arg(file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What `install-hook` did for one agent.
#[derive(Debug, Serialize)]
struct Installed {
    agent: AgentId,
    /// The hooks file (hook agents) or instruction file (render agents).
    file: PathBuf,
    changed: bool,
    added: Vec<&'static str>,
    updated: Vec<&'static str>,
    upgraded: Vec<&'static str>,
    removed: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    watch: Option<bool>,
    /// What the user must still do for the agent to run the hooks.
    steps: Vec<String>,
    /// `render`: the agent has no hook memsync uses; its instruction file carries the index.
    rendered: bool,
    /// Codex trusts the hooks now (`--trust`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    trusted: bool,
}

/// `--trust`: Codex records its own hashes of memsync's hooks as trusted; the steps still left
/// to the user (none, once Codex lists every memsync hook as trusted).
fn trust_codex(
    cwd: &Path,
    repo: Option<&config::Repo>,
    spec: &HookSpec,
    file: &Path,
    user: bool,
) -> Result<Vec<String>, Fail> {
    use memsync::agent::codex;
    let program = codex::find_codex(&ProcessEnv).ok_or_else(|| {
        Fail::env("--trust asks Codex itself, but `codex` is not on PATH (or set MEMSYNC_CODEX to it); the hooks are installed, not trusted")
    })?;
    let commands: Vec<String> = hooks_file::installed_hooks(file, spec)
        .map_err(Fail::env)?
        .into_iter()
        .map(|h| h.command)
        .collect();
    let at = repo.map_or_else(|| cwd.to_owned(), |r| r.root.clone());
    let listed = codex::trust_hooks(&program, &at, &commands, codex::APP_SERVER_WAIT)
        .map_err(|e| Fail::env(format!("{e}; the hooks are installed, not trusted")))?;
    if listed.is_empty() {
        return Err(Fail::env(if user {
            format!(
                "Codex does not list memsync's hooks in {}: is CODEX_HOME the one Codex uses? The hooks are installed, not trusted",
                file.display()
            )
        } else {
            format!(
                "Codex does not read {} because it does not trust the project {}: start `codex` there and say you trust the folder (or run `codex exec --trust` there once), then run this again. The hooks are installed, not trusted",
                file.display(),
                at.display()
            )
        }));
    }
    let untrusted: Vec<String> = listed
        .iter()
        .filter(|l| l.trust_status != "trusted" && l.trust_status != "managed")
        .map(|l| format!("{} ({})", l.command, l.trust_status))
        .collect();
    if !untrusted.is_empty() {
        return Err(Fail::env(format!(
            "Codex still does not trust {}; trust them in Codex (/hooks)",
            untrusted.join(", ")
        )));
    }
    Ok(Vec::new())
}

/// What `install-hook` was asked to do.
#[derive(Debug, Clone, Copy)]
pub struct InstallOptions {
    /// The user's hooks file instead of the repository's.
    pub user: bool,
    /// Some(true): `--watch` on Claude Code's SessionStart hook; Some(false): off.
    pub watch: Option<bool>,
    pub remove: bool,
    /// Codex CLI: ask Codex to trust memsync's hooks.
    pub trust: bool,
}

/// `memsync install-hook [--agent NAME|auto] [--user] [--watch|--no-watch] [--remove]
/// [--trust]`.
pub fn install_hook(g: &Global, cwd: &Path, opts: InstallOptions) -> Result<u8, Fail> {
    let InstallOptions {
        user,
        watch,
        remove,
        trust,
    } = opts;
    let repo = config::find_repo(cwd);
    let agents: Vec<AgentId> = match g.agent {
        None => vec![AgentId::Claude],
        Some(AgentChoice::One(a)) => vec![a],
        Some(AgentChoice::Auto) => {
            let found = if user {
                memsync::agent::detect_for_user(&ProcessEnv)
            } else {
                match &repo {
                    Some(r) => memsync::agent::detect_in_repo(&r.root),
                    None => Vec::new(),
                }
            };
            if found.is_empty() {
                return Err(Fail::env(match (&repo, user) {
                    (_, true) => "no agent is set up for this user (none of ~/.claude, $CODEX_HOME or ~/.codex, ~/.gemini, ~/.copilot exists); name one with --agent".to_owned(),
                    (Some(r), false) => format!(
                        "no agent is set up in {} (looked for .claude/, CLAUDE.md, .codex/, AGENTS.md, .gemini/, GEMINI.md, .github/copilot-instructions.md); name one with --agent",
                        r.root.display()
                    ),
                    (None, false) => "not inside a git repository; run it in the project, or use --user".to_owned(),
                }));
            }
            found
        }
    };
    if trust && !agents.contains(&AgentId::Codex) {
        return Err(Fail::env(
            "--trust is for Codex CLI's hooks (--agent codex, or --agent auto in a repository set up for Codex)",
        ));
    }
    if watch.is_some() && agents.iter().any(|a| *a != AgentId::Claude) {
        return Err(Fail::env(
            "--watch and --no-watch are for Claude Code's hooks only; run them without --agent",
        ));
    }
    // The hooks run this very binary by its absolute path: the agent's PATH may lack it.
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| Fail::env(format!("cannot tell where this memsync binary is: {e}")))?;
    let mut done = Vec::new();
    for agent in agents {
        let adapter = agent.adapter();
        let Some(spec) = adapter.hooks() else {
            // No hook memsync uses: the instruction file carries the index.
            if user {
                if g.agent == Some(AgentChoice::Auto) {
                    continue;
                }
                return Err(Fail::env(format!(
                    "{} has no session hook memsync uses; run `memsync render --agent {agent}` in each project instead",
                    adapter.name()
                )));
            }
            done.push(render_for_install(g, cwd, agent, remove)?);
            continue;
        };
        let file = if user {
            adapter
                .user_hooks_file(&ProcessEnv)
                .ok_or_else(|| Fail::env("HOME is not set"))?
        } else {
            let repo = repo.as_ref().ok_or_else(|| {
                Fail::env(format!(
                    "not inside a git repository; run it in the project, or use --user for {}'s user-wide hooks",
                    adapter.name()
                ))
            })?;
            adapter
                .project_hooks_file(&repo.root)
                .ok_or_else(|| Fail::env("no project hooks file"))?
        };
        let mut d = install_one(g, cwd, agent, spec, &file, &exe, user, watch, remove)?;
        if trust && agent == AgentId::Codex {
            d.steps = trust_codex(cwd, repo.as_ref(), spec, &file, user)?;
            d.trusted = true;
        }
        done.push(d);
    }
    if g.json {
        let mut out = json!({ "program": exe, "agents": done });
        // One agent: its fields at the top too (`settings` is its hooks file), as before
        // install-hook served several agents.
        if let [one] = done.as_slice() {
            out["settings"] = json!(one.file);
            for k in [
                "agent", "changed", "added", "updated", "upgraded", "removed", "steps",
            ] {
                out[k] = json!(one)[k].clone();
            }
            out["watch"] = json!(one.watch.unwrap_or(false));
        }
        println!("{out}");
    } else if !g.quiet {
        for d in &done {
            print_installed(d, &exe, remove);
        }
    }
    Ok(OK)
}

#[allow(clippy::too_many_arguments)]
fn install_one(
    g: &Global,
    cwd: &Path,
    agent: AgentId,
    spec: &HookSpec,
    file: &Path,
    exe: &Path,
    user: bool,
    watch: Option<bool>,
    remove: bool,
) -> Result<Installed, Fail> {
    let adapter = agent.adapter();
    if remove {
        let removed = hooks_file::remove_hooks(file, spec).map_err(Fail::env)?;
        return Ok(Installed {
            agent,
            file: file.to_owned(),
            changed: !removed.is_empty(),
            added: Vec::new(),
            updated: Vec::new(),
            upgraded: Vec::new(),
            removed,
            watch: None,
            steps: Vec::new(),
            rendered: false,
            trusted: false,
        });
    }
    let out = hooks_file::install_hooks(file, exe, spec).map_err(Fail::env)?;
    let watch_changed = match watch {
        Some(on) => hooks_file::set_watch(file, on).map_err(Fail::env)?,
        None => false,
    };
    let watching = (agent == AgentId::Claude).then(|| {
        hooks_file::installed_hooks(file, spec)
            .unwrap_or_default()
            .iter()
            .any(|h| {
                h.event == "SessionStart" && h.command.split_whitespace().any(|w| w == WATCH_FLAG)
            })
    });
    // From now on a sync of any layout of this repository brings this one along.
    if let Ok(s) = super::settings_at(&with_agent(g, agent), cwd) {
        register(&s);
    }
    // The parent of memsync's memory dirs for the agent, which its sandbox may be told to
    // let the agent write (a writable root must exist when the agent starts).
    if agent != AgentId::Claude
        && let Some(home) = adapter.home(&ProcessEnv)
    {
        let _ = std::fs::create_dir_all(home.join("memsync").join("projects"));
    }
    let changed = out.changed || watch_changed;
    // Trust is asked again only when the hooks' definition changed.
    let steps = if changed {
        adapter.activation_steps(file, !user)
    } else {
        Vec::new()
    };
    Ok(Installed {
        agent,
        file: out.path,
        changed,
        added: out.added,
        updated: out.updated,
        upgraded: out.upgraded,
        removed: Vec::new(),
        watch: watching,
        steps,
        rendered: false,
        trusted: false,
    })
}

fn render_for_install(
    g: &Global,
    cwd: &Path,
    agent: AgentId,
    remove: bool,
) -> Result<Installed, Fail> {
    let d = render(g, cwd, agent, None, false, remove)?;
    Ok(Installed {
        agent,
        file: d.file,
        changed: d.changed,
        added: Vec::new(),
        updated: Vec::new(),
        upgraded: Vec::new(),
        // memsync's block, taken out.
        removed: if d.removed { vec!["block"] } else { Vec::new() },
        watch: None,
        steps: Vec::new(),
        rendered: true,
        trusted: false,
    })
}

fn print_installed(d: &Installed, exe: &Path, removing: bool) {
    let name = d.agent.adapter().name();
    let file = d.file.display();
    if d.rendered && removing {
        if d.removed.is_empty() {
            println!("{name}: {file} holds no memsync block");
        } else {
            println!("{name}: took memsync's block out of {file}");
        }
        return;
    }
    if d.rendered {
        println!(
            "{name}: no session hook memsync uses; the team index is in memsync's block of {file}, kept current by every `memsync pull`"
        );
        return;
    }
    if !d.removed.is_empty() {
        println!(
            "{name}: took memsync's {} hook(s) out of {file}",
            d.removed.join(" and ")
        );
        return;
    }
    if d.changed && d.added.is_empty() && d.updated.is_empty() && d.upgraded.is_empty() {
        match d.watch {
            Some(true) => println!(
                "{name}: memsync's SessionStart hook in {file} now starts `memsync watch` for each session (the SessionEnd hook stops it)"
            ),
            _ => println!(
                "{name}: memsync's SessionStart hook in {file} no longer starts `memsync watch`"
            ),
        }
    }
    if !d.added.is_empty() {
        println!(
            "{name}: added memsync's {} hook(s) to {file}",
            d.added.join(" and ")
        );
    }
    if !d.updated.is_empty() {
        println!(
            "{name}: memsync's {} hook(s) in {file} now run {}",
            d.updated.join(" and "),
            exe.display()
        );
    }
    if !d.upgraded.is_empty() {
        println!(
            "{name}: memsync's {} hook(s) in {file} were upgraded to today's form (`{} hook …{}`)",
            d.upgraded.join(" and "),
            exe.display(),
            match d.agent {
                AgentId::Claude => String::new(),
                a => format!(" --agent {a}"),
            }
        );
    }
    if !d.changed {
        println!(
            "{name}: memsync's hooks are already in {file}, running {}",
            exe.display()
        );
    }
    if d.trusted {
        println!("{name}: Codex trusts memsync's hooks (it recorded its own hashes of them)");
    }
    for s in &d.steps {
        println!("  next: {s}");
    }
}
