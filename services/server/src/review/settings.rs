//! A project's release policy, set by its team's admins: `review` (`off` or `required`) and
//! `review_after_days` (published memories not changed or confirmed for that long are due).

use memsync_core::ProjectId;
use memsync_core::wire::ProjectSettings;
use serde_json::json;
use sqlx::PgPool;

use crate::admin::audit::event as audit_event;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::store::{memories, settings};

/// The longest `review_after_days`: ten years.
pub const MAX_REVIEW_AFTER_DAYS: u32 = 3650;

pub async fn get(pool: &PgPool, project: &ProjectId) -> ApiResult<ProjectSettings> {
    settings::get(pool, project)
        .await?
        .ok_or_else(|| crate::sync::not_found(project))
}

/// Sets the policy (creating the project, as a first push does), audited with the old and new
/// values when they change; answers what is stored.
pub async fn put(
    pool: &PgPool,
    principal: &Principal,
    project: &ProjectId,
    new: ProjectSettings,
    request_id: Option<&str>,
) -> ApiResult<ProjectSettings> {
    if let Some(d) = new.review_after_days
        && !(1..=MAX_REVIEW_AFTER_DAYS).contains(&d)
    {
        return Err(ApiError::bad_request(
            "invalid_settings",
            format!(
                "`review_after_days` is {d}; give 1-{MAX_REVIEW_AFTER_DAYS} days, or null to turn due reviews off"
            ),
        ));
    }
    let mut tx = pool.begin().await?;
    memories::ensure_project(&mut tx, project).await?;
    let old = settings::locked(&mut tx, project)
        .await?
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("project vanished after creation")))?;
    if old != new {
        settings::set(&mut tx, project, &new).await?;
        audit_event(
            &mut *tx,
            principal,
            project,
            "settings_changed",
            None,
            None,
            request_id,
            json!({ "old": old, "new": new }),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(new)
}
