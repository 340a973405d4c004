//! A push, top to bottom: `push` (idempotency, then one transaction) runs `screen` (the checks
//! that need no lock: the batch's static rules and the scanner, and the keys it will look up),
//! takes the project `lock`, reads what it needs in one `snapshot`, then `apply`: the
//! `layout_rules`, `plan` (each file's decision), `check` (the rules over the whole batch) and
//! `commit` (the revision, its audit rows and the stored answer, in one statement). Under
//! `review = required`, a push by a member who is not a reviewer runs `propose` (in
//! `propose.rs`) instead of `apply`: the same rules up to the plan, then proposals instead of a
//! revision. A refusal at any step is a `Stop`: the transaction rolls back and the refusal is
//! audited on its own.
//!
//! The project lock serialises a project's pushes, so the time it is held bounds a project's
//! pushes per second: in the common case (files that exist, no merge, no feedback rule, no
//! index to rebuild) it is held for four round trips: lock, snapshot, commit statement, COMMIT.

use std::collections::{BTreeMap, HashMap};
use tracing::Instrument;

use memsync_core::policy::{self, CheckedChange};
use memsync_core::wire::{
    Conflict, ConflictDetails, Failure, FileState, Provenance, PushOp, PushRequest, PushResponse,
    ValidationDetails, VersionProvenance,
};
use memsync_core::{ProjectId, Sha256};
use serde_json::json;
use sqlx::{PgConnection, PgPool};

use super::decide::{Decision, decide};
use super::layout::{BatchKeys, layout_rules};
use super::{PushMeta, PushOutcome, SyncLimits, feedback, index, propose};
use crate::auth::Principal;
use crate::bus::announce::Announcer;
use crate::error::{ApiError, ApiResult};
use crate::store::audit::{self, AuditEvent};
use crate::store::idempotency;
use crate::store::memories::{
    self, Author, NewState, PushSnapshot, RevisionRecord, Stored, rfc3339,
};

/// A push that stopped before committing: the error to answer and the audit event that records
/// the refusal (written after the transaction is rolled back, outside it).
pub struct Stop {
    error: ApiError,
    audit: Option<(&'static str, serde_json::Value)>,
}

impl Stop {
    pub(super) fn audited(audit: (&'static str, serde_json::Value), error: ApiError) -> Stop {
        Stop {
            error,
            audit: Some(audit),
        }
    }

    pub(super) fn refused(failures: Vec<Failure>) -> Stop {
        let details = refusal_details(&failures);
        Stop::audited(("push_refused", details), validation_failed(failures))
    }

    /// Records the refusal (if any) and gives the error to answer.
    async fn finish(self, pool: &PgPool, audit_base: &AuditEvent<'_>) -> ApiError {
        if let Some((action, details)) = self.audit
            && let Err(e) = audit::record(
                pool,
                &AuditEvent {
                    action,
                    details,
                    ..audit_base.clone()
                },
            )
            .await
        {
            tracing::error!(error = %e, "could not write the audit log");
        }
        self.error
    }
}

/// Whether the pusher reviews the project's team: asked of the database at most once per push,
/// and only when a rule needs to know.
pub(super) struct Reviewer<'a> {
    principal: &'a Principal,
    project: &'a ProjectId,
    known: Option<bool>,
}

impl<'a> Reviewer<'a> {
    fn new(principal: &'a Principal, project: &'a ProjectId) -> Self {
        Reviewer {
            principal,
            project,
            // Team admins and server admins review without a grant.
            known: principal.is_team_admin(project).then_some(true),
        }
    }

