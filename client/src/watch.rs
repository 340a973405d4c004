//! What `memsync watch` needs besides the pull/push engine: a cheap fingerprint of the team dir
//! (sizes and modification times, polled), one watcher per team dir (a lock and a pidfile in the
//! project's state dir), and the processes it lives by (`--until-pid`, the agent that ran a hook).
//!
//! The lock is the truth: a watcher holds `watch.lock` (flock) for its whole life, so a second
//! one is refused and a stale `watch.pid` (its process gone) is recognised as such whatever pid
//! it names. `watch.pid` says who holds it: pid, the agent session, the process it lives by.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::atomic::Durability;

/// The lock a watcher holds, in the project's state dir.
pub const LOCK_FILE: &str = "watch.lock";
/// Who holds the lock.
pub const PID_FILE: &str = "watch.pid";
/// Where a watcher started by the session-start hook writes its output.
pub const LOG_FILE: &str = "watch.log";
/// A log larger than this is moved to `watch.log.1` when the next watcher starts.
pub const LOG_ROTATE_BYTES: u64 = 1024 * 1024;

/// What `watch.pid` holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct WatchInfo {
    pub pid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_pid: Option<i32>,
    pub team_dir: PathBuf,
    pub started_at: String,
}

/// The running watcher's hold on a state dir; dropping it removes the pidfile and frees the lock.
pub struct WatchLock {
    _lock: nix::fcntl::Flock<File>,
    pidfile: PathBuf,
}

/// Another watcher has the team dir (its pidfile, when readable).
#[derive(Debug)]
pub struct Taken(pub Option<WatchInfo>);

impl WatchLock {
    /// Takes the state dir's watch lock and writes `info` as its pidfile; `Taken` when another
    /// watcher holds it.
    pub fn acquire(
        state_dir: &Path,
        info: &WatchInfo,
    ) -> std::io::Result<Result<WatchLock, Taken>> {
        std::fs::create_dir_all(state_dir)?;
        let file = open_lock(state_dir)?;
        let lock = match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
        {
            Ok(l) => l,
            Err(_) => return Ok(Err(Taken(read_info(state_dir)))),
        };
        let pidfile = state_dir.join(PID_FILE);
        let text = serde_json::to_vec(info).map_err(std::io::Error::other)?;
        crate::atomic::write(&pidfile, &text, None, Durability::Cache)?;
        Ok(Ok(WatchLock {
            _lock: lock,
            pidfile,
        }))
    }
}

impl Drop for WatchLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.pidfile);
    }
}

fn open_lock(state_dir: &Path) -> std::io::Result<File> {
    File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(state_dir.join(LOCK_FILE))
}

fn read_info(state_dir: &Path) -> Option<WatchInfo> {
    let bytes = std::fs::read(state_dir.join(PID_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Whether some process holds the state dir's watch lock.
fn lock_held(state_dir: &Path) -> bool {
    let Ok(file) = open_lock(state_dir) else {
        return false;
    };
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).is_err()
}

/// The watcher that keeps this state dir's team dir live, if one runs. A pidfile left by a
/// watcher that is gone is removed.
pub fn running(state_dir: &Path) -> Option<WatchInfo> {
    if lock_held(state_dir) {
        return read_info(state_dir);
    }
    let _ = std::fs::remove_file(state_dir.join(PID_FILE));
    None
}

/// What [`stop`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Stopped {
    /// No watcher runs for this team dir.
    NotRunning,
    /// A watcher runs, started for another session: left alone.
    Other(WatchInfo),
    /// Stopped by SIGTERM within the grace period.
    Terminated(WatchInfo),
    /// It did not stop within the grace period: killed.
    Killed(WatchInfo),
}

/// Stops the watcher of `state_dir` when `ours` says it belongs to the caller: SIGTERM (it
/// finishes an operation under way, then exits), then SIGKILL if it has not exited after `grace`.
/// A watcher killed mid-way loses nothing: each pull page and each push is recorded whole or not
/// at all.
pub fn stop(state_dir: &Path, ours: impl Fn(&WatchInfo) -> bool, grace: Duration) -> Stopped {
    let Some(info) = running(state_dir) else {
        return Stopped::NotRunning;
    };
    if !ours(&info) {
        return Stopped::Other(info);
    }
    let Ok(pid) = i32::try_from(info.pid) else {
        return Stopped::Other(info);
    };
    let pid = nix::unistd::Pid::from_raw(pid);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let until = Instant::now() + grace;
    while Instant::now() < until {
        if !lock_held(state_dir) && !pid_alive(info.pid as i32) {
            return Stopped::Terminated(info);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    let until = Instant::now() + Duration::from_secs(2);
    while lock_held(state_dir) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(25));
    }
    let _ = std::fs::remove_file(state_dir.join(PID_FILE));
    Stopped::Killed(info)
}

/// Whether process `pid` exists and has not exited (a zombie, exited but not yet reaped by its
/// parent, counts as exited).
pub fn pid_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) | Err(nix::errno::Errno::EPERM) => {}
        Err(_) => return false,
    }
    !matches!(proc_stat(pid), Some((state, _, _)) if state == 'Z' || state == 'X')
}

