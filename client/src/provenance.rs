//! Where a push comes from (`PushRequest::provenance`): this client's version, the agent session
//! that wrote the memories, and the repository's `HEAD` commit and branch at push time, read from
//! the git directory without running `git`. Every field is optional: one that is unknown, or that
//! the server would refuse, is left out, so provenance never stops a push.

use std::fs;

use memsync_core::policy::{self, Limits};
use memsync_core::wire::{Provenance, PushRequest};

use crate::config::Repo;

/// `memsync/<version>`.
pub const CLIENT_VERSION: &str = concat!("memsync/", env!("CARGO_PKG_VERSION"));

/// The environment variable that names the agent session when `--session-id` is not given.
pub const ENV_SESSION_ID: &str = "MEMSYNC_SESSION_ID";

/// The provenance of a push made now from `repo` (None: not in a repository) by `session_id`.
pub fn for_push(repo: Option<&Repo>, session_id: Option<&str>) -> Provenance {
    let (head, branch) = repo.map(head_and_branch).unwrap_or_default();
    let p = Provenance {
        client_version: Some(CLIENT_VERSION.to_owned()),
        session_id: session_id.map(str::to_owned),
        head,
        branch,
    };
    accepted_fields(p)
}

/// `p` without the fields the server's rules (memsync_core::policy) would refuse: each field is
/// checked alone, the way the server checks a push's provenance.
pub fn accepted_fields(p: Provenance) -> Provenance {
    let ok = |one: Provenance| {
        let req = PushRequest {
            changes: Vec::new(),
            allow_mass_delete: false,
            allow_purged: false,
            provenance: Some(one),
        };
        let limits = Limits {
            max_file_bytes: 0,
            max_changes_per_push: 0,
        };
        policy::check_batch(&req, limits).is_ok()
    };
    let keep = |v: Option<String>, set: fn(&mut Provenance, Option<String>)| {
        let mut one = Provenance::default();
        set(&mut one, v.clone());
        v.filter(|_| ok(one))
    };
    Provenance {
        client_version: keep(p.client_version, |x, v| x.client_version = v),
        session_id: keep(p.session_id, |x, v| x.session_id = v),
        head: keep(p.head, |x, v| x.head = v),
        branch: keep(p.branch, |x, v| x.branch = v),
    }
}

/// The commit `HEAD` points at (None on an unborn branch) and the checked-out branch (None when
/// detached).
pub fn head_and_branch(repo: &Repo) -> (Option<String>, Option<String>) {
    let Ok(text) = fs::read_to_string(repo.git_dir.join("HEAD")) else {
        return (None, None);
    };
    let text = text.trim();
    match text.strip_prefix("ref:") {
        Some(name) => {
            let name = name.trim();
            let branch = name
                .strip_prefix("refs/heads/")
                .filter(|b| !b.is_empty())
                .map(str::to_owned);
            (resolve(repo, name, 0), branch)
        }
        None => (is_commit_id(text).then(|| text.to_owned()), None),
    }
}

/// The commit a ref names: a loose ref (in this worktree's git dir, then the common one), a
/// symbolic ref followed a few steps, or a line of `packed-refs`.
fn resolve(repo: &Repo, name: &str, depth: u8) -> Option<String> {
    let safe = name.starts_with("refs/")
        && name
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..");
    if !safe || depth > 4 {
        return None;
    }
    for dir in [&repo.git_dir, &repo.common_dir] {
        if let Ok(text) = fs::read_to_string(dir.join(name)) {
            let text = text.trim();
            return match text.strip_prefix("ref:") {
                Some(next) => resolve(repo, next.trim(), depth + 1),
                None => is_commit_id(text).then(|| text.to_owned()),
            };
        }
    }
    let packed = fs::read_to_string(repo.common_dir.join("packed-refs")).ok()?;
    packed
        .lines()
        .filter(|l| !l.starts_with(['#', '^']))
        .find_map(|l| {
            let (id, r) = l.split_once(' ')?;
            (r.trim() == name && is_commit_id(id)).then(|| id.to_owned())
        })
}

