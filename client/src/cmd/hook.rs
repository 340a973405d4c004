//! The agents' `SessionStart` hook (`memsync hook session-start`) and `SessionEnd` hook
//! (`memsync hook session-end`), for the agent named by `--agent` (Claude Code by default).

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use memsync::api::{ApiClient, ProposalQuery};
use memsync::fsops::TeamDir;
use memsync::stale;
use memsync::state::State;
use memsync::sync::Report;
use memsync_core::wire::{ProposalStatus, ProposalSummary, PushOp};
use memsync_core::{MemoryPath, ProjectId, Sha256};
use serde_json::json;

use super::{runtime, session};
use crate::Global;

/// At most this many lines about stale memories, and about proposals, in a session's context.
const NOTICE_LINES: usize = 10;

/// How long a hook waits for its input on stdin. Claude Code writes it at once and closes the
/// pipe; a terminal, or a pipe nobody closes, must not hold the session.
const INPUT_WAIT: Duration = Duration::from_secs(1);

/// The hook's JSON on stdin (anything else reads as no input) and the directory it is about:
/// its `cwd`, else ours.
fn hook_input(g: &Global) -> (memsync::agent::HookInput, PathBuf) {
    let input = if std::io::stdin().is_terminal() {
        String::new()
    } else {
        let (tx, rx) = std::sync::mpsc::channel();
        // A reader that never gets its end of file is left behind; the process exits anyway.
        std::thread::spawn(move || {
            let mut input = String::new();
            let _ = std::io::stdin()
                .take(1024 * 1024)
                .read_to_string(&mut input);
            let _ = tx.send(input);
        });
        rx.recv_timeout(INPUT_WAIT).unwrap_or_default()
    };
    let parsed = g.agent_id().adapter().hook_input(&input);
    let cwd = parsed
        .cwd
        .clone()
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    (parsed, cwd)
}

/// The SessionEnd hook: pushes the team dir of the session's repository, with the session's id
/// in the provenance, within `deadline`. Never fails the session and prints nothing on stdout
/// (with `--json`, the push's report); what went wrong goes to stderr, one line each, and the
/// changes stay in the team dir for the next push.
pub fn session_end(g: &Global, deadline: Duration) {
    let (input, cwd) = hook_input(g);
    let session_id = super::session_id(input.session_id.clone());
    // The session's watcher first (it finishes a push under way), so the push below is the
    // session's last word.
    let watch = stop_watcher(g, &cwd, session_id.as_deref());
    let started = Instant::now();
    let session_id_for_push = session_id.clone();
    match push_at_end(g, &cwd, deadline, started, session_id) {
        Ok(report) => {
            // The other agents' layouts of the repository get what was just pushed, in what is
            // left of the deadline.
            let followed = super::agents::pull_others_until(g, &cwd, started + deadline);
            if g.json {
                println!(
                    "{}",
                    json!({ "pushed": true, "push": report, "proposed": report.proposed, "watch_stopped": watch, "layouts": followed })
                );
            }
            for line in end_problems(&report) {
                eprintln!("memsync: {line}");
            }
            for f in followed.iter().filter(|f| f.error.is_some()) {
                eprintln!("memsync: {}", f.line());
            }
        }
        Err(EndError::Late(message)) => {
            // The agent gives the hook little time (Codex: 3 s); the push is finished in the
            // background instead of waiting for the next session's end.
            let handed = hand_off_push(g, &cwd, session_id_for_push.as_deref());
            if g.json {
                println!(
                    "{}",
                    json!({ "pushed": false, "error": message, "watch_stopped": watch,
                            "background_push": handed.as_ref().ok() })
                );
            }
            match handed {
                Ok(pid) => eprintln!(
                    "memsync: team memory was not pushed within the session's end ({message}); a background `memsync push` (pid {pid}, log push.log in the project's state dir) sends it now"
                ),
                Err(e) => eprintln!(
                    "memsync: team memory was not pushed at the end of this session: {message}; nor could a background push start ({e}); the changes stay in the team dir and go with the next `memsync push`"
                ),
            }
        }
        Err(EndError::Failed(message)) => {
            if g.json {
                println!(
                    "{}",
                    json!({ "pushed": false, "error": message, "watch_stopped": watch })
                );
            }
            eprintln!(
                "memsync: team memory was not pushed at the end of this session: {message}; the changes stay in the team dir and go with the next `memsync push`"
            );
        }
    }
}

/// Starts `memsync push` for the session, detached; its pid.
fn hand_off_push(g: &Global, cwd: &Path, session_id: Option<&str>) -> Result<u32, String> {
    let settings = super::settings_at(g, cwd).map_err(|f| f.message)?;
    let mut args: Vec<String> = vec!["push".into(), "--quiet".into()];
    if let Some(id) = session_id {
        args.extend(["--session-id".into(), id.to_owned()]);
    }
    detached(g, cwd, &settings.state_dir, "push.log", &args)
}

