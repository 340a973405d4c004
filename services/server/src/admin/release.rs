//! Controlled release of published memories: disable (a tombstone that `enable` undoes: the
//! memory leaves every member's team directory and `MEMORY.md` at their next pull, its versions
//! stay), enable (the version the disable hid, published again) and rollback (an older version
//! published as a new revision). Each is one ordinary revision through the sync engine (guards,
//! index upkeep, the export), committed together with its audit row and its idempotent answer.
//!
//! A deleted memory never comes back through any of them: `restore` is the deliberate way back.

use memsync_core::wire::{Conflict, ConflictDetails, PushChange, PushOp, PushResponse};
use memsync_core::{MemoryPath, ProjectId};
use serde_json::json;
use sqlx::PgPool;

use super::memories::{AdminAct, batch, memory_path, stored_state};
use crate::error::{ApiError, ApiResult};
use crate::store::history::{self, StoredContent};
use crate::store::memories::Stored;
use crate::sync::{PushMeta, SyncLimits};

/// Hides a live memory from every member: a disabling tombstone, audited `memory_disabled`.
pub async fn disable(
    pool: &PgPool,
    limits: SyncLimits,
    act: &AdminAct<'_>,
    path: &str,
) -> ApiResult<PushResponse> {
    let reason = reason(act)?;
    let path = memory_path(path, "disable")?;
    let state = state_of(pool, act.project, &path).await?;
    let sha = match &state {
        s if s.disabled => {
            return Err(refused(
                &path,
                s,
                "already_disabled",
                format!("{path} is already disabled; `enable` publishes it again"),
            ));
        }
        s if s.deleted => {
            return Err(refused(
                &path,
                s,
                "deleted",
                format!(
                    "{path} was deleted (revision {}); there is nothing to disable",
                    s.revision
                ),
            ));
        }
        s => s.sha256,
    };
    let change = PushChange {
        path: path.to_string(),
        op: PushOp::Delete,
        base_sha256: sha,
        content: None,
        named_paths: Vec::new(),
    };
    act.write(
        pool,
        limits,
        &act.meta("disable"),
        &batch(change, false),
        ("memory_disabled", &path, json!({ "reason": reason })),
        |e| e,
    )
    .await
}

/// Publishes again the version a disable hid, held to today's guards (content a rescan flagged
/// stays disabled until its finding is allowlisted), audited `memory_enabled`.
pub async fn enable(
    pool: &PgPool,
    limits: SyncLimits,
    act: &AdminAct<'_>,
    path: &str,
) -> ApiResult<PushResponse> {
    let reason = reason(act)?;
    let path = memory_path(path, "enable")?;
    let project = act.project;
    let state = state_of(pool, project, &path).await?;
    if !state.disabled {
        let (why, message) = if state.deleted {
            (
                "deleted",
                format!(
                    "{path} was deleted (revision {}), not disabled; `restore` brings a deleted memory back",
                    state.revision
                ),
            )
        } else {
            (
                "not_disabled",
                format!(
                    "{path} is not disabled: it is published (revision {})",
                    state.revision
                ),
            )
        };
        return Err(refused(&path, &state, why, message));
    }
    let hidden = history::content_before(pool, project, path.as_str(), state.revision)
        .await?
        .ok_or_else(|| {
            ApiError::Internal(anyhow::anyhow!(
                "{project}: the disabled {path} has no version before revision {}",
                state.revision
            ))
        })?;
    let content = content_of(&path, &hidden, "enable")?;
    let mut req = batch(
        PushChange {
            path: path.to_string(),
            op: PushOp::Put,
            base_sha256: None,
            content: Some(content),
            named_paths: hidden.named_paths.clone(),
        },
        false,
    );
    // The indexes as they were before the disable, merged per entry over what it made of them
    // (edits made since are kept): the entry comes back where it was, not at the end.
    for index in history::index_changes(pool, project, state.revision).await? {
        let Some(before) = index.before else { continue };
        req.changes.push(PushChange {
            path: index.path,
            op: PushOp::Put,
            base_sha256: index.written_sha256.and_then(|s| s.parse().ok()),
            content: Some(before),
            named_paths: Vec::new(),
        });
    }
    act.write(
        pool,
        limits,
        &act.meta("enable"),
        &req,
        (
            "memory_enabled",
            &path,
            json!({ "reason": reason, "from_revision": hidden.revision }),
        ),
        |e| guards_refused(e, &path, hidden.revision, "enabled"),
    )
    .await
}

