//! The sync engine: pull the changes since a revision; push an atomic batch with per-file base
//! versions, merged three-way with concurrent edits where they don't overlap.

pub mod feedback;
pub mod index;

use std::collections::{BTreeMap, HashMap, HashSet};

use memsync_core::merge::merge_text;
use memsync_core::tree::{LookupKeys, PathTree};
use memsync_core::wire::{
    Conflict, ConflictDetails, Failure, PullResponse, PushOp, PushRequest, PushResponse,
    ValidationDetails,
};
use memsync_core::{ProjectId, Sha256};
use serde_json::json;
use sqlx::{PgConnection, PgPool};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::store::audit::{self, AuditEvent};
use crate::store::idempotency;
use crate::store::memories::{self, Author, NewState, Stored, rfc3339};
use memsync_core::policy::{self, CheckedChange, Limits};

#[derive(Debug, Clone, Copy)]
pub struct SyncLimits {
    pub file: Limits,
    pub max_files_per_project: i64,
}

pub enum Pull {
    NotModified { revision: i64 },
    Changes(PullResponse),
}

pub fn etag(revision: i64) -> String {
    format!("\"r{revision}\"")
}

/// A pull: one primary-key lookup answers "nothing changed"; otherwise one range scan.
pub async fn pull(
    pool: &PgPool,
    project: &ProjectId,
    since: i64,
    if_none_match: Option<&str>,
) -> ApiResult<Pull> {
    let revision = memories::revision(pool, project)
        .await?
        .ok_or_else(|| not_found(project))?;
    if let Some(inm) = if_none_match
        && inm.split(',').any(|t| {
            let t = t.trim();
            t == "*" || t.trim_start_matches("W/") == etag(revision)
        })
    {
        return Ok(Pull::NotModified { revision });
    }
    if since < 0 {
        return Err(ApiError::bad_request(
            "invalid_since",
            "`since` is a revision, 0 or more",
        ));
    }
    if since > revision {
        return Err(ApiError::bad_request(
            "since_ahead",
            format!(
                "you are at revision {since} but {project} is at revision {revision} (was the server restored from a backup?); pull again from 0"
            ),
        ));
    }
    let changes = memories::changes_since(pool, project, since, revision).await?;
    Ok(Pull::Changes(PullResponse {
        project: project.to_string(),
        revision,
        since,
        changes,
    }))
}

pub fn not_found(project: &ProjectId) -> ApiError {
    ApiError::NotFound(format!(
        "no project {project} that your token can reach (a project is created by the first push of a member of team `{}`)",
        project.team()
    ))
}

/// Everything about the push that is not its body.
pub struct PushMeta<'a> {
    pub project: &'a ProjectId,
    pub principal: &'a Principal,
    pub request_id: Option<&'a str>,
    pub idempotency_key: Option<&'a str>,
    /// sha256 of the request body, to tell a retry from a different request with the same key.
    pub request_hash: String,
}

pub enum PushOutcome {
    Applied(PushResponse),
    /// The stored answer (status, body) of an earlier push with the same idempotency key.
    Replayed(u16, serde_json::Value),
}

