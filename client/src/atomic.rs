//! The one way memsync replaces a file outside the team dir (`.memsync.toml`, the credentials,
//! the sync state, Claude Code's `settings.json`): a temp file in the same directory, fsync,
//! rename, fsync of the directory. Readers see the old file or the new one, never a mix, and a
//! crash leaves at most a temp file (`.<name>.tmp-<uuid>`) that the next run removes.
//!
//! The team dir has its own writer (`fsops`): it must also refuse symlinks and never replace a
//! file that changed since it was read, which these files don't need.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// How much a write must survive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Flushed to disk before the rename, and the rename flushed too: survives a power cut.
    Durable,
    /// Atomic but not flushed: for caches checked on every read, where a lost write only costs
    /// a little work (the base copies of a pull).
    Cache,
}

/// Marks a temp file of [`write`]; [`is_temp_name`] recognises it.
const TEMP_MARK: &str = ".tmp-";

/// Replaces `path` with `contents`. The mode is `mode`, else the replaced file's, else the umask
/// default. Missing parent directories are created.
pub fn write(
    path: &Path,
    contents: &[u8],
    mode: Option<u32>,
    durability: Durability,
) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path has no file name"))?;
    let mode = match mode {
        Some(m) => Some(m),
        None => match fs::metadata(path) {
            Ok(meta) => Some(meta.permissions().mode() & 0o7777),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        },
    };
    fs::create_dir_all(dir)?;
    let tmp = temp_path(dir, name);
    let result = (|| {
        // Private from the start when a mode is asked for, so a token is never readable by
        // others, not even for a moment.
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if mode.is_some() { 0o600 } else { 0o666 })
            .open(&tmp)?;
        if let Some(mode) = mode {
            file.set_permissions(fs::Permissions::from_mode(mode))?;
        }
        file.write_all(contents)?;
        if durability == Durability::Durable {
            file.sync_all()?;
        }
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result?;
    if durability == Durability::Durable {
        // Makes the rename durable; some file systems refuse fsync on a directory, which is
        // harmless.
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

fn temp_path(dir: &Path, name: &std::ffi::OsStr) -> PathBuf {
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(TEMP_MARK);
    tmp.push(uuid::Uuid::new_v4().simple().to_string());
    dir.join(tmp)
}

/// Whether `name` is a temp file [`write`] left behind (a run killed between create and
/// rename).
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.contains(TEMP_MARK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_keeps_mode_and_leaves_no_temp() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("sub/f.toml");
        write(&p, b"one", None, Durability::Durable).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"one");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        write(&p, b"two", None, Durability::Cache).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o640
        );
        write(&p, b"three", Some(0o600), Durability::Durable).unwrap();
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let names: Vec<String> = fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["f.toml"]);
    }

    #[test]
    fn temp_names_are_recognised() {
        let t = temp_path(Path::new("/d"), "state.json".as_ref());
        let name = t.file_name().unwrap().to_str().unwrap();
        assert!(is_temp_name(name), "{name}");
        assert!(!is_temp_name("state.json"));
        assert!(!is_temp_name(".hidden"));
    }

    #[test]
    fn a_failed_write_leaves_the_old_file() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f");
        write(&p, b"old", None, Durability::Durable).unwrap();
        // The target is now a non-empty directory: the rename fails.
        let d = tmp.path().join("d");
        fs::create_dir_all(d.join("x")).unwrap();
        assert!(write(&d, b"new", None, Durability::Durable).is_err());
        assert_eq!(fs::read(&p).unwrap(), b"old");
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 2);
    }
}
