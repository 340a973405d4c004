//! `memsync pull`, `push`, `sync`, `status`, `diff`, `resolve`: the team dir against the server.

use std::path::Path;

use memsync::api::ProposalQuery;
use memsync::paths;
use memsync::sync::{self, ProposedNote, Report, Take};
use memsync_core::MemoryPath;
use memsync_core::wire::{ProposalStatus, PushOp};
use serde_json::json;

use super::{ENV, Fail, LOCK_WAIT, OK, progress, runtime, session};
use crate::Global;

/// What a sync command does.
pub enum Direction {
    Pull {
        restore_deleted: bool,
    },
    Push {
        allow_mass_delete: bool,
        session_id: Option<String>,
    },
    Both {
        allow_mass_delete: bool,
        session_id: Option<String>,
    },
}

/// `pull`, `push` and `sync` (pull, then push).
pub fn run(g: &Global, cwd: &Path, what: Direction) -> Result<u8, Fail> {
    let s = session(g, cwd, LOCK_WAIT)?;
    let mut state = s.load_state()?;
    let prog = progress(g.quiet);
    let mut engine = s.engine(&s.api, &prog);
    let rt = runtime()?;
    let (pull, push) = match what {
        Direction::Pull { restore_deleted } => {
            let restored = if restore_deleted {
                engine.restore_deleted(&state)?
            } else {
                Vec::new()
            };
            let mut r = rt.block_on(engine.pull(&mut state))?;
            r.updated.extend(restored);
            (Some(r), None)
        }
        Direction::Push {
            allow_mass_delete,
            session_id,
        } => {
            engine.session_id = session_id;
            (
                None,
                Some(rt.block_on(engine.push(&mut state, allow_mass_delete))?),
            )
        }
        Direction::Both {
            allow_mass_delete,
            session_id,
        } => {
            engine.session_id = session_id;
            let pulled = rt.block_on(engine.pull(&mut state))?;
            let pushed = rt.block_on(engine.push(&mut state, allow_mass_delete))?;
            (Some(pulled), Some(pushed))
        }
    };
    // The other agents' layouts of the repository come along, to the same revision.
    super::agents::register(&s.settings);
    let follow = match (&pull, &push) {
        (Some(_), Some(_)) => super::agents::Follow::Both,
        (None, Some(_)) => super::agents::Follow::Push,
        _ => super::agents::Follow::Pull,
    };
    let session_id = engine.session_id.clone();
    drop(engine);
    // The primary's state lock is released first: following layouts may pull it again.
    drop(s.store);
    let following = super::agents::follow(g, cwd, &s.settings, follow, session_id.as_deref(), None);
    let (followed, notes) = (&following.others, &following.notes);
    let again = following.primary_pull.as_ref();
    let problems = pull.as_ref().is_some_and(Report::has_problems)
        || push.as_ref().is_some_and(Report::has_problems)
        || followed.iter().any(super::agents::Followed::has_problems)
        || again.is_some_and(super::agents::Followed::has_problems);
    if g.json {
        let mut out = json!({ "project": s.project.as_str(), "team_dir": s.settings.team_dir, "pull": pull, "push": push });
        if !followed.is_empty() {
            out["layouts"] = json!(followed);
        }
        if !notes.is_empty() {
            out["notes"] = json!(notes);
        }
        if let Some(f) = again {
            // Pulled again after another layout pushed, so every layout is at one revision.
            out["pull_after_layouts"] = json!(f.pull);
        }
        if let Some(r) = &push {
            // What became proposals, where SPEC §11 has it: at the top.
            out["proposed"] = json!(r.proposed);
        }
        println!("{out}");
    } else if !g.quiet || problems {
        if let Some(r) = &pull {
            print_report("pull", r, &s.settings.team_dir);
        }
        if let Some(r) = &push {
            print_report("push", r, &s.settings.team_dir);
        }
    }
    if !g.json && (!g.quiet || problems) {
        for f in followed.iter().chain(again) {
            println!("  {}", f.line());
        }
    }
    for n in notes {
        eprintln!("memsync: {n}");
    }
    Ok(u8::from(problems))
}

