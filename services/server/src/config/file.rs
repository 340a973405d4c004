//! The configuration file (`--config FILE`, `MEMSYNC_CONFIG`) and `memsync-server config show`.
//!
//! A file's settings become the default values of the matching flags before the command line is
//! parsed for good, so clap's own order (flag, then environment, then default) puts the file
//! between the environment and the built-in defaults for every setting. The keys are the long
//! flags of [`super::GlobalArgs`] with `_` for `-`, read from the clap definitions, so a new flag
//! is a new key without more code; plus `jwt_secret`, which is never a flag (a flag shows in
//! `ps`).

use std::any::TypeId;
use std::ffi::OsString;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, CommandFactory, FromArgMatches};

use super::{Cli, SecretString};

/// The key of the signing secret: from the file or `MEMSYNC_JWT_SECRET`, never from a flag.
pub const JWT_SECRET: &str = "jwt_secret";
const JWT_SECRET_ENV: &str = "MEMSYNC_JWT_SECRET";

/// Settings that may hold credentials: never printed by `config show`, never echoed in an error.
pub const SECRET_KEYS: [&str; 3] = ["database_url", JWT_SECRET, "mirror_url_template"];

/// What `config show` prints instead of a secret that is set.
pub const REDACTED: &str = "[redacted]";

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Flag,
    /// The environment variable that gave it.
    Env(String),
    File,
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag => f.write_str("flag"),
            Source::Env(var) => write!(f, "env {var}"),
            Source::File => f.write_str("file"),
            Source::Default => f.write_str("default"),
        }
    }
}

/// One setting's effective value and where it came from.
#[derive(Debug, Clone)]
pub struct Setting {
    pub key: String,
    /// `None` when unset. A secret's value is never kept here, only whether it is set.
    pub value: Option<toml::Value>,
    pub source: Source,
}

/// What parsing learned beyond the flags' values: the configuration file, the signing secret it
/// may hold, and where every setting came from.
#[derive(Default)]
pub struct Resolved {
    /// The configuration file and what named it (`--config` or `MEMSYNC_CONFIG`).
    pub file: Option<(PathBuf, Source)>,
    /// `jwt_secret` from the file (the environment's `MEMSYNC_JWT_SECRET` wins over it).
    pub jwt_secret: Option<SecretString>,
    /// Every setting, in the order of the flags.
    pub settings: Vec<Setting>,
    /// The teams' own limits, from the file's `[limits.teams.TEAM]` tables.
    pub team_limits: std::collections::BTreeMap<String, crate::limits::TeamLimits>,
}

/// Why the command line or the configuration file was refused.
#[derive(Debug)]
pub enum ParseError {
    /// Bad flags or environment values, `--help`, `--version`: clap's own message and exit.
    Clap(clap::Error),
    /// The configuration file: one message a problem, each naming the file.
    File(Vec<String>),
}

impl From<clap::Error> for ParseError {
    fn from(e: clap::Error) -> Self {
        ParseError::Clap(e)
    }
}

/// What a setting's value is, from the type its flag parses into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    /// A whole number within the range of the flag's type.
    Int {
        min: i128,
        max: i128,
    },
    Address,
    Duration,
    Path,
    Text,
}

