//! `memsync admin …`: the audit log, history, delete/restore/purge, tokens, projects. The
//! request bodies are `memsync_core::wire`'s types, the same the server reads.

use std::collections::BTreeMap;
use std::path::Path;

use memsync::api::{ApiClient, ApiError, Applied, AuditQuery, IdempotencyKey};
use memsync::config::Settings;
use memsync::paths;
use memsync_core::text::Text;
use memsync_core::wire::{AdminPathAction, AdminRestore, TeamRole, TokenIssue};
use memsync_core::{MemoryPath, ProjectId};
use serde_json::json;

use super::{Fail, Need, OK, admin_failure, api_client, require_project, runtime, settings_at};
use crate::{AdminCmd, Global, TokensCmd};

/// A PATH argument as the memory it names (the same rule as every command: see `paths`).
fn memory_path(arg: &str, cwd: &Path, settings: &Settings) -> Result<MemoryPath, Fail> {
    let rel = paths::team_relative(Path::new(arg), cwd, &settings.team_dir).map_err(Fail::env)?;
    MemoryPath::parse(&rel).map_err(|e| Fail::env(format!("{arg}: {e}")))
}

fn text(arg: &str) -> Result<Text, Fail> {
    Text::new(arg).map_err(|e| Fail::env(format!("`{arg}`: {e}")))
}

/// `TEAM` or `TEAM:admin` (also `TEAM:member`), as every command line takes it.
fn team_role(spec: &str) -> Result<(String, TeamRole), Fail> {
    memsync_core::wire::parse_team_grant(spec).map_err(Fail::env)
}

/// Whole days for the API's `ttl_days`, rounded up.
fn ttl_days(ttl: std::time::Duration) -> Result<u32, Fail> {
    let days = ttl.as_secs().div_ceil(86_400);
    u32::try_from(days)
        .ok()
        .filter(|d| *d >= 1)
        .ok_or_else(|| Fail::env("--ttl: give at least one day, e.g. 30d"))
}

/// The command's name in messages, and the token it needs.
fn describe(cmd: &AdminCmd, settings: &Settings) -> (String, Need) {
    let team = |p: Option<&ProjectId>| {
        Need::TeamAdmin(p.map_or_else(|| "TEAM".into(), |p| p.team().to_owned()))
    };
    let here = team(settings.project.as_ref());
    match cmd {
        AdminCmd::Audit { .. } => ("admin audit".into(), Need::SomeAdmin),
        AdminCmd::History { .. } => ("admin history".into(), here),
        AdminCmd::Show { .. } => ("admin show".into(), here),
        AdminCmd::Diff { .. } => ("admin diff".into(), here),
        AdminCmd::Rm { .. } => ("admin rm".into(), here),
        AdminCmd::Restore { .. } => ("admin restore".into(), here),
        AdminCmd::Purge { .. } => ("admin purge".into(), here),
        AdminCmd::Tokens(t) => (
            match t {
                TokensCmd::List => "admin tokens list",
                TokensCmd::Issue { .. } => "admin tokens issue",
                TokensCmd::Revoke { .. } => "admin tokens revoke",
            }
            .into(),
            Need::ServerAdmin,
        ),
        AdminCmd::Projects { archive, unarchive } => {
            match archive.as_ref().or(unarchive.as_ref()) {
                Some(name) => (
                    "admin projects --archive/--unarchive".into(),
                    team(name.parse::<ProjectId>().ok().as_ref()),
                ),
                None => ("admin projects".into(), Need::SomeAdmin),
            }
        }
    }
}

