//! OpenAI's Codex CLI: memsync's `SessionStart` and `SessionEnd` hooks in `hooks.json`
//! (`<repo>/.codex/hooks.json`, or `$CODEX_HOME/hooks.json` for every project), a
//! memsync-owned memory dir under `$CODEX_HOME/memsync/projects/<key>/memory`, and `AGENTS.md`
//! for `memsync render`.
//!
//! Codex runs a hook only after the user has trusted its exact definition (recorded by Codex as
//! a hash in its `config.toml`; any change to the hook needs trusting again), and reads a
//! project's `.codex/hooks.json` only in a project the user trusts. memsync never computes or
//! writes a hash itself: `install-hook` says how to trust the hooks in Codex, or, with
//! `--trust`, asks Codex's own app-server to record the hash Codex computed (as Codex's `/hooks`
//! screen does); `doctor` asks Codex (`codex app-server`, `hooks/list`) whether they are trusted.
//! Project trust is left to the user.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::hooks_file::{HookDef, HookSpec, SESSION_END_ARGS, SESSION_START_ARGS};
use super::{Agent, AgentId};
use crate::config::Env;

/// memsync's hooks in Codex's hooks.json. Codex gives a `SessionEnd` hook at most 3 s,
/// whatever its timeout says, so the push inside stops after 2 s (what it could not send goes
/// with the next push). `Stop` is not used: it runs after every turn.
pub const HOOKS: HookSpec = HookSpec {
    defs: &[
        HookDef {
            event: "SessionStart",
            key: "`hooks.SessionStart`",
            args: SESSION_START_ARGS,
            extra: "",
            timeout: 10,
            legacy: None,
            status_message: Some("memsync: syncing team memory"),
        },
        HookDef {
            event: "SessionEnd",
            key: "`hooks.SessionEnd`",
            args: SESSION_END_ARGS,
            extra: "--deadline 2s",
            timeout: 3,
            legacy: None,
            status_message: None,
        },
    ],
    agent: Some("codex"),
};

/// `$CODEX_HOME`, else `$HOME/.codex`.
pub fn codex_home(env: &dyn Env) -> Option<PathBuf> {
    match env.var("CODEX_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => env
            .var("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".codex")),
    }
}

pub struct Codex;

impl Agent for Codex {
    fn id(&self) -> AgentId {
        AgentId::Codex
    }
    fn name(&self) -> &'static str {
        "Codex CLI"
    }
    fn home(&self, env: &dyn Env) -> Option<PathBuf> {
        codex_home(env)
    }
    fn home_missing(&self) -> (&'static str, &'static str) {
        (
            "the memory directory memsync keeps for Codex CLI",
            "set CODEX_HOME or MEMSYNC_PRIVATE_DIR",
        )
    }
    fn hooks(&self) -> Option<&'static HookSpec> {
        Some(&HOOKS)
    }
    fn project_hooks_file(&self, repo_root: &Path) -> Option<PathBuf> {
        Some(repo_root.join(".codex").join("hooks.json"))
    }
    fn user_hooks_file(&self, env: &dyn Env) -> Option<PathBuf> {
        codex_home(env).map(|h| h.join("hooks.json"))
    }
    fn activation_steps(&self, hooks_file: &Path, project: bool) -> Vec<String> {
        let mut steps = vec![format!(
            "Codex runs a hook only after you trust its exact definition, and memsync does not do that for you: start `codex`{}, and when it lists memsync's new hooks in {} choose to trust them (or type /hooks in the session and trust them there).",
            if project { " in this repository" } else { "" },
            hooks_file.display()
        )];
        if project {
            steps.push(
                "Codex reads a repository's .codex/hooks.json only in a project you trust: when `codex` asks whether you trust this folder, say yes."
                    .to_owned(),
            );
        }
        steps.push(
            "Or let memsync ask Codex to trust them for you: `memsync install-hook --agent codex --trust` (Codex computes and records the hashes, as its /hooks screen does).".to_owned(),
        );
        steps.push(
            "Any change to these hook lines (another memsync path, another timeout) needs trusting again; until then Codex skips them without a word. `memsync doctor --agent codex` asks Codex whether they are trusted."
                .to_owned(),
        );
        if let Some(home) = codex_home(&crate::config::ProcessEnv) {
            steps.push(format!(
                "Codex's workspace-write sandbox lets the agent write only in the workspace: to let it save team memories without asking, add to {}: [sandbox_workspace_write] writable_roots = [\"{}\"]",
                home.join("config.toml").display(),
                home.join("memsync").join("projects").display()
            ));
        }
        steps
    }
    fn instruction_file(&self) -> &'static str {
        "AGENTS.md"
    }
    fn repo_markers(&self) -> &'static [&'static str] {
        &[".codex", "AGENTS.md"]
    }
}

