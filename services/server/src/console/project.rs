//! A project's memories as its agents see them: the `MEMORY.md` tree (every index's entries in
//! order, subdirectory indexes nested), then any memory no index lists, each with its type, name,
//! description, author, age and marks (disabled, deleted, due for review, unreadable frontmatter).
//! A text search narrows it to the memories whose path, name, description or body contain the text.

use std::collections::{HashMap, HashSet};

use askama::Template;
use axum::extract::{Path, Query, State};
use memsync_core::index::{Index, IndexItem};
use memsync_core::{MemoryDoc, ProjectId};
use serde::Deserialize;

use super::render::age;
use super::{Console, Nav, PageError, PageResult, enc, html, project_url};
use crate::admin;
use crate::state::AppState;
use crate::store::memories::{self, Listed};
use crate::store::proposals;

/// Rows per page.
const PAGE: usize = 100;
const INDEX: &str = "MEMORY.md";

#[derive(Deserialize)]
pub struct ProjectQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    page: Option<usize>,
    /// Also list deleted memories (to restore or purge them).
    #[serde(default)]
    deleted: Option<String>,
}

/// A mark next to a memory: a CSS class (`bad`, `warn`, or empty) and its text.
pub struct Mark {
    pub class: &'static str,
    pub text: String,
}

/// A row of the tree: an index (a `MEMORY.md`), a heading inside one, or a memory.
pub struct Row {
    pub depth: usize,
    pub kind: &'static str,
    pub path: String,
    pub url: String,
    pub title: String,
    pub memory_type: String,
    pub description: String,
    pub author: String,
    pub updated_at: String,
    pub updated_age: String,
    pub marks: Vec<Mark>,
}

impl Row {
    /// A heading of an index, or of the memories no index lists.
    fn heading(depth: usize, title: String) -> Row {
        Row {
            depth,
            kind: "heading",
            title,
            path: String::new(),
            url: String::new(),
            memory_type: String::new(),
            description: String::new(),
            author: String::new(),
            updated_at: String::new(),
            updated_age: String::new(),
            marks: Vec::new(),
        }
    }
}

#[derive(Template)]
#[template(path = "console/project.html")]
struct ProjectPage {
    nav: Option<Nav>,
    project: String,
    base_url: String,
    revision: i64,
    files: i64,
    /// Bytes stored against the quota, and whether it is nearly full.
    stored: String,
    nearly_full: bool,
    /// The limits in force for the project's team: (what, value).
    limits: Vec<(String, String)>,
    review: &'static str,
    review_after_days: Option<u32>,
    open_items: i64,
    q: String,
    with_deleted: bool,
    rows: Vec<Row>,
    matches: usize,
    page: usize,
    pages: usize,
    prev: Option<String>,
    next: Option<String>,
}

fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

fn join(dir: &str, target: &str) -> String {
    let target = target.trim_start_matches("./");
    if dir.is_empty() {
        target.to_owned()
    } else {
        format!("{dir}/{target}")
    }
}

struct Tree<'a> {
    by_path: HashMap<&'a str, &'a Listed>,
    seen: HashSet<String>,
    rows: Vec<Row>,
    ctx: &'a Ctx<'a>,
}

struct Ctx<'a> {
    project: &'a ProjectId,
    now: chrono::DateTime<chrono::Utc>,
    review_after_days: Option<u32>,
}

impl Ctx<'_> {
    fn memory_row(&self, depth: usize, m: &Listed, in_index: bool) -> Row {
        let doc = m.content.as_deref().map(MemoryDoc::parse);
        let mut marks = Vec::new();
        if m.disabled {
            marks.push(Mark {
                class: "bad",
                text: "disabled".into(),
            });
        } else if m.deleted {
            marks.push(Mark {
                class: "",
                text: "deleted".into(),
            });
        }
        if !m.deleted
            && let Some(days) = self.review_after_days
        {
            let last = m.confirmed_at.map_or(m.updated_at, |c| c.max(m.updated_at));
            let idle = (self.now - last).num_days();
            if idle >= i64::from(days) {
                marks.push(Mark {
                    class: "warn",
                    text: format!("review due: unconfirmed for {idle} days"),
                });
            }
        }
        if let Some(Err(_)) = &doc {
            marks.push(Mark {
                class: "bad",
                text: "frontmatter unreadable".into(),
            });
        }
        if !in_index && !m.deleted {
            marks.push(Mark {
                class: "warn",
                text: "in no MEMORY.md".into(),
            });
        }
        let doc = doc.and_then(Result::ok);
        let updated_at = memories::rfc3339(m.updated_at);
        Row {
            depth,
            kind: "memory",
            url: project_url(self.project, &format!("/memory?path={}", enc(&m.path))),
            title: doc
                .as_ref()
                .and_then(|d| d.name().map(str::to_owned))
                .unwrap_or_else(|| m.path.clone()),
            memory_type: doc
                .as_ref()
                .and_then(|d| d.raw_type().map(str::to_owned))
                .unwrap_or_default(),
            description: doc
                .as_ref()
                .and_then(|d| d.description().map(str::to_owned))
                .unwrap_or_default(),
            author: m.author_name.clone(),
            updated_age: age(&updated_at, self.now),
            updated_at,
            path: m.path.clone(),
            marks,
        }
    }
}

