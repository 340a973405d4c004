//! An agent's hooks file in Claude Code's shape (Claude Code's `settings.json`, Codex CLI's
//! `hooks.json`): `{"hooks": {"<Event>": [{"matcher"?, "hooks": [{"type": "command",
//! "command", "timeout"}]}]}}`. memsync's hooks are added, repointed and upgraded without
//! disturbing anything else the file holds.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::atomic::Durability;

/// The arguments of memsync's hooks, after the program.
pub const SESSION_START_ARGS: &str = "hook session-start";
pub const SESSION_END_ARGS: &str = "hook session-end";
/// The first argument of the `SessionEnd` hook memsync installed before `hook session-end`
/// (`push --quiet`): upgraded in place, since it pushes without the session's id.
pub const LEGACY_SESSION_END: &str = "push";

/// One of memsync's hooks as an agent runs it.
#[derive(Debug, Clone, Copy)]
pub struct HookDef {
    /// `SessionStart`, `SessionEnd`.
    pub event: &'static str,
    /// What the key is called in messages: "`hooks.SessionStart`".
    pub key: &'static str,
    /// memsync's arguments after the program; a command is memsync's when its arguments start
    /// with them.
    pub args: &'static str,
    /// Further arguments a new hook gets (e.g. a shorter deadline).
    pub extra: &'static str,
    /// Seconds the agent waits for it.
    pub timeout: u64,
    /// The first argument of an older form of this hook, replaced by today's where it is.
    pub legacy: Option<&'static str>,
    /// The line the agent shows while the hook runs, when it shows one.
    pub status_message: Option<&'static str>,
}

/// memsync's hooks for one agent.
#[derive(Debug, Clone, Copy)]
pub struct HookSpec {
    pub defs: &'static [HookDef],
    /// `--agent NAME` every memsync hook of this file must carry (None: the default agent).
    pub agent: Option<&'static str>,
}

#[derive(Debug)]
pub struct InstallOutcome {
    pub path: PathBuf,
    pub changed: bool,
    /// The events that got a hook: `"SessionStart"`, `"SessionEnd"`.
    pub added: Vec<&'static str>,
    /// The events whose memsync hook now runs another binary (the one that installed it).
    pub updated: Vec<&'static str>,
    /// The events whose memsync hook of an older memsync was replaced by today's (a
    /// `SessionEnd` `push` that now runs `hook session-end`, a hook without its `--agent`).
    pub upgraded: Vec<&'static str>,
}

/// One of memsync's hooks found in a hooks file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledHook {
    /// `SessionStart` or `SessionEnd`.
    pub event: &'static str,
    /// The command as written.
    pub command: String,
    /// The program it runs (shell quoting undone): an absolute path, or a bare name looked up
    /// in `PATH`.
    pub program: String,
    /// An older memsync's form of the hook, which `install-hook` upgrades.
    pub legacy: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum HooksFileError {
    #[error("cannot read {}: {source}; nothing was changed", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error(
        "{} is not valid JSON (line {line}, column {column}: {message}); nothing was changed. Fix the file, or move it away, and run the command again",
        path.display()
    )]
    InvalidJson {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error(
        "{}: {key} must be {expected}, so memsync cannot add its hooks; nothing was changed. Fix that entry and run the command again",
        path.display()
    )]
    WrongType {
        path: PathBuf,
        key: &'static str,
        expected: &'static str,
    },
    #[error("cannot write {}: {source}; the file was left as it was", path.display())]
    Write { path: PathBuf, source: io::Error },
}

/// The command a hook runs: `program` (shell-quoted when needed) and `args`.
pub fn hook_command(program: &Path, args: &str) -> String {
    format!("{} {args}", shell_quote(&program.to_string_lossy()))
}

/// Where a hooks file that may be a symlink (dotfile managers) is really written, so the link
/// survives the rename.
fn write_target(path: &Path) -> Result<PathBuf, HooksFileError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            fs::canonicalize(path).map_err(|source| HooksFileError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
        _ => Ok(path.to_path_buf()),
    }
}

