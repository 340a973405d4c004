//! The team dir on disk, handled so that nothing from the server can write outside it: every
//! path is a validated `MemoryPath`, no component may be a symlink (checked with `lstat` before
//! each access), writes are atomic (temp file in the same dir, fsync, rename), and a new file
//! never replaces one that appeared meanwhile.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use memsync_core::{MemoryPath, Sha256};

#[derive(Debug, thiserror::Error)]
pub enum FsError {
    #[error(
        "the team dir {0} is a symlink; memsync refuses to follow it (point --team-dir / MEMSYNC_TEAM_DIR at the real directory)"
    )]
    TeamDirSymlink(PathBuf),
    #[error("the team dir {0} is not a directory (point --team-dir / MEMSYNC_TEAM_DIR at one)")]
    TeamDirNotADir(PathBuf),
    #[error(
        "{0} is a file, but a synced path needs a directory of that name; memsync never turns one into the other"
    )]
    NotADir(PathBuf),
    #[error(
        "{0} is a directory, but a synced path needs a file of that name; memsync never turns one into the other"
    )]
    IsADir(PathBuf),
    #[error("{path} passes through a symlink ({link}); refused")]
    Symlink { path: String, link: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> FsError + '_ {
    move |source| FsError::Io {
        path: path.to_owned(),
        source,
    }
}

/// A file found in the team dir.
#[derive(Debug, Clone)]
pub struct LocalFile {
    pub sha256: Sha256,
    /// The bytes read; None when the file was known by its [`Stamp`] and not read.
    pub content: Option<Vec<u8>>,
    /// What the file looked like when the scan found it (None where the platform has no such
    /// metadata).
    pub stamp: Option<Stamp>,
}

impl LocalFile {
    /// The bytes of a file [`TeamDir::scan`] found: that scan reads every file. (A file
    /// [`TeamDir::scan_known`] knew by its stamp was not read: it gives no bytes here; see
    /// [`LocalFile::bytes`].)
    pub fn read_bytes(&self) -> &[u8] {
        self.content.as_deref().unwrap_or_default()
    }

    /// The bytes of the file found at `path` in `team`: those the scan read, else read now,
    /// through [`TeamDir::read`] and its symlink checks (None when it is gone since).
    pub fn bytes(
        &self,
        team: &TeamDir,
        path: &str,
    ) -> Result<Option<std::borrow::Cow<'_, [u8]>>, FsError> {
        if let Some(b) = &self.content {
            return Ok(Some(std::borrow::Cow::Borrowed(b)));
        }
        // A scan keeps only paths that parse.
        let Ok(p) = MemoryPath::parse(path) else {
            return Ok(None);
        };
        Ok(team.read(&p)?.map(std::borrow::Cow::Owned))
    }
}

/// What tells, without reading it, that a file still holds the bytes it held: its size, inode,
/// and modification and status-change times in nanoseconds. The status-change time moves with
/// every write and no tool can set it back, so a file written again since has another stamp,
/// unless it was written in the same clock tick as the stamp was taken: only [`settled`]
/// stamps are kept for that reason (the way git treats "racily clean" index entries).
///
/// [`settled`]: Stamp::settled
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stamp {
    pub len: u64,
    pub ino: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
}

/// How long a file must have been left alone before its stamp is trusted: far longer than any
/// file system's timestamp granularity (ext4 and APFS: nanoseconds, but taken from a clock that
/// ticks every few milliseconds; FAT: 2 s).
const SETTLE_NS: i64 = 3_000_000_000;

impl Stamp {
    #[cfg(unix)]
    fn of(meta: &std::fs::Metadata) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
        Some(Stamp {
            len: meta.len(),
            ino: meta.ino(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        })
    }

    #[cfg(not(unix))]
    fn of(_meta: &std::fs::Metadata) -> Option<Stamp> {
        None
    }

    /// Whether the file had been left alone for a while at `now_ns` (nanoseconds since the
    /// epoch, read before the stamp was taken): any later write then gives it another stamp.
    pub fn settled(&self, now_ns: i64) -> bool {
        self.mtime_ns.max(self.ctime_ns).saturating_add(SETTLE_NS) < now_ns
    }
}

/// Now, in nanoseconds since the epoch (for [`Stamp::settled`]).
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// What a scan of the team dir found.
#[derive(Debug, Default)]
pub struct Scan {
    pub files: BTreeMap<String, LocalFile>,
    /// Entries that are not synced, with why (symlinks, invalid names, …).
    pub skipped: Vec<(String, String)>,
}

