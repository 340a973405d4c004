//! The review queue (`proposals`): proposed changes, published memories due for review, and
//! memories a rescan flagged. Proposals are not memory versions: nothing here is pulled, indexed
//! or exported.

use chrono::{DateTime, Utc};
use memsync_core::wire::{ProposalStatus, PushOp};
use memsync_core::{ProjectId, Sha256};
use sqlx::{PgConnection, PgExecutor};

/// What a queue item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A change proposed by a push (a put or a delete).
    Change,
    /// A published memory not changed or confirmed for `review_after_days`.
    Due,
    /// A published memory a rescan disabled.
    Flagged,
}

impl Kind {
    fn parse(s: &str) -> Kind {
        match s {
            "due" => Kind::Due,
            "flagged" => Kind::Flagged,
            _ => Kind::Change,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Change => "change",
            Kind::Due => "due",
            Kind::Flagged => "flagged",
        }
    }
}

pub fn status_str(s: ProposalStatus) -> &'static str {
    match s {
        ProposalStatus::Pending => "pending",
        ProposalStatus::Due => "due",
        ProposalStatus::Flagged => "flagged",
        ProposalStatus::Approved => "approved",
        ProposalStatus::Rejected => "rejected",
        ProposalStatus::Superseded => "superseded",
    }
}

/// The status a query parameter or a stored row names.
pub fn parse_status(s: &str) -> Option<ProposalStatus> {
    Some(match s {
        "pending" => ProposalStatus::Pending,
        "due" => ProposalStatus::Due,
        "flagged" => ProposalStatus::Flagged,
        "approved" => ProposalStatus::Approved,
        "rejected" => ProposalStatus::Rejected,
        "superseded" => ProposalStatus::Superseded,
        _ => return None,
    })
}

fn op_str(op: PushOp) -> &'static str {
    match op {
        PushOp::Put => "put",
        PushOp::Delete => "delete",
    }
}

/// One queue item as stored.
#[derive(Debug, Clone)]
pub struct Proposal {
    pub id: i64,
    pub team: String,
    pub project: String,
    pub path: String,
    pub kind: Kind,
    pub op: PushOp,
    pub status: ProposalStatus,
    pub base_sha256: Option<Sha256>,
    pub sha256: Option<Sha256>,
    /// The proposed content (None for a delete, a due or flagged item, a purge, or a listing).
    pub content: Option<String>,
    pub named_paths: Vec<String>,
    pub author_sub: String,
    pub author_name: String,
    pub author_email: Option<String>,
    pub provenance: serde_json::Value,
    pub findings: serde_json::Value,
    pub reason: Option<String>,
    pub note: Option<String>,
    pub reviewed_by: Option<String>,
    pub reviewed_at: Option<DateTime<Utc>>,
    pub published_revision: Option<i64>,
    pub created_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    team: String,
    project: String,
    path: String,
    kind: String,
    op: String,
    status: String,
    base_sha256: Option<String>,
    sha256: Option<String>,
    content: Option<String>,
    named_paths: Vec<String>,
    author_sub: String,
    author_name: String,
    author_email: Option<String>,
    provenance: serde_json::Value,
    findings: serde_json::Value,
    reason: Option<String>,
    note: Option<String>,
    reviewed_by: Option<String>,
    reviewed_at: Option<DateTime<Utc>>,
    published_revision: Option<i64>,
    created_at: DateTime<Utc>,
}

impl From<Row> for Proposal {
    fn from(r: Row) -> Proposal {
        Proposal {
            id: r.id,
            team: r.team,
            project: r.project,
            path: r.path,
            kind: Kind::parse(&r.kind),
            op: if r.op == "delete" {
                PushOp::Delete
            } else {
                PushOp::Put
            },
            status: parse_status(&r.status).unwrap_or(ProposalStatus::Pending),
            base_sha256: r.base_sha256.and_then(|s| s.parse().ok()),
            sha256: r.sha256.and_then(|s| s.parse().ok()),
            content: r.content,
            named_paths: r.named_paths,
            author_sub: r.author_sub,
            author_name: r.author_name,
            author_email: r.author_email,
            provenance: r.provenance,
            findings: r.findings,
            reason: r.reason,
            note: r.note,
            reviewed_by: r.reviewed_by,
            reviewed_at: r.reviewed_at,
            published_revision: r.published_revision,
            created_at: r.created_at,
        }
    }
}

