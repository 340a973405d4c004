//! Sync bookkeeping, kept outside the team dir (under `$XDG_STATE_HOME/memsync/<project>-<hash>/`)
//! so it is never synced: the last pulled revision, the base of every synced file (its sha256 and
//! a copy of its content, for three-way merges and diffs, and the repository paths it named when
//! it was written, for staleness checks), open conflicts with the server's version, files the
//! server refused, and files that became proposals waiting for a reviewer.
//!
//! Every write is atomic (temp file, fsync, rename), and an exclusive lock keeps two `memsync`
//! processes (a hook and a manual pull, say) from interleaving.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use memsync_core::Sha256;
use memsync_core::wire::{ProposalStatus, PushOp};
use serde::{Deserialize, Serialize};

use crate::atomic::Durability;

pub const STATE_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Tracked {
    pub sha256: Sha256,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Repository paths the synced version names that existed in its author's working tree
    /// (`FileState::named_paths`): checked for staleness at session start and by `check`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub named_paths: Vec<String>,
    /// How the file on disk looked when it was last read and found to hold `sha256` (a settled
    /// [`Stamp`]): while it still looks so, a scan does not read it again. Cleared whenever
    /// `sha256` changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<crate::fsops::Stamp>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ConflictRecord {
    pub reason: String,
    /// The server's version (None when the server deleted the file). Its content is kept in
    /// `conflicts/<path>` of the state dir.
    pub server_sha256: Option<Sha256>,
    pub local_sha256: Option<Sha256>,
    pub at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RefusedRecord {
    /// The refused content; the file is not offered again until it changes.
    pub local_sha256: Sha256,
    pub rule: String,
    pub message: String,
}

/// A change a push sent that became a proposal (`review = required`): not sent again while the
/// local file stays as it was proposed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ProposedRecord {
    pub id: i64,
    pub op: PushOp,
    /// The proposed content (None for a delete): the file as it is on disk while it waits.
    pub sha256: Option<Sha256>,
    /// As the server last said: `pending`, or `rejected` for content rejected before.
    pub status: ProposalStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub at: String,
}

