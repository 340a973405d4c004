//! Projects, revisions, memory versions and the current state of every path.

use std::collections::HashMap;

use chrono::{DateTime, SecondsFormat, Utc};
use memsync_core::wire::{FileState, ProjectInfo, ReviewMode};
use memsync_core::{ProjectId, Sha256};
use sqlx::{PgConnection, PgExecutor};

/// The project row, locked for the rest of the transaction.
#[derive(Debug, Clone, Copy)]
pub struct LockedProject {
    pub revision: i64,
    pub files: i64,
    /// Bytes of its live files' content (what the storage quota counts).
    pub bytes: i64,
    /// An archived project is read-only.
    pub archived: bool,
    /// `review = required`: a push by a member who is not a reviewer becomes proposals.
    pub review_required: bool,
    /// The transaction's `now()`: the time of the revision it writes, known before writing it.
    pub at: DateTime<Utc>,
}

/// The stored state of one path.
#[derive(Debug, Clone)]
pub struct Stored {
    pub revision: i64,
    pub deleted: bool,
    pub sha256: Option<Sha256>,
    pub content: Option<String>,
    pub author_name: String,
    pub updated_at: DateTime<Utc>,
    /// A tombstone that disables the version before it (`enable` brings that back).
    pub disabled: bool,
    pub named_paths: Vec<String>,
}

impl Stored {
    pub fn to_file_state(&self, path: &str) -> FileState {
        FileState {
            path: path.to_owned(),
            revision: self.revision,
            deleted: self.deleted,
            sha256: self.sha256,
            content: self.content.clone(),
            author: self.author_name.clone(),
            updated_at: rfc3339(self.updated_at),
            named_paths: if self.deleted {
                Vec::new()
            } else {
                self.named_paths.clone()
            },
        }
    }
}

pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A new state of one path, written by a revision.
#[derive(Debug, Clone, Default)]
pub struct NewState {
    pub path: String,
    /// None for a tombstone.
    pub content: Option<String>,
    pub merged: bool,
    /// For a tombstone: it disables the live version instead of deleting it.
    pub disabled: bool,
    /// Repository paths the content names (`PushChange::named_paths`).
    pub named_paths: Vec<String>,
}

impl NewState {
    pub fn sha256(&self) -> Option<Sha256> {
        self.content.as_deref().map(|c| Sha256::of(c.as_bytes()))
    }
}

type StoredRow = (
    String,
    i64,
    bool,
    Option<String>,
    Option<String>,
    String,
    DateTime<Utc>,
    bool,
    Vec<String>,
);

fn stored_from_row(r: StoredRow) -> (String, Stored) {
    let (path, revision, deleted, sha, content, author_name, updated_at, disabled, named_paths) = r;
    (
        path,
        Stored {
            revision,
            deleted,
            sha256: sha.and_then(|s| s.parse().ok()),
            content,
            author_name,
            updated_at,
            disabled,
            named_paths,
        },
    )
}

/// The project's current revision: one primary-key lookup.
pub async fn revision<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar("SELECT revision FROM projects WHERE team = $1 AND project = $2")
        .bind(project.team())
        .bind(project.as_str())
        .fetch_optional(db)
        .await
}

pub async fn info<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
) -> sqlx::Result<Option<ProjectInfo>> {
    type InfoRow = (
        i64,
        i32,
        i64,
        DateTime<Utc>,
        DateTime<Utc>,
        String,
        Option<i32>,
    );
    let row: Option<InfoRow> = sqlx::query_as(
        "SELECT revision, files, bytes, created_at, updated_at, review, review_after_days
         FROM projects WHERE team = $1 AND project = $2",
    )
    .bind(project.team())
    .bind(project.as_str())
    .fetch_optional(db)
    .await?;
    Ok(row.map(
        |(revision, files, bytes, created, updated, review, after)| ProjectInfo {
            project: project.to_string(),
            revision,
            files: files.into(),
            bytes,
            created_at: rfc3339(created),
            updated_at: rfc3339(updated),
            review: review_mode(&review),
            review_after_days: after.and_then(|d| u32::try_from(d).ok()),
        },
    ))
}

