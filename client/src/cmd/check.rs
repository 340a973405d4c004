//! `memsync check` (every local check of the team dir) and `memsync scan` (the team-write guards
//! on any files).

use std::path::{Path, PathBuf};

use memsync::fsops::TeamDir;
use serde_json::json;

use super::{Fail, settings_at};
use crate::Global;

pub fn scan(g: &Global, paths: &[PathBuf]) -> Result<u8, Fail> {
    let report = memsync::check::scan_paths(paths);
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
                "{} file(s) scanned, {} finding(s)",
                report.files,
                report.findings.len()
            );
        }
    }
    if !report.errors.is_empty() && report.files == 0 {
        return Ok(2);
    }
    Ok(u8::from(!report.findings.is_empty()))
}

pub fn check(g: &Global, cwd: &Path) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let team = TeamDir::open(&settings.team_dir).map_err(Fail::env)?;
    let report = memsync::check::check_team_dir(
        &team,
        Some(&settings.private_dir),
        memsync_core::memory::DEFAULT_MAX_FILE_BYTES,
    )
    .map_err(Fail::env)?;
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
            println!(
                "{}: {} file(s), {} finding(s), {} problem(s)",
                report.team_dir.display(),
                report.files,
                report.findings.len(),
                report.problems.len()
            );
        }
    }
    Ok(u8::from(report.has_errors()))
}
