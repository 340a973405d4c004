//! The audit log: what was done, by whom, where, filtered by actor, project, action and time,
//! 50 rows a page (newest first, "Older →" by cursor), and the same filters as a CSV download.
//! Scoped like the admin API's `GET /v1/admin/audit`: team admins see their teams' rows, server
//! admins every row.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use chrono::{DateTime, NaiveDateTime, Utc};
use memsync_core::ProjectId;
use memsync_core::text::thousands;
use serde::Deserialize;

use super::render::age;
use super::{Console, Nav, PageError, PageResult, enc, project_url};
use crate::admin;
use crate::state::AppState;
use crate::store::history::{AuditFilter, AuditRow};

/// Rows per page.
const PAGE: i64 = 50;
/// The most rows one CSV download holds.
const CSV_MAX_ROWS: usize = 10_000;
/// Rows fetched per query while a CSV download is gathered (the domain's largest page).
const CSV_CHUNK: i64 = 1000;

/// Actions the filter suggests (`docs/admin.md` lists them; the field takes any action name).
const KNOWN_ACTIONS: [&str; 30] = [
    "write",
    "write_merged",
    "delete",
    "push_refused",
    "push_conflict",
    "proposed",
    "proposal_superseded",
    "proposal_approved",
    "proposal_rejected",
    "memory_confirmed",
    "review_due",
    "settings_changed",
    "reviewer_added",
    "reviewer_removed",
    "content_read",
    "admin_delete",
    "admin_restore",
    "purge",
    "memory_disabled",
    "memory_enabled",
    "memory_rolled_back",
    "rescan_disabled",
    "allowlist_add",
    "allowlist_remove",
    "project_archive",
    "project_unarchive",
    "token_issue",
    "token_revoke",
    "console_sign_in",
    "console_sign_out",
];

/// The filters, as the page's form and links carry them.
#[derive(Deserialize, Default, Clone)]
pub struct AuditQuery {
    #[serde(default)]
    actor: String,
    #[serde(default)]
    project: String,
    #[serde(default)]
    action: String,
    #[serde(default)]
    since: String,
    #[serde(default)]
    until: String,
    #[serde(default)]
    cursor: String,
}

impl AuditQuery {
    /// The filters (without the cursor) as a query string, `&`-prefixed parts included only when
    /// set.
    fn filters_query(&self) -> String {
        [
            ("actor", &self.actor),
            ("project", &self.project),
            ("action", &self.action),
            ("since", &self.since),
            ("until", &self.until),
        ]
        .iter()
        .filter(|(_, v)| !v.trim().is_empty())
        .map(|(k, v)| format!("{k}={}", enc(v.trim())))
        .collect::<Vec<_>>()
        .join("&")
    }

    fn link(&self, base: &str, cursor: Option<i64>) -> String {
        let mut q = self.filters_query();
        if let Some(c) = cursor {
            if !q.is_empty() {
                q.push('&');
            }
            q.push_str(&format!("cursor={c}"));
        }
        if q.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{q}")
        }
    }

    /// The domain's filter, or what is wrong with the input (to show on the page).
    fn filter(&self, limit: i64) -> Result<AuditFilter, String> {
        let text = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
        let project = match text(&self.project) {
            None => None,
            Some(p) => Some(
                p.parse::<ProjectId>()
                    .map_err(|e| format!("Project “{p}” is not `team/name` (e.g. acme/api): {e}."))?
                    .as_str()
                    .to_owned(),
            ),
        };
        let since = utc_input(&self.since).map_err(|e| format!("“From”: {e}"))?;
        let until = utc_input(&self.until).map_err(|e| format!("“Until”: {e}"))?;
        if let (Some(s), Some(u)) = (since, until)
            && s >= u
        {
            return Err(
                "“From” is not before “Until”: no event can match. Swap them or clear one.".into(),
            );
        }
        let before_id = match self.cursor.trim() {
            "" => None,
            c => Some(c.parse::<i64>().map_err(|_| {
                "The page link is damaged (its cursor is not a number); start again from the newest rows.".to_owned()
            })?),
        };
        Ok(AuditFilter {
            teams: None,
            team: None,
            project,
            actor: text(&self.actor),
            action: text(&self.action),
            path: None,
            since,
            until,
            before_id,
            limit,
        })
    }
}

