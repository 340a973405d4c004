//! `memsync doctor`: checks everything an agent session needs, one line each, and names the
//! command that fixes what is broken. Exit 0 when all is well, 1 when a check failed or warned,
//! 2 when there is no configuration to check (no server or project).

use std::path::{Path, PathBuf};

use base64::Engine;
use memsync::agent::hooks_file::{self, InstalledHook};
use memsync::agent::{Agent, AgentId};
use memsync::api::{ApiClient, ApiError};
use memsync::config::{ProcessEnv, Settings};
use memsync::fsops::{FsError, TeamDir};
use memsync_core::ProjectId;
use serde::Serialize;
use serde_json::json;

use super::{Fail, OK, PROBLEMS, require_project, require_server, roles, runtime, settings_at};
use crate::Global;

/// A token this close to its expiry is worth a warning.
const EXPIRY_WARNING_DAYS: i64 = 7;
/// A clock this far from the server's is worth a warning.
const MAX_CLOCK_SKEW_SECS: i64 = 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
    /// Could not be checked because an earlier check failed.
    Skip,
}

#[derive(Debug, Serialize)]
pub struct Check {
    pub check: &'static str,
    pub status: Status,
    pub message: String,
    /// The command that fixes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn ok(check: &'static str, message: impl Into<String>) -> Check {
    Check {
        check,
        status: Status::Ok,
        message: message.into(),
        fix: None,
    }
}

fn bad(
    check: &'static str,
    status: Status,
    message: impl Into<String>,
    fix: impl Into<String>,
) -> Check {
    Check {
        check,
        status,
        message: message.into(),
        fix: Some(fix.into()),
    }
}

fn skip(check: &'static str, why: impl Into<String>) -> Check {
    Check {
        check,
        status: Status::Skip,
        message: why.into(),
        fix: None,
    }
}

pub fn run(g: &Global, cwd: &Path) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let server = require_server(&settings)?;
    let project = require_project(&settings)?;
    let rt = runtime()?;

    let mut checks = vec![config(&settings, &server, &project)];
    checks.push(team_dir(&settings.team_dir));
    checks.push(state_dir(&settings.state_dir));
    // The agent asked about, then every other agent whose memsync hooks are installed.
    checks.extend(hooks(&settings, settings.agent.adapter(), true));
    for agent in AgentId::ALL {
        if agent != settings.agent && agent.adapter().hooks().is_some() {
            checks.extend(hooks(&settings, agent.adapter(), false));
        }
    }

    // A single sign-on is renewed now, whether due or not: a session needs the renewal to work.
    let sign_in = settings
        .token_stored
        .then(|| super::stored_sign_in(g, &server))
        .flatten();
    let (renewal, token) = match &sign_in {
        Some(s) => {
            let renewal = rt.block_on(s.renew_now(super::LOCK_WAIT));
            let token = match &renewal {
                Ok(fresh) => Some(fresh.token.expose().to_owned()),
                Err(_) => settings.token.as_ref().map(|t| t.expose().to_owned()),
            };
            (Some(renewal), token)
        }
        None => (None, settings.token.as_ref().map(|t| t.expose().to_owned())),
    };
    let api = ApiClient::new(&server, token.as_deref().unwrap_or_default(), g.timeout)
        .map_err(Fail::env)?;
    let health = rt.block_on(api.health());
    let reachable = health.is_ok();
    checks.push(match &health {
        Ok(_) => ok("server", format!("{server} answers")),
        Err(e) => bad(
            "server",
            Status::Fail,
            e.to_string(),
            format!(
                "start the server, or correct its URL where it is set ({}); test it with `curl -sS {server}/healthz`",
                settings.origins.server.as_deref().unwrap_or("the configuration")
            ),
        ),
    });
    checks.push(match &health {
        Ok(Some(date)) => clock(*date, chrono::Utc::now()),
        Ok(None) => skip("clock", "the server sent no Date header"),
        Err(_) => skip("clock", "the server is unreachable"),
    });
    checks.push(match (&token, reachable) {
        (None, _) => bad(
            "token",
            Status::Fail,
            format!("no token for {server}"),
            format!("memsync login --server {server}"),
        ),
        (Some(_), false) => skip("token", "the server is unreachable"),
        (Some(_), true) => {
            let mut c = token_accepted(&rt, &api, &server, &project);
            if sign_in.is_some() && c.fix.is_some() {
                c.fix = Some(format!("memsync login --sso --server {server}"));
            }
            c
        }
    });
    checks.push(match (&token, &renewal, &sign_in) {
        (None, _, _) => skip("token expiry", "no token"),
        (Some(_), Some(renewal), Some(s)) => sso_expiry(renewal, s, chrono::Utc::now()),
        (Some(t), _, _) => expiry(t, chrono::Utc::now(), &server, &project),
    });

    let problems = checks.iter().filter(|c| c.status == Status::Fail).count();
    let warnings = checks.iter().filter(|c| c.status == Status::Warn).count();
    if g.json {
        println!(
            "{}",
            json!({
                "project": project.as_str(), "server": server, "team_dir": settings.team_dir,
                "checks": checks, "problems": problems, "warnings": warnings,
            })
        );
    } else {
        println!(
            "memsync doctor: {project} on {server}, team dir {}",
            settings.team_dir.display()
        );
        for c in &checks {
            let label = match c.status {
                Status::Ok => "ok  ",
                Status::Warn => "WARN",
                Status::Fail => "FAIL",
                Status::Skip => "skip",
            };
            println!("  {label}  {:<13} {}", c.check, c.message);
            if let Some(fix) = &c.fix {
                println!("        {:<13} fix: {fix}", "");
            }
        }
        if problems + warnings == 0 {
            println!("all good");
        } else {
            println!("{problems} problem(s), {warnings} warning(s)");
        }
    }
    Ok(if problems + warnings == 0 {
        OK
    } else {
        PROBLEMS
    })
}

