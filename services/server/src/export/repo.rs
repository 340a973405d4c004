//! The git side of the export: one bare repository per project, one commit per revision. All of
//! it blocks (git2, the file system), so callers run it in `spawn_blocking`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};
use git2::{
    Commit, ErrorCode, FileMode, ObjectType, Oid, Repository, RepositoryInitOptions, Signature,
    Time, Tree,
};
use memsync_core::{MemoryPath, ProjectId};

/// The one branch of every export.
pub const BRANCH: &str = "refs/heads/main";
pub const REVISION_TRAILER: &str = "Memsync-Revision";
pub const PROJECT_TRAILER: &str = "Memsync-Project";
const COMMITTER_NAME: &str = "memsync";
const COMMITTER_EMAIL: &str = "memsync@localhost";
/// Changes named in a commit's subject line; the body lists the rest.
const SUBJECT_CHANGES: usize = 5;

/// One revision, as the export needs it.
#[derive(Debug)]
pub struct Revision {
    pub revision: i64,
    pub author_sub: String,
    pub author_name: String,
    pub author_email: Option<String>,
    pub at: DateTime<Utc>,
    pub changes: Vec<Change>,
}

#[derive(Debug)]
pub struct Change {
    pub path: String,
    pub content: Content,
}

#[derive(Debug)]
pub enum Content {
    Text(String),
    /// A tombstone: the path is gone from the tree.
    Deleted,
    /// A version whose content was purged: the path never appears in any commit.
    Purged,
}

/// `<root>/<team>/<name>.git`. Both segments are validated project-name segments (they start
/// with a letter or digit), so the path stays under `root` and never collides with the
/// dot-prefixed scratch directories of a rebuild.
pub fn path(root: &Path, project: &ProjectId) -> PathBuf {
    root.join(project.team())
        .join(format!("{}.git", project.name()))
}

/// Where a rebuild writes the new repository, and where the old one goes while they swap.
fn scratch_paths(root: &Path, project: &ProjectId) -> (PathBuf, PathBuf) {
    let dir = root.join(project.team());
    (
        dir.join(format!(".{}.git.new", project.name())),
        dir.join(format!(".{}.git.old", project.name())),
    )
}

fn init(path: &Path) -> anyhow::Result<Repository> {
    let mut opts = RepositoryInitOptions::new();
    // No template: nothing but what the export writes (no sample hooks, no description).
    opts.bare(true)
        .mkpath(true)
        .external_template(false)
        .initial_head("main");
    Repository::init_opts(path, &opts)
        .with_context(|| format!("creating the repository {}", path.display()))
}

fn open(path: &Path) -> anyhow::Result<Option<Repository>> {
    match Repository::open_bare(path) {
        Ok(r) => Ok(Some(r)),
        Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("opening {}", path.display())),
    }
}

fn head_commit(repo: &Repository) -> anyhow::Result<Option<Commit<'_>>> {
    match repo.refname_to_id(BRANCH) {
        Ok(oid) => Ok(Some(repo.find_commit(oid)?)),
        Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The value of the last `key: value` trailer line of a commit message.
fn trailer<'m>(message: &'m str, key: &str) -> Option<&'m str> {
    message.lines().rev().find_map(|l| {
        l.strip_prefix(key)
            .and_then(|rest| rest.strip_prefix(':'))
            .map(str::trim)
    })
}

/// The revision of the repository's newest commit, from its `Memsync-Revision` trailer: the
/// export resumes from the repository itself, so a crash between writing a commit and recording
/// it in Postgres never skips or repeats one. 0 when there is no repository or no commit.
pub fn exported_revision(path: &Path, project: &ProjectId) -> anyhow::Result<i64> {
    let Some(repo) = open(path)? else {
        return Ok(0);
    };
    let Some(head) = head_commit(&repo)? else {
        return Ok(0);
    };
    commit_revision(&head, project)
}

fn commit_revision(commit: &Commit<'_>, project: &ProjectId) -> anyhow::Result<i64> {
    let message = String::from_utf8_lossy(commit.message_bytes());
    if trailer(&message, PROJECT_TRAILER) != Some(project.as_str()) {
        bail!(
            "commit {} is not an export of {project} (no `{PROJECT_TRAILER}: {project}` trailer); run `memsync-server export rebuild --project {project}`",
            commit.id()
        );
    }
    trailer(&message, REVISION_TRAILER)
        .and_then(|v| v.parse().ok())
        .with_context(|| {
            format!(
                "commit {} has no `{REVISION_TRAILER}` trailer; run `memsync-server export rebuild --project {project}`",
                commit.id()
            )
        })
}