/// Every path changed after `since` up to `upto`, in revision then path order.
pub async fn changes_since<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    since: i64,
    upto: i64,
) -> sqlx::Result<Vec<FileState>> {
    let rows: Vec<StoredRow> = sqlx::query_as(
        "SELECT path, revision, deleted, sha256, content, author_name, updated_at, disabled, named_paths
         FROM memories
         WHERE team = $1 AND project = $2 AND revision > $3 AND revision <= $4
         ORDER BY revision, path",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(since)
    .bind(upto)
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let (path, s) = stored_from_row(r);
            s.to_file_state(&path)
        })
        .collect())
}

/// One page of [`changes_since`]: at most `limit` files (more only when one revision alone has
/// more), cut between two revisions. Returns the files and the revision the page is complete up
/// to (every path whose latest revision is at most that is in it); that is `upto` when the page
/// holds everything.
pub async fn changes_page(
    pool: &sqlx::PgPool,
    project: &ProjectId,
    since: i64,
    upto: i64,
    limit: usize,
) -> sqlx::Result<(Vec<FileState>, i64)> {
    let rows: Vec<StoredRow> = sqlx::query_as(
        "SELECT path, revision, deleted, sha256, content, author_name, updated_at, disabled, named_paths
         FROM memories
         WHERE team = $1 AND project = $2 AND revision > $3 AND revision <= $4
         ORDER BY revision, path
         LIMIT $5",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(since)
    .bind(upto)
    .bind(i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX))
    .fetch_all(pool)
    .await?;
    let files = |rows: Vec<StoredRow>| -> Vec<FileState> {
        rows.into_iter()
            .map(|r| {
                let (path, s) = stored_from_row(r);
                s.to_file_state(&path)
            })
            .collect()
    };
    if rows.len() <= limit {
        return Ok((files(rows), upto));
    }
    let (last, next) = (rows[limit - 1].1, rows[limit].1);
    if next > last {
        // The page ends with a whole revision; nothing lies between `last` and `next`.
        let mut rows = rows;
        rows.truncate(limit);
        return Ok((files(rows), next - 1));
    }
    // The cut falls inside revision `last`: end the page before it, or, when that revision
    // alone fills the page, answer the whole revision.
    let whole: Vec<StoredRow> = rows.into_iter().filter(|r| r.1 < last).collect();
    if !whole.is_empty() {
        return Ok((files(whole), last - 1));
    }
    let one = changes_since(pool, project, last - 1, last).await?;
    Ok((one, last))
}

/// The stored `projects.review` as the wire's mode.
pub fn review_mode(stored: &str) -> ReviewMode {
    if stored == "required" {
        ReviewMode::Required
    } else {
        ReviewMode::Off
    }
}

/// Creates the team and the project if they do not exist yet.
pub async fn ensure_project(conn: &mut PgConnection, project: &ProjectId) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO teams (team) VALUES ($1) ON CONFLICT DO NOTHING")
        .bind(project.team())
        .execute(&mut *conn)
        .await?;
    sqlx::query("INSERT INTO projects (team, project) VALUES ($1, $2) ON CONFLICT DO NOTHING")
        .bind(project.team())
        .bind(project.as_str())
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Locks the project row: pushes to one project are applied one at a time, so revisions are
/// consecutive and every push sees the one before it.
///
/// `announce_after_commit`: the caller announces the revision it writes once it has committed
/// (`crate::bus::announce`), so the triggers stay silent in this transaction.
pub async fn lock_project(
    conn: &mut PgConnection,
    project: &ProjectId,
    announce_after_commit: bool,
) -> sqlx::Result<Option<LockedProject>> {
    // set_config in the select list: evaluated for the locked row (and only then matters).
    type Row = (i64, i32, i64, bool, bool, DateTime<Utc>, String);
    let row: Option<Row> = sqlx::query_as(
        "SELECT revision, files, bytes, archived_at IS NOT NULL, review = 'required', now(),
                set_config($3, CASE WHEN $4 THEN 'on' ELSE '' END, true)
         FROM projects WHERE team = $1 AND project = $2 FOR UPDATE",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(crate::bus::announce::AFTER_COMMIT_SETTING)
    .bind(announce_after_commit)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(
        |(revision, files, bytes, archived, review_required, at, _)| LockedProject {
            revision,
            files: files.into(),
            bytes,
            archived,
            review_required,
            at,
        },
    ))
}