/// How long the SessionEnd hook lets the session's watcher finish before it kills it.
const WATCH_STOP_GRACE: Duration = Duration::from_secs(3);

/// Stops the `memsync watch` this session's start hook started for the team dir of `cwd`: the
/// one whose pidfile names this session, or (no session id) this agent process. Its pid when
/// one was stopped.
fn stop_watcher(g: &Global, cwd: &Path, session_id: Option<&str>) -> Option<u32> {
    let settings = super::settings_at(g, cwd).ok()?;
    let agent = memsync::watch::agent_pid();
    let ours = |info: &memsync::watch::WatchInfo| match (&info.session_id, session_id) {
        (Some(theirs), Some(mine)) => theirs == mine,
        _ => info.until_pid == Some(agent),
    };
    match memsync::watch::stop(&settings.state_dir, ours, WATCH_STOP_GRACE) {
        memsync::watch::Stopped::Terminated(info) => Some(info.pid),
        memsync::watch::Stopped::Killed(info) => {
            eprintln!(
                "memsync: the session's `memsync watch` (pid {}) did not stop within {WATCH_STOP_GRACE:?}; killed it (nothing is lost: what it had not recorded is pushed now)",
                info.pid
            );
            Some(info.pid)
        }
        memsync::watch::Stopped::NotRunning | memsync::watch::Stopped::Other(_) => None,
    }
}

/// Starts `memsync watch` for this session, detached: in its own process group, its output
/// appended to `watch.log` in the project's state dir, bound to the agent process
/// (`--until-pid`). A line for the session's context.
fn start_watcher(g: &Global, cwd: &Path, session_id: Option<&str>) -> String {
    match spawn_watcher(g, cwd, session_id) {
        Ok((pid, team_dir, fresh)) => format!(
            "memsync watch (pid {pid}{}) keeps {} live during this session: teammates' changes arrive as they push them, and changes saved there are pushed after 2 s without further edits.",
            if fresh { "" } else { ", started earlier" },
            team_dir.display()
        ),
        Err(e) => format!(
            "memsync could not start `memsync watch` for this session ({e}); team memory is synced at session start and end only."
        ),
    }
}

/// (pid, team dir, whether it was started now).
fn spawn_watcher(
    g: &Global,
    cwd: &Path,
    session_id: Option<&str>,
) -> Result<(u32, PathBuf, bool), String> {
    let settings = super::settings_at(g, cwd).map_err(|f| f.message)?;
    super::require_project(&settings).map_err(|f| f.message)?;
    let dir = &settings.state_dir;
    if let Some(info) = memsync::watch::running(dir) {
        return Ok((info.pid, settings.team_dir, false));
    }
    let mut args: Vec<String> = vec![
        "watch".into(),
        "--until-pid".into(),
        memsync::watch::agent_pid().to_string(),
    ];
    if let Some(id) = session_id {
        args.extend(["--session-id".into(), id.to_owned()]);
    }
    let pid = detached(g, cwd, dir, memsync::watch::LOG_FILE, &args)?;
    Ok((pid, settings.team_dir, true))
}

/// Starts `memsync <args>` (with this command's global settings) detached from the agent: in its
/// own process group, stdin from `/dev/null`, output appended to `log` in `state_dir` (moved to
/// `<log>.1` past 1 MiB). Not waited for. Its pid.
fn detached(
    g: &Global,
    cwd: &Path,
    state_dir: &Path,
    log: &str,
    args: &[String],
) -> Result<u32, String> {
    use std::os::unix::process::CommandExt;
    let dir = state_dir;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let log_path = dir.join(log);
    if std::fs::metadata(&log_path).is_ok_and(|m| m.len() > memsync::watch::LOG_ROTATE_BYTES) {
        let _ = std::fs::rename(&log_path, dir.join(format!("{log}.1")));
    }
    let out = std::fs::File::options()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot tell where memsync is: {e}"))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(args)
        .arg("--timeout")
        .arg(humantime::format_duration(g.timeout).to_string());
    if let Some(crate::AgentChoice::One(a)) = g.agent {
        cmd.arg("--agent").arg(a.as_str());
    }
    for (flag, value) in [("--server", &g.server), ("--project", &g.project)] {
        if let Some(v) = value {
            cmd.arg(flag).arg(v);
        }
    }
    for (flag, value) in [
        ("--private-dir", &g.private_dir),
        ("--team-dir", &g.team_dir),
    ] {
        if let Some(v) = value {
            cmd.arg(flag).arg(v);
        }
    }
    // A token given on the command line goes by the environment: never in a process list.
    if let Some(token) = &g.token {
        cmd.env("MEMSYNC_TOKEN", token);
    }
    cmd.current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        // Its own process group: a signal to the agent's group (Ctrl-C) does not stop it.
        .process_group(0);
    // Not waited for: it outlives this hook by design, and init reaps it.
    #[allow(clippy::zombie_processes)]
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start memsync {}: {e}", args[0]))?;
    Ok(child.id())
}