/// Every column but `content`, which follows it in each query (or NULL in a listing).
macro_rules! columns {
    () => {
        "id, team, project, path, kind, op, status, base_sha256, sha256, named_paths, author_sub, \
         author_name, author_email, provenance, findings, reason, note, reviewed_by, reviewed_at, \
         published_revision, created_at"
    };
}

/// A change a push proposes.
pub struct NewProposal<'a> {
    pub project: &'a ProjectId,
    pub path: &'a str,
    pub op: PushOp,
    pub base_sha256: Option<Sha256>,
    pub content: Option<&'a str>,
    pub named_paths: &'a [String],
    pub author_sub: &'a str,
    pub author_name: &'a str,
    pub author_email: Option<&'a str>,
    pub provenance: &'a serde_json::Value,
    pub findings: &'a serde_json::Value,
}

pub async fn insert(conn: &mut PgConnection, p: &NewProposal<'_>) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO proposals (team, project, path, kind, op, status, base_sha256, sha256, content,
                                named_paths, author_sub, author_name, author_email, provenance, findings)
         VALUES ($1, $2, $3, 'change', $4, 'pending', $5, $6, $7, $8, $9, $10, $11, $12, $13)
         RETURNING id",
    )
    .bind(p.project.team())
    .bind(p.project.as_str())
    .bind(p.path)
    .bind(op_str(p.op))
    .bind(p.base_sha256.map(|s| s.to_hex()))
    .bind(p.content.map(|c| Sha256::of(c.as_bytes()).to_hex()))
    .bind(p.content)
    .bind(p.named_paths)
    .bind(p.author_sub)
    .bind(p.author_name)
    .bind(p.author_email)
    .bind(p.provenance)
    .bind(p.findings)
    .fetch_one(&mut *conn)
    .await
}

/// The author's pending proposal for a path (at most one: a newer one supersedes it).
pub async fn pending_of(
    conn: &mut PgConnection,
    project: &ProjectId,
    path: &str,
    author_sub: &str,
) -> sqlx::Result<Option<Proposal>> {
    let row: Option<Row> = sqlx::query_as(concat!(
        "SELECT ",
        columns!(),
        ", NULL::text AS content FROM proposals
         WHERE team = $1 AND project = $2 AND path = $3 AND author_sub = $4
           AND kind = 'change' AND status = 'pending'"
    ))
    .bind(project.team())
    .bind(project.as_str())
    .bind(path)
    .bind(author_sub)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(Proposal::from))
}

/// The author's latest rejected proposal of exactly this change: the same content for a put,
/// a delete of the same base for a delete.
pub async fn rejected_like(
    conn: &mut PgConnection,
    project: &ProjectId,
    path: &str,
    author_sub: &str,
    op: PushOp,
    sha256: Option<&Sha256>,
    base: Option<&Sha256>,
) -> sqlx::Result<Option<Proposal>> {
    let row: Option<Row> = sqlx::query_as(concat!(
        "SELECT ",
        columns!(),
        ", NULL::text AS content FROM proposals
         WHERE team = $1 AND project = $2 AND path = $3 AND author_sub = $4
           AND kind = 'change' AND status = 'rejected' AND op = $5
           AND CASE WHEN $5 = 'put' THEN sha256 = $6 ELSE base_sha256 IS NOT DISTINCT FROM $7 END
         ORDER BY id DESC LIMIT 1"
    ))
    .bind(project.team())
    .bind(project.as_str())
    .bind(path)
    .bind(author_sub)
    .bind(op_str(op))
    .bind(sha256.map(Sha256::to_hex))
    .bind(base.map(Sha256::to_hex))
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(Proposal::from))
}