enum Decision {
    Write { content: String, merged: bool },
    Delete,
    Noop,
    Conflict(&'static str),
}

fn decide(
    change: &CheckedChange,
    current: Option<&Stored>,
    base_text: Option<&str>,
    max_file_bytes: usize,
) -> Decision {
    let live = current.filter(|c| !c.deleted);
    match (change.op, live) {
        (PushOp::Delete, None) => Decision::Noop,
        (PushOp::Delete, Some(cur)) => {
            if change.base.is_some() && change.base == cur.sha256 {
                Decision::Delete
            } else {
                // Someone changed it since this client saw it: deleting would lose that edit.
                Decision::Conflict("changed_on_server")
            }
        }
        (PushOp::Put, _) if change.content.is_none() => Decision::Noop,
        (PushOp::Put, None) => {
            let content = change.content.clone().unwrap_or_default();
            match (change.base, current) {
                (None, _) => Decision::Write {
                    content,
                    merged: false,
                },
                (Some(_), Some(c)) if c.deleted => Decision::Conflict("deleted_on_server"),
                (Some(_), _) => Decision::Conflict("unknown_base"),
            }
        }
        (PushOp::Put, Some(cur)) => {
            let ours = change.content.as_deref().unwrap_or_default();
            let theirs = cur.content.as_deref().unwrap_or_default();
            if ours == theirs {
                return Decision::Noop;
            }
            if change.base.is_some() && change.base == cur.sha256 {
                return Decision::Write {
                    content: ours.to_owned(),
                    merged: false,
                };
            }
            let Some(base) = base_text else {
                return Decision::Conflict(if change.base.is_none() {
                    "exists_on_server"
                } else {
                    "unknown_base"
                });
            };
            match merge_text(base, ours, theirs) {
                Ok(m) if m == theirs => Decision::Noop,
                Ok(m) => {
                    // A merge of two valid files can still be invalid (broken frontmatter, too
                    // large, a type change to `user`): the same checks as any write.
                    if policy::check_file(&change.path, m.as_bytes(), max_file_bytes).is_err() {
                        return Decision::Conflict("merge_invalid");
                    }
                    let merged = m != ours;
                    Decision::Write { content: m, merged }
                }
                Err(_) => Decision::Conflict("overlapping_edit"),
            }
        }
    }
}

/// A push that stopped before committing: the error to answer and the audit event that records
/// the refusal (written after the transaction is rolled back, outside it).
pub struct Stop {
    error: ApiError,
    audit: Option<(&'static str, serde_json::Value)>,
}

impl Stop {
    fn audited(audit: (&'static str, serde_json::Value), error: ApiError) -> Stop {
        Stop {
            error,
            audit: Some(audit),
        }
    }

    fn refused(failures: Vec<Failure>) -> Stop {
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

pub async fn push(
    pool: &PgPool,
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
    let checked = check(pool, limits, &meta, &audit_base, &req).await?;

    let mut tx = pool.begin().await?;
    let locked = lock(&mut tx, project).await?;
    // A concurrent retry with the same key may have committed while we waited for the lock.
    if let Some(key) = meta.idempotency_key
        && let Some(stored) = idempotency::find(&mut *tx, project.into(), &actor.sub, key).await?
    {
        return replay(stored, &meta.request_hash);
    }
    let response = match apply(&mut tx, limits, &meta, &locked, checked, &req).await {
        Ok(r) => r,
        Err(stop) => {
            drop(tx);
            return Err(stop.finish(pool, &audit_base).await);
        }
    };
    if let Some(key) = meta.idempotency_key {
        let body = serde_json::to_value(&response).map_err(|e| ApiError::Internal(e.into()))?;
        if !idempotency::store(
            &mut *tx,
            project.into(),
            &actor.sub,
            key,
            &meta.request_hash,
            200,
            &body,
        )
        .await?
        {
            // A concurrent retry with this key committed first: answer as it did.
            drop(tx);
            return match idempotency::find(pool, project.into(), &actor.sub, key).await? {
                Some(stored) => replay(stored, &meta.request_hash),
                None => Err(ApiError::Unavailable {
                    message: "a request with this Idempotency-Key is being applied; retry shortly"
                        .into(),
                }),
            };
        }
    }
    tx.commit().await?;
    Ok(PushOutcome::Applied(response))
}

/// Applies a batch inside the caller's transaction, which it may extend (an admin action adds its
/// own audit row, a purge erases history) before committing: the action and its record commit
/// together or not at all. A refusal is audited on its own and the caller must roll back.
pub async fn push_in(
    tx: &mut PgConnection,
    pool: &PgPool,
    limits: SyncLimits,
    meta: &PushMeta<'_>,
    req: &PushRequest,
) -> ApiResult<PushResponse> {
    let audit_base = audit_base(meta);
    let checked = check(pool, limits, meta, &audit_base, req).await?;
    let locked = lock(tx, meta.project).await?;
    match apply(tx, limits, meta, &locked, checked, req).await {
        Ok(r) => Ok(r),
        Err(stop) => Err(stop.finish(pool, &audit_base).await),
    }
}

/// The checks that need no lock: the static batch rules, then the scan for secrets and injection
/// payloads (the whole batch is refused on any finding the project's allowlist does not name).
async fn check(
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
async fn lock(tx: &mut PgConnection, project: &ProjectId) -> ApiResult<memories::LockedProject> {
    let locked = match memories::lock_project(&mut *tx, project).await? {
        Some(l) => l,
        None => {
            memories::ensure_project(&mut *tx, project).await?;
            memories::lock_project(&mut *tx, project)
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

/// Everything under the project lock: the on-disk layout rules, per-file decisions, feedback,
/// the mass-delete guard, the indexes, the file limit, and the revision itself.
async fn apply(
    tx: &mut PgConnection,
    limits: SyncLimits,
    meta: &PushMeta<'_>,
    locked: &memories::LockedProject,
    checked: Vec<CheckedChange>,
    req: &PushRequest,
) -> Result<PushResponse, Stop> {
    let project = meta.project;
    let actor = &meta.principal.claims;
    let audit_base = audit_base(meta);
    let allow_mass_delete = req.allow_mass_delete;
    layout_rules(&mut *tx, meta, &checked, req.allow_purged).await?;

    let paths: Vec<String> = checked.iter().map(|c| c.path.as_str().to_owned()).collect();
    let mut current = memories::current(&mut *tx, project, &paths).await?;

    let mut writes: BTreeMap<String, NewState> = BTreeMap::new();
    let mut pushed_indexes: BTreeMap<String, (Option<Sha256>, Option<String>)> = BTreeMap::new();
    let mut conflicts = Vec::new();
    for change in &checked {
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
        match decide(
            change,
            cur,
            base_text.as_deref(),
            limits.file.max_file_bytes,
        ) {
            Decision::Write { content, merged } => {
                writes.insert(
                    path.to_owned(),
                    NewState {
                        path: path.to_owned(),
                        content: Some(content),
                        merged,
                    },
                );
            }
            Decision::Delete => {
                writes.insert(
                    path.to_owned(),
                    NewState {
                        path: path.to_owned(),
                        content: None,
                        merged: false,
                    },
                );
            }
            Decision::Noop => {}
            Decision::Conflict(reason) => conflicts.push(Conflict {
                path: path.to_owned(),
                reason: reason.to_owned(),
                base_sha256: change.base,
                server: cur.map(|c| c.to_file_state(path)),
            }),
        }
    }
    if !conflicts.is_empty() {
        let n = conflicts.len();
        let paths: Vec<String> = conflicts.iter().map(|c| c.path.clone()).collect();
        let reasons: Vec<&str> = conflicts.iter().map(|c| c.reason.as_str()).collect();
        let audit = (
            "push_conflict",
            json!({ "paths": paths, "reasons": reasons }),
        );
        return Err(Stop::audited(
            audit,
            ApiError::Conflict {
                message: format!(
                    "{n} file(s) could not be applied over the server's version ({}); nothing was applied. \
                 The server's versions are in `details.conflicts`",
                    reasons.join(", ")
                ),
                details: serde_json::to_value(ConflictDetails { conflicts }).unwrap_or_default(),
            },
        ));
    }

    // Team feedback must not contradict other team feedback, unless it supersedes it.
    match feedback::check(&mut *tx, project, &checked).await? {
        Ok(superseded) => {
            current.extend(memories::current(&mut *tx, project, &superseded).await?);
            for path in superseded {
                writes.entry(path.clone()).or_insert(NewState {
                    path,
                    content: None,
                    merged: false,
                });
            }
        }
        Err(conflicts) => {
            let paths: Vec<&str> = conflicts.iter().map(|c| c.path.as_str()).collect();
            let others: Vec<&str> = conflicts.iter().map(|c| c.other.as_str()).collect();
            let audit = (
                "push_refused",
                json!({ "rules": ["feedback_conflict"], "paths": paths, "others": others }),
            );
            return Err(Stop::audited(
                audit,
                ApiError::FeedbackConflict {
                    message: format!("nothing was applied: {}", conflicts[0].message()),
                    details: json!({ "conflicts": conflicts }),
                },
            ));
        }
    }

    // Indexes follow their memories: the hold counts memory files on both sides.
    let deletes = writes.values().filter(|w| w.content.is_none()).count();
    if deletes > policy::MASS_DELETE_FLOOR && !allow_mass_delete {
        let indexes = memories::live_index_count(&mut *tx, project).await?;
        let live_memories = usize::try_from(locked.files - indexes).unwrap_or(0);
        if let Some(f) = policy::mass_delete(deletes, live_memories, false) {
            return Err(Stop::refused(vec![f]));
        }
    }

    let idx = index::maintain(
        &mut *tx,
        project,
        index::IndexInput {
            writes: &writes,
            current: &current,
            pushed: &pushed_indexes,
        },
    )
    .await?;
    if !idx.failures.is_empty() {
        return Err(Stop::refused(idx.failures));
    }
    let mut states: Vec<NewState> = writes.into_values().collect();
    states.extend(idx.states);

    // Live-file and byte deltas, for the project's counters and the file limit.
    let index_current = if states.iter().any(|s| !current.contains_key(&s.path)) {
        let extra: Vec<String> = states
            .iter()
            .filter(|s| !current.contains_key(&s.path))
            .map(|s| s.path.clone())
            .collect();
        memories::current(&mut *tx, project, &extra).await?
    } else {
        HashMap::new()
    };
    let (mut files_delta, mut bytes_delta) = (0i64, 0i64);
    for s in &states {
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
    if files_delta > 0 && locked.files + files_delta > limits.max_files_per_project {
        let failures = vec![Failure::new(
            String::new(),
            "too_many_files",
            format!(
                "{project} would hold {} files; the limit is {}. Delete stale memories first",
                locked.files + files_delta,
                limits.max_files_per_project
            ),
            None,
        )];
        return Err(Stop::refused(failures));
    }

    let response = if states.is_empty() {
        PushResponse {
            project: project.to_string(),
            revision: locked.revision,
            created_revision: false,
            changes: Vec::new(),
            merged: Vec::new(),
        }
    } else {
        let author = Author {
            sub: &actor.sub,
            name: &actor.name,
            email: actor.email.as_deref(),
            request_id: meta.request_id,
        };
        let (revision, at) = memories::write_revision(
            &mut *tx,
            project,
            &author,
            &states,
            files_delta,
            bytes_delta,
        )
        .await?;
        let paths: Vec<String> = states.iter().map(|s| s.path.clone()).collect();
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
            // Sizes only: hashes of content stay in memory_versions, where a purge can erase them.
            .map(|s| json!({ "size": s.content.as_ref().map_or(0, String::len) }))
            .collect();
        audit::record_paths(
            &mut *tx,
            &AuditEvent {
                revision: Some(revision),
                ..audit_base.clone()
            },
            &paths,
            &actions,
            &details,
        )
        .await?;
        let updated_at = rfc3339(at);
        PushResponse {
            project: project.to_string(),
            revision,
            created_revision: true,
            merged: states
                .iter()
                .filter(|s| s.merged)
                .map(|s| s.path.clone())
                .collect(),
            changes: states
                .into_iter()
                .map(|s| memsync_core::wire::FileState {
                    sha256: s.sha256(),
                    path: s.path,
                    revision,
                    deleted: s.content.is_none(),
                    content: s.content,
                    author: actor.name.clone(),
                    updated_at: updated_at.clone(),
                })
                .collect(),
        }
    };
    Ok(response)
}

/// What the batch would do to the team directory on disk and to purged history: no path may
/// collide with another as file and directory or by letter case (on every filesystem a team
/// uses), and content an admin purged does not come back without a team admin's override.
async fn layout_rules(
    tx: &mut PgConnection,
    meta: &PushMeta<'_>,
    checked: &[CheckedChange],
    allow_purged: bool,
) -> Result<(), Stop> {
    let project = meta.project;
    let mut failures = Vec::new();

    let puts: Vec<&CheckedChange> = checked.iter().filter(|c| c.op == PushOp::Put).collect();
    if !puts.is_empty() {
        let mut keys = LookupKeys::default();
        for c in &puts {
            keys.extend(PathTree::lookup_keys(c.path.as_str()));
        }
        let deleted: HashSet<&str> = checked
            .iter()
            .filter(|c| c.op == PushOp::Delete)
            .map(|c| c.path.as_str())
            .collect();
        let pushed: HashSet<&str> = puts.iter().map(|c| c.path.as_str()).collect();
        let stored =
            memories::clash_candidates(&mut *tx, project, &keys.exact, &keys.prefixes).await?;
        // What stays: the stored paths this batch neither deletes nor rewrites (rewriting a path
        // in its own spelling is no clash), then the batch's own files, in order.
        let (mut tree, _) = PathTree::build(
            stored
                .iter()
                .map(String::as_str)
                .filter(|p| !deleted.contains(p) && !pushed.contains(p)),
        );
        for c in &puts {
            if let Err(clash) = tree.insert(c.path.as_str()) {
                failures.push(Failure::new(
                    c.path.to_string(),
                    clash.rule(),
                    clash.message(),
                    None,
                ));
            }
        }
    }

    let hashes: Vec<String> = puts
        .iter()
        .filter_map(|c| c.content.as_deref())
        .map(|t| Sha256::of(t.as_bytes()).to_hex())
        .collect();
    if !hashes.is_empty() {
        let purged = crate::store::history::purged_hashes(&mut *tx, project, &hashes).await?;
        let overridden = allow_purged && meta.principal.is_team_admin(project);
        if !purged.is_empty() && !overridden {
            for c in &puts {
                let sha = c
                    .content
                    .as_deref()
                    .map(|t| Sha256::of(t.as_bytes()).to_hex());
                if let Some((_, from)) = purged.iter().find(|(h, _)| Some(h) == sha.as_ref()) {
                    failures.push(Failure::new(
                        c.path.to_string(),
                        "purged_content",
                        format!(
                            "this content was purged from {from} by an admin and cannot be pushed again; delete it locally (`memsync pull` after removing the file), or ask a team admin to push it with `allow_purged` if the purge was a mistake"
                        ),
                        None,
                    ));
                }
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(Stop::refused(failures))
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
