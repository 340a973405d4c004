//! What a PATH on the command line means, the same in every command.
//!
//! Commands about team memories (`diff`, `resolve`, `admin history|show|diff|rm|restore|purge`,
//! `admin audit --path`) turn the argument into a path relative to the team dir:
//!
//! 1. an absolute path must lie inside the team dir;
//! 2. a relative path, run from inside the team dir, is relative to the current directory (as
//!    git does in a work tree);
//! 3. a relative path, run from outside the team dir, is relative to the current directory when
//!    that names an existing file or directory inside the team dir, and relative to the team dir
//!    otherwise.
//!
//! `scan` is a general guard and reads any file: a path that exists (absolute, or relative to
//! the current directory) is scanned wherever it is; otherwise a relative path is looked up in
//! the team dir.
//!
//! "Inside" is decided on the lexical path and, when that fails, on the path with symlinked
//! ancestors resolved, so `/tmp/…` and its real `/private/tmp/…` are the same place.

use std::path::{Component, Path, PathBuf};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathArgError {
    #[error("{arg}: not inside the team dir {}; give a path inside it, or relative to it", team_dir.display())]
    Outside { arg: String, team_dir: PathBuf },
    #[error("{arg}: the path is not UTF-8")]
    NotUtf8 { arg: String },
}

/// The argument as a path relative to the team dir, `/`-separated; empty for the team dir
/// itself. The caller validates it further (e.g. as a `MemoryPath`).
pub fn team_relative(arg: &Path, cwd: &Path, team_dir: &Path) -> Result<String, PathArgError> {
    let shown = arg.display().to_string();
    let outside = || PathArgError::Outside {
        arg: shown.clone(),
        team_dir: team_dir.to_owned(),
    };
    let rel = if arg.is_absolute() {
        inside(arg, team_dir).ok_or_else(outside)?
    } else {
        let from_cwd = cwd.join(arg);
        if inside(cwd, team_dir).is_some() {
            inside(&from_cwd, team_dir).ok_or_else(outside)?
        } else {
            match inside(&from_cwd, team_dir) {
                Some(rel) if std::fs::symlink_metadata(&from_cwd).is_ok() => rel,
                _ => {
                    let rel = normalize(arg);
                    if rel.starts_with("..") {
                        return Err(outside());
                    }
                    rel
                }
            }
        }
    };
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    parts
        .map(|p| p.join("/"))
        .ok_or(PathArgError::NotUtf8 { arg: shown })
}

/// The file `scan` reads for the argument: as given when it exists, else in the team dir when
/// it exists there, else as given (and the scan reports it missing).
pub fn scan_target(arg: &Path, cwd: &Path, team_dir: Option<&Path>) -> PathBuf {
    let given = cwd.join(arg);
    if arg.is_absolute() || std::fs::symlink_metadata(&given).is_ok() {
        return arg.to_owned();
    }
    if let Some(team) = team_dir {
        let rel = normalize(arg);
        let in_team = team.join(&rel);
        if !rel.starts_with("..") && std::fs::symlink_metadata(&in_team).is_ok() {
            return in_team;
        }
    }
    arg.to_owned()
}

/// `path` relative to `dir`, if it lies inside it (or is it).
fn inside(path: &Path, dir: &Path) -> Option<PathBuf> {
    let (path, dir) = (normalize(path), normalize(dir));
    if let Ok(rest) = path.strip_prefix(&dir) {
        return Some(rest.to_owned());
    }
    real_path(&path)
        .strip_prefix(real_path(&dir))
        .ok()
        .map(Path::to_owned)
}