pub fn resolve(g: &Global, cwd: &Path, arg: &Path, take: Take) -> Result<u8, Fail> {
    let s = session(g, cwd, LOCK_WAIT)?;
    let mut state = s.load_state()?;
    let rel = paths::team_relative(arg, cwd, &s.settings.team_dir).map_err(Fail::env)?;
    let path = MemoryPath::parse(&rel).map_err(|e| Fail::env(format!("{}: {e}", arg.display())))?;
    let msg = sync::resolve(&s.team, &s.store, &mut state, &path, take)?;
    if g.json {
        println!(
            "{}",
            json!({ "path": path.as_str(), "message": msg, "open_conflicts": state.conflicts.len() })
        );
    } else if !g.quiet {
        println!("{msg}");
    }
    Ok(OK)
}

/// "3 files" / "1 file".
fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The counts of what a report lists under its headline, the ones that are not zero.
fn listed(r: &Report) -> String {
    let parts: Vec<String> = [
        (r.kept.len(), "local edit kept", "local edits kept"),
        (r.conflicts.len(), "conflict", "conflicts"),
        (r.refused.len(), "refused file", "refused files"),
        (r.skipped.len(), "skipped entry", "skipped entries"),
        (
            usize::from(r.held_deletes.is_some()),
            "held deletion batch",
            "held deletion batches",
        ),
    ]
    .into_iter()
    .filter(|(n, _, _)| *n > 0)
    .map(|(n, one, many)| format!("{n} {}", if n == 1 { one } else { many }))
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("; {}", parts.join(", "))
    }
}

fn print_report(what: &str, r: &Report, team_dir: &Path) {
    let listed = listed(r);
    if what == "pull" {
        if r.not_modified {
            println!(
                "{}: up to date (revision {}){listed}",
                r.project, r.revision
            );
        } else {
            println!(
                "{}: pulled to revision {} into {}: {} updated, {} deleted, {} merged{}{listed}",
                r.project,
                r.revision,
                team_dir.display(),
                r.updated.len(),
                r.deleted.len(),
                r.merged.len(),
                if r.pages > 1 {
                    format!(" (in {} pages)", r.pages)
                } else {
                    String::new()
                }
            );
        }
    } else if r.blocked {
        println!("{}: push blocked, nothing was uploaded{listed}", r.project);
    } else if r.pushed.is_empty() && r.pushed_deletes.is_empty() && !r.proposed.is_empty() {
        println!(
            "{}: proposed {} for review; nothing is published until a reviewer approves{listed}",
            r.project,
            count(r.proposed.len(), "change"),
        );
    } else if r.pushed.is_empty() && r.pushed_deletes.is_empty() {
        println!("{}: nothing pushed{listed}", r.project);
    } else {
        println!(
            "{}: pushed {}, {}{}{}{listed}",
            r.project,
            count(r.pushed.len(), "file"),
            count(r.pushed_deletes.len(), "deletion"),
            r.pushed_revision
                .map(|v| format!(" (revision {v})"))
                .unwrap_or_default(),
            if r.merged.is_empty() {
                String::new()
            } else {
                format!("; merged with concurrent edits: {}", r.merged.join(", "))
            }
        );
    }
    for p in &r.proposed {
        println!("  {}", proposal_line(p));
    }
    for p in &r.awaiting_review {
        println!(
            "  not sent again: `{}` (#{}) {}",
            p.path,
            p.id,
            match p.status {
                ProposalStatus::Rejected => "was rejected; change it to propose it again",
                _ => "waits for review",
            }
        );
    }
    for k in &r.kept {
        println!("  kept local {}: {}", k.path, k.reason);
    }
    for c in &r.conflicts {
        println!(
            "  CONFLICT {} ({}): your file is kept; see `memsync diff {}`, then `memsync resolve {} --take local|server|merged`",
            c.path, c.reason, c.path, c.path
        );
    }
    for f in &r.refused {
        println!("  REFUSED {} [{}]: {}", f.path, f.rule, f.message);
    }
    for s in &r.skipped {
        println!("  skipped {}: {}", s.path, s.reason);
    }
    if let Some(h) = &r.held_deletes {
        println!("  HELD: {h}");
    }
    if r.blocked {
        println!(
            "  fix the findings above (or have a team admin allowlist a false alarm), then push again"
        );
    }
}