/// A time from an HTML `datetime-local` input (`2026-11-30T14:05`, seconds optional), taken as
/// UTC; an RFC 3339 time (with its offset) is taken too, for hand-edited links. Empty: no bound.
pub fn utc_input(s: &str) -> Result<Option<DateTime<Utc>>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(Some(t.with_timezone(&Utc)));
    }
    for format in [
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M:%S%.f",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, format) {
            return Ok(Some(t.and_utc()));
        }
    }
    Err(format!(
        "“{s}” is not a date and time; give one like 2026-11-30T14:05 (UTC)."
    ))
}

/// An RFC 3339 time as the console shows it: `2026-11-30 14:05:09 UTC`.
pub fn utc_display(rfc3339: &str) -> String {
    DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| {
            t.with_timezone(&Utc)
                .format("%Y-%m-%d %H:%M:%S UTC")
                .to_string()
        })
        .unwrap_or_else(|_| rfc3339.to_owned())
}

pub struct Row {
    pub at: String,
    pub at_display: String,
    pub at_age: String,
    pub actor: String,
    /// The actor's display name, when it is not their `sub`.
    pub actor_name: Option<String>,
    pub actor_url: String,
    pub action: String,
    pub project: Option<String>,
    pub project_url: Option<String>,
    pub path: Option<String>,
    pub revision: Option<i64>,
    pub details: String,
    /// The start of long details, shown until the row is expanded.
    pub details_preview: Option<String>,
}

/// Details longer than this many characters are shown folded, with their start as the summary.
const DETAILS_PREVIEW_CHARS: usize = 60;

fn preview(details: &str) -> Option<String> {
    (details.chars().count() > DETAILS_PREVIEW_CHARS).then(|| {
        let mut s: String = details.chars().take(DETAILS_PREVIEW_CHARS).collect();
        s.push('…');
        s
    })
}

fn row(r: AuditRow, q: &AuditQuery, now: DateTime<Utc>) -> Row {
    let by_actor = AuditQuery {
        actor: r.actor.clone(),
        cursor: String::new(),
        ..q.clone()
    };
    let project_url = r
        .project
        .as_deref()
        .and_then(|p| p.parse::<ProjectId>().ok())
        .map(|p| project_url(&p, ""));
    let details = match &r.details {
        serde_json::Value::Object(m) if m.is_empty() => String::new(),
        serde_json::Value::Null => String::new(),
        d => d.to_string(),
    };
    Row {
        at_display: utc_display(&r.at),
        at_age: age(&r.at, now),
        at: r.at,
        actor_url: by_actor.link("/admin/audit", None),
        actor_name: r.actor_name.filter(|n| *n != r.actor),
        actor: r.actor,
        action: r.action,
        project: r.project,
        project_url,
        path: r.path,
        revision: r.revision,
        details_preview: preview(&details),
        details,
    }
}

#[derive(Template)]
#[template(path = "console/audit.html")]
struct AuditPage {
    nav: Option<Nav>,
    q: AuditQuery,
    actions: &'static [&'static str],
    error: Option<String>,
    rows: Vec<Row>,
    filtered: bool,
    /// On a page after the first: the link back to the newest rows.
    newest: Option<String>,
    older: Option<String>,
    csv: String,
    csv_max: String,
}

pub async fn page(
    State(state): State<AppState>,
    console: Console,
    Query(q): Query<AuditQuery>,
) -> PageResult {
    console.require_admin()?;
    let (error, rows, next) = match q.filter(PAGE) {
        Err(e) => (Some(e), Vec::new(), None),
        Ok(filter) => {
            let (rows, next) =
                admin::audit::audit_page(&state.pool, &console.principal, filter).await?;
            (None, rows, next)
        }
    };
    let now = Utc::now();
    let page = AuditPage {
        nav: console.nav("audit"),
        filtered: !q.filters_query().is_empty(),
        newest: (!q.cursor.trim().is_empty()).then(|| q.link("/admin/audit", None)),
        older: next.map(|c| q.link("/admin/audit", Some(c))),
        csv: q.link("/admin/audit.csv", None),
        csv_max: thousands(CSV_MAX_ROWS),
        rows: rows.into_iter().map(|r| row(r, &q, now)).collect(),
        actions: &KNOWN_ACTIONS,
        error,
        q,
    };
    let status = if page.error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    Ok((status, axum::response::Html(page.render()?)).into_response())
}

