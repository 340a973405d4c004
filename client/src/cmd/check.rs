//! `memsync check` (every local check of the team dir) and `memsync scan` (the team-write guards
//! on any files).

use std::path::{Path, PathBuf};

use memsync::check::CheckReport;
use memsync::fsops::TeamDir;
use memsync::paths;
use memsync::state::StateStore;
use serde_json::json;

use super::{ENV, Fail, settings_at};
use crate::Global;

pub fn scan(g: &Global, cwd: &Path, args: &[PathBuf]) -> Result<u8, Fail> {
    // The team dir is only needed for paths that exist nowhere else; a scan works without any
    // memsync configuration.
    let team_dir = settings_at(g, cwd).ok().map(|s| s.team_dir);
    let targets: Vec<PathBuf> = args
        .iter()
        .map(|a| paths::scan_target(a, cwd, team_dir.as_deref()))
        .collect();
    let report = memsync::check::scan_paths(&targets);
    if g.json {
        println!(
            "{}",
            json!({ "findings": report.findings, "errors": report.errors, "files": report.files })
        );
    } else {
        for f in &report.findings {
            println!(
                "{}:{}:{}: {} [{}] {}",
                f.path, f.line, f.column, f.category, f.rule, f.preview
            );
        }
        for (p, e) in &report.errors {
            eprintln!("memsync: {p}: {e}");
        }
        if !g.quiet {
            println!(
                "{} file(s) scanned, {} finding(s), {} path(s) not scanned",
                report.files,
                report.findings.len(),
                report.errors.len()
            );
        }
    }
    // A path that was asked for and could not be scanned is a usage error, even when the others
    // were scanned: the user must not take its silence for a clean bill.
    if !report.errors.is_empty() {
        return Ok(ENV);
    }
    Ok(u8::from(!report.findings.is_empty()))
}

pub fn check(g: &Global, cwd: &Path) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let team = TeamDir::open(&settings.team_dir).map_err(Fail::env)?;
    // The embedding model the user configured on this machine, if any: a bad setting is an
    // error here, as the judge's is.
    memsync::model::install(&memsync::config::ProcessEnv).map_err(Fail::env)?;
    let mut report = memsync::check::check_team_dir(
        &team,
        Some(&settings.private_dir),
        memsync_core::memory::DEFAULT_MAX_FILE_BYTES,
    )
    .map_err(Fail::env)?;
    // The model judge the user configured on this machine, if any, on the private/team pairs.
    let judge = memsync::judge::resolve(&memsync::config::ProcessEnv)
        .map_err(|e| Fail::env(e.to_string()))?;
    if let Some(judge) = &judge {
        let private =
            memsync::feedback::read_memories(&settings.private_dir, Some(&settings.team_dir));
        let team_texts = memsync::feedback::read_memories(&settings.team_dir, None);
        let (conflicts, unavailable) = memsync::feedback::private_vs_team_judged(
            &private,
            &team_texts,
            judge,
            judge.timeout(),
        );
        report.conflicts = conflicts;
        if let Some(note) = unavailable {
            eprintln!("memsync: {note}");
        }
    }
    memsync::model::save_cache(&memsync::config::ProcessEnv);
    // Against the code: only in a repository, whose working tree the memories are about.
    if let Some(repo) = &settings.repo {
        // The paths recorded when each synced file was written; read without the state lock,
        // since check changes nothing.
        let state = StateStore::peek(&settings.state_dir).unwrap_or_default();
        let private =
            memsync::feedback::read_memories(&settings.private_dir, Some(&settings.team_dir));
        let team_texts = memsync::feedback::read_memories(&settings.team_dir, None);
        report.stale = memsync::stale::possibly_stale(&repo.root, &state, &team_texts, &private);
    }
    if g.json {
        println!("{}", serde_json::to_string(&report).map_err(Fail::env)?);
    } else {
        for f in &report.findings {
            println!(
                "{}:{}:{}: {} [{}] {}",
                f.path, f.line, f.column, f.category, f.rule, f.preview
            );
        }
        for c in &report.conflicts {
            if c.kind == "contradiction" {
                println!(
                    "private {} contradicts team {}: {}. The team rule wins: fix the private memory, or add `overrides: {}` to it",
                    c.private, c.team, c.reason, c.team
                );
            } else {
                println!(
                    "private {} is related to team {}: {}",
                    c.private, c.team, c.reason
                );
            }
        }
        for s in &report.stale {
            println!(
                "{}; update it to the code as it is, or delete it",
                s.sentence()
            );
        }
        for p in &report.problems {
            let line = p.line.map(|l| format!(":{l}")).unwrap_or_default();
            println!(
                "{}{line}: {} [{}] {}",
                p.path,
                if p.error { "error" } else { "warning" },
                p.rule,
                p.message
            );
        }
        if !g.quiet {
            println!("{}", summary(&report));
        }
    }
    Ok(u8::from(report.has_errors()))
}

/// One line counting every kind of thing `check` printed above it.
fn summary(r: &CheckReport) -> String {
    let contradictions = r
        .conflicts
        .iter()
        .filter(|c| c.kind == "contradiction")
        .count();
    let errors = r.problems.iter().filter(|p| p.error).count();
    format!(
        "{}: {} file(s), {} finding(s), {} contradiction(s) and {} related note(s) between private and team feedback, {} possibly stale memory(ies), {} problem(s) ({} error(s), {} warning(s))",
        r.team_dir.display(),
        r.files,
        r.findings.len(),
        contradictions,
        r.conflicts.len() - contradictions,
        r.stale.len(),
        r.problems.len(),
        errors,
        r.problems.len() - errors,
    )
}
