//! The server's configuration: one typed struct built from flags, `MEMSYNC_*` environment
//! variables and a TOML configuration file (flag > environment > file > default; see
//! [`file`]). Secrets are wrapped so they never reach a log.

pub mod file;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::export::{ExportConfig, MirrorConfig};
use crate::http::serve::ConnectionLimits;

#[derive(Parser)]
#[command(
    name = "memsync-server",
    version,
    about = "memsync's sync server: team memories for coding agents, in PostgreSQL",
    after_help = "Without a database URL, memsync-server runs an embedded PostgreSQL inside --data-dir."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run the HTTP server (the default).
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// Issue, list and revoke API tokens.
    Token(TokenArgs),
    /// Maintain the git export of the projects.
    #[command(subcommand)]
    Export(ExportCommand),
    /// Rescan published memories with the current scanner rules (built-in plus --scan-rules)
    /// now, disabling and queueing for review those with a finding the project's allowlist does
    /// not cover; prints a summary.
    Rescan {
        /// Rescan every live memory, also those the current rules already checked.
        #[arg(long)]
        all: bool,
        /// Print the summary as one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Inspect the configuration (flags, environment, --config file, defaults).
    #[command(subcommand)]
    Config(ConfigCommand),
}

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration as TOML, each setting with where its value came from
    /// (flag, env, file, default); secrets only say whether they are set. Needs no database and
    /// starts nothing: it also checks a configuration file.
    Show,
}

#[derive(Subcommand)]
pub enum ExportCommand {
    /// Regenerate git repositories from PostgreSQL (delete and recreate, export every revision),
    /// then force-update the mirror if one is configured.
    Rebuild {
        /// A project to rebuild, `TEAM/NAME`; repeatable. Without it, every project.
        #[arg(long = "project", value_name = "TEAM/NAME")]
        projects: Vec<String>,
    },
}

#[derive(Args)]
pub struct TokenArgs {
    /// Manage tokens through a running server's admin API at this URL (e.g.
    /// `http://127.0.0.1:7878`) instead of its database, so the operator need not be on the
    /// server's disk. Needs a server-admin token in `MEMSYNC_ADMIN_TOKEN`.
    #[arg(
        long = "server",
        env = "MEMSYNC_SERVER_URL",
        global = true,
        value_name = "URL"
    )]
    pub server: Option<String>,
    #[command(subcommand)]
    pub command: TokenCommand,
}

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Issue a token and print it alone on stdout.
    Issue(IssueArgs),
    /// List issued tokens (never the tokens themselves).
    List {
        /// Include revoked and expired tokens.
        #[arg(long)]
        all: bool,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by its id (`jti`); it stops working on every replica within a second.
    Revoke {
        /// The token id, as shown by `token list`.
        jti: String,
    },
}

#[derive(Args)]
pub struct IssueArgs {
    /// The user's name (the token's `sub` and `name`).
    #[arg(long)]
    pub user: String,
    #[arg(long)]
    pub email: Option<String>,
    /// A team the user belongs to; `TEAM:admin` makes them an admin of it. Repeatable.
    #[arg(long = "team", value_name = "TEAM[:admin]")]
    pub teams: Vec<String>,
    /// Make the token a server-wide admin.
    #[arg(long)]
    pub admin: bool,
    /// How long the token is valid, e.g. `90d`, `12h`. Every token expires.
    #[arg(long, default_value = "90d", value_parser = humantime::parse_duration)]
    pub ttl: Duration,
    /// What the token may do: `pull` (read only), `push` (read and write), `admin`. Repeatable;
    /// default: everything its teams allow.
    #[arg(long = "scope", value_name = "pull|push|admin")]
    pub scopes: Vec<String>,
    /// Limit the token to this project. Repeatable; default: every project of its teams.
    #[arg(long = "project", value_name = "TEAM/NAME")]
    pub projects: Vec<String>,
    /// The token's own request rate, `RPS` or `RPS/BURST` (e.g. `5/20`), instead of the
    /// server's default for tokens.
    #[arg(long, value_name = "RPS[/BURST]")]
    pub rate: Option<String>,
}

