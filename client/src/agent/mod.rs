//! The coding agents memsync serves, one adapter each behind one small trait: where the agent's
//! team dir lives, how memsync's hooks are installed in it and taken out again, what its
//! session-start output looks like, which file it reads its instructions from at start, and
//! how to tell that a repository (or a user) uses it.
//!
//! Claude Code is the reference: its memory dirs are Claude Code's own. Codex CLI gets a full
//! adapter (hooks in `hooks.json`, trust checked through `codex app-server`). Gemini CLI and
//! GitHub Copilot CLI get the team index written into their instruction file (`memsync render`),
//! in a block memsync owns.
//!
//! Every agent but Claude Code gets a memsync-owned per-project memory dir under its own home
//! (`<home>/memsync/projects/<key>/memory`, team memories in `team/` below it), named in the
//! context memsync gives it. `<key>` is Claude Code's project key (the repository's main root,
//! every character outside `[A-Za-z0-9]` replaced by `-`).

pub mod claude;
pub mod codex;
pub mod hooks_file;
pub mod layouts;
pub mod render;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::Env;
use hooks_file::HookSpec;

/// An agent memsync knows, as named on the command line (`--agent codex`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum AgentId {
    #[default]
    Claude,
    Codex,
    Gemini,
    Copilot,
}

impl AgentId {
    pub const ALL: [AgentId; 4] = [
        AgentId::Claude,
        AgentId::Codex,
        AgentId::Gemini,
        AgentId::Copilot,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AgentId::Claude => "claude",
            AgentId::Codex => "codex",
            AgentId::Gemini => "gemini",
            AgentId::Copilot => "copilot",
        }
    }

    pub fn parse(s: &str) -> Result<AgentId, String> {
        AgentId::ALL
            .into_iter()
            .find(|a| a.as_str() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| {
                format!(
                    "`{s}` is not an agent memsync knows; use one of {}",
                    AgentId::ALL.map(AgentId::as_str).join(", ")
                )
            })
    }

    /// Its adapter.
    pub fn adapter(self) -> &'static dyn Agent {
        match self {
            AgentId::Claude => &claude::Claude,
            AgentId::Codex => &codex::Codex,
            AgentId::Gemini => &GEMINI,
            AgentId::Copilot => &COPILOT,
        }
    }
}

impl std::fmt::Display for AgentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The part of an agent's hook input memsync reads; everything else is ignored. Claude Code and
/// Codex CLI both send `session_id` and `cwd` (the session's working directory).
#[derive(Debug, Default, Deserialize)]
pub struct HookInput {
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub hook_event_name: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
}

/// What memsync needs to know about one agent.
pub trait Agent: Sync {
    fn id(&self) -> AgentId;

    /// As users know it: "Claude Code", "Codex CLI".
    fn name(&self) -> &'static str;

    /// The agent's own configuration directory (`~/.claude`, `$CODEX_HOME`).
    fn home(&self, env: &dyn Env) -> Option<PathBuf>;

    /// The default private memory dir of the project whose main root is `project_root`; its
    /// `team/` subdirectory is the default team dir.
    fn private_dir(&self, env: &dyn Env, project_root: &Path) -> Option<PathBuf> {
        Some(
            self.home(env)?
                .join("memsync")
                .join("projects")
                .join(crate::config::claude_project_key(project_root))
                .join("memory"),
        )
    }

    /// When [`Agent::private_dir`] has no home to start from: what could not be located, and
    /// what the user can set instead (for `ConfigError::HomeMissing`).
    fn home_missing(&self) -> (&'static str, &'static str) {
        (
            "the memory directory memsync keeps for the agent",
            "set MEMSYNC_PRIVATE_DIR",
        )
    }

    /// memsync's hooks for this agent, when it runs session hooks memsync can use.
    fn hooks(&self) -> Option<&'static HookSpec> {
        None
    }

    /// The hooks file of a repository (committed with it).
    fn project_hooks_file(&self, _repo_root: &Path) -> Option<PathBuf> {
        None
    }

    /// The user's own hooks file, for every project.
    fn user_hooks_file(&self, _env: &dyn Env) -> Option<PathBuf> {
        None
    }

    /// What the agent must be told, beyond the hooks file, before the hooks run (trust);
    /// printed by `install-hook`.
    fn activation_steps(&self, _hooks_file: &Path, _project: bool) -> Vec<String> {
        Vec::new()
    }

    /// The session-start hook's stdout for `context`. Claude Code and Codex CLI read the same
    /// shape (Codex checks it against a strict schema: exactly these keys).
    fn session_start_output(&self, context: &str) -> serde_json::Value {
        serde_json::json!({
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": context,
            }
        })
    }

    /// The hook input read from the agent's JSON on stdin.
    fn hook_input(&self, stdin: &str) -> HookInput {
        serde_json::from_str(stdin).unwrap_or_default()
    }

    /// The instruction file the agent reads at start, relative to the repository root; where
    /// `memsync render` writes the team index.
    fn instruction_file(&self) -> &'static str;

    /// Files and directories in a repository that show the agent is used there.
    fn repo_markers(&self) -> &'static [&'static str];

    /// Whether the repository at `root` is set up for this agent.
    fn used_in_repo(&self, root: &Path) -> bool {
        self.repo_markers()
            .iter()
            .any(|m| std::fs::symlink_metadata(root.join(m)).is_ok())
    }

    /// Whether this user has the agent set up (its home exists).
    fn used_by_user(&self, env: &dyn Env) -> bool {
        self.home(env).is_some_and(|h| h.is_dir())
    }
}

