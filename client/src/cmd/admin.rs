//! `memsync admin …`: the audit log, history, delete/restore/purge, tokens, projects. The
//! request bodies are `memsync_core::wire`'s types, the same the server reads.

use std::collections::BTreeMap;
use std::path::Path;

use memsync::api::{ApiClient, ApiError, Applied, AuditQuery, IdempotencyKey};
use memsync::config::Settings;
use memsync::paths;
use memsync_core::text::Text;
use memsync_core::wire::{
    AdminPathAction, AdminRelease, AdminRestore, AdminRollback, ProjectSettings, PushResponse,
    ReviewMode, TeamRole, TokenIssue,
};
use memsync_core::{MemoryPath, ProjectId};
use serde_json::json;

use super::{
    Fail, Need, OK, admin_failure, api_client, print_json, require_project, runtime, settings_at,
};
use crate::{AdminCmd, Global, ProjectCmd, ReviewArg, ReviewerCmd, TokensCmd};

/// `--review-after DAYS|off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewAfter {
    Off,
    Days(u32),
}

pub fn parse_review_after(s: &str) -> Result<ReviewAfter, String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("off") {
        return Ok(ReviewAfter::Off);
    }
    let days = s.strip_suffix('d').unwrap_or(s);
    match days.parse::<u32>() {
        Ok(n) if n >= 1 => Ok(ReviewAfter::Days(n)),
        _ => Err(format!(
            "`{s}` is not a number of days (at least 1, e.g. 90) or `off`"
        )),
    }
}

/// A PATH argument as the memory it names (the same rule as every command: see `paths`).
pub(crate) fn memory_path(arg: &str, cwd: &Path, settings: &Settings) -> Result<MemoryPath, Fail> {
    let rel = paths::team_relative(Path::new(arg), cwd, &settings.team_dir).map_err(Fail::env)?;
    MemoryPath::parse(&rel).map_err(|e| Fail::env(format!("{arg}: {e}")))
}