/// A full commit id: 40 (SHA-1) or 64 (SHA-256) hex digits.
fn is_commit_id(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn repo_at(dir: &Path) -> Repo {
        Repo {
            root: dir.to_owned(),
            main_root: dir.to_owned(),
            git_dir: dir.join(".git"),
            common_dir: dir.join(".git"),
        }
    }

    const A: &str = "0123456789abcdef0123456789abcdef01234567";
    const B: &str = "89abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn head_and_branch_from_loose_packed_and_detached_heads() {
        let tmp = tempfile::tempdir().unwrap();
        let git = tmp.path().join(".git");
        fs::create_dir_all(git.join("refs/heads/feature")).unwrap();
        let repo = repo_at(tmp.path());
        // Unborn: a branch, no commit.
        fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(head_and_branch(&repo), (None, Some("main".into())));
        // Loose ref.
        fs::write(git.join("refs/heads/main"), format!("{A}\n")).unwrap();
        assert_eq!(
            head_and_branch(&repo),
            (Some(A.into()), Some("main".into()))
        );
        // Packed ref, branch name with a slash.
        fs::write(
            git.join("packed-refs"),
            format!(
                "# pack-refs with: peeled fully-peeled sorted\n{B} refs/heads/feature/x\n^{A}\n"
            ),
        )
        .unwrap();
        fs::write(git.join("HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        assert_eq!(
            head_and_branch(&repo),
            (Some(B.into()), Some("feature/x".into()))
        );
        // Detached.
        fs::write(git.join("HEAD"), format!("{A}\n")).unwrap();
        assert_eq!(head_and_branch(&repo), (Some(A.into()), None));
        // Garbage, or a ref that climbs out of the git dir: nothing.
        fs::write(git.join("HEAD"), "ref: refs/../../../etc/passwd\n").unwrap();
        assert_eq!(head_and_branch(&repo).0, None);
        fs::write(git.join("HEAD"), "nonsense").unwrap();
        assert_eq!(head_and_branch(&repo), (None, None));
    }

    #[test]
    fn a_linked_worktree_reads_its_own_head_and_the_shared_refs() {
        let tmp = tempfile::tempdir().unwrap();
        let common = tmp.path().join("main/.git");
        let wt_git = common.join("worktrees/wt");
        fs::create_dir_all(common.join("refs/heads")).unwrap();
        fs::create_dir_all(&wt_git).unwrap();
        fs::write(common.join("refs/heads/topic"), format!("{B}\n")).unwrap();
        fs::write(wt_git.join("HEAD"), "ref: refs/heads/topic\n").unwrap();
        let repo = Repo {
            root: tmp.path().join("wt"),
            main_root: tmp.path().join("main"),
            git_dir: wt_git,
            common_dir: common,
        };
        assert_eq!(
            head_and_branch(&repo),
            (Some(B.into()), Some("topic".into()))
        );
    }

    #[test]
    fn fields_the_server_would_refuse_are_left_out() {
        let p = accepted_fields(Provenance {
            client_version: Some(CLIENT_VERSION.into()),
            session_id: Some("x".repeat(201)),
            head: Some("not-hex".into()),
            branch: Some("main\u{7}".into()),
        });
        assert_eq!(
            p,
            Provenance {
                client_version: Some(CLIENT_VERSION.into()),
                ..Provenance::default()
            }
        );
        let p = accepted_fields(Provenance {
            client_version: None,
            session_id: Some("0b6c2f0e-8d7e-4a8b-9f1e-2b7c1d3e4f50".into()),
            head: Some(A.into()),
            branch: Some("feature/x".into()),
        });
        assert_eq!(p.head.as_deref(), Some(A));
        assert_eq!(p.branch.as_deref(), Some("feature/x"));
        assert!(p.session_id.is_some());
    }
}