/// Appends one commit per revision to the repository at `path` (created if missing). The
/// revisions must follow the repository's newest commit without a gap. Returns the new head
/// revision.
pub fn append(path: &Path, project: &ProjectId, revisions: &[Revision]) -> anyhow::Result<i64> {
    let repo = match open(path)? {
        Some(r) => r,
        None => init(path)?,
    };
    remove_stale_branch_lock(path)?;
    let mut parent = head_commit(&repo)?;
    let mut head = match &parent {
        Some(c) => commit_revision(c, project)?,
        None => 0,
    };
    for rev in revisions {
        if rev.revision != head + 1 {
            bail!(
                "{project}: the repository is at revision {head}, cannot append revision {}",
                rev.revision
            );
        }
        let oid = commit(&repo, project, parent.as_ref(), rev)?;
        parent = Some(repo.find_commit(oid)?);
        head = rev.revision;
    }
    Ok(head)
}

/// A process killed while moving the branch leaves its lock file, and git would refuse every
/// later update. The caller holds the export lock, and nothing but the exporter writes the
/// branch (maintenance only repacks objects), so a lock file found now is a dead writer's.
fn remove_stale_branch_lock(path: &Path) -> anyhow::Result<()> {
    let lock = path.join(format!("{BRANCH}.lock"));
    match std::fs::remove_file(&lock) {
        Ok(()) => {
            tracing::warn!(lock = %lock.display(), "removed a stale lock left by a crashed export");
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", lock.display())),
    }
}

fn commit(
    repo: &Repository,
    project: &ProjectId,
    parent: Option<&Commit<'_>>,
    rev: &Revision,
) -> anyhow::Result<Oid> {
    let base = parent.map(Commit::tree).transpose()?;
    let mut changed: Vec<(MemoryPath, Option<Oid>)> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    for change in &rev.changes {
        // Only team memory files ever enter a repository.
        let Ok(p) = MemoryPath::parse(&change.path) else {
            tracing::warn!(%project, revision = rev.revision, "skipping a stored path that is not a memory path");
            continue;
        };
        let existed = base
            .as_ref()
            .is_some_and(|t| t.get_path(Path::new(p.as_str())).is_ok());
        let (verb, blob) = match &change.content {
            Content::Text(text) => (
                if existed { "update" } else { "add" },
                Some(repo.blob(text.as_bytes())?),
            ),
            Content::Deleted => ("delete", None),
            Content::Purged => ("write (content purged)", None),
        };
        lines.push(format!("{verb} {p}"));
        changed.push((p, blob));
    }
    let edits: Vec<Edit<'_>> = changed
        .iter()
        .map(|(p, blob)| (p.as_str().split('/').collect(), *blob))
        .collect();
    let tree_id = match edit_tree(repo, base.as_ref(), &edits)? {
        Some(id) => id,
        None => repo.treebuilder(None)?.write()?,
    };
    let tree = repo.find_tree(tree_id)?;
    let time = Time::new(rev.at.timestamp(), 0);
    let author = author_signature(rev, &time)?;
    let committer = Signature::new(COMMITTER_NAME, COMMITTER_EMAIL, &time)?;
    let message = message(project, rev.revision, &lines);
    let parents: Vec<&Commit<'_>> = parent.into_iter().collect();
    // With `update_ref`, libgit2 refuses to move the branch unless it still points at `parent`.
    Ok(repo.commit(Some(BRANCH), &author, &committer, &message, &tree, &parents)?)
}

/// `memsync r12: update testing.md, delete old.md`, the full list in the body when the subject
/// cannot hold it, then the trailers.
fn message(project: &ProjectId, revision: i64, lines: &[String]) -> String {
    let mut subject = format!("memsync r{revision}: ");
    if lines.is_empty() {
        subject.push_str("no changes");
    } else {
        subject.push_str(&lines[..lines.len().min(SUBJECT_CHANGES)].join(", "));
        if lines.len() > SUBJECT_CHANGES {
            subject.push_str(&format!(" and {} more", lines.len() - SUBJECT_CHANGES));
        }
    }
    let mut m = subject;
    m.push_str("\n\n");
    if lines.len() > SUBJECT_CHANGES {
        for l in lines {
            m.push_str(l);
            m.push('\n');
        }
        m.push('\n');
    }
    m.push_str(&format!(
        "{REVISION_TRAILER}: {revision}\n{PROJECT_TRAILER}: {project}\n"
    ));
    m
}

/// Git refuses `<`, `>` and line breaks in names and emails.
fn clean(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '<' | '>') && !c.is_control())
        .collect::<String>()
        .trim()
        .to_owned()
}