pub(crate) fn text(arg: &str) -> Result<Text, Fail> {
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
    // Releasing is a reviewer's work too: team admins and the users granted the role.
    let reviewer = Need::Reviewer(
        settings
            .project
            .as_ref()
            .map_or_else(|| "TEAM".into(), |p| p.team().to_owned()),
    );
    match cmd {
        AdminCmd::Audit { .. } => ("admin audit".into(), Need::SomeAdmin),
        AdminCmd::History { .. } => ("admin history".into(), here),
        AdminCmd::Show { .. } => ("admin show".into(), here),
        AdminCmd::Diff { .. } => ("admin diff".into(), here),
        AdminCmd::Rm { .. } => ("admin rm".into(), here),
        AdminCmd::Restore { .. } => ("admin restore".into(), here),
        AdminCmd::Purge { .. } => ("admin purge".into(), here),
        AdminCmd::Disable { .. } => ("admin disable".into(), reviewer),
        AdminCmd::Enable { .. } => ("admin enable".into(), reviewer),
        AdminCmd::Rollback { .. } => ("admin rollback".into(), reviewer),
        AdminCmd::Project(p) => (
            match p {
                ProjectCmd::Show => "admin project show",
                ProjectCmd::Set { .. } => "admin project set",
            }
            .into(),
            here,
        ),
        AdminCmd::Reviewer(r) => {
            let (name, team) = match r {
                ReviewerCmd::List { team } => ("admin reviewer list", team),
                ReviewerCmd::Add { team, .. } => ("admin reviewer add", team),
                ReviewerCmd::Remove { team, .. } => ("admin reviewer remove", team),
            };
            let team = team
                .clone()
                .or_else(|| settings.project.as_ref().map(|p| p.team().to_owned()))
                .unwrap_or_else(|| "TEAM".into());
            (name.into(), Need::TeamAdmin(team))
        }
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
            let h = rt
                .block_on(api.history(&project()?, &path))
                .map_err(refused)?;
            if !g.json {
                if !g.quiet {
                    print!("{}", history_lines(&h));
                }
                return Ok(OK);
            }
            h
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
        AdminCmd::Disable { path, reason } => {
            return release(
                g,
                &api,
                &rt,
                "disable",
                &path,
                reason,
                &project()?,
                &|p| memory_path(p, cwd, &settings),
                &refused,
            );
        }
        AdminCmd::Enable { path, reason } => {
            return release(
                g,
                &api,
                &rt,
                "enable",
                &path,
                reason,
                &project()?,
                &|p| memory_path(p, cwd, &settings),
                &refused,
            );
        }
        AdminCmd::Rollback { path, to, reason } => {
            let path = memory_path(&path, cwd, &settings)?;
            let req = AdminRollback {
                path: text(path.as_str())?,
                revision: to,
                reason,
            };
            let key = IdempotencyKey::new();
            let project = project()?;
            let done = rt
                .block_on(api.admin_rollback(&project, &req, &key))
                .map_err(|e| state_conflict(e, &refused))?;
            let resp = answer(g, "the rollback", done);
            return released(
                g,
                &project,
                path.as_str(),
                &format!("rollback to revision {to}"),
                &resp,
            );
        }
        AdminCmd::Project(p) => {
            let project = project()?;
            let get = || {
                rt.block_on(api.project_settings(&project))
                    .map_err(&refused)
            };
            let shown = match p {
                ProjectCmd::Show => get()?,
                ProjectCmd::Set {
                    review: None,
                    review_after: None,
                } => {
                    return Err(Fail::env(
                        "say what to set: --review required|off and/or --review-after DAYS|off",
                    ));
                }
                ProjectCmd::Set {
                    review,
                    review_after,
                } => {
                    // An option left out keeps the value the project has.
                    let current = match (review, review_after) {
                        (Some(_), Some(_)) => None,
                        _ => Some(get()?),
                    };
                    let new = ProjectSettings {
                        review: match review {
                            Some(ReviewArg::Required) => ReviewMode::Required,
                            Some(ReviewArg::Off) => ReviewMode::Off,
                            None => current.as_ref().map_or(ReviewMode::Off, |c| c.review),
                        },
                        review_after_days: match review_after {
                            Some(ReviewAfter::Off) => None,
                            Some(ReviewAfter::Days(d)) => Some(d),
                            None => current.as_ref().and_then(|c| c.review_after_days),
                        },
                    };
                    rt.block_on(api.set_project_settings(&project, &new))
                        .map_err(&refused)?
                }
            };
            if g.json {
                print_json(&json!({ "project": project.as_str(), "settings": shown }))?;
            } else if !g.quiet {
                println!("{}", settings_line(&project, &shown));
            }
            return Ok(OK);
        }
        AdminCmd::Reviewer(r) => return reviewer(g, &settings, &api, &rt, r, &refused),
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

/// `admin history` for people: one line per version, newest first, with how it was made (kind,
/// note) and where it came from (provenance) when the server keeps them.
fn history_lines(h: &serde_json::Value) -> String {
    let mut out = format!(
        "{} in {}\n",
        h["path"].as_str().unwrap_or_default(),
        h["project"].as_str().unwrap_or_default()
    );
    let empty = Vec::new();
    for v in h["versions"].as_array().unwrap_or(&empty) {
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
        let what = if v["purged"] == true {
            "purged".to_owned()
        } else if v["disabled"] == true {
            "disabled".to_owned()
        } else if v["deleted"] == true {
            "deleted".to_owned()
        } else {
            format!("{} bytes", v["size"].as_i64().unwrap_or(0))
        };
        let mut tags: Vec<String> = Vec::new();
        // An ordinary push, or a disable that `disabled` already says, needs no tag.
        if let Some(kind) = v["kind"]
            .as_str()
            .filter(|k| *k != "push" && !(*k == "disable" && what == "disabled"))
        {
            tags.push(kind.to_owned());
        }
        if v["merged"] == true {
            tags.push("merged".into());
        }
        let tags = if tags.is_empty() {
            String::new()
        } else {
            format!(" ({})", tags.join(", "))
        };
        out.push_str(&format!(
            "revision {}  {}  {}  {what}{tags}\n",
            v["revision"],
            s("created_at"),
            s("author")
        ));
        if let Some(note) = v["note"].as_str().filter(|n| !n.is_empty()) {
            out.push_str(&format!("    note: {note}\n"));
        }
        let p = &v["provenance"];
        if p.is_object() {
            let mut parts: Vec<String> = Vec::new();
            for (key, label) in [
                ("session_id", "session"),
                ("head", "head"),
                ("branch", "branch"),
                ("client_version", "client"),
                ("token_id", "token"),
                ("approved_by", "approved by"),
            ] {
                if let Some(x) = p[key].as_str() {
                    parts.push(format!("{label} {x}"));
                }
            }
            if let Some(id) = p["proposal_id"].as_i64() {
                parts.push(format!("proposal #{id}"));
            }
            if !parts.is_empty() {
                out.push_str(&format!("    provenance: {}\n", parts.join(", ")));
            }
        }
    }
    out
}

/// `admin disable` and `admin enable`.
#[allow(clippy::too_many_arguments)]
fn release(
    g: &Global,
    api: &ApiClient,
    rt: &tokio::runtime::Runtime,
    action: &str,
    path: &str,
    reason: Option<Text>,
    project: &ProjectId,
    memory_path: &dyn Fn(&str) -> Result<MemoryPath, Fail>,
    refused: &dyn Fn(ApiError) -> Fail,
) -> Result<u8, Fail> {
    let path = memory_path(path)?;
    let req = AdminRelease {
        path: text(path.as_str())?,
        reason,
    };
    // One key for this action, sent with each retry.
    let key = IdempotencyKey::new();
    let done = rt
        .block_on(api.admin_release(project, action, &req, &key))
        .map_err(|e| state_conflict(e, refused))?;
    let resp = answer(g, &format!("the {action}"), done);
    released(g, project, path.as_str(), action, &resp)
}

/// A disable, enable or rollback the memory's state does not allow (already disabled, deleted,
/// not disabled: a 409) is a problem found (exit 1), with the server's reason; anything else is
/// the usual refusal.
fn state_conflict(e: ApiError, refused: &dyn Fn(ApiError) -> Fail) -> Fail {
    match e {
        ApiError::Conflict { message, .. }
        | ApiError::Server {
            status: 409,
            message,
            ..
        } => Fail::problem(message),
        e => refused(e),
    }
}

/// Prints what a disable, enable or rollback did.
fn released(
    g: &Global,
    project: &ProjectId,
    path: &str,
    what: &str,
    resp: &PushResponse,
) -> Result<u8, Fail> {
    if g.json {
        print_json(resp)?;
    } else if !g.quiet {
        if resp.created_revision {
            let effect = match what {
                "disable" => "it leaves every member's team dir and MEMORY.md on their next pull",
                _ => "every member gets it on their next pull",
            };
            println!(
                "{what} of `{path}` in {project}: revision {}; {effect}",
                resp.revision
            );
        } else {
            println!("{what} of `{path}` in {project}: nothing to change (already so)");
        }
    }
    Ok(OK)
}

/// "acme/api: review required; published memories come up for review after 90 days unchanged".
fn settings_line(project: &ProjectId, s: &ProjectSettings) -> String {
    let review = match s.review {
        ReviewMode::Required => {
            "review required: a push by a member who is not a reviewer becomes proposals"
        }
        ReviewMode::Off => "review off: every push publishes at once",
    };
    let after = match s.review_after_days {
        Some(d) => format!(
            "; published memories unchanged for {d} day{} come up for review",
            if d == 1 { "" } else { "s" }
        ),
        None => String::new(),
    };
    format!("{project}: {review}{after}")
}

/// `admin reviewer list|add|remove`.
fn reviewer(
    g: &Global,
    settings: &Settings,
    api: &ApiClient,
    rt: &tokio::runtime::Runtime,
    cmd: ReviewerCmd,
    refused: &dyn Fn(ApiError) -> Fail,
) -> Result<u8, Fail> {
    let team_of = |team: Option<String>| -> Result<String, Fail> {
        let team = match team {
            Some(t) => t,
            None => require_project(settings)
                .map_err(|_| {
                    Fail::env(
                        "give the team with --team TEAM (or run it in a project's repository)",
                    )
                })?
                .team()
                .to_owned(),
        };
        if !memsync_core::project::valid_segment(&team) {
            return Err(Fail::env(format!(
                "`{team}` is not a valid team name: use lowercase letters, digits, `.`, `_` or `-`"
            )));
        }
        Ok(team)
    };
    match cmd {
        ReviewerCmd::List { team } => {
            let team = team_of(team)?;
            let list = rt.block_on(api.reviewers(&team)).map_err(refused)?;
            if g.json {
                print_json(&list)?;
            } else if !g.quiet {
                if list.reviewers.is_empty() {
                    println!(
                        "team {team} has no reviewers besides its team admins (`memsync admin reviewer add USER --team {team}`)"
                    );
                }
                for r in &list.reviewers {
                    println!("{}  (added by {}, {})", r.user, r.added_by, r.created_at);
                }
            }
        }
        ReviewerCmd::Add { user, team } => {
            set_reviewer(g, api, rt, &team_of(team)?, &user, true, refused)?
        }
        ReviewerCmd::Remove { user, team } => {
            set_reviewer(g, api, rt, &team_of(team)?, &user, false, refused)?
        }
    }
    Ok(OK)
}

fn set_reviewer(
    g: &Global,
    api: &ApiClient,
    rt: &tokio::runtime::Runtime,
    team: &str,
    user: &str,
    add: bool,
    refused: &dyn Fn(ApiError) -> Fail,
) -> Result<(), Fail> {
    if user.trim().is_empty() || user.chars().any(char::is_control) {
        return Err(Fail::env(
            "USER is the user's `sub`: the name given to `memsync-server token issue --user`",
        ));
    }
    let answer = rt
        .block_on(api.set_reviewer(team, user, add))
        .map_err(refused)?;
    if g.json {
        print_json(&json!({ "team": team, "user": user, "reviewer": add, "answer": answer }))?;
    } else if !g.quiet {
        if add {
            println!(
                "{user} now reviews the proposals of team {team}'s projects (team admins review without the role)"
            );
        } else {
            println!(
                "{user} no longer reviews team {team}'s proposals (a team admin of {team} still does)"
            );
        }
    }
    Ok(())
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
                // The client's own --scope/--project/--rate come with the token scopes work.
                scopes: Vec::new(),
                projects: Vec::new(),
                rate: None,
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
    fn review_after_takes_days_or_off() {
        assert_eq!(parse_review_after("90"), Ok(ReviewAfter::Days(90)));
        assert_eq!(parse_review_after("30d"), Ok(ReviewAfter::Days(30)));
        assert_eq!(parse_review_after("OFF"), Ok(ReviewAfter::Off));
        for bad in ["0", "-1", "soon", "", "1.5"] {
            assert!(parse_review_after(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn history_lines_show_kind_note_and_provenance() {
        let h = json!({
            "project": "acme/api", "path": "x.md",
            "versions": [
                { "revision": 9, "created_at": "2026-12-01T10:00:00Z", "author": "ann",
                  "deleted": true, "disabled": true, "purged": false, "merged": false, "size": 0,
                  "kind": "disable", "note": "outdated" },
                { "revision": 8, "created_at": "2026-11-30T10:00:00Z", "author": "bob",
                  "deleted": false, "purged": false, "merged": false, "size": 120,
                  "kind": "approve",
                  "provenance": { "author": "bob", "author_sub": "bob", "session_id": "s-1",
                    "head": "abc1234", "branch": "main", "client_version": "memsync/0.1.0",
                    "pushed_at": "2026-11-30T09:00:00Z", "approved_by": "ann", "proposal_id": 4 } },
                { "revision": 1, "created_at": "2026-11-01T10:00:00Z", "author": "bob",
                  "deleted": false, "purged": false, "merged": false, "size": 100 },
            ],
        });
        let text = history_lines(&h);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "x.md in acme/api",
                "revision 9  2026-12-01T10:00:00Z  ann  disabled",
                "    note: outdated",
                "revision 8  2026-11-30T10:00:00Z  bob  120 bytes (approve)",
                "    provenance: session s-1, head abc1234, branch main, client memsync/0.1.0, approved by ann, proposal #4",
                "revision 1  2026-11-01T10:00:00Z  bob  100 bytes",
            ]
        );
    }

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