/// What a conditional write found.
#[derive(Debug, PartialEq, Eq)]
pub enum Written {
    Done,
    /// The file on disk is not what the caller expected (edited or created meanwhile): untouched.
    Changed,
}

pub struct TeamDir {
    root: PathBuf,
    /// Dirs whose entries changed since the last `flush` (their fsync is batched).
    dirty: std::cell::RefCell<std::collections::BTreeSet<PathBuf>>,
}

impl FsError {
    /// A file and a directory of one name: a problem with one path, not with the team dir.
    pub fn is_layout_clash(&self) -> bool {
        matches!(self, FsError::NotADir(_) | FsError::IsADir(_))
    }
}

/// Puts the temp file `tmp` at `target` unless a file of that name exists (then
/// `AlreadyExists`, and `tmp` stays for the caller to remove); once placed, `tmp` is gone. On
/// Linux one `renameat2(RENAME_NOREPLACE)`; where the file system does not support it, and
/// elsewhere, a hard link (which fails the same way) and the removal of the temp name.
fn place_new(tmp: &Path, target: &Path) -> std::io::Result<()> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use nix::errno::Errno;
        use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
        match renameat2(
            AT_FDCWD,
            tmp,
            AT_FDCWD,
            target,
            RenameFlags::RENAME_NOREPLACE,
        ) {
            Ok(()) => return Ok(()),
            Err(Errno::EINVAL | Errno::ENOSYS | Errno::EOPNOTSUPP) => {}
            Err(e) => return Err(std::io::Error::from(e)),
        }
    }
    std::fs::hard_link(tmp, target)?;
    let _ = std::fs::remove_file(tmp);
    Ok(())
}

