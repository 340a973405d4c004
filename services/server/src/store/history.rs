//! Admin reads and writes of memory history: versions (and what the git export says about each
//! revision), the audit log, purges, and the review items of memories a rescan disabled.

use chrono::{DateTime, Utc};
use memsync_core::ProjectId;
use serde::Serialize;
use sqlx::{PgConnection, PgExecutor};

use super::memories::rfc3339;

#[derive(Debug, Clone, Serialize)]
pub struct Version {
    pub path: String,
    pub revision: i64,
    pub deleted: bool,
    /// A tombstone that disables the version before it (`enable` brings that back).
    pub disabled: bool,
    pub purged: bool,
    pub merged: bool,
    pub sha256: Option<String>,
    pub size: i32,
    pub author: String,
    pub author_email: Option<String>,
    pub created_at: String,
    /// What made the revision: `push`, `approve`, `disable`, `enable`, `rollback`, …
    pub kind: String,
    /// The reason given for an admin or review action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The stored `wire::VersionProvenance` (absent for versions older than provenance).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<serde_json::Value>,
}

/// The columns of a `Version`, from `memory_versions v JOIN revisions r`.
const VERSION_COLUMNS: &str = "v.path, v.revision, v.deleted, v.disabled, v.purged, v.merged, v.sha256, v.size, \
     r.author_name, r.author_email, v.created_at, r.kind, r.note, v.provenance";

#[derive(sqlx::FromRow)]
struct VersionRow {
    path: String,
    revision: i64,
    deleted: bool,
    disabled: bool,
    purged: bool,
    merged: bool,
    sha256: Option<String>,
    size: i32,
    author_name: String,
    author_email: Option<String>,
    created_at: DateTime<Utc>,
    kind: String,
    note: Option<String>,
    provenance: Option<serde_json::Value>,
}

impl From<VersionRow> for Version {
    fn from(r: VersionRow) -> Version {
        Version {
            path: r.path,
            revision: r.revision,
            deleted: r.deleted,
            disabled: r.disabled,
            purged: r.purged,
            merged: r.merged,
            sha256: r.sha256,
            size: r.size,
            author: r.author_name,
            author_email: r.author_email,
            created_at: rfc3339(r.created_at),
            kind: r.kind,
            note: r.note,
            provenance: r.provenance,
        }
    }
}

/// Every version of `path`, newest first.
pub async fn versions<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    path: &str,
) -> sqlx::Result<Vec<Version>> {
    let rows: Vec<VersionRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {VERSION_COLUMNS}
         FROM memory_versions v JOIN revisions r USING (team, project, revision)
         WHERE v.team = $1 AND v.project = $2 AND v.path = $3
         ORDER BY v.revision DESC"
    )))
    .bind(project.team())
    .bind(project.as_str())
    .bind(path)
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(Version::from).collect())
}

/// One version and its content (None for a tombstone or a purged version).
pub async fn version_at<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    path: &str,
    revision: i64,
) -> sqlx::Result<Option<(Version, Option<String>)>> {
    #[derive(sqlx::FromRow)]
    struct Row {
        #[sqlx(flatten)]
        version: VersionRow,
        content: Option<String>,
    }
    let row: Option<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {VERSION_COLUMNS}, v.content
         FROM memory_versions v JOIN revisions r USING (team, project, revision)
         WHERE v.team = $1 AND v.project = $2 AND v.path = $3 AND v.revision = $4"
    )))
    .bind(project.team())
    .bind(project.as_str())
    .bind(path)
    .bind(revision)
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| (Version::from(r.version), r.content)))
}

/// What a stored version of a path holds, to write it again (enable, rollback).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredContent {
    pub revision: i64,
    pub deleted: bool,
    pub purged: bool,
    /// None for a tombstone or a purged version.
    pub content: Option<String>,
    pub named_paths: Vec<String>,
}