/// `/proc/<pid>/stat`: (state, ppid, command name); None where there is no `/proc`.
fn proc_stat(pid: i32) -> Option<(char, i32, String)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_owned();
    let mut rest = text.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((state, ppid, comm))
}

/// Shells a hook command may run under (`sh -c …`): the agent is above them.
const SHELLS: [&str; 7] = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "fish"];

/// The agent process that ran this hook: our parent, or, when the parent is a shell that ran the
/// hook's command line, the first process above the shells.
pub fn agent_pid() -> i32 {
    let mut pid = nix::unistd::getppid().as_raw();
    for _ in 0..8 {
        match proc_stat(pid) {
            Some((_, ppid, comm)) if SHELLS.contains(&comm.as_str()) && ppid > 1 => pid = ppid,
            _ => break,
        }
    }
    pid
}

/// The team dir's files by path, with size, modification time and inode: a change of any (or a
/// file appearing or going) is a local change to look at. Symlinks and memsync's temp files are
/// left out, as the scanner leaves them out.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Fingerprint(BTreeMap<PathBuf, (u64, i64, i64, u64)>);

impl Fingerprint {
    pub fn of(root: &Path) -> Fingerprint {
        let mut map = BTreeMap::new();
        walk(root, &mut map, 0);
        Fingerprint(map)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, (u64, i64, i64, u64)>, depth: usize) {
    use std::os::unix::fs::MetadataExt;
    if depth > 32 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        if name.to_string_lossy().starts_with(".memsync-tmp-") {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if meta.is_dir() {
            walk(&e.path(), out, depth + 1);
        } else if meta.is_file() {
            out.insert(
                e.path(),
                (meta.len(), meta.mtime(), meta.mtime_nsec(), meta.ino()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(dir: &Path) -> WatchInfo {
        WatchInfo {
            pid: std::process::id(),
            session_id: Some("s1".into()),
            until_pid: None,
            team_dir: dir.to_owned(),
            started_at: "now".into(),
        }
    }

    #[test]
    fn one_watcher_per_state_dir_and_its_pidfile_goes_with_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        assert_eq!(running(dir), None);
        let lock = WatchLock::acquire(dir, &info(dir)).unwrap().unwrap();
        assert_eq!(running(dir), Some(info(dir)));
        // A second one is refused and told who holds it.
        let Err(Taken(holder)) = WatchLock::acquire(dir, &info(dir)).unwrap() else {
            panic!("a second watcher got the lock");
        };
        assert_eq!(holder, Some(info(dir)));
        // Another session's watcher is not stopped.
        assert!(matches!(
            stop(
                dir,
                |i| i.session_id.as_deref() == Some("s2"),
                Duration::ZERO
            ),
            Stopped::Other(_)
        ));
        drop(lock);
        assert!(!dir.join(PID_FILE).exists());
        assert_eq!(running(dir), None);
        // A pidfile without a lock holder is stale: removed, not believed.
        std::fs::write(dir.join(PID_FILE), serde_json::to_vec(&info(dir)).unwrap()).unwrap();
        assert_eq!(running(dir), None);
        assert!(!dir.join(PID_FILE).exists());
        assert_eq!(stop(dir, |_| true, Duration::ZERO), Stopped::NotRunning);
    }

    #[test]
    fn processes_alive_and_gone() {
        assert!(pid_alive(std::process::id() as i32));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        // Exited but not reaped: a zombie counts as gone.
        std::thread::sleep(Duration::from_millis(200));
        assert!(!pid_alive(pid), "a zombie is not alive");
        child.wait().unwrap();
        assert!(!pid_alive(pid));
        assert!(!pid_alive(0) && !pid_alive(-1));
    }

    #[test]
    fn the_fingerprint_sees_edits_new_and_removed_files_but_not_temp_files() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("a.md"), "a").unwrap();
        std::fs::write(root.join("sub/b.md"), "b").unwrap();
        let first = Fingerprint::of(root);
        assert_eq!(first.len(), 2);
        std::fs::write(root.join(".memsync-tmp-x"), "partial").unwrap();
        assert_eq!(Fingerprint::of(root), first);
        std::fs::write(root.join("sub/b.md"), "bb").unwrap();
        let second = Fingerprint::of(root);
        assert_ne!(second, first);
        std::fs::remove_file(root.join("a.md")).unwrap();
        assert_ne!(Fingerprint::of(root), second);
        assert!(Fingerprint::of(&root.join("missing")).is_empty());
    }
}