impl IssueArgs {
    /// The `--scope` flags, checked.
    pub fn parsed_scopes(&self) -> anyhow::Result<Vec<memsync_core::wire::Scope>> {
        self.scopes
            .iter()
            .map(|s| s.parse().map_err(|e| anyhow::anyhow!("--scope {e}")))
            .collect()
    }

    /// `--rate`, checked.
    pub fn parsed_rate(&self) -> anyhow::Result<Option<memsync_core::wire::TokenRate>> {
        self.rate
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--rate {e}"))
    }
}

#[derive(Args)]
pub struct GlobalArgs {
    /// A TOML file of settings: any flag below as `key = value`, the key being the long flag
    /// with `_` for `-` (e.g. `data_dir = "/var/lib/memsync"`), plus `jwt_secret`. Flags and
    /// environment variables win over it; see docs/configuration.md.
    #[arg(long, global = true, env = "MEMSYNC_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_LISTEN",
        default_value = "127.0.0.1:7878"
    )]
    pub listen: SocketAddr,
    /// Where the server keeps its files (signing key, embedded PostgreSQL).
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_DATA_DIR",
        default_value = "./memsync-data"
    )]
    pub data_dir: PathBuf,
    /// PostgreSQL URL (also DATABASE_URL); without one an embedded PostgreSQL runs in --data-dir.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_DATABASE_URL",
        hide_env_values = true
    )]
    pub database_url: Option<String>,
    /// Expected `iss` of tokens, and the issuer of tokens this server issues.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_JWT_ISSUER",
        default_value = "memsync"
    )]
    pub jwt_issuer: String,
    /// Expected `aud` of tokens.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_JWT_AUDIENCE",
        default_value = "memsync"
    )]
    pub jwt_audience: String,
    /// Largest memory file accepted, in bytes.
    #[arg(long, global = true, env = "MEMSYNC_MAX_FILE_BYTES", default_value_t = 100 * 1024)]
    pub max_file_bytes: usize,
    /// Most live files one project may hold.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_MAX_FILES_PER_PROJECT",
        default_value_t = 10_000
    )]
    pub max_files_per_project: i64,
    /// Largest request body accepted, in bytes.
    #[arg(long, global = true, env = "MEMSYNC_MAX_BODY_BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Most changes one push may carry.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_MAX_CHANGES_PER_PUSH",
        default_value_t = 2_000
    )]
    pub max_changes_per_push: usize,
    /// Time limit for one request.
    #[arg(long, global = true, env = "MEMSYNC_REQUEST_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub request_timeout: Duration,
    /// Most files one pull answers (a page; the client asks again for the rest).
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_MAX_PULL_FILES",
        default_value_t = 1_000
    )]
    pub max_pull_files: usize,
    /// How often an event stream with nothing to say sends a heartbeat comment.
    #[arg(long, global = true, env = "MEMSYNC_EVENTS_HEARTBEAT", default_value = "15s", value_parser = humantime::parse_duration)]
    pub events_heartbeat: Duration,
    /// Most long-polls and event streams one token may hold open at once.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_MAX_STREAMS_PER_TOKEN",
        default_value_t = 16
    )]
    pub max_streams_per_token: usize,
    /// Most long-polls and event streams this server holds open at once.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_MAX_STREAMS",
        default_value_t = 10_000
    )]
    pub max_streams: usize,
    /// Most long-polls and event streams the tokens of one team may hold open at once in this
    /// process (0: no limit but --max-streams); a team's own is `max_streams` in
    /// `[limits.teams.TEAM]`.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_MAX_STREAMS_PER_TEAM",
        default_value_t = 0
    )]
    pub max_streams_per_team: usize,
    /// Requests one token may make: `RPS/BURST` (e.g. `100/500`: 100 a second sustained, bursts
    /// of 500), `RPS` (bursts of twice that) or `off`. A token issued with its own rate
    /// (`token issue --rate`) has that instead. Counted per process (see docs/limits.md).
    #[arg(long, global = true, env = "MEMSYNC_TOKEN_RATE", default_value = "100/500", value_parser = crate::limits::RateSetting::parse, value_name = "RPS[/BURST]|off")]
    pub token_rate: crate::limits::RateSetting,
    /// Requests the tokens of one team may make together, to the team's projects: `RPS/BURST`,
    /// `RPS` or `off`; a team's own is `rate` in `[limits.teams.TEAM]`.
    #[arg(long, global = true, env = "MEMSYNC_TEAM_RATE", default_value = "off", value_parser = crate::limits::RateSetting::parse, value_name = "RPS[/BURST]|off")]
    pub team_rate: crate::limits::RateSetting,
    /// Pushes one token may make a minute (a bucket of that many, refilled at that rate; 0: no
    /// limit).
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_TOKEN_PUSHES_PER_MINUTE",
        default_value_t = 120
    )]
    pub token_pushes_per_minute: u32,
    /// Pushes the tokens of one team may make together a minute (0: no limit); a team's own is
    /// `pushes_per_minute` in `[limits.teams.TEAM]`.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_TEAM_PUSHES_PER_MINUTE",
        default_value_t = 0
    )]
    pub team_pushes_per_minute: u32,
    /// Most bytes of memories one project may hold (the content of its live files; 0: no
    /// limit); a push that would go over it is refused, one that shrinks the project always
    /// passes. A team's own is `max_project_bytes` in `[limits.teams.TEAM]`.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_MAX_PROJECT_BYTES",
        default_value_t = 100 * 1024 * 1024
    )]
    pub max_project_bytes: u64,
    /// Time a connection has to send a request's headers, counted from when it opens or
    /// finishes its previous request (so it is also the keep-alive idle limit); a connection
    /// that misses it is closed.
    #[arg(long, global = true, env = "MEMSYNC_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub header_read_timeout: Duration,
    /// Most client connections served at once; one more is answered 503 and closed.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_MAX_CONNECTIONS",
        default_value_t = 1024
    )]
    pub max_connections: usize,
    /// Database connections in the pool.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_DB_POOL_SIZE",
        default_value_t = 16
    )]
    pub db_pool_size: u32,
    /// Failed restarts in a row of a dead embedded PostgreSQL after which `/healthz` answers 503
    /// (restarts go on; an orchestrator should restart the process).
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_DB_RESTART_ATTEMPTS",
        default_value_t = 5
    )]
    pub db_restart_attempts: u32,
    /// Where the git export keeps one bare repository per project, `<team>/<name>.git`. Only a
    /// process with an export directory exports and serves clones (one at a time: the one holding
    /// the export lock); others forward `/git/…` to it. [default: <data-dir>/git with the
    /// embedded PostgreSQL; none with a database URL]
    #[arg(long, global = true, env = "MEMSYNC_EXPORT_DIR")]
    pub export_dir: Option<PathBuf>,
    /// The URL other replicas reach this process at when it runs the export, e.g.
    /// `http://memsync-export-0.memsync-export:7878`; they forward clones there. [default:
    /// http://<--listen>, or http://<hostname>:<port> when listening on every address]
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_EXPORT_ADVERTISE_URL",
        value_name = "URL"
    )]
    pub export_advertise_url: Option<String>,
    /// How often the git exporter looks for unexported revisions when no notification came.
    #[arg(long, global = true, env = "MEMSYNC_EXPORT_INTERVAL", default_value = "5s", value_parser = humantime::parse_duration)]
    pub export_interval: Duration,
    /// Don't run the git exporter in this process (clones are still served; another replica,
    /// or this one once restarted without the flag, exports).
    #[arg(long, global = true, env = "MEMSYNC_EXPORT_PAUSED")]
    pub export_paused: bool,
    /// Push every project's git export to a mirror: a git URL with `{team}` and `{name}`, e.g.
    /// `git@github.com:acme-memsync/{team}-{name}.git` (the repositories must exist there).
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_MIRROR_URL_TEMPLATE",
        hide_env_values = true
    )]
    pub mirror_url_template: Option<String>,
    /// Time limit for one push to the mirror.
    #[arg(long, global = true, env = "MEMSYNC_MIRROR_TIMEOUT", default_value = "120s", value_parser = humantime::parse_duration)]
    pub mirror_timeout: Duration,
    /// Test hook: `after-commit` makes the exporter exit between writing commits and recording
    /// them.
    #[arg(long, global = true, hide = true)]
    pub export_failpoint: Option<String>,
    /// A TOML file of extra scanner rules (`[[rule]]` tables with `id`, `category`, `pattern`,
    /// `description`), applied to every write and rescan on top of the built-in rules.
    #[arg(long, global = true, env = "MEMSYNC_SCAN_RULES", value_name = "FILE")]
    pub scan_rules: Option<PathBuf>,
    /// The URL people reach this server at, e.g. `https://memsync.example.com` (behind a TLS
    /// proxy). The admin console checks that its forms are posted from this origin, and its
    /// session cookie is `Secure` when the URL is https. Without it, the request's `Host` (and
    /// `X-Forwarded-Proto`) is taken as the origin.
    #[arg(long, global = true, env = "MEMSYNC_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,
    /// How long an admin console session lasts without being used.
    #[arg(long, global = true, env = "MEMSYNC_CONSOLE_IDLE_TIMEOUT", default_value = "30m", value_parser = humantime::parse_duration)]
    pub console_idle_timeout: Duration,
    /// The longest an admin console session lasts however much it is used (never past the
    /// expiry of the token it was opened with).
    #[arg(long, global = true, env = "MEMSYNC_CONSOLE_MAX_SESSION", default_value = "8h", value_parser = humantime::parse_duration)]
    pub console_max_session: Duration,
    /// Serve `/metrics` on this address instead of the API's (e.g. `0.0.0.0:9090`, reachable by
    /// the scraper only); the API's listener then answers 404 there.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_METRICS_LISTEN",
        value_name = "ADDR"
    )]
    pub metrics_listen: Option<SocketAddr>,
    /// A model judge for team feedback consistency: the base URL of an OpenAI-compatible
    /// (`POST {url}/chat/completions`) or Anthropic-compatible (`POST {url}/messages`)
    /// endpoint, e.g. `https://llm.example.internal/v1`. It classifies the pairs the detector
    /// finds (on push, the feedback check and proposals); without an answer by the deadline the
    /// detector's verdict stands. The key comes from MEMSYNC_FEEDBACK_JUDGE_KEY or the variable
    /// --feedback-judge-key-env names, never from a flag or the file.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_FEEDBACK_JUDGE_URL",
        value_name = "URL"
    )]
    pub feedback_judge_url: Option<String>,
    /// The judge's API: `openai` or `anthropic`.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_FEEDBACK_JUDGE_API",
        default_value = "openai"
    )]
    pub feedback_judge_api: String,
    /// The model the judge's endpoint is asked for (needed with --feedback-judge-url).
    #[arg(long, global = true, env = "MEMSYNC_FEEDBACK_JUDGE_MODEL")]
    pub feedback_judge_model: Option<String>,
    /// The NAME of the environment variable that holds the judge's API key (instead of
    /// MEMSYNC_FEEDBACK_JUDGE_KEY).
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_FEEDBACK_JUDGE_KEY_ENV",
        value_name = "VAR"
    )]
    pub feedback_judge_key_env: Option<String>,
    /// The deadline of one check's judging (all its pairs together), in milliseconds, at most
    /// 60000; a push waits at most this long for the judge.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_FEEDBACK_JUDGE_TIMEOUT_MS",
        default_value_t = 5_000
    )]
    pub feedback_judge_timeout_ms: u64,
    /// A directory holding a sentence-embedding model for the feedback check (`model.safetensors`
    /// and `vocab.txt` of all-MiniLM-L6-v2, as scripts/fetch-feedback-model installs it): team
    /// feedback memories close in meaning are then found related even in other words. Loaded
    /// when the server starts; without it, the detector alone.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_FEEDBACK_MODEL_DIR",
        value_name = "DIR"
    )]
    pub feedback_model_dir: Option<PathBuf>,
    /// Identity providers whose tokens this server accepts (OpenID Connect): issuer URLs,
    /// comma-separated, e.g. `https://login.example.com/realms/acme`. Each is discovered at
    /// `<issuer>/.well-known/openid-configuration`; its keys come from its `jwks_uri`. https,
    /// or http on a loopback address only.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_OIDC_ISSUERS",
        value_name = "URL[,URL…]"
    )]
    pub oidc_issuers: Option<String>,
    /// The `aud` identity-provider tokens must carry (usually the client ID registered for
    /// memsync). Needed with --oidc-issuers.
    #[arg(long, global = true, env = "MEMSYNC_OIDC_AUDIENCE")]
    pub oidc_audience: Option<String>,
    /// The public client ID `memsync login --sso` signs in with. [default: the audience]
    #[arg(long, global = true, env = "MEMSYNC_OIDC_CLIENT_ID")]
    pub oidc_client_id: Option<String>,
    /// The claims that name the user, comma-separated; the first one set wins.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_OIDC_USER_CLAIMS",
        default_value = "preferred_username,email,sub"
    )]
    pub oidc_user_claims: String,
    /// The claim that lists the user's groups.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_OIDC_GROUPS_CLAIM",
        default_value = "groups"
    )]
    pub oidc_groups_claim: String,
    /// The group that makes a member of a team, `{team}` standing for its name.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_OIDC_MEMBER_GROUP",
        default_value = "memsync:{team}"
    )]
    pub oidc_member_group: String,
    /// The group that makes an admin of a team, `{team}` standing for its name.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_OIDC_ADMIN_GROUP",
        default_value = "memsync:{team}:admin"
    )]
    pub oidc_admin_group: String,
    /// A group whose members are server admins (none by default).
    #[arg(long, global = true, env = "MEMSYNC_OIDC_SERVER_ADMIN_GROUP")]
    pub oidc_server_admin_group: Option<String>,
    /// Log format: `auto` (JSON when stderr is not a terminal), `json` or `text`.
    #[arg(
        long,
        global = true,
        env = "MEMSYNC_LOG_FORMAT",
        default_value = "auto"
    )]
    pub log_format: String,
    /// What the configuration file gave and where each setting came from (set by [`parse`]).
    #[arg(skip)]
    pub resolved: file::Resolved,
}

