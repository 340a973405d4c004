//! Where the client's settings come from. Precedence everywhere: command-line flag, then the
//! environment, then the repository's `.memsync.toml`, then the user's credentials file, then the
//! default. The defaults follow Claude Code's layout, so agents find the memories where they
//! already look.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use memsync_core::project::ProjectIdError;
use memsync_core::{ProjectId, Sha256};
use serde::{Deserialize, Serialize};

use crate::atomic::Durability;

pub const ENV_SERVER: &str = "MEMSYNC_SERVER";
pub const ENV_TOKEN: &str = "MEMSYNC_TOKEN";
pub const ENV_PROJECT: &str = "MEMSYNC_PROJECT";
pub const ENV_PRIVATE_DIR: &str = "MEMSYNC_PRIVATE_DIR";
pub const ENV_TEAM_DIR: &str = "MEMSYNC_TEAM_DIR";

/// The per-repository settings file, at the root of the working tree.
pub const PROJECT_FILE: &str = ".memsync.toml";

/// Values given on the command line (highest precedence).
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub server: Option<String>,
    pub token: Option<String>,
    pub project: Option<String>,
    pub private_dir: Option<PathBuf>,
    pub team_dir: Option<PathBuf>,
    /// The agent whose layout the command works on (`--agent`); its dirs are the defaults.
    pub agent: crate::agent::AgentId,
}

/// The environment, injected for tests: `std::env::var_os` in production.
pub trait Env {
    fn var(&self, key: &str) -> Option<String>;
}

/// The real process environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, key: &str) -> Option<String> {
        std::env::var_os(key).and_then(|v| v.into_string().ok())
    }
}

impl<F: Fn(&str) -> Option<String>> Env for F {
    fn var(&self, key: &str) -> Option<String> {
        self(key)
    }
}

/// A set-but-empty variable counts as unset (`MEMSYNC_TOKEN= memsync …`, XDG's rule).
fn env_var(env: &dyn Env, key: &str) -> Option<String> {
    env.var(key).filter(|v| !v.is_empty())
}

/// An API token. Never shown by `Debug`; call [`Token::expose`] only to send it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    pub fn new(token: impl Into<String>) -> Token {
        Token(token.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token([redacted])")
    }
}

/// A git working tree, found without running `git`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// Top of this working tree.
    pub root: PathBuf,
    /// The repository's main working tree; same as `root` unless this is a linked worktree.
    pub main_root: PathBuf,
    pub git_dir: PathBuf,
    pub common_dir: PathBuf,
}

/// Everything a command needs to know about where it works, fully resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Normalised: `http://` or `https://`, no trailing `/`.
    pub server: Option<String>,
    pub token: Option<Token>,
    /// The token was read from the credentials file (not a flag or the environment), so a
    /// single sign-on token there may be renewed in place.
    pub token_stored: bool,
    pub project: Option<ProjectId>,
    /// Where `server`, `token` and `project` came from, for messages.
    pub origins: Origins,
    pub repo: Option<Repo>,
    /// The agent whose layout this is.
    pub agent: crate::agent::AgentId,
    /// The repository's main working tree (or the directory, outside a repository): what
    /// agents key a project's memory dirs by.
    pub project_root: PathBuf,
    pub private_dir: PathBuf,
    pub team_dir: PathBuf,
    /// This project's sync bookkeeping; never inside the team dir.
    pub state_dir: PathBuf,
    /// The `.memsync.toml` that was read, if any.
    pub config_file: Option<PathBuf>,
}

/// Where a setting came from, in words: "the --token flag", "MEMSYNC_TOKEN", a file's path.
#[derive(Debug, Default, Clone)]
pub struct Origins {
    pub server: Option<String>,
    pub token: Option<String>,
    pub project: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("HOME is not set, so memsync cannot locate {what}; set HOME, or {alternative}")]
    HomeMissing {
        what: &'static str,
        alternative: &'static str,
    },
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error("{}:{line}:{column}: invalid TOML: {message}; fix that line and try again", path.display())]
    Toml {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("cannot serialise {}: {message}", path.display())]
    Serialize { path: PathBuf, message: String },
    #[error(
        "`{value}` (from {origin}) is not a valid project: {source}; write it as `team/name` in lowercase, e.g. `acme/api`"
    )]
    InvalidProject {
        value: String,
        origin: String,
        source: ProjectIdError,
    },
    #[error("`{value}` (from {origin}) is not a valid server URL: {reason}")]
    InvalidServer {
        value: String,
        origin: String,
        reason: &'static str,
    },
    #[error(
        "the state dir {} would be inside the team dir {}, so sync bookkeeping would be uploaded; set XDG_STATE_HOME to a directory outside it, or choose another team dir",
        state_dir.display(), team_dir.display()
    )]
    StateInsideTeamDir {
        state_dir: PathBuf,
        team_dir: PathBuf,
    },
    #[error(
        "the private dir {} is the team dir {} or inside it, so private memories would be shared with the team; give them separate directories (MEMSYNC_PRIVATE_DIR / MEMSYNC_TEAM_DIR or .memsync.toml)",
        private_dir.display(), team_dir.display()
    )]
    PrivateInsideTeamDir {
        private_dir: PathBuf,
        team_dir: PathBuf,
    },
}

// ---------------------------------------------------------------------------------------------
// Repository discovery

/// Walks up from `start` to the first directory holding `.git` (a directory, or a linked
/// worktree's `gitdir:` file). Paths come back canonical.
pub fn find_repo(start: &Path) -> Option<Repo> {
    let start = fs::canonicalize(start).unwrap_or_else(|_| normalize_lexical(start));
    for dir in start.ancestors() {
        let dot_git = dir.join(".git");
        let Ok(meta) = fs::metadata(&dot_git) else {
            continue;
        };
        let git_dir = if meta.is_dir() {
            fs::canonicalize(&dot_git).ok()?
        } else {
            // A broken gitfile makes git fail here too; a repository further up is not ours.
            read_gitfile(&dot_git, dir)?
        };
        return Some(repo_from_git_dir(dir, git_dir));
    }
    None
}

fn read_gitfile(dot_git: &Path, root: &Path) -> Option<PathBuf> {
    let text = fs::read_to_string(dot_git).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    if target.is_empty() {
        return None;
    }
    fs::canonicalize(root.join(target)).ok()
}

