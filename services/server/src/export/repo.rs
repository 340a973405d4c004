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
use memsync_core::wire::VersionProvenance;
use memsync_core::{MemoryPath, ProjectId};

/// The one branch of every export.
pub const BRANCH: &str = "refs/heads/main";
pub const REVISION_TRAILER: &str = "Memsync-Revision";
pub const PROJECT_TRAILER: &str = "Memsync-Project";
pub const KIND_TRAILER: &str = "Memsync-Kind";
pub const SESSION_TRAILER: &str = "Memsync-Session";
pub const HEAD_TRAILER: &str = "Memsync-Head";
/// Longest note (an admin's reason) quoted in a subject line, in characters.
const NOTE_CHARS: usize = 200;
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

/// What made a revision, for its commit message: `revisions.kind` and `.note`, and from its
/// versions' provenance who approved it and where its content came from.
#[derive(Debug, Clone, Default)]
pub struct About {
    /// `push`, `approve`, `disable`, `enable`, `rollback`, `restore`, `delete`, `rescan`.
    pub kind: String,
    pub note: Option<String>,
    pub approved_by: Option<String>,
    /// The agent session that wrote the content.
    pub session: Option<String>,
    /// The repository's `HEAD` when it was pushed.
    pub head: Option<String>,
}

impl About {
    /// From `revisions.kind`, `.note` and the stored `wire::VersionProvenance` (if any).
    pub fn new(
        kind: String,
        note: Option<String>,
        provenance: Option<&serde_json::Value>,
    ) -> About {
        let p = provenance
            .and_then(|v| serde_json::from_value::<VersionProvenance>(v.clone()).ok())
            .unwrap_or_default();
        About {
            kind,
            note,
            approved_by: p.approved_by,
            session: p.client.session_id,
            head: p.client.head,
        }
    }
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

/// The branch head of the repository at `path`: its commit id and the revision its trailer
/// carries. Reads the branch and one commit, nothing else. None when there is no repository or
/// no commit.
pub fn head(path: &Path, project: &ProjectId) -> anyhow::Result<Option<(Oid, i64)>> {
    let Some(repo) = open(path)? else {
        return Ok(None);
    };
    let Some(head) = head_commit(&repo)? else {
        return Ok(None);
    };
    Ok(Some((head.id(), commit_revision(&head, project)?)))
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

/// Whether the commit of any of `purged` (revision, path; newest first) still has that path: the
/// repository was written before the content was purged (on a replica that has not rewritten it
/// since), so it must be rebuilt rather than continued. A rewritten repository never has a purged
/// path in the commit of its revision.
pub fn holds_purged(
    path: &Path,
    project: &ProjectId,
    purged: &[(i64, String)],
) -> anyhow::Result<bool> {
    let Some(repo) = open(path)? else {
        return Ok(false);
    };
    let head = head_commit(&repo)?;
    holds_purged_below(head, project, purged)
}

/// [`holds_purged`] for the history of commit `head` (a branch head read earlier): a clone is
/// served from the head that was checked, or refused when the repository no longer has it.
pub fn holds_purged_from(
    path: &Path,
    project: &ProjectId,
    head: Oid,
    purged: &[(i64, String)],
) -> anyhow::Result<bool> {
    let Some(repo) = open(path)? else {
        bail!("{} is gone", path.display());
    };
    let head = repo
        .find_commit(head)
        .with_context(|| format!("commit {head} is no longer in {}", path.display()))?;
    holds_purged_below(Some(head), project, purged)
}

fn holds_purged_below(
    mut commit: Option<Commit<'_>>,
    project: &ProjectId,
    purged: &[(i64, String)],
) -> anyhow::Result<bool> {
    for (revision, file) in purged {
        loop {
            let Some(c) = &commit else {
                return Ok(false);
            };
            if commit_revision(c, project)? <= *revision {
                break;
            }
            commit = c.parents().next();
        }
        let Some(c) = &commit else {
            return Ok(false);
        };
        if commit_revision(c, project)? == *revision && c.tree()?.get_path(Path::new(file)).is_ok()
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Appends one commit per revision to the repository at `path` (created if missing). The
/// revisions must follow the repository's newest commit without a gap. Returns the new head
/// revision.
///
/// The batch's objects are built in memory and written as one pack, then the branch is moved
/// once: a loose object per blob, tree and commit (and a branch update per revision) cost the
/// exporter most of its time creating files. A crash before the branch moves leaves only an
/// unreferenced pack; the next pass starts again from the branch.
pub fn append(
    path: &Path,
    project: &ProjectId,
    revisions: &[(Revision, About)],
) -> anyhow::Result<i64> {
    let repo = match open(path)? {
        Some(r) => r,
        None => init(path)?,
    };
    remove_stale_branch_lock(path)?;
    let start = head_commit(&repo)?;
    let mut head = match &start {
        Some(c) => commit_revision(c, project)?,
        None => 0,
    };
    let odb = repo.odb()?;
    // Every object written from here on stays in memory until packed below.
    let _in_memory = odb.add_new_mempack_backend(MEMPACK_PRIORITY)?;
    let mut parent = start.clone();
    for (rev, about) in revisions {
        if rev.revision != head + 1 {
            bail!(
                "{project}: the repository is at revision {head}, cannot append revision {}",
                rev.revision
            );
        }
        let oid = commit(&repo, project, parent.as_ref(), rev, about)?;
        parent = Some(repo.find_commit(oid)?);
        head = rev.revision;
    }
    let Some(new_head) = parent.map(|c| c.id()) else {
        return Ok(head);
    };
    let old_head = start.as_ref().map(Commit::id);
    if Some(new_head) == old_head {
        return Ok(head);
    }
    // The new objects only: what the new commits reach and the old head does not.
    let mut walk = repo.revwalk()?;
    walk.push(new_head)?;
    if let Some(old) = old_head {
        walk.hide(old)?;
    }
    let mut pack = repo.packbuilder()?;
    pack.insert_walk(&mut walk)?;
    pack.write(&path.join("objects/pack"), 0)
        .with_context(|| format!("writing the export's pack in {}", path.display()))?;
    let message = format!("memsync export: revision {head}");
    match old_head {
        // Moved only if it still points where this batch started.
        Some(old) => repo.reference_matching(BRANCH, new_head, true, old, &message)?,
        None => repo.reference(BRANCH, new_head, false, &message)?,
    };
    Ok(head)
}

/// Above the repository's own object stores, so new objects are kept in memory.
const MEMPACK_PRIORITY: i32 = 999;

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
    about: &About,
) -> anyhow::Result<Oid> {
    let base = parent.map(Commit::tree).transpose()?;
    let mut changed: Vec<(MemoryPath, Option<Oid>)> = Vec::new();
    let mut lines: Vec<Line> = Vec::new();
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
        lines.push(Line {
            verb,
            path: p.to_string(),
            index: p.is_index(),
        });
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
    let message = message(project, rev.revision, &lines, about);
    let parents: Vec<&Commit<'_>> = parent.into_iter().collect();
    // The branch is moved by `append`, once for the whole batch.
    Ok(repo.commit(None, &author, &committer, &message, &tree, &parents)?)
}

/// One change of a commit: `add`, `update`, `delete` or `write (content purged)`, and the path.
struct Line {
    verb: &'static str,
    path: String,
    /// A `MEMORY.md`, which follows its memories.
    index: bool,
}

impl std::fmt::Display for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.verb, self.path)
    }
}