fn config(settings: &Settings, server: &str, project: &ProjectId) -> Check {
    let from = |o: &Option<String>| o.as_deref().unwrap_or("a default").to_owned();
    ok(
        "config",
        format!(
            "server {server} (from {}), project {project} (from {}), token from {}",
            from(&settings.origins.server),
            from(&settings.origins.project),
            settings.origins.token.as_deref().unwrap_or("nowhere")
        ),
    )
}

/// The team dir exists (or can be created), is a real directory, and takes a new file.
fn team_dir(dir: &Path) -> Check {
    let shown = dir.display();
    let team = match TeamDir::open(dir) {
        Ok(t) => t,
        Err(FsError::TeamDirSymlink(_)) => {
            let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
            return bad(
                "team dir",
                Status::Fail,
                format!("{shown} is a symlink; memsync never follows one"),
                format!("export MEMSYNC_TEAM_DIR={}", real.display()),
            );
        }
        Err(e @ FsError::TeamDirNotADir(_)) => {
            return bad(
                "team dir",
                Status::Fail,
                e.to_string(),
                format!("mv {shown} {shown}.bak   (the next `memsync pull` creates the directory)"),
            );
        }
        Err(e) => {
            return bad(
                "team dir",
                Status::Fail,
                e.to_string(),
                format!("mkdir -p {shown} && chmod u+rwx {shown}"),
            );
        }
    };
    // A name of the team dir's own temp files: never synced, removed by the next run if left.
    let probe = team.root().join(format!(
        ".memsync-tmp-doctor-{}",
        uuid::Uuid::new_v4().simple()
    ));
    match writable(&probe) {
        Ok(()) => ok("team dir", format!("{shown} is writable")),
        Err(e) => bad(
            "team dir",
            Status::Fail,
            format!("cannot write in {shown}: {e}"),
            format!("chmod u+rwx {shown}"),
        ),
    }
}

/// The state dir (sync bookkeeping) can be created and takes a new file.
fn state_dir(dir: &Path) -> Check {
    let shown = dir.display();
    let result = std::fs::create_dir_all(dir).and_then(|()| {
        writable(&dir.join(format!(".doctor.tmp-{}", uuid::Uuid::new_v4().simple())))
    });
    match result {
        Ok(()) => ok("state dir", format!("{shown} is writable")),
        Err(e) => bad(
            "state dir",
            Status::Fail,
            format!("cannot write in {shown}: {e}"),
            format!(
                "make {shown} a writable directory (`rm -f {shown} && mkdir -p {shown}`), or export XDG_STATE_HOME=<a writable directory>"
            ),
        ),
    }
}