fn repo_from_git_dir(root: &Path, git_dir: PathBuf) -> Repo {
    let common_dir = match fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) if !text.trim().is_empty() => {
            let joined = git_dir.join(text.trim_end_matches(['\n', '\r']));
            fs::canonicalize(&joined).unwrap_or_else(|_| normalize_lexical(&joined))
        }
        _ => git_dir.clone(),
    };
    let main_root = match common_dir.parent() {
        Some(parent)
            if common_dir != git_dir && common_dir.file_name() == Some(".git".as_ref()) =>
        {
            parent.to_path_buf()
        }
        _ => root.to_path_buf(),
    };
    Repo {
        root: root.to_path_buf(),
        main_root,
        git_dir,
        common_dir,
    }
}

/// The project named by the repository's `origin` remote: `git@host:Acme/API.git` → `acme/api`.
/// Local remotes and URLs that don't name an owner and a repository give `None`.
pub fn origin_project(repo: &Repo) -> Option<ProjectId> {
    let config = fs::read_to_string(repo.common_dir.join("config")).ok()?;
    project_from_url(&git_config_origin_url(&config)?)
}

/// Finds `remote.origin.url` in git's INI-like config format.
fn git_config_origin_url(config: &str) -> Option<String> {
    let mut in_origin = false;
    for line in config.lines() {
        let mut rest = line.trim_start();
        if rest.starts_with('[') {
            let (section, after) = parse_section_header(rest)?;
            in_origin = section == ("remote".to_string(), Some("origin".to_string()));
            rest = after.trim_start();
        }
        if !in_origin || rest.is_empty() || rest.starts_with(['#', ';']) {
            continue;
        }
        let (key, value) = match rest.split_once('=') {
            Some((k, v)) => (k.trim(), v),
            None => continue,
        };
        if key.eq_ignore_ascii_case("url") {
            let url = parse_config_value(value);
            if !url.is_empty() {
                return Some(url);
            }
        }
    }
    None
}

/// `[remote "origin"]` → `("remote", Some("origin"))`; old style `[remote.origin]` too. Returns the
/// rest of the line, where git allows a key to follow.
fn parse_section_header(line: &str) -> Option<((String, Option<String>), &str)> {
    let body = line.strip_prefix('[')?;
    if let Some(quote) = body.find('"') {
        let name = body[..quote].trim().to_ascii_lowercase();
        let mut sub = String::new();
        let mut chars = body[quote + 1..].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, e)) = chars.next() {
                        sub.push(e);
                    }
                }
                '"' => {
                    let after = &body[quote + 1 + i + 1..];
                    let after = after.trim_start().strip_prefix(']')?;
                    return Some(((name, Some(sub)), after));
                }
                _ => sub.push(c),
            }
        }
        None
    } else {
        let end = body.find(']')?;
        let full = body[..end].trim();
        let after = &body[end + 1..];
        Some(match full.split_once('.') {
            Some((name, sub)) => (
                (name.to_ascii_lowercase(), Some(sub.to_ascii_lowercase())),
                after,
            ),
            None => ((full.to_ascii_lowercase(), None), after),
        })
    }
}

/// A config value: quotes removed, escapes applied, an unquoted `#`/`;` starts a comment.
fn parse_config_value(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    // Unquoted trailing whitespace is dropped; this tracks where the kept text ends.
    let mut keep = 0;
    let mut chars = raw.trim_start().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                keep = out.len();
            }
            '\\' => {
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('b') => {
                        out.pop();
                    }
                    Some(e) => out.push(e),
                    None => {}
                }
                keep = out.len();
            }
            '#' | ';' if !quoted => break,
            c => {
                out.push(c);
                if quoted || !c.is_whitespace() {
                    keep = out.len();
                }
            }
        }
    }
    out.truncate(keep);
    out
}

fn project_from_url(url: &str) -> Option<ProjectId> {
    let url = url.trim();
    let path = if let Some((scheme, rest)) = url.split_once("://") {
        match scheme.to_ascii_lowercase().as_str() {
            "ssh" | "git+ssh" | "ssh+git" | "git" | "http" | "https" => {}
            _ => return None,
        }
        let (_authority, path) = rest.split_once('/')?;
        path.split(['?', '#']).next().unwrap_or_default()
    } else if url.to_ascii_lowercase().starts_with("file:") {
        return None;
    } else {
        // scp-like `[user@]host:path`: a colon before any slash. Anything else is a local path.
        let colon = url.find(':')?;
        if url[..colon].contains('/') || colon == 0 {
            return None;
        }
        &url[colon + 1..]
    };
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.len() < 2 {
        return None;
    }
    let team = segments[0].to_ascii_lowercase();
    let name = segments[segments.len() - 1].to_ascii_lowercase();
    let name = name.strip_suffix(".git").unwrap_or(&name);
    ProjectId::new(&team, name).ok()
}

/// Claude Code's directory name for a project: the absolute path with every character outside
/// `[A-Za-z0-9]` replaced by `-` (one per UTF-16 unit, as Claude Code's JavaScript does).
pub fn claude_project_key(path: &Path) -> String {
    let mut key = String::new();
    for c in path.to_string_lossy().chars() {
        if c.is_ascii_alphanumeric() {
            key.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                key.push('-');
            }
        }
    }
    key
}

// ---------------------------------------------------------------------------------------------
// Well-known directories

pub(crate) fn home(env: &dyn Env) -> Option<PathBuf> {
    env_var(env, "HOME").map(PathBuf::from)
}