/// "proposed `x.md` for review (#12)", or what happened to it before.
fn proposal_line(p: &ProposedNote) -> String {
    let what = match p.op {
        PushOp::Put => format!("`{}`", p.path),
        PushOp::Delete => format!("the deletion of `{}`", p.path),
    };
    match (p.status, &p.reason) {
        (ProposalStatus::Rejected, reason) => format!(
            "{what} (#{}) was rejected before: {}; change it to propose it again",
            p.id,
            reason.as_deref().unwrap_or("no reason given")
        ),
        _ => format!("proposed {what} for review (#{})", p.id),
    }
}

/// One line for a proposal the server lists: waiting, or rejected with the reason.
fn server_proposal_line(p: &memsync_core::wire::ProposalSummary) -> String {
    let what = match p.op {
        PushOp::Put => format!("`{}`", p.path),
        PushOp::Delete => format!("the deletion of `{}`", p.path),
    };
    match p.status {
        ProposalStatus::Rejected => format!(
            "your proposal {what} (#{}) was rejected: {}",
            p.id,
            p.reason.as_deref().unwrap_or("no reason given")
        ),
        ProposalStatus::Approved => format!("your proposal {what} (#{}) was approved", p.id),
        ProposalStatus::Superseded => {
            format!(
                "your proposal {what} (#{}) was superseded by a newer one",
                p.id
            )
        }
        _ => format!("your proposal {what} (#{}) waits for review", p.id),
    }
}

pub fn status(g: &Global, cwd: &Path, offline: bool) -> Result<u8, Fail> {
    let s = session(g, cwd, LOCK_WAIT)?;
    let state = s.load_state()?;
    let local = sync::local_status(&s.team, &state).map_err(Fail::env)?;
    let (server_revision, server_error, review) = if offline {
        (None, None, None)
    } else {
        match runtime()?.block_on(s.api.project_info(&s.project)) {
            Ok(info) => (Some(info.revision), None, Some(info.review)),
            Err(e) => (None, Some(e.to_string()), None),
        }
    };
    // The user's own pending and rejected proposals, as the server has them.
    let (proposals, proposals_error) = if offline {
        (None, Some("not asked the server: --offline".to_owned()))
    } else {
        let q = ProposalQuery {
            project: Some(s.project.to_string()),
            mine: true,
            ..ProposalQuery::default()
        };
        match runtime()?.block_on(s.api.proposals(&q)) {
            Ok(list) => (Some(list.proposals), None),
            // A server from before review: nobody's push is ever proposed there.
            Err(e) if e.is_unknown_route() => (Some(Vec::new()), None),
            Err(e) => (None, Some(e.to_string())),
        }
    };
    let behind = server_revision.map(|r| r > state.revision);
    let problems =
        !local.conflicts.is_empty() || !local.refused.is_empty() || !local.skipped.is_empty();
    let layouts = super::agents::layout_statuses(g, cwd, &s.settings);
    if g.json {
        println!(
            "{}",
            json!({
                "project": s.project.as_str(), "team_dir": s.settings.team_dir, "revision": state.revision,
                "server_revision": server_revision, "behind": behind, "server_error": server_error,
                "ahead": { "modified": local.modified, "added": local.added, "deleted": local.deleted },
                "conflicts": local.conflicts, "refused": local.refused, "skipped": local.skipped,
                "last_pull_at": state.last_pull_at, "review": review,
                "proposed": local.proposed,
                "proposals": proposals.as_ref().map(|list| list.iter().map(|p| json!({
                    "path": p.path, "id": p.id, "op": p.op, "status": p.status, "reason": p.reason,
                    "created_at": p.created_at,
                })).collect::<Vec<_>>()),
                "proposals_error": proposals_error,
                "layouts": layouts,
            })
        );
    } else {
        println!(
            "{} in {} at revision {}",
            s.project,
            s.settings.team_dir.display(),
            state.revision
        );
        match server_revision {
            Some(r) if r > state.revision => println!(
                "  behind by {}: the server is at revision {r}; run `memsync pull`",
                count(usize::try_from(r - state.revision).unwrap_or(0), "revision")
            ),
            Some(_) => println!("  up to date with the server"),
            None if offline => println!("  (not asked the server: --offline)"),
            None => {}
        }
        if review == Some(memsync_core::wire::ReviewMode::Required) {
            println!(
                "  review required: a push by a member who is not a reviewer waits for a reviewer's approval"
            );
        }
        for l in &layouts {
            let at = l
                .revision
                .map_or_else(|| "never synced".to_owned(), |r| format!("revision {r}"));
            let mut extra = String::new();
            if l.ahead > 0 {
                extra.push_str(&format!(", {} local change(s) to push", l.ahead));
            }
            if l.conflicts > 0 {
                extra.push_str(&format!(", {} conflict(s)", l.conflicts));
            }
            println!(
                "  {} layout ({}): {at}{extra} (`memsync --agent {} status`)",
                l.agent,
                l.team_dir.display(),
                l.agent
            );
        }
        for p in &local.modified {
            println!("  modified {p}");
        }
        for p in &local.added {
            println!("  new      {p}");
        }
        for p in &local.deleted {
            println!("  deleted  {p}");
        }
        for c in &local.conflicts {
            println!("  CONFLICT {} ({})", c.path, c.reason);
        }
        for f in &local.refused {
            println!("  REFUSED  {} [{}]: {}", f.path, f.rule, f.message);
        }
        for k in &local.skipped {
            println!("  skipped  {}: {}", k.path, k.reason);
        }
        match &proposals {
            Some(list) => {
                for p in list {
                    println!("  {}", server_proposal_line(p));
                }
            }
            None => {
                // What this machine knows it proposed, when the server cannot say more.
                for p in &local.proposed {
                    println!(
                        "  proposed `{}` (#{}): waits for review as far as this machine knows",
                        p.path, p.id
                    );
                }
                if !offline && let Some(e) = &proposals_error {
                    println!("  could not check your proposals: {e}");
                }
            }
        }
    }
    // The local part is shown either way, but a status that could not ask the server is not a
    // success: the user may be behind without knowing it.
    if let Some(e) = server_error {
        if !g.json {
            eprintln!("memsync: {e}");
        }
        return Ok(ENV);
    }
    Ok(u8::from(problems))
}