fn writable(probe: &Path) -> std::io::Result<()> {
    std::fs::write(probe, b"memsync doctor")?;
    std::fs::remove_file(probe)
}

/// memsync's hooks in the project's and the user's Claude Code settings: installed, and running
/// a memsync binary that is there.
/// The checks of one agent's hooks: installed ("hook"), running an existing binary ("hook
/// binary"), and for Codex CLI trusted by Codex ("codex trust"). `asked`: the agent the command
/// is about (nothing installed is a failure); other agents are checked only where memsync's hooks
/// are installed. Checks of agents other than Claude Code are named after the agent.
fn hooks(settings: &Settings, agent: &dyn Agent, asked: bool) -> Vec<Check> {
    let Some(spec) = agent.hooks() else {
        return Vec::new();
    };
    let (hook_check, binary_check, trust_check): (&'static str, &'static str, &'static str) =
        match agent.id() {
            AgentId::Claude => ("hook", "hook binary", ""),
            AgentId::Codex => ("codex hook", "codex binary", "codex trust"),
            AgentId::Gemini => ("gemini hook", "gemini binary", ""),
            AgentId::Copilot => ("copilot hook", "copilot binary", ""),
        };
    let project_file = settings
        .repo
        .as_ref()
        .and_then(|r| agent.project_hooks_file(&r.root));
    let user_file = agent.user_hooks_file(&ProcessEnv);
    let files: Vec<PathBuf> = project_file.iter().chain(&user_file).cloned().collect();
    let flag = match agent.id() {
        AgentId::Claude => String::new(),
        a => format!(" --agent {a}"),
    };
    let install = match &settings.repo {
        Some(r) => format!("cd {} && memsync install-hook{flag}", r.root.display()),
        None => format!("memsync install-hook{flag} --user"),
    };
    let mut found: Vec<(PathBuf, InstalledHook)> = Vec::new();
    for f in &files {
        match hooks_file::installed_hooks(f, spec) {
            Ok(h) => found.extend(h.into_iter().map(|h| (f.clone(), h))),
            Err(e) => {
                return vec![
                    bad(
                        hook_check,
                        Status::Fail,
                        e.to_string(),
                        format!("fix or move {} away, then {install}", f.display()),
                    ),
                    skip(binary_check, "the hooks file cannot be read"),
                ];
            }
        }
    }
    if !asked && found.is_empty() {
        return Vec::new();
    }
    let where_ = |event: &str| {
        found
            .iter()
            .find(|(_, h)| h.event == event)
            .map(|(f, _)| f.display().to_string())
    };
    let listed = files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(" or ");
    let legacy = found
        .iter()
        .find(|(_, h)| h.legacy)
        .filter(|(_, l)| !found.iter().any(|(_, h)| h.event == l.event && !h.legacy));
    let name = agent.name();
    let hook = match (where_("SessionStart"), where_("SessionEnd")) {
        (Some(_), Some(_)) if legacy.is_some() => {
            let (f, h) = legacy.expect("checked");
            bad(
                hook_check,
                Status::Warn,
                format!(
                    "the {} hook in {} runs `{}`, an older memsync's form of it{}",
                    h.event,
                    f.display(),
                    h.command,
                    if agent.id() == AgentId::Claude {
                        ": its pushes carry no session id"
                    } else {
                        ", without `--agent`: it syncs another agent's layout"
                    }
                ),
                install.clone(),
            )
        }
        (Some(s), Some(e)) if s == e => {
            ok(hook_check, format!("SessionStart and SessionEnd in {s}"))
        }
        (Some(s), Some(e)) => ok(
            hook_check,
            format!("SessionStart in {s}, SessionEnd in {e}"),
        ),
        (None, _) => bad(
            hook_check,
            Status::Fail,
            format!(
                "no memsync SessionStart hook in {listed}: {name} sessions start without the team memory"
            ),
            install.clone(),
        ),
        (Some(_), None) => bad(
            hook_check,
            Status::Warn,
            format!(
                "no memsync SessionEnd hook in {listed}: changes are not pushed when a session ends"
            ),
            install.clone(),
        ),
    };
    let mut programs: Vec<&str> = found.iter().map(|(_, h)| h.program.as_str()).collect();
    programs.sort_unstable();
    programs.dedup();
    let binary = if programs.is_empty() {
        skip(binary_check, "no memsync hook installed")
    } else {
        programs
            .iter()
            .map(|p| hook_binary(p, &install, binary_check, name))
            .find(|c| c.status != Status::Ok)
            .unwrap_or_else(|| {
                ok(
                    binary_check,
                    format!("{} exists and is executable", programs.join(", ")),
                )
            })
    };
    let mut checks = vec![hook, binary];
    if agent.id() == AgentId::Codex && !found.is_empty() {
        checks.push(codex_trust(settings, &found, trust_check));
    }
    checks
}

/// Whether Codex trusts memsync's hooks, asked of Codex itself (`codex app-server`,
/// `hooks/list`): an installed hook Codex does not trust never runs, and Codex says nothing.
fn codex_trust(
    settings: &Settings,
    found: &[(PathBuf, InstalledHook)],
    check: &'static str,
) -> Check {
    use memsync::agent::codex;
    let Some(program) = codex::find_codex(&ProcessEnv) else {
        return bad(
            check,
            Status::Warn,
            "cannot ask Codex whether it trusts memsync's hooks: `codex` is not on PATH (or set MEMSYNC_CODEX to it)",
            "put codex on PATH and run `memsync doctor --agent codex` again",
        );
    };
    let cwd = settings
        .repo
        .as_ref()
        .map_or_else(|| settings.project_root.clone(), |r| r.root.clone());
    let listed = match codex::list_hooks(&program, &cwd, codex::APP_SERVER_WAIT) {
        Ok(l) => l,
        Err(e) => {
            return bad(
                check,
                Status::Warn,
                format!("cannot ask Codex whether it trusts memsync's hooks: {e}"),
                format!("run `{} app-server` by hand to see why", program.display()),
            );
        }
    };
    let ours: Vec<&codex::ListedHook> = listed
        .iter()
        .filter(|l| found.iter().any(|(_, h)| h.command == l.command))
        .collect();
    let project_file = found
        .iter()
        .map(|(f, _)| f)
        .find(|f| f.starts_with(&cwd) && settings.repo.is_some());
    if ours.is_empty() {
        return match project_file {
            Some(f) => bad(
                check,
                Status::Fail,
                format!(
                    "Codex does not load memsync's hooks in {}: Codex reads a repository's hooks only in a project you trust",
                    f.display()
                ),
                format!(
                    "start `codex` in {} and say you trust the folder, then trust memsync's hooks when it lists them",
                    cwd.display()
                ),
            ),
            None => bad(
                check,
                Status::Fail,
                "Codex does not list memsync's hooks: they are not in a hooks file Codex reads (check CODEX_HOME)",
                "memsync install-hook --agent codex --user",
            ),
        };
    }
    let untrusted: Vec<String> = ours
        .iter()
        .filter(|l| l.trust_status != "trusted" && l.trust_status != "managed")
        .map(|l| {
            format!(
                "{} ({})",
                if l.event.is_empty() { "hook" } else { &l.event },
                l.trust_status
            )
        })
        .collect();
    if untrusted.is_empty() {
        ok(
            check,
            format!("Codex trusts memsync's {} hook(s)", ours.len()),
        )
    } else {
        bad(
            check,
            Status::Fail,
            format!(
                "memsync's Codex hooks are installed but not trusted, so Codex skips them without a word: {}",
                untrusted.join(", ")
            ),
            format!(
                "start `codex` in {} and choose to trust memsync's hooks when it lists them (or type /hooks in the session); memsync never trusts them for you",
                cwd.display()
            ),
        )
    }
}

fn hook_binary(program: &str, install: &str, check: &'static str, agent: &str) -> Check {
    let reinstall =
        format!("{install}   (writes the absolute path of the memsync you run it with)");
    if !program.contains('/') {
        let on_path = memsync::config::find_on_path(&ProcessEnv, program);
        return match on_path {
            Some(p) => bad(
                check,
                Status::Warn,
                format!(
                    "the hook runs `{program}` from PATH (here {}); {agent} may start with a PATH without it",
                    p.display()
                ),
                reinstall,
            ),
            None => bad(
                check,
                Status::Fail,
                format!("the hook runs `{program}`, which is not on PATH"),
                reinstall,
            ),
        };
    }
    let path = Path::new(program);
    match std::fs::metadata(path) {
        Err(e) => bad(
            check,
            Status::Fail,
            format!("the hook runs {program}, which cannot be used: {e}"),
            reinstall,
        ),
        Ok(_) if !memsync::config::is_executable(path) => bad(
            check,
            Status::Fail,
            format!("the hook runs {program}, which is not an executable file"),
            format!("chmod +x {program}, or {reinstall}"),
        ),
        Ok(_) => ok(check, format!("{program} exists and is executable")),
    }
}

/// The server's `Date` against this machine's clock.
fn clock(server: chrono::DateTime<chrono::Utc>, now: chrono::DateTime<chrono::Utc>) -> Check {
    let skew = (now - server).num_seconds();
    if skew.abs() <= MAX_CLOCK_SKEW_SECS {
        return ok(
            "clock",
            format!("within {}s of the server's", skew.abs().max(1)),
        );
    }
    bad(
        "clock",
        Status::Warn,
        format!(
            "this machine's clock is {}s {} the server's (token expiry and memory ages are judged by it)",
            skew.abs(),
            if skew > 0 { "ahead of" } else { "behind" }
        ),
        "sudo timedatectl set-ntp true   (or sync the clock with your time server)",
    )
}

/// How to get a working token for `project`.
fn new_token(server: &str, project: &ProjectId) -> String {
    format!(
        "ask an admin for a token of team {team} (`memsync-server token issue --user YOU --team {team}`), then `memsync login --server {server}`",
        team = project.team()
    )
}

/// The server accepts the token (`GET /v1/me`: not expired, not revoked, signed by it) and it
/// reaches the project's team.
fn token_accepted(
    rt: &tokio::runtime::Runtime,
    api: &ApiClient,
    server: &str,
    project: &ProjectId,
) -> Check {
    match rt.block_on(api.whoami()) {
        Ok(me) if me.admin || me.teams.contains_key(project.team()) => {
            ok("token", format!("accepted: {}, {}", me.name, roles(&me)))
        }
        Ok(me) => bad(
            "token",
            Status::Fail,
            format!(
                "accepted, but {} ({}) is not in team {}, so it cannot reach {project}",
                me.name,
                roles(&me),
                project.team()
            ),
            new_token(server, project),
        ),
        Err(ApiError::Unauthenticated(m)) => bad(
            "token",
            Status::Fail,
            format!(
                "the server refused the token: {m} (revoked, expired, or issued by another server)"
            ),
            new_token(server, project),
        ),
        Err(e) => bad(
            "token",
            Status::Fail,
            format!("cannot check the token: {e}"),
            format!("curl -sS {server}/v1/me -H \"Authorization: Bearer $MEMSYNC_TOKEN\""),
        ),
    }
}

/// A single sign-on: its identity provider, when its token and refresh token expire, and
/// whether renewing it (just now) worked.
fn sso_expiry(
    renewal: &Result<memsync::sso::Fresh, memsync::sso::RenewError>,
    sign_in: &memsync::sso::StoredSignIn,
    now: chrono::DateTime<chrono::Utc>,
) -> Check {
    let server = sign_in.server();
    let relogin = format!("memsync login --sso --server {server}");
    let Some(d) = sign_in.details() else {
        return bad(
            "token expiry",
            Status::Fail,
            "the single sign-on is gone from the credentials file",
            relogin,
        );
    };
    let at = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%d %H:%M UTC").to_string();
    let refresh = match d.refresh_expires_at {
        Some(t) if t <= now => format!("its refresh token expired on {}", at(t)),
        Some(t) => format!("its refresh token is good until {} at least", at(t)),
        None if d.refresh_token.is_some() => {
            "its refresh token is good as long as the identity provider keeps the session".into()
        }
        None => "no refresh token: sign in again when it expires".into(),
    };
    let head = format!(
        "single sign-on with {} (client {}): the token expires on {}, {refresh}",
        d.issuer,
        d.client_id,
        at(d.expires_at)
    );
    match renewal {
        Ok(fresh) => match &fresh.warning {
            None => ok("token expiry", format!("{head}; renewed just now")),
            Some(w) => bad("token expiry", Status::Warn, w.clone(), relogin),
        },
        Err(e) => bad(
            "token expiry",
            Status::Fail,
            format!("{head}; renewing failed: {}", e.reason),
            relogin,
        ),
    }
}

/// The token's `exp`, read from the JWT itself without checking its signature: it works even
/// when the server is down.
fn jwt_expiry(token: &str) -> Option<i64> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()?
        .get("exp")?
        .as_i64()
}