/// An agent memsync serves through its instruction file only (`memsync render`): no session
/// hook memsync relies on yet.
pub struct InstructionOnly {
    id: AgentId,
    name: &'static str,
    /// Its configuration directory under `$HOME`.
    home_dir: &'static str,
    instruction_file: &'static str,
    markers: &'static [&'static str],
}

/// Gemini CLI: the team index goes into `GEMINI.md`, which it reads at start.
pub const GEMINI: InstructionOnly = InstructionOnly {
    id: AgentId::Gemini,
    name: "Gemini CLI",
    home_dir: ".gemini",
    instruction_file: "GEMINI.md",
    markers: &[".gemini", "GEMINI.md"],
};

/// GitHub Copilot CLI: the team index goes into `.github/copilot-instructions.md`, which it
/// reads at start.
pub const COPILOT: InstructionOnly = InstructionOnly {
    id: AgentId::Copilot,
    name: "GitHub Copilot CLI",
    home_dir: ".copilot",
    instruction_file: ".github/copilot-instructions.md",
    markers: &[".github/copilot-instructions.md", ".github/instructions"],
};

impl Agent for InstructionOnly {
    fn id(&self) -> AgentId {
        self.id
    }
    fn name(&self) -> &'static str {
        self.name
    }
    fn home(&self, env: &dyn Env) -> Option<PathBuf> {
        env.var("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(self.home_dir))
    }
    fn instruction_file(&self) -> &'static str {
        self.instruction_file
    }
    fn repo_markers(&self) -> &'static [&'static str] {
        self.markers
    }
}

/// The agents set up in the repository at `root`, in [`AgentId::ALL`] order.
pub fn detect_in_repo(root: &Path) -> Vec<AgentId> {
    AgentId::ALL
        .into_iter()
        .filter(|a| a.adapter().used_in_repo(root))
        .collect()
}

/// The agents this user has set up (their home exists), in [`AgentId::ALL`] order.
pub fn detect_for_user(env: &dyn Env) -> Vec<AgentId> {
    AgentId::ALL
        .into_iter()
        .filter(|a| a.adapter().used_by_user(env))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print() {
        for a in AgentId::ALL {
            assert_eq!(AgentId::parse(a.as_str()).unwrap(), a);
            assert_eq!(a.adapter().id(), a);
        }
        assert_eq!(AgentId::parse(" Codex ").unwrap(), AgentId::Codex);
        let e = AgentId::parse("cursor").unwrap_err();
        assert!(e.contains("claude, codex, gemini, copilot"), "{e}");
    }

    #[test]
    fn memsync_owned_dirs_sit_under_the_agents_home() {
        let env = |k: &str| match k {
            "HOME" => Some("/h".to_string()),
            "CODEX_HOME" => Some("/cx".to_string()),
            _ => None,
        };
        let root = Path::new("/work/my repo");
        assert_eq!(
            AgentId::Codex.adapter().private_dir(&env, root).unwrap(),
            Path::new("/cx/memsync/projects/-work-my-repo/memory")
        );
        assert_eq!(
            AgentId::Gemini.adapter().private_dir(&env, root).unwrap(),
            Path::new("/h/.gemini/memsync/projects/-work-my-repo/memory")
        );
        assert_eq!(
            AgentId::Claude.adapter().private_dir(&env, root).unwrap(),
            Path::new("/h/.claude/projects/-work-my-repo/memory")
        );
    }

    #[test]
    fn repositories_and_users_are_detected_by_their_files() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        assert!(detect_in_repo(root).is_empty());
        std::fs::create_dir(root.join(".codex")).unwrap();
        std::fs::write(root.join("GEMINI.md"), "x").unwrap();
        assert_eq!(detect_in_repo(root), [AgentId::Codex, AgentId::Gemini]);
        std::fs::create_dir(root.join(".claude")).unwrap();
        std::fs::create_dir_all(root.join(".github/instructions")).unwrap();
        assert_eq!(detect_in_repo(root), AgentId::ALL);

        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".claude")).unwrap();
        let h = home.path().to_string_lossy().into_owned();
        let env = move |k: &str| (k == "HOME").then(|| h.clone());
        assert_eq!(detect_for_user(&env), [AgentId::Claude]);
    }

    #[test]
    fn session_start_output_has_exactly_the_keys_codex_accepts() {
        for a in [AgentId::Claude, AgentId::Codex] {
            let out = a.adapter().session_start_output("ctx");
            let top: Vec<&String> = out.as_object().unwrap().keys().collect();
            assert_eq!(top, ["hookSpecificOutput"]);
            let inner: Vec<&String> = out["hookSpecificOutput"]
                .as_object()
                .unwrap()
                .keys()
                .collect();
            assert_eq!(inner, ["hookEventName", "additionalContext"]);
        }
    }
}