/// What a push asks of the database right after taking the project lock (`PushSnapshot`).
pub struct SnapshotQuery<'a> {
    /// Every path the batch names.
    pub paths: &'a [String],
    /// Lower-cased paths and directory prefixes that a new path could clash with on disk
    /// (`memsync_core::tree::PathTree::lookup_keys`); both empty when the batch puts nothing.
    pub clash_exact: &'a [String],
    pub clash_prefixes: &'a [String],
    /// sha256 (hex) of every content the batch puts.
    pub hashes: &'a [String],
    /// (sub, key) of the push's `Idempotency-Key`.
    pub idempotency: Option<(&'a str, &'a str)>,
}

/// What a push reads under the project lock, read in one round trip.
pub struct PushSnapshot {
    /// The stored state of each path of the batch that the project has ever had.
    pub current: HashMap<String, Stored>,
    /// Live paths that may collide on disk with the batch's (`lower(path)` one of `clash_exact` or starting with one of `clash_prefixes`).
    pub clash_candidates: Vec<String>,
    /// (sha256, path it was purged from) of the batch's contents an admin purged.
    pub purged: Vec<(String, String)>,
    /// The stored answer of the push's idempotency key (a retry committed while it waited).
    pub replay: Option<crate::store::idempotency::Stored>,
}

#[derive(serde::Deserialize)]
struct StoredJson {
    path: String,
    revision: i64,
    deleted: bool,
    sha256: Option<String>,
    content: Option<String>,
    author_name: String,
    updated_at: DateTime<Utc>,
    disabled: bool,
    named_paths: Vec<String>,
}

#[derive(serde::Deserialize)]
struct ReplayJson {
    request_hash: String,
    status: i16,
    response: serde_json::Value,
    purged: bool,
}

/// Reads a push's `PushSnapshot` in one statement (each part is what `current`,
/// `clash_candidates`, `history::purged_hashes` and `idempotency::find` read), so that the
/// project lock is held for one round trip here instead of four.
pub async fn push_snapshot(
    conn: &mut PgConnection,
    project: &ProjectId,
    q: &SnapshotQuery<'_>,
) -> sqlx::Result<PushSnapshot> {
    type Row = (
        sqlx::types::Json<Vec<StoredJson>>,
        Vec<String>,
        sqlx::types::Json<Vec<(String, String)>>,
        Option<sqlx::types::Json<ReplayJson>>,
    );
    let (sub, key) = q.idempotency.unzip();
    let (current, clash_candidates, purged, replay): Row = sqlx::query_as(
        "SELECT
            (SELECT coalesce(json_agg(json_build_object(
                        'path', path, 'revision', revision, 'deleted', deleted, 'sha256', sha256,
                        'content', content, 'author_name', author_name, 'updated_at', updated_at,
                        'disabled', disabled, 'named_paths', named_paths)), '[]'::json)
             FROM memories WHERE team = $1 AND project = $2 AND path = ANY($3)),
            CASE WHEN cardinality($4::text[]) = 0 AND cardinality($5::text[]) = 0 THEN ARRAY[]::text[]
                 ELSE ARRAY(SELECT path FROM memories
                            WHERE team = $1 AND project = $2 AND NOT deleted
                              AND (lower(path) = ANY($4)
                                   OR EXISTS (SELECT 1 FROM unnest($5::text[]) p WHERE starts_with(lower(path), p)))
                            ORDER BY revision, path) END,
            (SELECT coalesce(json_agg(json_build_array(sha256, path)), '[]'::json)
             FROM purged_content WHERE team = $1 AND project = $2 AND sha256 = ANY($6)),
            (SELECT json_build_object('request_hash', request_hash, 'status', status,
                                      'response', response, 'purged', purged)
             FROM idempotency_keys WHERE team = $1 AND project = $2 AND sub = $7 AND key = $8)",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(q.paths)
    .bind(q.clash_exact)
    .bind(q.clash_prefixes)
    .bind(q.hashes)
    .bind(sub)
    .bind(key)
    .fetch_one(&mut *conn)
    .await?;
    Ok(PushSnapshot {
        current: current
            .0
            .into_iter()
            .map(|s| {
                stored_from_row((
                    s.path,
                    s.revision,
                    s.deleted,
                    s.sha256,
                    s.content,
                    s.author_name,
                    s.updated_at,
                    s.disabled,
                    s.named_paths,
                ))
            })
            .collect(),
        clash_candidates,
        purged: purged.0,
        replay: replay.map(|r| crate::store::idempotency::Stored {
            request_hash: r.0.request_hash,
            status: r.0.status,
            response: r.0.response,
            purged: r.0.purged,
        }),
    })
}

/// The stored state of each of `paths` that the project has ever had.
pub async fn current(
    conn: &mut PgConnection,
    project: &ProjectId,
    paths: &[String],
) -> sqlx::Result<HashMap<String, Stored>> {
    let rows: Vec<StoredRow> = sqlx::query_as(
        "SELECT path, revision, deleted, sha256, content, author_name, updated_at, disabled, named_paths
         FROM memories WHERE team = $1 AND project = $2 AND path = ANY($3)",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(paths)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows.into_iter().map(stored_from_row).collect())
}

/// How many of the project's live files are indexes (`MEMORY.md` of some directory).
pub async fn live_index_count(conn: &mut PgConnection, project: &ProjectId) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM memories
         WHERE team = $1 AND project = $2 AND NOT deleted
           AND (path = 'MEMORY.md' OR path LIKE '%/MEMORY.md')",
    )
    .bind(project.team())
    .bind(project.as_str())
    .fetch_one(&mut *conn)
    .await
}

