//! The git export's SQL: the outbox, rebuild requests, the advisory lock, and the revisions the
//! commits are made from.

use std::str::FromStr;

use chrono::{DateTime, Utc};
use memsync_core::ProjectId;
use sqlx::{Connection, PgConnection, PgExecutor, PgPool};

use crate::export::repo::{Change, Content, Revision};

/// The Postgres channel the outbox trigger notifies on.
pub const CHANNEL: &str = "memsync_export";

/// The advisory lock held by whoever writes to the export directory ("memsync" and 1).
const LOCK_KEY: i64 = 0x6d65_6d73_796e_6301;

/// A connection of its own, outside the pool: a session-level advisory lock lives as long as
/// the session, and dies with it when the process does.
pub async fn connect(pool: &PgPool) -> sqlx::Result<PgConnection> {
    PgConnection::connect_with(&pool.connect_options()).await
}

pub async fn try_lock(conn: &mut PgConnection) -> sqlx::Result<bool> {
    sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(LOCK_KEY)
        .fetch_one(conn)
        .await
}

pub async fn unlock(conn: &mut PgConnection) -> sqlx::Result<()> {
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(LOCK_KEY)
        .execute(conn)
        .await?;
    Ok(())
}

/// Records, on the connection that holds the export lock, the URL this exporter is reached at,
/// and forgets those of exporters whose sessions ended.
pub async fn advertise(conn: &mut PgConnection, url: &str) -> sqlx::Result<()> {
    sqlx::query(
        "WITH gone AS (DELETE FROM export_leader WHERE pid <> pg_backend_pid()) \
         INSERT INTO export_leader (pid, url) VALUES (pg_backend_pid(), $1) \
         ON CONFLICT (pid) DO UPDATE SET url = EXCLUDED.url, since = now()",
    )
    .bind(url)
    .execute(conn)
    .await?;
    Ok(())
}

/// The URL of the process that holds the export lock now, if it advertised one.
pub async fn exporter_url(pool: &PgPool) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT e.url FROM export_leader e JOIN pg_locks l ON l.pid = e.pid \
         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
           AND ((l.classid::bigint << 32) | l.objid::bigint) = $1",
    )
    .bind(LOCK_KEY)
    .fetch_optional(pool)
    .await
}

fn project_id(s: &str) -> Option<ProjectId> {
    let p = ProjectId::from_str(s).ok();
    if p.is_none() {
        tracing::warn!(
            project = s,
            "skipping an invalid project id in the export tables"
        );
    }
    p
}

/// Wakes the exporting process (whichever replica it is).
pub async fn notify<'e>(db: impl PgExecutor<'e>, project: &ProjectId) -> sqlx::Result<()> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(project.as_str())
        .execute(db)
        .await?;
    Ok(())
}

/// Still the session that holds the lock (a session-level advisory lock lasts as long as the
/// session: while the connection answers, this process holds it).
pub async fn ping(conn: &mut PgConnection) -> sqlx::Result<()> {
    sqlx::query("SELECT 1").execute(conn).await?;
    Ok(())
}

/// Projects with unexported revisions, the longest waiting first, with the newest revision to
/// export.
pub async fn pending<'e>(db: impl PgExecutor<'e>) -> sqlx::Result<Vec<(ProjectId, i64)>> {
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT project, max(revision) FROM export_outbox
         GROUP BY team, project ORDER BY min(created_at) LIMIT 1000",
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(p, r)| project_id(&p).map(|p| (p, r)))
        .collect())
}

/// The repository has every revision up to `upto`.
pub async fn exported<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    upto: i64,
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM export_outbox WHERE team = $1 AND project = $2 AND revision <= $3")
        .bind(project.team())
        .bind(project.as_str())
        .bind(upto)
        .execute(db)
        .await?;
    Ok(())
}

/// Every project with its current revision.
pub async fn projects<'e>(db: impl PgExecutor<'e>) -> sqlx::Result<Vec<(ProjectId, i64)>> {
    let rows: Vec<(String, i64)> =
        sqlx::query_as("SELECT project, revision FROM projects ORDER BY project")
            .fetch_all(db)
            .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(p, r)| project_id(&p).map(|p| (p, r)))
        .collect())
}

