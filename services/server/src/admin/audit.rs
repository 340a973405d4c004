//! The audit log: admin reads of it, scoped to the teams the caller administers, and the one
//! helper every admin action uses to write its row (in the action's own transaction).

use memsync_core::ProjectId;
use sqlx::PgPool;

use super::audit_scope;
use crate::auth::Principal;
use crate::error::ApiResult;
use crate::store::audit::{self, AuditEvent};
use crate::store::history::{self, AuditFilter, AuditRow};

pub async fn audit_page(
    pool: &PgPool,
    principal: &Principal,
    mut filter: AuditFilter,
) -> ApiResult<(Vec<AuditRow>, Option<i64>)> {
    filter.teams = audit_scope(principal)?;
    filter.limit = filter.limit.clamp(1, 1000);
    let limit = filter.limit;
    filter.limit += 1;
    let mut rows = history::audit(pool, &filter).await?;
    let next = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| r.id)
    } else {
        None
    };
    Ok((rows, next))
}

/// Audit rows as CSV, as the admin API's `format=csv` and the console's download give them: the
/// header line `id,at,team,project,actor,action,path,revision,request_id,details` (no
/// `actor_name`, as `openapi.yaml` says), then one line per row, every field quoted.
pub fn csv(rows: &[AuditRow]) -> String {
    let mut out =
        String::from("id,at,team,project,actor,action,path,revision,request_id,details\n");
    for r in rows {
        let fields = [
            r.id.to_string(),
            r.at.clone(),
            r.team.clone().unwrap_or_default(),
            r.project.clone().unwrap_or_default(),
            r.actor.clone(),
            r.action.clone(),
            r.path.clone().unwrap_or_default(),
            r.revision.map(|v| v.to_string()).unwrap_or_default(),
            r.request_id.clone().unwrap_or_default(),
            r.details.to_string(),
        ];
        let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}

fn csv_field(s: &str) -> String {
    // Quote always; a leading =,+,-,@ is prefixed so spreadsheets don't run it as a formula.
    let s = if s.starts_with(['=', '+', '-', '@']) {
        format!("'{s}")
    } else {
        s.to_owned()
    };
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Audits an action of `principal` on `project`.
#[allow(clippy::too_many_arguments)]
pub async fn event<'e>(
    db: impl sqlx::PgExecutor<'e>,
    principal: &Principal,
    project: &ProjectId,
    action: &str,
    path: Option<&str>,
    revision: Option<i64>,
    request_id: Option<&str>,
    details: serde_json::Value,
) -> ApiResult<()> {
    audit::record(
        db,
        &AuditEvent {
            team: Some(project.team()),
            project: Some(project.as_str()),
            actor_sub: &principal.claims.sub,
            actor_name: Some(&principal.claims.name),
            action,
            path,
            revision,
            request_id,
            details,
        },
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_every_field_and_defuses_formulas() {
        let row = AuditRow {
            id: 7,
            at: "2026-11-30T00:00:00Z".into(),
            team: Some("acme".into()),
            project: Some("acme/api".into()),
            actor: "=cmd".into(),
            actor_name: Some("Bob".into()),
            action: "push".into(),
            path: Some("a \"b\".md".into()),
            revision: Some(3),
            request_id: None,
            details: serde_json::json!({ "k": "v" }),
        };
        assert_eq!(
            csv(&[row]),
            "id,at,team,project,actor,action,path,revision,request_id,details\n\
             \"7\",\"2026-11-30T00:00:00Z\",\"acme\",\"acme/api\",\"'=cmd\",\"push\",\"a \"\"b\"\".md\",\"3\",\"\",\"{\"\"k\"\":\"\"v\"\"}\"\n"
        );
        assert_eq!(
            csv(&[]),
            "id,at,team,project,actor,action,path,revision,request_id,details\n"
        );
    }
}