/// The content of the version of `path` whose hash is `sha`, if any was ever stored.
pub async fn version_content(
    conn: &mut PgConnection,
    project: &ProjectId,
    path: &str,
    sha: &Sha256,
) -> sqlx::Result<Option<String>> {
    let row: Option<Option<String>> = sqlx::query_scalar(
        "SELECT content FROM memory_versions
         WHERE team = $1 AND project = $2 AND path = $3 AND sha256 = $4 LIMIT 1",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(path)
    .bind(sha.to_hex())
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.flatten())
}

/// Live paths under `dir` (all live paths for the root, `""`).
pub async fn live_paths_under(
    conn: &mut PgConnection,
    project: &ProjectId,
    dir: &str,
) -> sqlx::Result<Vec<String>> {
    // With the "C" collation, the paths under `d/` are exactly those in [`d/`, `d0`).
    let (lo, hi) = if dir.is_empty() {
        (String::new(), None)
    } else {
        (format!("{dir}/"), Some(format!("{dir}0")))
    };
    sqlx::query_scalar(
        "SELECT path FROM memories
         WHERE team = $1 AND project = $2 AND NOT deleted AND path >= $3 AND ($4::text IS NULL OR path < $4)",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(lo)
    .bind(hi)
    .fetch_all(&mut *conn)
    .await
}

/// The contents of live `paths`.
pub async fn live_contents(
    conn: &mut PgConnection,
    project: &ProjectId,
    paths: &[String],
) -> sqlx::Result<HashMap<String, String>> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT path, content FROM memories
         WHERE team = $1 AND project = $2 AND path = ANY($3) AND NOT deleted AND content IS NOT NULL",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(paths)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows.into_iter().collect())
}

/// Live memory files that may be feedback memories (a cheap text prefilter; callers parse).
pub async fn live_feedback_candidates(
    conn: &mut PgConnection,
    project: &ProjectId,
) -> sqlx::Result<Vec<(String, String)>> {
    sqlx::query_as(
        "SELECT path, content FROM memories
         WHERE team = $1 AND project = $2 AND NOT deleted AND content LIKE '%feedback%'
           AND path NOT LIKE '%MEMORY.md'",
    )
    .bind(project.team())
    .bind(project.as_str())
    .fetch_all(&mut *conn)
    .await
}

/// Who made a revision, what kind it is, and where its versions came from.
pub struct Author<'a> {
    pub sub: &'a str,
    pub name: &'a str,
    pub email: Option<&'a str>,
    pub request_id: Option<&'a str>,
    /// `push`, `approve`, `disable`, `enable`, `rollback`, `restore`, `delete`, `rescan`.
    pub kind: &'a str,
    /// The reason given, for history and the export's commit message.
    pub note: Option<&'a str>,
    /// `wire::VersionProvenance` of every version the revision writes.
    pub provenance: &'a serde_json::Value,
}

/// A revision's audit rows (one per new state, in order) and the push's stored answer.
pub struct RevisionRecord<'a> {
    /// One (action, details) per new state.
    pub actions: &'a [&'a str],
    pub details: &'a [serde_json::Value],
    /// (sub, key, request hash, answer) of the push's `Idempotency-Key`, stored with the
    /// revision (the answer names the revision, known under the lock before writing it).
    pub idempotency: Option<(&'a str, &'a str, &'a str, &'a serde_json::Value)>,
}

