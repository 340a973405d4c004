//! A project's release policy: `projects.review` and `projects.review_after_days`.

use memsync_core::ProjectId;
use memsync_core::wire::{ProjectSettings, ReviewMode};
use sqlx::{PgConnection, PgExecutor};

use super::memories::review_mode;

fn settings(review: &str, after: Option<i32>) -> ProjectSettings {
    ProjectSettings {
        review: review_mode(review),
        review_after_days: after.and_then(|d| u32::try_from(d).ok()),
    }
}

fn stored(mode: ReviewMode) -> &'static str {
    match mode {
        ReviewMode::Off => "off",
        ReviewMode::Required => "required",
    }
}

/// The project's settings (None: no such project).
pub async fn get<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
) -> sqlx::Result<Option<ProjectSettings>> {
    let row: Option<(String, Option<i32>)> = sqlx::query_as(
        "SELECT review, review_after_days FROM projects WHERE team = $1 AND project = $2",
    )
    .bind(project.team())
    .bind(project.as_str())
    .fetch_optional(db)
    .await?;
    Ok(row.map(|(r, a)| settings(&r, a)))
}

/// The settings, with the project row locked for the rest of the transaction.
pub async fn locked(
    conn: &mut PgConnection,
    project: &ProjectId,
) -> sqlx::Result<Option<ProjectSettings>> {
    let row: Option<(String, Option<i32>)> = sqlx::query_as(
        "SELECT review, review_after_days FROM projects WHERE team = $1 AND project = $2 FOR UPDATE",
    )
    .bind(project.team())
    .bind(project.as_str())
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|(r, a)| settings(&r, a)))
}

pub async fn set(
    conn: &mut PgConnection,
    project: &ProjectId,
    s: &ProjectSettings,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE projects SET review = $3, review_after_days = $4 WHERE team = $1 AND project = $2",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(stored(s.review))
    .bind(s.review_after_days.and_then(|d| i32::try_from(d).ok()))
    .execute(&mut *conn)
    .await?;
    Ok(())
}
