//! The scanner's per-project allowlist: team admins let one exact finding through (by its
//! fingerprint), audited. No comment in a file can switch the scanner off.

use memsync_core::ProjectId;
use memsync_core::wire::{Allowlist, AllowlistAdd};
use serde_json::json;
use sqlx::PgPool;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::store::allowlist;

fn require_admin(principal: &Principal, project: &ProjectId) -> ApiResult<()> {
    if principal.is_team_admin(project) {
        Ok(())
    } else {
        Err(ApiError::Forbidden(format!(
            "only admins of team `{}` can change the allowlist of {project}",
            project.team()
        )))
    }
}

pub async fn list(pool: &PgPool, project: &ProjectId) -> ApiResult<Allowlist> {
    Ok(Allowlist {
        entries: allowlist::list(pool, project).await?,
    })
}

pub async fn add(
    pool: &PgPool,
    principal: &Principal,
    project: &ProjectId,
    req: AllowlistAdd,
    request_id: Option<&str>,
) -> ApiResult<bool> {
    require_admin(principal, project)?;
    let fp = fingerprint(&req.fingerprint)?;
    let reason = req.reason.trim();
    if reason.is_empty() || reason.len() > 500 {
        return Err(ApiError::bad_request(
            "invalid_reason",
            "say in 1-500 characters why this finding is not a secret or an injection",
        ));
    }
    let rule = req.rule.trim();
    if rule.is_empty() || rule.len() > 100 {
        return Err(ApiError::bad_request(
            "invalid_rule",
            "`rule` is the rule id the refused push reported",
        ));
    }
    if crate::store::memories::revision(pool, project)
        .await?
        .is_none()
    {
        return Err(crate::sync::not_found(project));
    }
    let mut tx = pool.begin().await?;
    let added = allowlist::add(&mut *tx, project, fp, rule, reason, &principal.claims.sub).await?;
    crate::admin::audit::event(
        &mut *tx,
        principal,
        project,
        "allowlist_add",
        None,
        None,
        request_id,
        json!({ "fingerprint": fp, "rule": rule, "reason": reason, "new": added }),
    )
    .await?;
    tx.commit().await?;
    Ok(added)
}

pub async fn remove(
    pool: &PgPool,
    principal: &Principal,
    project: &ProjectId,
    fingerprint: &str,
    request_id: Option<&str>,
) -> ApiResult<()> {
    require_admin(principal, project)?;
    let fingerprint = self::fingerprint(fingerprint)?;
    let mut tx = pool.begin().await?;
    if !allowlist::remove(&mut *tx, project, fingerprint).await? {
        return Err(ApiError::NotFound(format!(
            "{project} has no allowlist entry {fingerprint}"
        )));
    }
    crate::admin::audit::event(
        &mut *tx,
        principal,
        project,
        "allowlist_remove",
        None,
        None,
        request_id,
        json!({ "fingerprint": fingerprint }),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// A finding's fingerprint: 64 lowercase hex characters.
fn fingerprint(fp: &str) -> ApiResult<&str> {
    let fp = fp.trim();
    if fp.len() != 64 || !fp.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(ApiError::bad_request(
            "invalid_fingerprint",
            "a fingerprint is the 64 lowercase hex characters a refused push reported",
        ));
    }
    Ok(fp)
}
