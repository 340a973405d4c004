//! The commands, one module per group, and what they share: the failure type that carries the
//! exit code, settings and sessions, and output.
//!
//! Exit codes, everywhere: 0 success, 1 problems found (conflicts, refused files, findings,
//! failed doctor checks), 2 usage or environment errors (bad arguments, no configuration, server
//! unreachable, token refused or lacking rights). When both apply, 2 wins.

pub mod admin;
pub mod agents;
pub mod allowlist;
pub mod auth;
pub mod check;
pub mod doctor;
pub mod hook;
pub mod review;
pub mod sync;
pub mod watch;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use memsync::api::{ApiClient, ApiError};
use memsync::config::{self, Overrides, ProcessEnv, Settings};
use memsync::fsops::TeamDir;
use memsync::state::{State, StateStore};
use memsync::sync::{Engine, SyncError};
use memsync_core::ProjectId;
use memsync_core::wire::{TeamRole, WhoAmI};
use serde_json::json;

use crate::Global;

/// Success.
pub const OK: u8 = 0;
/// Problems found.
pub const PROBLEMS: u8 = 1;
/// Usage or environment error.
pub const ENV: u8 = 2;

/// A failure with its exit code.
#[derive(Debug)]
pub struct Fail {
    pub code: u8,
    pub message: String,
}

impl Fail {
    /// A usage or environment error (exit 2).
    pub fn env(message: impl std::fmt::Display) -> Fail {
        Fail {
            code: ENV,
            message: message.to_string(),
        }
    }

    /// A problem the command found and could not get past (exit 1).
    pub fn problem(message: impl std::fmt::Display) -> Fail {
        Fail {
            code: PROBLEMS,
            message: message.to_string(),
        }
    }
}

impl From<SyncError> for Fail {
    fn from(e: SyncError) -> Fail {
        match &e {
            SyncError::Refused(_) => Fail::problem(e),
            _ => Fail::env(e),
        }
    }
}

impl From<ApiError> for Fail {
    fn from(e: ApiError) -> Fail {
        Fail::env(e)
    }
}

/// Prints a failure (as `{"error":…}` on stdout too with `--json`) and turns the outcome into the
/// process's exit code.
pub fn finish(json: bool, result: Result<u8, Fail>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            if json {
                println!(
                    "{}",
                    json!({ "error": { "message": f.message, "exit_code": f.code } })
                );
            }
            eprintln!("memsync: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

/// A command line clap refused. With `--json` anywhere on it, stdout still gets one JSON
/// document.
pub fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let json = std::env::args_os().skip(1).any(|a| a == "--json");
    if json {
        let rendered = e.to_string();
        let message = rendered
            .lines()
            .next()
            .unwrap_or("invalid command line")
            .trim_start_matches("error: ");
        println!(
            "{}",
            json!({ "error": { "message": format!("{message} (see `memsync --help`)"), "exit_code": ENV } })
        );
    }
    let _ = e.print();
    ExitCode::from(ENV)
}

/// `--timeout 20s`, `--deadline 500ms`, `--ttl 30d`: humantime's syntax.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim())
        .map_err(|e| format!("`{s}` is not a duration like 3s, 500ms or 2m ({e})"))
}

pub fn overrides(g: &Global) -> Overrides {
    Overrides {
        server: g.server.clone(),
        token: g.token.clone(),
        project: g.project.clone(),
        private_dir: g.private_dir.clone(),
        team_dir: g.team_dir.clone(),
        agent: g.agent_id(),
    }
}

pub fn settings_at(g: &Global, cwd: &Path) -> Result<Settings, Fail> {
    config::resolve(cwd, &overrides(g), &ProcessEnv).map_err(Fail::env)
}

pub fn runtime() -> Result<tokio::runtime::Runtime, Fail> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Fail::env(format!("cannot start the async runtime: {e}")))
}