/// Parses the command line, the environment and the configuration file it names. Bad flags end
/// the process as clap does; a bad configuration file ends it with status 2 and a message naming
/// the file and each problem, before anything starts.
pub fn parse() -> Cli {
    match file::parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        Err(file::ParseError::Clap(e)) => e.exit(),
        Err(file::ParseError::File(errors)) => {
            for e in errors {
                eprintln!("memsync-server: {e}");
            }
            std::process::exit(2)
        }
    }
}

/// A secret string: shown as `[redacted]` by `Debug`.
#[derive(Clone)]
pub struct SecretString(String);

impl SecretString {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SecretString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The resolved configuration the server runs with.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub database_url: Option<SecretString>,
    pub jwt_secret: Option<SecretString>,
    pub jwt_issuer: String,
    pub jwt_audience: String,
    pub max_file_bytes: usize,
    pub max_files_per_project: i64,
    pub max_body_bytes: usize,
    pub max_changes_per_push: usize,
    pub request_timeout: Duration,
    pub live: crate::live::LiveLimits,
    pub connections: ConnectionLimits,
    pub db_pool_size: u32,
    pub db_restart_attempts: u32,
    pub export: ExportConfig,
    /// Where `/metrics` is served when not on the API's listener.
    pub metrics_listen: Option<SocketAddr>,
    /// The extra scanner rules file, if any.
    pub scan_rules: Option<PathBuf>,
    pub public_url: Option<String>,
    pub console_idle_timeout: Duration,
    pub console_max_session: Duration,
    /// The model judge's settings as given; checked when the server starts.
    pub feedback_judge: crate::sync::judge::JudgeArgs,
    /// The feedback check's embedding model directory, if any; loaded when the server starts.
    pub feedback_model_dir: Option<PathBuf>,
    /// The trusted identity providers as given; checked when the server starts.
    pub oidc: crate::oidc::OidcArgs,
    /// Rate limits and quotas (`crate::limits`), for the life of the process.
    pub limits: &'static crate::limits::LimitSettings,
}