/// Up to `SUBJECT_CHANGES` items, then how many more.
fn listed(items: &[String]) -> String {
    let mut s = items[..items.len().min(SUBJECT_CHANGES)].join(", ");
    if items.len() > SUBJECT_CHANGES {
        s.push_str(&format!(" and {} more", items.len() - SUBJECT_CHANGES));
    }
    s
}

/// One line of at most `max` characters, for a subject or a trailer.
fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    cut.push('\u{2026}');
    cut
}

/// The subject says what the revision was: a push lists its changes (`memsync r12: update
/// testing.md, delete old.md`); an admin or review action names itself and the memories it
/// acted on (`memsync r13: disable testing.md: outdated`, `memsync r14: publish plan.md, approved
/// by Ann`, `memsync r15: roll back plan.md to revision 9`), with the reason given. The body
/// lists every change when the subject does not (an action's index updates, a long push), then
/// the trailers: `Memsync-Revision`, `Memsync-Project`, `Memsync-Kind`, and `Memsync-Session` /
/// `Memsync-Head` when the versions' provenance has them.
fn message(project: &ProjectId, revision: i64, lines: &[Line], about: &About) -> String {
    let kind = if about.kind.is_empty() {
        "push"
    } else {
        about.kind.as_str()
    };
    let note = about
        .note
        .as_deref()
        .map(|n| one_line(n, NOTE_CHARS))
        .filter(|n| !n.is_empty());
    let all: Vec<String> = lines.iter().map(Line::to_string).collect();
    let memories: Vec<&Line> = {
        let m: Vec<&Line> = lines.iter().filter(|l| !l.index).collect();
        if m.is_empty() {
            lines.iter().collect()
        } else {
            m
        }
    };
    let paths: Vec<String> = memories.iter().map(|l| l.path.clone()).collect();
    let with_note = |s: String| match &note {
        Some(n) => format!("{s}: {n}"),
        None => s,
    };
    let what = if lines.is_empty() {
        "no changes".to_owned()
    } else {
        match kind {
            "push" => listed(&all),
            "approve" => {
                let items: Vec<String> = memories
                    .iter()
                    .map(|l| match l.verb {
                        "delete" => format!("the deletion of {}", l.path),
                        _ => l.path.clone(),
                    })
                    .collect();
                let by = about
                    .approved_by
                    .as_deref()
                    .map(|a| format!(", approved by {}", one_line(a, NOTE_CHARS)))
                    .unwrap_or_default();
                with_note(format!("publish {}{by}", listed(&items)))
            }
            "disable" => with_note(format!("disable {}", listed(&paths))),
            "rescan" => match &note {
                Some(n) => format!("disable {} ({n})", listed(&paths)),
                None => format!("disable {} (rescan)", listed(&paths)),
            },
            // The note of a rollback starts with the revision it went back to.
            "rollback" => match &note {
                Some(n) => format!("roll back {} {n}", listed(&paths)),
                None => format!("roll back {}", listed(&paths)),
            },
            "enable" | "restore" | "delete" => with_note(format!("{kind} {}", listed(&paths))),
            other => with_note(format!("{} {}", one_line(other, 40), listed(&all))),
        }
    };
    let mut m = format!("memsync r{revision}: {what}\n\n");
    let subject_lists_all = kind == "push" && lines.len() <= SUBJECT_CHANGES;
    if !lines.is_empty() && !subject_lists_all {
        for l in &all {
            m.push_str(l);
            m.push('\n');
        }
        m.push('\n');
    }
    m.push_str(&format!(
        "{REVISION_TRAILER}: {revision}\n{PROJECT_TRAILER}: {project}\n{KIND_TRAILER}: {}\n",
        one_line(kind, 40)
    ));
    for (key, value) in [
        (SESSION_TRAILER, &about.session),
        (HEAD_TRAILER, &about.head),
    ] {
        if let Some(v) = value.as_deref().map(|v| one_line(v, NOTE_CHARS))
            && !v.is_empty()
        {
            m.push_str(&format!("{key}: {v}\n"));
        }
    }
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

    fn rev(revision: i64, author: &str, changes: Vec<(&str, Content)>) -> (Revision, About) {
        let rev = Revision {
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
        };
        (rev, About::default())
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
            "memsync r2: delete dir/sub/b.md, write (content purged) leak.md\n\nMemsync-Revision: 2\nMemsync-Project: acme/api\nMemsync-Kind: push\n"
        );
        assert_eq!(head.author().name().ok(), Some("bob x"));
        assert_eq!(head.author().email().ok(), Some("bob--x-@memsync.invalid"));
        assert_eq!(head.committer().name().ok(), Some(COMMITTER_NAME));
        assert_eq!(head.time().seconds(), 1_700_000_002);
        let other = ProjectId::new("acme", "web").expect("project");
        assert!(exported_revision(&p, &other).is_err());

        // Each batch is one pack and no loose object; git itself finds the repository whole.
        let r3 = rev(3, "ann", vec![("c.md", text("c")), ("d/e.md", text("e"))]);
        let r4 = rev(4, "ann", vec![("c.md", text("c2"))]);
        assert_eq!(append(&p, &project, &[r3, r4]).expect("append"), 4);
        let objects = std::fs::read_dir(p.join("objects"))
            .expect("objects")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.len() == 2)
            .collect::<Vec<_>>();
        assert_eq!(objects, Vec::<String>::new(), "no loose objects");
        let packs = std::fs::read_dir(p.join("objects/pack"))
            .expect("packs")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".pack"))
            })
            .count();
        assert_eq!(packs, 3, "one pack per batch");
        let fsck = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(&p)
            .args(["fsck", "--strict", "--no-dangling"])
            .output()
            .expect("git fsck");
        assert!(
            fsck.status.success(),
            "{}",
            String::from_utf8_lossy(&fsck.stderr)
        );
        let log = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(&p)
            .args(["log", "--format=%s", "main"])
            .output()
            .expect("git log");
        assert_eq!(
            String::from_utf8_lossy(&log.stdout),
            "memsync r4: update c.md\nmemsync r3: add c.md, add d/e.md\nmemsync r2: delete dir/sub/b.md, write (content purged) leak.md\nmemsync r1: add a.md, add dir/sub/b.md\n"
        );
        let _ = std::fs::remove_dir_all(&tmp);
    }

    #[test]
    fn a_repository_written_before_a_purge_is_found() {
        let tmp = tempfile_dir();
        let project = ProjectId::new("acme", "api").expect("project");
        let text = |s: &str| Content::Text(s.to_owned());
        let history = |purged: bool| {
            vec![
                rev(1, "ann", vec![("keep.md", text("k"))]),
                rev(
                    2,
                    "ann",
                    vec![(
                        "leak.md",
                        if purged {
                            Content::Purged
                        } else {
                            text("secret")
                        },
                    )],
                ),
                rev(3, "ann", vec![("keep.md", text("k2"))]),
            ]
        };
        let old = tmp.join("old.git");
        let new = tmp.join("new.git");
        append(&old, &project, &history(false)).expect("old");
        append(&new, &project, &history(true)).expect("new");
        let purged = vec![(2, "leak.md".to_owned())];
        assert!(holds_purged(&old, &project, &purged).expect("old"));
        assert!(!holds_purged(&new, &project, &purged).expect("new"));
        // A repository behind the purged revision holds nothing of it; none holds nothing.
        assert!(!holds_purged(&old, &project, &[(4, "leak.md".to_owned())]).expect("ahead"));
        assert!(!holds_purged(&tmp.join("none.git"), &project, &purged).expect("none"));
        // From a head read earlier: the same answers, and the head is what is looked at.
        let (old_head, old_rev) = head(&old, &project).expect("head").expect("some");
        assert_eq!(old_rev, 3);
        assert!(holds_purged_from(&old, &project, old_head, &purged).expect("old"));
        let (new_head, _) = head(&new, &project).expect("head").expect("some");
        assert!(!holds_purged_from(&new, &project, new_head, &purged).expect("new"));
        assert!(holds_purged_from(&new, &project, old_head, &purged).is_err());
        assert_eq!(head(&tmp.join("none.git"), &project).expect("none"), None);
        let _ = std::fs::remove_dir_all(&tmp);
    }

    fn lines(spec: &[(&'static str, &str)]) -> Vec<Line> {
        spec.iter()
            .map(|(verb, path)| Line {
                verb,
                path: (*path).to_owned(),
                index: path.ends_with("MEMORY.md"),
            })
            .collect()
    }

    fn about(kind: &str, note: Option<&str>) -> About {
        About {
            kind: kind.into(),
            note: note.map(str::to_owned),
            ..About::default()
        }
    }

    #[test]
    fn long_change_lists_go_to_the_body() {
        let project = ProjectId::new("acme", "api").expect("project");
        let names: Vec<String> = (0..7).map(|i| format!("m{i}.md")).collect();
        let spec: Vec<(&'static str, &str)> = names.iter().map(|n| ("add", n.as_str())).collect();
        let m = message(&project, 9, &lines(&spec), &About::default());
        assert!(m.starts_with(
            "memsync r9: add m0.md, add m1.md, add m2.md, add m3.md, add m4.md and 2 more\n\n"
        ));
        assert!(m.contains("\nadd m6.md\n"));
        assert!(
            m.ends_with("\n\nMemsync-Revision: 9\nMemsync-Project: acme/api\nMemsync-Kind: push\n")
        );
    }

    #[test]
    fn the_subject_says_what_made_the_revision() {
        let project = ProjectId::new("acme", "api").expect("project");
        let disable = lines(&[("delete", "testing.md"), ("update", "MEMORY.md")]);
        let put = lines(&[("update", "testing.md"), ("update", "MEMORY.md")]);
        let subject = |kind: &str, note: Option<&str>, l: &[Line]| {
            message(&project, 7, l, &about(kind, note))
                .lines()
                .next()
                .expect("subject")
                .to_owned()
        };
        let cases = [
            (
                subject("disable", Some("outdated since\nthe move"), &disable),
                "memsync r7: disable testing.md: outdated since the move",
            ),
            (
                subject("disable", None, &disable),
                "memsync r7: disable testing.md",
            ),
            (
                subject("enable", None, &put),
                "memsync r7: enable testing.md",
            ),
            (
                subject("rollback", Some("to revision 3: wrong port"), &put),
                "memsync r7: roll back testing.md to revision 3: wrong port",
            ),
            (
                subject("rescan", Some("rescan: acme-token"), &disable),
                "memsync r7: disable testing.md (rescan: acme-token)",
            ),
            (
                subject("delete", Some("leaked"), &disable),
                "memsync r7: delete testing.md: leaked",
            ),
            (
                subject("restore", None, &put),
                "memsync r7: restore testing.md",
            ),
            (
                subject("push", None, &put),
                "memsync r7: update testing.md, update MEMORY.md",
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
        let approve = About {
            approved_by: Some("Bob".into()),
            session: Some("sess-42".into()),
            head: Some("0123abcd".into()),
            ..about("approve", Some("ok"))
        };
        let both = lines(&[
            ("add", "new.md"),
            ("delete", "old.md"),
            ("update", "MEMORY.md"),
        ]);
        let m = message(&project, 8, &both, &approve);
        assert_eq!(
            m,
            "memsync r8: publish new.md, the deletion of old.md, approved by Bob: ok\n\n\
             add new.md\ndelete old.md\nupdate MEMORY.md\n\n\
             Memsync-Revision: 8\nMemsync-Project: acme/api\nMemsync-Kind: approve\n\
             Memsync-Session: sess-42\nMemsync-Head: 0123abcd\n"
        );
        // A note cannot forge a trailer: it stays on the subject line.
        let m = message(
            &project,
            9,
            &disable,
            &about("disable", Some("x\nMemsync-Revision: 99")),
        );
        assert_eq!(trailer(&m, REVISION_TRAILER), Some("9"));
        assert_eq!(trailer(&m, KIND_TRAILER), Some("disable"));
    }

    #[test]
    fn about_reads_the_stored_provenance() {
        let stored = serde_json::json!({
            "author": "ann", "author_sub": "ann", "pushed_at": "2026-12-01T00:00:00.000Z",
            "session_id": "s-1", "head": "abcdef1", "approved_by": "bob", "proposal_id": 4,
        });
        let a = About::new("approve".into(), None, Some(&stored));
        assert_eq!(
            (
                a.approved_by.as_deref(),
                a.session.as_deref(),
                a.head.as_deref()
            ),
            (Some("bob"), Some("s-1"), Some("abcdef1"))
        );
        let old = About::new("push".into(), None, None);
        assert_eq!((old.session, old.head), (None, None));
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