fn save(target: &Path, shown: &Path, root: &Value) -> Result<(), HooksFileError> {
    let mut out = serde_json::to_string_pretty(root).map_err(|e| HooksFileError::Write {
        path: shown.to_path_buf(),
        source: io::Error::other(e),
    })?;
    out.push('\n');
    crate::atomic::write(target, out.as_bytes(), None, Durability::Durable).map_err(|source| {
        HooksFileError::Write {
            path: shown.to_path_buf(),
            source,
        }
    })
}

/// Adds memsync's hooks to a hooks file, keeping every other setting and hook. Each runs
/// `program` (the absolute path of the memsync that installs them), so the hooks work whatever
/// `PATH` the agent has. memsync's hooks already there (a command whose program is named
/// `memsync`, with memsync's arguments) keep their arguments and get `program`; an older form
/// is replaced where it is; running it twice changes nothing (the file is not even rewritten).
pub fn install_hooks(
    path: &Path,
    program: &Path,
    spec: &HookSpec,
) -> Result<InstallOutcome, HooksFileError> {
    let target = write_target(path)?;
    let mut root = read_settings(&target, path)?.unwrap_or_else(|| Value::Object(Map::new()));

    let (added, updated, upgraded) =
        add_hooks(&mut root, program, spec).map_err(|(key, expected)| {
            HooksFileError::WrongType {
                path: path.to_path_buf(),
                key,
                expected,
            }
        })?;
    let changed = !added.is_empty() || !updated.is_empty() || !upgraded.is_empty();
    if changed {
        save(&target, path, &root)?;
    }
    Ok(InstallOutcome {
        path: path.to_path_buf(),
        changed,
        added,
        updated,
        upgraded,
    })
}

/// Takes memsync's hooks (today's and older forms) out of a hooks file, keeping everything
/// else; a matcher group left without hooks goes too, and so does an event left without
/// groups. The events that lost a hook; the file is not touched when there were none.
pub fn remove_hooks(path: &Path, spec: &HookSpec) -> Result<Vec<&'static str>, HooksFileError> {
    let target = write_target(path)?;
    let Some(mut root) = read_settings(&target, path)? else {
        return Ok(Vec::new());
    };
    let mut removed = Vec::new();
    if let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) {
        for def in spec.defs {
            let Some(Value::Array(groups)) = hooks.get_mut(def.event) else {
                continue;
            };
            let before: usize = groups.iter().map(count_commands).sum();
            for group in groups.iter_mut() {
                if let Some(Value::Array(list)) = group.get_mut("hooks") {
                    list.retain(|h| {
                        !h.get("command")
                            .and_then(Value::as_str)
                            .is_some_and(|c| is_ours(c, def))
                    });
                }
            }
            groups.retain(|g| {
                g.get("hooks")
                    .and_then(Value::as_array)
                    .is_none_or(|l| !l.is_empty())
            });
            let after: usize = groups.iter().map(count_commands).sum();
            if after < before {
                removed.push(def.event);
            }
            if groups.is_empty() {
                hooks.remove(def.event);
            }
        }
    }
    if !removed.is_empty() {
        save(&target, path, &root)?;
    }
    Ok(removed)
}

fn count_commands(v: &Value) -> usize {
    let mut c = Vec::new();
    collect_commands(v, &mut c);
    c.len()
}

/// Whether `command` is memsync's hook `def` (today's or an older form).
fn is_ours(command: &str, def: &HookDef) -> bool {
    memsync_command(command, def.args).is_some()
        || def
            .legacy
            .is_some_and(|l| memsync_command(command, l).is_some())
}

/// The flag on memsync's `SessionStart` hook that starts `memsync watch` for the session.
pub const WATCH_FLAG: &str = "--watch";

/// Puts `--watch` on memsync's `SessionStart` hook(s) in a hooks file (`on`), or takes it off;
/// whether the file changed. Everything else in the file stays as it is.
pub fn set_watch(path: &Path, on: bool) -> Result<bool, HooksFileError> {
    let target = write_target(path)?;
    let Some(mut root) = read_settings(&target, path)? else {
        return Ok(false);
    };
    let Some(groups) = root
        .get_mut("hooks")
        .and_then(|h| h.get_mut("SessionStart"))
    else {
        return Ok(false);
    };
    if !flag_commands(groups, on) {
        return Ok(false);
    }
    save(&target, path, &root)?;
    Ok(true)
}

