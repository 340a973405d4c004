//! Admin reads and writes of memory history: versions, the audit log, purges.

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
    pub purged: bool,
    pub merged: bool,
    pub sha256: Option<String>,
    pub size: i32,
    pub author: String,
    pub author_email: Option<String>,
    pub created_at: String,
}

type VersionRow = (
    String,
    i64,
    bool,
    bool,
    bool,
    Option<String>,
    i32,
    String,
    Option<String>,
    DateTime<Utc>,
);

fn version(r: VersionRow) -> Version {
    Version {
        path: r.0,
        revision: r.1,
        deleted: r.2,
        purged: r.3,
        merged: r.4,
        sha256: r.5,
        size: r.6,
        author: r.7,
        author_email: r.8,
        created_at: rfc3339(r.9),
    }
}

/// Every version of `path`, newest first.
pub async fn versions<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    path: &str,
) -> sqlx::Result<Vec<Version>> {
    let rows: Vec<VersionRow> = sqlx::query_as(
        "SELECT v.path, v.revision, v.deleted, v.purged, v.merged, v.sha256, v.size, r.author_name, r.author_email, v.created_at
         FROM memory_versions v JOIN revisions r USING (team, project, revision)
         WHERE v.team = $1 AND v.project = $2 AND v.path = $3
         ORDER BY v.revision DESC",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(path)
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(version).collect())
}

/// One version and its content (None for a tombstone or a purged version).
pub async fn version_at<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    path: &str,
    revision: i64,
) -> sqlx::Result<Option<(Version, Option<String>)>> {
    type Row = (
        String,
        i64,
        bool,
        bool,
        bool,
        Option<String>,
        i32,
        String,
        Option<String>,
        DateTime<Utc>,
        Option<String>,
    );
    let row: Option<Row> =
        sqlx::query_as(
            "SELECT v.path, v.revision, v.deleted, v.purged, v.merged, v.sha256, v.size, r.author_name, r.author_email, v.created_at, v.content
             FROM memory_versions v JOIN revisions r USING (team, project, revision)
             WHERE v.team = $1 AND v.project = $2 AND v.path = $3 AND v.revision = $4",
        )
        .bind(project.team())
        .bind(project.as_str())
        .bind(path)
        .bind(revision)
        .fetch_optional(db)
        .await?;
    Ok(row.map(|r| {
        let content = r.10.clone();
        (
            version((r.0, r.1, r.2, r.3, r.4, r.5, r.6, r.7, r.8, r.9)),
            content,
        )
    }))
}

/// Erases the content and hash of every version of `path`; returns how many versions.
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

/// Which of `hashes` an admin purged from `project`, with the path each was purged from.
pub async fn purged_hashes<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    hashes: &[String],
) -> sqlx::Result<Vec<(String, String)>> {
    sqlx::query_as(
        "SELECT sha256, path FROM purged_content
         WHERE team = $1 AND project = $2 AND sha256 = ANY($3)",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(hashes)
    .fetch_all(db)
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