/// What writing a revision did.
pub struct Written {
    pub revision: i64,
    pub at: DateTime<Utc>,
    /// False when the idempotency key was taken meanwhile (the caller must roll back).
    pub idempotency_stored: bool,
}

/// Writes one revision in one statement, so the project lock is held for one round trip here:
/// bumps the counter, records the revision, appends every new version and moves the current
/// state, closes the open due and flagged review items of the paths written (what they were
/// about is no longer there: a disable, by a reviewer or a rescan, rejects a due item as
/// rejecting it would have, with the revision's note as the reason; an enable approves a
/// flagged item as approving it would have; any other write supersedes them), appends the audit
/// rows (the states', then the closed items') and stores the push's answer under its
/// idempotency key. Every live version is
/// recorded as checked by this process's scanner rule set (a write is screened with it).
pub async fn write_revision(
    conn: &mut PgConnection,
    project: &ProjectId,
    author: &Author<'_>,
    states: &[NewState],
    (files_delta, bytes_delta): (i64, i64),
    record: &RevisionRecord<'_>,
) -> sqlx::Result<Written> {
    let paths: Vec<&str> = states.iter().map(|s| s.path.as_str()).collect();
    let deleted: Vec<bool> = states.iter().map(|s| s.content.is_none()).collect();
    let shas: Vec<Option<String>> = states
        .iter()
        .map(|s| s.sha256().map(|h| h.to_hex()))
        .collect();
    let contents: Vec<Option<&str>> = states.iter().map(|s| s.content.as_deref()).collect();
    let sizes: Vec<i32> = states
        .iter()
        .map(|s| {
            s.content
                .as_ref()
                .map_or(0, |c| i32::try_from(c.len()).unwrap_or(i32::MAX))
        })
        .collect();
    let merged: Vec<bool> = states.iter().map(|s| s.merged).collect();
    let disabled: Vec<bool> = states
        .iter()
        .map(|s| s.disabled && s.content.is_none())
        .collect();
    // Postgres arrays cannot nest ragged arrays: each version's named paths travel as one
    // JSON array text.
    let named: Vec<String> = states
        .iter()
        .map(|s| serde_json::to_string(&s.named_paths).unwrap_or_else(|_| "[]".into()))
        .collect();
    let (idem_sub, idem_key, idem_hash, idem_body) = match record.idempotency {
        Some((sub, key, hash, body)) => (Some(sub), Some(key), Some(hash), Some(body)),
        None => (None, None, None, None),
    };
    let (revision, at, idempotency_stored): (i64, DateTime<Utc>, bool) = sqlx::query_as(
        "WITH p AS (
            UPDATE projects SET revision = revision + 1, files = files + $3, bytes = bytes + $4,
                                updated_at = now()
            WHERE team = $1 AND project = $2 RETURNING revision, updated_at
         ),
         r AS (
            INSERT INTO revisions (team, project, revision, author_sub, author_name, author_email,
                                   request_id, created_at, kind, note)
            SELECT $1, $2, p.revision, $5, $6, $7, $8, p.updated_at, $9, $10 FROM p
         ),
         v AS (
            INSERT INTO memory_versions (team, project, path, revision, deleted, sha256, content, size,
                                         merged, created_at, disabled, named_paths, provenance)
            SELECT $1, $2, t.p, p.revision, t.d, t.s, t.c, t.z, t.m, p.updated_at, t.x,
                   ARRAY(SELECT jsonb_array_elements_text(t.n::jsonb)), $11
            FROM p, UNNEST($12::text[], $13::bool[], $14::text[], $15::text[], $16::int[], $17::bool[],
                           $18::bool[], $19::text[]) AS t(p, d, s, c, z, m, x, n)
            RETURNING path, revision, deleted, sha256, content, size, disabled, named_paths, created_at
         ),
         m AS (
            INSERT INTO memories (team, project, path, revision, deleted, sha256, content, size,
                                  author_name, updated_at, disabled, named_paths, confirmed_at, rule_set)
            SELECT $1, $2, path, revision, deleted, sha256, content, size, $6, created_at, disabled,
                   named_paths, NULL, CASE WHEN deleted THEN NULL ELSE $20 END
            FROM v
            ON CONFLICT (team, project, path) DO UPDATE SET
               revision = EXCLUDED.revision, deleted = EXCLUDED.deleted, sha256 = EXCLUDED.sha256,
               content = EXCLUDED.content, size = EXCLUDED.size, author_name = EXCLUDED.author_name,
               updated_at = EXCLUDED.updated_at, disabled = EXCLUDED.disabled,
               named_paths = EXCLUDED.named_paths, confirmed_at = NULL, rule_set = EXCLUDED.rule_set
         ),
         c AS (
            UPDATE proposals SET
               status = CASE WHEN kind = 'due' AND $9 IN ('disable', 'rescan') THEN 'rejected'
                             WHEN kind = 'flagged' AND $9 = 'enable' THEN 'approved'
                             ELSE 'superseded' END,
               reason = CASE WHEN kind = 'due' AND $9 IN ('disable', 'rescan')
                             THEN coalesce(nullif($10, ''), format('disabled in revision %s', (SELECT revision FROM p)))
                             ELSE reason END,
               note = CASE WHEN kind = 'flagged' AND $9 = 'enable' THEN nullif($10, '') ELSE note END,
               published_revision = CASE WHEN kind = 'flagged' AND $9 = 'enable' THEN (SELECT revision FROM p)
                                         ELSE published_revision END,
               reviewed_by = $6, reviewed_at = now()
            WHERE team = $1 AND project = $2 AND path = ANY($12)
              AND kind <> 'change' AND status IN ('due', 'flagged')
            RETURNING id, path, kind, status, reason
         ),
         a AS (
            INSERT INTO audit_log (team, project, actor_sub, actor_name, action, path, revision,
                                   request_id, details)
            SELECT $1, $2, $5, $6, x.action, x.path, p.revision, $8, x.details
            FROM p, (
               SELECT 0 AS part, t.n AS ord, t.a AS action, t.p AS path, t.d AS details
               FROM UNNEST($12::text[], $21::text[], $22::jsonb[]) WITH ORDINALITY AS t(p, a, d, n)
               UNION ALL
               SELECT 1, c.id, CASE c.status WHEN 'rejected' THEN 'proposal_rejected'
                                             WHEN 'approved' THEN 'proposal_approved'
                                             ELSE 'proposal_superseded' END,
                      c.path,
                      jsonb_build_object('proposal_id', c.id, 'kind', c.kind, 'reason', c.reason,
                                         'by', $9::text)
               FROM c
            ) x
            ORDER BY x.part, x.ord
         ),
         i AS (
            INSERT INTO idempotency_keys (team, project, sub, key, request_hash, status, response)
            SELECT $1, $2, $23, $24, $25, 200, $26 WHERE $24::text IS NOT NULL
            ON CONFLICT DO NOTHING RETURNING 1
         )
         SELECT p.revision, p.updated_at, $24::text IS NULL OR EXISTS (SELECT 1 FROM i) FROM p",
    )
    .bind(project.team()) // $1
    .bind(project.as_str()) // $2
    .bind(i32::try_from(files_delta).unwrap_or(i32::MAX)) // $3
    .bind(bytes_delta) // $4
    .bind(author.sub) // $5
    .bind(author.name) // $6
    .bind(author.email) // $7
    .bind(author.request_id) // $8
    .bind(author.kind) // $9
    .bind(author.note) // $10
    .bind(author.provenance) // $11
    .bind(&paths) // $12
    .bind(&deleted) // $13
    .bind(&shas) // $14
    .bind(&contents) // $15
    .bind(&sizes) // $16
    .bind(&merged) // $17
    .bind(&disabled) // $18
    .bind(&named) // $19
    .bind(memsync_core::scan::rule_set_id()) // $20
    .bind(record.actions) // $21
    .bind(record.details) // $22
    .bind(idem_sub) // $23
    .bind(idem_key) // $24
    .bind(idem_hash) // $25
    .bind(idem_body) // $26
    .fetch_one(&mut *conn)
    .await?;
    Ok(Written {
        revision,
        at,
        idempotency_stored,
    })
}