/// Adds (or removes) [`WATCH_FLAG`] on every memsync session-start command under `value`;
/// whether any changed.
fn flag_commands(value: &mut Value, on: bool) -> bool {
    let mut changed = false;
    match value {
        Value::Array(items) => {
            for v in items {
                changed |= flag_commands(v, on);
            }
        }
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                match v {
                    Value::String(command) if k == "command" => {
                        let Some((_, rest)) = memsync_command(command, SESSION_START_ARGS) else {
                            continue;
                        };
                        let has = rest.split_whitespace().any(|w| w == WATCH_FLAG);
                        if on && !has {
                            command.push(' ');
                            command.push_str(WATCH_FLAG);
                            changed = true;
                        } else if !on && has {
                            let head = &command[..command.len() - rest.len()];
                            let kept: Vec<&str> = rest
                                .split_whitespace()
                                .filter(|w| *w != WATCH_FLAG)
                                .collect();
                            *command = format!("{head} {}", kept.join(" "));
                            changed = true;
                        }
                    }
                    other => changed |= flag_commands(other, on),
                }
            }
        }
        _ => {}
    }
    changed
}

/// memsync's hooks in a hooks file (none when the file does not exist).
pub fn installed_hooks(path: &Path, spec: &HookSpec) -> Result<Vec<InstalledHook>, HooksFileError> {
    let Some(root) = read_settings(path, path)? else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for def in spec.defs {
        let mut commands = Vec::new();
        if let Some(groups) = root.get("hooks").and_then(|h| h.get(def.event)) {
            collect_commands(groups, &mut commands);
        }
        for command in commands {
            let (program, legacy) = match memsync_command(&command, def.args) {
                Some((program, rest)) => (program, !has_agent(rest, spec.agent)),
                None => match def.legacy.and_then(|l| memsync_command(&command, l)) {
                    Some((program, _)) => (program, true),
                    None => continue,
                },
            };
            found.push(InstalledHook {
                event: def.event,
                command,
                program,
                legacy,
            });
        }
    }
    Ok(found)
}

/// Whether the arguments `rest` carry `--agent NAME` (always true when no agent is required).
fn has_agent(rest: &str, agent: Option<&str>) -> bool {
    let Some(agent) = agent else {
        return true;
    };
    let words: Vec<&str> = rest.split_whitespace().collect();
    words.windows(2).any(|w| w[0] == "--agent" && w[1] == agent)
        || words.iter().any(|w| *w == format!("--agent={agent}"))
}

/// The parsed file, or None when it does not exist or is empty.
fn read_settings(target: &Path, shown: &Path) -> Result<Option<Value>, HooksFileError> {
    let text = match fs::read_to_string(target) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(HooksFileError::Read {
                path: shown.to_path_buf(),
                source,
            });
        }
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| HooksFileError::InvalidJson {
            path: shown.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: json_error_message(&e),
        })
}

/// serde_json's message without its own " at line L column C" suffix, which the error repeats.
fn json_error_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    match full.rfind(" at line ") {
        Some(i) => full[..i].to_string(),
        None => full,
    }
}

type TypeProblem = (&'static str, &'static str);

type Events = Vec<&'static str>;