impl ProposedRecord {
    /// Whether the file on disk (None: absent) is still what was proposed.
    pub fn matches(&self, disk: Option<Sha256>) -> bool {
        match self.op {
            PushOp::Put => disk.is_some() && disk == self.sha256,
            PushOp::Delete => disk.is_none(),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct State {
    pub version: u32,
    pub server: String,
    pub project: String,
    /// The revision the team dir reflects (the next pull asks for changes after it).
    pub revision: i64,
    #[serde(default)]
    pub etag: Option<String>,
    #[serde(default)]
    pub files: BTreeMap<String, Tracked>,
    #[serde(default)]
    pub conflicts: BTreeMap<String, ConflictRecord>,
    #[serde(default)]
    pub refused: BTreeMap<String, RefusedRecord>,
    #[serde(default)]
    pub last_pull_at: Option<String>,
    /// Changes waiting for a reviewer, by path.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub proposed: BTreeMap<String, ProposedRecord>,
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{0} is corrupt ({1}); move it away and run `memsync pull` to rebuild it (local files are kept)"
    )]
    Corrupt(PathBuf, String),
    #[error("another memsync is syncing this project right now (lock {0}); try again in a moment")]
    Busy(PathBuf),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StateError + '_ {
    move |source| StateError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The state dir of one project, locked for the life of this value.
pub struct StateStore {
    dir: PathBuf,
    _lock: nix::fcntl::Flock<File>,
    bases: std::cell::RefCell<Option<BTreeMap<String, String>>>,
    bases_dirty: std::cell::Cell<bool>,
}

impl StateStore {
    /// Opens (creating) the state dir and takes its lock; waits up to `wait` for another
    /// memsync to finish.
    pub fn open(dir: &Path, wait: std::time::Duration) -> Result<StateStore, StateError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let lock_path = dir.join("lock");
        let started = std::time::Instant::now();
        let mut file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        let lock = loop {
            match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                Ok(l) => break l,
                Err((f, _)) => {
                    if started.elapsed() >= wait {
                        return Err(StateError::Busy(lock_path));
                    }
                    file = f;
                    std::thread::sleep(std::time::Duration::from_millis(25));
                }
            }
        };
        remove_stale_temps(dir);
        Ok(StateStore {
            dir: dir.to_owned(),
            _lock: lock,
            bases: Default::default(),
            bases_dirty: Default::default(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The state in `dir` as last saved, read without taking the lock (every save is an atomic
    /// rename, so a reader sees one whole version): for checks that change nothing. None when
    /// there is none or it cannot be read.
    pub fn peek(dir: &Path) -> Option<State> {
        let bytes = std::fs::read(dir.join("state.json")).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// The stored state, or a fresh one for this server and project. State written for another
    /// server or project is not reused.
    pub fn load(&self, server: &str, project: &str) -> Result<State, StateError> {
        let path = self.dir.join("state.json");
        let fresh = State {
            version: STATE_VERSION,
            server: server.to_owned(),
            project: project.to_owned(),
            ..State::default()
        };
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(fresh),
            Err(e) => return Err(io(&path)(e)),
        };
        let state: State = serde_json::from_slice(&bytes)
            .map_err(|e| StateError::Corrupt(path.clone(), e.to_string()))?;
        if state.server != server || state.project != project {
            return Ok(fresh);
        }
        Ok(state)
    }

    /// Whether a base copy changed since the last save.
    pub fn has_unsaved_bases(&self) -> bool {
        self.bases_dirty.get()
    }

    pub fn save(&self, state: &State) -> Result<(), StateError> {
        if self.bases_dirty.get() {
            let bytes = serde_json::to_vec(&*self.bases())
                .map_err(|e| StateError::Corrupt(self.dir.join("bases.json"), e.to_string()))?;
            write_atomic(&self.dir.join("bases.json"), &bytes, Durability::Cache)?;
            self.bases_dirty.set(false);
        }
        let bytes = serde_json::to_vec_pretty(state)
            .map_err(|e| StateError::Corrupt(self.dir.join("state.json"), e.to_string()))?;
        write_atomic(&self.dir.join("state.json"), &bytes, Durability::Durable)
    }

    fn blob_path(&self, kind: &str, path: &str) -> PathBuf {
        // `path` is a validated MemoryPath: relative, no `..`, so it stays inside `kind/`.
        self.dir.join(kind).join(path)
    }

    /// The last synced copies, loaded on first use (a pull with nothing new never reads them).
    fn bases(&self) -> std::cell::RefMut<'_, BTreeMap<String, String>> {
        let mut b = self.bases.borrow_mut();
        if b.is_none() {
            let loaded = std::fs::read(self.dir.join("bases.json"))
                .ok()
                .and_then(|bytes| serde_json::from_slice(&bytes).ok())
                .unwrap_or_default();
            *b = Some(loaded);
        }
        std::cell::RefMut::map(b, |b| b.get_or_insert_with(BTreeMap::new))
    }

    /// The last synced content of `path`, if the copy kept is the one with hash `sha`.
    pub fn base_content(&self, path: &str, sha: &Sha256) -> Option<Vec<u8>> {
        self.bases()
            .get(path)
            .filter(|c| Sha256::of(c.as_bytes()) == *sha)
            .map(|c| c.clone().into_bytes())
    }

    /// Keeps a copy of the last synced content, written with the state. The copies are a cache
    /// checked against their hash on every read, so they live in one file written without an
    /// fsync: after a crash a lost copy only turns a merge into a conflict.
    pub fn set_base(&self, path: &str, content: &[u8]) -> Result<(), StateError> {
        if let Ok(text) = std::str::from_utf8(content) {
            let mut b = self.bases();
            if b.get(path).map(String::as_str) != Some(text) {
                b.insert(path.to_owned(), text.to_owned());
                self.bases_dirty.set(true);
            }
        }
        Ok(())
    }

    pub fn remove_base(&self, path: &str) {
        if self.bases().remove(path).is_some() {
            self.bases_dirty.set(true);
        }
    }

    pub fn server_version(&self, path: &str) -> Option<Vec<u8>> {
        std::fs::read(self.blob_path("conflicts", path)).ok()
    }

    pub fn set_server_version(&self, path: &str, content: Option<&[u8]>) -> Result<(), StateError> {
        let p = self.blob_path("conflicts", path);
        match content {
            Some(c) => write_atomic(&p, c, Durability::Durable),
            None => {
                let _ = std::fs::remove_file(&p);
                Ok(())
            }
        }
    }

    pub fn clear_server_version(&self, path: &str) {
        let _ = std::fs::remove_file(self.blob_path("conflicts", path));
    }

    /// Keeps a copy of a local version that `resolve --take server` replaced.
    pub fn backup_local(&self, path: &str, content: &[u8]) -> Result<PathBuf, StateError> {
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S");
        let p = self.blob_path("replaced", &format!("{path}.{stamp}"));
        write_atomic(&p, content, Durability::Durable)?;
        Ok(p)
    }
}

/// Removes temp files a killed memsync left behind (we hold the lock: nobody else is writing).
fn remove_stale_temps(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        let name = e.file_name().to_string_lossy().into_owned();
        if ft.is_dir() {
            remove_stale_temps(&e.path());
        } else if ft.is_file() && crate::atomic::is_temp_name(&name) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

fn write_atomic(path: &Path, bytes: &[u8], durability: Durability) -> Result<(), StateError> {
    crate::atomic::write(path, bytes, None, durability).map_err(io(path))
}