/// Why a session-end push did not happen.
enum EndError {
    /// It ran out of time (the deadline, or a server that did not answer): worth finishing in
    /// the background.
    Late(String),
    Failed(String),
}

fn push_at_end(
    g: &Global,
    cwd: &Path,
    deadline: Duration,
    started: Instant,
    session_id: Option<String>,
) -> Result<Report, EndError> {
    use memsync::api::ApiError;
    use memsync::sync::SyncError;
    let failed = |f: super::Fail| EndError::Failed(f.message);
    let lock_wait = deadline.saturating_sub(started.elapsed());
    let s = session(g, cwd, lock_wait).map_err(failed)?;
    let mut state = s.load_state().map_err(failed)?;
    let api = s.api.clone().with_deadline(started + deadline);
    let prog = |_: usize, _: usize| {};
    let mut engine = s.engine(&api, &prog);
    engine.session_id = session_id;
    let rt = runtime().map_err(failed)?;
    let left = deadline.saturating_sub(started.elapsed());
    match rt.block_on(async { tokio::time::timeout(left, engine.push(&mut state, false)).await }) {
        Ok(Ok(report)) => Ok(report),
        Ok(Err(e @ SyncError::Api(ApiError::Timeout(_) | ApiError::Uncertain { .. }))) => {
            Err(EndError::Late(e.to_string()))
        }
        Ok(Err(e)) => Err(EndError::Failed(e.to_string())),
        Err(_) => Err(EndError::Late(format!(
            "the server did not answer within {deadline:?}"
        ))),
    }
}

/// What a session-end push could not do, one line each.
fn end_problems(r: &Report) -> Vec<String> {
    let mut lines = Vec::new();
    for c in &r.conflicts {
        lines.push(format!(
            "{} conflicts with the server's version ({}); see `memsync status`",
            c.path, c.reason
        ));
    }
    for f in &r.refused {
        lines.push(format!("{} not pushed [{}]: {}", f.path, f.rule, f.message));
    }
    for s in &r.skipped {
        lines.push(format!("{} skipped: {}", s.path, s.reason));
    }
    if let Some(h) = &r.held_deletes {
        lines.push(h.clone());
    }
    lines
}

/// The SessionStart hook never fails the session: every error becomes one line of context.
pub fn session_start(g: &Global, deadline: Duration, watch: bool) {
    let started = Instant::now();
    let (input, cwd) = hook_input(g);
    let mut context = match hook_context(g, &cwd, deadline, started) {
        Ok(c) => c,
        Err(message) => {
            format!("memsync: team memory is not available in this session: {message}\n")
        }
    };
    if watch {
        let session_id = super::session_id(input.session_id.clone());
        context.push_str(&start_watcher(g, &cwd, session_id.as_deref()));
        context.push('\n');
    }
    // The other agents' layouts of the repository follow, in what is left of the deadline.
    super::agents::pull_others_until(g, &cwd, started + deadline);
    println!("{}", g.agent_id().adapter().session_start_output(&context));
}