/// Marks a pending proposal superseded by a newer one of its author.
pub async fn supersede(conn: &mut PgConnection, id: i64) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE proposals SET status = 'superseded', reviewed_at = now()
         WHERE id = $1 AND status = 'pending'",
    )
    .bind(id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

pub async fn get<'e>(db: impl PgExecutor<'e>, id: i64) -> sqlx::Result<Option<Proposal>> {
    let row: Option<Row> = sqlx::query_as(concat!(
        "SELECT ",
        columns!(),
        ", content FROM proposals WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(db)
    .await?;
    Ok(row.map(Proposal::from))
}

/// The item, locked for the rest of the transaction (two reviewers deciding at once: the second
/// sees the first one's decision).
pub async fn lock(conn: &mut PgConnection, id: i64) -> sqlx::Result<Option<Proposal>> {
    let row: Option<Row> = sqlx::query_as(concat!(
        "SELECT ",
        columns!(),
        ", content FROM proposals WHERE id = $1 FOR UPDATE"
    ))
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(Proposal::from))
}

/// A reviewer's (or an author's withdrawing) decision on an open item.
pub struct Decision<'a> {
    pub status: ProposalStatus,
    pub reviewed_by: &'a str,
    pub reason: Option<&'a str>,
    pub note: Option<&'a str>,
    pub published_revision: Option<i64>,
}

/// Records the decision; returns the item as it is now.
pub async fn decide(conn: &mut PgConnection, id: i64, d: &Decision<'_>) -> sqlx::Result<Proposal> {
    let row: Row = sqlx::query_as(concat!(
        "UPDATE proposals SET status = $2, reviewed_by = $3, reviewed_at = now(),
                reason = coalesce($4, reason), note = $5, published_revision = $6
         WHERE id = $1 RETURNING ",
        columns!(),
        ", content"
    ))
    .bind(id)
    .bind(status_str(d.status))
    .bind(d.reviewed_by)
    .bind(d.reason)
    .bind(d.note)
    .bind(d.published_revision)
    .fetch_one(&mut *conn)
    .await?;
    Ok(row.into())
}

/// What a listing may show: items of `reviewed` teams (with `open` as the default status), and
/// the caller's own proposals (with pending and rejected as the default).
pub struct ListFilter<'a> {
    /// One project, or every project of the reachable teams.
    pub project: Option<&'a ProjectId>,
    /// Teams the caller reaches (None: every team, for a server admin).
    pub reachable: Option<&'a [String]>,
    /// Teams the caller reviews (None: every team).
    pub reviewed: Option<&'a [String]>,
    pub sub: &'a str,
    /// Only the caller's own proposals.
    pub mine: bool,
    /// The statuses asked for (None: the defaults above).
    pub statuses: Option<Vec<&'static str>>,
    pub limit: i64,
}

/// The items the filter shows, newest first, without content.
pub async fn list<'e>(db: impl PgExecutor<'e>, f: &ListFilter<'_>) -> sqlx::Result<Vec<Proposal>> {
    let rows: Vec<Row> = sqlx::query_as(concat!(
        "SELECT ",
        columns!(),
        ", NULL::text AS content FROM (
            SELECT *, NOT $6 AND ($4::text[] IS NULL OR team = ANY($4)) AS reviews FROM proposals
            WHERE ($1::text IS NULL OR (team = $2 AND project = $1))
              AND ($3::text[] IS NULL OR team = ANY($3))
         ) p
         WHERE (reviews OR (author_sub = $5 AND kind = 'change'))
           AND status = ANY(CASE WHEN $7::text[] IS NOT NULL THEN $7::text[]
                                 WHEN reviews THEN ARRAY['pending', 'due', 'flagged']
                                 ELSE ARRAY['pending', 'rejected'] END)
         ORDER BY created_at DESC, id DESC
         LIMIT $8"
    ))
    .bind(f.project.map(ProjectId::as_str))
    .bind(f.project.map(ProjectId::team))
    .bind(f.reachable)
    .bind(f.reviewed)
    .bind(f.sub)
    .bind(f.mine)
    .bind(f.statuses.as_deref())
    .bind(f.limit)
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(Proposal::from).collect())
}