/// The version of `path` written at `revision`, if that revision wrote it.
pub async fn content_at<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    path: &str,
    revision: i64,
) -> sqlx::Result<Option<StoredContent>> {
    sqlx::query_as(
        "SELECT revision, deleted, purged, content, named_paths FROM memory_versions
         WHERE team = $1 AND project = $2 AND path = $3 AND revision = $4",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(path)
    .bind(revision)
    .fetch_optional(db)
    .await
}

/// The newest version of `path` before `revision` that is not a tombstone (its content may
/// have been purged): what a disable at `revision` disabled.
pub async fn content_before<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    path: &str,
    revision: i64,
) -> sqlx::Result<Option<StoredContent>> {
    sqlx::query_as(
        "SELECT revision, deleted, purged, content, named_paths FROM memory_versions
         WHERE team = $1 AND project = $2 AND path = $3 AND revision < $4 AND NOT deleted
         ORDER BY revision DESC LIMIT 1",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(path)
    .bind(revision)
    .fetch_optional(db)
    .await
}

/// An index (`MEMORY.md`) a revision rewrote: the hash of what it wrote (None for a deletion)
/// and the content it had before (None when it did not exist).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct IndexChange {
    pub path: String,
    pub written_sha256: Option<String>,
    pub before: Option<String>,
}

