//! The project list: every project the user administers, with its size, revision, last change,
//! open review items and archived state; filtered by name and paged.

use askama::Template;
use axum::extract::{Query, State};
use serde::Deserialize;

use super::render::age;
use super::{Console, Nav, PageResult, enc, html};
use crate::admin::{self, audit_scope};
use crate::state::AppState;
use crate::store::proposals;

/// Projects per page.
const PAGE: usize = 50;

#[derive(Deserialize)]
pub struct ProjectsQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    page: Option<usize>,
}

pub struct Row {
    pub project: String,
    pub url: String,
    pub files: i32,
    pub revision: i64,
    pub updated_at: String,
    pub updated_age: String,
    pub open_items: i64,
    pub archived: bool,
    /// Bytes stored against the project's quota, and whether it is nearly full.
    pub stored: String,
    pub nearly_full: bool,
}

#[derive(Template)]
#[template(path = "console/projects.html")]
struct ProjectsPage {
    nav: Option<Nav>,
    q: String,
    rows: Vec<Row>,
    total: usize,
    page: usize,
    pages: usize,
    prev: Option<String>,
    next: Option<String>,
}

pub async fn page(
    State(state): State<AppState>,
    console: Console,
    Query(query): Query<ProjectsQuery>,
) -> PageResult {
    console.require_admin()?;
    let p = &console.principal;
    let scope = audit_scope(p)?;
    let all = admin::projects::list(&state.pool, p).await?;
    let open = proposals::open_counts(&state.pool, scope.as_deref()).await?;
    let q = query.q.trim().to_lowercase();
    let matching: Vec<_> = all
        .into_iter()
        .filter(|r| q.is_empty() || r.project.to_lowercase().contains(&q))
        .collect();
    let total = matching.len();
    let pages = total.div_ceil(PAGE).max(1);
    let page = query.page.unwrap_or(1).clamp(1, pages);
    let now = chrono::Utc::now();
    let rows = matching
        .into_iter()
        .skip((page - 1) * PAGE)
        .take(PAGE)
        .map(|r| {
            let quota = state.limiter.settings().project_quota(&r.team);
            let (stored, nearly_full) = crate::limits::usage(r.bytes, quota);
            Row {
                url: format!("/admin/p/{}", r.project),
                stored,
                nearly_full,
                open_items: open.get(&r.project).copied().unwrap_or(0),
                updated_age: age(&r.updated_at, now),
                project: r.project,
                files: r.files,
                revision: r.revision,
                updated_at: r.updated_at,
                archived: r.archived_at.is_some(),
            }
        })
        .collect();
    let link = |n: usize| format!("/admin/projects?q={}&page={n}", enc(&query.q));
    html(&ProjectsPage {
        nav: console.nav("projects"),
        q: query.q.clone(),
        rows,
        total,
        page,
        pages,
        prev: (page > 1).then(|| link(page - 1)),
        next: (page < pages).then(|| link(page + 1)),
    })
}
