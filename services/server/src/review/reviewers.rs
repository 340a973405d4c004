//! The reviewer role, granted per team by its team admins (who review without a grant). A
//! grant names the user by `sub`, what `memsync-server token issue --user` sets.

use memsync_core::project::valid_segment;
use memsync_core::text::Text;
use memsync_core::wire::Reviewers;
use serde_json::json;
use sqlx::PgPool;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::store::audit::{self, AuditEvent};
use crate::store::reviewers;

/// The team, if the caller administers it: another team is "not found", like its projects.
pub fn administered(principal: &Principal, team: &str) -> ApiResult<String> {
    if !valid_segment(team) {
        return Err(ApiError::bad_request(
            "invalid_team",
            "a team name is 1-100 lowercase letters, digits, `.`, `_` or `-`, starting with a letter or digit",
        ));
    }
    let c = &principal.claims;
    if principal.administers_team(team) {
        Ok(team.to_owned())
    } else if c.admin || c.teams.contains_key(team) {
        Err(ApiError::Forbidden(format!(
            "only admins of team `{team}` (or server admins) manage its reviewers, with a token not limited to some projects"
        )))
    } else {
        Err(ApiError::NotFound(format!(
            "no team `{team}` that your token can reach"
        )))
    }
}

fn user(user: &str) -> ApiResult<&str> {
    let ok = Text::new(user).is_ok()
        && !user.trim().is_empty()
        && user.trim() == user
        && user.len() <= 200;
    if ok {
        Ok(user)
    } else {
        Err(ApiError::bad_request(
            "invalid_user",
            "name the user by their `sub` (what `memsync-server token issue --user` set, as `GET /v1/me` shows it): 1-200 bytes without control characters or surrounding spaces",
        ))
    }
}

pub async fn list(pool: &PgPool, team: &str) -> ApiResult<Reviewers> {
    Ok(Reviewers {
        team: team.to_owned(),
        reviewers: reviewers::list(pool, team).await?,
    })
}

fn event<'a>(
    principal: &'a Principal,
    team: &'a str,
    action: &'a str,
    request_id: Option<&'a str>,
    sub: &str,
) -> AuditEvent<'a> {
    AuditEvent {
        team: Some(team),
        project: None,
        actor_sub: &principal.claims.sub,
        actor_name: Some(&principal.claims.name),
        action,
        path: None,
        revision: None,
        request_id,
        details: json!({ "user": sub }),
    }
}

/// Grants the role; false when the user had it already (nothing changes, nothing is audited).
pub async fn add(
    pool: &PgPool,
    principal: &Principal,
    team: &str,
    sub: &str,
    request_id: Option<&str>,
) -> ApiResult<bool> {
    let sub = user(sub)?;
    let mut tx = pool.begin().await?;
    let added = reviewers::add(&mut tx, team, sub, &principal.claims.sub).await?;
    if added {
        audit::record(
            &mut *tx,
            &event(principal, team, "reviewer_added", request_id, sub),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(added)
}

pub async fn remove(
    pool: &PgPool,
    principal: &Principal,
    team: &str,
    sub: &str,
    request_id: Option<&str>,
) -> ApiResult<()> {
    let sub = user(sub)?;
    let mut tx = pool.begin().await?;
    if !reviewers::remove(&mut tx, team, sub).await? {
        return Err(ApiError::NotFound(format!(
            "`{sub}` is not a granted reviewer of team `{team}` (team admins review without a grant; GET /v1/admin/teams/{team}/reviewers lists the grants)"
        )));
    }
    audit::record(
        &mut *tx,
        &event(principal, team, "reviewer_removed", request_id, sub),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
