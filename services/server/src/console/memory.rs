//! One memory: a version's content (frontmatter as fields, the body as safely rendered markdown),
//! its full history with provenance, a diff between any two versions, and the admin actions on
//! it — delete, restore, disable, enable, roll back, purge — each confirmed on its own page (a
//! reason always; purge also the path typed again) and reported on the memory's page.
//! Reading a version or a diff is audited (`content_read`), as through the API.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use memsync_core::{MemoryDoc, ProjectId, Sha256};
use serde::Deserialize;

use super::diff::DiffView;
use super::render::{age, field_text, markdown};
use super::{
    Console, Flash, Nav, PageError, PageResult, Posted, enc, html, project_url, see_other,
};
use crate::admin::{self, memories::AdminAct};
use crate::error::ApiError;
use crate::http::request_id;
use crate::idempotent::Idem;
use crate::state::AppState;
use crate::store::history::Version;

#[derive(Deserialize)]
pub struct MemoryQuery {
    path: String,
    #[serde(default)]
    rev: Option<i64>,
}

/// A row of the history table.
pub struct VersionRow {
    pub revision: i64,
    pub kind: String,
    pub state: &'static str,
    pub author: String,
    pub created_at: String,
    pub created_age: String,
    pub note: String,
    pub provenance: Vec<(String, String)>,
    pub size: i32,
    pub has_content: bool,
    pub url: String,
    pub selected: bool,
}

#[derive(Template)]
#[template(path = "console/memory.html")]
struct MemoryPage {
    nav: Option<Nav>,
    project: String,
    project_url: String,
    path: String,
    /// The state of the path now: `live`, `disabled`, `deleted` or `purged`.
    state: &'static str,
    shown_revision: i64,
    shown_is_latest: bool,
    shown_state: &'static str,
    fields: Vec<(String, String)>,
    /// The body rendered by `render::markdown` (safe to insert as HTML).
    body_html: String,
    /// Content that is not a readable memory, shown as escaped text.
    raw: Option<String>,
    problem: Option<String>,
    versions: Vec<VersionRow>,
    diff_from: i64,
    diff_to: i64,
    /// The actions the memory's state allows, as links to their confirmation pages.
    actions: Vec<ActionLink>,
}

pub struct ActionLink {
    pub href: String,
    pub label: &'static str,
    pub class: &'static str,
}

fn state_of(v: &Version) -> &'static str {
    if v.purged {
        "purged"
    } else if v.disabled {
        "disabled"
    } else if v.deleted {
        "deleted"
    } else {
        "live"
    }
}

fn provenance_fields(p: &Option<serde_json::Value>) -> Vec<(String, String)> {
    match p {
        Some(serde_json::Value::Object(m)) => m
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.replace('_', " "), field_text(v)))
            .collect(),
        _ => Vec::new(),
    }
}

fn memory_url(project: &ProjectId, path: &str, rev: Option<i64>) -> String {
    let rev = rev.map(|r| format!("&rev={r}")).unwrap_or_default();
    project_url(project, &format!("/memory?path={}{rev}", enc(path)))
}