/// (added, updated, upgraded) events.
fn add_hooks(
    root: &mut Value,
    program: &Path,
    spec: &HookSpec,
) -> Result<(Events, Events, Events), TypeProblem> {
    let root = root
        .as_object_mut()
        .ok_or(("the top level", "a JSON object"))?;
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    if hooks.is_null() {
        *hooks = Value::Object(Map::new());
    }
    let hooks = hooks.as_object_mut().ok_or(("`hooks`", "a JSON object"))?;

    // Check every event before changing any, so an error leaves the document as it was.
    for def in spec.defs {
        if let Some(v) = hooks.get(def.event)
            && !(v.is_array() || v.is_null())
        {
            return Err((def.key, "a JSON array"));
        }
    }

    let quoted = shell_quote(&program.to_string_lossy());
    let (mut added, mut updated, mut upgraded) = (Vec::new(), Vec::new(), Vec::new());
    for def in spec.defs {
        let groups = hooks
            .entry(def.event)
            .or_insert_with(|| Value::Array(Vec::new()));
        if groups.is_null() {
            *groups = Value::Array(Vec::new());
        }
        let r = repoint(groups, def, spec.agent, &quoted);
        if r.repointed {
            updated.push(def.event);
        }
        if r.upgraded {
            upgraded.push(def.event);
        }
        if r.found {
            continue;
        }
        if let Value::Array(groups) = groups {
            let mut hook = json!({
                "type": "command",
                "command": new_command(&quoted, def, spec.agent),
                "timeout": def.timeout,
            });
            if let Some(m) = def.status_message {
                hook["statusMessage"] = json!(m);
            }
            groups.push(json!({ "hooks": [hook] }));
            added.push(def.event);
        }
    }
    Ok((added, updated, upgraded))
}

/// The command of a new hook: `<program> <args> [--agent NAME] <extra>`.
fn new_command(quoted_program: &str, def: &HookDef, agent: Option<&str>) -> String {
    let mut c = format!("{quoted_program} {}", def.args);
    if let Some(a) = agent {
        c.push_str(" --agent ");
        c.push_str(a);
    }
    if !def.extra.is_empty() {
        c.push(' ');
        c.push_str(def.extra);
    }
    c
}

/// What `repoint` found and did.
#[derive(Default)]
struct Repointed {
    found: bool,
    /// A hook now runs the new program.
    repointed: bool,
    /// An older form was replaced by today's.
    upgraded: bool,
}

/// Points every memsync hook `def` under `value` at `quoted_program`; replaces every older form
/// (a memsync command whose first argument is `def.legacy`) with today's, and adds `--agent`
/// where it is required and missing.
fn repoint(
    value: &mut Value,
    def: &HookDef,
    agent: Option<&str>,
    quoted_program: &str,
) -> Repointed {
    let mut out = Repointed::default();
    let mut merge = |r: Repointed| {
        out.found |= r.found;
        out.repointed |= r.repointed;
        out.upgraded |= r.upgraded;
    };
    match value {
        Value::Array(items) => {
            for v in items {
                merge(repoint(v, def, agent, quoted_program));
            }
        }
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                match v {
                    Value::String(command) if k == "command" => {
                        let mut r = Repointed::default();
                        if let Some((_, rest)) = memsync_command(command, def.args) {
                            r.found = true;
                            let mut new = format!("{quoted_program}{rest}");
                            if !has_agent(rest, agent)
                                && let Some(a) = agent
                            {
                                // The words after memsync's arguments stay, in order.
                                let n = def.args.split_whitespace().count();
                                let tail: Vec<&str> = rest.split_whitespace().skip(n).collect();
                                new = format!("{quoted_program} {} --agent {a}", def.args);
                                for w in tail {
                                    new.push(' ');
                                    new.push_str(w);
                                }
                                r.upgraded = true;
                            } else if *command != new {
                                r.repointed = true;
                            }
                            *command = new;
                        } else if def
                            .legacy
                            .is_some_and(|l| memsync_command(command, l).is_some())
                        {
                            r.found = true;
                            r.upgraded = true;
                            *command = new_command(quoted_program, def, agent);
                        }
                        merge(r);
                    }
                    other => merge(repoint(other, def, agent, quoted_program)),
                }
            }
        }
        _ => {}
    }
    out
}

/// Every `"command"` string under `value`.
fn collect_commands(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Array(items) => items.iter().for_each(|v| collect_commands(v, out)),
        Value::Object(map) => {
            for (k, v) in map {
                match v {
                    Value::String(s) if k == "command" => out.push(s.clone()),
                    other => collect_commands(other, out),
                }
            }
        }
        _ => {}
    }
}

