//! Claude Code, the reference agent: its own memory dirs (`~/.claude/projects/<key>/memory`,
//! `team/` below), memsync's `SessionStart` and `SessionEnd` hooks in `.claude/settings.json`
//! (or the user's), and `CLAUDE.md` for `memsync render`.

use std::path::{Path, PathBuf};

use super::hooks_file::{
    HookDef, HookSpec, LEGACY_SESSION_END, SESSION_END_ARGS, SESSION_START_ARGS,
};
use super::{Agent, AgentId};
use crate::config::{Env, claude_dir, claude_project_key};

/// memsync's hooks in Claude Code's settings. Claude Code waits 10 s for the session-start
/// hook (the pull inside has its own 3 s deadline) and 30 s for the session-end one.
pub const HOOKS: HookSpec = HookSpec {
    defs: &[
        HookDef {
            event: "SessionStart",
            key: "`hooks.SessionStart`",
            args: SESSION_START_ARGS,
            extra: "",
            timeout: 10,
            legacy: None,
            status_message: None,
        },
        HookDef {
            event: "SessionEnd",
            key: "`hooks.SessionEnd`",
            args: SESSION_END_ARGS,
            extra: "",
            timeout: 30,
            legacy: Some(LEGACY_SESSION_END),
            status_message: None,
        },
    ],
    agent: None,
};

/// `<repo root>/.claude/settings.json`, shared with the team through git.
pub fn project_settings_path(repo_root: &Path) -> PathBuf {
    repo_root.join(".claude").join("settings.json")
}

/// `$CLAUDE_CONFIG_DIR/settings.json`, else `$HOME/.claude/settings.json`.
pub fn user_settings_path(env: &dyn Env) -> Option<PathBuf> {
    claude_dir(env).map(|d| d.join("settings.json"))
}

pub struct Claude;

impl Agent for Claude {
    fn id(&self) -> AgentId {
        AgentId::Claude
    }
    fn name(&self) -> &'static str {
        "Claude Code"
    }
    fn home(&self, env: &dyn Env) -> Option<PathBuf> {
        claude_dir(env)
    }
    /// Claude Code's own: it loads `MEMORY.md` from there by itself.
    fn private_dir(&self, env: &dyn Env, project_root: &Path) -> Option<PathBuf> {
        Some(
            self.home(env)?
                .join("projects")
                .join(claude_project_key(project_root))
                .join("memory"),
        )
    }
    fn home_missing(&self) -> (&'static str, &'static str) {
        (
            "Claude Code's memory directory",
            "set CLAUDE_CONFIG_DIR or MEMSYNC_PRIVATE_DIR",
        )
    }
    fn hooks(&self) -> Option<&'static HookSpec> {
        Some(&HOOKS)
    }
    fn project_hooks_file(&self, repo_root: &Path) -> Option<PathBuf> {
        Some(project_settings_path(repo_root))
    }
    fn user_hooks_file(&self, env: &dyn Env) -> Option<PathBuf> {
        user_settings_path(env)
    }
    fn instruction_file(&self) -> &'static str {
        "CLAUDE.md"
    }
    fn repo_markers(&self) -> &'static [&'static str] {
        &[".claude", "CLAUDE.md", "CLAUDE.local.md"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
