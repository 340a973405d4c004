//! The sync engine: pull the changes since a revision; push an atomic batch with per-file base
//! versions, merged three-way with concurrent edits where they don't overlap (`push`, `decide`,
//! `layout`; the team index in `index`, team feedback in `feedback`). Under `review = required`
//! a push by a member who is not a reviewer becomes proposals (`propose`).

mod decide;
pub mod feedback;
pub mod index;
pub mod judge;
mod layout;
mod propose;
mod push;

pub use push::{Stop, provenance_of, push, push_in, validation_failed};

use memsync_core::ProjectId;
use memsync_core::policy::Limits;
use memsync_core::wire::{PullResponse, PushResponse, VersionProvenance};
use sqlx::PgPool;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::store::memories;

#[derive(Debug, Clone, Copy)]
pub struct SyncLimits {
    pub file: Limits,
    pub max_files_per_project: i64,
    /// The storage quotas (`max_project_bytes`, default and per team).
    pub quotas: &'static crate::limits::LimitSettings,
}

pub enum Pull {
    NotModified { revision: i64 },
    Changes(PullResponse),
}

pub fn etag(revision: i64) -> String {
    format!("\"r{revision}\"")
}

/// A pull: one primary-key lookup answers "nothing changed"; otherwise one range scan of at
/// most `limit` files (a page, see [`memories::changes_page`]).
pub async fn pull(
    pool: &PgPool,
    project: &ProjectId,
    since: i64,
    if_none_match: Option<&str>,
    limit: usize,
) -> ApiResult<Pull> {
    let revision = memories::revision(pool, project)
        .await?
        .ok_or_else(|| not_found(project))?;
    if if_none_match.is_some_and(|inm| etag_matches(inm, revision)) {
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
    let (changes, complete) = if since == revision {
        (Vec::new(), revision)
    } else {
        memories::changes_page(pool, project, since, revision, limit.max(1)).await?
    };
    Ok(Pull::Changes(PullResponse {
        project: project.to_string(),
        revision: complete,
        since,
        changes,
        more: complete < revision,
        head: Some(revision),
    }))
}

/// Whether the answer tells the client nothing new: a 304, or no changes from its own revision.
pub fn is_up_to_date(answer: &Pull) -> bool {
    match answer {
        Pull::NotModified { .. } => true,
        Pull::Changes(body) => body.changes.is_empty() && !body.more && body.revision == body.since,
    }
}

/// Whether an `If-None-Match` value names the ETag of `revision` (or is `*`).
fn etag_matches(inm: &str, revision: i64) -> bool {
    inm.split(',').any(|t| {
        let t = t.trim();
        t == "*" || t.trim_start_matches("W/") == etag(revision)
    })
}

/// The answer to a pull that the revision bus can give alone, knowing the project is at
/// `known`: "not modified" when `If-None-Match` names that revision, and "no changes" when the
/// client asks from it. Anything else (changes to send, a `since` the bus has not heard of) is
/// None: the database answers.
pub fn pull_up_to_date(
    project: &ProjectId,
    known: i64,
    since: i64,
    if_none_match: Option<&str>,
) -> Option<Pull> {
    if if_none_match.is_some_and(|inm| etag_matches(inm, known)) {
        return Some(Pull::NotModified { revision: known });
    }
    (since == known).then(|| {
        Pull::Changes(PullResponse {
            project: project.to_string(),
            revision: known,
            since,
            changes: Vec::new(),
            more: false,
            head: Some(known),
        })
    })
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
    /// What makes the revision: `push` for a client's push; admin and review actions name
    /// themselves (`delete`, `restore`, `approve`, …).
    pub kind: &'static str,
    /// The reason given for an admin or review action.
    pub note: Option<&'a str>,
    /// The versions' provenance when it is not this push's own (an approved proposal carries
    /// its author's); `None` builds it from the principal and the request's `provenance`.
    pub provenance: Option<VersionProvenance>,
}

impl<'a> PushMeta<'a> {
    /// A client's push (or an admin write through the engine) by `principal`.
    pub fn new(project: &'a ProjectId, principal: &'a Principal, kind: &'static str) -> Self {
        PushMeta {
            project,
            principal,
            request_id: None,
            idempotency_key: None,
            request_hash: String::new(),
            kind,
            note: None,
            provenance: None,
        }
    }
}

pub enum PushOutcome {
    Applied(PushResponse),
    /// Nothing was published: the changes became (or matched) proposals (answered with 202).
    Proposed(PushResponse),
    /// The stored answer (status, body) of an earlier push with the same idempotency key.
    Replayed(u16, serde_json::Value),
}