/// The last revision of the batch after `after`: at most `upto`, and no more content than
/// `max_bytes` (but at least one revision), so one batch never holds many large pushes.
pub async fn batch_end(
    pool: &PgPool,
    project: &ProjectId,
    after: i64,
    upto: i64,
    max_bytes: i64,
) -> sqlx::Result<i64> {
    let sizes: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT revision, COALESCE(sum(size), 0)::bigint FROM memory_versions
         WHERE team = $1 AND project = $2 AND revision > $3 AND revision <= $4
         GROUP BY revision ORDER BY revision",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(after)
    .bind(upto)
    .fetch_all(pool)
    .await?;
    let mut total = 0;
    for (revision, size) in sizes {
        total += size;
        if total > max_bytes {
            return Ok((revision - 1).max(after + 1));
        }
    }
    Ok(upto)
}

/// Revisions `after+1 ..= upto` with every path each one changed.
pub async fn revisions(
    pool: &PgPool,
    project: &ProjectId,
    after: i64,
    upto: i64,
) -> sqlx::Result<Vec<Revision>> {
    type RevRow = (i64, String, String, Option<String>, DateTime<Utc>);
    let revs: Vec<RevRow> = sqlx::query_as(
        "SELECT revision, author_sub, author_name, author_email, created_at FROM revisions
         WHERE team = $1 AND project = $2 AND revision > $3 AND revision <= $4 ORDER BY revision",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(after)
    .bind(upto)
    .fetch_all(pool)
    .await?;
    type VersionRow = (i64, String, bool, Option<String>);
    let versions: Vec<VersionRow> = sqlx::query_as(
        "SELECT revision, path, deleted, content FROM memory_versions
         WHERE team = $1 AND project = $2 AND revision > $3 AND revision <= $4
         ORDER BY revision, path",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(after)
    .bind(upto)
    .fetch_all(pool)
    .await?;
    let mut out: Vec<Revision> = revs
        .into_iter()
        .map(|(revision, sub, name, email, at)| Revision {
            revision,
            author_sub: sub,
            author_name: name,
            author_email: email,
            at,
            changes: Vec::new(),
        })
        .collect();
    let mut i = 0;
    for (revision, path, deleted, content) in versions {
        while i < out.len() && out[i].revision < revision {
            i += 1;
        }
        let Some(rev) = out.get_mut(i).filter(|r| r.revision == revision) else {
            continue;
        };
        let content = match (deleted, content) {
            (true, _) => Content::Deleted,
            (false, Some(text)) => Content::Text(text),
            // A version without content that is not a tombstone was purged.
            (false, None) => Content::Purged,
        };
        rev.changes.push(Change { path, content });
    }
    Ok(out)
}

/// Asks for the project's repository to be rewritten from scratch; in the caller's transaction,
/// so the request cannot be lost once what made it necessary is committed.
pub async fn request_rebuild(conn: &mut PgConnection, project: &ProjectId) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO export_rebuilds (team, project) VALUES ($1, $2)
         ON CONFLICT (team, project) DO UPDATE SET requested_at = clock_timestamp(), rebuilt_at = NULL",
    )
    .bind(project.team())
    .bind(project.as_str())
    .execute(conn)
    .await?;
    Ok(())
}

pub struct RebuildRequest {
    pub project: ProjectId,
    pub requested_at: DateTime<Utc>,
    /// Set once rewritten: the row only waits for the mirror.
    pub rebuilt_at: Option<DateTime<Utc>>,
}

/// Open rebuild requests, of every project or of one.
pub async fn rebuild_requests<'e>(
    db: impl PgExecutor<'e>,
    only: Option<&ProjectId>,
) -> sqlx::Result<Vec<RebuildRequest>> {
    type Row = (String, DateTime<Utc>, Option<DateTime<Utc>>);
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT project, requested_at, rebuilt_at FROM export_rebuilds
         WHERE $1::text IS NULL OR project = $1 ORDER BY requested_at",
    )
    .bind(only.map(ProjectId::as_str))
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(p, requested_at, rebuilt_at)| {
            project_id(&p).map(|project| RebuildRequest {
                project,
                requested_at,
                rebuilt_at,
            })
        })
        .collect())
}

/// The request made at `requested_at` is done (a newer request stays open). With a mirror to
/// update, the row stays until the mirror has the rewrite; returns when the rewrite was recorded.
pub async fn rebuilt<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    requested_at: DateTime<Utc>,
    await_mirror: bool,
) -> sqlx::Result<Option<DateTime<Utc>>> {
    if await_mirror {
        sqlx::query_scalar(
            "UPDATE export_rebuilds SET rebuilt_at = clock_timestamp()
             WHERE team = $1 AND project = $2 AND requested_at = $3 RETURNING rebuilt_at",
        )
        .bind(project.team())
        .bind(project.as_str())
        .bind(requested_at)
        .fetch_optional(db)
        .await
    } else {
        sqlx::query(
            "DELETE FROM export_rebuilds WHERE team = $1 AND project = $2 AND requested_at = $3",
        )
        .bind(project.team())
        .bind(project.as_str())
        .bind(requested_at)
        .execute(db)
        .await?;
        Ok(None)
    }
}

