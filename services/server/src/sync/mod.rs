//! The sync engine: pull the changes since a revision; push an atomic batch with per-file base
//! versions, merged three-way with concurrent edits where they don't overlap.

pub mod feedback;
pub mod index;
pub mod validate;

use std::collections::{BTreeMap, HashMap};

use memsync_core::merge::merge_text;
use memsync_core::wire::{
    Conflict, ConflictDetails, Failure, PullResponse, PushOp, PushRequest, PushResponse,
    ValidationDetails,
};
use memsync_core::{ProjectId, Sha256};
use serde_json::json;
use sqlx::PgPool;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::store::audit::{self, AuditEvent};
use crate::store::idempotency;
use crate::store::memories::{self, Author, NewState, Stored, rfc3339};
use validate::{CheckedChange, Limits};

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
                    let valid = memsync_core::memory::validate(m.as_bytes(), max_file_bytes)
                        .ok()
                        .is_some_and(|doc| validate::check_team_policy("", &doc).is_ok());
                    if !valid {
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

pub async fn push(
    pool: &PgPool,
    limits: SyncLimits,
    meta: PushMeta<'_>,
    req: PushRequest,
) -> ApiResult<PushOutcome> {
    let project = meta.project;
    let actor = &meta.principal.claims;
    let audit_base = AuditEvent {
        team: Some(project.team()),
        project: Some(project.as_str()),
        actor_sub: &actor.sub,
        actor_name: Some(&actor.name),
        action: "",
        path: None,
        revision: None,
        request_id: meta.request_id,
        details: json!({}),
    };
    if let Some(key) = meta.idempotency_key
        && let Some(stored) = idempotency::find(pool, project, &actor.sub, key).await?
    {
        return replay(stored, &meta.request_hash);
    }

    let checked = match validate::check_batch(&req, limits.file) {
        Ok(c) => c,
        Err(failures) => {
            refuse_audit(pool, &audit_base, "push_refused", &failures).await;
            return Err(validation_failed(failures));
        }
    };
    // Secrets and injection payloads: the whole batch is refused on any finding that the
    // project's allowlist does not name.
    let (checked, mut findings) = tokio::task::spawn_blocking(move || {
        let findings = validate::scan_batch(&checked);
        (checked, findings)
    })
    .await
    .map_err(|e| ApiError::Internal(e.into()))?;
    if !findings.is_empty() {
        let allowed = crate::store::allowlist::fingerprints(pool, project).await?;
        findings.retain(|f| {
            f.fingerprint
                .as_ref()
                .is_none_or(|fp| !allowed.contains(fp))
        });
        if !findings.is_empty() {
            refuse_audit(pool, &audit_base, "push_refused", &findings).await;
            return Err(validation_failed(findings));
        }
    }

    let mut tx = pool.begin().await?;
    let locked = match memories::lock_project(&mut tx, project).await? {
        Some(l) => l,
        None => {
            memories::ensure_project(&mut tx, project).await?;
            memories::lock_project(&mut tx, project)
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
    // A concurrent retry with the same key may have committed while we waited for the lock.
    if let Some(key) = meta.idempotency_key
        && let Some(stored) = idempotency::find(&mut *tx, project, &actor.sub, key).await?
    {
        return replay(stored, &meta.request_hash);
    }

    let paths: Vec<String> = checked.iter().map(|c| c.path.as_str().to_owned()).collect();
    let mut current = memories::current(&mut tx, project, &paths).await?;

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
                memories::version_content(&mut tx, project, path, &base).await?
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
        drop(tx);
        let n = conflicts.len();
        let paths: Vec<String> = conflicts.iter().map(|c| c.path.clone()).collect();
        let reasons: Vec<&str> = conflicts.iter().map(|c| c.reason.as_str()).collect();
        let _ = audit::record(
            pool,
            &AuditEvent {
                action: "push_conflict",
                details: json!({ "paths": paths, "reasons": reasons }),
                ..audit_base.clone()
            },
        )
        .await;
        return Err(ApiError::Conflict {
            message: format!(
                "{n} file(s) could not be applied over the server's version ({}); nothing was applied. \
                 The server's versions are in `details.conflicts`",
                reasons.join(", ")
            ),
            details: serde_json::to_value(ConflictDetails { conflicts }).unwrap_or_default(),
        });
    }

    // Team feedback must not contradict other team feedback, unless it supersedes it.
    match feedback::check(&mut tx, project, &checked).await? {
        Ok(superseded) => {
            current.extend(memories::current(&mut tx, project, &superseded).await?);
            for path in superseded {
                writes.entry(path.clone()).or_insert(NewState {
                    path,
                    content: None,
                    merged: false,
                });
            }
        }
        Err(conflicts) => {
            drop(tx);
            let paths: Vec<&str> = conflicts.iter().map(|c| c.path.as_str()).collect();
            let others: Vec<&str> = conflicts.iter().map(|c| c.other.as_str()).collect();
            let _ = audit::record(
                pool,
                &AuditEvent {
                    action: "push_refused",
                    details: json!({ "rules": ["feedback_conflict"], "paths": paths, "others": others }),
                    ..audit_base.clone()
                },
            )
            .await;
            let first = &conflicts[0];
            return Err(ApiError::FeedbackConflict {
                message: format!(
                    "{} contradicts the team's {} ({}); nothing was applied. Reconcile them, or add `supersedes: {}` to its frontmatter to replace that rule",
                    first.path, first.other, first.reason, first.other
                ),
                details: json!({ "conflicts": conflicts }),
            });
        }
    }

    let deletes = writes.values().filter(|w| w.content.is_none()).count() as i64;
    let threshold = 50.max(locked.files / 10);
    if deletes > threshold && !req.allow_mass_delete {
        drop(tx);
        let failures = vec![Failure::new(
            String::new(),
            "mass_delete",
            format!(
                "this push deletes {deletes} of the project's {} files (more than {threshold}); that is almost always a wiped folder. \
                 Nothing was applied; push with --allow-mass-delete if it is deliberate",
                locked.files
            ),
            None,
        )];
        refuse_audit(pool, &audit_base, "push_refused", &failures).await;
        return Err(validation_failed(failures));
    }

    let idx = index::maintain(
        &mut tx,
        project,
        index::IndexInput {
            writes: &writes,
            current: &current,
            pushed: &pushed_indexes,
        },
    )
    .await?;
    if !idx.failures.is_empty() {
        drop(tx);
        refuse_audit(pool, &audit_base, "push_refused", &idx.failures).await;
        return Err(validation_failed(idx.failures));
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
        memories::current(&mut tx, project, &extra).await?
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
        drop(tx);
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
        refuse_audit(pool, &audit_base, "push_refused", &failures).await;
        return Err(validation_failed(failures));
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
        let (revision, at) =
            memories::write_revision(&mut tx, project, &author, &states, files_delta, bytes_delta)
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
    if let Some(key) = meta.idempotency_key {
        let body = serde_json::to_value(&response).map_err(|e| ApiError::Internal(e.into()))?;
        idempotency::store(
            &mut *tx,
            project,
            &actor.sub,
            key,
            &meta.request_hash,
            200,
            &body,
        )
        .await?;
    }
    tx.commit().await?;
    Ok(PushOutcome::Applied(response))
}

fn replay(stored: idempotency::Stored, request_hash: &str) -> ApiResult<PushOutcome> {
    if stored.request_hash != request_hash {
        return Err(ApiError::Unprocessable {
            code: "idempotency_key_reused",
            message: "this Idempotency-Key was already used for a different push; use a new key for a new push".into(),
            details: json!({}),
        });
    }
    Ok(PushOutcome::Replayed(
        u16::try_from(stored.status).unwrap_or(200),
        stored.response,
    ))
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

/// Audits a refused write with its rule ids and paths only: never the content.
async fn refuse_audit(pool: &PgPool, base: &AuditEvent<'_>, action: &str, failures: &[Failure]) {
    let rules: Vec<&str> = failures.iter().map(|f| f.rule.as_str()).collect();
    let paths: Vec<&str> = failures.iter().map(|f| f.path.as_str()).collect();
    let fingerprints: Vec<&str> = failures
        .iter()
        .filter_map(|f| f.fingerprint.as_deref())
        .collect();
    if let Err(e) = audit::record(
        pool,
        &AuditEvent {
            action,
            details: json!({ "rules": rules, "paths": paths, "fingerprints": fingerprints }),
            ..base.clone()
        },
    )
    .await
    {
        tracing::error!(error = %e, "could not write the audit log");
    }
}
