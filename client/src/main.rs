//! `memsync`: brings a project's team memories into the local team dir at the start of every
//! agent session and pushes local changes back. This file is the command line: its arguments
//! and the dispatch to `cmd/`, one module per command group.
//!
//! Exit codes: 0 success, 1 problems found (conflicts, refused files, held deletions), 2 usage or
//! environment errors (configuration, server unreachable, token refused).

mod cmd;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use memsync::sync::Take;
use memsync_core::text::Text;

use cmd::Fail;

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

#[derive(Args, Clone)]
pub(crate) struct Global {
    /// Print one JSON document on stdout instead of text.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Print nothing on success.
    #[arg(long, short, global = true)]
    pub(crate) quiet: bool,
    /// Server URL (env MEMSYNC_SERVER).
    #[arg(long, global = true)]
    pub(crate) server: Option<String>,
    /// API token (env MEMSYNC_TOKEN); prefer `memsync login`.
    #[arg(long, global = true, hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// Project `<team>/<name>` (env MEMSYNC_PROJECT; default: owner/repo of `origin`).
    #[arg(long, global = true)]
    pub(crate) project: Option<String>,
    /// Private memory dir (env MEMSYNC_PRIVATE_DIR).
    #[arg(long, global = true)]
    pub(crate) private_dir: Option<PathBuf>,
    /// Team memory dir (env MEMSYNC_TEAM_DIR; default: <private dir>/team).
    #[arg(long, global = true)]
    pub(crate) team_dir: Option<PathBuf>,
    /// Time limit of each attempt of a request to the server (reads and writes with an
    /// Idempotency-Key are tried up to 3 times; other writes once).
    #[arg(long, global = true, default_value = "20s", value_parser = cmd::parse_duration)]
    pub(crate) timeout: Duration,
    /// The agent whose memory layout the command works on: claude (the default), codex,
    /// gemini, copilot; `install-hook` also takes `auto` (every agent set up in the
    /// repository).
    #[arg(long, global = true, value_parser = parse_agent)]
    pub(crate) agent: Option<AgentChoice>,
}

impl Global {
    /// The agent whose layout the command works on: `--agent NAME`, else Claude Code (also
    /// for `auto`, which only `install-hook` takes).
    pub(crate) fn agent_id(&self) -> memsync::agent::AgentId {
        match self.agent {
            Some(AgentChoice::One(a)) => a,
            _ => memsync::agent::AgentId::Claude,
        }
    }
}

/// `--agent NAME` or `--agent auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AgentChoice {
    One(memsync::agent::AgentId),
    Auto,
}

fn parse_agent(s: &str) -> Result<AgentChoice, String> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(AgentChoice::Auto);
    }
    memsync::agent::AgentId::parse(s).map(AgentChoice::One)
}