impl TeamDir {
    /// Opens the team dir, creating it if missing. A team dir that is a symlink is refused.
    pub fn open(root: &Path) -> Result<TeamDir, FsError> {
        match std::fs::symlink_metadata(root) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(FsError::TeamDirSymlink(root.to_owned()));
            }
            Ok(m) if !m.is_dir() => return Err(FsError::TeamDirNotADir(root.to_owned())),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(root).map_err(io(root))?;
            }
            Err(e) => return Err(io(root)(e)),
        }
        Ok(TeamDir {
            root: root.to_owned(),
            dirty: Default::default(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The absolute path of `path`, after checking that no existing component under the team
    /// dir is a symlink.
    fn checked(&self, path: &MemoryPath) -> Result<PathBuf, FsError> {
        self.walk_to(path, false)
    }

    /// Walks `path` from the team dir with `lstat`, refusing any symlink on the way. With
    /// `create_parents`, missing parent dirs are created (each checked the same way); without,
    /// the walk stops at the first missing component.
    fn walk_to(&self, path: &MemoryPath, create_parents: bool) -> Result<PathBuf, FsError> {
        let mut cur = self.root.clone();
        let segs: Vec<&str> = path.as_str().split('/').collect();
        for (i, seg) in segs.iter().enumerate() {
            let is_parent = i + 1 < segs.len();
            cur.push(seg);
            match std::fs::symlink_metadata(&cur) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(FsError::Symlink {
                        path: path.to_string(),
                        link: cur,
                    });
                }
                Ok(m) if is_parent && !m.is_dir() => return Err(FsError::NotADir(cur)),
                Ok(m) if !is_parent && m.is_dir() => return Err(FsError::IsADir(cur)),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if !(create_parents && is_parent) {
                        break;
                    }
                    std::fs::create_dir(&cur).map_err(io(&cur))?;
                }
                Err(e) => return Err(io(&cur)(e)),
            }
        }
        Ok(self.root.join(path.as_str()))
    }

    /// The file's bytes, or None when it does not exist.
    pub fn read(&self, path: &MemoryPath) -> Result<Option<Vec<u8>>, FsError> {
        let p = self.checked(path)?;
        match std::fs::read(&p) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(&p)(e)),
        }
    }

    pub fn sha(&self, path: &MemoryPath) -> Result<Option<Sha256>, FsError> {
        Ok(self.read(path)?.map(|b| Sha256::of(&b)))
    }

    /// Writes `content` at `path` if the file on disk still has hash `expect` (None: does not
    /// exist). A file that appeared or changed meanwhile is left alone.
    pub fn write(
        &self,
        path: &MemoryPath,
        content: &[u8],
        expect: Option<Sha256>,
    ) -> Result<Written, FsError> {
        self.write_batch(&[(path, content, expect)])
            .pop()
            .unwrap_or(Ok(Written::Changed))
    }

    /// Writes many files: every temp file first, one flush of their data to disk, then each is
    /// renamed into place if the disk still holds what the caller saw.
    pub fn write_batch(
        &self,
        items: &[(&MemoryPath, &[u8], Option<Sha256>)],
    ) -> Vec<Result<Written, FsError>> {
        let mut temps: Vec<Result<(PathBuf, PathBuf), FsError>> = Vec::with_capacity(items.len());
        for (path, content, _) in items {
            temps.push(self.stage(path, content, items.len() <= 4));
        }
        if items.len() > 4 {
            // One syncfs flushes every staged file; fall back to one fsync each.
            let synced = File::open(&self.root)
                .ok()
                .is_some_and(|d| nix::unistd::syncfs(&d).is_ok());
            if !synced {
                for (tmp, _) in temps.iter().flatten() {
                    let _ = File::open(tmp).and_then(|f| f.sync_all());
                }
            }
        }
        items
            .iter()
            .zip(temps)
            .map(|((path, _, expect), staged)| {
                let (tmp, target) = staged?;
                let outcome = self.place(path, &tmp, &target, *expect);
                // A placed temp file is gone already (renamed, or linked and removed).
                if !matches!(outcome, Ok(Written::Done)) {
                    let _ = std::fs::remove_file(&tmp);
                }
                outcome
            })
            .collect()
    }

    /// Writes `content` to a temp file beside `path`'s target.
    fn stage(
        &self,
        path: &MemoryPath,
        content: &[u8],
        fsync: bool,
    ) -> Result<(PathBuf, PathBuf), FsError> {
        let target = self.walk_to(path, true)?;
        let dir = target.parent().unwrap_or(&self.root).to_owned();
        let tmp = dir.join(format!(".memsync-tmp-{}", uuid::Uuid::new_v4().simple()));
        let write_tmp = || -> std::io::Result<()> {
            let mut f = File::options().write(true).create_new(true).open(&tmp)?;
            f.write_all(content)?;
            if fsync {
                f.sync_all()?;
            }
            Ok(())
        };
        match write_tmp() {
            Ok(()) => Ok((tmp, target)),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(io(&tmp)(e))
            }
        }
    }

    fn place(
        &self,
        path: &MemoryPath,
        tmp: &Path,
        target: &Path,
        expect: Option<Sha256>,
    ) -> Result<Written, FsError> {
        // Checked again: a symlink planted since staging is refused too.
        self.checked(path)?;
        let outcome = match expect {
            // Placed only if the name is free: a file created meanwhile is never replaced.
            None => match place_new(tmp, target) {
                Ok(()) => Written::Done,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Written::Changed,
                Err(e) => return Err(io(target)(e)),
            },
            Some(sha) => {
                // Re-check right before the rename: an edit made since the caller looked wins.
                if self.sha(path)? != Some(sha) {
                    Written::Changed
                } else {
                    std::fs::rename(tmp, target).map_err(io(target))?;
                    Written::Done
                }
            }
        };
        if outcome == Written::Done
            && let Some(dir) = target.parent()
        {
            self.dirty.borrow_mut().insert(dir.to_owned());
        }
        Ok(outcome)
    }

    /// Deletes `path` if it still has hash `expect`. Empty parent dirs are removed too.
    pub fn remove(&self, path: &MemoryPath, expect: Sha256) -> Result<Written, FsError> {
        let target = self.checked(path)?;
        if self.sha(path)? != Some(expect) {
            return Ok(Written::Changed);
        }
        std::fs::remove_file(&target).map_err(io(&target))?;
        if let Some(parent) = target.parent() {
            self.dirty.borrow_mut().insert(parent.to_owned());
        }
        let mut dir = target.parent().map(Path::to_path_buf);
        while let Some(d) = dir {
            if d == self.root || std::fs::remove_dir(&d).is_err() {
                break;
            }
            dir = d.parent().map(Path::to_path_buf);
        }
        Ok(Written::Done)
    }

    /// Makes every rename and delete since the last flush durable (one fsync per dir). Callers
    /// flush before recording the files as synced, so a crash never leaves state that claims a
    /// file the disk lost.
    pub fn flush(&self) -> Result<(), FsError> {
        let dirs = std::mem::take(&mut *self.dirty.borrow_mut());
        for d in dirs {
            match File::open(&d).and_then(|f| f.sync_all()) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(&d)(e)),
            }
        }
        Ok(())
    }

    /// Removes temp files left by a memsync that was killed mid-write. Callers hold the state
    /// lock, so no other memsync is writing.
    pub fn clean_temp(&self) {
        fn walk(dir: &Path) {
            let Ok(rd) = std::fs::read_dir(dir) else {
                return;
            };
            for e in rd.flatten() {
                let Ok(ft) = e.file_type() else { continue };
                let name = e.file_name();
                if ft.is_dir() {
                    walk(&e.path());
                } else if ft.is_file() && name.to_string_lossy().starts_with(".memsync-tmp-") {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        walk(&self.root);
    }

    /// Every synced file under the team dir. Symlinks are never followed; hidden entries (and
    /// memsync's own temp files) and files that are not memories are skipped.
    pub fn scan(&self) -> Result<Scan, FsError> {
        self.scan_known(|_| None)
    }

    /// Like [`scan`](Self::scan), but a file whose stamp is the one `known` gives for its path
    /// is taken to hold the content with the hash given with it, and is not read (its
    /// `content` is None).
    pub fn scan_known(
        &self,
        known: impl Fn(&str) -> Option<(Stamp, Sha256)>,
    ) -> Result<Scan, FsError> {
        let mut scan = Scan::default();
        self.walk(&self.root.clone(), "", &known, &mut scan)?;
        Ok(scan)
    }

    fn walk(
        &self,
        dir: &Path,
        rel: &str,
        known: &dyn Fn(&str) -> Option<(Stamp, Sha256)>,
        scan: &mut Scan,
    ) -> Result<(), FsError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io(dir)(e)),
        };
        for entry in entries {
            let entry = entry.map_err(io(dir))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                scan.skipped.push((
                    format!("{rel}{}", name.to_string_lossy()),
                    "the name is not UTF-8".into(),
                ));
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            let rel_path = format!("{rel}{name}");
            let ft = entry.file_type().map_err(io(&entry.path()))?;
            if ft.is_symlink() {
                scan.skipped.push((
                    rel_path,
                    "a symlink; memsync never follows symlinks in the team dir".into(),
                ));
            } else if ft.is_dir() {
                self.walk(&entry.path(), &format!("{rel_path}/"), known, scan)?;
            } else if ft.is_file() {
                if !name.ends_with(".md") {
                    continue;
                }
                match MemoryPath::parse(&rel_path) {
                    Ok(_) => {
                        let path = entry.path();
                        // Stamped before it is read: a write after this gives another stamp.
                        let stamp = match entry.metadata() {
                            Ok(m) => Stamp::of(&m),
                            Err(e) => return Err(io(&path)(e)),
                        };
                        let found = match (stamp, known(&rel_path)) {
                            (Some(now), Some((then, sha256))) if now == then => LocalFile {
                                sha256,
                                content: None,
                                stamp,
                            },
                            _ => {
                                let content = std::fs::read(&path).map_err(io(&path))?;
                                LocalFile {
                                    sha256: Sha256::of(&content),
                                    content: Some(content),
                                    stamp,
                                }
                            }
                        };
                        scan.files.insert(rel_path, found);
                    }
                    Err(e) => scan.skipped.push((rel_path, e.to_string())),
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known_from(scan: &Scan) -> BTreeMap<String, (Stamp, Sha256)> {
        scan.files
            .iter()
            .map(|(p, f)| (p.clone(), (f.stamp.unwrap(), f.sha256)))
            .collect()
    }

    #[test]
    fn a_file_that_looks_as_it_did_is_not_read_and_any_write_makes_it_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let team = TeamDir::open(dir.path()).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("a.md"), "alpha one\n").unwrap();
        std::fs::write(dir.path().join("sub/b.md"), "beta\n").unwrap();
        let first = team.scan().unwrap();
        assert!(first.files.values().all(|f| f.content.is_some()));
        let known = known_from(&first);

        let again = team.scan_known(|p| known.get(p).copied()).unwrap();
        for (p, f) in &again.files {
            assert!(
                f.content.is_none(),
                "{p} was read although it looks the same"
            );
            assert_eq!(f.sha256, first.files[p].sha256);
        }

        // Same size, modification time set back: the status-change time still moved (after a
        // clock tick: stamps are only trusted once settled, see `settled_needs_a_quiet_file`).
        std::thread::sleep(std::time::Duration::from_millis(30));
        let a = dir.path().join("a.md");
        let mtime = std::fs::metadata(&a).unwrap().modified().unwrap();
        std::fs::write(&a, "alpha two\n").unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&a)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        assert_eq!(std::fs::metadata(&a).unwrap().modified().unwrap(), mtime);
        let after = team.scan_known(|p| known.get(p).copied()).unwrap();
        let f = &after.files["a.md"];
        assert_eq!(f.content.as_deref(), Some(&b"alpha two\n"[..]));
        assert_eq!(f.sha256, Sha256::of(b"alpha two\n"));
        assert!(after.files["sub/b.md"].content.is_none());

        // Replaced by another file (a new inode) of the same size and times: read.
        let b = dir.path().join("sub/b.md");
        let meta = std::fs::metadata(&b).unwrap();
        std::fs::write(dir.path().join("sub/.new"), "BETA\n").unwrap();
        std::fs::rename(dir.path().join("sub/.new"), &b).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&b)
            .unwrap()
            .set_modified(meta.modified().unwrap())
            .unwrap();
        let after = team.scan_known(|p| known.get(p).copied()).unwrap();
        assert_eq!(
            after.files["sub/b.md"].content.as_deref(),
            Some(&b"BETA\n"[..])
        );
        assert_eq!(after.files["sub/b.md"].read_bytes(), b"BETA\n");
    }

    #[test]
    fn a_write_never_replaces_a_file_it_did_not_expect_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let team = TeamDir::open(dir.path()).unwrap();
        let p = |s: &str| MemoryPath::parse(s).unwrap();
        std::fs::write(dir.path().join("there.md"), "mine\n").unwrap();
        let mut items: Vec<(MemoryPath, Vec<u8>, Option<Sha256>)> = vec![
            // A new file where one appeared meanwhile: left alone.
            (p("there.md"), b"theirs\n".to_vec(), None),
            // A replacement of content the disk no longer holds: left alone.
            (
                p("there.md"),
                b"theirs\n".to_vec(),
                Some(Sha256::of(b"old\n")),
            ),
        ];
        // Enough new files for the batch path (one flush for all).
        for i in 0..6 {
            items.push((
                p(&format!("sub/new{i}.md")),
                format!("new {i}\n").into_bytes(),
                None,
            ));
        }
        let refs: Vec<(&MemoryPath, &[u8], Option<Sha256>)> = items
            .iter()
            .map(|(a, b, c)| (a, b.as_slice(), *c))
            .collect();
        let out: Vec<Written> = team
            .write_batch(&refs)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(out[..2], [Written::Changed, Written::Changed]);
        assert!(out[2..].iter().all(|w| *w == Written::Done), "{out:?}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("there.md")).unwrap(),
            "mine\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("sub/new3.md")).unwrap(),
            "new 3\n"
        );
        // Replacing what the disk holds works, and nothing of the temp files is left.
        let w = team
            .write(&p("there.md"), b"theirs\n", Some(Sha256::of(b"mine\n")))
            .unwrap();
        assert_eq!(w, Written::Done);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("there.md")).unwrap(),
            "theirs\n"
        );
        for d in [dir.path().to_owned(), dir.path().join("sub")] {
            let names: Vec<String> = std::fs::read_dir(&d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with('.'))
                .collect();
            assert!(names.is_empty(), "left in {}: {names:?}", d.display());
        }
    }

    #[test]
    fn settled_needs_a_quiet_file() {
        let s = Stamp {
            len: 1,
            ino: 1,
            mtime_ns: 10_000_000_000,
            ctime_ns: 20_000_000_000,
        };
        // Judged by the later of the two times, with a margin of SETTLE_NS.
        assert!(!s.settled(20_000_000_000));
        assert!(!s.settled(20_000_000_000 + SETTLE_NS));
        assert!(s.settled(20_000_000_001 + SETTLE_NS));
        let future = Stamp {
            mtime_ns: i64::MAX,
            ..s
        };
        assert!(!future.settled(i64::MAX), "no overflow into the past");
        // A file written just now is never settled.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x.md"), "x").unwrap();
        let now = now_ns();
        let stamp = Stamp::of(&std::fs::metadata(dir.path().join("x.md")).unwrap()).unwrap();
        assert!(!stamp.settled(now));
    }
}
