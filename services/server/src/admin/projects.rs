//! Projects as admins see them: the list (scoped like the audit log) and archiving.

use memsync_core::ProjectId;
use serde_json::json;
use sqlx::PgPool;

use super::audit::event as audit_event;
use super::audit_scope;
use crate::auth::Principal;
use crate::error::ApiResult;
use crate::store::history::{self, ProjectRow};
use crate::sync;

pub async fn list(pool: &PgPool, principal: &Principal) -> ApiResult<Vec<ProjectRow>> {
    let scope = audit_scope(principal)?;
    Ok(history::projects(pool, scope.as_deref()).await?)
}

pub async fn archive(
    pool: &PgPool,
    principal: &Principal,
    project: &ProjectId,
    archived: bool,
    request_id: Option<&str>,
) -> ApiResult<()> {
    if !history::set_archived(pool, project, archived).await? {
        return Err(sync::not_found(project));
    }
    audit_event(
        pool,
        principal,
        project,
        if archived {
            "project_archive"
        } else {
            "project_unarchive"
        },
        None,
        None,
        request_id,
        json!({}),
    )
    .await
}
