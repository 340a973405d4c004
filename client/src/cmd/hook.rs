//! Claude Code: the `SessionStart` hook (`memsync hook session-start`) and `memsync
//! install-hook`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use memsync::config::{self, ProcessEnv};
use memsync::state::State;
use memsync_core::MemoryPath;
use serde_json::json;

use super::{Fail, runtime, session};
use crate::Global;

pub fn install_hook(g: &Global, cwd: &Path, user: bool) -> Result<u8, Fail> {
    let path = if user {
        memsync::claude::user_settings_path(&ProcessEnv)
            .ok_or_else(|| Fail::env("HOME is not set"))?
    } else {
        let repo = config::find_repo(cwd).ok_or_else(|| {
            Fail::env("not inside a git repository; run it in the project, or use --user for ~/.claude/settings.json")
        })?;
        memsync::claude::project_settings_path(&repo.root)
    };
    // The hooks run this very binary by its absolute path: Claude Code's PATH may lack it.
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| Fail::env(format!("cannot tell where this memsync binary is: {e}")))?;
    let out = memsync::claude::install_hooks(&path, &exe).map_err(Fail::env)?;
    if g.json {
        println!(
            "{}",
            json!({
                "settings": out.path, "changed": out.changed, "added": out.added,
                "updated": out.updated, "program": exe,
            })
        );
    } else if !g.quiet {
        if !out.added.is_empty() {
            println!(
                "added memsync's {} hook(s) to {}",
                out.added.join(" and "),
                out.path.display()
            );
        }
        if !out.updated.is_empty() {
            println!(
                "memsync's {} hook(s) in {} now run {}",
                out.updated.join(" and "),
                out.path.display(),
                exe.display()
            );
        }
        if !out.changed {
            println!(
                "memsync's hooks are already in {}, running {}",
                out.path.display(),
                exe.display()
            );
        }
    }
    Ok(0)
}

/// The SessionStart hook never fails the session: every error becomes one line of context.
pub fn session_start(g: &Global, deadline: Duration) {
    let started = Instant::now();
    let mut input = String::new();
    let _ = std::io::stdin()
        .take(1024 * 1024)
        .read_to_string(&mut input);
    let parsed: memsync::hook::HookInput = serde_json::from_str(&input).unwrap_or_default();
    let cwd = parsed
        .cwd
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    let context = match hook_context(g, &cwd, deadline, started) {
        Ok(c) => c,
        Err(message) => {
            format!("memsync: team memory is not available in this session: {message}\n")
        }
    };
    let out = memsync::hook::HookOutput::session_start(context);
    println!(
        "{}",
        serde_json::to_string(&out).unwrap_or_else(|_| "{}".into())
    );
}

fn hook_context(
    g: &Global,
    cwd: &Path,
    deadline: Duration,
    started: Instant,
) -> Result<String, String> {
    let lock_wait = deadline.saturating_sub(started.elapsed());
    let s = session(g, cwd, lock_wait).map_err(|f| f.message)?;
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
    let feedback = memsync::feedback::private_vs_team(&private, &team);
    Ok(memsync::hook::context(
        s.project.as_str(),
        &s.settings.team_dir,
        &state,
        index.as_deref(),
        note.as_deref(),
        &feedback,
        chrono::Utc::now(),
    ))
}

fn offline_note(reason: &str, state: &State) -> String {
    let when = state.last_pull_at.as_deref().unwrap_or("never");
    format!(
        "memsync could not sync this session ({reason}); using the last synced copy (last pull: {when})."
    )
}