pub fn run(g: &Global, cwd: &Path, cmd: AdminCmd) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let api = api_client(g, &settings)?;
    let project = || require_project(&settings);
    let rt = runtime()?;
    let (command, need) = describe(&cmd, &settings);
    let refused = |e| admin_failure(e, &command, &need, &settings, &api, &rt);
    let out: serde_json::Value = match cmd {
        AdminCmd::Audit {
            team,
            of_project,
            actor,
            action,
            path,
            since,
            until,
            limit,
            cursor,
            csv,
        } => {
            if csv && g.json {
                return Err(Fail::env("--csv and --json: choose one"));
            }
            let path = path
                .map(|p| paths::team_relative(Path::new(&p), cwd, &settings.team_dir))
                .transpose()
                .map_err(Fail::env)?;
            let q = AuditQuery {
                team,
                project: of_project,
                actor,
                action,
                path,
                since,
                until,
                limit,
                cursor,
            };
            if csv {
                print!("{}", rt.block_on(api.audit_csv(&q)).map_err(refused)?);
                return Ok(OK);
            }
            rt.block_on(api.audit(&q)).map_err(refused)?
        }
        AdminCmd::History { path } => {
            let path = memory_path(&path, cwd, &settings)?;
            rt.block_on(api.history(&project()?, &path))
                .map_err(refused)?
        }
        AdminCmd::Show { path, revision } => {
            let path = memory_path(&path, cwd, &settings)?;
            let v = rt
                .block_on(api.version(&project()?, &path, revision))
                .map_err(refused)?;
            if !g.json {
                match v["content"].as_str() {
                    Some(c) => print!("{c}"),
                    None => println!("(no content: a deletion or a purged version)"),
                }
                return Ok(OK);
            }
            v
        }
        AdminCmd::Diff { path, from, to } => {
            let path = memory_path(&path, cwd, &settings)?;
            let v = rt
                .block_on(api.version_diff(&project()?, &path, from, to))
                .map_err(refused)?;
            if !g.json {
                print!("{}", v["diff"].as_str().unwrap_or_default());
                return Ok(OK);
            }
            v
        }
        AdminCmd::Rm { path, reason } => {
            let req = AdminPathAction {
                path: text(memory_path(&path, cwd, &settings)?.as_str())?,
                reason,
            };
            let key = IdempotencyKey::new();
            let done = rt
                .block_on(api.admin_delete(&project()?, &req, &key))
                .map_err(refused)?;
            answer(g, "the delete", done)
        }
        AdminCmd::Restore {
            path,
            revision,
            reason,
        } => {
            let req = AdminRestore {
                path: text(memory_path(&path, cwd, &settings)?.as_str())?,
                revision,
                reason,
            };
            let key = IdempotencyKey::new();
            let done = rt
                .block_on(api.admin_restore(&project()?, &req, &key))
                .map_err(refused)?;
            answer(g, "the restore", done)
        }
        AdminCmd::Purge { path, reason, yes } => {
            if !yes {
                return Err(Fail::env(
                    "a purge erases every version of the file for good; add --yes to confirm",
                ));
            }
            let req = AdminPathAction {
                path: text(memory_path(&path, cwd, &settings)?.as_str())?,
                reason,
            };
            let key = IdempotencyKey::new();
            let done = rt
                .block_on(api.admin_purge(&project()?, &req, &key))
                .map_err(refused)?;
            answer(g, "the purge", done)
        }
        AdminCmd::Tokens(t) => match tokens(g, &api, &rt, t, &refused)? {
            Some(v) => v,
            None => return Ok(OK),
        },
        AdminCmd::Projects { archive, unarchive } => {
            match archive.map(|a| (a, true)).or(unarchive.map(|u| (u, false))) {
                Some((name, archived)) => {
                    let p: ProjectId = name
                        .parse()
                        .map_err(|e| Fail::env(format!("{name}: {e}")))?;
                    rt.block_on(api.archive(&p, archived)).map_err(refused)?
                }
                None => rt.block_on(api.projects()).map_err(refused)?,
            }
        }
    };
    if g.json {
        println!("{out}");
    } else if !g.quiet {
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    }
    Ok(OK)
}

/// The answer of an admin write, said on stderr to be the server's record of an earlier attempt
/// when it is one (`replayed`): the action is done, once.
fn answer<T>(g: &Global, what: &str, done: Applied<T>) -> T {
    if done.replayed && !g.quiet {
        eprintln!(
            "memsync: {what} was applied by an earlier attempt of this command whose answer was lost; \
             this is the server's record of it (it was applied once)"
        );
    }
    done.answer
}

/// The tokens subcommands; None when the output is already printed.
fn tokens(
    g: &Global,
    api: &ApiClient,
    rt: &tokio::runtime::Runtime,
    cmd: TokensCmd,
    refused: &dyn Fn(ApiError) -> Fail,
) -> Result<Option<serde_json::Value>, Fail> {
    Ok(Some(match cmd {
        TokensCmd::List => rt.block_on(api.tokens()).map_err(refused)?,
        TokensCmd::Issue {
            user,
            email,
            teams,
            admin,
            ttl_days: days,
            ttl,
        } => {
            let teams: BTreeMap<String, TeamRole> = teams
                .iter()
                .map(|t| team_role(t))
                .collect::<Result<_, _>>()?;
            let ttl_days = match (days, ttl) {
                (Some(d), _) => Some(d),
                (None, Some(t)) => Some(ttl_days(t)?),
                (None, None) => None,
            };
            let req = TokenIssue {
                user,
                email,
                teams,
                admin,
                ttl_days,
            };
            // One key for this issue, sent with each retry: a retry after a lost answer gets
            // the same token back instead of a second one.
            let key = IdempotencyKey::new();
            let issued = answer(
                g,
                "the token issue",
                rt.block_on(api.token_issue(&req, &key)).map_err(refused)?,
            );
            if !g.json {
                // The token alone on stdout, so TOKEN=$(memsync admin tokens issue …) works.
                println!("{}", issued.token);
                return Ok(None);
            }
            serde_json::to_value(&issued).map_err(Fail::env)?
        }
        TokensCmd::Revoke { jti } => {
            rt.block_on(api.token_revoke(&jti)).map_err(refused)?;
            json!({ "revoked": jti })
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn team_specs_and_ttls() {
        assert_eq!(
            team_role("acme").unwrap(),
            ("acme".into(), TeamRole::Member)
        );
        assert_eq!(
            team_role("ops:admin").unwrap(),
            ("ops".into(), TeamRole::Admin)
        );
        assert!(team_role("ops:owner").is_err());
        assert_eq!(
            ttl_days(std::time::Duration::from_secs(86_400 * 30)).unwrap(),
            30
        );
        assert_eq!(ttl_days(std::time::Duration::from_secs(3600)).unwrap(), 1);
        assert!(ttl_days(std::time::Duration::ZERO).is_err());
    }
}
