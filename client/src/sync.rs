//! The pull/push engine: a three-way decision per file between the server, the base (the version
//! last synced) and the disk. Local edits are never overwritten, deletions apply only to files
//! unchanged since their base, and every conflict keeps the local file and stores the server's
//! version in the state dir until `memsync resolve` settles it.
//!
//! Under `review = required` a member's push publishes nothing: the server answers 202 with the
//! proposals it made. The local files stay as they are, and a file proposed is not sent again
//! until it changes (a changed file is sent again, and its new proposal supersedes the old one).
//! When a reviewer approves it, the next pull brings the published version, which is the local
//! content: it is taken as the new base, not reported as a conflict.

use std::collections::{BTreeMap, BTreeSet};

use memsync_core::merge::merge_text;
use memsync_core::policy;
use memsync_core::tree::{Clash, PathTree};
use memsync_core::wire::{
    FileState, ProposalStatus, Proposed, PushChange, PushOp, PushRequest, PushResponse,
};
use memsync_core::{MemoryPath, ProjectId, Sha256};
use serde::Serialize;

use crate::api::{ApiClient, ApiError, IdempotencyKey, Page, Pulled};
use crate::config::Repo;
use crate::fsops::{FsError, TeamDir, Written};
use crate::state::{
    ConflictRecord, ProposedRecord, RefusedRecord, State, StateError, StateStore, Tracked,
};

/// Largest file accepted from the server (the server's own limit is lower by default).
const MAX_INCOMING_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error(transparent)]
    Fs(#[from] FsError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error("{0}")]
    Refused(String),
    /// The command asked for something that is not there (exit 2, like any usage error).
    #[error("{0}")]
    Usage(String),
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PathNote {
    pub path: String,
    pub reason: String,
}

/// A file a pull decided to write.
struct PendingWrite {
    path: MemoryPath,
    content: Vec<u8>,
    /// The disk's hash when the decision was made (None: absent).
    expect: Option<Sha256>,
    /// The server's state of the path: the base once the write lands.
    fs: FileState,
    kind: WriteKind,
}

#[derive(Clone, Copy)]
enum WriteKind {
    Update,
    Restore,
    Merge,
}

/// What a pull or push did and found.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub project: String,
    /// The revision the team dir now reflects.
    pub revision: i64,
    /// The server's revision the pull got to (past `revision` when a page could not be written
    /// whole and was not recorded).
    #[serde(skip)]
    pub reached: i64,
    /// Pages of changes a pull received (each one request).
    #[serde(skip_serializing_if = "is_zero")]
    pub pages: u32,
    /// The revision an accepted push created (None: it created none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pushed_revision: Option<i64>,
    pub not_modified: bool,
    /// Files written or updated from the server.
    pub updated: Vec<String>,
    /// Files deleted locally because the server deleted them.
    pub deleted: Vec<String>,
    /// Files whose local edit was merged with the server's edit.
    pub merged: Vec<String>,
    /// Local edits kept as they are (they will be pushed).
    pub kept: Vec<PathNote>,
    pub pushed: Vec<String>,
    pub pushed_deletes: Vec<String>,
    pub conflicts: Vec<PathNote>,
    pub refused: Vec<RefusedNote>,
    /// Entries not synced (symlinks, invalid names, bad files from the server).
    pub skipped: Vec<PathNote>,
    /// Deletions held back by the mass-delete guard.
    pub held_deletes: Option<String>,
    /// True when a guard finding stopped the whole push: nothing was uploaded.
    pub blocked: bool,
    /// True when a pull could not write everything the server sent (a path that collides with
    /// another on disk): the revision was not recorded, so the next pull tries again.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
    /// Changes this push made into proposals for a reviewer (`review = required`): nothing of
    /// them is published yet.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub proposed: Vec<ProposedNote>,
    /// Files proposed by an earlier push and unchanged since: not sent again.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub awaiting_review: Vec<ProposedNote>,
}

/// A change that waits for a reviewer, as `push --json` and `status --json` print it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ProposedNote {
    pub path: String,
    pub id: i64,
    pub op: PushOp,
    pub status: ProposalStatus,
    pub reason: Option<String>,
}

impl ProposedNote {
    fn of(path: &str, r: &ProposedRecord) -> ProposedNote {
        ProposedNote {
            path: path.to_owned(),
            id: r.id,
            op: r.op,
            status: r.status,
            reason: r.reason.clone(),
        }
    }

