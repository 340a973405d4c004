//! Users granted the reviewer role for a team (`team_reviewers`; team admins review without a
//! grant).

use chrono::{DateTime, Utc};
use memsync_core::wire::ReviewerEntry;
use sqlx::{PgConnection, PgExecutor};

use super::memories::rfc3339;

/// The team's granted reviewers, oldest grant first.
pub async fn list<'e>(db: impl PgExecutor<'e>, team: &str) -> sqlx::Result<Vec<ReviewerEntry>> {
    let rows: Vec<(String, String, DateTime<Utc>)> = sqlx::query_as(
        "SELECT sub, added_by, created_at FROM team_reviewers WHERE team = $1 ORDER BY created_at, sub",
    )
    .bind(team)
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(user, added_by, at)| ReviewerEntry {
            user,
            added_by,
            created_at: rfc3339(at),
        })
        .collect())
}

/// Grants the role (creating the team if needed); false when the user had it already.
pub async fn add(
    conn: &mut PgConnection,
    team: &str,
    sub: &str,
    added_by: &str,
) -> sqlx::Result<bool> {
    sqlx::query("INSERT INTO teams (team) VALUES ($1) ON CONFLICT DO NOTHING")
        .bind(team)
        .execute(&mut *conn)
        .await?;
    let r = sqlx::query(
        "INSERT INTO team_reviewers (team, sub, added_by) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
    )
    .bind(team)
    .bind(sub)
    .bind(added_by)
    .execute(&mut *conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// Withdraws the role; false when the user did not have it.
pub async fn remove(conn: &mut PgConnection, team: &str, sub: &str) -> sqlx::Result<bool> {
    let r = sqlx::query("DELETE FROM team_reviewers WHERE team = $1 AND sub = $2")
        .bind(team)
        .bind(sub)
        .execute(&mut *conn)
        .await?;
    Ok(r.rows_affected() == 1)
}

pub async fn is_granted<'e>(db: impl PgExecutor<'e>, team: &str, sub: &str) -> sqlx::Result<bool> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM team_reviewers WHERE team = $1 AND sub = $2)")
        .bind(team)
        .bind(sub)
        .fetch_one(db)
        .await
}

/// The teams where `sub` was granted the role.
pub async fn teams_of<'e>(db: impl PgExecutor<'e>, sub: &str) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT team FROM team_reviewers WHERE sub = $1 ORDER BY team")
        .bind(sub)
        .fetch_all(db)
        .await
}