pub async fn page(
    State(state): State<AppState>,
    console: Console,
    Path((team, name)): Path<(String, String)>,
    Query(q): Query<MemoryQuery>,
    headers: HeaderMap,
) -> PageResult {
    let project = admin::administered(&console.principal, &team, &name)?;
    let versions = admin::memories::history(&state.pool, &project, &q.path).await?;
    let latest = &versions[0];
    let shown = match q.rev {
        Some(r) => r,
        None => {
            versions
                .iter()
                .find(|v| !v.deleted && !v.purged)
                .unwrap_or(latest)
                .revision
        }
    };
    let (version, content) = admin::memories::show(
        &state.pool,
        &console.principal,
        &project,
        &q.path,
        shown,
        request_id(&headers),
    )
    .await?;
    let (mut fields, mut body_html, mut raw, mut problem) = (Vec::new(), String::new(), None, None);
    if let Some(text) = &content {
        if q.path.ends_with("MEMORY.md") {
            body_html = markdown(text);
        } else {
            match MemoryDoc::parse(text) {
                Ok(doc) => {
                    fields = doc
                        .frontmatter()
                        .iter()
                        .map(|(k, v)| (k.clone(), field_text(v)))
                        .collect();
                    body_html = markdown(doc.body());
                }
                Err(p) => {
                    problem = Some(p.to_string());
                    raw = Some(text.clone());
                }
            }
        }
    }
    let now = chrono::Utc::now();
    let rows = versions
        .iter()
        .map(|v| VersionRow {
            revision: v.revision,
            kind: v.kind.clone(),
            state: state_of(v),
            author: v.author.clone(),
            created_age: age(&v.created_at, now),
            created_at: v.created_at.clone(),
            note: v.note.clone().unwrap_or_default(),
            provenance: provenance_fields(&v.provenance),
            size: v.size,
            has_content: !v.deleted && !v.purged,
            url: memory_url(&project, &q.path, Some(v.revision)),
            selected: v.revision == shown,
        })
        .collect::<Vec<_>>();
    let now_state = state_of(latest);
    let with_content: Vec<i64> = rows
        .iter()
        .filter(|r| r.has_content)
        .map(|r| r.revision)
        .collect();
    let mut actions = Vec::new();
    match now_state {
        "live" => {
            actions.push(("disable", "Disable…", None));
            actions.push(("delete", "Delete…", None));
            if version.revision != latest.revision && !version.deleted && !version.purged {
                actions.push(("rollback", "Roll back to this version…", Some(shown)));
            }
        }
        "disabled" => actions.push(("enable", "Enable…", None)),
        "deleted" => {
            if let Some(r) = with_content.first() {
                actions.push(("restore", "Restore…", Some(*r)));
            }
        }
        _ => {}
    }
    if !with_content.is_empty() {
        actions.push(("purge", "Purge from history…", None));
    }
    let actions = actions
        .into_iter()
        .map(
            |(action, label, rev): (&str, &'static str, Option<i64>)| ActionLink {
                href: project_url(
                    &project,
                    &format!(
                        "/act?action={action}&path={}{}",
                        enc(&q.path),
                        rev.map(|r| format!("&rev={r}")).unwrap_or_default()
                    ),
                ),
                label,
                class: if matches!(action, "purge" | "delete" | "disable") {
                    "danger"
                } else {
                    "secondary"
                },
            },
        )
        .collect();
    let diff_to = with_content.first().copied().unwrap_or(latest.revision);
    let diff_from = with_content.get(1).copied().unwrap_or(diff_to);
    html(&MemoryPage {
        nav: console.nav("projects"),
        project: project.to_string(),
        project_url: project_url(&project, ""),
        path: q.path.clone(),
        state: now_state,
        shown_revision: shown,
        shown_is_latest: shown == latest.revision,
        shown_state: state_of(&version),
        fields,
        body_html,
        raw,
        problem,
        versions: rows,
        diff_from,
        diff_to,
        actions,
    })
}

#[derive(Deserialize)]
pub struct DiffQuery {
    path: String,
    from: i64,
    to: i64,
    #[serde(default)]
    view: Option<String>,
}

#[derive(Template)]
#[template(path = "console/memory_diff.html")]
struct DiffPage {
    nav: Option<Nav>,
    project: String,
    project_url: String,
    memory_url: String,
    path: String,
    path_q: String,
    from: i64,
    to: i64,
    diff: DiffView,
}

pub async fn diff(
    State(state): State<AppState>,
    console: Console,
    Path((team, name)): Path<(String, String)>,
    Query(q): Query<DiffQuery>,
    headers: HeaderMap,
) -> PageResult {
    let project = admin::administered(&console.principal, &team, &name)?;
    let patch = admin::memories::diff(
        &state.pool,
        &console.principal,
        &project,
        &q.path,
        q.from,
        q.to,
        request_id(&headers),
    )
    .await?;
    let split = q.view.as_deref() == Some("split");
    html(&DiffPage {
        nav: console.nav("projects"),
        project: project.to_string(),
        project_url: project_url(&project, ""),
        memory_url: memory_url(&project, &q.path, None),
        path_q: enc(&q.path),
        path: q.path.clone(),
        from: q.from,
        to: q.to,
        diff: DiffView::new(&patch, split),
    })
}