/// The agent session of a push: `--session-id`, else `MEMSYNC_SESSION_ID` (empty counts as
/// unset).
pub fn session_id(flag: Option<String>) -> Option<String> {
    flag.or_else(|| std::env::var(memsync::provenance::ENV_SESSION_ID).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

pub fn cwd() -> Result<PathBuf, Fail> {
    std::env::current_dir()
        .map_err(|e| Fail::env(format!("cannot read the current directory: {e}")))
}

pub fn require_server(settings: &Settings) -> Result<String, Fail> {
    settings.server.clone().ok_or_else(|| {
        Fail::env("no server configured: run `memsync init` in the repository, pass --server, or set MEMSYNC_SERVER")
    })
}

pub fn require_project(settings: &Settings) -> Result<ProjectId, Fail> {
    settings.project.clone().ok_or_else(|| {
        Fail::env("no project: run `memsync init` (it reads the `origin` remote), pass --project team/name, or set MEMSYNC_PROJECT")
    })
}

/// A client for the configured server with the configured token.
pub fn api_client(g: &Global, settings: &Settings) -> Result<ApiClient, Fail> {
    api_client_within(g, settings, LOCK_WAIT)
}

/// A client for the configured server with the configured token. A single sign-on token from
/// the credentials file is renewed first when it is due (within `limit`), and again whenever
/// the server refuses it as expired; never with a prompt.
pub fn api_client_within(
    g: &Global,
    settings: &Settings,
    limit: Duration,
) -> Result<ApiClient, Fail> {
    let server = require_server(settings)?;
    let token = settings.token.as_ref().ok_or_else(|| {
        Fail::env(format!(
            "no token for {server}: run `memsync login --server {server}`, or set MEMSYNC_TOKEN"
        ))
    })?;
    let sign_in = settings
        .token_stored
        .then(|| stored_sign_in(g, &server))
        .flatten();
    let Some(sign_in) = sign_in else {
        return ApiClient::new(&server, token.expose(), g.timeout).map_err(Fail::env);
    };
    let fresh = runtime()?
        .block_on(sign_in.token(limit))
        .map_err(Fail::env)?;
    if let Some(w) = &fresh.warning {
        eprintln!("memsync: {w}");
    }
    Ok(ApiClient::new(&server, fresh.token.expose(), g.timeout)
        .map_err(Fail::env)?
        .with_renew(std::sync::Arc::new(sign_in)))
}

/// The single sign-on stored for `server` in the credentials file, if there is one.
pub fn stored_sign_in(g: &Global, server: &str) -> Option<memsync::sso::StoredSignIn> {
    memsync::sso::StoredSignIn::for_server(server, g.timeout, std::sync::Arc::new(ProcessEnv))
}

/// Everything a sync command needs.
pub struct Session {
    pub settings: Settings,
    pub project: ProjectId,
    pub api: ApiClient,
    pub team: TeamDir,
    pub store: StateStore,
}

impl Session {
    pub fn engine<'a>(
        &'a self,
        api: &'a ApiClient,
        progress: &'a dyn Fn(usize, usize),
    ) -> Engine<'a> {
        Engine {
            api,
            project: &self.project,
            team: &self.team,
            store: &self.store,
            max_file_bytes: memsync_core::memory::DEFAULT_MAX_FILE_BYTES,
            progress,
            repo: self.settings.repo.as_ref(),
            session_id: None,
            page_size: memsync::sync::pull_page_size(),
        }
    }

    pub fn load_state(&self) -> Result<State, Fail> {
        self.store
            .load(self.api.server(), self.project.as_str())
            .map_err(Fail::env)
    }
}

/// How long a command waits for another memsync holding the project's state lock.
pub const LOCK_WAIT: Duration = Duration::from_secs(30);

pub fn session(g: &Global, cwd: &Path, lock_wait: Duration) -> Result<Session, Fail> {
    session_with(g, settings_at(g, cwd)?, lock_wait)
}

/// A session on settings already resolved.
pub fn session_with(g: &Global, settings: Settings, lock_wait: Duration) -> Result<Session, Fail> {
    let project = require_project(&settings)?;
    let api = api_client_within(g, &settings, lock_wait)?;
    let team = TeamDir::open(&settings.team_dir).map_err(Fail::env)?;
    let store = StateStore::open(&settings.state_dir, lock_wait).map_err(Fail::env)?;
    Ok(Session {
        settings,
        project,
        api,
        team,
        store,
    })
}