impl Config {
    pub fn from_args(g: &GlobalArgs) -> Config {
        let database_url = g
            .database_url
            .clone()
            .or_else(|| std::env::var("DATABASE_URL").ok())
            .filter(|s| !s.is_empty())
            .map(SecretString);
        // An external database means replicas: only those given an export directory export.
        let export_dir = g
            .export_dir
            .clone()
            .filter(|d| !d.as_os_str().is_empty())
            .or_else(|| database_url.is_none().then(|| g.data_dir.join("git")));
        Config {
            listen: g.listen,
            data_dir: g.data_dir.clone(),
            database_url,
            // The environment wins over the file.
            jwt_secret: std::env::var("MEMSYNC_JWT_SECRET")
                .ok()
                .filter(|s| !s.is_empty())
                .map(SecretString)
                .or_else(|| g.resolved.jwt_secret.clone()),
            jwt_issuer: g.jwt_issuer.clone(),
            jwt_audience: g.jwt_audience.clone(),
            max_file_bytes: g.max_file_bytes,
            max_files_per_project: g.max_files_per_project,
            max_body_bytes: g.max_body_bytes,
            max_changes_per_push: g.max_changes_per_push,
            request_timeout: g.request_timeout,
            live: crate::live::LiveLimits {
                max_pull_files: g.max_pull_files.max(1),
                heartbeat: g.events_heartbeat.max(Duration::from_millis(100)),
                per_token: g.max_streams_per_token.max(1),
                total: g.max_streams.max(1),
            },
            connections: ConnectionLimits {
                // Zero would close every connection before its first byte.
                header_read_timeout: g.header_read_timeout.max(Duration::from_millis(100)),
                max_connections: g.max_connections.max(1),
            },
            db_pool_size: g.db_pool_size.max(3),
            db_restart_attempts: g.db_restart_attempts.max(1),
            export: ExportConfig {
                dir: export_dir.map(|d| std::path::absolute(&d).unwrap_or(d)),
                advertise_url: g.export_advertise_url.clone().filter(|u| !u.is_empty()),
                interval: g.export_interval.max(Duration::from_millis(50)),
                paused: g.export_paused,
                mirror: g
                    .mirror_url_template
                    .clone()
                    .filter(|s| !s.is_empty())
                    .map(|t| MirrorConfig {
                        url_template: SecretString(t),
                        timeout: g.mirror_timeout,
                    }),
                failpoint: g.export_failpoint.clone(),
            },
            metrics_listen: g.metrics_listen,
            scan_rules: g.scan_rules.clone().filter(|p| !p.as_os_str().is_empty()),
            public_url: g.public_url.clone().filter(|u| !u.is_empty()),
            console_idle_timeout: g.console_idle_timeout,
            console_max_session: g.console_max_session,
            feedback_judge: crate::sync::judge::JudgeArgs {
                url: g.feedback_judge_url.clone(),
                api: g.feedback_judge_api.clone(),
                model: g.feedback_judge_model.clone(),
                key_env: g.feedback_judge_key_env.clone(),
                timeout_ms: g.feedback_judge_timeout_ms,
            },
            feedback_model_dir: g
                .feedback_model_dir
                .clone()
                .filter(|p| !p.as_os_str().is_empty()),
            oidc: crate::oidc::OidcArgs {
                issuers: g.oidc_issuers.clone(),
                audience: g.oidc_audience.clone(),
                client_id: g.oidc_client_id.clone(),
                user_claims: g.oidc_user_claims.clone(),
                groups_claim: g.oidc_groups_claim.clone(),
                member_group: g.oidc_member_group.clone(),
                admin_group: g.oidc_admin_group.clone(),
                server_admin_group: g.oidc_server_admin_group.clone(),
            },
            // Built once per process and read by every request: leaked, so that the push's
            // `SyncLimits` (Copy) can carry the quotas.
            limits: Box::leak(Box::new(crate::limits::LimitSettings {
                token_rate: g.token_rate,
                team_rate: g.team_rate,
                token_pushes_per_minute: g.token_pushes_per_minute,
                team_pushes_per_minute: g.team_pushes_per_minute,
                max_project_bytes: g.max_project_bytes,
                max_streams_per_team: g.max_streams_per_team,
                teams: g.resolved.team_limits.clone(),
            })),
        }
    }