/// The advisory lock held by whoever rescans ("memsync" and 2): one process at a time.
const RESCAN_LOCK_KEY: i64 = 0x6d65_6d73_796e_6302;

/// Takes the rescan lock on `conn` (a connection of its own: the lock lasts as long as its
/// session) if nobody holds it.
pub async fn try_lock_rescan(conn: &mut PgConnection) -> sqlx::Result<bool> {
    sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(RESCAN_LOCK_KEY)
        .fetch_one(conn)
        .await
}

pub async fn unlock_rescan(conn: &mut PgConnection) -> sqlx::Result<()> {
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(RESCAN_LOCK_KEY)
        .execute(conn)
        .await?;
    Ok(())
}

/// `rule_set` bound for the rescan queries: `None` selects every live memory (`rescan --all`),
/// `Some(id)` those not checked by rule set `id`.
fn stale_filter() -> &'static str {
    "NOT m.deleted AND m.content IS NOT NULL
     AND m.path <> 'MEMORY.md' AND m.path NOT LIKE '%/MEMORY.md'
     AND ($1::text IS NULL OR m.rule_set IS DISTINCT FROM $1)"
}

/// Projects with live memories (not indexes) to rescan, in name order.
pub async fn rescan_projects<'e>(
    db: impl PgExecutor<'e>,
    stale_for: Option<&str>,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT DISTINCT m.project FROM memories m WHERE {} ORDER BY m.project",
        stale_filter()
    )))
    .bind(stale_for)
    .fetch_all(db)
    .await
}