pub fn diff(g: &Global, cwd: &Path, only: Option<&Path>) -> Result<u8, Fail> {
    let s = session(g, cwd, LOCK_WAIT)?;
    let state = s.load_state()?;
    let local = sync::local_status(&s.team, &state).map_err(Fail::env)?;
    let mut paths: Vec<String> = local
        .modified
        .iter()
        .chain(&local.added)
        .chain(&local.deleted)
        .cloned()
        .chain(local.conflicts.iter().map(|c| c.path.clone()))
        .collect();
    if let Some(arg) = only {
        let rel = paths::team_relative(arg, cwd, &s.settings.team_dir).map_err(Fail::env)?;
        let under = |p: &str| rel.is_empty() || p == rel || p.starts_with(&format!("{rel}/"));
        paths.retain(|p| under(p));
        if paths.is_empty() {
            let known =
                s.settings.team_dir.join(&rel).exists() || state.files.keys().any(|p| under(p));
            if !known {
                return Err(Fail::env(format!(
                    "{}: no such memory or directory in the team dir {}",
                    arg.display(),
                    s.settings.team_dir.display()
                )));
            }
            if g.json {
                println!("{}", json!({ "diffs": [] }));
            } else if !g.quiet {
                println!("{}: no local changes", arg.display());
            }
            return Ok(OK);
        }
    }
    let mut diffs = Vec::new();
    for p in paths {
        let mp = MemoryPath::parse(&p).map_err(|e| Fail::env(e.to_string()))?;
        let disk = s.team.read(&mp).map_err(Fail::env)?.unwrap_or_default();
        let (label, other) = if state.conflicts.contains_key(&p) {
            ("server", s.store.server_version(&p).unwrap_or_default())
        } else {
            (
                "base",
                state
                    .files
                    .get(&p)
                    .and_then(|t| s.store.base_content(&p, &t.sha256))
                    .unwrap_or_default(),
            )
        };
        let old = String::from_utf8_lossy(&other);
        let new = String::from_utf8_lossy(&disk);
        let patch = diffy::create_patch(&old, &new).to_string();
        let patch = patch
            .replacen("--- original", &format!("--- {label}/{p}"), 1)
            .replacen("+++ modified", &format!("+++ local/{p}"), 1);
        diffs.push(json!({ "path": p, "against": label, "patch": patch }));
        if !g.json {
            print!("{patch}");
        }
    }
    if g.json {
        println!("{}", json!({ "diffs": diffs }));
    }
    Ok(OK)
}