    /// Reads the extra scanner rules and installs them into the process-wide scanner, before
    /// anything is scanned. A file that cannot be read or holds a bad rule stops the server with
    /// a message naming the rule and the problem. Returns how many extra rules are in force.
    pub fn install_scan_rules(&self) -> anyhow::Result<usize> {
        let Some(path) = &self.scan_rules else {
            return Ok(0);
        };
        let rules = read_scan_rules(path)
            .map_err(|e| anyhow::anyhow!("--scan-rules {}: {e}", path.display()))?;
        memsync_core::scan::install_extra_rules(&rules)
            .map_err(|e| anyhow::anyhow!("--scan-rules {}: {e}", path.display()))?;
        Ok(rules.len())
    }
}

/// The scanner rules file: `[[rule]]` tables, nothing else.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ScanRulesFile {
    #[serde(default, rename = "rule")]
    rules: Vec<memsync_core::scan::ExtraRule>,
}

/// Parses a scanner rules file (the rules themselves are checked when installed).
pub fn read_scan_rules(
    path: &std::path::Path,
) -> Result<Vec<memsync_core::scan::ExtraRule>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let file: ScanRulesFile = toml::from_str(&text).map_err(|e| {
        let why = e.message().trim_end_matches('.');
        match e.span() {
            Some(span) => {
                let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                // The span of a rule's error covers its `[[rule]]` header or a line after it.
                let upto = &text[..span.end.min(text.len())];
                let rule = match upto.matches("[[rule]]").count() {
                    0 => String::new(),
                    n => format!(" (scan rule #{n})"),
                };
                format!(
                    "not a valid rules file: line {line}{rule}: {why}; each rule is a [[rule]] table with `id`, `category` (`secret` or `injection`), `pattern` and `description`"
                )
            }
            None => format!("not a valid rules file: {why}"),
        }
    })?;
    Ok(file.rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<memsync_core::scan::ExtraRule>, String> {
        let path = std::env::temp_dir().join(format!(
            "memsync-scan-rules-{}-{}.toml",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::write(&path, text).expect("write");
        let r = read_scan_rules(&path);
        let _ = std::fs::remove_file(&path);
        r
    }

    #[test]
    fn a_rules_file_is_rule_tables_and_its_errors_name_the_rule() {
        let one = "[[rule]]\nid = \"acme-token\"\ncategory = \"secret\"\npattern = 'ACME-[0-9]{8}'\ndescription = \"ACME token\"\n";
        let rules = read(one).expect("valid");
        assert_eq!(
            (rules.len(), rules[0].id.as_str(), rules[0].pattern.as_str()),
            (1, "acme-token", "ACME-[0-9]{8}")
        );
        assert!(read("").expect("no rules").is_empty());
        let cases = [
            (
                format!(
                    "{one}\n[[rule]]\nid = \"b\"\ncategory = \"secret\"\ndescription = \"b\"\n"
                ),
                "line 7 (scan rule #2): missing field `pattern`",
            ),
            (
                format!("{one}colour = \"red\"\n"),
                "(scan rule #1): unknown field `colour`",
            ),
            ("[rules]\n".to_owned(), "line 1: unknown field `rules`"),
            ("[[rule]\n".to_owned(), "not a valid rules file: line 1"),
        ];
        for (text, want) in cases {
            let e = read(&text).expect_err(want);
            assert!(e.contains(want), "{e}");
        }
        let missing = std::env::temp_dir().join("memsync-no-such-rules-file.toml");
        let e = read_scan_rules(&missing).expect_err("missing");
        assert!(e.starts_with("cannot read it: "), "{e}");
    }
}
