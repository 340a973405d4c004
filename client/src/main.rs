//! `memsync`: brings a project's team memories into the local team dir at the start of every
//! agent session and pushes local changes back. Private memories never leave the machine.
//!
//! Exit codes: 0 success, 1 problems found (conflicts, refused files, held deletions), 2 usage or
//! environment errors (configuration, server unreachable, token refused).

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand, ValueEnum};
use memsync::api::ApiClient;
use memsync::config::{self, Credentials, Overrides, ProcessEnv, Settings};
use memsync::fsops::TeamDir;
use memsync::state::{State, StateStore};
use memsync::sync::{self, Engine, Report, Take};
use memsync_core::{MemoryPath, ProjectId};
use serde_json::json;

#[derive(Parser)]
#[command(
    name = "memsync",
    version,
    about = "Team memory sync for coding agents"
)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Args)]
struct Global {
    /// Print one JSON document on stdout instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// Print nothing on success.
    #[arg(long, short, global = true)]
    quiet: bool,
    /// Server URL (env MEMSYNC_SERVER).
    #[arg(long, global = true)]
    server: Option<String>,
    /// API token (env MEMSYNC_TOKEN); prefer `memsync login`.
    #[arg(long, global = true, hide_env_values = true)]
    token: Option<String>,
    /// Project `<team>/<name>` (env MEMSYNC_PROJECT; default: owner/repo of `origin`).
    #[arg(long, global = true)]
    project: Option<String>,
    /// Private memory dir (env MEMSYNC_PRIVATE_DIR).
    #[arg(long, global = true)]
    private_dir: Option<PathBuf>,
    /// Team memory dir (env MEMSYNC_TEAM_DIR; default: <private dir>/team).
    #[arg(long, global = true)]
    team_dir: Option<PathBuf>,
    /// Time limit of each request to the server.
    #[arg(long, global = true, default_value = "20s", value_parser = parse_duration)]
    timeout: Duration,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write .memsync.toml at the repository root.
    Init {
        /// Overwrite an existing .memsync.toml.
        #[arg(long)]
        force: bool,
    },
    /// Store a token for a server (read from --token, or stdin).
    Login,
    /// Forget the token of a server.
    Logout,
    /// Bring the server's changes into the team dir.
    Pull {
        /// First write back tracked files that were deleted locally (e.g. a wiped folder).
        #[arg(long)]
        restore_deleted: bool,
    },
    /// Send local changes of the team dir to the server.
    Push {
        #[arg(long)]
        allow_mass_delete: bool,
    },
    /// Pull, then push.
    Sync {
        #[arg(long)]
        allow_mass_delete: bool,
    },
    /// What is ahead, behind, conflicted or refused.
    Status {
        /// Don't ask the server whether it has newer changes.
        #[arg(long)]
        offline: bool,
    },
    /// Show local changes (or, for a conflict, the server's version against yours).
    Diff { path: Option<String> },
    /// Settle a conflict.
    Resolve {
        path: String,
        #[arg(long, value_enum)]
        take: TakeArg,
    },
    /// Scan files or directories with the team-write guards (secrets, injection, policy).
    Scan {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Every local check of the team dir: guards, memory format, indexes.
    Check,
    /// The project's allowlist of scanner findings (team admins change it).
    #[command(subcommand)]
    Allowlist(AllowlistCmd),
    /// Admin tasks: audit log, history, delete/restore/purge, tokens, projects.
    #[command(subcommand)]
    Admin(AdminCmd),
    /// Hooks for coding agents.
    #[command(subcommand)]
    Hook(HookCmd),
    /// Add memsync's SessionStart and SessionEnd hooks to Claude Code's settings.
    InstallHook {
        /// Install into the user's ~/.claude/settings.json instead of the project's.
        #[arg(long)]
        user: bool,
    },
}

#[derive(Subcommand)]
enum HookCmd {
    /// Claude Code SessionStart hook: pull, then print the team memory context. Never fails.
    SessionStart {
        /// Longest time the pull may take before the last synced copy is used.
        #[arg(long = "deadline", default_value = "3s", value_parser = parse_duration)]
        deadline: Duration,
    },
}

#[derive(Subcommand)]
enum AdminCmd {
    /// The audit log, newest first (team admins: their teams; server admins: everything).
    Audit {
        #[arg(long)]
        team: Option<String>,
        /// Any project (`team/name`); defaults to none (all you may see).
        #[arg(long = "of-project")]
        of_project: Option<String>,
        #[arg(long)]
        actor: Option<String>,
        #[arg(long)]
        action: Option<String>,
        #[arg(long)]
        path: Option<String>,
        /// RFC 3339 time, e.g. 2026-11-01T00:00:00Z.
        #[arg(long)]
        since: Option<String>,
        #[arg(long)]
        until: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: u32,
        /// The `next_cursor` of a previous page.
        #[arg(long)]
        cursor: Option<i64>,
        /// Print CSV instead.
        #[arg(long)]
        csv: bool,
    },
    /// Every version of a memory: who, when, revision, size.
    History { path: String },
    /// The content of one version (the read is audited).
    Show {
        path: String,
        #[arg(long)]
        revision: i64,
    },
    /// A unified diff between two versions (audited).
    Diff {
        path: String,
        #[arg(long)]
        from: i64,
        #[arg(long)]
        to: i64,
    },
    /// Delete a memory for everyone.
    Rm {
        path: String,
        #[arg(long)]
        reason: String,
    },
    /// Bring an earlier version back for everyone.
    Restore {
        path: String,
        #[arg(long)]
        revision: i64,
        #[arg(long)]
        reason: String,
    },
    /// Erase a memory's content from every stored version (leaked secret, personal data).
    Purge {
        path: String,
        #[arg(long)]
        reason: String,
        /// Required: a purge cannot be undone.
        #[arg(long)]
        yes: bool,
    },
    /// Tokens (server admins).
    #[command(subcommand)]
    Tokens(TokensCmd),
    /// Projects with sizes and last activity; archive or unarchive one.
    Projects {
        #[arg(long, conflicts_with = "unarchive")]
        archive: Option<String>,
        #[arg(long)]
        unarchive: Option<String>,
    },
}

#[derive(Subcommand)]
enum TokensCmd {
    List,
    Issue {
        #[arg(long)]
        user: String,
        #[arg(long)]
        email: Option<String>,
        /// TEAM or TEAM:admin; repeatable.
        #[arg(long = "team")]
        teams: Vec<String>,
        #[arg(long)]
        admin: bool,
        #[arg(long)]
        ttl_days: Option<u32>,
    },
    Revoke {
        jti: String,
    },
}

#[derive(Subcommand)]
enum AllowlistCmd {
    /// List the allowlisted findings.
    List,
    /// Let one exact finding through for this project (its fingerprint from a refused push or
    /// `memsync scan --json`).
    Add {
        fingerprint: memsync_core::text::Text,
        #[arg(long)]
        rule: memsync_core::text::Text,
        #[arg(long)]
        reason: memsync_core::text::Text,
    },
    /// Remove an entry.
    Remove { fingerprint: String },
}

#[derive(Clone, Copy, ValueEnum)]
enum TakeArg {
    Local,
    Server,
    Merged,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s.split_at(
        s.find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(s.len()),
    );
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration like 3s or 500ms"))?;
    let secs = match unit {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" => n * 60.0,
        _ => return Err(format!("`{s}` is not a duration like 3s or 500ms")),
    };
    Ok(Duration::from_secs_f64(secs))
}

/// A failure with its exit code.
struct Fail {
    code: u8,
    message: String,
}

impl Fail {
    fn env(message: impl std::fmt::Display) -> Fail {
        Fail {
            code: 2,
            message: message.to_string(),
        }
    }
}

impl From<sync::SyncError> for Fail {
    fn from(e: sync::SyncError) -> Fail {
        let code = match &e {
            sync::SyncError::Refused(_) => 1,
            _ => 2,
        };
        Fail {
            code,
            message: e.to_string(),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.global.json;
    let result = match cli.command {
        Cmd::Hook(HookCmd::SessionStart { deadline }) => {
            hook_session_start(&cli.global, deadline);
            return ExitCode::SUCCESS;
        }
        cmd => run(&cli.global, cmd),
    };
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

fn overrides(g: &Global) -> Overrides {
    Overrides {
        server: g.server.clone(),
        token: g.token.clone(),
        project: g.project.clone(),
        private_dir: g.private_dir.clone(),
        team_dir: g.team_dir.clone(),
    }
}

fn settings_at(g: &Global, cwd: &Path) -> Result<Settings, Fail> {
    config::resolve(cwd, &overrides(g), &ProcessEnv).map_err(Fail::env)
}

fn runtime() -> Result<tokio::runtime::Runtime, Fail> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Fail::env(format!("cannot start the async runtime: {e}")))
}

/// Everything a sync command needs.
struct Session {
    settings: Settings,
    project: ProjectId,
    api: ApiClient,
    team: TeamDir,
    store: StateStore,
}

impl Session {
    fn engine<'a>(&'a self, api: &'a ApiClient, progress: &'a dyn Fn(usize, usize)) -> Engine<'a> {
        Engine {
            api,
            project: &self.project,
            team: &self.team,
            store: &self.store,
            max_file_bytes: memsync_core::memory::DEFAULT_MAX_FILE_BYTES,
            progress,
        }
    }