    pub(super) async fn is(&mut self, conn: &mut PgConnection) -> sqlx::Result<bool> {
        if let Some(k) = self.known {
            return Ok(k);
        }
        let k = crate::review::is_reviewer(&mut *conn, self.principal, self.project.team()).await?;
        self.known = Some(k);
        Ok(k)
    }
}

impl<E: Into<ApiError>> From<E> for Stop {
    fn from(e: E) -> Stop {
        Stop {
            error: e.into(),
            audit: None,
        }
    }
}

fn audit_base<'a>(meta: &'a PushMeta<'a>) -> AuditEvent<'a> {
    let actor = &meta.principal.claims;
    AuditEvent {
        team: Some(meta.project.team()),
        project: Some(meta.project.as_str()),
        actor_sub: &actor.sub,
        actor_name: Some(&actor.name),
        action: "",
        path: None,
        revision: None,
        request_id: meta.request_id,
        details: json!({}),
    }
}

/// A client's push, in its own transaction. Its new revision is announced by `announcer` once
/// committed (see `crate::bus::announce`); every other writer goes through [`push_in`].
pub async fn push(
    pool: &PgPool,
    announcer: &Announcer,
    limits: SyncLimits,
    meta: PushMeta<'_>,
    req: PushRequest,
) -> ApiResult<PushOutcome> {
    let project = meta.project;
    let actor = &meta.principal.claims;
    let audit_base = audit_base(&meta);
    if let Some(key) = meta.idempotency_key
        && let Some(stored) = idempotency::find(pool, project.into(), &actor.sub, key).await?
    {
        return replay(stored, &meta.request_hash);
    }
    let checked = screen(pool, limits, &meta, &audit_base, &req)
        .instrument(tracing::info_span!(
            "push.screen",
            memsync.project = %project,
            memsync.changes = req.changes.len()
        ))
        .await?;
    let keys = BatchKeys::of(&checked);
    // The model judge, if one is configured, is asked before the transaction: no lock is held
    // while it thinks (bounded by its deadline).
    let judged = feedback::prejudge(pool, project, &checked).await?;

    // The database work of the push: lock, decide, write, commit.
    let span = tracing::info_span!(
        "push.transaction",
        db.system.name = "postgresql",
        memsync.project = %project,
        memsync.changes = req.changes.len(),
        memsync.revision = tracing::field::Empty,
    );
    async {
        let mut tx = pool.begin().await?;
        let locked = lock(&mut tx, project, true).await?;
        let mut snapshot = keys.snapshot(&mut tx, &meta, meta.idempotency_key).await?;
        // A concurrent retry with the same key may have committed while we waited for the lock.
        if let Some(stored) = snapshot.replay.take() {
            return replay(stored, &meta.request_hash);
        }
        let mut reviewer = Reviewer::new(meta.principal, project);
        let proposes =
            reviewer.known.is_none() && locked.review_required && !reviewer.is(&mut tx).await?;
        let applied = if proposes {
            propose::propose(
                &mut tx,
                limits,
                &meta,
                &locked,
                (checked, snapshot, judged),
                &req,
                &mut reviewer,
            )
            .await
            .map(|r| (r, false))
        } else {
            apply(
                &mut tx,
                limits,
                &meta,
                &locked,
                (checked, snapshot, judged),
                &req,
                &mut reviewer,
            )
            .await
        };
        let (response, key_stored) = match applied {
            Ok(r) => r,
            Err(stop) => {
                drop(tx);
                return Err(stop.finish(pool, &audit_base).await);
            }
        };
        // Proposals were made (or matched): accepted for review, nothing published.
        let status = if response.proposed.is_empty() {
            200
        } else {
            202
        };
        if let Some(key) = meta.idempotency_key.filter(|_| !key_stored) {
            let body = serde_json::to_value(&response).map_err(|e| ApiError::Internal(e.into()))?;
            if !idempotency::store(
                &mut *tx,
                project.into(),
                &actor.sub,
                key,
                &meta.request_hash,
                status,
                &body,
            )
            .await?
            {
                // A concurrent retry with this key committed first: answer as it did.
                drop(tx);
                return match idempotency::find(pool, project.into(), &actor.sub, key).await? {
                    Some(stored) => replay(stored, &meta.request_hash),
                    None => Err(ApiError::Unavailable {
                        message:
                            "a request with this Idempotency-Key is being applied; retry shortly"
                                .into(),
                    }),
                };
            }
        }
        // Armed before the commit: a request cancelled while committing still announces.
        let announcement = response
            .created_revision
            .then(|| announcer.pending(project.as_str(), response.revision));
        if let Err(e) = tx.commit().await {
            if let Some(a) = announcement {
                a.cancel();
            }
            return Err(e.into());
        }
        drop(announcement);
        tracing::Span::current().record("memsync.revision", response.revision);
        Ok(if status == 202 {
            PushOutcome::Proposed(response)
        } else {
            PushOutcome::Applied(response)
        })
    }
    .instrument(span)
    .await
}

/// Applies a batch inside the caller's transaction, which it may extend (an admin action adds its
/// own audit row, a purge erases history, an approval closes its proposal) before committing:
/// the action and its record commit together or not at all. A refusal is audited on its own and
/// the caller must roll back. It always publishes: the callers (admin writes, approvals) are
/// reviewers.
pub async fn push_in(
    tx: &mut PgConnection,
    pool: &PgPool,
    limits: SyncLimits,
    meta: &PushMeta<'_>,
    req: &PushRequest,
) -> ApiResult<PushResponse> {
    let audit_base = audit_base(meta);
    let checked = screen(pool, limits, meta, &audit_base, req).await?;
    let keys = BatchKeys::of(&checked);
    // Before the lock, on a connection of its own (the caller's transaction waits, bounded by
    // the judge's deadline).
    let judged = feedback::prejudge(pool, meta.project, &checked).await?;
    let locked = lock(tx, meta.project, false).await?;
    let snapshot = keys.snapshot(tx, meta, None).await?;
    let mut reviewer = Reviewer::new(meta.principal, meta.project);
    let batch = (checked, snapshot, judged);
    match apply(tx, limits, meta, &locked, batch, req, &mut reviewer).await {
        Ok((r, _)) => Ok(r),
        Err(stop) => Err(stop.finish(pool, &audit_base).await),
    }
}

/// Step 1, before any lock: the checks that need no database state: the static batch rules, then the scan for secrets and injection
/// payloads (the whole batch is refused on any finding the project's allowlist does not name).
async fn screen(
    pool: &PgPool,
    limits: SyncLimits,
    meta: &PushMeta<'_>,
    audit_base: &AuditEvent<'_>,
    req: &PushRequest,
) -> ApiResult<Vec<CheckedChange>> {
    let checked = match policy::check_batch(req, limits.file) {
        Ok(c) => c,
        Err(failures) => return Err(Stop::refused(failures).finish(pool, audit_base).await),
    };
    let (checked, mut findings) = tokio::task::spawn_blocking(move || {
        let findings = policy::scan_batch(&checked);
        (checked, findings)
    })
    .await
    .map_err(|e| ApiError::Internal(e.into()))?;
    if !findings.is_empty() {
        let allowed = crate::store::allowlist::fingerprints(pool, meta.project).await?;
        findings = policy::allowlisted(findings, &allowed);
        if !findings.is_empty() {
            return Err(Stop::refused(findings).finish(pool, audit_base).await);
        }
    }
    Ok(checked)
}

/// Locks the project row (creating the project on its first push); pushes to one project are
/// applied one at a time.
async fn lock(
    tx: &mut PgConnection,
    project: &ProjectId,
    announce_after_commit: bool,
) -> ApiResult<memories::LockedProject> {
    let locked = match memories::lock_project(&mut *tx, project, announce_after_commit).await? {
        Some(l) => l,
        None => {
            memories::ensure_project(&mut *tx, project).await?;
            memories::lock_project(&mut *tx, project, announce_after_commit)
                .await?
                .ok_or_else(|| {
                    ApiError::Internal(anyhow::anyhow!("project vanished after creation"))
                })?
        }
    };
    if locked.archived {
        return Err(ApiError::Unprocessable {
            code: "project_archived",
            message: format!("{project} is archived (read-only); a team admin can unarchive it"),
            details: json!({}),
        });
    }
    Ok(locked)
}

/// Everything under the project lock, in three steps: `plan` decides each file, `check` holds the
/// plan to the rules over the whole batch, `commit` writes the revision and its audit rows (and,
/// for a client's push, its stored answer: the `bool`, true when it was stored).
async fn apply(
    tx: &mut PgConnection,
    limits: SyncLimits,
    meta: &PushMeta<'_>,
    locked: &memories::LockedProject,
    (checked, snapshot, judged): (Vec<CheckedChange>, PushSnapshot, feedback::Judged),
    req: &PushRequest,
    reviewer: &mut Reviewer<'_>,
) -> Result<(PushResponse, bool), Stop> {
    let failures = layout_rules(meta, &checked, req.allow_purged, &snapshot);
    if !failures.is_empty() {
        return Err(Stop::refused(failures));
    }
    let mut plan = plan(
        &mut *tx,
        meta.project,
        &checked,
        snapshot.current,
        limits.file.max_file_bytes,
        reviewer,
    )
    .await?;
    if matches!(meta.kind, "disable" | "rescan") {
        // A disable is a tombstone that `enable` can undo: the version stays in history.
        for w in plan.writes.values_mut() {
            w.disabled = w.content.is_none();
        }
    }
    plan.judged = judged;
    let ready = check(&mut *tx, limits, meta, locked, &checked, plan, req).await?;
    Ok(commit(&mut *tx, meta, locked, ready, req.provenance.as_ref()).await?)
}

/// What the batch does, file by file, before the rules over the whole batch.
pub(super) struct Plan {
    /// Memory writes and deletes, by path.
    pub(super) writes: BTreeMap<String, NewState>,
    /// Index files the client sent (base, content): merged by `index::maintain`, not decided here.
    pushed_indexes: BTreeMap<String, (Option<Sha256>, Option<String>)>,
    /// The stored state of every path the plan touches.
    current: HashMap<String, Stored>,
    /// What the model judge said of the batch's feedback pairs before the lock.
    judged: feedback::Judged,
}

/// Step 2: each file's decision against the stored state (`decide`); any conflict stops the
/// whole batch, with the server's versions in the answer. A disabled memory is written again
/// only by a reviewer (deliberately); anyone else is told how to bring it back.
pub(super) async fn plan(
    tx: &mut PgConnection,
    project: &ProjectId,
    checked: &[CheckedChange],
    current: HashMap<String, Stored>,
    max_file_bytes: usize,
    reviewer: &mut Reviewer<'_>,
) -> Result<Plan, Stop> {
    let disabled: Vec<&str> = checked
        .iter()
        .filter(|c| c.op == PushOp::Put)
        .map(|c| c.path.as_str())
        .filter(|p| current.get(*p).is_some_and(|s| s.disabled))
        .collect();
    if !disabled.is_empty() && !reviewer.is(&mut *tx).await? {
        return Err(Stop::refused(
            disabled
                .into_iter()
                .map(|p| {
                    Failure::new(
                        p.to_owned(),
                        "memory_disabled",
                        format!(
                            "{p} was disabled by a reviewer of team `{}`: it is kept but not distributed, and only a reviewer can bring it back (`memsync admin enable {p}`). Remove your copy, or ask a reviewer",
                            project.team()
                        ),
                        None,
                    )
                })
                .collect(),
        ));
    }
    let mut writes = BTreeMap::new();
    let mut pushed_indexes = BTreeMap::new();
    let mut conflicts = Vec::new();
    for change in checked {
        let path = change.path.as_str();
        if change.path.is_index() {
            pushed_indexes.insert(path.to_owned(), (change.base, change.content.clone()));
            continue;
        }
        let cur = current.get(path);
        let live = cur.filter(|c| !c.deleted);
        let base_text = match (change.op, change.base, live) {
            (PushOp::Put, Some(base), Some(l)) if Some(base) != l.sha256 => {
                memories::version_content(&mut *tx, project, path, &base).await?
            }
            _ => None,
        };
        let content = match decide(change, cur, base_text.as_deref(), max_file_bytes) {
            Decision::Write { content, merged } => (Some(content), merged),
            Decision::Delete => (None, false),
            Decision::Noop => continue,
            Decision::Conflict(reason) => {
                conflicts.push(Conflict {
                    path: path.to_owned(),
                    reason: reason.to_owned(),
                    base_sha256: change.base,
                    server: cur.map(|c| c.to_file_state(path)),
                });
                continue;
            }
        };
        let (content, merged) = content;
        writes.insert(
            path.to_owned(),
            NewState {
                path: path.to_owned(),
                named_paths: if content.is_some() {
                    change.named_paths.clone()
                } else {
                    Vec::new()
                },
                content,
                merged,
                disabled: false,
            },
        );
    }
    if !conflicts.is_empty() {
        return Err(conflicted(conflicts));
    }
    Ok(Plan {
        writes,
        pushed_indexes,
        current,
        judged: feedback::Judged::default(),
    })
}

fn conflicted(conflicts: Vec<Conflict>) -> Stop {
    let n = conflicts.len();
    let paths: Vec<String> = conflicts.iter().map(|c| c.path.clone()).collect();
    let reasons: Vec<&str> = conflicts.iter().map(|c| c.reason.as_str()).collect();
    let message = format!(
        "{n} file(s) could not be applied over the server's version ({}); nothing was applied. \
         The server's versions are in `details.conflicts`",
        reasons.join(", ")
    );
    Stop::audited(
        (
            "push_conflict",
            json!({ "paths": paths, "reasons": reasons }),
        ),
        ApiError::Conflict {
            message,
            details: serde_json::to_value(ConflictDetails { conflicts }).unwrap_or_default(),
        },
    )
}

/// What `check` lets through: every new state (memories and the indexes that follow them) and
/// the project's live-file and byte deltas.
struct Ready {
    states: Vec<NewState>,
    files_delta: i64,
    bytes_delta: i64,
}

/// Step 3: the rules over the whole plan: team feedback (a superseded rule is deleted with the
/// push), the mass-delete hold, the indexes (which follow their memories), the file limit.
async fn check(
    tx: &mut PgConnection,
    limits: SyncLimits,
    meta: &PushMeta<'_>,
    locked: &memories::LockedProject,
    checked: &[CheckedChange],
    mut plan: Plan,
    req: &PushRequest,
) -> Result<Ready, Stop> {
    let project = meta.project;
    supersede(&mut *tx, project, checked, &mut plan).await?;

    let deletes = plan.writes.values().filter(|w| w.content.is_none()).count();
    hold_mass_delete(&mut *tx, project, locked, deletes, req.allow_mass_delete).await?;

    let idx = index::maintain(
        &mut *tx,
        project,
        index::IndexInput {
            writes: &plan.writes,
            current: &plan.current,
            pushed: &plan.pushed_indexes,
        },
    )
    .await?;
    if !idx.failures.is_empty() {
        return Err(Stop::refused(idx.failures));
    }
    let mut states: Vec<NewState> = std::mem::take(&mut plan.writes).into_values().collect();
    states.extend(idx.states);

    let (files_delta, bytes_delta) = deltas(&mut *tx, project, &plan.current, &states).await?;
    if files_delta > 0 && locked.files + files_delta > limits.max_files_per_project {
        return Err(Stop::refused(vec![Failure::new(
            String::new(),
            "too_many_files",
            format!(
                "{project} would hold {} files; the limit is {}. Delete stale memories first",
                locked.files + files_delta,
                limits.max_files_per_project
            ),
            None,
        )]));
    }
    if let Some(refused) = over_quota(limits, project, locked, bytes_delta) {
        return Err(refused);
    }
    Ok(Ready {
        states,
        files_delta,
        bytes_delta,
    })
}

/// The storage quota: a batch that grows the project past its quota is refused (under the
/// project lock, against its byte counter, so every replica agrees); one that shrinks it always
/// passes, even over the quota.
fn over_quota(
    limits: SyncLimits,
    project: &ProjectId,
    locked: &memories::LockedProject,
    bytes_delta: i64,
) -> Option<Stop> {
    let quota = limits.quotas.project_quota(project.team())?;
    let would_use = locked.bytes.saturating_add(bytes_delta);
    if bytes_delta <= 0 || would_use <= i64::try_from(quota).unwrap_or(i64::MAX) {
        return None;
    }
    Some(Stop::audited(
        (
            "push_refused",
            json!({ "rules": ["quota_exceeded"], "quota_bytes": quota, "used_bytes": locked.bytes, "would_use_bytes": would_use }),
        ),
        crate::limits::quota_exceeded(project, locked.bytes, would_use, quota, limits.quotas),
    ))
}

/// The mass-delete hold: a batch deleting more than max(50, 10 %) of the project's memories is
/// held unless it says `allow_mass_delete`. Indexes follow their memories: the hold counts
/// memory files on both sides.
pub(super) async fn hold_mass_delete(
    tx: &mut PgConnection,
    project: &ProjectId,
    locked: &memories::LockedProject,
    deletes: usize,
    allowed: bool,
) -> Result<(), Stop> {
    if deletes > policy::MASS_DELETE_FLOOR && !allowed {
        let indexes = memories::live_index_count(&mut *tx, project).await?;
        let live_memories = usize::try_from(locked.files - indexes).unwrap_or(0);
        if let Some(f) = policy::mass_delete(deletes, live_memories, false) {
            return Err(Stop::refused(vec![f]));
        }
    }
    Ok(())
}

/// Team feedback must not contradict other team feedback, unless it supersedes it: the rules it
/// supersedes are deleted in the same revision.
async fn supersede(
    tx: &mut PgConnection,
    project: &ProjectId,
    checked: &[CheckedChange],
    plan: &mut Plan,
) -> Result<(), Stop> {
    match feedback::check(&mut *tx, project, checked, &plan.judged).await? {
        Ok(superseded) => {
            plan.current
                .extend(memories::current(&mut *tx, project, &superseded).await?);
            for path in superseded {
                plan.writes.entry(path.clone()).or_insert(NewState {
                    path,
                    ..NewState::default()
                });
            }
            Ok(())
        }
        Err(conflicts) => {
            let paths: Vec<&str> = conflicts.iter().map(|c| c.path.as_str()).collect();
            let others: Vec<&str> = conflicts.iter().map(|c| c.other.as_str()).collect();
            let audit = (
                "push_refused",
                json!({ "rules": ["feedback_conflict"], "paths": paths, "others": others }),
            );
            Err(Stop::audited(
                audit,
                ApiError::FeedbackConflict {
                    message: format!("nothing was applied: {}", conflicts[0].message()),
                    details: json!({ "conflicts": conflicts }),
                },
            ))
        }
    }
}

/// Live-file and byte deltas of the new states, for the project's counters and the file limit.
async fn deltas(
    tx: &mut PgConnection,
    project: &ProjectId,
    current: &HashMap<String, Stored>,
    states: &[NewState],
) -> ApiResult<(i64, i64)> {
    // Index files the plan did not load (an index created or rewritten by `index::maintain`).
    let extra: Vec<String> = states
        .iter()
        .filter(|s| !current.contains_key(&s.path))
        .map(|s| s.path.clone())
        .collect();
    let index_current = if extra.is_empty() {
        HashMap::new()
    } else {
        memories::current(&mut *tx, project, &extra).await?
    };
    let (mut files_delta, mut bytes_delta) = (0i64, 0i64);
    for s in states {
        let before = current
            .get(&s.path)
            .or_else(|| index_current.get(&s.path))
            .filter(|c| !c.deleted);
        files_delta += i64::from(s.content.is_some()) - i64::from(before.is_some());
        bytes_delta += s.content.as_ref().map_or(0, |c| c.len() as i64)
            - before
                .and_then(|b| b.content.as_ref())
                .map_or(0, |c| c.len() as i64);
    }
    Ok((files_delta, bytes_delta))
}

/// Step 4: the new revision, its audit rows (sizes only: content hashes stay in
/// `memory_versions`, where a purge can erase them), the review items it closes and, for a
/// client's push with an `Idempotency-Key`, its stored answer, in one statement of the caller's
/// transaction. The answer is built first: under the lock the new revision is the locked one
/// plus one, at the transaction's time. The `bool`: the answer was stored with the revision.
async fn commit(
    tx: &mut PgConnection,
    meta: &PushMeta<'_>,
    locked: &memories::LockedProject,
    ready: Ready,
    client: Option<&Provenance>,
) -> ApiResult<(PushResponse, bool)> {
    let project = meta.project;
    let actor = &meta.principal.claims;
    if ready.states.is_empty() {
        return Ok((
            PushResponse {
                project: project.to_string(),
                revision: locked.revision,
                created_revision: false,
                changes: Vec::new(),
                merged: Vec::new(),
                proposed: Vec::new(),
            },
            false,
        ));
    }
    let states = ready.states;
    let provenance = meta
        .provenance
        .clone()
        .unwrap_or_else(|| provenance_of(meta, client));
    let provenance_json =
        serde_json::to_value(&provenance).map_err(|e| ApiError::Internal(e.into()))?;
    let author = Author {
        sub: &actor.sub,
        name: &actor.name,
        email: actor.email.as_deref(),
        request_id: meta.request_id,
        kind: meta.kind,
        note: meta.note,
        provenance: &provenance_json,
    };
    let actions: Vec<&str> = states
        .iter()
        .map(|s| match (&s.content, s.merged) {
            (None, _) => "delete",
            (Some(_), true) => "write_merged",
            (Some(_), false) => "write",
        })
        .collect();
    let details: Vec<serde_json::Value> = states
        .iter()
        .map(|s| {
            json!({
                "size": s.content.as_ref().map_or(0, String::len),
                "provenance": &provenance_json,
            })
        })
        .collect();
    let revision = locked.revision + 1;
    let updated_at = rfc3339(locked.at);
    let response = PushResponse {
        project: project.to_string(),
        revision,
        created_revision: true,
        merged: states
            .iter()
            .filter(|s| s.merged)
            .map(|s| s.path.clone())
            .collect(),
        changes: states
            .iter()
            .map(|s| FileState {
                sha256: s.sha256(),
                path: s.path.clone(),
                revision,
                deleted: s.content.is_none(),
                content: s.content.clone(),
                author: actor.name.clone(),
                updated_at: updated_at.clone(),
                named_paths: s.named_paths.clone(),
            })
            .collect(),
        proposed: Vec::new(),
    };
    let body = match meta.idempotency_key {
        Some(_) => Some(serde_json::to_value(&response).map_err(|e| ApiError::Internal(e.into()))?),
        None => None,
    };
    let written = memories::write_revision(
        &mut *tx,
        project,
        &author,
        &states,
        (ready.files_delta, ready.bytes_delta),
        &RevisionRecord {
            actions: &actions,
            details: &details,
            idempotency: meta
                .idempotency_key
                .zip(body.as_ref())
                .map(|(key, body)| (actor.sub.as_str(), key, meta.request_hash.as_str(), body)),
        },
    )
    .await?;
    // The answer was built for the locked revision plus one at the transaction's time; anything
    // else would be a stored answer that lies.
    if written.revision != revision || written.at != locked.at {
        return Err(ApiError::Internal(anyhow::anyhow!(
            "revision {} at {} written, {revision} at {} expected under the project lock",
            written.revision,
            written.at,
            locked.at
        )));
    }
    Ok((response, written.idempotency_stored && body.is_some()))
}

/// The provenance of a push's versions: who pushed, with which token, and what the client said.
pub fn provenance_of(meta: &PushMeta<'_>, client: Option<&Provenance>) -> VersionProvenance {
    let actor = &meta.principal.claims;
    VersionProvenance {
        author: actor.name.clone(),
        author_sub: actor.sub.clone(),
        token_id: Some(actor.jti.to_string()),
        client: client.cloned().unwrap_or_default(),
        pushed_at: rfc3339(chrono::Utc::now()),
        approved_by: None,
        proposal_id: None,
    }
}

fn replay(stored: idempotency::Stored, request_hash: &str) -> ApiResult<PushOutcome> {
    let (status, body) = crate::idempotent::replayed(stored, request_hash)?;
    Ok(PushOutcome::Replayed(status, body))
}

pub fn validation_failed(failures: Vec<Failure>) -> ApiError {
    let n = failures.len();
    let first = failures
        .first()
        .map(|f| {
            if f.path.is_empty() {
                f.message.clone()
            } else {
                format!("{}: {}", f.path, f.message)
            }
        })
        .unwrap_or_default();
    ApiError::Unprocessable {
        code: "validation_failed",
        message: if n == 1 {
            format!("the push was refused, nothing was applied: {first}")
        } else {
            format!("the push was refused with {n} problems, nothing was applied; first: {first}")
        },
        details: serde_json::to_value(ValidationDetails { failures }).unwrap_or_default(),
    }
}

/// What the audit log keeps of a refused write: rule ids, paths and fingerprints, never content.
fn refusal_details(failures: &[Failure]) -> serde_json::Value {
    let rules: Vec<&str> = failures.iter().map(|f| f.rule.as_str()).collect();
    let paths: Vec<&str> = failures.iter().map(|f| f.path.as_str()).collect();
    let fingerprints: Vec<&str> = failures
        .iter()
        .filter_map(|f| f.fingerprint.as_deref())
        .collect();
    json!({ "rules": rules, "paths": paths, "fingerprints": fingerprints })
}