/// A due item the queue made: (id, team, project, path, reason).
pub type Made = (i64, String, String, String, String);

/// Queues every live memory of the projects of `teams` (None: every team; `project`: only that
/// one) that was not changed or confirmed for its project's `review_after_days`, unless it has
/// an open due or flagged item already. The author is the memory's last writer.
pub async fn materialise_due(
    conn: &mut PgConnection,
    teams: Option<&[String]>,
    project: Option<&ProjectId>,
) -> sqlx::Result<Vec<Made>> {
    sqlx::query_as(
        "INSERT INTO proposals (team, project, path, kind, op, status, base_sha256, sha256,
                                author_sub, author_name, author_email, provenance, reason)
         SELECT m.team, m.project, m.path, 'due', 'put', 'due', m.sha256, m.sha256,
                r.author_sub, m.author_name, r.author_email,
                coalesce(v.provenance, jsonb_build_object(
                    'author', m.author_name, 'author_sub', r.author_sub,
                    'pushed_at', to_char(m.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))),
                format('not changed or confirmed for %s days (review_after = %s)',
                       floor(extract(epoch FROM now() - greatest(m.updated_at, m.confirmed_at)) / 86400)::bigint,
                       p.review_after_days)
         FROM projects p
         JOIN memories m ON m.team = p.team AND m.project = p.project
         JOIN revisions r ON r.team = m.team AND r.project = m.project AND r.revision = m.revision
         LEFT JOIN memory_versions v
                ON v.team = m.team AND v.project = m.project AND v.path = m.path AND v.revision = m.revision
         WHERE p.review_after_days IS NOT NULL AND p.archived_at IS NULL
           AND ($1::text[] IS NULL OR p.team = ANY($1))
           AND ($2::text IS NULL OR p.project = $2)
           AND NOT m.deleted
           AND m.path <> 'MEMORY.md' AND m.path NOT LIKE '%/MEMORY.md'
           AND greatest(m.updated_at, m.confirmed_at) < now() - make_interval(days => p.review_after_days)
           AND NOT EXISTS (
               SELECT 1 FROM proposals q
               WHERE q.team = m.team AND q.project = m.project AND q.path = m.path
                 AND q.kind <> 'change' AND q.status IN ('due', 'flagged'))
         ON CONFLICT DO NOTHING
         RETURNING id, team, project, path, reason",
    )
    .bind(teams)
    .bind(project.map(ProjectId::as_str))
    .fetch_all(&mut *conn)
    .await
}

/// Confirms the live version of a memory (a reviewer read it and it still holds); false when
/// the path is not live.
pub async fn confirm_memory(
    conn: &mut PgConnection,
    project: &ProjectId,
    path: &str,
) -> sqlx::Result<bool> {
    let r = sqlx::query(
        "UPDATE memories SET confirmed_at = now()
         WHERE team = $1 AND project = $2 AND path = $3 AND NOT deleted",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(path)
    .execute(&mut *conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// Open review items (pending, due, flagged) per project (`team/name`), of `teams` (None: every
/// team).
pub async fn open_counts<'e>(
    db: impl PgExecutor<'e>,
    teams: Option<&[String]>,
) -> sqlx::Result<std::collections::HashMap<String, i64>> {
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT project, count(*) FROM proposals
         WHERE status IN ('pending', 'due', 'flagged') AND ($1::text[] IS NULL OR team = ANY($1))
         GROUP BY project",
    )
    .bind(teams)
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().collect())
}