/// One hook as Codex lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedHook {
    /// `SessionStart`, `SessionEnd`, … as Codex names the event.
    pub event: String,
    pub command: String,
    /// The file Codex read it from.
    pub source_path: Option<String>,
    /// `trusted`, `untrusted`, `modified` (trusted once, changed since) or `managed`.
    pub trust_status: String,
    /// Codex's key of the hook (`<file>:<event>:<group>:<handler>`).
    pub key: Option<String>,
    /// The hash Codex computes of the hook's definition (what trusting it records).
    pub current_hash: Option<String>,
}

/// How long `codex app-server` gets to start and answer.
pub const APP_SERVER_WAIT: Duration = Duration::from_secs(15);

/// A `codex app-server` session: JSON-RPC, one JSON document per line on stdio. Killed when
/// dropped.
struct AppServer {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
    deadline: Instant,
    wait: Duration,
    next_id: i64,
}

impl AppServer {
    /// Starts it in `cwd` and goes through `initialize` / `initialized`.
    fn start(codex: &Path, cwd: &Path, wait: Duration) -> Result<AppServer, String> {
        let mut child = Command::new(codex)
            .arg("app-server")
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {} app-server: {e}", codex.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, lines) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = AppServer {
            child,
            stdin,
            lines,
            deadline: Instant::now() + wait,
            wait,
            next_id: 1,
        };
        s.request(
            "initialize",
            json!({"clientInfo": {"name": "memsync", "title": "memsync", "version": env!("CARGO_PKG_VERSION")}}),
        )?;
        s.send(&json!({"method": "initialized"}))?;
        Ok(s)
    }

    fn send(&mut self, v: &Value) -> Result<(), String> {
        writeln!(self.stdin, "{v}")
            .and_then(|_| self.stdin.flush())
            .map_err(|e| format!("codex app-server stopped reading: {e}"))
    }

    /// The result of one request (notifications in between are skipped).
    fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"method": method, "params": params, "id": id}))?;
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).map_err(|_| {
                format!(
                    "codex app-server did not answer `{method}` within {:?}",
                    self.wait
                )
            })?;
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v.get("id").and_then(Value::as_i64) == Some(id) {
                if let Some(e) = v.get("error") {
                    return Err(format!("codex app-server refused `{method}`: {e}"));
                }
                return Ok(v.get("result").cloned().unwrap_or(Value::Null));
            }
        }
    }

    fn hooks(&mut self, cwd: &Path) -> Result<Vec<ListedHook>, String> {
        self.request("hooks/list", json!({"cwds": [cwd]}))
            .map(|r| parse_hooks_list(&r))
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The hooks Codex sees for a session in `cwd`, with their trust, asked of Codex itself: `codex
/// app-server` over JSON-RPC on stdio (`initialize`, `initialized`, `hooks/list`). Read only:
/// nothing is trusted or changed.
pub fn list_hooks(codex: &Path, cwd: &Path, wait: Duration) -> Result<Vec<ListedHook>, String> {
    AppServer::start(codex, cwd, wait)?.hooks(cwd)
}

/// Trusts the hooks whose commands are `commands` the way Codex's own `/hooks` screen does:
/// Codex lists them with the hash it computes of each definition (`hooks/list`), and memsync
/// asks Codex to record that hash as trusted (`config/batchWrite` of `hooks.state`), then lists
/// them again to confirm. memsync computes no hash. Done only when the user asks
/// (`install-hook --agent codex --trust`). The hooks as Codex lists them afterwards.
pub fn trust_hooks(
    codex: &Path,
    cwd: &Path,
    commands: &[String],
    wait: Duration,
) -> Result<Vec<ListedHook>, String> {
    let mut app = AppServer::start(codex, cwd, wait)?;
    let ours = |l: &ListedHook| commands.contains(&l.command);
    let listed = app.hooks(cwd)?;
    let mut state = serde_json::Map::new();
    for l in listed.iter().filter(|l| ours(l)) {
        if l.trust_status == "trusted" || l.trust_status == "managed" {
            continue;
        }
        let (Some(key), Some(hash)) = (&l.key, &l.current_hash) else {
            return Err(format!(
                "Codex lists the hook `{}` without its key or hash; trust it in Codex (/hooks)",
                l.command
            ));
        };
        state.insert(key.clone(), json!({ "trusted_hash": hash }));
    }
    if !state.is_empty() {
        app.request(
            "config/batchWrite",
            json!({"edits": [{"keyPath": "hooks.state", "value": state, "mergeStrategy": "upsert"}]}),
        )?;
    }
    let after: Vec<ListedHook> = app.hooks(cwd)?.into_iter().filter(|l| ours(l)).collect();
    Ok(after)
}

/// The hooks of a `hooks/list` result, whichever way Codex nests them (per cwd, or flat).
pub fn parse_hooks_list(result: &Value) -> Vec<ListedHook> {
    let mut out = Vec::new();
    collect_listed(result, &mut out);
    out
}

fn collect_listed(v: &Value, out: &mut Vec<ListedHook>) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| collect_listed(i, out)),
        Value::Object(map) => {
            if let Some(status) = map.get("trustStatus").and_then(Value::as_str) {
                let s = |k: &str| map.get(k).and_then(Value::as_str).map(str::to_owned);
                out.push(ListedHook {
                    event: s("eventName")
                        .or_else(|| s("event"))
                        .or_else(|| s("hookEventName"))
                        .unwrap_or_default(),
                    command: s("command").unwrap_or_default(),
                    source_path: s("sourcePath"),
                    trust_status: status.to_owned(),
                    key: s("key"),
                    current_hash: s("currentHash"),
                });
            } else {
                map.values().for_each(|i| collect_listed(i, out));
            }
        }
        _ => {}
    }
}

