//! Claude Code integration: memsync's `SessionStart` and `SessionEnd` hooks in a `settings.json`,
//! added without disturbing anything else the file holds.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::atomic::Durability;
use crate::config::{Env, claude_dir};

pub const SESSION_START_COMMAND: &str = "memsync hook session-start";
pub const SESSION_END_COMMAND: &str = "memsync push --quiet";

/// Seconds Claude Code waits for each hook; the pull inside has its own shorter deadline.
const SESSION_START_TIMEOUT: u64 = 10;
const SESSION_END_TIMEOUT: u64 = 30;

#[derive(Debug)]
pub struct InstallOutcome {
    pub path: PathBuf,
    pub changed: bool,
    /// The events that got a hook: `"SessionStart"`, `"SessionEnd"`.
    pub added: Vec<&'static str>,
}

#[derive(Debug, thiserror::Error)]
pub enum ClaudeError {
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

/// `<repo root>/.claude/settings.json`, shared with the team through git.
pub fn project_settings_path(repo_root: &Path) -> PathBuf {
    repo_root.join(".claude").join("settings.json")
}

/// `$CLAUDE_CONFIG_DIR/settings.json`, else `$HOME/.claude/settings.json`.
pub fn user_settings_path(env: &dyn Env) -> Option<PathBuf> {
    claude_dir(env).map(|d| d.join("settings.json"))
}

/// Adds memsync's hooks to a Claude Code settings.json, keeping every other setting and hook.
/// Hooks already present (any command containing memsync's) are left as they are, so running it
/// twice changes nothing.
pub fn install_hooks(settings_path: &Path) -> Result<InstallOutcome, ClaudeError> {
    // A settings.json that is a symlink (dotfile managers) is updated where it points, so the
    // link survives the rename.
    let target = match fs::symlink_metadata(settings_path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            fs::canonicalize(settings_path).map_err(|source| ClaudeError::Read {
                path: settings_path.to_path_buf(),
                source,
            })?
        }
        _ => settings_path.to_path_buf(),
    };

    let text = match fs::read_to_string(&target) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(ClaudeError::Read {
                path: settings_path.to_path_buf(),
                source,
            });
        }
    };
    let mut root = if text.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(&text).map_err(|e| ClaudeError::InvalidJson {
            path: settings_path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: json_error_message(&e),
        })?
    };

    let added = add_hooks(&mut root).map_err(|(key, expected)| ClaudeError::WrongType {
        path: settings_path.to_path_buf(),
        key,
        expected,
    })?;

    if !added.is_empty() {
        let mut out = serde_json::to_string_pretty(&root).map_err(|e| ClaudeError::Write {
            path: settings_path.to_path_buf(),
            source: io::Error::other(e),
        })?;
        out.push('\n');
        let write_err = |source| ClaudeError::Write {
            path: settings_path.to_path_buf(),
            source,
        };
        if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(write_err)?;
        }
        crate::atomic::write(&target, out.as_bytes(), None, Durability::Durable)
            .map_err(write_err)?;
    }

    Ok(InstallOutcome {
        path: settings_path.to_path_buf(),
        changed: !added.is_empty(),
        added,
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

fn add_hooks(root: &mut Value) -> Result<Vec<&'static str>, TypeProblem> {
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

    let wanted = [
        (
            "SessionStart",
            "`hooks.SessionStart`",
            SESSION_START_COMMAND,
            SESSION_START_TIMEOUT,
        ),
        (
            "SessionEnd",
            "`hooks.SessionEnd`",
            SESSION_END_COMMAND,
            SESSION_END_TIMEOUT,
        ),
    ];
    // Check every event before changing any, so an error leaves the document as it was.
    for (event, key, _, _) in wanted {
        if let Some(v) = hooks.get(event)
            && !(v.is_array() || v.is_null())
        {
            return Err((key, "a JSON array"));
        }
    }

    let mut added = Vec::new();
    for (event, _, command, timeout) in wanted {
        let groups = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()));
        if groups.is_null() {
            *groups = Value::Array(Vec::new());
        }
        if has_command(groups, command) {
            continue;
        }
        if let Value::Array(groups) = groups {
            groups.push(json!({
                "hooks": [{ "type": "command", "command": command, "timeout": timeout }]
            }));
            added.push(event);
        }
    }
    Ok(added)
}

/// Whether any `"command"` string anywhere under `value` contains `command`.
fn has_command(value: &Value, command: &str) -> bool {
    match value {
        Value::Array(items) => items.iter().any(|v| has_command(v, command)),
        Value::Object(map) => map.iter().any(|(k, v)| match v {
            Value::String(s) => k == "command" && s.contains(command),
            other => has_command(other, command),
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

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
                "SessionStart": [{"hooks": [{"type": "command", "command": SESSION_START_COMMAND, "timeout": 10}]}],
                "SessionEnd": [{"hooks": [{"type": "command", "command": SESSION_END_COMMAND, "timeout": 30}]}],
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
        assert_eq!(start[1]["hooks"][0]["command"], SESSION_START_COMMAND);
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
    fn existing_memsync_commands_count_as_installed() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("settings.json");
        fs::write(
            &path,
            r#"{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"/opt/bin/memsync hook session-start --deadline 2s"}]}]}}"#,
        )
        .unwrap();
        let out = install_hooks(&path).unwrap();
        assert_eq!(out.added, ["SessionEnd"]);
        assert_eq!(
            read_json(&path)["hooks"]["SessionStart"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
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
    fn settings_paths() {
        assert_eq!(
            project_settings_path(Path::new("/r")),
            Path::new("/r/.claude/settings.json")
        );
        let env = |k: &str| (k == "HOME").then(|| "/h".to_string());
        assert_eq!(
            user_settings_path(&env).unwrap(),
            Path::new("/h/.claude/settings.json")
        );
        let env = |k: &str| match k {
            "HOME" => Some("/h".to_string()),
            "CLAUDE_CONFIG_DIR" => Some("/cc".to_string()),
            _ => None,
        };
        assert_eq!(
            user_settings_path(&env).unwrap(),
            Path::new("/cc/settings.json")
        );
        let none = |_: &str| None;
        assert!(user_settings_path(&none).is_none());
    }
}