impl Tree<'_> {
    /// The index at `path` and, in its order, what it lists (recursing into linked indexes).
    fn index(&mut self, path: &str, depth: usize) {
        if depth > 16 || !self.seen.insert(path.to_owned()) {
            return;
        }
        let Some(listed) = self.by_path.get(path).copied() else {
            return;
        };
        self.rows.push(Row {
            depth,
            kind: "index",
            url: project_url(self.ctx.project, &format!("/memory?path={}", enc(path))),
            title: path.to_owned(),
            path: path.to_owned(),
            memory_type: String::new(),
            description: String::new(),
            author: listed.author_name.clone(),
            updated_age: age(&memories::rfc3339(listed.updated_at), self.ctx.now),
            updated_at: memories::rfc3339(listed.updated_at),
            marks: Vec::new(),
        });
        let index = Index::parse(listed.content.as_deref().unwrap_or(""));
        let dir = dir_of(path).to_owned();
        for item in &index.items {
            match item {
                IndexItem::Heading { text, .. } => {
                    self.rows.push(Row::heading(depth + 1, text.clone()))
                }
                IndexItem::Entry(e) => {
                    let target = join(&dir, &e.target);
                    if target.ends_with(INDEX) {
                        self.index(&target, depth + 1);
                    } else if let Some(m) = self.by_path.get(target.as_str()).copied()
                        && self.seen.insert(target.clone())
                    {
                        let row = self.ctx.memory_row(depth + 1, m, true);
                        self.rows.push(row);
                    }
                }
                IndexItem::Text(_) => {}
            }
        }
    }
}

fn matches(m: &Listed, row: &Row, q: &str) -> bool {
    let has = |s: &str| s.to_lowercase().contains(q);
    has(&m.path)
        || has(&row.title)
        || has(&row.description)
        || m.content.as_deref().is_some_and(has)
}

pub async fn page(
    State(state): State<AppState>,
    console: Console,
    Path((team, name)): Path<(String, String)>,
    Query(query): Query<ProjectQuery>,
) -> PageResult {
    let project = admin::administered(&console.principal, &team, &name)?;
    let info = memories::info(&state.pool, &project)
        .await?
        .ok_or_else(|| PageError::from(crate::sync::not_found(&project)))?;
    let with_deleted = query.deleted.as_deref().is_some_and(|d| !d.is_empty());
    let listed = memories::listing(&state.pool, &project, with_deleted).await?;
    let open_items = proposals::open_counts(&state.pool, Some(&[project.team().to_owned()]))
        .await?
        .get(project.as_str())
        .copied()
        .unwrap_or(0);
    let ctx = Ctx {
        project: &project,
        now: chrono::Utc::now(),
        review_after_days: info.review_after_days,
    };
    let q = query.q.trim().to_lowercase();
    let rows = if q.is_empty() {
        let mut tree = Tree {
            by_path: listed.iter().map(|m| (m.path.as_str(), m)).collect(),
            seen: HashSet::new(),
            rows: Vec::new(),
            ctx: &ctx,
        };
        tree.index(INDEX, 0);
        // Memories no index reaches (and, when asked for, deleted ones), after the tree.
        let rest: Vec<&Listed> = listed
            .iter()
            .filter(|m| !tree.seen.contains(&m.path) && !m.path.ends_with(INDEX))
            .collect();
        if !rest.is_empty() {
            tree.rows
                .push(Row::heading(0, "Not listed in any MEMORY.md".into()));
            for m in rest {
                let row = ctx.memory_row(1, m, false);
                tree.rows.push(row);
            }
        }
        tree.rows
    } else {
        listed
            .iter()
            .filter(|m| !m.path.ends_with(INDEX))
            .filter_map(|m| {
                let row = ctx.memory_row(0, m, true);
                matches(m, &row, &q).then_some(row)
            })
            .collect()
    };
    let total = rows.len();
    let pages = total.div_ceil(PAGE).max(1);
    let page = query.page.unwrap_or(1).clamp(1, pages);
    let matches = rows.iter().filter(|r| r.kind == "memory").count();
    let base_url = project_url(&project, "");
    let link = |n: usize| {
        format!(
            "{base_url}?q={}{}&page={n}",
            enc(&query.q),
            if with_deleted { "&deleted=1" } else { "" }
        )
    };
    let (prev, next) = (
        (page > 1).then(|| link(page - 1)),
        (page < pages).then(|| link(page + 1)),
    );
    let quota = state.limiter.settings().project_quota(project.team());
    let (stored, nearly_full) = crate::limits::usage(info.bytes, quota);
    html(&ProjectPage {
        nav: console.nav("projects"),
        project: project.to_string(),
        revision: info.revision,
        files: info.files,
        stored,
        nearly_full,
        limits: state.limiter.describe(project.team()),
        review: match info.review {
            memsync_core::wire::ReviewMode::Required => "required",
            memsync_core::wire::ReviewMode::Off => "off",
        },
        review_after_days: info.review_after_days,
        open_items,
        q: query.q.clone(),
        with_deleted,
        rows: rows
            .into_iter()
            .skip((page - 1) * PAGE)
            .take(PAGE)
            .collect(),
        matches,
        page,
        pages,
        prev,
        next,
        base_url,
    })
}