impl Kind {
    fn of(arg: &Arg) -> Kind {
        let t = arg.get_value_parser().type_id();
        let int = |min: i128, max: i128| Kind::Int { min, max };
        if matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse)
            || t == TypeId::of::<bool>()
        {
            Kind::Bool
        } else if t == TypeId::of::<usize>() {
            int(0, usize::MAX as i128)
        } else if t == TypeId::of::<u64>() {
            int(0, u64::MAX as i128)
        } else if t == TypeId::of::<u32>() {
            int(0, u32::MAX as i128)
        } else if t == TypeId::of::<i64>() {
            int(i64::MIN as i128, i64::MAX as i128)
        } else if t == TypeId::of::<i32>() {
            int(i32::MIN as i128, i32::MAX as i128)
        } else if t == TypeId::of::<SocketAddr>() {
            Kind::Address
        } else if t == TypeId::of::<Duration>() {
            Kind::Duration
        } else if t == TypeId::of::<PathBuf>() {
            Kind::Path
        } else {
            Kind::Text
        }
    }

    /// What a value of this kind is, for an error message and the docs.
    fn expected(self) -> String {
        match self {
            Kind::Bool => "true or false".to_owned(),
            Kind::Int { min, max } if max >= i64::MAX as i128 && min == 0 => {
                "a whole number, 0 or more".to_owned()
            }
            Kind::Int { max, .. } if max >= i64::MAX as i128 => "a whole number".to_owned(),
            Kind::Int { min, max } => format!("a whole number from {min} to {max}"),
            Kind::Address => "an address string such as \"127.0.0.1:7878\"".to_owned(),
            Kind::Duration => "a duration string such as \"30s\", \"5m\" or \"2h\"".to_owned(),
            Kind::Path => "a path string".to_owned(),
            Kind::Text => "a string".to_owned(),
        }
    }

    /// The file's form of a value for this kind's flag, or `None` when the TOML type is wrong.
    fn flag_value(self, v: &toml::Value) -> Option<String> {
        match (self, v) {
            (Kind::Bool, toml::Value::Boolean(b)) => Some(b.to_string()),
            (Kind::Int { .. }, toml::Value::Integer(i)) => Some(i.to_string()),
            (Kind::Address | Kind::Duration | Kind::Path | Kind::Text, toml::Value::String(s)) => {
                Some(s.clone())
            }
            _ => None,
        }
    }
}

fn type_name(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date-time",
        toml::Value::Array(_) => "an array",
        toml::Value::Table(_) => "a table",
    }
}

/// The key of a setting's flag: its long name with `_` for `-`.
fn key_of(arg: &Arg) -> Option<String> {
    arg.get_long().map(|l| l.replace('-', "_"))
}

/// The arguments a file may set: every global setting but `--config` itself and hidden test
/// hooks (`--help` and `--version` are not global).
fn file_args(cmd: &clap::Command) -> impl Iterator<Item = &Arg> {
    cmd.get_arguments().filter(|a| {
        a.is_global_set() && !a.is_hide_set() && a.get_long().is_some() && a.get_id() != "config"
    })
}

/// Every key a configuration file may hold, in the order of the flags (`jwt_secret` after
/// `database_url`).
pub fn keys() -> Vec<String> {
    let cmd = Cli::command();
    let mut keys = Vec::new();
    for arg in file_args(&cmd) {
        let key = key_of(arg).unwrap_or_default();
        let after = key == "database_url";
        keys.push(key);
        if after {
            keys.push(JWT_SECRET.to_owned());
        }
    }
    keys
}