/// An XDG base directory variable, which the XDG spec says to ignore unless absolute.
pub(crate) fn xdg(env: &dyn Env, key: &str) -> Option<PathBuf> {
    env_var(env, key)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// Claude Code's configuration directory: `$CLAUDE_CONFIG_DIR`, else `$HOME/.claude`.
pub fn claude_dir(env: &dyn Env) -> Option<PathBuf> {
    match env_var(env, "CLAUDE_CONFIG_DIR") {
        Some(dir) => Some(expand_tilde(Path::new(&dir), env).unwrap_or_else(|_| dir.into())),
        None => home(env).map(|h| h.join(".claude")),
    }
}

/// Whether `p` is a file someone may execute.
pub fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The first executable file named `program` in `$PATH`, as a shell would find it.
pub fn find_on_path(env: &dyn Env, program: &str) -> Option<PathBuf> {
    let path = env.var("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

/// `$XDG_STATE_HOME/memsync`, else `$HOME/.local/state/memsync`.
pub fn state_root(env: &dyn Env) -> Option<PathBuf> {
    xdg(env, "XDG_STATE_HOME")
        .or_else(|| home(env).map(|h| h.join(".local").join("state")))
        .map(|d| d.join("memsync"))
}

/// `~` and `~/…` become `$HOME/…`; `~user` is left alone.
fn expand_tilde(path: &Path, env: &dyn Env) -> Result<PathBuf, ConfigError> {
    let mut components = path.components();
    match components.next() {
        Some(Component::Normal(first)) if first == "~" => {
            let home = home(env).ok_or(ConfigError::HomeMissing {
                what: "a path that starts with `~`",
                alternative: "write the path in full",
            })?;
            Ok(home.join(components.as_path()))
        }
        _ => Ok(path.to_path_buf()),
    }
}

/// Removes `.` and resolves `..` without touching the file system (so symlinks stay visible).
fn normalize_lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn absolute_lexical(base: &Path, path: &Path) -> PathBuf {
    normalize_lexical(&base.join(path))
}

/// The path with its longest existing prefix resolved through symlinks.
fn real_path(path: &Path) -> PathBuf {
    for ancestor in path.ancestors() {
        if let Ok(real) = fs::canonicalize(ancestor) {
            return match path.strip_prefix(ancestor) {
                Ok(rest) if !rest.as_os_str().is_empty() => real.join(rest),
                _ => real,
            };
        }
    }
    path.to_path_buf()
}

fn is_within(child: &Path, parent: &Path) -> bool {
    child.starts_with(parent) || real_path(child).starts_with(real_path(parent))
}

// ---------------------------------------------------------------------------------------------
// Resolution

/// Normalises a server URL: `http://` or `https://`, scheme and host lowercase, no trailing `/`.
/// `origin` says where the value came from, for the error message.
pub fn normalize_server(raw: &str, origin: &str) -> Result<String, ConfigError> {
    let value = raw.trim();
    let invalid = |reason| ConfigError::InvalidServer {
        value: value.chars().take(200).collect(),
        origin: origin.to_string(),
        reason,
    };
    let Some((scheme, rest)) = value.split_once("://") else {
        return Err(invalid(
            "it must start with http:// or https://, e.g. https://memsync.example.internal",
        ));
    };
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(invalid(
            "it must start with http:// or https://, e.g. https://memsync.example.internal",
        ));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid("it contains spaces or control characters"));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    if authority.contains('@') {
        // Don't echo it: the part before `@` may be a password.
        return Err(ConfigError::InvalidServer {
            value: format!("{scheme}://…"),
            origin: origin.to_string(),
            reason: "it must not contain a user name or password; store the token with `memsync login`",
        });
    }
    if authority.is_empty() || authority.starts_with(':') {
        return Err(invalid("it has no host name"));
    }
    if rest.contains(['?', '#']) {
        return Err(invalid("it must not have a query (`?`) or fragment (`#`)"));
    }
    let path = path.trim_end_matches('/');
    Ok(format!(
        "{scheme}://{}{path}",
        authority.to_ascii_lowercase()
    ))
}

/// A lenient key for credentials lookups, so hand-edited entries still match.
fn server_key(server: &str) -> String {
    normalize_server(server, "").unwrap_or_else(|_| server.trim().trim_end_matches('/').to_string())
}

fn parse_project(value: &str, origin: &str) -> Result<ProjectId, ConfigError> {
    let value = value.trim();
    value
        .parse::<ProjectId>()
        .map_err(|source| ConfigError::InvalidProject {
            value: value.chars().take(200).collect(),
            origin: origin.to_string(),
            source,
        })
}

/// The first value that is set, with where it came from.
fn first_set<const N: usize>(
    candidates: [(Option<String>, &dyn Fn() -> String); N],
) -> Option<(String, String)> {
    candidates
        .into_iter()
        .find_map(|(v, origin)| v.filter(|v| !v.trim().is_empty()).map(|v| (v, origin())))
}

/// Resolves every setting for a command run in `cwd`.
pub fn resolve(cwd: &Path, flags: &Overrides, env: &dyn Env) -> Result<Settings, ConfigError> {
    let cwd = match std::env::current_dir() {
        Ok(cur) if cwd.is_relative() => absolute_lexical(&cur, cwd),
        _ => normalize_lexical(cwd),
    };
    let repo = find_repo(&cwd);

    let (file, config_file) = match &repo {
        Some(repo) => {
            let path = repo.root.join(PROJECT_FILE);
            match ProjectFile::load(&path)? {
                Some(file) => (file, Some(path)),
                None => (ProjectFile::default(), None),
            }
        }
        None => (ProjectFile::default(), None),
    };
    let file_origin = || {
        config_file
            .as_ref()
            .map_or_else(String::new, |p| p.display().to_string())
    };

    // Only read when something is still missing, so a broken credentials file doesn't stop a
    // command that got everything from flags and the environment.
    let mut credentials: Option<Credentials> = None;

    let mut server = first_set([
        (flags.server.clone(), &|| "the --server flag".to_string()),
        (env_var(env, ENV_SERVER), &|| ENV_SERVER.to_string()),
        (file.server.clone(), &file_origin),
    ]);
    if server.is_none() {
        let creds = load_once(&mut credentials, env)?;
        server = creds
            .default_server()
            .map(|s| (s.to_string(), creds.origin()));
    }
    let server_origin = server.as_ref().map(|(_, origin)| origin.clone());
    let server = server
        .map(|(value, origin)| normalize_server(&value, &origin))
        .transpose()?;

    let (token, token_origin, token_stored) = match first_set([
        (flags.token.clone(), &|| "the --token flag".to_string()),
        (env_var(env, ENV_TOKEN), &|| ENV_TOKEN.to_string()),
    ]) {
        Some((token, origin)) => (Some(Token(token.trim().to_string())), Some(origin), false),
        None => match &server {
            Some(server) => {
                let creds = load_once(&mut credentials, env)?;
                let token = creds.token_for(server);
                let how = if creds.sso_for(server).is_some() {
                    "`memsync login --sso`"
                } else {
                    "`memsync login`"
                };
                let origin = token
                    .as_ref()
                    .map(|_| format!("{} (stored for {server} by {how})", creds.origin()));
                let stored = token.is_some();
                (token, origin, stored)
            }
            None => (None, None, false),
        },
    };

    let (project, project_origin) = match first_set([
        (flags.project.clone(), &|| "the --project flag".to_string()),
        (env_var(env, ENV_PROJECT), &|| ENV_PROJECT.to_string()),
        (file.project.clone(), &file_origin),
    ]) {
        Some((value, origin)) => (Some(parse_project(&value, &origin)?), Some(origin)),
        None => {
            let project = repo.as_ref().and_then(origin_project);
            let origin = project
                .as_ref()
                .map(|_| "the repository's `origin` remote".to_string());
            (project, origin)
        }
    };

    // Relative dirs: from flags and the environment against cwd, from the file against its repo.
    let file_base = repo.as_ref().map_or(cwd.as_path(), |r| r.root.as_path());
    let dir_setting = |flag: &Option<PathBuf>,
                       key: &str,
                       from_file: &Option<String>|
     -> Result<Option<PathBuf>, ConfigError> {
        let (raw, base) = if let Some(p) = flag.as_ref().filter(|p| !p.as_os_str().is_empty()) {
            (p.clone(), cwd.as_path())
        } else if let Some(p) = env_var(env, key) {
            (PathBuf::from(p), cwd.as_path())
        } else if let Some(p) = from_file.as_ref().filter(|p| !p.trim().is_empty()) {
            (PathBuf::from(p), file_base)
        } else {
            return Ok(None);
        };
        Ok(Some(absolute_lexical(base, &expand_tilde(&raw, env)?)))
    };

    // Agents key memories by the physical path of the main working tree.
    let project_root = match &repo {
        Some(repo) => repo.main_root.clone(),
        None => fs::canonicalize(&cwd).unwrap_or_else(|_| cwd.clone()),
    };
    let private_dir = match dir_setting(&flags.private_dir, ENV_PRIVATE_DIR, &file.private_dir)? {
        Some(dir) => dir,
        None => {
            let (what, alternative) = flags.agent.adapter().home_missing();
            let dir = flags
                .agent
                .adapter()
                .private_dir(env, &project_root)
                .ok_or(ConfigError::HomeMissing { what, alternative })?;
            absolute_lexical(&cwd, &dir)
        }
    };
    let team_dir = dir_setting(&flags.team_dir, ENV_TEAM_DIR, &file.team_dir)?
        .unwrap_or_else(|| private_dir.join("team"));

    if is_within(&private_dir, &team_dir) {
        return Err(ConfigError::PrivateInsideTeamDir {
            private_dir,
            team_dir,
        });
    }

    let state_dir = state_root(env)
        .ok_or(ConfigError::HomeMissing {
            what: "memsync's state directory",
            alternative: "set XDG_STATE_HOME",
        })?
        .join(state_dir_name(project.as_ref(), &team_dir));
    if is_within(&state_dir, &team_dir) {
        return Err(ConfigError::StateInsideTeamDir {
            state_dir,
            team_dir,
        });
    }

    Ok(Settings {
        server,
        token,
        token_stored,
        project,
        origins: Origins {
            server: server_origin,
            token: token_origin,
            project: project_origin,
        },
        repo,
        agent: flags.agent,
        project_root,
        private_dir,
        team_dir,
        state_dir,
        config_file,
    })
}

fn load_once<'a>(
    slot: &'a mut Option<Credentials>,
    env: &dyn Env,
) -> Result<&'a Credentials, ConfigError> {
    if slot.is_none() {
        *slot = Some(Credentials::load(env)?);
    }
    Ok(slot.get_or_insert_with(Credentials::default))
}