/// Removes `.` and resolves `..` lexically (a leading `..` of a relative path stays).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() && !path.is_absolute() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// The path with its longest existing prefix resolved through symlinks.
fn real_path(path: &Path) -> PathBuf {
    for ancestor in path.ancestors() {
        if let Ok(real) = std::fs::canonicalize(ancestor) {
            return match path.strip_prefix(ancestor) {
                Ok(rest) if !rest.as_os_str().is_empty() => real.join(rest),
                _ => real,
            };
        }
    }
    path.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    struct Layout {
        _tmp: tempfile::TempDir,
        repo: PathBuf,
        team: PathBuf,
    }

    fn layout() -> Layout {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        let repo = base.join("repo");
        let team = base.join("home/memory/team");
        fs::create_dir_all(repo.join("docs")).unwrap();
        fs::create_dir_all(team.join("sub")).unwrap();
        fs::write(team.join("notes.md"), "x").unwrap();
        fs::write(team.join("sub/deep.md"), "x").unwrap();
        fs::write(repo.join("notes.md"), "repo's own").unwrap();
        Layout {
            _tmp: tmp,
            repo,
            team,
        }
    }

    fn rel(arg: &str, cwd: &Path, team: &Path) -> Result<String, PathArgError> {
        team_relative(Path::new(arg), cwd, team)
    }

    #[test]
    fn from_outside_the_team_dir_paths_are_team_relative() {
        let l = layout();
        // Exists in the repo too, but outside the team dir: the team's file is meant.
        assert_eq!(rel("notes.md", &l.repo, &l.team).unwrap(), "notes.md");
        assert_eq!(
            rel("./sub/deep.md", &l.repo, &l.team).unwrap(),
            "sub/deep.md"
        );
        // Deleted or never existing files are still named relative to the team dir.
        assert_eq!(rel("gone.md", &l.repo, &l.team).unwrap(), "gone.md");
        assert_eq!(rel("sub/x/../y.md", &l.repo, &l.team).unwrap(), "sub/y.md");
        assert!(matches!(
            rel("../escape.md", &l.repo, &l.team),
            Err(PathArgError::Outside { .. })
        ));
    }

    #[test]
    fn cwd_relative_paths_that_reach_into_the_team_dir_count() {
        let l = layout();
        let private = l.team.parent().unwrap();
        assert_eq!(rel("team/notes.md", private, &l.team).unwrap(), "notes.md");
        // Not existing relative to cwd: relative to the team dir.
        assert_eq!(
            rel("team/gone.md", private, &l.team).unwrap(),
            "team/gone.md"
        );
    }

    #[test]
    fn inside_the_team_dir_paths_are_cwd_relative() {
        let l = layout();
        let sub = l.team.join("sub");
        assert_eq!(rel("deep.md", &sub, &l.team).unwrap(), "sub/deep.md");
        assert_eq!(rel("gone.md", &sub, &l.team).unwrap(), "sub/gone.md");
        assert_eq!(rel("../notes.md", &sub, &l.team).unwrap(), "notes.md");
        assert_eq!(rel(".", &l.team, &l.team).unwrap(), "");
        assert!(matches!(
            rel("../../x.md", &sub, &l.team),
            Err(PathArgError::Outside { .. })
        ));
    }

    #[test]
    fn absolute_paths_must_be_inside() {
        let l = layout();
        let abs = l.team.join("sub/deep.md");
        assert_eq!(
            rel(abs.to_str().unwrap(), &l.repo, &l.team).unwrap(),
            "sub/deep.md"
        );
        let err = rel(l.repo.join("notes.md").to_str().unwrap(), &l.repo, &l.team).unwrap_err();
        assert!(err.to_string().contains("not inside the team dir"), "{err}");
        // Through a symlinked ancestor.
        let link = l.repo.join("link-to-home");
        std::os::unix::fs::symlink(l.team.parent().unwrap(), &link).unwrap();
        assert_eq!(
            rel(
                link.join("team/notes.md").to_str().unwrap(),
                &l.repo,
                &l.team
            )
            .unwrap(),
            "notes.md"
        );
    }

    #[test]
    fn scan_reads_any_existing_file_then_the_team_dir() {
        let l = layout();
        assert_eq!(
            scan_target(Path::new("notes.md"), &l.repo, Some(&l.team)),
            Path::new("notes.md")
        );
        assert_eq!(
            scan_target(Path::new("sub/deep.md"), &l.repo, Some(&l.team)),
            l.team.join("sub/deep.md")
        );
        assert_eq!(
            scan_target(Path::new("nope.md"), &l.repo, Some(&l.team)),
            Path::new("nope.md")
        );
        assert_eq!(
            scan_target(Path::new("../../etc"), &l.repo, Some(&l.team)),
            Path::new("../../etc")
        );
    }
}