/// Parses the command line (`args` includes the program name) with the configuration file it
/// names, if any. The environment is the process's.
pub fn parse_from<I>(args: I) -> Result<Cli, ParseError>
where
    I: IntoIterator,
    I::Item: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let mut cmd = Cli::command();
    // A first parse finds `--config` (wherever it is on the line, or MEMSYNC_CONFIG) exactly as
    // clap reads it; what it refuses would be refused anyway, since a file only changes defaults.
    let first = cmd.try_get_matches_from_mut(args.iter().cloned())?;
    let file = first.get_one::<PathBuf>("config").cloned().map(|p| {
        let by = source_of(&first, &cmd, "config").unwrap_or(Source::Flag);
        (p, by)
    });
    let mut cmd = Cli::command();
    let mut from_file: Vec<String> = Vec::new();
    let mut jwt_secret = None;
    let mut team_limits = Default::default();
    if let Some((path, by)) = &file {
        let table = read_table(path, by)?;
        let (settings, teams) = check_table(&cmd, path, &table)?;
        team_limits = teams;
        for (key, value) in settings {
            if key == JWT_SECRET {
                jwt_secret = Some(SecretString(value));
                from_file.push(key);
                continue;
            }
            let id = file_args(&cmd)
                .find(|a| key_of(a).as_deref() == Some(key.as_str()))
                .map(|a| a.get_id().clone())
                .expect("a checked key is a flag's");
            let secret = SECRET_KEYS.contains(&key.as_str());
            // clap keeps default values for the life of the process (this runs once).
            let value: &'static str = Box::leak(value.into_boxed_str());
            cmd = cmd.mut_arg(id, |a| a.default_value(value).hide_default_value(secret));
            from_file.push(key);
        }
    }
    let matches = cmd.try_get_matches_from_mut(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    let mut settings = Vec::new();
    for arg in file_args(&cmd) {
        let key = key_of(arg).unwrap_or_default();
        let id = arg.get_id().as_str();
        let source = match source_of(&matches, &cmd, id) {
            Some(Source::Default) if from_file.contains(&key) => Source::File,
            Some(s) => s,
            None => Source::Default,
        };
        let value = value_of(&matches, arg);
        settings.push(Setting { key, value, source });
    }
    // DATABASE_URL, the conventional name, is the environment's too: it loses to the flag and
    // MEMSYNC_DATABASE_URL, and wins over the file.
    if let Some(db) = settings.iter_mut().find(|s| s.key == "database_url")
        && matches!(db.source, Source::File | Source::Default)
        && let Some(url) = std::env::var("DATABASE_URL").ok().filter(|u| !u.is_empty())
    {
        cli.global.database_url = Some(url.clone());
        db.value = Some(toml::Value::String(url));
        db.source = Source::Env("DATABASE_URL".to_owned());
    }
    let (secret_set, secret_source) = match std::env::var(JWT_SECRET_ENV) {
        Ok(s) if !s.is_empty() => (true, Source::Env(JWT_SECRET_ENV.to_owned())),
        _ if jwt_secret.is_some() => (true, Source::File),
        _ => (false, Source::Default),
    };
    let at = settings
        .iter()
        .position(|s| s.key == "database_url")
        .map_or(settings.len(), |i| i + 1);
    settings.insert(
        at,
        Setting {
            key: JWT_SECRET.to_owned(),
            value: secret_set.then(|| toml::Value::String(String::new())),
            source: secret_source,
        },
    );
    // In the order of the flags (`mut_arg` moved those the file set to the end).
    let order = keys();
    settings.sort_by_key(|s| order.iter().position(|k| *k == s.key));
    // A secret's value is not kept beyond whether it is set.
    for s in &mut settings {
        if SECRET_KEYS.contains(&s.key.as_str()) {
            s.value = s
                .value
                .as_ref()
                .map(|_| toml::Value::String(REDACTED.to_owned()));
        }
    }
    cli.global.resolved = Resolved {
        file,
        jwt_secret: jwt_secret.filter(|s| !s.expose().is_empty()),
        settings,
        team_limits,
    };
    Ok(cli)
}

/// Where an argument's value came from, with the name of its environment variable.
fn source_of(m: &ArgMatches, cmd: &clap::Command, id: &str) -> Option<Source> {
    Some(match m.value_source(id)? {
        ValueSource::CommandLine => Source::Flag,
        ValueSource::EnvVariable => {
            let var = cmd
                .get_arguments()
                .find(|a| a.get_id() == id)
                .and_then(Arg::get_env)
                .map(|v| v.to_string_lossy().into_owned())
                .unwrap_or_default();
            Source::Env(var)
        }
        _ => Source::Default,
    })
}

/// A setting's effective value as TOML (`None` when unset).
fn value_of(m: &ArgMatches, arg: &Arg) -> Option<toml::Value> {
    let id = arg.get_id().as_str();
    match Kind::of(arg) {
        Kind::Bool => m.get_one::<bool>(id).map(|b| toml::Value::Boolean(*b)),
        kind => {
            let raw = m.get_raw(id)?.next()?.to_string_lossy().into_owned();
            let int = match kind {
                Kind::Int { .. } => raw.trim().parse::<i128>().ok(),
                _ => None,
            };
            Some(match int.and_then(|i| i64::try_from(i).ok()) {
                Some(i) => toml::Value::Integer(i),
                None => toml::Value::String(raw),
            })
        }
    }
}