/// A live memory to rescan, with the source of its version.
#[derive(Debug, sqlx::FromRow)]
pub struct RescanCandidate {
    pub path: String,
    pub revision: i64,
    pub sha256: String,
    pub content: String,
    /// The version's stored `wire::VersionProvenance` (None for versions older than it).
    pub provenance: Option<serde_json::Value>,
    pub author_sub: String,
    pub author_name: String,
    pub written_at: DateTime<Utc>,
}

/// The next `limit` memories of `project` to rescan after path `after`, in path order.
pub async fn rescan_candidates<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    stale_for: Option<&str>,
    after: &str,
    limit: i64,
) -> sqlx::Result<Vec<RescanCandidate>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT m.path, m.revision, m.sha256, m.content, v.provenance, r.author_sub,
                r.author_name, r.created_at AS written_at
         FROM memories m
         JOIN memory_versions v
           ON v.team = m.team AND v.project = m.project AND v.path = m.path AND v.revision = m.revision
         JOIN revisions r ON r.team = m.team AND r.project = m.project AND r.revision = m.revision
         WHERE m.team = $2 AND m.project = $3 AND m.path > $4 AND {}
         ORDER BY m.path LIMIT $5",
        stale_filter()
    )))
    .bind(stale_for)
    .bind(project.team())
    .bind(project.as_str())
    .bind(after)
    .bind(limit)
    .fetch_all(db)
    .await
}

/// Records that rule set `rule_set` checked these live versions (path, revision); a version a
/// push replaced meanwhile is left alone (its push recorded its own rule set).
pub async fn mark_checked<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    rule_set: &str,
    versions: &[(String, i64)],
) -> sqlx::Result<u64> {
    let (paths, revisions): (Vec<&str>, Vec<i64>) =
        versions.iter().map(|(p, r)| (p.as_str(), *r)).unzip();
    let r = sqlx::query(
        "UPDATE memories m SET rule_set = $3
         FROM UNNEST($4::text[], $5::bigint[]) AS t(path, revision)
         WHERE m.team = $1 AND m.project = $2 AND m.path = t.path AND m.revision = t.revision
           AND NOT m.deleted",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(rule_set)
    .bind(&paths)
    .bind(&revisions)
    .execute(db)
    .await?;
    Ok(r.rows_affected())
}

/// One path of a project as the console lists it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Listed {
    pub path: String,
    pub revision: i64,
    pub deleted: bool,
    pub disabled: bool,
    pub content: Option<String>,
    pub author_name: String,
    pub updated_at: DateTime<Utc>,
    pub confirmed_at: Option<DateTime<Utc>>,
}

/// Every live path of the project (and disabled ones; with `deleted`, deleted ones too), by path.
pub async fn listing<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    deleted: bool,
) -> sqlx::Result<Vec<Listed>> {
    sqlx::query_as(
        "SELECT path, revision, deleted, disabled, content, author_name, updated_at, confirmed_at
         FROM memories
         WHERE team = $1 AND project = $2 AND (NOT deleted OR disabled OR $3)
         ORDER BY path",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(deleted)
    .fetch_all(db)
    .await
}

/// Every project's current revision, by `team/name` (what the revision bus loads).
pub async fn all_revisions<'e>(db: impl PgExecutor<'e>) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as("SELECT project, revision FROM projects")
        .fetch_all(db)
        .await
}