/// The rows the filters match, newest first, at most [`CSV_MAX_ROWS`], as a CSV attachment.
pub async fn csv(
    State(state): State<AppState>,
    console: Console,
    Query(q): Query<AuditQuery>,
) -> PageResult {
    console.require_admin()?;
    let mut filter = q.filter(CSV_CHUNK).map_err(|e| {
        PageError::bad_request(format!(
            "{e} Correct the filters on the audit page and download again."
        ))
    })?;
    let mut rows: Vec<AuditRow> = Vec::new();
    loop {
        filter.limit = CSV_CHUNK.min((CSV_MAX_ROWS - rows.len()) as i64);
        let (chunk, next) =
            admin::audit::audit_page(&state.pool, &console.principal, filter.clone()).await?;
        rows.extend(chunk);
        match next {
            Some(cursor) if rows.len() < CSV_MAX_ROWS => filter.before_id = Some(cursor),
            _ => break,
        }
    }
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/csv; charset=utf-8"),
            ),
            (
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static("attachment; filename=\"memsync-audit.csv\""),
            ),
        ],
        admin::audit::csv(&rows),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetime_local_inputs_are_utc() {
        let t = |s: &str| utc_input(s).unwrap().map(|t| t.to_rfc3339());
        assert_eq!(t(""), None);
        assert_eq!(t("  "), None);
        assert_eq!(
            t("2026-11-30T14:05").as_deref(),
            Some("2026-11-30T14:05:00+00:00")
        );
        assert_eq!(
            t("2026-11-30T14:05:09").as_deref(),
            Some("2026-11-30T14:05:09+00:00")
        );
        assert_eq!(
            t("2026-11-30T14:05:09.250").as_deref(),
            Some("2026-11-30T14:05:09.250+00:00")
        );
        // An explicit offset is honoured.
        assert_eq!(
            t("2026-11-30T14:05:00+02:00").as_deref(),
            Some("2026-11-30T12:05:00+00:00")
        );
        for bad in [
            "yesterday",
            "2026-11-30",
            "2026-13-01T00:00",
            "2026-11-30 14:05x",
        ] {
            let e = utc_input(bad).unwrap_err();
            assert!(e.contains(bad.trim()) && e.contains("UTC"), "{bad}: {e}");
        }
    }

    #[test]
    fn filters_are_checked_and_kept_in_links() {
        let q = AuditQuery {
            actor: " bob ".into(),
            project: "acme/api".into(),
            since: "2026-11-30T00:00".into(),
            ..AuditQuery::default()
        };
        let f = q.filter(50).unwrap();
        assert_eq!(f.actor.as_deref(), Some("bob"));
        assert_eq!(f.project.as_deref(), Some("acme/api"));
        assert_eq!(f.action, None);
        assert_eq!(f.limit, 50);
        assert_eq!(
            q.link("/admin/audit", Some(42)),
            "/admin/audit?actor=bob&project=acme%2Fapi&since=2026-11-30T00%3A00&cursor=42"
        );
        assert_eq!(
            AuditQuery::default().link("/admin/audit.csv", None),
            "/admin/audit.csv"
        );

        let bad = |q: AuditQuery| q.filter(50).unwrap_err();
        assert!(
            bad(AuditQuery {
                project: "acme".into(),
                ..AuditQuery::default()
            })
            .contains("team/name")
        );
        assert!(
            bad(AuditQuery {
                since: "2026-12-01T00:00".into(),
                until: "2026-11-30T00:00".into(),
                ..AuditQuery::default()
            })
            .contains("not before")
        );
        assert!(
            bad(AuditQuery {
                cursor: "x".into(),
                ..AuditQuery::default()
            })
            .contains("cursor")
        );
    }

    #[test]
    fn long_details_fold_behind_their_start() {
        assert_eq!(preview(r#"{"reason":"x"}"#), None);
        let long = format!(r#"{{"reason":"{}"}}"#, "é".repeat(80));
        let p = preview(&long).unwrap();
        assert_eq!(p.chars().count(), DETAILS_PREVIEW_CHARS + 1);
        assert!(p.ends_with('…') && long.starts_with(p.trim_end_matches('…')));
    }

    #[test]
    fn times_show_in_utc() {
        assert_eq!(
            utc_display("2026-11-30T14:05:09.123+01:00"),
            "2026-11-30 13:05:09 UTC"
        );
        assert_eq!(utc_display("not a time"), "not a time");
        assert_eq!(thousands(10_000), "10,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