fn author_signature(rev: &Revision, time: &Time) -> anyhow::Result<Signature<'static>> {
    let mut name = clean(&rev.author_name);
    if name.is_empty() {
        name = clean(&rev.author_sub);
    }
    if name.is_empty() {
        name = "unknown".into();
    }
    let email = rev
        .author_email
        .as_deref()
        .map(|e| clean(e).replace(char::is_whitespace, ""))
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| {
            let local: String = rev
                .author_sub
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+') {
                        c
                    } else {
                        '-'
                    }
                })
                .collect();
            let local = if local.is_empty() { "unknown" } else { &local };
            format!("{local}@memsync.invalid")
        });
    Ok(Signature::new(&name, &email, time)?)
}

type Edit<'p> = (Vec<&'p str>, Option<Oid>);

/// `base` with each path set to its blob (or removed for None). Directories left empty are
/// removed; None when the whole tree is empty.
fn edit_tree(
    repo: &Repository,
    base: Option<&Tree<'_>>,
    edits: &[Edit<'_>],
) -> Result<Option<Oid>, git2::Error> {
    let mut builder = repo.treebuilder(base)?;
    let mut subdirs: BTreeMap<&str, Vec<Edit<'_>>> = BTreeMap::new();
    for (segments, blob) in edits {
        match segments.as_slice() {
            [] => {}
            [file] => match blob {
                Some(oid) => {
                    builder.insert(*file, *oid, FileMode::Blob.into())?;
                }
                None => {
                    if builder.get(*file)?.is_some() {
                        builder.remove(*file)?;
                    }
                }
            },
            [dir, rest @ ..] => subdirs.entry(dir).or_default().push((rest.to_vec(), *blob)),
        }
    }
    for (dir, sub) in subdirs {
        let existing = match builder.get(dir)? {
            Some(e) if e.kind() == Some(ObjectType::Tree) => Some(e.id()),
            _ => None,
        };
        let existing = existing.map(|id| repo.find_tree(id)).transpose()?;
        match edit_tree(repo, existing.as_ref(), &sub)? {
            Some(id) => {
                builder.insert(dir, id, FileMode::Tree.into())?;
            }
            None => {
                if builder.get(dir)?.is_some() {
                    builder.remove(dir)?;
                }
            }
        }
    }
    if builder.is_empty() {
        Ok(None)
    } else {
        builder.write().map(Some)
    }
}

fn remove_dir_if_exists(p: &Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", p.display())),
    }
}

/// Starts a rebuild: an empty scratch directory (a crashed rebuild's leftovers are removed, since
/// they may hold purged content). Returns where to build.
pub fn begin_rebuild(root: &Path, project: &ProjectId) -> anyhow::Result<PathBuf> {
    let (new, old) = scratch_paths(root, project);
    remove_dir_if_exists(&new)?;
    remove_dir_if_exists(&old)?;
    Ok(new)
}

/// Puts the rebuilt repository in place of the old one (or removes the old one when the
/// project has no revision). Two renames: a clone in flight may fail, never see a mix.
pub fn finish_rebuild(root: &Path, project: &ProjectId, built: bool) -> anyhow::Result<()> {
    let (new, old) = scratch_paths(root, project);
    let live = path(root, project);
    if live.exists() {
        std::fs::rename(&live, &old).with_context(|| format!("moving {} aside", live.display()))?;
    }
    if built {
        std::fs::rename(&new, &live)
            .with_context(|| format!("moving the rebuilt repository to {}", live.display()))?;
    }
    remove_dir_if_exists(&old)
}