    fn load_state(&self) -> Result<State, Fail> {
        self.store
            .load(self.api.server(), self.project.as_str())
            .map_err(Fail::env)
    }
}

fn session(g: &Global, cwd: &Path, lock_wait: Duration) -> Result<Session, Fail> {
    let settings = settings_at(g, cwd)?;
    let server = settings.server.clone().ok_or_else(|| {
        Fail::env("no server configured: run `memsync init` in the repository, pass --server, or set MEMSYNC_SERVER")
    })?;
    let project = settings.project.clone().ok_or_else(|| {
        Fail::env("no project: run `memsync init` (it reads the `origin` remote), pass --project team/name, or set MEMSYNC_PROJECT")
    })?;
    let token = settings.token.as_ref().ok_or_else(|| {
        Fail::env(format!(
            "no token for {server}: run `memsync login --server {server}`"
        ))
    })?;
    let api = ApiClient::new(&server, token.expose(), g.timeout).map_err(Fail::env)?;
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

fn progress(quiet: bool) -> impl Fn(usize, usize) {
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

fn cwd() -> Result<PathBuf, Fail> {
    std::env::current_dir()
        .map_err(|e| Fail::env(format!("cannot read the current directory: {e}")))
}

fn run(g: &Global, cmd: Cmd) -> Result<u8, Fail> {
    let cwd = cwd()?;
    match cmd {
        Cmd::Init { force } => init(g, &cwd, force),
        Cmd::Login => login(g, &cwd),
        Cmd::Logout => logout(g, &cwd),
        Cmd::Pull { .. } | Cmd::Push { .. } | Cmd::Sync { .. } => {
            let s = session(g, &cwd, Duration::from_secs(30))?;
            let mut state = s.load_state()?;
            let prog = progress(g.quiet);
            let engine = s.engine(&s.api, &prog);
            let rt = runtime()?;
            let (pull, push) = match cmd {
                Cmd::Pull { restore_deleted } => {
                    let restored = if restore_deleted {
                        engine.restore_deleted(&state)?
                    } else {
                        Vec::new()
                    };
                    let mut r = rt.block_on(engine.pull(&mut state))?;
                    r.updated.extend(restored);
                    (Some(r), None)
                }
                Cmd::Push { allow_mass_delete } => (
                    None,
                    Some(rt.block_on(engine.push(&mut state, allow_mass_delete))?),
                ),
                Cmd::Sync { allow_mass_delete } => {
                    let pulled = rt.block_on(engine.pull(&mut state))?;
                    let pushed = rt.block_on(engine.push(&mut state, allow_mass_delete))?;
                    (Some(pulled), Some(pushed))
                }
                _ => (None, None),
            };
            let problems = pull.as_ref().is_some_and(Report::has_problems)
                || push.as_ref().is_some_and(Report::has_problems);
            if g.json {
                println!(
                    "{}",
                    json!({ "project": s.project.as_str(), "team_dir": s.settings.team_dir, "pull": pull, "push": push })
                );
            } else if !g.quiet || problems {
                if let Some(r) = &pull {
                    print_report("pull", r, &s.settings.team_dir);
                }
                if let Some(r) = &push {
                    print_report("push", r, &s.settings.team_dir);
                }
            }
            Ok(u8::from(problems))
        }
        Cmd::Status { offline } => status(g, &cwd, offline),
        Cmd::Diff { path } => diff(g, &cwd, path.as_deref()),
        Cmd::Resolve { path, take } => {
            let s = session(g, &cwd, Duration::from_secs(30))?;
            let mut state = s.load_state()?;
            let path = MemoryPath::parse(&path).map_err(|e| Fail::env(format!("{path}: {e}")))?;
            let take = match take {
                TakeArg::Local => Take::Local,
                TakeArg::Server => Take::Server,
                TakeArg::Merged => Take::Merged,
            };
            let msg = sync::resolve(&s.team, &s.store, &mut state, &path, take)?;
            if g.json {
                println!(
                    "{}",
                    json!({ "path": path.as_str(), "message": msg, "open_conflicts": state.conflicts.len() })
                );
            } else if !g.quiet {
                println!("{msg}");
            }
            Ok(0)
        }
        Cmd::InstallHook { user } => {
            let path = if user {
                memsync::claude::user_settings_path(&ProcessEnv)
                    .ok_or_else(|| Fail::env("HOME is not set"))?
            } else {
                let repo = config::find_repo(&cwd).ok_or_else(|| {
                    Fail::env("not inside a git repository; run it in the project, or use --user for ~/.claude/settings.json")
                })?;
                memsync::claude::project_settings_path(&repo.root)
            };
            let out = memsync::claude::install_hooks(&path).map_err(Fail::env)?;
            if g.json {
                println!(
                    "{}",
                    json!({ "settings": out.path, "changed": out.changed, "added": out.added })
                );
            } else if !g.quiet {
                if out.changed {
                    println!(
                        "added memsync's {} hook(s) to {}",
                        out.added.join(" and "),
                        out.path.display()
                    );
                } else {
                    println!("memsync's hooks are already in {}", out.path.display());
                }
            }
            Ok(0)
        }
        Cmd::Scan { paths } => {
            let report = memsync::check::scan_paths(&paths);
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
        Cmd::Check => {
            let settings = settings_at(g, &cwd)?;
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
        Cmd::Allowlist(cmd) => {
            let settings = settings_at(g, &cwd)?;
            let (server, project) = match (&settings.server, &settings.project) {
                (Some(s), Some(p)) => (s.clone(), p.clone()),
                _ => {
                    return Err(Fail::env(
                        "no server or project configured: run `memsync init`, or pass --server and --project",
                    ));
                }
            };
            let token = settings.token.as_ref().ok_or_else(|| {
                Fail::env(format!(
                    "no token for {server}: run `memsync login --server {server}`"
                ))
            })?;
            let api = ApiClient::new(&server, token.expose(), g.timeout).map_err(Fail::env)?;
            let rt = runtime()?;
            let list = match cmd {
                AllowlistCmd::List => rt.block_on(api.allowlist(&project)).map_err(Fail::env)?,
                AllowlistCmd::Add {
                    fingerprint,
                    rule,
                    reason,
                } => rt
                    .block_on(api.allowlist_add(
                        &project,
                        &memsync_core::wire::AllowlistAdd {
                            fingerprint,
                            rule,
                            reason,
                        },
                    ))
                    .map_err(Fail::env)?,
                AllowlistCmd::Remove { fingerprint } => {
                    rt.block_on(api.allowlist_remove(&project, &fingerprint))
                        .map_err(Fail::env)?;
                    rt.block_on(api.allowlist(&project)).map_err(Fail::env)?
                }
            };
            if g.json {
                println!("{}", serde_json::to_string(&list).map_err(Fail::env)?);
            } else if !g.quiet {
                if list.entries.is_empty() {
                    println!("{project}: the allowlist is empty");
                }
                for e in &list.entries {
                    println!(
                        "{}  {}  by {} on {}: {}",
                        e.fingerprint, e.rule, e.added_by, e.created_at, e.reason
                    );
                }
            }
            Ok(0)
        }
        Cmd::Admin(cmd) => admin(g, &cwd, cmd),
        Cmd::Hook(_) => Ok(0),
    }
}

fn print_report(what: &str, r: &Report, team_dir: &Path) {
    if what == "pull" {
        if r.not_modified {
            println!("{}: up to date (revision {})", r.project, r.revision);
        } else {
            println!(
                "{}: pulled to revision {} into {}: {} updated, {} deleted, {} merged",
                r.project,
                r.revision,
                team_dir.display(),
                r.updated.len(),
                r.deleted.len(),
                r.merged.len()
            );
        }
    } else if r.pushed.is_empty() && r.pushed_deletes.is_empty() {
        println!("{}: nothing to push", r.project);
    } else {
        println!(
            "{}: pushed {} file(s), {} deletion(s){}",
            r.project,
            r.pushed.len(),
            r.pushed_deletes.len(),
            if r.merged.is_empty() {
                String::new()
            } else {
                format!("; merged with concurrent edits: {}", r.merged.join(", "))
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
            "  nothing was uploaded: fix the findings above (or have a team admin allowlist a false alarm), then push again"
        );
    }
}

fn init(g: &Global, cwd: &Path, force: bool) -> Result<u8, Fail> {
    let repo = config::find_repo(cwd).ok_or_else(|| {
        Fail::env("not inside a git repository: run `memsync init` at the project's repository")
    })?;
    let path = repo.root.join(".memsync.toml");
    let existing = config::ProjectFile::load(&path).map_err(Fail::env)?;
    if existing.is_some() && !force {
        return Err(Fail::env(format!(
            "{} exists; pass --force to overwrite it",
            path.display()
        )));
    }
    let project = match &g.project {
        Some(p) => p
            .parse::<ProjectId>()
            .map_err(|e| Fail::env(format!("--project {p}: {e}")))?,
        None => config::origin_project(&repo).ok_or_else(|| {
            Fail::env(
                "cannot derive the project from the `origin` remote; pass --project team/name",
            )
        })?,
    };
    let server = match &g.server {
        Some(s) => Some(s.clone()),
        None => std::env::var("MEMSYNC_SERVER").ok().or_else(|| {
            Credentials::load(&ProcessEnv)
                .ok()
                .and_then(|c| c.default_server().map(str::to_owned))
        }),
    };
    let file = config::ProjectFile {
        server: server.clone(),
        project: Some(project.to_string()),
        private_dir: None,
        team_dir: None,
    };
    file.save(&path).map_err(Fail::env)?;
    if g.json {
        println!(
            "{}",
            json!({ "config": path, "project": project.as_str(), "server": server })
        );
    } else if !g.quiet {
        println!(
            "wrote {} (project {project}{})",
            path.display(),
            server.map(|s| format!(", server {s}")).unwrap_or_default()
        );
        println!(
            "commit it so the team shares it; then `memsync login` and `memsync install-hook`"
        );
    }
    Ok(0)
}

fn login(g: &Global, cwd: &Path) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let server = settings
        .server
        .clone()
        .ok_or_else(|| Fail::env("which server? pass --server URL"))?;
    let token = match &g.token {
        Some(t) => t.clone(),
        None => {
            if std::io::stdin().is_terminal() {
                eprint!("paste the token for {server} and press Enter: ");
                let _ = std::io::stderr().flush();
            }
            let mut t = String::new();
            std::io::stdin()
                .take(64 * 1024)
                .read_to_string(&mut t)
                .map_err(|e| Fail::env(format!("reading the token from stdin: {e}")))?;
            t.trim().to_owned()
        }
    };
    if token.is_empty() {
        return Err(Fail::env(
            "no token given (pass --token or pipe it on stdin)",
        ));
    }
    let api = ApiClient::new(&server, &token, g.timeout).map_err(Fail::env)?;
    let me = runtime()?.block_on(api.whoami()).map_err(Fail::env)?;
    let mut creds = Credentials::load(&ProcessEnv).map_err(Fail::env)?;
    creds.set(&server, &token);
    let path = creds.save(&ProcessEnv).map_err(Fail::env)?;
    if g.json {
        println!(
            "{}",
            json!({ "server": server, "user": me.name, "teams": me.teams, "credentials": path })
        );
    } else if !g.quiet {
        let teams: Vec<&String> = me.teams.keys().collect();
        println!(
            "logged in to {server} as {} (teams: {teams:?}); token saved in {}",
            me.name,
            path.display()
        );
    }
    Ok(0)
}

fn logout(g: &Global, cwd: &Path) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let server = settings
        .server
        .ok_or_else(|| Fail::env("which server? pass --server URL"))?;
    let mut creds = Credentials::load(&ProcessEnv).map_err(Fail::env)?;
    let removed = creds.remove(&server);
    creds.save(&ProcessEnv).map_err(Fail::env)?;
    if g.json {
        println!("{}", json!({ "server": server, "removed": removed }));
    } else if !g.quiet {
        println!(
            "{}",
            if removed {
                format!("forgot the token for {server}")
            } else {
                format!("no token stored for {server}")
            }
        );
    }
    Ok(0)
}

fn status(g: &Global, cwd: &Path, offline: bool) -> Result<u8, Fail> {
    let s = session(g, cwd, Duration::from_secs(30))?;
    let state = s.load_state()?;
    let local = sync::local_status(&s.team, &state).map_err(Fail::env)?;
    let (server_revision, server_error) = if offline {
        (None, None)
    } else {
        match runtime()?.block_on(s.api.project_info(&s.project)) {
            Ok(info) => (Some(info.revision), None),
            Err(e) => (None, Some(e.to_string())),
        }
    };
    let behind = server_revision.map(|r| r > state.revision);
    let problems =
        !local.conflicts.is_empty() || !local.refused.is_empty() || !local.skipped.is_empty();
    if g.json {
        println!(
            "{}",
            json!({
                "project": s.project.as_str(), "team_dir": s.settings.team_dir, "revision": state.revision,
                "server_revision": server_revision, "behind": behind, "server_error": server_error,
                "ahead": { "modified": local.modified, "added": local.added, "deleted": local.deleted },
                "conflicts": local.conflicts, "refused": local.refused, "skipped": local.skipped,
                "last_pull_at": state.last_pull_at,
            })
        );
    } else {
        println!(
            "{} in {} at revision {}",
            s.project,
            s.settings.team_dir.display(),
            state.revision
        );
        match (server_revision, &server_error) {
            (Some(r), _) if r > state.revision => {
                println!("  behind: the server is at revision {r}; run `memsync pull`")
            }
            (Some(_), _) => println!("  up to date with the server"),
            (None, Some(e)) => println!("  server: {e}"),
            (None, None) => {}
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
    }
    Ok(u8::from(problems))
}

fn diff(g: &Global, cwd: &Path, only: Option<&str>) -> Result<u8, Fail> {
    let s = session(g, cwd, Duration::from_secs(30))?;
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
    if let Some(p) = only {
        let p = MemoryPath::parse(p).map_err(|e| Fail::env(format!("{p}: {e}")))?;
        paths.retain(|x| x == p.as_str());
        if paths.is_empty() {
            if !g.quiet && !g.json {
                println!("{p}: no local changes");
            }
            if g.json {
                println!("{}", json!({ "diffs": [] }));
            }
            return Ok(0);
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
    Ok(0)
}

/// The SessionStart hook never fails the session: every error becomes one line of context.
fn hook_session_start(g: &Global, deadline: Duration) {
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

/// Percent-encodes a query value.
fn q(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn admin(g: &Global, cwd: &Path, cmd: AdminCmd) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let server = settings
        .server
        .clone()
        .ok_or_else(|| Fail::env("no server configured: run `memsync init`, or pass --server"))?;
    let token = settings.token.as_ref().ok_or_else(|| {
        Fail::env(format!(
            "no token for {server}: run `memsync login --server {server}`"
        ))
    })?;
    let api = ApiClient::new(&server, token.expose(), g.timeout).map_err(Fail::env)?;
    let rt = runtime()?;
    let project = || {
        settings
            .project
            .clone()
            .ok_or_else(|| Fail::env("no project: run `memsync init`, or pass --project team/name"))
    };
    let base = |p: &ProjectId| format!("/v1/admin/projects/{p}");
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
            let mut query = vec![format!("limit={limit}")];
            for (k, v) in [
                ("team", team),
                ("project", of_project),
                ("actor", actor),
                ("action", action),
                ("path", path),
                ("since", since),
                ("until", until),
            ] {
                if let Some(v) = v {
                    query.push(format!("{k}={}", q(&v)));
                }
            }
            if let Some(c) = cursor {
                query.push(format!("cursor={c}"));
            }
            if csv {
                query.push("format=csv".into());
                let text = rt
                    .block_on(api.get_text(&format!("/v1/admin/audit?{}", query.join("&")), None))
                    .map_err(Fail::env)?;
                print!("{text}");
                return Ok(0);
            }
            rt.block_on(api.get_json(&format!("/v1/admin/audit?{}", query.join("&")), None))
                .map_err(Fail::env)?
        }
        AdminCmd::History { path } => {
            let p = project()?;
            rt.block_on(api.get_json(&format!("{}/history?path={}", base(&p), q(&path)), Some(&p)))
                .map_err(Fail::env)?
        }
        AdminCmd::Show { path, revision } => {
            let p = project()?;
            let v = rt
                .block_on(api.get_json(
                    &format!("{}/version?path={}&revision={revision}", base(&p), q(&path)),
                    Some(&p),
                ))
                .map_err(Fail::env)?;
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
            let p = project()?;
            let v = rt
                .block_on(api.get_json(
                    &format!("{}/diff?path={}&from={from}&to={to}", base(&p), q(&path)),
                    Some(&p),
                ))
                .map_err(Fail::env)?;
            if !g.json {
                print!("{}", v["diff"].as_str().unwrap_or_default());
                return Ok(0);
            }
            v
        }
        AdminCmd::Rm { path, reason } => {
            let p = project()?;
            rt.block_on(api.post_json(
                &format!("{}/delete", base(&p)),
                &json!({ "path": path, "reason": reason }),
                Some(&p),
            ))
            .map_err(Fail::env)?
        }
        AdminCmd::Restore {
            path,
            revision,
            reason,
        } => {
            let p = project()?;
            rt.block_on(api.post_json(
                &format!("{}/restore", base(&p)),
                &json!({ "path": path, "revision": revision, "reason": reason }),
                Some(&p),
            ))
            .map_err(Fail::env)?
        }
        AdminCmd::Purge { path, reason, yes } => {
            if !yes {
                return Err(Fail::env(
                    "a purge erases every version of the file for good; add --yes to confirm",
                ));
            }
            let p = project()?;
            rt.block_on(api.post_json(
                &format!("{}/purge", base(&p)),
                &json!({ "path": path, "reason": reason }),
                Some(&p),
            ))
            .map_err(Fail::env)?
        }
        AdminCmd::Tokens(t) => match t {
            TokensCmd::List => rt
                .block_on(api.get_json("/v1/admin/tokens", None))
                .map_err(Fail::env)?,
            TokensCmd::Issue {
                user,
                email,
                teams,
                admin,
                ttl_days,
            } => {
                let mut map = serde_json::Map::new();
                for spec in teams {
                    let (team, role) = match spec.split_once(':') {
                        Some((t, "admin")) => (t.to_owned(), "admin"),
                        Some((t, "member")) | Some((t, "")) => (t.to_owned(), "member"),
                        Some(_) => {
                            return Err(Fail::env(format!(
                                "--team {spec}: use TEAM or TEAM:admin"
                            )));
                        }
                        None => (spec.clone(), "member"),
                    };
                    map.insert(team, json!(role));
                }
                let v = rt
                    .block_on(api.post_json(
                        "/v1/admin/tokens",
                        &json!({ "user": user, "email": email, "teams": map, "admin": admin, "ttl_days": ttl_days }),
                        None,
                    ))
                    .map_err(Fail::env)?;
                if !g.json {
                    // The token alone on stdout, so TOKEN=$(memsync admin tokens issue …) works.
                    println!("{}", v["token"].as_str().unwrap_or_default());
                    return Ok(0);
                }
                v
            }
            TokensCmd::Revoke { jti } => {
                rt.block_on(api.delete_path(&format!("/v1/admin/tokens/{}", q(&jti)), None))
                    .map_err(Fail::env)?;
                json!({ "revoked": jti })
            }
        },
        AdminCmd::Projects { archive, unarchive } => {
            if let Some((name, archived)) =
                archive.map(|a| (a, true)).or(unarchive.map(|u| (u, false)))
            {
                let p: ProjectId = name
                    .parse()
                    .map_err(|e| Fail::env(format!("{name}: {e}")))?;
                rt.block_on(api.post_json(
                    &format!("{}/archive", base(&p)),
                    &json!({ "archived": archived }),
                    Some(&p),
                ))
                .map_err(Fail::env)?
            } else {
                rt.block_on(api.get_json("/v1/admin/projects", None))
                    .map_err(Fail::env)?
            }
        }
    };
    if g.json || !g.quiet {
        println!(
            "{}",
            if g.json {
                out.to_string()
            } else {
                serde_json::to_string_pretty(&out).unwrap_or_default()
            }
        );
    }
    Ok(0)
}