/// The file as a TOML table; a file that cannot be read or is not TOML is refused.
fn read_table(path: &Path, by: &Source) -> Result<toml::Table, ParseError> {
    let named = match by {
        Source::Env(var) => format!("named by {var}"),
        _ => "named by --config".to_owned(),
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        ParseError::File(vec![format!(
            "cannot read the configuration file {} ({named}): {e}; give the path of a TOML file of settings (see docs/configuration.md), or leave out --config and MEMSYNC_CONFIG",
            path.display()
        )])
    })?;
    toml::from_str::<toml::Table>(&text).map_err(|e| {
        // Only the line and the reason: the line itself may hold a secret.
        let why = e.message().trim_end_matches('.');
        let at = match e.span() {
            Some(span) => format!(
                " line {}:",
                text[..span.start.min(text.len())].matches('\n').count() + 1
            ),
            None => String::new(),
        };
        ParseError::File(vec![format!(
            "the configuration file {} is not valid TOML:{at} {why}",
            path.display()
        )])
    })
}

/// The teams' own limits a file gives, by team.
type TeamLimits = std::collections::BTreeMap<String, crate::limits::TeamLimits>;

/// Checks every key and value of the file against the flags; returns each setting as its flag
/// would take it and the `[limits]` table's teams, or every problem found.
fn check_table(
    cmd: &clap::Command,
    path: &Path,
    table: &toml::Table,
) -> Result<(Vec<(String, String)>, TeamLimits), ParseError> {
    let file = path.display();
    let keys = keys();
    let mut errors = Vec::new();
    let mut out = Vec::new();
    let mut teams = TeamLimits::new();
    for (key, value) in table {
        let secret = SECRET_KEYS.contains(&key.as_str());
        if key == crate::limits::FILE_TABLE {
            match crate::limits::teams_from_toml(value, &file.to_string()) {
                Ok(t) => teams = t,
                Err(e) => errors.extend(e),
            }
            continue;
        }
        if key == JWT_SECRET {
            match value {
                toml::Value::String(s) if s.len() >= 32 => out.push((key.clone(), s.clone())),
                toml::Value::String(_) => errors.push(format!(
                    "`{key}` in {file} is shorter than 32 characters; give a longer secret (e.g. from `openssl rand -base64 48`)"
                )),
                v => errors.push(format!(
                    "`{key}` in {file} is {}; expected a string (the HS256 signing secret, at least 32 characters)",
                    type_name(v)
                )),
            }
            continue;
        }
        let Some(arg) = file_args(cmd).find(|a| key_of(a).as_deref() == Some(key.as_str())) else {
            errors.push(unknown_key(key, value, &file.to_string(), &keys));
            continue;
        };
        let kind = Kind::of(arg);
        let flag = format!("--{}", arg.get_long().unwrap_or_default());
        let example = arg
            .get_default_values()
            .first()
            .map(|d| d.to_string_lossy().into_owned())
            .filter(|_| kind != Kind::Bool)
            .map(|d| match kind {
                Kind::Int { .. } => format!(", e.g. `{key} = {d}`"),
                _ => format!(", e.g. `{key} = {}`", toml::Value::String(d)),
            })
            .unwrap_or_default();
        let Some(given) = kind.flag_value(value) else {
            errors.push(format!(
                "`{key}` in {file} is {}; expected {} (what {flag} takes){example}",
                type_name(value),
                kind.expected()
            ));
            continue;
        };
        if kind != Kind::Bool
            && let Err(why) = parse_as_flag(arg, &given)
        {
            let shown = if secret {
                String::new()
            } else {
                format!(" {value}")
            };
            errors.push(format!(
                "`{key}` in {file}: the value{shown} is not valid ({why}); expected {} (what {flag} takes){example}",
                kind.expected()
            ));
            continue;
        }
        out.push((key.clone(), given));
    }
    if errors.is_empty() {
        Ok((out, teams))
    } else {
        Err(ParseError::File(errors))
    }
}

