//! Which agent layouts memsync keeps for a repository: every agent whose hook or command has
//! synced the project there, and every instruction file `memsync render` writes. A sync of one
//! layout brings the others to the same server revision, and a pull refreshes the rendered
//! blocks. Kept under the state root (`layouts/<key>.json`, `<key>` the repository's project
//! key), never in the team dir or the repository.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use memsync_core::Sha256;
use serde::{Deserialize, Serialize};

use super::AgentId;
use crate::atomic::Durability;

/// An instruction file with memsync's block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rendered {
    pub agent: AgentId,
    /// The block memsync wrote last, to tell a block edited by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_sha256: Option<Sha256>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layouts {
    #[serde(default)]
    pub agents: BTreeSet<AgentId>,
    /// Instruction file (absolute path) → what was rendered into it.
    #[serde(default)]
    pub rendered: BTreeMap<PathBuf, Rendered>,
}

#[derive(Debug, thiserror::Error)]
pub enum LayoutsError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} is not what memsync wrote ({message}); delete it and run `memsync install-hook` or `memsync render` again for each agent",
        path.display()
    )]
    Invalid { path: PathBuf, message: String },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The registry file of the repository (or directory) whose project key is `key`.
pub fn path(state_root: &Path, key: &str) -> PathBuf {
    state_root.join("layouts").join(format!("{key}.json"))
}

impl Layouts {
    /// The registry at `path`; empty when there is none.
    pub fn load(path: &Path) -> Result<Layouts, LayoutsError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Layouts::default()),
            Err(source) => {
                return Err(LayoutsError::Read {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        serde_json::from_str(&text).map_err(|e| LayoutsError::Invalid {
            path: path.to_owned(),
            message: e.to_string(),
        })
    }

    pub fn save(&self, path: &Path) -> Result<(), LayoutsError> {
        let write = |source| LayoutsError::Write {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(write)?;
        }
        let mut text =
            serde_json::to_string_pretty(self).map_err(|e| write(std::io::Error::other(e)))?;
        text.push('\n');
        crate::atomic::write(path, text.as_bytes(), None, Durability::Durable).map_err(write)
    }

    /// Adds `agent` to the registry at `path` (read again first, so concurrent additions of
    /// other agents are kept); whether it was new.
    pub fn register(path: &Path, agent: AgentId) -> Result<bool, LayoutsError> {
        let mut l = Layouts::load(path)?;
        if !l.agents.insert(agent) {
            return Ok(false);
        }
        l.save(path)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_round_trips_and_adds_once() {
        let tmp = tempfile::tempdir().unwrap();
        let p = path(tmp.path(), "-r-x");
        assert_eq!(Layouts::load(&p).unwrap(), Layouts::default());
        assert!(Layouts::register(&p, AgentId::Codex).unwrap());
        assert!(!Layouts::register(&p, AgentId::Codex).unwrap());
        assert!(Layouts::register(&p, AgentId::Claude).unwrap());
        let mut l = Layouts::load(&p).unwrap();
        assert_eq!(
            l.agents.iter().copied().collect::<Vec<_>>(),
            [AgentId::Claude, AgentId::Codex]
        );
        l.rendered.insert(
            PathBuf::from("/r/GEMINI.md"),
            Rendered {
                agent: AgentId::Gemini,
                block_sha256: Some(Sha256::of(b"b")),
            },
        );
        l.save(&p).unwrap();
        assert_eq!(Layouts::load(&p).unwrap(), l);
        std::fs::write(&p, "{oops").unwrap();
        let e = Layouts::load(&p).unwrap_err().to_string();
        assert!(e.contains("delete it"), "{e}");
    }
}
