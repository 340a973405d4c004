//! The admin API's domain: who may administer what (here), the audit log (`audit`), memory
//! history, deletes, restores and purges (`memories`), disable, enable and rollback
//! (`release`), projects (`projects`), tokens (`tokens`) and the scanner's allowlist
//! (`allowlist`). Server admins act everywhere; team admins within their teams. Every admin
//! write commits together with its audit row; every admin read of memory content is itself
//! audited.

pub mod allowlist;
pub mod audit;
pub mod memories;
pub mod projects;
pub mod release;
pub mod tokens;

use memsync_core::ProjectId;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::sync;

/// The project, if the caller administers its team (otherwise "not found", like any project
/// the caller cannot reach).
pub fn administered(principal: &Principal, team: &str, name: &str) -> ApiResult<ProjectId> {
    let project = ProjectId::new(team, name)
        .map_err(|e| ApiError::bad_request("invalid_project", e.to_string()))?;
    if principal.is_team_admin(&project) {
        Ok(project)
    } else if principal.can_access(&project) {
        Err(ApiError::Forbidden(format!(
            "only admins of team `{}` (or server admins) can do this",
            project.team()
        )))
    } else {
        Err(sync::not_found(&project))
    }
}

/// The project, when the caller reviews its team: a team admin, a server admin, or a user granted
/// the reviewer role for the team (the release actions: disable, enable, rollback).
pub async fn reviewed(
    pool: &sqlx::PgPool,
    principal: &Principal,
    team: &str,
    name: &str,
) -> ApiResult<ProjectId> {
    match administered(principal, team, name) {
        Err(ApiError::Forbidden(_)) => {
            let project = ProjectId::new(team, name)
                .map_err(|e| ApiError::bad_request("invalid_project", e.to_string()))?;
            if crate::review::is_reviewer(pool, principal, project.team()).await? {
                Ok(project)
            } else {
                Err(ApiError::Forbidden(format!(
                    "only reviewers of team `{}` (its admins, and users a team admin granted the reviewer role) can do this",
                    project.team()
                )))
            }
        }
        other => other,
    }
}

/// The teams whose audit log the caller may read: None for a server admin (all).
pub fn audit_scope(principal: &Principal) -> ApiResult<Option<Vec<String>>> {
    if principal.is_server_admin() {
        return Ok(None);
    }
    let teams: Vec<String> = principal
        .claims
        .teams
        .keys()
        .filter(|t| principal.administers_team(t))
        .cloned()
        .collect();
    if teams.is_empty() {
        return Err(ApiError::Forbidden(
            "the audit log and the project list are for team admins and server admins (with a token not limited to some projects)".into(),
        ));
    }
    Ok(Some(teams))
}