/// `acme__api-<12 hex>`: one state dir per project and team dir, so two checkouts syncing the
/// same project into different team dirs keep separate bookkeeping.
fn state_dir_name(project: Option<&ProjectId>, team_dir: &Path) -> String {
    let hash = Sha256::of(team_dir.as_os_str().as_bytes()).to_hex();
    let prefix = project.map_or_else(|| "local".to_string(), |p| p.as_str().replace('/', "__"));
    format!("{prefix}-{}", &hash[..12])
}

// ---------------------------------------------------------------------------------------------
// Files

/// `.memsync.toml`, committed at the repository root and shared by the team. Unknown keys are
/// ignored so that an older client still reads a newer team's file.
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProjectFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_dir: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team_dir: Option<String>,
}

impl ProjectFile {
    /// `Ok(None)` when the file does not exist.
    pub fn load(path: &Path) -> Result<Option<ProjectFile>, ConfigError> {
        let Some(text) = read_optional(path)? else {
            return Ok(None);
        };
        toml::from_str(&text)
            .map(Some)
            .map_err(|e| toml_error(path, &text, &e, true))
    }

    pub fn save(&self, path: &Path) -> Result<(), ConfigError> {
        let text = toml::to_string(self).map_err(|e| ConfigError::Serialize {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        crate::atomic::write(path, text.as_bytes(), None, Durability::Durable).map_err(|source| {
            ConfigError::Write {
                path: path.to_path_buf(),
                source,
            }
        })
    }
}

fn read_optional(path: &Path) -> Result<Option<String>, ConfigError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Line and column from the error's span. toml's own `Display` quotes the offending line, which
/// must not happen for a file holding tokens, so `show_message` is false there.
fn toml_error(path: &Path, text: &str, error: &toml::de::Error, show_message: bool) -> ConfigError {
    let start = error.span().map_or(0, |s| s.start).min(text.len());
    let before = text.get(..start).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let message = if show_message {
        error.message().trim().to_string()
    } else {
        "the details are not shown because the file holds tokens".to_string()
    };
    ConfigError::Toml {
        path: path.to_path_buf(),
        line,
        column,
        message,
    }
}

/// The user's tokens, one per server, and the server used when nothing else names one; a token
/// from single sign-on (`memsync login --sso`) comes with what renews it:
///
/// ```toml
/// default_server = "https://memsync.example.internal"
///
/// [servers."https://memsync.example.internal"]
/// token = "…"
///
/// [servers."https://memsync.example.internal".sso]
/// issuer = "https://login.example.internal/realms/acme"
/// client_id = "memsync"
/// token_endpoint = "https://login.example.internal/realms/acme/protocol/openid-connect/token"
/// refresh_token = "…"
/// expires_at = "2026-12-01T10:00:00Z"
/// refresh_expires_at = "2026-12-31T09:00:00Z"
/// ```
///
/// Keys this client does not know are kept when it writes the file.
#[derive(Default, Clone)]
pub struct Credentials {
    file: CredentialsFile,
    path: Option<PathBuf>,
}

#[derive(Default, Clone, Serialize, Deserialize)]
struct CredentialsFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    default_server: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    servers: BTreeMap<String, ServerEntry>,
    /// Kept so that an older client doesn't drop what a newer one wrote.
    #[serde(flatten)]
    other: toml::Table,
}

#[derive(Clone, Serialize, Deserialize)]
struct ServerEntry {
    token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sso: Option<SsoLogin>,
    #[serde(flatten)]
    other: toml::Table,
}

/// How a single sign-on token was obtained and how it is renewed: the identity provider, the
/// client memsync signed in as, and the refresh token (a secret, like the token itself).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct SsoLogin {
    pub issuer: String,
    pub client_id: String,
    pub token_endpoint: String,
    /// None when the identity provider gave none: the token then lasts until it expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the token (the identity provider's id_token) expires.
    pub expires_at: chrono::DateTime<chrono::Utc>,
    /// When the refresh token expires, when the identity provider said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_expires_at: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(flatten)]
    pub other: toml::Table,
}