/// When `command` runs a program named `memsync` whose arguments start with `args`: the program
/// (quoting undone) and the rest of the command after it (arguments included, as written).
fn memsync_command<'a>(command: &'a str, args: &str) -> Option<(String, &'a str)> {
    let trimmed = command.trim_start();
    let (program, rest) = first_word(trimmed)?;
    let name = program.rsplit('/').next().unwrap_or(&program);
    let wanted: Vec<&str> = args.split_whitespace().collect();
    let given: Vec<&str> = rest.split_whitespace().take(wanted.len()).collect();
    (name == "memsync" && given == wanted).then_some((program, rest))
}

/// The first shell word of `s` (quotes and backslashes undone) and the rest of `s` after it.
fn first_word(s: &str) -> Option<(String, &str)> {
    let mut word = String::new();
    let mut chars = s.char_indices().peekable();
    let mut end = s.len();
    while let Some((i, c)) = chars.next() {
        match c {
            '\'' => loop {
                match chars.next() {
                    Some((_, '\'')) => break,
                    Some((_, c)) => word.push(c),
                    None => return None,
                }
            },
            '"' => loop {
                match chars.next() {
                    Some((_, '"')) => break,
                    Some((_, '\\')) => {
                        if let Some((_, c)) = chars.next() {
                            word.push(c);
                        }
                    }
                    Some((_, c)) => word.push(c),
                    None => return None,
                }
            },
            '\\' => {
                if let Some((_, c)) = chars.next() {
                    word.push(c);
                }
            }
            c if c.is_whitespace() => {
                end = i;
                break;
            }
            c => word.push(c),
        }
    }
    (!word.is_empty()).then(|| (word, &s[end..]))
}