/// Every `<team>/<name>.git` under `root` that names a valid project.
pub fn list(root: &Path) -> Vec<ProjectId> {
    let mut out = Vec::new();
    let Ok(teams) = std::fs::read_dir(root) else {
        return out;
    };
    for team in teams.flatten() {
        let Ok(repos) = std::fs::read_dir(team.path()) else {
            continue;
        };
        let team = team.file_name().to_string_lossy().into_owned();
        for repo in repos.flatten() {
            let file = repo.file_name().to_string_lossy().into_owned();
            if let Some(name) = file.strip_suffix(".git")
                && let Ok(p) = ProjectId::new(&team, name)
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rev(revision: i64, author: &str, changes: Vec<(&str, Content)>) -> Revision {
        Revision {
            revision,
            author_sub: author.to_owned(),
            author_name: author.to_owned(),
            author_email: None,
            at: DateTime::from_timestamp(1_700_000_000 + revision, 0).expect("time"),
            changes: changes
                .into_iter()
                .map(|(p, content)| Change {
                    path: p.to_owned(),
                    content,
                })
                .collect(),
        }
    }

    fn files(repo: &Repository) -> Vec<String> {
        let head = repo
            .find_commit(repo.refname_to_id(BRANCH).expect("head"))
            .expect("commit");
        let mut out = Vec::new();
        head.tree()
            .expect("tree")
            .walk(git2::TreeWalkMode::PreOrder, |dir, e| {
                if e.kind() == Some(ObjectType::Blob) {
                    out.push(format!("{dir}{}", e.name().unwrap_or("")));
                }
                git2::TreeWalkResult::Ok
            })
            .expect("walk");
        out
    }

    #[test]
    fn commits_follow_revisions_and_resume_from_the_trailer() {
        let tmp = tempfile_dir();
        let project = ProjectId::new("acme", "api").expect("project");
        let p = path(&tmp, &project);
        assert_eq!(exported_revision(&p, &project).expect("none"), 0);
        let text = |s: &str| Content::Text(s.to_owned());
        let r1 = rev(
            1,
            "ann",
            vec![("a.md", text("a")), ("dir/sub/b.md", text("b"))],
        );
        assert_eq!(append(&p, &project, &[r1]).expect("append"), 1);
        // A crashed writer's lock file does not stop the next one.
        std::fs::write(p.join("refs/heads/main.lock"), "").expect("lock");
        let r2 = rev(
            2,
            "bob <x>",
            vec![
                ("dir/sub/b.md", Content::Deleted),
                ("leak.md", Content::Purged),
                ("../escape.md", text("x")),
            ],
        );
        assert_eq!(append(&p, &project, &[r2]).expect("append"), 2);
        assert_eq!(exported_revision(&p, &project).expect("head"), 2);
        // A gap or a repeat is refused.
        assert!(append(&p, &project, &[rev(2, "ann", vec![])]).is_err());
        assert!(append(&p, &project, &[rev(4, "ann", vec![])]).is_err());

        let repo = Repository::open_bare(&p).expect("open");
        assert_eq!(files(&repo), vec!["a.md".to_owned()]);
        let head = repo
            .find_commit(repo.refname_to_id(BRANCH).expect("head"))
            .expect("commit");
        assert_eq!(
            head.message().expect("utf8"),
            "memsync r2: delete dir/sub/b.md, write (content purged) leak.md\n\nMemsync-Revision: 2\nMemsync-Project: acme/api\n"
        );
        assert_eq!(head.author().name().ok(), Some("bob x"));
        assert_eq!(head.author().email().ok(), Some("bob--x-@memsync.invalid"));
        assert_eq!(head.committer().name().ok(), Some(COMMITTER_NAME));
        assert_eq!(head.time().seconds(), 1_700_000_002);
        let other = ProjectId::new("acme", "web").expect("project");
        assert!(exported_revision(&p, &other).is_err());
        let _ = std::fs::remove_dir_all(&tmp);
    }

    #[test]
    fn long_change_lists_go_to_the_body() {
        let project = ProjectId::new("acme", "api").expect("project");
        let lines: Vec<String> = (0..7).map(|i| format!("add m{i}.md")).collect();
        let m = message(&project, 9, &lines);
        assert!(m.starts_with(
            "memsync r9: add m0.md, add m1.md, add m2.md, add m3.md, add m4.md and 2 more\n\n"
        ));
        assert!(m.contains("\nadd m6.md\n"));
        assert!(m.ends_with("\n\nMemsync-Revision: 9\nMemsync-Project: acme/api\n"));
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "memsync-export-test-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&d).expect("tempdir");
        d
    }
}