/// Runs a value through its flag's own parser.
fn parse_as_flag(arg: &Arg, value: &str) -> Result<(), String> {
    let probe = arg
        .clone()
        .global(false)
        .env(None::<&'static str>)
        .required(false);
    let long = arg.get_long().unwrap_or_default();
    clap::Command::new("memsync-server")
        .no_binary_name(true)
        .arg(probe)
        .try_get_matches_from([format!("--{long}={value}")])
        .map(|_| ())
        .map_err(|e| match std::error::Error::source(&e) {
            Some(inner) => inner.to_string(),
            None => e.kind().to_string(),
        })
}

fn unknown_key(key: &str, value: &toml::Value, file: &str, keys: &[String]) -> String {
    if key == "config" {
        return format!(
            "`config` in {file}: a configuration file cannot name another one; give the file with --config or MEMSYNC_CONFIG"
        );
    }
    if let toml::Value::Table(_) = value {
        return format!(
            "`[{key}]` in {file} is a table, and the configuration file holds flat keys only (and the `[limits.teams.TEAM]` tables of per-team limits): put the settings at the top of the file, e.g. `listen = \"127.0.0.1:7878\"` (see docs/configuration.md)"
        );
    }
    let hint = match nearest(key, keys) {
        Some(k) => format!(" (did you mean `{k}`?)"),
        None => String::new(),
    };
    format!(
        "unknown key `{key}` in {file}{hint}; the keys are the long flags of memsync-server with `_` for `-` (see docs/configuration.md)"
    )
}

/// The valid key nearest to a misspelt one, if it is near enough to be the one meant.
fn nearest<'a>(key: &str, keys: &'a [String]) -> Option<&'a str> {
    let normal = key.to_lowercase().replace('-', "_");
    keys.iter()
        .map(|k| (edit_distance(&normal, k), k))
        .filter(|(d, k)| *d <= (k.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

/// Levenshtein distance, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diag + usize::from(ca != *cb));
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

impl Resolved {
    /// The effective configuration as TOML, every setting with a comment saying where its value
    /// came from; secrets only say whether they are set.
    pub fn show(&self) -> String {
        let mut out = String::from(
            "# memsync-server's effective configuration (`memsync-server config show`).\n\
             # Each setting says where its value came from: flag, env VARIABLE, file or default.\n\
             # Secrets are never printed: a set one reads \"[redacted]\". Unset settings are\n\
             # commented out.\n",
        );
        match &self.file {
            Some((path, by)) => {
                let by = match by {
                    Source::Env(var) => format!("env {var}"),
                    _ => "flag --config".to_owned(),
                };
                out.push_str(&format!(
                    "# Configuration file: {}  ({by})\n",
                    path.display()
                ));
            }
            None => out.push_str("# Configuration file: none\n"),
        }
        let lines: Vec<(String, &Source)> = self
            .settings
            .iter()
            .map(|s| {
                let line = match &s.value {
                    Some(v) => format!("{} = {v}", s.key),
                    None => format!("# {} = <unset>", s.key),
                };
                (line, &s.source)
            })
            .collect();
        let width = lines.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
        for (line, source) in lines {
            out.push_str(&format!("{line:width$}  # {source}\n"));
        }
        // The teams' own limits (after every top-level key, as TOML wants).
        out.push_str(
            &crate::limits::LimitSettings {
                teams: self.team_limits.clone(),
                ..Default::default()
            }
            .teams_toml(),
        );
        out
    }

    /// Where a setting came from (for tests and messages).
    pub fn source(&self, key: &str) -> Option<&Source> {
        self.settings
            .iter()
            .find(|s| s.key == key)
            .map(|s| &s.source)
    }
}

/// The table of `docs/configuration.md`: every key with its flag, environment variable, default
/// and meaning, from the clap definitions.
pub fn doc_table() -> String {
    let cmd = Cli::command();
    let mut out = String::from(
        "| key | flag | environment | default | value | meaning |\n|---|---|---|---|---|---|\n",
    );
    let cell = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace('|', "\\|")
    };
    for arg in file_args(&cmd) {
        let key = key_of(arg).unwrap_or_default();
        let kind = Kind::of(arg);
        let env = match (key.as_str(), arg.get_env()) {
            ("database_url", Some(e)) => format!("`{}`, `DATABASE_URL`", e.to_string_lossy()),
            (_, Some(e)) => format!("`{}`", e.to_string_lossy()),
            (_, None) => "—".to_owned(),
        };
        let default = match arg.get_default_values().first() {
            Some(d) => match kind {
                Kind::Int { .. } | Kind::Bool => format!("`{}`", d.to_string_lossy()),
                _ => format!(
                    "`{}`",
                    toml::Value::String(d.to_string_lossy().into_owned())
                ),
            },
            None if kind == Kind::Bool => "`false`".to_owned(),
            None => "unset".to_owned(),
        };
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        out.push_str(&format!(
            "| `{key}` | `--{}` | {env} | {default} | {} | {} |\n",
            arg.get_long().unwrap_or_default(),
            cell(&kind.expected()),
            cell(&help)
        ));
        if key == "database_url" {
            out.push_str(&format!(
                "| `{JWT_SECRET}` | — (never a flag: it would show in `ps`) | `{JWT_SECRET_ENV}` | unset: generated into `<data-dir>/jwt.key` | a string | HS256 signing secret, at least 32 characters; every replica needs the same. |\n"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(text: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!(
            "memsync-config-{}-{}.toml",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::write(&path, text).expect("write");
        path
    }

    fn parse_with(text: &str, args: &[&str]) -> Result<Cli, ParseError> {
        let path = temp_file(text);
        let mut argv = vec!["memsync-server".to_owned(), "--config".to_owned()];
        argv.push(path.display().to_string());
        argv.extend(args.iter().map(|a| (*a).to_owned()));
        let r = parse_from(argv);
        let _ = std::fs::remove_file(&path);
        r
    }

    fn file_errors(r: Result<Cli, ParseError>) -> Vec<String> {
        match r {
            Err(ParseError::File(e)) => e,
            Err(ParseError::Clap(e)) => panic!("clap refused: {e}"),
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn the_file_sets_defaults_and_flags_win_over_it() {
        // Settings no test environment sets.
        let cli = parse_with(
            "max_streams = 5\nevents_heartbeat = \"2m\"\nexport_paused = true\nmax_pull_files = 7\n",
            &["config", "show", "--max-pull-files", "9"],
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        let g = &cli.global;
        assert_eq!(g.max_streams, 5);
        assert_eq!(g.events_heartbeat, Duration::from_secs(120));
        assert!(g.export_paused);
        assert_eq!(g.max_pull_files, 9);
        let r = &g.resolved;
        assert_eq!(r.source("max_streams"), Some(&Source::File));
        assert_eq!(r.source("export_paused"), Some(&Source::File));
        assert_eq!(r.source("max_pull_files"), Some(&Source::Flag));
        assert_eq!(r.source("max_connections"), Some(&Source::Default));
        assert!(matches!(
            cli.command,
            Some(super::super::Command::Config(_))
        ));
        let shown = r.show();
        let table: toml::Table = toml::from_str(&shown).expect("show prints TOML");
        assert_eq!(table["max_streams"], toml::Value::Integer(5));
        assert_eq!(table["events_heartbeat"], toml::Value::String("2m".into()));
        assert_eq!(table["max_pull_files"], toml::Value::Integer(9));
        assert_eq!(table["export_paused"], toml::Value::Boolean(true));
    }

    #[test]
    fn the_file_may_hold_the_signing_secret_but_show_never_prints_it() {
        let secret = "file-secret-0123456789-abcdefghijklmnopqrstuvwxyz";
        let cli = parse_with(
            &format!("jwt_secret = \"{secret}\"\nmirror_url_template = \"https://u:pw-9d2@h/{{name}}.git\"\n"),
            &[],
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            cli.global.resolved.jwt_secret.as_ref().map(|s| s.expose()),
            Some(secret)
        );
        let shown = cli.global.resolved.show();
        assert!(
            !shown.contains(secret) && !shown.contains("pw-9d2"),
            "{shown}"
        );
        assert!(
            shown.contains("mirror_url_template = \"[redacted]\""),
            "{shown}"
        );
        if std::env::var_os(JWT_SECRET_ENV).is_none() {
            let cfg = super::super::Config::from_args(&cli.global);
            assert_eq!(cfg.jwt_secret.as_ref().map(|s| s.expose()), Some(secret));
        }
    }

    #[test]
    fn every_problem_of_a_file_is_named() {
        let e = file_errors(parse_with(
            "listn = \"127.0.0.1:1\"\nmax_body_bytes = \"big\"\n[server]\nx = 1\n",
            &[],
        ));
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(
            e.iter().any(
                |m| m.contains("unknown key `listn`") && m.contains("(did you mean `listen`?)")
            )
        );
        assert!(
            e.iter()
                .any(|m| m.contains("`max_body_bytes`") && m.contains("is a string"))
        );
        assert!(
            e.iter()
                .any(|m| m.contains("`[server]`") && m.contains("flat keys only"))
        );
        let e = file_errors(parse_with("metrics_listen = \"here\"\n", &[]));
        assert!(
            e[0].contains("`metrics_listen`") && e[0].contains("invalid socket address"),
            "{e:?}"
        );
        let e = file_errors(parse_with("listen = \n", &[]));
        assert!(e[0].contains("not valid TOML: line 1"), "{e:?}");
    }

    #[test]
    fn teams_have_their_own_limits_in_the_file_and_show_prints_them() {
        let cli = parse_with(
            "token_rate = \"5/10\"\nmax_project_bytes = 1000\n[limits.teams.acme]\nrate = \"1/2\"\nmax_project_bytes = 0\n",
            &["config", "show"],
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        let g = &cli.global;
        assert_eq!(g.token_rate.to_string(), "5/10");
        assert_eq!(g.resolved.source("token_rate"), Some(&Source::File));
        let cfg = super::super::Config::from_args(g);
        assert_eq!(cfg.limits.project_quota("acme"), None);
        assert_eq!(cfg.limits.project_quota("beta"), Some(1000));
        assert_eq!(cfg.limits.team_rate("acme").map(|r| r.burst), Some(2));
        let shown = g.resolved.show();
        let table: toml::Table = toml::from_str(&shown).expect("show prints TOML");
        assert_eq!(
            table["limits"]["teams"]["acme"]["rate"],
            toml::Value::String("1/2".into())
        );
        assert_eq!(table["token_rate"], toml::Value::String("5/10".into()));

        let e = file_errors(parse_with(
            "token_rate = \"fast\"\n[limits.teams.acme]\nrat = \"1/2\"\n",
            &[],
        ));
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(
            e.iter()
                .any(|m| m.contains("`token_rate`") && m.contains("`off`")),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|m| m.contains("unknown key `rat` in [limits.teams.acme]")),
            "{e:?}"
        );
    }

    #[test]
    fn a_misspelt_key_gets_the_nearest_one() {
        let keys = keys();
        assert_eq!(nearest("listn", &keys), Some("listen"));
        assert_eq!(nearest("data-dir", &keys), Some("data_dir"));
        assert_eq!(nearest("jwt_secet", &keys), Some("jwt_secret"));
        assert_eq!(nearest("MAX_BODY_BYTES", &keys), Some("max_body_bytes"));
        assert_eq!(nearest("colour", &keys), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn every_setting_is_a_key() {
        let keys = keys();
        let cmd = Cli::command();
        for arg in cmd.get_arguments().filter(|a| a.is_global_set()) {
            let long = arg.get_long().expect("a long flag");
            let key = long.replace('-', "_");
            let expected = !arg.is_hide_set() && long != "config";
            assert_eq!(keys.contains(&key), expected, "{key}");
        }
        assert!(keys.contains(&JWT_SECRET.to_owned()));
        for secret in SECRET_KEYS {
            assert!(keys.contains(&secret.to_owned()), "{secret}");
        }
    }

    /// docs/configuration.md lists every key: its table is the one made from the flags.
    #[test]
    fn the_configuration_doc_lists_every_key() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
        let doc = std::fs::read_to_string(&path).expect("docs/configuration.md");
        let table = doc_table();
        assert!(
            doc.contains(&table),
            "docs/configuration.md's table of keys is not the one made from memsync-server's flags; replace it with:\n\n{table}"
        );
    }
}