/// Progress on stderr for big pulls and pushes, when it is a terminal.
pub fn progress(quiet: bool) -> impl Fn(usize, usize) {
    let tty = std::io::stderr().is_terminal() && !quiet;
    move |done, total| {
        if tty && total >= 50 && (done % 25 == 0 || done == total) {
            eprint!("\rmemsync: {done}/{total} files");
            if done == total {
                eprintln!();
            }
        }
    }
}

/// The token an admin command needs, for the message when the server refuses it.
#[derive(Debug, Clone)]
pub enum Need {
    /// Member (or admin) of this team.
    TeamMember(String),
    /// Admin of this team (or a server admin).
    TeamAdmin(String),
    /// A reviewer of this team: a team admin, a user granted the role, or a server admin.
    Reviewer(String),
    /// Admin of any team (sees that team's part) or a server admin (sees everything).
    SomeAdmin,
    ServerAdmin,
}

impl std::fmt::Display for Need {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Need::TeamMember(team) => write!(
                f,
                "a token of team `{team}` (member or admin) or a server-admin token"
            ),
            Need::TeamAdmin(team) => write!(
                f,
                "a team-admin token for team `{team}` (issued with `--team {team}:admin`) or a server-admin token"
            ),
            Need::Reviewer(team) => write!(
                f,
                "a reviewer of team `{team}`: a team-admin token (`--team {team}:admin`), the token of a user a team admin made a reviewer (`memsync admin reviewer add USER --team {team}`), or a server-admin token"
            ),
            Need::SomeAdmin => f.write_str(
                "a team-admin token (it shows its teams' part) or a server-admin token (everything)",
            ),
            Need::ServerAdmin => f.write_str("a server-admin token (issued with `--admin`)"),
        }
    }
}

/// A failed admin request, with what token it needs when the server refused the one sent (403,
/// or 404 for a project the token cannot reach: the server does not tell which).
pub fn admin_failure(
    e: ApiError,
    command: &str,
    need: &Need,
    settings: &Settings,
    api: &ApiClient,
    rt: &tokio::runtime::Runtime,
) -> Fail {
    let team = match need {
        Need::TeamAdmin(t) | Need::TeamMember(t) | Need::Reviewer(t) => Some(t.as_str()),
        _ => None,
    };
    let me = match &e {
        ApiError::Forbidden(_) => rt.block_on(api.whoami()).ok(),
        ApiError::NotFound(_) if team.is_some() => match rt.block_on(api.whoami()) {
            // The token reaches the team: the project or path is really not there.
            Ok(me) if me.admin || team.is_some_and(|t| me.teams.contains_key(t)) => {
                return Fail::env(e);
            }
            me => me.ok(),
        },
        _ => return Fail::env(e),
    };
    let origin = settings
        .origins
        .token
        .clone()
        .unwrap_or_else(|| "the configuration".into());
    let whose = match me {
        Some(me) => format!("{}'s token ({})", me.name, roles(&me)),
        None => "the token".into(),
    };
    let server = api.server();
    Fail::env(format!(
        "{e}\n`memsync {command}` needs {need}. memsync sent {whose}, read from {origin}: admin commands read the token where every command does (--token, then MEMSYNC_TOKEN, then the credentials file of `memsync login`). \
         To use another token: pass --token TOKEN or set MEMSYNC_TOKEN=TOKEN for this command, or store it with `memsync login --server {server}`."
    ))
}

/// "acme:member, ops:admin, server admin", or "no team".
pub fn roles(me: &WhoAmI) -> String {
    let mut r: Vec<String> = me
        .teams
        .iter()
        .map(|(t, role)| match role {
            TeamRole::Admin => format!("{t}:admin"),
            TeamRole::Member => format!("{t}:member"),
        })
        .collect();
    r.extend(me.reviewer.iter().map(|t| format!("{t}:reviewer")));
    if me.admin {
        r.push("server admin".into());
    }
    if r.is_empty() {
        "no team".into()
    } else {
        r.join(", ")
    }
}

/// Prints a value as the command's one JSON document.
pub fn print_json(value: &impl serde::Serialize) -> Result<(), Fail> {
    let text = serde_json::to_string(value).map_err(Fail::env)?;
    println!("{text}");
    Ok(())
}