/// Every index that `revision` wrote, with its content before.
pub async fn index_changes<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    revision: i64,
) -> sqlx::Result<Vec<IndexChange>> {
    sqlx::query_as(
        "SELECT v.path, v.sha256 AS written_sha256,
                (SELECT b.content FROM memory_versions b
                 WHERE b.team = v.team AND b.project = v.project AND b.path = v.path
                   AND b.revision < v.revision
                 ORDER BY b.revision DESC LIMIT 1) AS before
         FROM memory_versions v
         WHERE v.team = $1 AND v.project = $2 AND v.revision = $3
           AND (v.path = 'MEMORY.md' OR v.path LIKE '%/MEMORY.md')
         ORDER BY v.path",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(revision)
    .fetch_all(db)
    .await
}

/// What the git export says about a revision besides its changes.
#[derive(Debug, Clone, Default, sqlx::FromRow)]
pub struct RevisionNote {
    pub revision: i64,
    /// `push`, `approve`, `disable`, `enable`, `rollback`, `restore`, `delete`, `rescan`.
    pub kind: String,
    pub note: Option<String>,
    /// The `wire::VersionProvenance` of its versions (one per revision: a revision's versions
    /// share it), if stored.
    pub provenance: Option<serde_json::Value>,
}

/// The kind, note and provenance of revisions `after+1 ..= upto`.
pub async fn revision_notes(
    pool: &sqlx::PgPool,
    project: &ProjectId,
    after: i64,
    upto: i64,
) -> sqlx::Result<Vec<RevisionNote>> {
    sqlx::query_as(
        "SELECT r.revision, r.kind, r.note,
                (SELECT v.provenance FROM memory_versions v
                 WHERE v.team = r.team AND v.project = r.project AND v.revision = r.revision
                   AND v.provenance IS NOT NULL
                 ORDER BY v.path LIMIT 1) AS provenance
         FROM revisions r
         WHERE r.team = $1 AND r.project = $2 AND r.revision > $3 AND r.revision <= $4
         ORDER BY r.revision",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(after)
    .bind(upto)
    .fetch_all(pool)
    .await
}

/// Erases the content and hash of every version of `path` and of every proposal of it (closing
/// the open ones); returns how many versions.
pub async fn purge_versions(
    conn: &mut PgConnection,
    project: &ProjectId,
    path: &str,
    purged_by: &str,
) -> sqlx::Result<u64> {
    // Remember what was erased, so that the same content cannot be pushed back.
    sqlx::query(
        "INSERT INTO purged_content (team, project, sha256, path, purged_by)
         SELECT DISTINCT team, project, sha256, path, $4 FROM memory_versions
         WHERE team = $1 AND project = $2 AND path = $3 AND sha256 IS NOT NULL
         ON CONFLICT DO NOTHING",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(path)
    .bind(purged_by)
    .execute(&mut *conn)
    .await?;
    let r = sqlx::query(
        "UPDATE memory_versions SET content = NULL, sha256 = NULL, size = 0, purged = true
         WHERE team = $1 AND project = $2 AND path = $3",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(path)
    .execute(&mut *conn)
    .await?;
    // The review queue holds proposed content too: erase it, and close the path's open items
    // (a proposal without content can be neither shown nor published).
    sqlx::query(
        "UPDATE proposals SET content = NULL, sha256 = NULL WHERE team = $1 AND project = $2 AND path = $3",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(path)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "UPDATE proposals SET status = 'rejected', reviewed_by = $4, reviewed_at = now(),
                reason = 'closed by a purge of the path: its content was erased'
         WHERE team = $1 AND project = $2 AND path = $3 AND status IN ('pending', 'due', 'flagged')",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(path)
    .bind(purged_by)
    .execute(&mut *conn)
    .await?;
    // Stored push answers carry file contents: empty every one that mentions the path, and mark
    // it purged, so that a retry with its key is answered "purged" instead of applied again.
    sqlx::query(
        "UPDATE idempotency_keys SET response = '{}'::jsonb, purged = true
         WHERE team = $1 AND project = $2
         AND jsonb_path_exists(response, '$.changes[*] ? (@.path == $p)', jsonb_build_object('p', $3::text))",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(path)
    .execute(&mut *conn)
    .await?;
    Ok(r.rows_affected())
}

/// A memory a rescan disabled, queued for a reviewer.
pub struct Flagged<'a> {
    pub path: &'a str,
    /// The hash of the version the rescan disabled.
    pub sha256: &'a str,
    /// The `wire::VersionProvenance` of that version.
    pub provenance: &'a serde_json::Value,
    /// Which rules matched, on which lines.
    pub reason: &'a str,
    /// `[{"rule","line","column","fingerprint"}]`: never the matched text.
    pub findings: &'a serde_json::Value,
    /// Who flags it (the server's own principal).
    pub by: &'a str,
}

/// Queues a disabled memory for review (kind and status `flagged`, op `put`): an open flagged
/// item of the path is refreshed, an open due item is closed (the memory is disabled now, which
/// is what rejecting it would have done). Returns the item's id.
pub async fn flag_for_review(
    conn: &mut PgConnection,
    project: &ProjectId,
    f: &Flagged<'_>,
) -> sqlx::Result<i64> {
    sqlx::query(
        "UPDATE proposals SET status = 'rejected', reviewed_by = $4, reviewed_at = now(),
                reason = 'closed: a rescan disabled the memory (see its flagged item)'
         WHERE team = $1 AND project = $2 AND path = $3 AND kind = 'due' AND status = 'due'",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(f.path)
    .bind(f.by)
    .execute(&mut *conn)
    .await?;
    sqlx::query_scalar(
        "INSERT INTO proposals (team, project, path, kind, op, status, base_sha256, author_sub,
                                author_name, provenance, findings, reason)
         VALUES ($1, $2, $3, 'flagged', 'put', 'flagged', $4, $5, $5, $6, $7, $8)
         ON CONFLICT (team, project, path) WHERE kind <> 'change' AND status IN ('due', 'flagged')
         DO UPDATE SET base_sha256 = EXCLUDED.base_sha256, provenance = EXCLUDED.provenance,
                       findings = EXCLUDED.findings, reason = EXCLUDED.reason, created_at = now()
         RETURNING id",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(f.path)
    .bind(f.sha256)
    .bind(f.by)
    .bind(f.provenance)
    .bind(f.findings)
    .bind(f.reason)
    .fetch_one(&mut *conn)
    .await
}

#[derive(Debug, Clone, Serialize)]
pub struct AuditRow {
    pub id: i64,
    pub at: String,
    pub team: Option<String>,
    pub project: Option<String>,
    pub actor: String,
    pub actor_name: Option<String>,
    pub action: String,
    pub path: Option<String>,
    pub revision: Option<i64>,
    pub request_id: Option<String>,
    pub details: serde_json::Value,
}

#[derive(Debug, Default, Clone)]
pub struct AuditFilter {
    /// Restricts to these teams (None: every team, for server admins).
    pub teams: Option<Vec<String>>,
    pub team: Option<String>,
    pub project: Option<String>,
    pub actor: Option<String>,
    pub action: Option<String>,
    pub path: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Only ids below this (the cursor of the previous page).
    pub before_id: Option<i64>,
    pub limit: i64,
}

type AuditDbRow = (
    i64,
    DateTime<Utc>,
    Option<String>,
    Option<String>,
    String,
    Option<String>,
    String,
    Option<String>,
    Option<i64>,
    Option<String>,
    serde_json::Value,
);

/// Newest first.
pub async fn audit<'e>(db: impl PgExecutor<'e>, f: &AuditFilter) -> sqlx::Result<Vec<AuditRow>> {
    let rows: Vec<AuditDbRow> = sqlx::query_as(
        "SELECT id, at, team, project, actor_sub, actor_name, action, path, revision, request_id, details
         FROM audit_log
         WHERE ($1::text[] IS NULL OR team = ANY($1))
           AND ($2::text IS NULL OR team = $2)
           AND ($3::text IS NULL OR project = $3)
           AND ($4::text IS NULL OR actor_sub = $4)
           AND ($5::text IS NULL OR action = $5)
           AND ($6::text IS NULL OR path = $6)
           AND ($7::timestamptz IS NULL OR at >= $7)
           AND ($8::timestamptz IS NULL OR at < $8)
           AND ($9::bigint IS NULL OR id < $9)
         ORDER BY id DESC
         LIMIT $10",
    )
    .bind(&f.teams)
    .bind(&f.team)
    .bind(&f.project)
    .bind(&f.actor)
    .bind(&f.action)
    .bind(&f.path)
    .bind(f.since)
    .bind(f.until)
    .bind(f.before_id)
    .bind(f.limit)
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| AuditRow {
            id: r.0,
            at: rfc3339(r.1),
            team: r.2,
            project: r.3,
            actor: r.4,
            actor_name: r.5,
            action: r.6,
            path: r.7,
            revision: r.8,
            request_id: r.9,
            details: r.10,
        })
        .collect())
}

#[derive(Debug, Clone, Serialize)]
pub struct ProjectRow {
    pub project: String,
    pub team: String,
    pub revision: i64,
    pub files: i32,
    pub bytes: i64,
    pub created_at: String,
    pub updated_at: String,
    pub archived_at: Option<String>,
}

pub async fn projects<'e>(
    db: impl PgExecutor<'e>,
    teams: Option<&[String]>,
) -> sqlx::Result<Vec<ProjectRow>> {
    type Row = (
        String,
        String,
        i64,
        i32,
        i64,
        DateTime<Utc>,
        DateTime<Utc>,
        Option<DateTime<Utc>>,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT project, team, revision, files, bytes, created_at, updated_at, archived_at FROM projects
         WHERE $1::text[] IS NULL OR team = ANY($1) ORDER BY project",
    )
    .bind(teams)
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| ProjectRow {
            project: r.0,
            team: r.1,
            revision: r.2,
            files: r.3,
            bytes: r.4,
            created_at: rfc3339(r.5),
            updated_at: rfc3339(r.6),
            archived_at: r.7.map(rfc3339),
        })
        .collect())
}

pub async fn set_archived<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    archived: bool,
) -> sqlx::Result<bool> {
    let r = sqlx::query(
        "UPDATE projects SET archived_at = CASE WHEN $3 THEN coalesce(archived_at, now()) ELSE NULL END
         WHERE team = $1 AND project = $2",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(archived)
    .execute(db)
    .await?;
    Ok(r.rows_affected() == 1)
}