fn expiry(
    token: &str,
    now: chrono::DateTime<chrono::Utc>,
    server: &str,
    project: &ProjectId,
) -> Check {
    let Some(exp) = jwt_expiry(token) else {
        return bad(
            "token expiry",
            Status::Warn,
            "the token is not a JWT with an `exp`, so its expiry cannot be read",
            new_token(server, project),
        );
    };
    let Some(at) = chrono::DateTime::from_timestamp(exp, 0) else {
        return bad(
            "token expiry",
            Status::Warn,
            format!("the token's `exp` ({exp}) is not a time"),
            new_token(server, project),
        );
    };
    let left = at - now;
    let when = at.format("%Y-%m-%d %H:%M UTC");
    if left <= chrono::Duration::zero() {
        bad(
            "token expiry",
            Status::Fail,
            format!("the token expired on {when}"),
            new_token(server, project),
        )
    } else if left < chrono::Duration::days(EXPIRY_WARNING_DAYS) {
        bad(
            "token expiry",
            Status::Warn,
            format!(
                "the token expires on {when}, in {}",
                humantime::format_duration(std::time::Duration::from_secs(
                    left.num_minutes().max(0) as u64 * 60
                ))
            ),
            new_token(server, project),
        )
    } else {
        ok(
            "token expiry",
            format!("expires on {when}, in {} days", left.num_days()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: serde_json::Value) -> String {
        let enc = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        format!(
            "{}.{}.sig",
            enc(br#"{"alg":"HS256","typ":"JWT"}"#),
            enc(claims.to_string().as_bytes())
        )
    }

    #[test]
    fn expiry_is_read_locally_and_judged() {
        let now = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let p: ProjectId = "acme/api".parse().unwrap();
        let day = 86_400;
        for (exp, want) in [
            (now.timestamp() + 30 * day, Status::Ok),
            (now.timestamp() + 6 * day, Status::Warn),
            (now.timestamp() + 3600, Status::Warn),
            (now.timestamp() - 1, Status::Fail),
        ] {
            let c = expiry(&jwt(json!({ "exp": exp, "sub": "a" })), now, "http://s", &p);
            assert_eq!(c.status, want, "{}", c.message);
            assert_eq!(c.fix.is_some(), want != Status::Ok);
        }
        assert_eq!(expiry("opaque", now, "http://s", &p).status, Status::Warn);
        assert_eq!(jwt_expiry(&jwt(json!({ "exp": 5 }))), Some(5));
    }

    #[test]
    fn clock_skew_over_a_minute_warns() {
        let now = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let secs = chrono::Duration::seconds;
        assert_eq!(clock(now - secs(59), now).status, Status::Ok);
        assert_eq!(clock(now + secs(60), now).status, Status::Ok);
        let ahead = clock(now - secs(600), now);
        assert_eq!(ahead.status, Status::Warn);
        assert!(ahead.message.contains("600s ahead of"), "{}", ahead.message);
        assert!(clock(now + secs(61), now).message.contains("behind"));
    }
}