/// The `codex` program: `$MEMSYNC_CODEX`, else `codex` on `PATH`.
pub fn find_codex(env: &dyn Env) -> Option<PathBuf> {
    if let Some(p) = env.var("MEMSYNC_CODEX").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    crate::config::find_on_path(env, "codex")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::hooks_file::{install_hooks, installed_hooks, remove_hooks};

    const EXE: &str = "/opt/memsync/bin/memsync";

    #[test]
    fn hooks_carry_the_agent_and_keep_foreign_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(".codex/hooks.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let foreign = json!({"hooks": {
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "other-tool start", "timeout": 5}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        }});
        std::fs::write(&path, foreign.to_string()).unwrap();
        let out = install_hooks(&path, Path::new(EXE), &HOOKS).unwrap();
        assert_eq!(out.added, ["SessionStart", "SessionEnd"]);
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["hooks"]["Stop"], foreign["hooks"]["Stop"]);
        assert_eq!(
            v["hooks"]["SessionStart"][0],
            foreign["hooks"]["SessionStart"][0]
        );
        assert_eq!(
            v["hooks"]["SessionStart"][1],
            json!({"hooks": [{"type": "command", "command": format!("{EXE} hook session-start --agent codex"),
                "timeout": 10, "statusMessage": "memsync: syncing team memory"}]})
        );
        assert_eq!(
            v["hooks"]["SessionEnd"][0]["hooks"][0],
            json!({"type": "command", "command": format!("{EXE} hook session-end --agent codex --deadline 2s"), "timeout": 3})
        );
        // Twice: the file is not even rewritten (a rewrite would not change trust, but a
        // changed definition would).
        let before = std::fs::read(&path).unwrap();
        assert!(
            !install_hooks(&path, Path::new(EXE), &HOOKS)
                .unwrap()
                .changed
        );
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert_eq!(installed_hooks(&path, &HOOKS).unwrap().len(), 2);

        // Out again: the foreign hooks are what is left.
        assert_eq!(
            remove_hooks(&path, &HOOKS).unwrap(),
            ["SessionStart", "SessionEnd"]
        );
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v, foreign);
        assert!(remove_hooks(&path, &HOOKS).unwrap().is_empty());
    }

    #[test]
    fn a_hook_without_the_agent_is_upgraded_keeping_its_arguments() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hooks.json");
        std::fs::write(
            &path,
            r#"{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"memsync hook session-start --deadline 4s"}]}]}}"#,
        )
        .unwrap();
        let found = installed_hooks(&path, &HOOKS).unwrap();
        assert!(found[0].legacy, "{found:?}");
        let out = install_hooks(&path, Path::new(EXE), &HOOKS).unwrap();
        assert_eq!(out.upgraded, ["SessionStart"]);
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            v["hooks"]["SessionStart"][0]["hooks"][0]["command"],
            format!("{EXE} hook session-start --agent codex --deadline 4s")
        );
        assert!(
            !installed_hooks(&path, &HOOKS)
                .unwrap()
                .iter()
                .any(|h| h.legacy)
        );
    }

    #[test]
    fn hooks_list_results_are_read_flat_or_nested() {
        let r = json!({"data": [{"cwd": "/r", "hooks": [
            {"eventName": "SessionStart", "command": "/m hook session-start --agent codex",
             "sourcePath": "/h/.codex/hooks.json", "trustStatus": "untrusted", "currentHash": "sha256:ab"},
            {"eventName": "SessionEnd", "command": "x", "trustStatus": "trusted"}
        ]}]});
        let l = parse_hooks_list(&r);
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].trust_status, "untrusted");
        assert_eq!(l[0].source_path.as_deref(), Some("/h/.codex/hooks.json"));
        assert_eq!(l[1].event, "SessionEnd");
    }

    #[test]
    fn codex_home_and_files() {
        let env = |k: &str| (k == "HOME").then(|| "/h".to_string());
        assert_eq!(codex_home(&env).unwrap(), Path::new("/h/.codex"));
        assert_eq!(
            Codex.user_hooks_file(&env).unwrap(),
            Path::new("/h/.codex/hooks.json")
        );
        assert_eq!(
            Codex.project_hooks_file(Path::new("/r")).unwrap(),
            Path::new("/r/.codex/hooks.json")
        );
        let env = |k: &str| (k == "CODEX_HOME").then(|| "/cx".to_string());
        assert_eq!(codex_home(&env).unwrap(), Path::new("/cx"));
    }
}