#[derive(Subcommand)]
pub(crate) enum Cmd {
    /// Write .memsync.toml at the repository root.
    Init {
        /// Overwrite an existing .memsync.toml.
        #[arg(long)]
        force: bool,
    },
    /// Store a token for a server (read from --token, or stdin), or sign in with the company's
    /// identity provider (--sso).
    Login(LoginArgs),
    /// Forget the token of a server.
    Logout,
    /// Bring the server's changes into the team dir.
    Pull {
        /// First write back tracked files that were deleted locally (e.g. a wiped folder).
        #[arg(long)]
        restore_deleted: bool,
    },
    /// Send local changes of the team dir to the server (under review: propose them).
    Push {
        #[arg(long)]
        allow_mass_delete: bool,
        /// The agent session that wrote the changes, kept in the provenance of every version
        /// the push makes (env MEMSYNC_SESSION_ID).
        #[arg(long)]
        session_id: Option<String>,
    },
    /// Pull, then push.
    Sync {
        #[arg(long)]
        allow_mass_delete: bool,
        /// As for `push`.
        #[arg(long)]
        session_id: Option<String>,
    },
    /// What is ahead, behind, conflicted or refused.
    Status {
        /// Don't ask the server whether it has newer changes.
        #[arg(long)]
        offline: bool,
    },
    /// Show local changes (or, for a conflict, the server's version against yours).
    Diff {
        /// A memory or directory of the team dir: absolute, relative to the current directory
        /// when that points into the team dir, else relative to the team dir.
        path: Option<PathBuf>,
    },
    /// Settle a conflict.
    Resolve {
        /// The conflicted memory (a path like diff's).
        path: PathBuf,
        #[arg(long, value_enum)]
        take: TakeArg,
    },
    /// Scan files or directories with the team-write guards (secrets, injection, policy).
    Scan {
        /// Any file or directory (as given when it exists, else looked up in the team dir).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Every local check: guards, memory format, indexes, private vs team feedback, and
    /// memories naming repository paths that no longer exist.
    Check,
    /// Review proposed changes (reviewers), or see your own proposals.
    #[command(subcommand)]
    Review(ReviewCmd),
    /// The project's allowlist of scanner findings (team admins change it).
    #[command(subcommand)]
    Allowlist(AllowlistCmd),
    /// Admin tasks: audit log, history, delete/restore/purge, tokens, projects.
    #[command(subcommand)]
    Admin(AdminCmd),
    /// Hooks for coding agents.
    #[command(subcommand)]
    Hook(HookCmd),
    /// Check everything a session needs (hook, server, token, clock, dirs) and say how to fix it.
    Doctor,
    /// Write the team index into the instruction file an agent reads at start, in a block
    /// memsync owns (the rest of the file stays byte for byte); every `memsync pull` keeps it
    /// current. For agents without a session hook memsync uses (--agent gemini, copilot).
    Render(RenderArgs),
    /// Keep the team dir live, in the foreground: pull when the server announces a change, push
    /// local changes after a quiet period. Stops on Ctrl-C or SIGTERM.
    Watch {
        /// How long the team dir must stay unchanged before its changes are pushed.
        #[arg(long, default_value = "2s", value_parser = cmd::parse_duration)]
        quiet_period: Duration,
        /// Stop when this process has exited (checked every second); the session-start hook
        /// passes the agent's.
        #[arg(long, value_name = "PID")]
        until_pid: Option<i32>,
        /// As for `push`: kept in the provenance of what the watch pushes.
        #[arg(long)]
        session_id: Option<String>,
    },
    /// Add memsync's SessionStart and SessionEnd hooks to an agent's hooks file (Claude Code's
    /// .claude/settings.json by default; --agent codex: .codex/hooks.json; --agent auto: every
    /// agent set up in the repository). Agents without a session hook memsync uses get the
    /// team index in their instruction file (as `memsync render`).
    InstallHook {
        /// Install into the user's file (~/.claude/settings.json, ~/.codex/hooks.json) instead
        /// of the project's.
        #[arg(long)]
        user: bool,
        /// Take memsync's hooks (or rendered block) out again, keeping everything else.
        #[arg(long, conflicts_with_all = ["watch", "no_watch", "trust"])]
        remove: bool,
        /// Codex CLI: ask Codex (its app-server) to trust memsync's hooks, as its /hooks screen
        /// does; Codex computes and records the hashes. Without it, install-hook says how to
        /// trust them in Codex.
        #[arg(long)]
        trust: bool,
        /// Also keep the team dir live during each session: the SessionStart hook starts
        /// `memsync watch` for the session, the SessionEnd hook stops it.
        #[arg(long, conflicts_with = "no_watch")]
        watch: bool,
        /// Take `--watch` off memsync's SessionStart hook again.
        #[arg(long)]
        no_watch: bool,
    },
}

#[derive(Args)]
pub(crate) struct RenderArgs {
    /// The file to write the block into (default: the agent's instruction file at the
    /// repository root: AGENTS.md, GEMINI.md, .github/copilot-instructions.md, CLAUDE.md).
    #[arg(long)]
    pub(crate) file: Option<PathBuf>,
    /// Overwrite memsync's block even when it was edited by hand.
    #[arg(long)]
    pub(crate) force: bool,
    /// Take memsync's block out of the file and stop refreshing it.
    #[arg(long, conflicts_with = "force")]
    pub(crate) remove: bool,
}

#[derive(Args)]
pub(crate) struct LoginArgs {
    /// Sign in with the identity provider the server trusts (OpenID Connect): a code to approve
    /// in any browser, or with --browser this machine's browser. The token renews by itself.
    #[arg(long, conflicts_with = "token")]
    pub(crate) sso: bool,
    /// The identity provider's issuer URL (default: the one the server names; required when it
    /// names several).
    #[arg(long, requires = "sso", value_name = "URL")]
    pub(crate) issuer: Option<String>,
    /// The OAuth client memsync signs in as (default: the one the server names).
    #[arg(long, requires = "sso", value_name = "ID")]
    pub(crate) client_id: Option<String>,
    /// Sign in with a browser on this machine (authorization code with PKCE and a loopback
    /// redirect) instead of a device code.
    #[arg(long, requires = "sso")]
    pub(crate) browser: bool,
    /// How long to wait for the sign-in to be completed.
    #[arg(long, requires = "sso", default_value = "10m", value_parser = cmd::parse_duration)]
    pub(crate) wait: Duration,
}

#[derive(Subcommand)]
pub(crate) enum HookCmd {
    /// Claude Code SessionStart hook: pull, then print the team memory context. Never fails.
    SessionStart {
        /// Longest time the pull may take before the last synced copy is used.
        #[arg(long = "deadline", default_value = "3s", value_parser = cmd::parse_duration)]
        deadline: Duration,
        /// Start `memsync watch` for the session (detached; it stops when the agent exits or the
        /// SessionEnd hook stops it).
        #[arg(long)]
        watch: bool,
    },
    /// Claude Code SessionEnd hook: push the team dir with the session's id, quietly. Never
    /// fails.
    SessionEnd {
        /// Longest time the push may take; past it the changes stay for the next push.
        #[arg(long = "deadline", default_value = "5s", value_parser = cmd::parse_duration)]
        deadline: Duration,
    },
}

#[derive(Subcommand)]
pub(crate) enum ReviewCmd {
    /// Open proposals of the project (reviewers: everyone's; members: their own).
    List {
        /// Every status, not only the open ones.
        #[arg(long)]
        all: bool,
    },
    /// One proposal: provenance, findings, and the diff against what is published.
    Show { id: i64 },
    /// Publish a proposal (or confirm a due or flagged memory).
    Approve {
        id: i64,
        #[arg(long)]
        note: Option<Text>,
        /// A team file the approved feedback memory supersedes (deleted in the same revision);
        /// repeatable.
        #[arg(long)]
        supersedes: Vec<String>,
    },
    /// Reject a proposal; its author sees the reason.
    Reject {
        id: i64,
        #[arg(long)]
        reason: Text,
    },
}

#[derive(Subcommand)]
pub(crate) enum AdminCmd {
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
        reason: Text,
    },
    /// Bring an earlier version back for everyone.
    Restore {
        path: String,
        #[arg(long)]
        revision: i64,
        #[arg(long)]
        reason: Text,
    },
    /// Erase a memory's content from every stored version (leaked secret, personal data).
    Purge {
        path: String,
        #[arg(long)]
        reason: Text,
        /// Required: a purge cannot be undone.
        #[arg(long)]
        yes: bool,
    },
    /// Stop distributing a memory (kept on the server; `enable` brings it back).
    Disable {
        path: String,
        #[arg(long)]
        reason: Option<Text>,
    },
    /// Distribute a disabled memory again.
    Enable {
        path: String,
        #[arg(long)]
        reason: Option<Text>,
    },
    /// Publish the version of a memory at an earlier revision as a new revision.
    Rollback {
        path: String,
        /// The revision whose version comes back (see `memsync admin history`).
        #[arg(long)]
        to: i64,
        #[arg(long)]
        reason: Option<Text>,
    },
    /// The project's release policy (team admins).
    #[command(subcommand)]
    Project(ProjectCmd),
    /// Who reviews a team's proposals besides its team admins (team admins).
    #[command(subcommand)]
    Reviewer(ReviewerCmd),
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
pub(crate) enum ProjectCmd {
    /// Print the project's release policy.
    Show,
    /// Change the project's release policy.
    Set {
        /// `required`: a push by a member who is not a reviewer becomes proposals.
        #[arg(long, value_enum)]
        review: Option<ReviewArg>,
        /// Published memories unchanged for this many days come up for review (`off`: never).
        #[arg(long, value_parser = cmd::admin::parse_review_after)]
        review_after: Option<cmd::admin::ReviewAfter>,
    },
}

#[derive(Subcommand)]
pub(crate) enum ReviewerCmd {
    /// Users granted the reviewer role for the team.
    List {
        /// Default: the project's team.
        #[arg(long)]
        team: Option<String>,
    },
    /// Grant the reviewer role (USER is the token's `sub`, the name given to `token issue --user`).
    Add {
        user: String,
        /// Default: the project's team.
        #[arg(long)]
        team: Option<String>,
    },
    /// Withdraw the reviewer role.
    Remove {
        user: String,
        /// Default: the project's team.
        #[arg(long)]
        team: Option<String>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ReviewArg {
    Off,
    Required,
}

#[derive(Subcommand)]
pub(crate) enum TokensCmd {
    List,
    Issue {
        #[arg(long)]
        user: Text,
        #[arg(long)]
        email: Option<Text>,
        /// TEAM or TEAM:admin; repeatable.
        #[arg(long = "team")]
        teams: Vec<String>,
        #[arg(long)]
        admin: bool,
        /// Days until it expires (default 90).
        #[arg(long, conflicts_with = "ttl")]
        ttl_days: Option<u32>,
        /// Lifetime, e.g. 30d (whole days; the default is 90d).
        #[arg(long, value_parser = cmd::parse_duration)]
        ttl: Option<Duration>,
        /// What it may do: `pull` (read only), `push`, `admin`. Default: everything its teams
        /// allow.
        #[arg(long)]
        scope: Option<memsync_core::wire::Scope>,
        /// Limit it to this project (TEAM/NAME); repeatable.
        #[arg(long = "project-limit", value_name = "TEAM/NAME")]
        projects: Vec<String>,
        /// Its own request rate, `RPS` or `RPS/BURST`.
        #[arg(long)]
        rate: Option<memsync_core::wire::TokenRate>,
    },
    Revoke {
        jti: String,
    },
}

#[derive(Subcommand)]
pub(crate) enum AllowlistCmd {
    /// List the allowlisted findings.
    List,
    /// Let one exact finding through for this project (its fingerprint from a refused push or
    /// `memsync scan --json`).
    Add {
        fingerprint: Text,
        #[arg(long)]
        rule: Text,
        #[arg(long)]
        reason: Text,
    },
    /// Remove an entry.
    Remove { fingerprint: String },
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum TakeArg {
    Local,
    Server,
    Merged,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return cmd::usage_error(e),
    };
    let json = cli.global.json;
    cmd::finish(json, dispatch(&cli.global, cli.command))
}

fn dispatch(g: &Global, command: Cmd) -> Result<u8, Fail> {
    // The hooks never fail the session, whatever happens.
    match command {
        Cmd::Hook(HookCmd::SessionStart { deadline, watch }) => {
            cmd::hook::session_start(g, deadline, watch);
            return Ok(cmd::OK);
        }
        Cmd::Hook(HookCmd::SessionEnd { deadline }) => {
            cmd::hook::session_end(g, deadline);
            return Ok(cmd::OK);
        }
        _ => {}
    }
    if g.agent == Some(AgentChoice::Auto) && !matches!(command, Cmd::InstallHook { .. }) {
        return Err(Fail::env(
            "--agent auto is for `install-hook` only; name one agent: claude, codex, gemini or copilot",
        ));
    }
    let cwd = cmd::cwd()?;
    match command {
        Cmd::Init { force } => cmd::auth::init(g, &cwd, force),
        Cmd::Login(args) if args.sso => cmd::auth::login_sso(g, &cwd, args),
        Cmd::Login(_) => cmd::auth::login(g, &cwd),
        Cmd::Logout => cmd::auth::logout(g, &cwd),
        Cmd::Pull { restore_deleted } => {
            cmd::sync::run(g, &cwd, cmd::sync::Direction::Pull { restore_deleted })
        }
        Cmd::Push {
            allow_mass_delete,
            session_id,
        } => cmd::sync::run(
            g,
            &cwd,
            cmd::sync::Direction::Push {
                allow_mass_delete,
                session_id: cmd::session_id(session_id),
            },
        ),
        Cmd::Sync {
            allow_mass_delete,
            session_id,
        } => cmd::sync::run(
            g,
            &cwd,
            cmd::sync::Direction::Both {
                allow_mass_delete,
                session_id: cmd::session_id(session_id),
            },
        ),
        Cmd::Status { offline } => cmd::sync::status(g, &cwd, offline),
        Cmd::Diff { path } => cmd::sync::diff(g, &cwd, path.as_deref()),
        Cmd::Resolve { path, take } => {
            let take = match take {
                TakeArg::Local => Take::Local,
                TakeArg::Server => Take::Server,
                TakeArg::Merged => Take::Merged,
            };
            cmd::sync::resolve(g, &cwd, &path, take)
        }
        Cmd::Scan { paths } => cmd::check::scan(g, &cwd, &paths),
        Cmd::Check => cmd::check::check(g, &cwd),
        Cmd::Review(c) => cmd::review::run(g, &cwd, c),
        Cmd::Allowlist(c) => cmd::allowlist::run(g, &cwd, c),
        Cmd::Admin(c) => cmd::admin::run(g, &cwd, c),
        Cmd::InstallHook {
            user,
            remove,
            trust,
            watch,
            no_watch,
        } => {
            let watch = match (watch, no_watch) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            };
            cmd::agents::install_hook(
                g,
                &cwd,
                cmd::agents::InstallOptions {
                    user,
                    watch,
                    remove,
                    trust,
                },
            )
        }
        Cmd::Render(a) => cmd::agents::render_cmd(g, &cwd, a.file, a.force, a.remove),
        Cmd::Watch {
            quiet_period,
            until_pid,
            session_id,
        } => cmd::watch::run(
            g,
            &cwd,
            cmd::watch::Options {
                quiet_period,
                until_pid,
                session_id: cmd::session_id(session_id),
            },
        ),
        Cmd::Doctor => cmd::doctor::run(g, &cwd),
        Cmd::Hook(_) => Ok(cmd::OK),
    }
}
