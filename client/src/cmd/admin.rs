//! `memsync admin …`: the audit log, history, delete/restore/purge, tokens, projects. The
//! request bodies are `memsync_core::wire`'s types, the same the server reads.

use std::collections::BTreeMap;
use std::path::Path;

use memsync::api::{ApiClient, AuditQuery};
use memsync_core::text::Text;
use memsync_core::wire::{AdminPathAction, AdminRestore, TeamRole, TokenIssue};
use memsync_core::{MemoryPath, ProjectId};
use serde_json::json;

use super::{Fail, api_client, require_project, runtime, settings_at};
use crate::{AdminCmd, Global, TokensCmd};

fn memory_path(arg: &str) -> Result<MemoryPath, Fail> {
    MemoryPath::parse(arg).map_err(|e| Fail::env(format!("{arg}: {e}")))
}

fn text(arg: &str) -> Result<Text, Fail> {
    Text::new(arg).map_err(|e| Fail::env(format!("`{arg}`: {e}")))
}

/// `TEAM` or `TEAM:admin` (also `TEAM:member`).
fn team_role(spec: &str) -> Result<(String, TeamRole), Fail> {
    match spec.split_once(':') {
        None => Ok((spec.to_owned(), TeamRole::Member)),
        Some((t, "admin")) => Ok((t.to_owned(), TeamRole::Admin)),
        Some((t, "member" | "")) => Ok((t.to_owned(), TeamRole::Member)),
        Some(_) => Err(Fail::env(format!("--team {spec}: use TEAM or TEAM:admin"))),
    }
}

/// Whole days for the API's `ttl_days`, rounded up.
fn ttl_days(ttl: std::time::Duration) -> Result<u32, Fail> {
    let days = ttl.as_secs().div_ceil(86_400);
    u32::try_from(days)
        .ok()
        .filter(|d| *d >= 1)
        .ok_or_else(|| Fail::env("--ttl: give at least one day, e.g. 30d"))
}

pub fn run(g: &Global, cwd: &Path, cmd: AdminCmd) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let api = api_client(g, &settings)?;
    let project = || require_project(&settings);
    let rt = runtime()?;
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
                print!("{}", rt.block_on(api.audit_csv(&q))?);
                return Ok(0);
            }
            rt.block_on(api.audit(&q))?
        }
        AdminCmd::History { path } => {
            rt.block_on(api.history(&project()?, &memory_path(&path)?))?
        }
        AdminCmd::Show { path, revision } => {
            let v = rt.block_on(api.version(&project()?, &memory_path(&path)?, revision))?;
            if !g.json {
                match v["content"].as_str() {
                    Some(c) => print!("{c}"),
                    None => println!("(no content: a deletion or a purged version)"),
                }
                return Ok(0);
            }
            v
        }
        AdminCmd::Diff { path, from, to } => {
            let v = rt.block_on(api.version_diff(&project()?, &memory_path(&path)?, from, to))?;
            if !g.json {
                print!("{}", v["diff"].as_str().unwrap_or_default());
                return Ok(0);
            }
            v
        }
        AdminCmd::Rm { path, reason } => {
            let req = AdminPathAction {
                path: text(memory_path(&path)?.as_str())?,
                reason,
            };
            rt.block_on(api.admin_delete(&project()?, &req))?
        }
        AdminCmd::Restore {
            path,
            revision,
            reason,
        } => {
            let req = AdminRestore {
                path: text(memory_path(&path)?.as_str())?,
                revision,
                reason,
            };
            rt.block_on(api.admin_restore(&project()?, &req))?
        }
        AdminCmd::Purge { path, reason, yes } => {
            if !yes {
                return Err(Fail::env(
                    "a purge erases every version of the file for good; add --yes to confirm",
                ));
            }
            let req = AdminPathAction {
                path: text(memory_path(&path)?.as_str())?,
                reason,
            };
            rt.block_on(api.admin_purge(&project()?, &req))?
        }
        AdminCmd::Tokens(t) => match tokens(g, &api, &rt, t)? {
            Some(v) => v,
            None => return Ok(0),
        },
        AdminCmd::Projects { archive, unarchive } => {
            match archive.map(|a| (a, true)).or(unarchive.map(|u| (u, false))) {
                Some((name, archived)) => {
                    let p: ProjectId = name
                        .parse()
                        .map_err(|e| Fail::env(format!("{name}: {e}")))?;
                    rt.block_on(api.archive(&p, archived))?
                }
                None => rt.block_on(api.projects())?,
            }
        }
    };
    if g.json {
        println!("{out}");
    } else if !g.quiet {
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    }
    Ok(0)
}

/// The tokens subcommands; None when the output is already printed.
fn tokens(
    g: &Global,
    api: &ApiClient,
    rt: &tokio::runtime::Runtime,
    cmd: TokensCmd,
) -> Result<Option<serde_json::Value>, Fail> {
    Ok(Some(match cmd {
        TokensCmd::List => rt.block_on(api.tokens())?,
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
            let issued = rt.block_on(api.token_issue(&TokenIssue {
                user,
                email,
                teams,
                admin,
                ttl_days,
            }))?;
            if !g.json {
                // The token alone on stdout, so TOKEN=$(memsync admin tokens issue …) works.
                println!("{}", issued.token);
                return Ok(None);
            }
            serde_json::to_value(&issued).map_err(Fail::env)?
        }
        TokensCmd::Revoke { jti } => {
            rt.block_on(api.token_revoke(&jti))?;
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