/// `s` as one shell word: as it is when it holds only safe characters, else in single quotes.
fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c));
    if safe {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::claude::{HOOKS, project_settings_path};
    use std::os::unix::fs::PermissionsExt;

    const EXE: &str = "/opt/memsync/bin/memsync";

    fn start() -> String {
        format!("{EXE} {SESSION_START_ARGS}")
    }

    fn end() -> String {
        format!("{EXE} {SESSION_END_ARGS}")
    }

    fn install_hooks(path: &Path) -> Result<InstallOutcome, HooksFileError> {
        super::install_hooks(path, Path::new(EXE), &HOOKS)
    }

    fn installed_hooks(path: &Path) -> Result<Vec<InstalledHook>, HooksFileError> {
        super::installed_hooks(path, &HOOKS)
    }

    fn read_json(path: &Path) -> Value {
        serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn creates_missing_file_and_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let path = project_settings_path(tmp.path());
        let out = install_hooks(&path).unwrap();
        assert!(out.changed);
        assert_eq!(out.added, ["SessionStart", "SessionEnd"]);
        assert_eq!(out.path, path);
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("}\n"));
        assert!(text.starts_with("{\n  \"hooks\": {\n    \"SessionStart\""));
        assert_eq!(
            read_json(&path),
            json!({"hooks": {
                "SessionStart": [{"hooks": [{"type": "command", "command": start(), "timeout": 10}]}],
                "SessionEnd": [{"hooks": [{"type": "command", "command": end(), "timeout": 30}]}],
            }})
        );
    }

    #[test]
    fn keeps_other_settings_hooks_and_order_and_is_idempotent() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("settings.json");
        let original = r#"{
    "zeta": 1,
    "permissions": {"allow": ["Bash(ls)"], "deny": []},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check.sh"}]}],
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}]
    },
    "alpha": {"nested": true, "n": 1.5}
}"#;
        fs::write(&path, original).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();

        let out = install_hooks(&path).unwrap();
        assert!(out.changed);
        let v = read_json(&path);
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["zeta", "permissions", "hooks", "alpha"]);
        let hook_keys: Vec<&String> = v["hooks"].as_object().unwrap().keys().collect();
        assert_eq!(hook_keys, ["PreToolUse", "SessionStart", "SessionEnd"]);
        assert_eq!(v["alpha"], json!({"nested": true, "n": 1.5}));
        assert_eq!(v["permissions"]["allow"][0], "Bash(ls)");
        assert_eq!(
            v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            "check.sh"
        );
        let start = v["hooks"]["SessionStart"].as_array().unwrap();
        assert_eq!(start.len(), 2);
        assert_eq!(start[0]["hooks"][0]["command"], "echo hi");
        assert_eq!(start[1]["hooks"][0]["command"], self::start());
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o640
        );

        let before = fs::read(&path).unwrap();
        let again = install_hooks(&path).unwrap();
        assert!(!again.changed);
        assert!(again.added.is_empty());
        assert_eq!(fs::read(&path).unwrap(), before);
    }

    #[test]
    fn existing_memsync_hooks_are_repointed_keeping_their_arguments() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("settings.json");
        fs::write(
            &path,
            r#"{"hooks":{"SessionStart":[{"hooks":[
                {"type":"command","command":"memsync hook session-start --deadline 2s"},
                {"type":"command","command":"echo memsync hook session-start"}]}]}}"#,
        )
        .unwrap();
        let out = install_hooks(&path).unwrap();
        assert_eq!(out.added, ["SessionEnd"]);
        assert_eq!(out.updated, ["SessionStart"]);
        let v = read_json(&path);
        let hooks = v["hooks"]["SessionStart"][0]["hooks"].as_array().unwrap();
        assert_eq!(hooks.len(), 2);
        assert_eq!(
            hooks[0]["command"],
            format!("{EXE} hook session-start --deadline 2s")
        );
        assert_eq!(hooks[1]["command"], "echo memsync hook session-start");
        assert_eq!(v["hooks"]["SessionStart"].as_array().unwrap().len(), 1);

        // Installed by another memsync binary: the hooks follow the new one.
        let moved =
            super::install_hooks(&path, Path::new("/home/a b/bin/memsync"), &HOOKS).unwrap();
        assert_eq!(moved.updated, ["SessionStart", "SessionEnd"]);
        assert!(moved.added.is_empty());
        let found = installed_hooks(&path).unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.iter().all(|h| h.program == "/home/a b/bin/memsync"));
        assert_eq!(
            found[0].command,
            "'/home/a b/bin/memsync' hook session-start --deadline 2s"
        );
        assert_eq!(found[1].event, "SessionEnd");
    }

    #[test]
    fn commands_are_recognised_by_program_name_and_arguments() {
        for (cmd, args, program) in [
            (
                "memsync hook session-start",
                SESSION_START_ARGS,
                Some("memsync"),
            ),
            (
                "/usr/local/bin/memsync  hook session-start",
                SESSION_START_ARGS,
                Some("/usr/local/bin/memsync"),
            ),
            (
                "'/a b/memsync' hook session-end",
                SESSION_END_ARGS,
                Some("/a b/memsync"),
            ),
            (
                "'/a b/memsync' push --quiet",
                LEGACY_SESSION_END,
                Some("/a b/memsync"),
            ),
            (
                "\"/a b/memsync\" push",
                LEGACY_SESSION_END,
                Some("/a b/memsync"),
            ),
            (
                "/a\\ b/memsync push --quiet",
                LEGACY_SESSION_END,
                Some("/a b/memsync"),
            ),
            ("memsync push --quiet", SESSION_END_ARGS, None),
            ("memsync push --quiet", SESSION_START_ARGS, None),
            ("memsync-old hook session-start", SESSION_START_ARGS, None),
            ("echo memsync hook session-start", SESSION_START_ARGS, None),
            ("'unterminated memsync push", SESSION_END_ARGS, None),
        ] {
            assert_eq!(
                memsync_command(cmd, args).map(|(p, _)| p).as_deref(),
                program,
                "{cmd}"
            );
        }
        assert_eq!(shell_quote("/usr/bin/memsync"), "/usr/bin/memsync");
        assert_eq!(
            shell_quote("/it's here/memsync"),
            "'/it'\\''s here/memsync'"
        );
        assert_eq!(
            first_word(&shell_quote("/it's here/memsync")).unwrap().0,
            "/it's here/memsync"
        );
    }

    #[test]
    fn an_older_session_end_push_is_upgraded_where_it_is() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("settings.json");
        fs::write(
            &path,
            r#"{"hooks":{"SessionEnd":[{"matcher":"","hooks":[
                {"type":"command","command":"echo bye"},
                {"type":"command","command":"/old/bin/memsync push --quiet","timeout":30}]}]}}"#,
        )
        .unwrap();
        let found = installed_hooks(&path).unwrap();
        assert_eq!(found.len(), 1);
        assert!(found[0].legacy && found[0].event == "SessionEnd");
        let out = install_hooks(&path).unwrap();
        assert_eq!(out.added, ["SessionStart"]);
        assert_eq!(out.upgraded, ["SessionEnd"]);
        assert!(out.updated.is_empty());
        let v = read_json(&path);
        let end = &v["hooks"]["SessionEnd"];
        assert_eq!(end.as_array().unwrap().len(), 1, "{end}");
        let hooks = end[0]["hooks"].as_array().unwrap();
        assert_eq!(hooks[0]["command"], "echo bye");
        assert_eq!(hooks[1]["command"], self::end());
        assert_eq!(hooks[1]["timeout"], 30);
        assert!(!installed_hooks(&path).unwrap().iter().any(|h| h.legacy));
        // Done once: nothing changes the second time.
        let again = install_hooks(&path).unwrap();
        assert!(!again.changed, "{again:?}");
    }

    #[test]
    fn empty_file_counts_as_empty_object() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("settings.json");
        fs::write(&path, "  \n").unwrap();
        assert!(install_hooks(&path).unwrap().changed);
        assert!(read_json(&path)["hooks"]["SessionEnd"].is_array());
    }

    #[test]
    fn invalid_json_or_wrong_types_change_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("settings.json");
        for bad in [
            "{\"hooks\": {,}}",
            "[1, 2]",
            "{\"hooks\": []}",
            "{\"hooks\": {\"SessionStart\": {}}}",
            "{\"hooks\": {\"SessionEnd\": \"memsync\"}}",
        ] {
            fs::write(&path, bad).unwrap();
            let err = install_hooks(&path).unwrap_err();
            let msg = err.to_string();
            assert!(
                msg.contains(&path.display().to_string()) && msg.contains("nothing was changed"),
                "{msg}"
            );
            assert_eq!(fs::read_to_string(&path).unwrap(), bad);
        }
        let leftovers = fs::read_dir(tmp.path()).unwrap().count();
        assert_eq!(leftovers, 1);
    }

    #[test]
    fn symlinked_settings_stay_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("dotfiles-settings.json");
        fs::write(&real, "{\"model\": \"opus\"}").unwrap();
        let link = tmp.path().join("settings.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        install_hooks(&link).unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(read_json(&real)["model"], "opus");
        assert!(read_json(&real)["hooks"]["SessionStart"].is_array());
    }

    #[test]
    fn watch_goes_on_and_off_the_session_start_hook_only() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("settings.json");
        fs::write(
            &path,
            json!({"model": "opus", "hooks": {"SessionStart": [{"hooks": [
                {"type": "command", "command": "other-tool start"},
                {"type": "command", "command": format!("{} --deadline 4s", start())},
            ]}]}})
            .to_string(),
        )
        .unwrap();
        install_hooks(&path).unwrap();
        assert!(set_watch(&path, true).unwrap());
        let on = read_json(&path);
        let hooks = &on["hooks"]["SessionStart"][0]["hooks"];
        assert_eq!(hooks[0]["command"], "other-tool start");
        assert_eq!(
            hooks[1]["command"],
            format!("{} --deadline 4s --watch", start())
        );
        assert_eq!(on["hooks"]["SessionEnd"][0]["hooks"][0]["command"], end());
        assert_eq!(on["model"], "opus");
        // Twice changes nothing; installing again keeps the flag.
        assert!(!set_watch(&path, true).unwrap());
        assert!(!install_hooks(&path).unwrap().changed);
        assert!(set_watch(&path, false).unwrap());
        assert_eq!(
            read_json(&path)["hooks"]["SessionStart"][0]["hooks"][1]["command"],
            format!("{} --deadline 4s", start())
        );
        assert!(!set_watch(&path, false).unwrap());
        // No settings file: nothing to do.
        assert!(!set_watch(&tmp.path().join("none.json"), true).unwrap());
    }
}