impl fmt::Debug for SsoLogin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SsoLogin")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("token_endpoint", &self.token_endpoint)
            .field("expires_at", &self.expires_at)
            .field("refresh_expires_at", &self.refresh_expires_at)
            .finish_non_exhaustive()
    }
}

/// The credentials file locked against other memsync processes (an exclusive `flock` on
/// `credentials.toml.lock` beside it) for the life of this value: renewing a token is read,
/// refresh, write, and two processes doing it at once would lose a rotating refresh token.
pub struct CredentialsLock {
    _lock: nix::fcntl::Flock<fs::File>,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("another memsync has held {} for over {waited:?}", path.display())]
    Busy {
        path: PathBuf,
        waited: std::time::Duration,
    },
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("path", &self.path)
            .field("default_server", &self.file.default_server)
            .field("servers", &self.file.servers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

const CREDENTIALS_HEADER: &str =
    "# memsync credentials: one API token per server. Keep this file private (mode 0600).\n\n";

impl Credentials {
    /// `$XDG_CONFIG_HOME/memsync/credentials.toml`, else `$HOME/.config/memsync/credentials.toml`.
    pub fn path(env: &dyn Env) -> Option<PathBuf> {
        xdg(env, "XDG_CONFIG_HOME")
            .or_else(|| home(env).map(|h| h.join(".config")))
            .map(|d| d.join("memsync").join("credentials.toml"))
    }

    /// A missing file (or no HOME to find it in) is an empty set of credentials.
    pub fn load(env: &dyn Env) -> Result<Credentials, ConfigError> {
        let Some(path) = Credentials::path(env) else {
            return Ok(Credentials::default());
        };
        let file = match read_optional(&path)? {
            Some(text) => toml::from_str(&text).map_err(|e| toml_error(&path, &text, &e, false))?,
            None => CredentialsFile::default(),
        };
        Ok(Credentials {
            file,
            path: Some(path),
        })
    }

    fn origin(&self) -> String {
        self.path.as_ref().map_or_else(
            || "the credentials file".to_string(),
            |p| p.display().to_string(),
        )
    }

    pub fn token_for(&self, server: &str) -> Option<Token> {
        let key = server_key(server);
        self.file
            .servers
            .iter()
            .find(|(k, _)| server_key(k) == key)
            .map(|(_, entry)| Token(entry.token.trim().to_string()))
            .filter(|t| !t.0.is_empty())
    }

    pub fn default_server(&self) -> Option<&str> {
        self.file
            .default_server
            .as_deref()
            .filter(|s| !s.trim().is_empty())
    }

    /// The single sign-on details stored with `server`'s token, if it came from
    /// `memsync login --sso`.
    pub fn sso_for(&self, server: &str) -> Option<&SsoLogin> {
        let key = server_key(server);
        self.file
            .servers
            .iter()
            .find(|(k, _)| server_key(k) == key)
            .and_then(|(_, entry)| entry.sso.as_ref())
    }

    /// Stores `token` for `server` and makes it the default server.
    pub fn set(&mut self, server: &str, token: &str) {
        self.set_entry(server, token, None);
    }

    /// Stores a single sign-on `token` for `server`, with what renews it, and makes it the
    /// default server.
    pub fn set_sso(&mut self, server: &str, token: &str, sso: SsoLogin) {
        self.set_entry(server, token, Some(sso));
    }

    fn set_entry(&mut self, server: &str, token: &str, sso: Option<SsoLogin>) {
        let key = server_key(server);
        self.file.servers.retain(|k, _| server_key(k) != key);
        self.file.servers.insert(
            key.clone(),
            ServerEntry {
                token: token.trim().to_string(),
                sso,
                other: toml::Table::new(),
            },
        );
        self.file.default_server = Some(key);
    }

    /// Replaces `server`'s single sign-on token and its renewal details after a refresh, keeping
    /// everything else of the entry and the default server. `false` when `server` has no
    /// single sign-on entry (any more).
    pub fn renew_sso(&mut self, server: &str, token: &str, sso: SsoLogin) -> bool {
        let key = server_key(server);
        match self
            .file
            .servers
            .iter_mut()
            .find(|(k, e)| server_key(k) == key && e.sso.is_some())
        {
            Some((_, entry)) => {
                entry.token = token.trim().to_string();
                entry.sso = Some(sso);
                true
            }
            None => false,
        }
    }

    /// Locks the credentials file against other memsync processes, waiting up to `wait` for
    /// one that holds it. Take it before [`Credentials::load`] when the file is read to be
    /// written back.
    pub fn lock(env: &dyn Env, wait: std::time::Duration) -> Result<CredentialsLock, LockError> {
        let path = Credentials::path(env).ok_or(ConfigError::HomeMissing {
            what: "the credentials file",
            alternative: "set XDG_CONFIG_HOME",
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let lock_path = dir.join("credentials.toml.lock");
        let write_err = |source| ConfigError::Write {
            path: lock_path.clone(),
            source,
        };
        private_dir(dir).map_err(write_err)?;
        let mut file = fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(write_err)?;
        let started = std::time::Instant::now();
        loop {
            match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                Ok(lock) => return Ok(CredentialsLock { _lock: lock }),
                Err((f, _)) if started.elapsed() < wait => {
                    file = f;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(_) => {
                    return Err(LockError::Busy {
                        path: lock_path,
                        waited: wait,
                    });
                }
            }
        }
    }

    /// Forgets `server`'s token (and clears it as the default). `false` if there was none.
    pub fn remove(&mut self, server: &str) -> bool {
        let key = server_key(server);
        let before = self.file.servers.len();
        self.file.servers.retain(|k, _| server_key(k) != key);
        if self
            .file
            .default_server
            .as_deref()
            .is_some_and(|d| server_key(d) == key)
        {
            self.file.default_server = None;
        }
        self.file.servers.len() != before
    }

    /// Writes atomically with mode 0600 in a 0700 directory; returns the path written.
    pub fn save(&self, env: &dyn Env) -> Result<PathBuf, ConfigError> {
        let path = Credentials::path(env).ok_or(ConfigError::HomeMissing {
            what: "the credentials file",
            alternative: "set XDG_CONFIG_HOME",
        })?;
        let text = toml::to_string(&self.file).map_err(|e| ConfigError::Serialize {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let write_err = |source| ConfigError::Write {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            private_dir(dir).map_err(write_err)?;
        }
        let contents = format!("{CREDENTIALS_HEADER}{text}");
        crate::atomic::write(&path, contents.as_bytes(), Some(0o600), Durability::Durable)
            .map_err(write_err)?;
        Ok(path)
    }
}

/// Creates `dir` (and its parents) and makes it private to the user (0700).
fn private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| map.get(k).cloned()
    }

    fn canon(p: &Path) -> PathBuf {
        fs::canonicalize(p).unwrap()
    }

    fn git_init(dir: &Path, origin: Option<&str>) {
        fs::create_dir_all(dir.join(".git")).unwrap();
        fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let mut config = "[core]\n\tbare = false\n".to_string();
        if let Some(url) = origin {
            config.push_str(&format!(
                "[remote \"origin\"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
            ));
        }
        fs::write(dir.join(".git/config"), config).unwrap();
    }

    #[test]
    fn finds_plain_repo_from_nested_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        git_init(&root, None);
        fs::create_dir_all(root.join("a/b")).unwrap();
        let repo = find_repo(&root.join("a/b")).unwrap();
        let root = canon(&root);
        assert_eq!(repo.root, root);
        assert_eq!(repo.main_root, root);
        assert_eq!(repo.git_dir, root.join(".git"));
        assert_eq!(repo.common_dir, root.join(".git"));
        assert!(find_repo(tmp.path()).is_none_or(|r| r.root != root));
    }

    #[test]
    fn finds_linked_worktree_and_its_main_root() {
        let tmp = tempfile::tempdir().unwrap();
        let base = canon(tmp.path());
        let main = base.join("main");
        git_init(&main, Some("git@github.com:Acme/API.git"));
        let wt_git = main.join(".git/worktrees/wt");
        fs::create_dir_all(&wt_git).unwrap();
        fs::write(wt_git.join("commondir"), "../..\n").unwrap();
        let wt = base.join("wt");
        fs::create_dir_all(wt.join("src")).unwrap();
        fs::write(
            wt_git.join("gitdir"),
            format!("{}\n", wt.join(".git").display()),
        )
        .unwrap();
        fs::write(wt.join(".git"), format!("gitdir: {}\n", wt_git.display())).unwrap();

        let repo = find_repo(&wt.join("src")).unwrap();
        assert_eq!(repo.root, wt);
        assert_eq!(repo.git_dir, wt_git);
        assert_eq!(repo.common_dir, main.join(".git"));
        assert_eq!(repo.main_root, main);
        assert_eq!(origin_project(&repo).unwrap().as_str(), "acme/api");

        // A relative gitdir is relative to the worktree.
        fs::write(wt.join(".git"), "gitdir: ../main/.git/worktrees/wt\n").unwrap();
        assert_eq!(find_repo(&wt).unwrap().git_dir, wt_git);
    }

    #[test]
    fn origin_url_forms() {
        let cases = [
            ("git@github.com:Acme/API.git", Some("acme/api")),
            ("git@github.com:acme/api", Some("acme/api")),
            ("ssh://git@github.com/acme/api.git", Some("acme/api")),
            (
                "ssh://git@gitlab.example:2222/acme/api.git",
                Some("acme/api"),
            ),
            ("https://github.com/Acme/Api.git", Some("acme/api")),
            ("https://github.com/acme/api/", Some("acme/api")),
            ("http://user@git.example/acme/api", Some("acme/api")),
            ("git://git.example/acme/api.git", Some("acme/api")),
            (
                "https://gitlab.example/group/sub/repo.git",
                Some("group/repo"),
            ),
            ("file:///srv/git/acme/api.git", None),
            ("/srv/git/acme/api.git", None),
            ("../api.git", None),
            ("https://github.com/acme", None),
            ("https://github.com/_bad/api", None),
        ];
        for (url, want) in cases {
            assert_eq!(
                project_from_url(url).map(|p| p.to_string()).as_deref(),
                want,
                "{url}"
            );
        }
    }

    #[test]
    fn git_config_parsing_tolerates_layout() {
        let config = "# comment\n[core]\n\turl = nope\n[remote \"upstream\"]\n  url = git@h:o/up.git\n\
                      ; another\n[Remote \"origin\"]  \n\tfetch = x\n\tURL\t=\t\"git@h:Team/Name.git\"  # trailing\n";
        assert_eq!(
            git_config_origin_url(config).as_deref(),
            Some("git@h:Team/Name.git")
        );
        assert_eq!(
            git_config_origin_url("[remote.origin]\nurl = https://h/a/b ; c\n").as_deref(),
            Some("https://h/a/b")
        );
        assert_eq!(
            git_config_origin_url("[remote \"Origin\"]\nurl = x\n"),
            None
        );
    }

    #[test]
    fn claude_key_replaces_every_non_alphanumeric() {
        assert_eq!(
            claude_project_key(Path::new("/home/a/my.repo")),
            "-home-a-my-repo"
        );
        assert_eq!(
            claude_project_key(Path::new("/x/Dé_v 1/😀")),
            "-x-D--v-1---"
        );
    }

    struct Fixture {
        _tmp: tempfile::TempDir,
        base: PathBuf,
        repo: PathBuf,
        home: PathBuf,
    }

    fn fixture(origin: Option<&str>) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let base = canon(tmp.path());
        let repo = base.join("work/my.repo");
        git_init(&repo, origin);
        let home = base.join("home");
        fs::create_dir_all(&home).unwrap();
        Fixture {
            _tmp: tmp,
            base,
            repo,
            home,
        }
    }

    #[test]
    fn defaults_follow_claude_code_layout() {
        let f = fixture(Some("git@github.com:acme/api.git"));
        let env = env_of(&[("HOME", f.home.to_str().unwrap())]);
        let s = resolve(&f.repo, &Overrides::default(), &env).unwrap();
        let key = claude_project_key(&f.repo);
        assert!(key.ends_with("-work-my-repo"));
        let private = f.home.join(".claude/projects").join(&key).join("memory");
        assert_eq!(s.private_dir, private);
        assert_eq!(s.team_dir, private.join("team"));
        assert_eq!(s.project.unwrap().as_str(), "acme/api");
        assert_eq!(s.server, None);
        assert!(s.token.is_none());
        assert_eq!(s.config_file, None);
        let hash = Sha256::of(s.team_dir.as_os_str().as_bytes()).to_hex();
        assert_eq!(
            s.state_dir,
            f.home
                .join(".local/state/memsync")
                .join(format!("acme__api-{}", &hash[..12]))
        );

        let env = env_of(&[
            ("HOME", f.home.to_str().unwrap()),
            ("CLAUDE_CONFIG_DIR", "/cc"),
            ("XDG_STATE_HOME", "/st"),
        ]);
        let outside = f.base.join("elsewhere");
        fs::create_dir_all(&outside).unwrap();
        let s = resolve(&outside, &Overrides::default(), &env).unwrap();
        assert_eq!(
            s.private_dir,
            Path::new("/cc/projects")
                .join(claude_project_key(&outside))
                .join("memory")
        );
        assert!(s.project.is_none() && s.repo.is_none());
        assert!(
            s.state_dir
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("local-")
        );
        assert!(s.state_dir.starts_with("/st/memsync"));
    }

    #[test]
    fn precedence_flag_env_file_credentials() {
        let f = fixture(Some("git@github.com:origin/proj.git"));
        let xdg_config = f.base.join("xdg");
        let env_pairs = |extra: &[(&'static str, &'static str)]| {
            let mut pairs = vec![
                ("HOME".to_string(), f.home.display().to_string()),
                (
                    "XDG_CONFIG_HOME".to_string(),
                    xdg_config.display().to_string(),
                ),
            ];
            pairs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            let map: HashMap<String, String> = pairs.into_iter().collect();
            move |k: &str| map.get(k).cloned()
        };

        let mut creds = Credentials::default();
        creds.set("https://flag.example", "tok-flag-server");
        creds.set("https://file.example/", "tok-file-server");
        creds.set("https://creds.example", "tok-creds");
        creds.save(&env_pairs(&[])).unwrap();

        // Credentials only.
        let s = resolve(&f.repo, &Overrides::default(), &env_pairs(&[])).unwrap();
        assert_eq!(s.server.as_deref(), Some("https://creds.example"));
        assert_eq!(s.token.unwrap().expose(), "tok-creds");
        assert_eq!(s.project.unwrap().as_str(), "origin/proj");

        // The file beats credentials; relative dirs are relative to the repo root.
        let file = ProjectFile {
            server: Some("https://file.example".into()),
            project: Some("file/proj".into()),
            private_dir: Some("mem/private".into()),
            team_dir: Some("~/team".into()),
        };
        file.save(&f.repo.join(PROJECT_FILE)).unwrap();
        let cwd = f.repo.join("sub");
        fs::create_dir_all(&cwd).unwrap();
        let s = resolve(&cwd, &Overrides::default(), &env_pairs(&[])).unwrap();
        assert_eq!(s.server.as_deref(), Some("https://file.example"));
        assert_eq!(s.token.unwrap().expose(), "tok-file-server");
        assert_eq!(s.project.unwrap().as_str(), "file/proj");
        assert_eq!(s.private_dir, f.repo.join("mem/private"));
        assert_eq!(s.team_dir, f.home.join("team"));
        assert_eq!(s.config_file, Some(f.repo.join(PROJECT_FILE)));

        // The environment beats the file; relative dirs are relative to cwd.
        let env = env_pairs(&[
            (ENV_SERVER, "https://env.example/"),
            (ENV_TOKEN, "tok-env"),
            (ENV_PROJECT, "env/proj"),
            (ENV_PRIVATE_DIR, "p"),
            (ENV_TEAM_DIR, "./t/../t2"),
        ]);
        let s = resolve(&cwd, &Overrides::default(), &env).unwrap();
        assert_eq!(s.server.as_deref(), Some("https://env.example"));
        assert_eq!(s.token.unwrap().expose(), "tok-env");
        assert_eq!(s.project.unwrap().as_str(), "env/proj");
        assert_eq!(s.private_dir, cwd.join("p"));
        assert_eq!(s.team_dir, cwd.join("t2"));

        // Flags beat everything; the token comes from credentials for the flag's server.
        let flags = Overrides {
            server: Some("https://flag.example".into()),
            token: None,
            project: Some("flag/proj".into()),
            private_dir: Some("/abs/private".into()),
            team_dir: Some("/abs/team".into()),
            ..Overrides::default()
        };
        let env = env_pairs(&[
            (ENV_SERVER, "https://env.example"),
            (ENV_PROJECT, "env/proj"),
        ]);
        let s = resolve(&cwd, &flags, &env).unwrap();
        assert_eq!(s.server.as_deref(), Some("https://flag.example"));
        assert_eq!(s.token.as_ref().unwrap().expose(), "tok-flag-server");
        assert_eq!(s.project.unwrap().as_str(), "flag/proj");
        assert_eq!(s.private_dir, Path::new("/abs/private"));
        assert_eq!(s.team_dir, Path::new("/abs/team"));

        let flags = Overrides {
            token: Some("tok-flag".into()),
            ..flags
        };
        let env = env_pairs(&[(ENV_TOKEN, "tok-env")]);
        assert_eq!(
            resolve(&cwd, &flags, &env).unwrap().token.unwrap().expose(),
            "tok-flag"
        );
    }

    #[test]
    fn invalid_values_are_reported_with_their_origin() {
        let f = fixture(None);
        let env = env_of(&[("HOME", f.home.to_str().unwrap()), (ENV_PROJECT, "Acme")]);
        let err = resolve(&f.repo, &Overrides::default(), &env).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains(ENV_PROJECT) && msg.contains("team/name"),
            "{msg}"
        );

        let flags = Overrides {
            server: Some("memsync.example".into()),
            ..Overrides::default()
        };
        let env = env_of(&[("HOME", f.home.to_str().unwrap())]);
        let msg = resolve(&f.repo, &flags, &env).unwrap_err().to_string();
        assert!(
            msg.contains("--server") && msg.contains("https://"),
            "{msg}"
        );

        let flags = Overrides {
            server: Some("https://user:secret@host".into()),
            ..Overrides::default()
        };
        let msg = resolve(&f.repo, &flags, &env).unwrap_err().to_string();
        assert!(!msg.contains("secret"), "{msg}");

        let msg = resolve(&f.repo, &Overrides::default(), &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("HOME is not set"), "{msg}");
    }

    #[test]
    fn server_normalisation() {
        assert_eq!(
            normalize_server(" HTTPS://Memsync.Example:8443/base/ ", "x").unwrap(),
            "https://memsync.example:8443/base"
        );
        for bad in [
            "ftp://x",
            "https://",
            "https://h?x=1",
            "https://h h",
            "h:80",
        ] {
            assert!(normalize_server(bad, "x").is_err(), "{bad}");
        }
    }

    #[test]
    fn state_dir_never_inside_team_dir() {
        let f = fixture(None);
        let team = f.base.join("team");
        let env = env_of(&[
            ("HOME", f.home.to_str().unwrap()),
            ("XDG_STATE_HOME", team.join("state").to_str().unwrap()),
            (ENV_TEAM_DIR, team.to_str().unwrap()),
        ]);
        let err = resolve(&f.repo, &Overrides::default(), &env).unwrap_err();
        assert!(
            matches!(err, ConfigError::StateInsideTeamDir { .. }),
            "{err}"
        );

        // Also through a symlink to the team dir.
        fs::create_dir_all(&team).unwrap();
        let link = f.base.join("link");
        std::os::unix::fs::symlink(&team, &link).unwrap();
        let env = env_of(&[
            ("HOME", f.home.to_str().unwrap()),
            ("XDG_STATE_HOME", link.to_str().unwrap()),
            (ENV_TEAM_DIR, team.to_str().unwrap()),
        ]);
        assert!(matches!(
            resolve(&f.repo, &Overrides::default(), &env),
            Err(ConfigError::StateInsideTeamDir { .. })
        ));

        let env = env_of(&[
            ("HOME", f.home.to_str().unwrap()),
            (ENV_PRIVATE_DIR, team.join("mine").to_str().unwrap()),
            (ENV_TEAM_DIR, team.to_str().unwrap()),
        ]);
        assert!(matches!(
            resolve(&f.repo, &Overrides::default(), &env),
            Err(ConfigError::PrivateInsideTeamDir { .. })
        ));
    }

    #[test]
    fn team_dir_symlink_is_kept_lexically() {
        let f = fixture(None);
        let real = f.base.join("real-team");
        fs::create_dir_all(&real).unwrap();
        let link = f.repo.join("team-link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let env = env_of(&[("HOME", f.home.to_str().unwrap())]);
        let flags = Overrides {
            team_dir: Some(f.repo.join("x/../team-link")),
            ..Overrides::default()
        };
        assert_eq!(resolve(&f.repo, &flags, &env).unwrap().team_dir, link);
    }

    #[test]
    fn credentials_round_trip_with_private_mode() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().to_str().unwrap().to_string();
        let env = env_of(&[("HOME", &home)]);
        let mut creds = Credentials::load(&env).unwrap();
        assert!(creds.default_server().is_none());
        creds.set("https://a.example/", "tok-a");
        creds.set("https://b.example", "tok-b");
        let path = creds.save(&env).unwrap();
        assert_eq!(path, tmp.path().join(".config/memsync/credentials.toml"));
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            fs::metadata(path.parent().unwrap())
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );

        let mut back = Credentials::load(&env).unwrap();
        assert_eq!(back.default_server(), Some("https://b.example"));
        assert_eq!(
            back.token_for("https://a.example").unwrap().expose(),
            "tok-a"
        );
        assert!(!format!("{back:?}").contains("tok-"));
        assert!(back.remove("https://b.example/"));
        assert!(!back.remove("https://b.example"));
        assert_eq!(back.default_server(), None);
        back.save(&env).unwrap();
        let back = Credentials::load(&env).unwrap();
        assert!(back.token_for("https://b.example").is_none());
        assert!(back.token_for("https://a.example").is_some());

        let xdg = tmp.path().join("xdg");
        let env = env_of(&[("HOME", &home), ("XDG_CONFIG_HOME", xdg.to_str().unwrap())]);
        assert_eq!(
            Credentials::path(&env).unwrap(),
            xdg.join("memsync/credentials.toml")
        );
    }

    #[test]
    fn sso_entries_round_trip_keep_unknown_keys_and_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().to_str().unwrap().to_string();
        let env = env_of(&[("HOME", &home)]);
        let path = Credentials::path(&env).unwrap();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(
            &path,
            "future = 1\n[servers.\"https://a.example\"]\ntoken = \"old\"\nnote = \"kept\"\n\
             [servers.\"https://a.example\".sso]\nissuer = \"https://idp\"\nclient_id = \"memsync\"\n\
             token_endpoint = \"https://idp/token\"\nrefresh_token = \"rt-1\"\n\
             expires_at = \"2026-12-01T10:00:00Z\"\nextra = true\n",
        )
        .unwrap();
        let mut creds = Credentials::load(&env).unwrap();
        let sso = creds.sso_for("https://a.example/").unwrap().clone();
        assert_eq!(sso.refresh_token.as_deref(), Some("rt-1"));
        assert!(!format!("{sso:?}").contains("rt-1"));
        let renewed = SsoLogin {
            refresh_token: Some("rt-2".into()),
            ..sso
        };
        assert!(creds.renew_sso("https://a.example", "new", renewed));
        assert!(!creds.renew_sso(
            "https://b.example",
            "new",
            creds.sso_for("https://a.example").unwrap().clone()
        ));
        creds.save(&env).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        for kept in ["future = 1", "note = \"kept\"", "extra = true", "rt-2"] {
            assert!(text.contains(kept), "{kept} in {text}");
        }
        let back = Credentials::load(&env).unwrap();
        assert_eq!(back.token_for("https://a.example").unwrap().expose(), "new");
        // A login with a token replaces the single sign-on.
        let mut creds = back;
        creds.set("https://a.example", "plain");
        assert!(creds.sso_for("https://a.example").is_none());

        // One holder at a time.
        let held = Credentials::lock(&env, std::time::Duration::ZERO).unwrap();
        assert!(matches!(
            Credentials::lock(&env, std::time::Duration::from_millis(50)),
            Err(LockError::Busy { .. })
        ));
        drop(held);
        Credentials::lock(&env, std::time::Duration::ZERO).unwrap();
    }

    #[test]
    fn toml_errors_name_file_and_line() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(PROJECT_FILE);
        fs::write(&path, "server = \"https://x\"\nproject = acme/api\n").unwrap();
        let msg = ProjectFile::load(&path).unwrap_err().to_string();
        assert!(msg.contains(&format!("{}:2:", path.display())), "{msg}");

        let env = env_of(&[("HOME", tmp.path().to_str().unwrap())]);
        let creds = Credentials::path(&env).unwrap();
        fs::create_dir_all(creds.parent().unwrap()).unwrap();
        fs::write(&creds, "[servers.\"https://x\"]\ntoken = sekrit-token\n").unwrap();
        let msg = Credentials::load(&env).unwrap_err().to_string();
        assert!(msg.contains(":2:") && !msg.contains("sekrit"), "{msg}");
    }

    #[test]
    fn project_file_round_trip_and_missing() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(PROJECT_FILE);
        assert_eq!(ProjectFile::load(&path).unwrap(), None);
        let file = ProjectFile {
            server: Some("https://m.example".into()),
            project: Some("acme/api".into()),
            ..ProjectFile::default()
        };
        file.save(&path).unwrap();
        assert_eq!(ProjectFile::load(&path).unwrap(), Some(file));
    }

    #[test]
    fn token_debug_is_redacted() {
        assert_eq!(format!("{:?}", Token::new("abc")), "Token([redacted])");
        let _ = ProcessEnv.var("PATH");
    }
}