/// The project has no rewrite left to make (none was asked for, or it is made and maybe only
/// waits for the mirror).
pub async fn rebuild_done<'e>(db: impl PgExecutor<'e>, project: &ProjectId) -> sqlx::Result<bool> {
    let made: Option<bool> = sqlx::query_scalar(
        "SELECT rebuilt_at IS NOT NULL FROM export_rebuilds WHERE team = $1 AND project = $2",
    )
    .bind(project.team())
    .bind(project.as_str())
    .fetch_optional(db)
    .await?;
    Ok(made.unwrap_or(true))
}

/// The project's purged versions up to revision `upto`, (revision, path), newest first: a
/// repository written before their purge still holds them.
pub async fn purged<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    upto: i64,
) -> sqlx::Result<Vec<(i64, String)>> {
    sqlx::query_as(
        "SELECT revision, path FROM memory_versions
         WHERE team = $1 AND project = $2 AND purged AND NOT deleted AND revision <= $3
         ORDER BY revision DESC, path",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(upto)
    .fetch_all(db)
    .await
}

/// What deciding whether a copy of a project's repository may be cloned needs from the
/// database, read in one query on primary keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CloneState {
    /// `projects.revision`: the revision a current copy's branch head carries.
    pub revision: i64,
    /// A rewrite was asked for (a purge, `export rebuild`) and is not made yet: every copy,
    /// the exporter's included, may still hold what it removes.
    pub rewrite_pending: bool,
    /// Content of the project was ever purged (`purged_content` gets a row for every purged
    /// hash, and a purge always has one). Without that, no copy can hold purged content.
    pub ever_purged: bool,
}

/// The project's [`CloneState`]; None when there is no such project.
pub async fn clone_state<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
) -> sqlx::Result<Option<CloneState>> {
    let row: Option<(i64, bool, bool)> = sqlx::query_as(
        "SELECT p.revision,
                EXISTS (SELECT 1 FROM export_rebuilds r
                        WHERE r.team = p.team AND r.project = p.project AND r.rebuilt_at IS NULL),
                EXISTS (SELECT 1 FROM purged_content c
                        WHERE c.team = p.team AND c.project = p.project)
         FROM projects p WHERE p.team = $1 AND p.project = $2",
    )
    .bind(project.team())
    .bind(project.as_str())
    .fetch_optional(db)
    .await?;
    Ok(
        row.map(|(revision, rewrite_pending, ever_purged)| CloneState {
            revision,
            rewrite_pending,
            ever_purged,
        }),
    )
}

/// When the project's last rewrite was made, if a mirror still has to get it.
pub async fn awaiting_mirror<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
) -> sqlx::Result<Option<DateTime<Utc>>> {
    let t: Option<Option<DateTime<Utc>>> = sqlx::query_scalar(
        "SELECT rebuilt_at FROM export_rebuilds WHERE team = $1 AND project = $2",
    )
    .bind(project.team())
    .bind(project.as_str())
    .fetch_optional(db)
    .await?;
    Ok(t.flatten())
}

/// The mirror has the rewrite made at `rebuilt_at`.
pub async fn mirrored<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    rebuilt_at: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM export_rebuilds WHERE team = $1 AND project = $2 AND rebuilt_at = $3")
        .bind(project.team())
        .bind(project.as_str())
        .bind(rebuilt_at)
        .execute(db)
        .await?;
    Ok(())
}

/// Export lag: (unexported revisions, age of the oldest in seconds, rebuilds not yet done,
/// rewrites waiting for the mirror).
pub async fn lag<'e>(db: impl PgExecutor<'e>) -> sqlx::Result<(i64, f64, i64, i64)> {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM export_outbox),
                COALESCE((SELECT extract(epoch FROM now() - min(created_at))::float8 FROM export_outbox), 0),
                (SELECT count(*) FROM export_rebuilds WHERE rebuilt_at IS NULL),
                (SELECT count(*) FROM export_rebuilds WHERE rebuilt_at IS NOT NULL)",
    )
    .fetch_one(db)
    .await
}