/// An action on a memory, as the confirmation page and the form name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Delete,
    Restore,
    Disable,
    Enable,
    Rollback,
    Purge,
}

impl Action {
    fn parse(s: &str) -> PageResult<Action> {
        Ok(match s {
            "delete" => Action::Delete,
            "restore" => Action::Restore,
            "disable" => Action::Disable,
            "enable" => Action::Enable,
            "rollback" => Action::Rollback,
            "purge" => Action::Purge,
            _ => {
                return Err(PageError::bad_request(format!(
                    "There is no action `{s}`: the actions are delete, restore, disable, enable, rollback and purge."
                )));
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Action::Delete => "delete",
            Action::Restore => "restore",
            Action::Disable => "disable",
            Action::Enable => "enable",
            Action::Rollback => "rollback",
            Action::Purge => "purge",
        }
    }

    fn needs_revision(self) -> bool {
        matches!(self, Action::Restore | Action::Rollback)
    }

    /// What the confirmation page says will happen.
    fn consequence(self) -> &'static str {
        match self {
            Action::Delete => {
                "Deleting writes a new revision without this memory: every member's next pull removes it from their team directory. Its history stays, and it can be restored."
            }
            Action::Restore => {
                "Restoring writes the chosen version back as a new revision: every member's next pull brings it back."
            }
            Action::Disable => {
                "Disabling takes the memory out of every member's team directory at their next pull, and keeps it ready to enable again. Pushes of this path are refused while it is disabled."
            }
            Action::Enable => {
                "Enabling puts back the version that was disabled, as a new revision that every member's next pull brings."
            }
            Action::Rollback => {
                "Rolling back writes the chosen older version as a new revision that every member's next pull brings."
            }
            Action::Purge => {
                "Purging erases this memory's content from every version in the history and from the git export. It cannot be undone. Use it for content that must not be kept at all, such as a leaked secret."
            }
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Action::Delete => "Delete",
            Action::Restore => "Restore",
            Action::Disable => "Disable",
            Action::Enable => "Enable",
            Action::Rollback => "Roll back",
            Action::Purge => "Purge",
        }
    }

    fn reason_required(self) -> bool {
        matches!(self, Action::Delete | Action::Restore | Action::Purge)
    }
}

#[derive(Deserialize)]
pub struct ConfirmQuery {
    action: String,
    path: String,
    #[serde(default)]
    rev: Option<i64>,
}

#[derive(Template)]
#[template(path = "console/confirm.html")]
struct ConfirmPage {
    nav: Option<Nav>,
    project: String,
    project_url: String,
    memory_url: String,
    action: &'static str,
    verb: &'static str,
    consequence: &'static str,
    path: String,
    rev: Option<i64>,
    reason: String,
    reason_required: bool,
    typed_path: bool,
    key: String,
    csrf: String,
    error: Option<String>,
}

fn confirm_page(
    console: &Console,
    project: &ProjectId,
    action: Action,
    path: &str,
    rev: Option<i64>,
    reason: &str,
    error: Option<String>,
) -> PageResult {
    let status = if error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let page = ConfirmPage {
        nav: console.nav("projects"),
        project: project.to_string(),
        project_url: project_url(project, ""),
        memory_url: memory_url(project, path, None),
        action: action.name(),
        verb: action.verb(),
        consequence: action.consequence(),
        path: path.to_owned(),
        rev,
        reason: reason.to_owned(),
        reason_required: action.reason_required(),
        typed_path: action == Action::Purge,
        key: uuid::Uuid::new_v4().to_string(),
        csrf: console.csrf.clone(),
        error,
    };
    Ok((status, html(&page)?).into_response())
}

pub async fn confirm(
    console: Console,
    Path((team, name)): Path<(String, String)>,
    Query(q): Query<ConfirmQuery>,
) -> PageResult {
    let project = admin::administered(&console.principal, &team, &name)?;
    let action = Action::parse(&q.action)?;
    if action.needs_revision() && q.rev.is_none() {
        return Err(PageError::bad_request(
            "Choose the version to bring back: open the memory's history and use the action on a version.",
        ));
    }
    confirm_page(&console, &project, action, &q.path, q.rev, "", None)
}

#[derive(Deserialize)]
pub struct ActForm {
    action: String,
    path: String,
    #[serde(default)]
    rev: Option<i64>,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    confirm_path: String,
    #[serde(default)]
    key: String,
}

pub async fn act(
    State(state): State<AppState>,
    Path((team, name)): Path<(String, String)>,
    headers: HeaderMap,
    Posted { console, form }: Posted<ActForm>,
) -> PageResult {
    let project = admin::administered(&console.principal, &team, &name)?;
    let action = Action::parse(&form.action)?;
    let again = |error: String| {
        confirm_page(
            &console,
            &project,
            action,
            &form.path,
            form.rev,
            &form.reason,
            Some(error),
        )
    };
    let reason = form.reason.trim();
    if action.reason_required() && reason.is_empty() {
        return again("Give a reason: it goes into the audit log.".into());
    }
    if action == Action::Purge && form.confirm_path.trim() != form.path {
        return again(format!(
            "To purge, type the memory's path exactly as shown ({}).",
            form.path
        ));
    }
    let rev = match (action.needs_revision(), form.rev) {
        (true, None) => return again("Choose the version to bring back.".into()),
        (_, r) => r,
    };
    let hash = Sha256::of(
        format!(
            "console\n{}\n{}\n{:?}\n{reason}",
            action.name(),
            form.path,
            rev
        )
        .as_bytes(),
    )
    .to_hex();
    let act = AdminAct {
        principal: &console.principal,
        project: &project,
        reason,
        request_id: request_id(&headers),
        idem: (!form.key.is_empty()).then(|| Idem {
            key: format!("console-{}", form.key),
            hash,
        }),
    };
    let back = memory_url(&project, &form.path, None);
    if act.replay(&state.pool).await?.is_some() {
        console
            .tell(
                &state,
                Flash::ok(format!(
                    "This {} of {} was already done.",
                    action.name(),
                    form.path
                )),
            )
            .await?;
        return Ok(see_other(&back));
    }
    let (pool, limits, path) = (&state.pool, state.limits, form.path.as_str());
    let done: Result<String, ApiError> = match action {
        Action::Delete => admin::memories::delete(pool, limits, &act, path)
            .await
            .map(|r| {
                format!(
                    "Deleted {path} at revision {}: members' next pull removes it.",
                    r.revision
                )
            }),
        Action::Restore => {
            admin::memories::restore(pool, limits, &act, path, rev.unwrap_or_default())
                .await
                .map(|r| format!("Restored {path} as revision {}.", r.revision))
        }
        Action::Disable => admin::release::disable(pool, limits, &act, path)
            .await
            .map(|r| {
                format!(
                    "Disabled {path} at revision {}: members' next pull removes it.",
                    r.revision
                )
            }),
        Action::Enable => admin::release::enable(pool, limits, &act, path)
            .await
            .map(|r| format!("Enabled {path} again at revision {}.", r.revision)),
        Action::Rollback => {
            admin::release::rollback(pool, limits, &act, path, rev.unwrap_or_default())
                .await
                .map(|r| {
                    format!(
                        "Rolled {path} back to revision {} as revision {}.",
                        rev.unwrap_or_default(),
                        r.revision
                    )
                })
        }
        Action::Purge => admin::memories::purge(pool, limits, &act, path)
            .await
            .map(|p| {
                format!(
                    "Purged {path}: its content is erased from {} stored version(s){}.",
                    p.versions,
                    if p.export_rewritten {
                        " and from the git export"
                    } else {
                        "; the git export is rewritten in the background"
                    }
                )
            }),
    };
    let flash = match done {
        Ok(text) => Flash::ok(text),
        Err(e @ (ApiError::Internal(_) | ApiError::Unavailable { .. })) => return Err(e.into()),
        Err(e) => Flash::error(format!("Could not {} {path}: {e}", action.name())),
    };
    console.tell(&state, flash).await?;
    Ok(see_other(&back))
}