    fn from_wire(p: &Proposed) -> ProposedNote {
        ProposedNote {
            path: p.path.clone(),
            id: p.id,
            op: p.op,
            status: p.status,
            reason: p.reason.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RefusedNote {
    pub path: String,
    pub rule: String,
    pub message: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Report {
    /// Adds what one page of a pull did.
    fn absorb(&mut self, page: Report) {
        self.updated.extend(page.updated);
        self.deleted.extend(page.deleted);
        self.merged.extend(page.merged);
        self.kept.extend(page.kept);
        self.conflicts.extend(page.conflicts);
        self.skipped.extend(page.skipped);
        self.incomplete |= page.incomplete;
    }

    /// Problems a user must look at (exit code 1).
    pub fn has_problems(&self) -> bool {
        !self.conflicts.is_empty()
            || !self.refused.is_empty()
            || !self.skipped.is_empty()
            || self.held_deletes.is_some()
    }
}

pub struct Engine<'a> {
    pub api: &'a ApiClient,
    pub project: &'a ProjectId,
    pub team: &'a TeamDir,
    pub store: &'a StateStore,
    pub max_file_bytes: usize,
    /// Called with (done, total) while many files move.
    pub progress: &'a dyn Fn(usize, usize),
    /// The working tree the memories are about: its `HEAD` and branch go into a push's
    /// provenance, and the paths a memory names that exist in it into `named_paths`.
    pub repo: Option<&'a Repo>,
    /// The agent session that wrote the changes (`--session-id`, `MEMSYNC_SESSION_ID`, or the
    /// `SessionEnd` hook's input).
    pub session_id: Option<String>,
    /// Files asked for per pull page (the server caps it): [`pull_page_size`].
    pub page_size: u32,
}

/// Files per pull page when nothing says otherwise.
pub const PULL_PAGE_FILES: u32 = 500;

/// The environment variable that sets the files per pull page (1 or more; the server's own cap
/// still applies).
pub const ENV_PULL_PAGE: &str = "MEMSYNC_PULL_PAGE";

/// Files per pull page: `MEMSYNC_PULL_PAGE` when it is a positive number, else
/// [`PULL_PAGE_FILES`].
pub fn pull_page_size() -> u32 {
    std::env::var(ENV_PULL_PAGE)
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(PULL_PAGE_FILES)
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

impl Engine<'_> {
    fn track(
        &self,
        state: &mut State,
        path: &str,
        fs: &FileState,
        content: &[u8],
    ) -> Result<(), SyncError> {
        let Some(sha) = fs.sha256 else { return Ok(()) };
        self.store.set_base(path, content)?;
        state.files.insert(
            path.to_owned(),
            Tracked {
                sha256: sha,
                updated_at: Some(fs.updated_at.clone()),
                author: Some(fs.author.clone()),
                named_paths: fs.named_paths.clone(),
                stamp: None,
            },
        );
        Ok(())
    }

    fn untrack(&self, state: &mut State, path: &str) {
        state.files.remove(path);
        self.store.remove_base(path);
    }

    fn record_conflict(
        &self,
        state: &mut State,
        report: &mut Report,
        path: &str,
        reason: &str,
        server: Option<(&[u8], Sha256)>,
        local: Option<Sha256>,
    ) -> Result<(), SyncError> {
        self.store
            .set_server_version(path, server.map(|(c, _)| c))?;
        // A conflict seen again (the server's side moved on) keeps the local version it was
        // first recorded with: the file may hold the user's half-done merge since, which must
        // not be taken for the untouched local version (`resolve --take merged` would redo it).
        let local = state.conflicts.get(path).map_or(local, |c| c.local_sha256);
        state.conflicts.insert(
            path.to_owned(),
            ConflictRecord {
                reason: reason.to_owned(),
                server_sha256: server.map(|(_, s)| s),
                local_sha256: local,
                at: now(),
            },
        );
        report.conflicts.push(PathNote {
            path: path.to_owned(),
            reason: reason.to_owned(),
        });
        Ok(())
    }

    /// Writes back every tracked file that is missing from disk, from its last synced version.
    pub fn restore_deleted(&self, state: &State) -> Result<Vec<String>, SyncError> {
        let mut restored = Vec::new();
        for (p, t) in &state.files {
            let Ok(path) = MemoryPath::parse(p) else {
                continue;
            };
            if state.conflicts.contains_key(p) || self.team.read(&path)?.is_some() {
                continue;
            }
            let Some(content) = self.store.base_content(p, &t.sha256) else {
                continue;
            };
            if self.team.write(&path, &content, None)? == Written::Done {
                restored.push(p.clone());
            }
        }
        Ok(restored)
    }

    /// Brings the server's changes into the team dir, page by page.
    ///
    /// Each page is applied and recorded (files, bases and the page's revision, in one atomic
    /// state write) before the next is asked for, with `since` = that page's revision: a pull
    /// stopped between pages resumes from the last page recorded. The report covers every page.
    pub async fn pull(&self, state: &mut State) -> Result<Report, SyncError> {
        let mut report = Report {
            project: self.project.to_string(),
            revision: state.revision,
            reached: state.revision,
            ..Report::default()
        };
        self.team.clean_temp();
        let mut since = state.revision;
        // A page that could not be written whole leaves the recorded revision where it was; the
        // pages after it are still applied (their files and bases), so the next pull only has
        // the failed part to redo, as with a single page.
        let mut recording = true;
        let mut done = 0;
        loop {
            let first = report.pages == 0;
            let etag = state.etag.clone().filter(|_| first && state.revision > 0);
            let page = Page {
                limit: Some(self.page_size),
                wait: None,
            };
            let (body, etag) = match self
                .api
                .pull(self.project, since, etag.as_deref(), page)
                .await
            {
                Ok(Pulled::NotModified) => {
                    report.not_modified = first;
                    break;
                }
                Ok(Pulled::Changes { body, etag }) => (body, etag),
                Err(ApiError::Server { code, .. }) if code == "since_ahead" && since > 0 => {
                    // The server lost revisions (restored from a backup): start over from 0.
                    // Bases stay, so local edits are still recognised as edits.
                    state.revision = 0;
                    state.etag = None;
                    since = 0;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            report.pages += 1;
            let mut page_report = Report::default();
            let total = done + body.changes.len();
            let clashing = clashes_with_local(state, &body.changes);
            let mut pending = Vec::new();
            for fs in &body.changes {
                if let Some(clash) = clashing.get(fs.path.as_str()) {
                    self.refuse_from_server(&mut page_report, &fs.path, clash.message());
                } else {
                    self.apply_incoming(state, &mut page_report, fs, &mut pending)?;
                }
                done += 1;
                (self.progress)(done, total);
            }
            self.commit_writes(state, &mut page_report, pending)?;
            recording &= !page_report.incomplete;
            if recording {
                state.revision = body.revision;
                state.etag = etag;
                report.revision = body.revision;
            }
            report.reached = body.revision;
            report.absorb(page_report);
            state.last_pull_at = Some(now());
            self.team.flush()?;
            self.store.save(state)?;
            // A page that brought nothing and claims more would loop for ever.
            if !body.more || body.revision <= since {
                break;
            }
            since = body.revision;
        }
        self.open_conflicts(state, &mut report);
        Ok(report)
    }

    /// A file from the server that cannot be written without turning a file into a directory (or
    /// back), or beside a name that differs only in case: reported as the server's problem, not
    /// as a local change, and the pull stays incomplete.
    fn refuse_from_server(&self, report: &mut Report, path: &str, why: String) {
        report.incomplete = true;
        report.skipped.push(PathNote {
            path: path.chars().take(200).collect(),
            reason: format!(
                "not written: the server sent a path that collides on disk ({why}); \
                 ask a team admin to delete or rename it on the server"
            ),
        });
    }

    fn open_conflicts(&self, state: &State, report: &mut Report) {
        for (path, c) in &state.conflicts {
            if !report.conflicts.iter().any(|n| &n.path == path) {
                report.conflicts.push(PathNote {
                    path: path.clone(),
                    reason: c.reason.clone(),
                });
            }
        }
    }

    /// The three-way decision for one file from the server.
    /// Writes the files a pull decided to write, in one batch (one flush to disk for all of
    /// them), then records each one that landed.
    fn commit_writes(
        &self,
        state: &mut State,
        report: &mut Report,
        pending: Vec<PendingWrite>,
    ) -> Result<(), SyncError> {
        let items: Vec<(&MemoryPath, &[u8], Option<Sha256>)> = pending
            .iter()
            .map(|w| (&w.path, w.content.as_slice(), w.expect))
            .collect();
        let outcomes = self.team.write_batch(&items);
        for (w, outcome) in pending.iter().zip(outcomes) {
            let p = w.path.as_str();
            let outcome = match outcome {
                Err(e) if e.is_layout_clash() => {
                    self.refuse_from_server(report, p, e.to_string());
                    continue;
                }
                other => other?,
            };
            match outcome {
                Written::Done => {
                    let server = w.fs.content.as_deref().unwrap_or_default().as_bytes();
                    self.track(state, p, &w.fs, server)?;
                    match w.kind {
                        WriteKind::Update => report.updated.push(p.to_owned()),
                        WriteKind::Merge => report.merged.push(p.to_owned()),
                        WriteKind::Restore => {
                            report.updated.push(p.to_owned());
                            report.kept.push(PathNote {
                                path: p.to_owned(),
                                reason: "you deleted it, but it was edited on the server since: restored the server's version".into(),
                            });
                        }
                    }
                }
                Written::Changed => report.kept.push(PathNote {
                    path: p.to_owned(),
                    reason: "changed on disk while pulling; kept, will be merged on push".into(),
                }),
            }
        }
        Ok(())
    }

    fn apply_incoming(
        &self,
        state: &mut State,
        report: &mut Report,
        fs: &FileState,
        pending: &mut Vec<PendingWrite>,
    ) -> Result<(), SyncError> {
        let mut plan =
            |path: &MemoryPath, content: Vec<u8>, expect: Option<Sha256>, kind: WriteKind| {
                pending.push(PendingWrite {
                    path: path.clone(),
                    content,
                    expect,
                    fs: fs.clone(),
                    kind,
                });
            };
        let skip = |report: &mut Report, reason: String| {
            report.skipped.push(PathNote {
                path: fs.path.chars().take(200).collect(),
                reason,
            })
        };
        let path = match MemoryPath::parse(&fs.path) {
            Ok(p) => p,
            Err(e) => {
                skip(
                    report,
                    format!("refused a file from the server with an invalid path: {e}"),
                );
                return Ok(());
            }
        };
        let disk = match self.team.read(&path) {
            Ok(d) => d,
            Err(e) if e.is_layout_clash() => {
                self.refuse_from_server(report, &fs.path, e.to_string());
                return Ok(());
            }
            Err(FsError::Symlink { link, .. }) => {
                skip(
                    report,
                    format!("not written: {} is a symlink", link.display()),
                );
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let p = path.as_str();
        let disk_sha = disk.as_deref().map(Sha256::of);
        let base = state.files.get(p).map(|t| t.sha256);
        // What a reviewer published of our proposal is ours: the wait is over.
        if state
            .proposed
            .get(p)
            .is_some_and(|r| r.matches(if fs.deleted { None } else { fs.sha256 }))
        {
            state.proposed.remove(p);
        }

        if fs.deleted {
            match disk_sha {
                None => self.untrack(state, p),
                Some(d) if Some(d) == base => match self.team.remove(&path, d)? {
                    Written::Done => {
                        self.untrack(state, p);
                        report.deleted.push(p.to_owned());
                    }
                    Written::Changed => report.kept.push(PathNote {
                        path: p.to_owned(),
                        reason: "edited while pulling; kept".into(),
                    }),
                },
                Some(d) => {
                    self.record_conflict(state, report, p, "deleted_on_server", None, Some(d))?;
                }
            }
            return Ok(());
        }

        let (Some(content), Some(sha)) = (fs.content.as_deref(), fs.sha256) else {
            skip(report, "the server sent a file without content".into());
            return Ok(());
        };
        if Sha256::of(content.as_bytes()) != sha || content.len() > MAX_INCOMING_BYTES {
            skip(
                report,
                "the server's copy does not match its checksum or is too large; not written".into(),
            );
            return Ok(());
        }
        let bytes = content.as_bytes();
        if disk_sha == Some(sha) {
            self.track(state, p, fs, bytes)?;
            if state.conflicts.remove(p).is_some() {
                self.store.clear_server_version(p);
            }
            return Ok(());
        }
        if disk_sha == base && !state.conflicts.contains_key(p) {
            plan(&path, bytes.to_vec(), disk_sha, WriteKind::Update);
            return Ok(());
        }
        if disk.is_none() {
            // Deleted here, edited on the server: the edit wins (a deletion carries no work).
            plan(&path, bytes.to_vec(), None, WriteKind::Restore);
            return Ok(());
        }
        // Both sides changed: merge here when we can, so the local file carries both edits.
        let base_text = match base {
            Some(b) => self.store.base_content(p, &b),
            None => Some(Vec::new()),
        };
        let local_text = disk.as_deref().and_then(|d| std::str::from_utf8(d).ok());
        let merged = match (base_text.as_deref().map(std::str::from_utf8), local_text) {
            // An index merges entry by entry, with the server's own rule: it never conflicts.
            (Some(Ok(b)), Some(l)) if !state.conflicts.contains_key(p) && path.is_index() => {
                Some(merge_index(b, l, content))
            }
            (Some(Ok(b)), Some(l)) if !state.conflicts.contains_key(p) => {
                merge_text(b, l, content).ok()
            }
            _ => None,
        };
        match merged {
            // The server's version becomes the base; the merged file is ahead of it.
            Some(m) => plan(&path, m.into_bytes(), disk_sha, WriteKind::Merge),
            None => {
                let reason = if base.is_none() {
                    "exists_on_server"
                } else {
                    "overlapping_edit"
                };
                self.record_conflict(state, report, p, reason, Some((bytes, sha)), disk_sha)?;
            }
        }
        Ok(())
    }

    /// Sends every local change (files that differ from their base, tracked files that are gone)
    /// in one batch.
    pub async fn push(
        &self,
        state: &mut State,
        allow_mass_delete: bool,
    ) -> Result<Report, SyncError> {
        let mut report = Report {
            project: self.project.to_string(),
            revision: state.revision,
            ..Report::default()
        };
        // What was loaded: a state that ends up the same is not written again (a push with
        // nothing to send costs no disk write, and one about to send no flush before it does).
        let loaded = state.clone();
        self.team.clean_temp();
        // Files that still look as they did when last found to hold their synced version are
        // not read again; files read now that hold it are stamped for the next scan.
        let now = crate::fsops::now_ns();
        let scan = self.team.scan_known(known_stamps(state))?;
        stamp_unchanged(state, &scan, now);
        for (path, reason) in &scan.skipped {
            report.skipped.push(PathNote {
                path: path.clone(),
                reason: reason.clone(),
            });
        }
        // A refusal lasts as long as the refused content: gone or changed files are offered again.
        state.refused.retain(|p, r| {
            scan.files
                .get(p)
                .is_some_and(|f| f.sha256 == r.local_sha256)
        });
        // So does a proposal: a file changed since is sent again, and supersedes it.
        state
            .proposed
            .retain(|p, r| r.matches(scan.files.get(p).map(|f| f.sha256)));
        for (p, r) in &state.proposed {
            report.awaiting_review.push(ProposedNote::of(p, r));
        }
        let mut changes: Vec<PushChange> = Vec::new();
        let mut sent: BTreeMap<String, Option<Sha256>> = BTreeMap::new();
        for (path, lf) in &scan.files {
            let base = state.files.get(path).map(|t| t.sha256);
            if Some(lf.sha256) == base
                || state.conflicts.contains_key(path)
                || state.proposed.contains_key(path)
            {
                continue;
            }
            if let Some(r) = state.refused.get(path) {
                if r.local_sha256 == lf.sha256 {
                    report.refused.push(RefusedNote {
                        path: path.clone(),
                        rule: r.rule.clone(),
                        message: r.message.clone(),
                    });
                    continue;
                }
                state.refused.remove(path);
            }
            // A changed file was read by the scan (its stamp is not the synced version's).
            let Some(bytes) = lf.bytes(self.team, path)? else {
                continue;
            };
            if let Some((rule, message)) = self.local_check(path, &bytes) {
                state.refused.insert(
                    path.clone(),
                    RefusedRecord {
                        local_sha256: lf.sha256,
                        rule: rule.clone(),
                        message: message.clone(),
                    },
                );
                report.refused.push(RefusedNote {
                    path: path.clone(),
                    rule,
                    message,
                });
                continue;
            }
            let content = String::from_utf8_lossy(&bytes).into_owned();
            sent.insert(path.clone(), Some(lf.sha256));
            let named_paths = match self.repo {
                Some(repo) if !MemoryPath::parse(path).is_ok_and(|m| m.is_index()) => {
                    crate::stale::named_paths(&repo.root, &content)
                }
                _ => Vec::new(),
            };
            changes.push(PushChange {
                path: path.clone(),
                op: PushOp::Put,
                base_sha256: base,
                content: Some(content),
                named_paths,
            });
        }
        let gone: Vec<(String, Sha256)> = state
            .files
            .iter()
            .filter(|(p, _)| {
                !scan.files.contains_key(*p)
                    && !state.conflicts.contains_key(*p)
                    && !state.proposed.contains_key(*p)
            })
            .map(|(p, t)| (p.clone(), t.sha256))
            .collect();
        // The server's own hold (memsync_core::policy): memories deleted against memories live.
        let memory_deletes = gone
            .iter()
            .filter(|(p, _)| policy::counts_as_memory(p))
            .count();
        let tracked = state
            .files
            .keys()
            .filter(|p| policy::counts_as_memory(p))
            .count();
        if policy::mass_delete(memory_deletes, tracked, allow_mass_delete).is_some() {
            report.held_deletes = Some(format!(
                "{memory_deletes} of {tracked} synced memories are gone from {}; that is almost always a wiped folder, so the deletions were not pushed. \
                 Run `memsync pull --restore-deleted` to bring them back, or `memsync push --allow-mass-delete` if it is deliberate",
                self.team.root().display()
            ));
        } else {
            for (path, base) in gone {
                sent.insert(path.clone(), None);
                changes.push(PushChange {
                    path,
                    op: PushOp::Delete,
                    base_sha256: Some(base),
                    content: None,
                    named_paths: Vec::new(),
                });
            }
        }
        // What the server will say of the batch's layout and feedback, with its own rules
        // (memsync_core::policy), over the team dir as last synced.
        let predicted = match predict_refusal(self.team, state, &scan, &changes) {
            Some(Predicted::Layout(notes)) => Some(notes),
            Some(Predicted::Feedback(conflicts)) => {
                self.confirm_feedback(conflicts, &changes).await
            }
            None => None,
        };
        if let Some(problems) = predicted {
            report.refused.extend(problems);
            report.blocked = true;
            self.save_and_report_open(state, &mut report)?;
            return Ok(report);
        }
        // The guards run before anything leaves the machine: one finding (not allowlisted for
        // the project) and nothing of the batch is uploaded.
        if self.guard_batch(state, &mut report, &changes).await {
            self.save_and_report_open(state, &mut report)?;
            return Ok(report);
        }
        // Refusals found above are kept before the request goes, should it never come back.
        self.save_if_changed(state, &loaded)?;
        self.open_conflicts(state, &mut report);
        let provenance = crate::provenance::for_push(self.repo, self.session_id.as_deref());
        let mut attempt = 0;
        while !changes.is_empty() {
            attempt += 1;
            let req = PushRequest {
                changes: changes.clone(),
                allow_mass_delete,
                allow_purged: false,
                provenance: Some(provenance.clone()),
            };
            // A new key per batch (a batch without the conflicted or refused files is another
            // request); `push` sends this one again with each of its retries.
            let key = IdempotencyKey::new();
            match self.api.push(self.project, &req, &key).await {
                Ok(resp) => {
                    self.apply_push_response(state, &mut report, &resp, &sent)?;
                    record_own_revision(state, &resp);
                    report.revision = state.revision;
                    report.pushed_revision = resp.created_revision.then_some(resp.revision);
                    self.record_proposals(state, &mut report, &resp.proposed, &sent);
                    let taken: BTreeSet<&str> =
                        resp.changes.iter().map(|c| c.path.as_str()).collect();
                    let nothing_published = !resp.created_revision || !resp.proposed.is_empty();
                    for c in changes
                        .iter()
                        .filter(|c| !state.proposed.contains_key(&c.path))
                    {
                        let index = MemoryPath::parse(&c.path).is_ok_and(|m| m.is_index());
                        if index && nothing_published && !taken.contains(c.path.as_str()) {
                            // Under review the server ignores pushed indexes (it derives them
                            // from what is published); the local one stays as it is.
                            report.kept.push(PathNote {
                                path: c.path.clone(),
                                reason: "not published: the server keeps each MEMORY.md to the memories it publishes (a memory waiting for review gets its entry when it is approved)".into(),
                            });
                            continue;
                        }
                        match c.op {
                            PushOp::Put => report.pushed.push(c.path.clone()),
                            PushOp::Delete => report.pushed_deletes.push(c.path.clone()),
                        }
                    }
                    break;
                }
                Err(ApiError::Conflict { details, .. }) if attempt < 3 => {
                    for c in details.conflicts {
                        let server = c.server.as_ref().filter(|s| !s.deleted);
                        let server = server
                            .and_then(|s| Some((s.content.as_deref()?.as_bytes(), s.sha256?)));
                        let local = sent.get(&c.path).copied().flatten();
                        self.record_conflict(
                            state,
                            &mut report,
                            &c.path,
                            &c.reason,
                            server,
                            local,
                        )?;
                        changes.retain(|x| x.path != c.path);
                    }
                }
                Err(ApiError::Refused { details, message }) if attempt < 3 => {
                    let mut batch_level = None;
                    for f in details.failures {
                        if f.path.is_empty() || !changes.iter().any(|c| c.path == f.path) {
                            batch_level = Some(f.message.clone());
                            continue;
                        }
                        if let Some(Some(sha)) = sent.get(&f.path) {
                            state.refused.insert(
                                f.path.clone(),
                                RefusedRecord {
                                    local_sha256: *sha,
                                    rule: f.rule.clone(),
                                    message: f.message.clone(),
                                },
                            );
                        }
                        report.refused.push(RefusedNote {
                            path: f.path.clone(),
                            rule: f.rule,
                            message: f.message,
                        });
                        changes.retain(|x| x.path != f.path);
                    }
                    if let Some(m) = batch_level {
                        self.team.flush()?;
                        self.store.save(state)?;
                        return Err(SyncError::Refused(if m.is_empty() { message } else { m }));
                    }
                }
                Err(ApiError::Server { code, message, .. }) if code == "feedback_conflict" => {
                    self.team.flush()?;
                    self.store.save(state)?;
                    return Err(SyncError::Refused(message));
                }
                Err(e) => {
                    self.team.flush()?;
                    self.store.save(state)?;
                    return Err(e.into());
                }
            }
        }
        self.save_if_changed(state, &loaded)?;
        Ok(report)
    }

    /// Flushes the team dir, and saves the state unless it is still `loaded` with no base copy
    /// changed.
    fn save_if_changed(&self, state: &State, loaded: &State) -> Result<(), SyncError> {
        self.team.flush()?;
        if state != loaded || self.store.has_unsaved_bases() {
            self.store.save(state)?;
        }
        Ok(())
    }

    /// A predicted feedback refusal asked of the server, which may judge team feedback with a
    /// model (`--feedback-judge-url`) where this client only has the detector: each predicted
    /// contradiction with a memory the server holds is dropped when the server's feedback check
    /// no longer calls that pair a contradiction. Offline, or for any other refusal, the
    /// prediction stands. `None`: nothing left to refuse, the batch goes to the server (which
    /// decides anyway).
    async fn confirm_feedback(
        &self,
        conflicts: Vec<policy::FeedbackConflict>,
        changes: &[PushChange],
    ) -> Option<Vec<RefusedNote>> {
        let mut asked: BTreeMap<String, Option<Vec<memsync_core::wire::FeedbackFinding>>> =
            BTreeMap::new();
        let mut kept = Vec::new();
        for c in conflicts {
            let content = changes
                .iter()
                .find(|x| x.path == c.path)
                .and_then(|x| x.content.clone());
            // Both in the batch: the server holds neither as the batch writes them.
            let on_server = !changes.iter().any(|x| x.path == c.other);
            if let (Some(content), true) = (content, on_server) {
                if !asked.contains_key(&c.path) {
                    let req = memsync_core::wire::FeedbackCheckRequest {
                        path: c.path.clone(),
                        content,
                    };
                    let answer = self.api.feedback_check(self.project, &req).await.ok();
                    asked.insert(c.path.clone(), answer.map(|a| a.findings));
                }
                if let Some(Some(findings)) = asked.get(&c.path)
                    && !findings
                        .iter()
                        .any(|f| f.team == c.other && f.kind == "contradiction")
                {
                    continue;
                }
            }
            kept.push(RefusedNote {
                message: c.message(),
                path: c.path,
                rule: "feedback_conflict".into(),
            });
        }
        (!kept.is_empty()).then_some(kept)
    }

    /// Scans every file of the batch; true (and the findings reported, the files marked refused
    /// until they change) when any finding is not on the project's allowlist.
    async fn guard_batch(
        &self,
        state: &mut State,
        report: &mut Report,
        changes: &[PushChange],
    ) -> bool {
        let mut findings: Vec<memsync_core::wire::Failure> = changes
            .iter()
            .filter_map(|c| Some((c.path.as_str(), c.content.as_deref()?)))
            .flat_map(|(p, text)| memsync_core::guard::scan_text(p, text))
            .collect();
        if findings.is_empty() {
            return false;
        }
        // Findings a team admin allowlisted pass; offline, none does (the server decides anyway).
        if let Ok(list) = self.api.allowlist(self.project).await {
            let allowed: BTreeSet<String> =
                list.entries.into_iter().map(|e| e.fingerprint).collect();
            findings = policy::allowlisted(findings, &allowed);
        }
        if findings.is_empty() {
            return false;
        }
        for f in findings {
            let path = f.path.clone();
            if let Some(sha) = changes
                .iter()
                .find(|c| c.path == path)
                .and_then(|c| c.content.as_deref())
                .map(|c| Sha256::of(c.as_bytes()))
            {
                state.refused.entry(path.clone()).or_insert(RefusedRecord {
                    local_sha256: sha,
                    rule: f.rule.clone(),
                    message: f.message.clone(),
                });
            }
            report.refused.push(RefusedNote {
                path,
                rule: f.rule,
                message: f.message,
            });
        }
        report.blocked = true;
        true
    }

    /// The changes the server made into proposals: kept in the state (so they are not sent
    /// again while the files stay as proposed) and reported.
    fn record_proposals(
        &self,
        state: &mut State,
        report: &mut Report,
        proposed: &[Proposed],
        sent: &BTreeMap<String, Option<Sha256>>,
    ) {
        for p in proposed {
            let Some(sha) = sent.get(&p.path) else {
                continue;
            };
            state.proposed.insert(
                p.path.clone(),
                ProposedRecord {
                    id: p.id,
                    op: p.op,
                    sha256: *sha,
                    status: p.status,
                    reason: p.reason.clone(),
                    at: now(),
                },
            );
            report.proposed.push(ProposedNote::from_wire(p));
        }
    }

    fn save_and_report_open(&self, state: &State, report: &mut Report) -> Result<(), SyncError> {
        self.team.flush()?;
        self.store.save(state)?;
        self.open_conflicts(state, report);
        Ok(())
    }

    /// The server's rules for one file (memsync_core::policy), run before anything leaves the
    /// machine: the first failure, if any.
    fn local_check(&self, path: &str, content: &[u8]) -> Option<(String, String)> {
        let mp = MemoryPath::parse(path).ok()?;
        policy::check_file(&mp, content, self.max_file_bytes)
            .err()?
            .into_iter()
            .next()
            .map(|f| (f.rule, f.message))
    }

    fn apply_push_response(
        &self,
        state: &mut State,
        report: &mut Report,
        resp: &PushResponse,
        sent: &BTreeMap<String, Option<Sha256>>,
    ) -> Result<(), SyncError> {
        let merged: BTreeSet<&str> = resp.merged.iter().map(String::as_str).collect();
        for fs in &resp.changes {
            let Ok(path) = MemoryPath::parse(&fs.path) else {
                continue;
            };
            let p = path.as_str();
            // Published: whatever was proposed of it is settled.
            state.proposed.remove(p);
            let disk_sha = self.team.sha(&path)?;
            let base = state.files.get(p).map(|t| t.sha256);
            // What the disk held when we pushed (or, for a file we did not send, its base).
            let expected = match sent.get(p) {
                Some(s) => *s,
                None => base,
            };
            if fs.deleted {
                match disk_sha {
                    None => self.untrack(state, p),
                    Some(d) if Some(d) == expected => {
                        if self.team.remove(&path, d)? == Written::Done {
                            self.untrack(state, p);
                        }
                    }
                    Some(_) => {}
                }
                continue;
            }
            let (Some(content), Some(sha)) = (fs.content.as_deref(), fs.sha256) else {
                continue;
            };
            if disk_sha == Some(sha) {
                self.track(state, p, fs, content.as_bytes())?;
            } else if disk_sha == expected
                && self.team.write(&path, content.as_bytes(), disk_sha)? == Written::Done
            {
                self.track(state, p, fs, content.as_bytes())?;
                if merged.contains(p) {
                    report.merged.push(p.to_owned());
                } else if !sent.contains_key(p) {
                    report.updated.push(p.to_owned());
                }
            }
            // Otherwise the file was edited while we pushed: its base stays, so the next push
            // merges that edit with the server's version instead of overwriting it.
        }
        Ok(())
    }
}

/// A `MEMORY.md` edited here and on the server, merged as the server merges a pushed one
/// (`memsync_core::index::merge`, the local file as "ours"): entries added on either side land,
/// the layout follows the server's. A local entry for a memory still waiting for review (the
/// server keeps the index to what is published) stays, and so does the file it links to.
fn merge_index(base: &str, local: &str, server: &str) -> String {
    use memsync_core::index::{Index, merge};
    merge(
        &Index::parse(base),
        &Index::parse(local),
        &Index::parse(server),
    )
    .render()
}

/// After an accepted push: when the push's revision directly follows the one the team dir
/// reflects, nobody else pushed in between, and the answer carried every change of that revision
/// (now applied, or kept as a local edit to push), so the team dir reflects it as a pull would
/// have. Otherwise the revisions in between are someone else's and the next pull brings them.
fn record_own_revision(state: &mut State, resp: &PushResponse) {
    if resp.created_revision && resp.revision == state.revision + 1 {
        state.revision = resp.revision;
        // The next pull asks from here without a stale tag (a cheap empty answer).
        state.etag = None;
    }
}

/// How the local team dir differs from what was last synced.
#[derive(Debug, Default, Serialize)]
pub struct LocalStatus {
    pub modified: Vec<String>,
    pub added: Vec<String>,
    pub deleted: Vec<String>,
    /// Local changes a push made into proposals, unchanged since (as the state recorded them).
    pub proposed: Vec<ProposedNote>,
    pub conflicts: Vec<PathNote>,
    pub refused: Vec<RefusedNote>,
    pub skipped: Vec<PathNote>,
}

/// The live paths of a pull that cannot join what the team dir holds: each collides, as file and
/// directory or by letter case, with a path synced before or with an earlier one of the pull.
/// What is already synced wins; among new paths, indexes first, then the older revision.
fn clashes_with_local(state: &State, incoming: &[FileState]) -> BTreeMap<String, Clash> {
    let deleted: BTreeSet<&str> = incoming
        .iter()
        .filter(|f| f.deleted)
        .map(|f| f.path.as_str())
        .collect();
    let (mut tree, _) = PathTree::build(
        state
            .files
            .keys()
            .map(String::as_str)
            .filter(|p| !deleted.contains(p)),
    );
    let mut live: Vec<&FileState> = incoming.iter().filter(|f| !f.deleted).collect();
    live.sort_by_key(|f| {
        let index = f.path.rsplit('/').next() == Some(memsync_core::path::INDEX_FILE);
        (!index, f.revision, f.path.as_str())
    });
    let mut out = BTreeMap::new();
    for f in live {
        if let Err(c) = tree.insert(&f.path) {
            out.insert(f.path.clone(), c);
        }
    }
    out
}

/// The refusals the server would answer for the batch's on-disk layout (`path_clash`) and its
/// team feedback (`feedback_conflict`), predicted with the server's own rules over the team dir
/// as last synced: the synced paths and the files on disk that the batch does not change.
fn predict_refusal(
    team_dir: &TeamDir,
    state: &State,
    scan: &crate::fsops::Scan,
    changes: &[PushChange],
) -> Option<Predicted> {
    let checked: Vec<policy::CheckedChange> = changes
        .iter()
        .filter_map(|c| {
            Some(policy::CheckedChange {
                path: MemoryPath::parse(&c.path).ok()?,
                op: c.op,
                base: c.base_sha256,
                content: c.content.clone(),
                named_paths: c.named_paths.clone(),
            })
        })
        .collect();
    let to_notes = |failures: Vec<memsync_core::wire::Failure>| {
        failures
            .into_iter()
            .map(|f| RefusedNote {
                path: f.path,
                rule: f.rule,
                message: f.message,
            })
            .collect::<Vec<_>>()
    };
    let layout = policy::layout_failures(&checked, state.files.keys().map(String::as_str));
    if !layout.is_empty() {
        return Some(Predicted::Layout(to_notes(layout)));
    }
    let batch: Vec<(&str, &str)> = changes
        .iter()
        .filter_map(|c| Some((c.path.as_str(), c.content.as_deref()?)))
        .collect();
    // Only feedback the batch writes is compared with the team's: without any, the rest of the
    // team dir is not read.
    if !batch
        .iter()
        .any(|(p, t)| policy::counts_as_memory(p) && policy::is_feedback(t))
    {
        return None;
    }
    // The server's copies: synced files unchanged since (a changed file is in the batch, or
    // refused locally and not sent). One that cannot be read now is left out: the server's
    // own check still runs.
    let texts: Vec<(String, String)> = scan
        .files
        .iter()
        .filter(|(p, f)| state.files.get(*p).is_some_and(|t| t.sha256 == f.sha256))
        .filter_map(|(p, f)| {
            let bytes = f.bytes(team_dir, p).ok().flatten()?;
            Some((p.clone(), String::from_utf8_lossy(&bytes).into_owned()))
        })
        .collect();
    let team: Vec<(&str, &str)> = texts
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    policy::team_feedback(&batch, &team)
        .err()
        .map(Predicted::Feedback)
}

/// A refusal the client predicts: the layout's (final), or team feedback's (which the server,
/// with a model judge, may see otherwise).
enum Predicted {
    Layout(Vec<RefusedNote>),
    Feedback(Vec<policy::FeedbackConflict>),
}

/// What a scan may take as known without reading: each synced file's stamp, with its hash.
fn known_stamps(state: &State) -> impl Fn(&str) -> Option<(crate::fsops::Stamp, Sha256)> + '_ {
    |path| {
        let t = state.files.get(path)?;
        Some((t.stamp?, t.sha256))
    }
}

/// Records the stamp of every file the scan read that holds its synced version and had been
/// left alone for a while at `now` (read before the scan).
fn stamp_unchanged(state: &mut State, scan: &crate::fsops::Scan, now: i64) {
    for (path, lf) in &scan.files {
        let Some(stamp) = lf.stamp.filter(|s| lf.content.is_some() && s.settled(now)) else {
            continue;
        };
        if let Some(t) = state.files.get_mut(path)
            && t.sha256 == lf.sha256
        {
            t.stamp = Some(stamp);
        }
    }
}

pub fn local_status(team: &TeamDir, state: &State) -> Result<LocalStatus, FsError> {
    let scan = team.scan_known(known_stamps(state))?;
    let mut st = LocalStatus::default();
    let waiting = |path: &str, disk: Option<Sha256>| {
        state.proposed.get(path).is_some_and(|r| r.matches(disk))
    };
    for (path, lf) in &scan.files {
        if state.conflicts.contains_key(path) || waiting(path, Some(lf.sha256)) {
            continue;
        }
        match state.files.get(path) {
            Some(t) if t.sha256 == lf.sha256 => {}
            _ if state
                .refused
                .get(path)
                .is_some_and(|r| r.local_sha256 == lf.sha256) => {}
            Some(_) => st.modified.push(path.clone()),
            None => st.added.push(path.clone()),
        }
    }
    for path in state.files.keys() {
        if !scan.files.contains_key(path)
            && !state.conflicts.contains_key(path)
            && !waiting(path, None)
        {
            st.deleted.push(path.clone());
        }
    }
    for (path, r) in &state.proposed {
        if waiting(path, scan.files.get(path).map(|f| f.sha256)) {
            st.proposed.push(ProposedNote::of(path, r));
        }
    }
    for (path, c) in &state.conflicts {
        st.conflicts.push(PathNote {
            path: path.clone(),
            reason: c.reason.clone(),
        });
    }
    for (path, r) in &state.refused {
        if scan
            .files
            .get(path)
            .is_some_and(|f| f.sha256 == r.local_sha256)
        {
            st.refused.push(RefusedNote {
                path: path.clone(),
                rule: r.rule.clone(),
                message: r.message.clone(),
            });
        }
    }
    st.skipped = scan
        .skipped
        .into_iter()
        .map(|(path, reason)| PathNote { path, reason })
        .collect();
    Ok(st)
}

/// Which side `resolve` keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    Local,
    Server,
    Merged,
}

pub const CONFLICT_MARKER: &str = "<<<<<<<";

/// Settles a conflict. Returns a human sentence of what happened.
pub fn resolve(
    team: &TeamDir,
    store: &StateStore,
    state: &mut State,
    path: &MemoryPath,
    take: Take,
) -> Result<String, SyncError> {
    let p = path.as_str();
    let Some(conflict) = state.conflicts.get(p).cloned() else {
        return Err(SyncError::Usage(format!(
            "{p} has no open conflict (see `memsync status`)"
        )));
    };
    let server = store.server_version(p);
    let disk = team.read(path)?;
    let disk_sha = disk.as_deref().map(Sha256::of);
    let done = |state: &mut State| {
        state.conflicts.remove(p);
        store.clear_server_version(p);
    };
    let msg = match take {
        Take::Local | Take::Merged => {
            if take == Take::Merged {
                let text = disk
                    .as_deref()
                    .map(String::from_utf8_lossy)
                    .unwrap_or_default();
                if disk_sha == conflict.local_sha256 {
                    // First step: put both sides into the file, with conflict markers, to edit.
                    let base = state
                        .files
                        .get(p)
                        .and_then(|t| store.base_content(p, &t.sha256))
                        .map(|b| String::from_utf8_lossy(&b).into_owned())
                        .unwrap_or_default();
                    let theirs = server
                        .as_deref()
                        .map(String::from_utf8_lossy)
                        .unwrap_or_default();
                    let marked = match diffy::merge(&base, &text, &theirs) {
                        Ok(m) | Err(m) => m,
                    };
                    team.write(path, marked.as_bytes(), disk_sha)?;
                    return Ok(format!(
                        "{p} now holds both versions with conflict markers; edit it, then run `memsync resolve {p} --take merged` again"
                    ));
                }
                if text.contains(CONFLICT_MARKER) {
                    return Err(SyncError::Refused(format!(
                        "{p} still has conflict markers ({CONFLICT_MARKER}); finish editing it first"
                    )));
                }
            }
            match (conflict.server_sha256, &server) {
                (Some(s), Some(content)) => {
                    store.set_base(p, content)?;
                    let t = state
                        .files
                        .entry(p.to_owned())
                        .or_insert(crate::state::Tracked {
                            sha256: s,
                            updated_at: None,
                            author: None,
                            named_paths: Vec::new(),
                            stamp: None,
                        });
                    t.sha256 = s;
                    t.stamp = None;
                }
                // The server deleted it: the local file will be created again by the next push.
                _ => {
                    state.files.remove(p);
                    store.remove_base(p);
                }
            }
            done(state);
            format!("{p}: your version will replace the server's on the next `memsync push`")
        }
        Take::Server => {
            if let Some(d) = &disk {
                let backup = store.backup_local(p, d)?;
                eprintln!(
                    "memsync: your version of {p} is saved at {}",
                    backup.display()
                );
            }
            match (conflict.server_sha256, &server) {
                (Some(s), Some(content)) => {
                    if team.write(path, content, disk_sha)? == Written::Changed {
                        return Err(SyncError::Refused(format!(
                            "{p} changed while resolving; run resolve again"
                        )));
                    }
                    store.set_base(p, content)?;
                    state.files.insert(
                        p.to_owned(),
                        crate::state::Tracked {
                            sha256: s,
                            updated_at: None,
                            author: None,
                            named_paths: Vec::new(),
                            stamp: None,
                        },
                    );
                }
                _ => {
                    if let Some(d) = disk_sha {
                        team.remove(path, d)?;
                    }
                    state.files.remove(p);
                    store.remove_base(p);
                }
            }
            done(state);
            format!("{p}: took the server's version")
        }
    };
    team.flush()?;
    store.save(state)?;
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_edited_on_both_sides_merges_by_entry() {
        let base = "- [A](a.md) — a\n";
        let local = "- [A](a.md) — a\n- [CI](ci.md) — how CI runs\n- [Mine](mine.md) — waits\n";
        let server = "- [A](a.md) — a\n- [ci](ci.md) — about ci\n- [B](b.md) — b\n";
        let m = merge_index(base, local, server);
        assert_eq!(m.matches("(ci.md)").count(), 1, "{m}");
        assert!(m.contains("(b.md)") && m.contains("(mine.md)"), "{m}");
        // Nothing of ours beyond the server's: the server's file, exactly.
        assert_eq!(merge_index(base, base, server), server);
    }

    #[test]
    fn a_file_waiting_for_review_is_neither_ahead_nor_forgotten() {
        let tmp = tempfile::tempdir().unwrap();
        let team = TeamDir::open(tmp.path()).unwrap();
        let write = |p: &str, text: &str| std::fs::write(tmp.path().join(p), text).unwrap();
        write("new.md", "proposed\n");
        write("edited.md", "proposed edit\n");
        write("changed.md", "edited again after proposing\n");
        let record = |op, text: Option<&str>| ProposedRecord {
            id: 7,
            op,
            sha256: text.map(|t| Sha256::of(t.as_bytes())),
            status: ProposalStatus::Pending,
            reason: None,
            at: String::new(),
        };
        let tracked = |text: &str| Tracked {
            sha256: Sha256::of(text.as_bytes()),
            updated_at: None,
            author: None,
            named_paths: Vec::new(),
            stamp: None,
        };
        let mut state = State::default();
        state.files.insert("edited.md".into(), tracked("base\n"));
        state.files.insert("changed.md".into(), tracked("base\n"));
        state.files.insert("gone.md".into(), tracked("base\n"));
        state
            .proposed
            .insert("new.md".into(), record(PushOp::Put, Some("proposed\n")));
        state.proposed.insert(
            "edited.md".into(),
            record(PushOp::Put, Some("proposed edit\n")),
        );
        state
            .proposed
            .insert("changed.md".into(), record(PushOp::Put, Some("proposed\n")));
        state
            .proposed
            .insert("gone.md".into(), record(PushOp::Delete, None));
        let st = local_status(&team, &state).unwrap();
        // Only the file changed since its proposal is ahead again (the next push sends it).
        assert_eq!(st.modified, ["changed.md"]);
        assert!(st.added.is_empty() && st.deleted.is_empty(), "{st:?}");
        let waiting: Vec<&str> = st.proposed.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(waiting, ["edited.md", "gone.md", "new.md"]);
        // A proposed delete stops matching once the file is back.
        assert!(record(PushOp::Delete, None).matches(None));
        assert!(!record(PushOp::Delete, None).matches(Some(Sha256::of(b"x"))));
        assert!(!record(PushOp::Put, Some("a")).matches(None));
    }

    #[test]
    fn only_a_push_right_after_the_last_revision_is_recorded() {
        let resp = |revision, created_revision| PushResponse {
            project: "acme/api".into(),
            revision,
            created_revision,
            changes: Vec::new(),
            merged: Vec::new(),
            proposed: Vec::new(),
        };
        // (state revision, push answer, created a revision, recorded revision)
        for (at, answered, created, want) in [
            (4, 5, true, 5),  // ours, nothing in between
            (0, 1, true, 1),  // the project's first push
            (4, 6, true, 4),  // revision 5 is someone else's: pull it first
            (4, 4, false, 4), // nothing new
            (4, 7, false, 4), // nothing of ours, others pushed
        ] {
            let mut state = State {
                revision: at,
                etag: Some(format!("\"r{at}\"")),
                ..State::default()
            };
            record_own_revision(&mut state, &resp(answered, created));
            assert_eq!(state.revision, want, "at {at}, answered {answered}");
            assert_eq!(
                state.etag.is_none(),
                want != at,
                "at {at}, answered {answered}"
            );
        }
    }
}