/// Publishes the version of a live or disabled memory written at `revision` as a new revision,
/// audited `memory_rolled_back`. Rolling back to what is published changes nothing.
pub async fn rollback(
    pool: &PgPool,
    limits: SyncLimits,
    act: &AdminAct<'_>,
    path: &str,
    revision: i64,
) -> ApiResult<PushResponse> {
    let reason = reason(act)?;
    let path = memory_path(path, "rollback")?;
    let project = act.project;
    let target = history::content_at(pool, project, path.as_str(), revision)
        .await?
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "{project} has no version of {path} at revision {revision}; `history` lists the revisions that wrote it"
            ))
        })?;
    let content = content_of(&path, &target, "roll back to")?;
    let state = state_of(pool, project, &path).await?;
    if state.deleted && !state.disabled {
        return Err(refused(
            &path,
            &state,
            "deleted",
            format!(
                "{path} was deleted (revision {}); `restore` brings a deleted memory back",
                state.revision
            ),
        ));
    }
    // Over the live version; over nothing when it is disabled (that tombstone is no base).
    let base = if state.deleted { None } else { state.sha256 };
    let change = PushChange {
        path: path.to_string(),
        op: PushOp::Put,
        base_sha256: base,
        content: Some(content),
        named_paths: target.named_paths.clone(),
    };
    let note = match reason {
        Some(r) => format!("to revision {revision}: {r}"),
        None => format!("to revision {revision}"),
    };
    let meta = PushMeta {
        note: Some(&note),
        ..act.meta("rollback")
    };
    act.write(
        pool,
        limits,
        &meta,
        &batch(change, false),
        (
            "memory_rolled_back",
            &path,
            json!({ "reason": reason, "to_revision": revision }),
        ),
        |e| guards_refused(e, &path, revision, "rolled back"),
    )
    .await
}

/// The reason given, if any: optional for these actions, at most 1,000 bytes.
fn reason<'a>(act: &AdminAct<'a>) -> ApiResult<Option<&'a str>> {
    let r = act.reason.trim();
    if r.len() > 1000 {
        return Err(ApiError::bad_request(
            "invalid_reason",
            "a reason is at most 1,000 bytes; it goes into the audit log and the git export's commit message",
        ));
    }
    Ok(Some(r).filter(|r| !r.is_empty()))
}

/// The stored state of a memory, or "not found" when the project never had it.
async fn state_of(pool: &PgPool, project: &ProjectId, path: &MemoryPath) -> ApiResult<Stored> {
    stored_state(pool, project, path)
        .await?
        .remove(path.as_str())
        .ok_or_else(|| ApiError::NotFound(format!("{project} never had {path}")))
}

/// A 409 naming the memory's current state.
fn refused(path: &MemoryPath, state: &Stored, why: &str, message: String) -> ApiError {
    let conflict = Conflict {
        path: path.to_string(),
        reason: why.to_owned(),
        base_sha256: None,
        server: Some(state.to_file_state(path.as_str())),
    };
    ApiError::Conflict {
        message,
        details: serde_json::to_value(ConflictDetails {
            conflicts: vec![conflict],
        })
        .unwrap_or_default(),
    }
}

/// The content of a stored version to publish again, or why there is none.
fn content_of(path: &MemoryPath, v: &StoredContent, what: &str) -> ApiResult<String> {
    if let Some(c) = &v.content {
        return Ok(c.clone());
    }
    if v.purged {
        return Err(ApiError::Unprocessable {
            code: "content_purged",
            message: format!(
                "cannot {what} the version of {path} at revision {}: an admin purged its content",
                v.revision
            ),
            details: json!({ "path": path.as_str(), "revision": v.revision }),
        });
    }
    Err(ApiError::Unprocessable {
        code: "nothing_to_roll_back",
        message: format!(
            "the version of {path} at revision {} is a deletion, which has no content to {what}; pick a revision that wrote content (see `history`)",
            v.revision
        ),
        details: json!({ "path": path.as_str(), "revision": v.revision }),
    })
}

/// Today's guards refused old content: say so, and what lets it through.
fn guards_refused(e: ApiError, path: &MemoryPath, revision: i64, done: &str) -> ApiError {
    match e {
        ApiError::Unprocessable {
            code: "validation_failed",
            message,
            details,
        } => {
            let first = message
                .split_once(": ")
                .map_or(message.as_str(), |(_, rest)| rest);
            ApiError::Unprocessable {
                code: "validation_failed",
                message: format!(
                    "{path} was not {done}: its content of revision {revision} is refused by today's guards, nothing was applied ({first}). If the finding is not a secret, a team admin can allowlist it; otherwise publish an edited version"
                ),
                details,
            }
        }
        other => other,
    }
}