fn hook_context(
    g: &Global,
    cwd: &Path,
    deadline: Duration,
    started: Instant,
) -> Result<String, String> {
    let lock_wait = deadline.saturating_sub(started.elapsed());
    let s = session(g, cwd, lock_wait).map_err(|f| f.message)?;
    // From now on a sync of another agent's layout of this repository brings this one along.
    super::agents::register(&s.settings);
    let mut state = s.load_state().map_err(|f| f.message)?;
    let api = s.api.clone().with_deadline(started + deadline);
    let prog = |_: usize, _: usize| {};
    let engine = s.engine(&api, &prog);
    let rt = runtime().map_err(|f| f.message)?;
    let left = deadline.saturating_sub(started.elapsed());
    let pulled = rt.block_on(async { tokio::time::timeout(left, engine.pull(&mut state)).await });
    let cut_short = !matches!(pulled, Ok(Ok(_)));
    let note = match pulled {
        Ok(Ok(r)) if r.incomplete => {
            let paths: Vec<&str> = r.skipped.iter().map(|n| n.path.as_str()).collect();
            Some(format!(
                "memsync did not write {} file(s) the server sent, because their paths collide on disk with synced ones: {}. Everything else is synced; a team admin should rename or delete them on the server.",
                paths.len(),
                paths.join(", ")
            ))
        }
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(offline_note(&e.to_string(), &state)),
        Err(_) => Some(offline_note(
            &format!("the server did not answer within {deadline:?}"),
            &state,
        )),
    };
    // A pull cut short saved nothing: reload what is on disk.
    if cut_short {
        state = s.load_state().map_err(|f| f.message)?;
    }
    let index = MemoryPath::parse("MEMORY.md")
        .ok()
        .and_then(|p| s.team.read(&p).ok().flatten())
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    // Private feedback against the team's, read here and never sent anywhere.
    let private =
        memsync::feedback::read_memories(&s.settings.private_dir, Some(&s.settings.team_dir));
    let team = memsync::feedback::read_memories(&s.settings.team_dir, None);
    // The embedding model the user configured on this machine, if any (a bad setting: the
    // detector alone, and the notice says why).
    let model_note = memsync::model::install(&memsync::config::ProcessEnv).err();
    // A model judge the user configured on this machine (never the memsync server) is asked
    // within what is left of the deadline; a bad setting or no time left: the detector alone.
    let left = deadline.saturating_sub(started.elapsed());
    let feedback = match memsync::judge::resolve(&memsync::config::ProcessEnv) {
        Ok(Some(judge)) if !left.is_zero() => {
            memsync::feedback::private_vs_team_judged(&private, &team, &judge, left).0
        }
        _ => memsync::feedback::private_vs_team(&private, &team),
    };
    memsync::model::save_cache(&memsync::config::ProcessEnv);
    // The user's own proposals, if the server answers within what is left of the deadline.
    let mut notices = Vec::new();
    if let Some(why) = model_note {
        notices.push(format!("memsync: {why}"));
    }
    if !cut_short {
        let left = deadline.saturating_sub(started.elapsed());
        let asked = rt
            .block_on(async { tokio::time::timeout(left, own_proposals(&api, &s.project)).await });
        if let Ok(Some(list)) = asked {
            notices.extend(proposal_lines(&list, &s.team));
        }
    }
    if let Some(repo) = &s.settings.repo {
        let found = stale::possibly_stale(&repo.root, &state, &team, &private);
        notices.extend(stale::context_lines(&found, NOTICE_LINES));
    }
    let private_dir = (s.settings.agent != memsync::agent::AgentId::Claude)
        .then_some(s.settings.private_dir.as_path());
    Ok(memsync::hook::context(
        s.project.as_str(),
        memsync::hook::Dirs {
            team_dir: &s.settings.team_dir,
            private_dir,
        },
        &state,
        index.as_deref(),
        note.as_deref(),
        &feedback,
        &notices,
        chrono::Utc::now(),
    ))
}

/// The user's pending and rejected proposals in the project; None when the server cannot say.
async fn own_proposals(api: &ApiClient, project: &ProjectId) -> Option<Vec<ProposalSummary>> {
    let q = ProposalQuery {
        project: Some(project.to_string()),
        mine: true,
        ..ProposalQuery::default()
    };
    api.proposals(&q).await.ok().map(|l| l.proposals)
}

/// One line per proposal that waits, and per rejected one whose content is still in the team
/// dir (a rejection the user has moved on from is not repeated every session).
fn proposal_lines(list: &[ProposalSummary], team: &TeamDir) -> Vec<String> {
    let on_disk = |path: &str| -> Option<Sha256> {
        let p = MemoryPath::parse(path).ok()?;
        team.read(&p).ok().flatten().map(|b| Sha256::of(&b))
    };
    let mut lines: Vec<String> = list
        .iter()
        .filter_map(|p| {
            let what = match p.op {
                PushOp::Put => format!("`{}`", p.path),
                PushOp::Delete => format!("to delete `{}`", p.path),
            };
            match p.status {
                ProposalStatus::Pending => Some(format!(
                    "memsync: your proposal {what} (#{}) waits for review; the team does not see it yet",
                    p.id
                )),
                ProposalStatus::Rejected => {
                    let disk = on_disk(&p.path);
                    let still_here = match p.op {
                        PushOp::Put => disk.is_some() && disk == p.sha256,
                        PushOp::Delete => disk.is_none(),
                    };
                    still_here.then(|| {
                        format!(
                            "memsync: your proposal {what} (#{}) was rejected: {}. It stays in your team dir but is not shared; change it or remove it",
                            p.id,
                            p.reason.as_deref().unwrap_or("no reason given")
                        )
                    })
                }
                _ => None,
            }
        })
        .collect();
    if lines.len() > NOTICE_LINES {
        let more = lines.len() - NOTICE_LINES;
        lines.truncate(NOTICE_LINES);
        lines.push(format!(
            "memsync: and {more} more of your proposals (`memsync status` lists them)"
        ));
    }
    lines
}

fn offline_note(reason: &str, state: &State) -> String {
    let when = state.last_pull_at.as_deref().unwrap_or("never");
    format!(
        "memsync could not sync this session ({reason}); using the last synced copy (last pull: {when})."
    )
}
