//! A project's scanner allowlist, for admins of its team: the findings let through (by
//! fingerprint, with the rule, the reason, who added it and when), adding one, and removing one
//! after a confirmation page. The same domain functions (and audit rows) as
//! `/v1/projects/{team}/{name}/allowlist`.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use memsync_core::ProjectId;
use memsync_core::text::Text;
use memsync_core::wire::{AllowlistAdd, AllowlistEntry};
use serde::Deserialize;

use super::audit::utc_display;
use super::render::age;
use super::{
    Console, Flash, Nav, PageError, PageResult, Posted, enc, html, project_url, see_other,
};
use crate::admin::{self, allowlist};
use crate::error::ApiError;
use crate::state::AppState;

pub struct Entry {
    pub fingerprint: String,
    pub rule: String,
    pub reason: String,
    pub added_by: String,
    pub created_at: String,
    pub created_display: String,
    pub created_age: String,
    pub remove_url: String,
}

fn entry(e: AllowlistEntry, base: &str, now: chrono::DateTime<chrono::Utc>) -> Entry {
    Entry {
        remove_url: format!("{base}?remove={}", enc(&e.fingerprint)),
        created_display: utc_display(&e.created_at),
        created_age: age(&e.created_at, now),
        fingerprint: e.fingerprint,
        rule: e.rule,
        reason: e.reason,
        added_by: e.added_by,
        created_at: e.created_at,
    }
}

/// The add form's fields, as typed (kept when it comes back with an error).
#[derive(Deserialize, Default)]
pub struct ChangeForm {
    #[serde(default)]
    op: String,
    #[serde(default)]
    fingerprint: String,
    #[serde(default)]
    rule: String,
    #[serde(default)]
    reason: String,
}

#[derive(Deserialize)]
pub struct PageQuery {
    /// A fingerprint: show the confirmation page of its removal.
    #[serde(default)]
    remove: String,
}

#[derive(Template)]
#[template(path = "console/allowlist.html")]
struct AllowlistPage {
    nav: Option<Nav>,
    project: String,
    project_url: String,
    action: String,
    entries: Vec<Entry>,
    form: ChangeForm,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "console/allowlist_remove.html")]
struct RemovePage {
    nav: Option<Nav>,
    project: String,
    project_url: String,
    action: String,
    entry: Entry,
}

/// The project, when the signed-in user administers its team.
fn administered(console: &Console, team: &str, name: &str) -> PageResult<ProjectId> {
    console.require_admin()?;
    Ok(admin::administered(&console.principal, team, name)?)
}

async fn list_page(
    state: &AppState,
    console: &Console,
    project: &ProjectId,
    form: ChangeForm,
    error: Option<String>,
) -> PageResult {
    let base = project_url(project, "/allowlist");
    let now = chrono::Utc::now();
    let entries = allowlist::list(&state.pool, project)
        .await?
        .entries
        .into_iter()
        .map(|e| entry(e, &base, now))
        .collect();
    let status = if error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let page = AllowlistPage {
        nav: console.nav("projects"),
        project: project.to_string(),
        project_url: project_url(project, ""),
        action: base,
        entries,
        form,
        error,
    };
    Ok((status, axum::response::Html(page.render()?)).into_response())
}

pub async fn page(
    State(state): State<AppState>,
    console: Console,
    Path((team, name)): Path<(String, String)>,
    Query(q): Query<PageQuery>,
) -> PageResult {
    let project = administered(&console, &team, &name)?;
    let fingerprint = q.remove.trim();
    if fingerprint.is_empty() {
        return list_page(&state, &console, &project, ChangeForm::default(), None).await;
    }
    let base = project_url(&project, "/allowlist");
    let found = allowlist::list(&state.pool, &project)
        .await?
        .entries
        .into_iter()
        .find(|e| e.fingerprint == fingerprint)
        .ok_or_else(|| {
            PageError::new(
                StatusCode::NOT_FOUND,
                format!(
                    "{project} has no allowlist entry {fingerprint} (was it removed already?); its allowlist page lists the entries."
                ),
            )
        })?;
    html(&RemovePage {
        nav: console.nav("projects"),
        project: project.to_string(),
        project_url: project_url(&project, ""),
        entry: entry(found, &base, chrono::Utc::now()),
        action: base,
    })
}

fn text(what: &str, s: &str) -> Result<Text, String> {
    Text::new(s.trim()).map_err(|e| format!("{what}: {e}."))
}

pub async fn change(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((team, name)): Path<(String, String)>,
    posted: Posted<ChangeForm>,
) -> PageResult {
    let Posted { console, form } = posted;
    let project = administered(&console, &team, &name)?;
    let back = project_url(&project, "/allowlist");
    let request_id = crate::http::request_id(&headers);
    match form.op.as_str() {
        "add" => {
            let req = match (
                text("Fingerprint", &form.fingerprint),
                text("Rule", &form.rule),
                text("Reason", &form.reason),
            ) {
                (Ok(fingerprint), Ok(rule), Ok(reason)) => AllowlistAdd {
                    fingerprint,
                    rule,
                    reason,
                },
                (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                    return list_page(&state, &console, &project, form, Some(e)).await;
                }
            };
            let fingerprint = req.fingerprint.to_string();
            let rule = req.rule.to_string();
            match allowlist::add(&state.pool, &console.principal, &project, req, request_id).await {
                Ok(added) => {
                    let text = if added {
                        format!(
                            "Added {fingerprint} ({rule}) to the allowlist of {project}: pushes with that exact finding are accepted from now on."
                        )
                    } else {
                        format!("{fingerprint} was on the allowlist of {project} already.")
                    };
                    console.tell(&state, Flash::ok(text)).await?;
                    Ok(see_other(&back))
                }
                Err(ApiError::Internal(e)) => Err(ApiError::Internal(e).into()),
                Err(e) => {
                    let msg = format!("Not added: {e}.");
                    list_page(&state, &console, &project, form, Some(msg)).await
                }
            }
        }
        "remove" => {
            let fingerprint = form.fingerprint.trim();
            let flash = match allowlist::remove(
                &state.pool,
                &console.principal,
                &project,
                fingerprint,
                request_id,
            )
            .await
            {
                Ok(()) => Flash::ok(format!(
                    "Removed {fingerprint} from the allowlist of {project}: a push with that finding is refused again."
                )),
                Err(ApiError::Internal(e)) => return Err(ApiError::Internal(e).into()),
                Err(e) => Flash::error(format!("Not removed: {e}.")),
            };
            console.tell(&state, flash).await?;
            Ok(see_other(&back))
        }
        other => Err(PageError::bad_request(format!(
            "The form asks for `{other}`; the allowlist takes `add` and `remove`. Reload the page and submit it again."
        ))),
    }
}
