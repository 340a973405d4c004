//! The review queue: the items of the teams the user reviews (open ones by default, newest
//! first, filtered by project and status, 50 a page), one item (summary, provenance, stale
//! warning, feedback findings, diff, the content rendered safely) and the approve / reject forms.
//! The same domain functions as `/v1/proposals`, so the same scoping, audit rows and
//! idempotency: each form carries a random key, and a second submit of it is answered with the
//! first decision instead of deciding twice.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use memsync_core::memory::MemoryDoc;
use memsync_core::text::Text;
use memsync_core::wire::{
    Lifecycle, ProposalApprove, ProposalDecision, ProposalDetail, ProposalReject, ProposalStatus,
    ProposalSummary, PushOp,
};
use memsync_core::{ProjectId, Sha256};
use serde::Deserialize;
use uuid::Uuid;

use super::audit::utc_display;
use super::diff::DiffView;
use super::render::{age, field_text, markdown};
use super::{Console, Flash, Nav, PageError, PageResult, Posted, enc, project_url, see_other};
use crate::error::ApiError;
use crate::idempotent::Idem;
use crate::review::decision::{self, Actor, Answer};
use crate::review::queue;
use crate::state::AppState;
use crate::store::proposals::status_str;

/// Items per page.
const PAGE: usize = 50;

/// The status filter's choices: (value, label).
const STATUSES: [(&str, &str); 8] = [
    ("open", "Open (pending, due, flagged)"),
    ("all", "All"),
    ("pending", "Pending changes"),
    ("due", "Due for a re-read"),
    ("flagged", "Flagged by a rescan"),
    ("approved", "Approved"),
    ("rejected", "Rejected"),
    ("superseded", "Superseded"),
];

fn op_str(op: PushOp) -> &'static str {
    match op {
        PushOp::Put => "put",
        PushOp::Delete => "delete",
    }
}

fn lifecycle_str(l: Lifecycle) -> &'static str {
    match l {
        Lifecycle::Dated => "dated",
        Lifecycle::Evergreen => "evergreen",
    }
}

/// The badge class of a status.
fn status_class(s: ProposalStatus) -> &'static str {
    match s {
        ProposalStatus::Pending | ProposalStatus::Due => "warn",
        ProposalStatus::Flagged | ProposalStatus::Rejected => "bad",
        ProposalStatus::Approved => "good",
        ProposalStatus::Superseded => "",
    }
}

fn item_url(id: i64) -> String {
    format!("/admin/review/{id}")
}

#[derive(Deserialize, Default)]
pub struct ListQuery {
    #[serde(default)]
    project: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    page: String,
}

pub struct Choice {
    pub value: &'static str,
    pub label: &'static str,
    pub selected: bool,
}

pub struct Row {
    pub url: String,
    /// The queue filtered to this item's project.
    pub project_url: String,
    pub id: i64,
    pub project: String,
    pub path: String,
    pub op: &'static str,
    pub author: String,
    pub created_at: String,
    pub created_age: String,
    pub status: &'static str,
    pub status_class: &'static str,
    pub lifecycle: &'static str,
    pub reason: Option<String>,
}

fn row(p: ProposalSummary, now: chrono::DateTime<chrono::Utc>) -> Row {
    Row {
        url: item_url(p.id),
        project_url: format!("/admin/review?project={}", enc(&p.project)),
        id: p.id,
        created_age: age(&p.created_at, now),
        op: op_str(p.op),
        status: status_str(p.status),
        status_class: status_class(p.status),
        lifecycle: lifecycle_str(p.lifecycle),
        project: p.project,
        path: p.path,
        author: p.author,
        created_at: p.created_at,
        reason: p.reason,
    }
}

#[derive(Template)]
#[template(path = "console/review_list.html")]
struct ListPage {
    nav: Option<Nav>,
    project: String,
    status: String,
    statuses: Vec<Choice>,
    error: Option<String>,
    rows: Vec<Row>,
    total: usize,
    /// The domain's list stopped at its largest answer: older items may be left out.
    truncated: bool,
    max: i64,
    page: usize,
    pages: usize,
    prev: Option<String>,
    next: Option<String>,
}

/// The project filter: `team/name` of a project the user reaches.
fn project_filter(console: &Console, p: &str) -> Result<Option<ProjectId>, String> {
    let p = p.trim();
    if p.is_empty() {
        return Ok(None);
    }
    let Some((team, name)) = p.split_once('/') else {
        return Err(format!("Project “{p}” is not `team/name` (e.g. acme/api)."));
    };
    crate::http::reachable(&console.principal, team, name)
        .map(Some)
        .map_err(|e| format!("Project “{p}”: {e}."))
}

pub async fn list(
    State(state): State<AppState>,
    console: Console,
    Query(q): Query<ListQuery>,
) -> PageResult {
    let status = match q.status.trim() {
        "" => "open",
        s => s,
    };
    let listed = match project_filter(&console, &q.project) {
        Err(e) => Err(e),
        Ok(project) => {
            let query = queue::ListQuery {
                project,
                status: Some(status.to_owned()),
                mine: false,
                limit: Some(queue::MAX_LIMIT),
            };
            match queue::list(&state.pool, &console.principal, query).await {
                Ok(l) => Ok(l.proposals),
                Err(ApiError::Internal(e)) => return Err(ApiError::Internal(e).into()),
                Err(e) => Err(format!("{e}.")),
            }
        }
    };
    let (items, error) = match listed {
        Ok(items) => (items, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    let total = items.len();
    let pages = total.div_ceil(PAGE).max(1);
    let page = q.page.parse::<usize>().unwrap_or(1).clamp(1, pages);
    let now = chrono::Utc::now();
    let rows = items
        .into_iter()
        .skip((page - 1) * PAGE)
        .take(PAGE)
        .map(|p| row(p, now))
        .collect();
    let link = |n: usize| {
        format!(
            "/admin/review?project={}&status={}&page={n}",
            enc(q.project.trim()),
            enc(status)
        )
    };
    let page = ListPage {
        nav: console.nav("review"),
        project: q.project.trim().to_owned(),
        status: status.to_owned(),
        statuses: STATUSES
            .iter()
            .map(|&(value, label)| Choice {
                value,
                label,
                selected: value == status,
            })
            .collect(),
        rows,
        total,
        truncated: total as i64 >= queue::MAX_LIMIT,
        max: queue::MAX_LIMIT,
        page,
        pages,
        prev: (page > 1).then(|| link(page - 1)),
        next: (page < pages).then(|| link(page + 1)),
        error,
    };
    let code = if page.error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    Ok((code, axum::response::Html(page.render()?)).into_response())
}

/// One field of a summary, provenance or frontmatter list.
pub struct Field {
    pub name: String,
    pub value: String,
    pub mono: bool,
}

fn field(name: &str, value: impl Into<String>, mono: bool) -> Field {
    Field {
        name: name.to_owned(),
        value: value.into(),
        mono,
    }
}

fn provenance_fields(d: &ProposalDetail) -> Vec<Field> {
    let p = &d.provenance;
    let mut out = vec![
        field(
            "Author",
            if p.author == p.author_sub {
                p.author.clone()
            } else {
                format!("{} ({})", p.author, p.author_sub)
            },
            false,
        ),
        field("Pushed", utc_display(&p.pushed_at), false),
    ];
    let optional = [
        ("Client", &p.client.client_version, false),
        ("Agent session", &p.client.session_id, true),
        ("Branch", &p.client.branch, true),
        ("Commit", &p.client.head, true),
        ("Token id", &p.token_id, true),
        ("Approved by", &p.approved_by, false),
    ];
    for (name, value, mono) in optional {
        if let Some(v) = value {
            out.push(field(name, v.clone(), mono));
        }
    }
    if let Some(sha) = d.base_sha256 {
        out.push(field("Based on", sha.to_hex(), true));
    }
    if let Some(sha) = d.published_sha256 {
        out.push(field("Published now", sha.to_hex(), true));
    }
    out
}

/// A memory's text as the page shows it: its frontmatter as fields and its body as markdown
/// made safe by `render::markdown`; text without frontmatter (an index) as markdown whole.
fn content_view(text: &str) -> (Vec<Field>, String) {
    match MemoryDoc::parse(text) {
        Ok(doc) => {
            let fields = doc
                .frontmatter()
                .iter()
                .map(|(k, v)| field(k, field_text(v), false))
                .collect();
            (fields, markdown(doc.body()))
        }
        Err(_) => (Vec::new(), markdown(text)),
    }
}

/// A decided item: who decided, when, and why.
pub struct Decided {
    pub by: String,
    pub at: Option<String>,
    pub note: Option<String>,
    pub reason: Option<String>,
    pub revision: Option<i64>,
}

/// What the page offers the user: the forms' wording, and whether each is allowed.
pub struct Forms {
    pub approve: Option<&'static str>,
    pub reject: Option<&'static str>,
    /// The reject form withdraws the user's own proposal.
    pub withdraw: bool,
    pub approve_key: String,
    pub reject_key: String,
    /// Published team feedback the proposal contradicts, which approving may supersede.
    pub supersedable: Vec<String>,
}

#[derive(Template)]
#[template(path = "console/review.html")]
struct ItemPage {
    nav: Option<Nav>,
    id: i64,
    url: String,
    project: String,
    project_url: String,
    path: String,
    op: &'static str,
    status: &'static str,
    status_class: &'static str,
    open: bool,
    lifecycle: &'static str,
    author: String,
    created_at: String,
    created_display: String,
    created_age: String,
    reason: Option<String>,
    stale: bool,
    provenance: Vec<Field>,
    findings: Vec<memsync_core::wire::FeedbackFinding>,
    diff_view: Option<DiffView>,
    split: bool,
    content_title: &'static str,
    content_fields: Vec<Field>,
    /// `render::markdown` output: safe to insert unescaped.
    content_html: Option<String>,
    decided: Option<Decided>,
    forms: Forms,
}

#[derive(Deserialize, Default)]
pub struct ItemQuery {
    #[serde(default)]
    view: String,
}

fn parse_id(id: &str) -> PageResult<i64> {
    id.parse::<i64>().map_err(|_| {
        PageError::new(
            StatusCode::NOT_FOUND,
            format!("“{id}” is not a review item; the review queue lists them."),
        )
    })
}

pub async fn show(
    State(state): State<AppState>,
    console: Console,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<ItemQuery>,
) -> PageResult {
    let id = parse_id(&id)?;
    let p = &console.principal;
    let d = queue::show(&state.pool, p, id, crate::http::request_id(&headers)).await?;
    let project: ProjectId = d.summary.project.parse().map_err(|_| {
        ApiError::Internal(anyhow::anyhow!("review item {id} names an invalid project"))
    })?;
    let reviewer = crate::review::is_reviewer(&state.pool, p, project.team())
        .await
        .map_err(ApiError::from)?;
    let s = &d.summary;
    let open = s.status.is_open();
    let author = d.provenance.author_sub == p.claims.sub && s.status == ProposalStatus::Pending;
    // A granted reviewer may not approve their own proposal; a team admin may.
    let may_approve = open && reviewer && (!author || p.is_team_admin(&project));
    let may_reject = open && (reviewer || author);
    let (approve, reject) = match s.status {
        ProposalStatus::Due => ("Confirm: keep it published", "Disable it"),
        ProposalStatus::Flagged => ("Enable it again", "Keep it disabled"),
        _ if s.op == PushOp::Delete => ("Approve the delete", "Reject"),
        _ => ("Approve and publish", "Reject"),
    };
    let supersedable = if may_approve && s.op == PushOp::Put && s.status == ProposalStatus::Pending
    {
        d.feedback
            .iter()
            .filter(|f| f.kind == "contradiction")
            .map(|f| f.team.clone())
            .collect()
    } else {
        Vec::new()
    };
    let forms = Forms {
        approve: may_approve.then_some(approve),
        reject: may_reject.then_some(if reviewer { reject } else { "Withdraw" }),
        withdraw: may_reject && !reviewer,
        approve_key: Uuid::new_v4().to_string(),
        reject_key: Uuid::new_v4().to_string(),
        supersedable,
    };
    let decided = d.reviewed_by.clone().map(|by| Decided {
        by,
        at: d.reviewed_at.as_deref().map(utc_display),
        note: d.note.clone(),
        reason: (s.status == ProposalStatus::Rejected)
            .then(|| s.reason.clone())
            .flatten(),
        revision: d.published_revision,
    });
    let content_title = match s.status {
        ProposalStatus::Due => "Published content",
        ProposalStatus::Flagged => "Disabled content",
        _ => "Proposed content",
    };
    let (content_fields, content_html) = match &d.content {
        Some(text) => {
            let (fields, html) = content_view(text);
            (fields, Some(html))
        }
        None => (Vec::new(), None),
    };
    let split = q.view == "split";
    let now = chrono::Utc::now();
    let page = ItemPage {
        nav: console.nav("review"),
        id,
        url: item_url(id),
        project: project.to_string(),
        project_url: project_url(&project, ""),
        path: s.path.clone(),
        op: op_str(s.op),
        status: status_str(s.status),
        status_class: status_class(s.status),
        open,
        lifecycle: lifecycle_str(s.lifecycle),
        author: s.author.clone(),
        created_display: utc_display(&s.created_at),
        created_age: age(&s.created_at, now),
        created_at: s.created_at.clone(),
        reason: s.reason.clone(),
        stale: d.stale,
        provenance: provenance_fields(&d),
        findings: d.feedback.clone(),
        diff_view: (!d.diff.is_empty()).then(|| DiffView::new(&d.diff, split)),
        split,
        content_title,
        content_fields,
        content_html,
        decided,
        forms,
    };
    super::html(&page)
}

/// The approve or reject form, as posted.
#[derive(Debug, PartialEq)]
struct DecisionForm {
    decision: String,
    key: String,
    note: String,
    reason: String,
    supersedes: Vec<String>,
}

impl DecisionForm {
    fn from_pairs(pairs: Vec<(String, String)>) -> DecisionForm {
        let mut f = DecisionForm {
            decision: String::new(),
            key: String::new(),
            note: String::new(),
            reason: String::new(),
            supersedes: Vec::new(),
        };
        for (k, v) in pairs {
            match k.as_str() {
                "decision" => f.decision = v,
                "key" => f.key = v,
                "note" => f.note = v,
                "reason" => f.reason = v,
                "supersedes" => f.supersedes.push(v),
                _ => {}
            }
        }
        f
    }

    /// The form's key and the hash of what it asks: a second submit of the same form is
    /// answered with the first decision; the same key with other fields is refused.
    fn idem(&self, id: i64) -> Option<Idem> {
        let key = self.key.trim();
        if key.is_empty() || key.len() > 200 || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return None;
        }
        let what = serde_json::json!({
            "id": id,
            "decision": self.decision,
            "note": self.note.trim(),
            "reason": self.reason.trim(),
            "supersedes": self.supersedes,
        });
        Some(Idem {
            key: key.to_owned(),
            hash: Sha256::of(format!("console proposal_decision\n{what}").as_bytes()).to_hex(),
        })
    }
}

/// What the flash says about a decision.
fn decided_text(verb: &str, d: &ProposalDecision, replayed: bool) -> String {
    let p = &d.proposal;
    let mut text = format!("{verb} #{} ({} in {})", p.id, p.path, p.project);
    match (&d.push, p.status) {
        (Some(push), ProposalStatus::Approved) if push.created_revision => {
            text.push_str(&format!(": published at revision {}.", push.revision));
            if push.merged.contains(&p.path) {
                text.push_str(
                    " It was merged three-way with a change published since it was proposed.",
                );
            }
        }
        (Some(push), ProposalStatus::Approved) => text.push_str(&format!(
            ": it was published as proposed already (revision {}).",
            push.revision
        )),
        (None, ProposalStatus::Approved) => text.push_str(": confirmed; it stays published."),
        (Some(push), ProposalStatus::Rejected) if push.created_revision => {
            text.push_str(&format!(
                ": disabled at revision {}; agents no longer receive it.",
                push.revision
            ));
        }
        _ => text.push('.'),
    }
    if let (ProposalStatus::Rejected, Some(r)) = (p.status, &p.reason) {
        text.push_str(&format!(" Reason: {r}"));
    }
    if replayed {
        text.push_str(" (The form had been submitted already: it was decided once.)");
    }
    text
}

pub async fn decide(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    posted: Posted<Vec<(String, String)>>,
) -> PageResult {
    let id = parse_id(&id)?;
    let console = posted.console;
    let form = DecisionForm::from_pairs(posted.form);
    let back = item_url(id);
    let Some(idem) = form.idem(id) else {
        console
            .tell(
                &state,
                Flash::error(
                    "The form was incomplete (its key is missing); nothing was decided. Submit it again from this page.",
                ),
            )
            .await?;
        return Ok(see_other(&back));
    };
    let actor = Actor {
        principal: &console.principal,
        request_id: crate::http::request_id(&headers),
        idem: Some(idem),
    };
    let (verb, failed, answer) = match form.decision.as_str() {
        "approve" => {
            let note = match Some(form.note.trim())
                .filter(|n| !n.is_empty())
                .map(Text::new)
            {
                None => Ok(None),
                Some(Ok(n)) => Ok(Some(n)),
                Some(Err(e)) => Err(ApiError::bad_request(
                    "invalid_note",
                    format!("the note: {e}"),
                )),
            };
            let answer = match note {
                Ok(note) => {
                    let body = ProposalApprove {
                        note,
                        supersedes: form.supersedes.clone(),
                    };
                    decision::approve(&state.pool, state.limits, &actor, id, body).await
                }
                Err(e) => Err(e),
            };
            ("Approved", "Not approved", answer)
        }
        "reject" => {
            let answer = match Text::new(form.reason.trim()) {
                Ok(reason) => {
                    decision::reject(
                        &state.pool,
                        state.limits,
                        &actor,
                        id,
                        ProposalReject { reason },
                    )
                    .await
                }
                Err(e) => Err(ApiError::bad_request(
                    "invalid_reason",
                    format!("the reason: {e}"),
                )),
            };
            ("Rejected", "Not rejected", answer)
        }
        other => {
            return Err(PageError::bad_request(format!(
                "The form asks for `{other}`; a review item is approved or rejected. Reload the page and submit it again."
            )));
        }
    };
    let flash = match answer {
        Ok(Answer::Decided(d)) => Flash::ok(decided_text(verb, &d, false)),
        Ok(Answer::Replayed(200, body)) => match serde_json::from_value::<ProposalDecision>(body) {
            Ok(d) => Flash::ok(decided_text(verb, &d, true)),
            Err(_) => Flash::ok(format!(
                "{verb} #{id} (the form had been submitted already: it was decided once)."
            )),
        },
        Ok(Answer::Replayed(_, body)) => Flash::error(format!(
            "{failed}: {}.",
            body["error"]["message"]
                .as_str()
                .unwrap_or("the earlier submit of this form failed")
        )),
        // An item the user cannot see: the item page would say so, not the flash.
        Err(e @ ApiError::NotFound(_)) => return Err(e.into()),
        Err(ApiError::Internal(e)) => return Err(ApiError::Internal(e).into()),
        Err(e) => Flash::error(format!("{failed}: {e}.")),
    };
    console.tell(&state, flash).await?;
    Ok(see_other(&back))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        kv.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_decision_form_keeps_every_superseded_path() {
        let f = DecisionForm::from_pairs(pairs(&[
            ("csrf", "x"),
            ("decision", "approve"),
            ("key", "k1"),
            ("note", " ok "),
            ("supersedes", "team/a.md"),
            ("supersedes", "team/b.md"),
        ]));
        assert_eq!(f.decision, "approve");
        assert_eq!(f.supersedes, vec!["team/a.md", "team/b.md"]);
        let idem = f.idem(7).expect("a key");
        assert_eq!(idem.key, "k1");
        // The same form hashes the same; another item, note or decision does not.
        assert_eq!(f.idem(7).unwrap().hash, idem.hash);
        assert_ne!(f.idem(8).unwrap().hash, idem.hash);
        let other_note = DecisionForm {
            note: "fine".into(),
            ..DecisionForm::from_pairs(pairs(&[("decision", "approve"), ("key", "k1")]))
        };
        assert_ne!(other_note.idem(7).unwrap().hash, idem.hash);
        for bad in ["", "  ", "has space", &"k".repeat(201)] {
            let f = DecisionForm::from_pairs(pairs(&[("decision", "reject"), ("key", bad)]));
            assert!(f.idem(7).is_none(), "{bad:?}");
        }
    }

    fn decided(
        status: ProposalStatus,
        push: Option<(i64, bool)>,
        reason: Option<&str>,
    ) -> ProposalDecision {
        ProposalDecision {
            proposal: ProposalSummary {
                id: 4,
                project: "acme/api".into(),
                path: "team/x.md".into(),
                op: PushOp::Put,
                author: "bob".into(),
                created_at: "2026-11-30T00:00:00Z".into(),
                status,
                sha256: None,
                reason: reason.map(str::to_owned),
                lifecycle: Lifecycle::Evergreen,
            },
            push: push.map(
                |(revision, created_revision)| memsync_core::wire::PushResponse {
                    project: "acme/api".into(),
                    revision,
                    created_revision,
                    changes: Vec::new(),
                    merged: Vec::new(),
                    proposed: Vec::new(),
                },
            ),
        }
    }

    #[test]
    fn the_flash_says_what_the_decision_did() {
        let t = decided_text(
            "Approved",
            &decided(ProposalStatus::Approved, Some((12, true)), None),
            false,
        );
        assert_eq!(
            t,
            "Approved #4 (team/x.md in acme/api): published at revision 12."
        );
        let t = decided_text(
            "Approved",
            &decided(ProposalStatus::Approved, None, None),
            true,
        );
        assert!(
            t.contains("confirmed; it stays published") && t.contains("decided once"),
            "{t}"
        );
        let t = decided_text(
            "Rejected",
            &decided(ProposalStatus::Rejected, None, Some("wrong")),
            false,
        );
        assert_eq!(t, "Rejected #4 (team/x.md in acme/api). Reason: wrong");
        let t = decided_text(
            "Rejected",
            &decided(ProposalStatus::Rejected, Some((13, true)), Some("stale")),
            false,
        );
        assert!(t.contains("disabled at revision 13"), "{t}");
    }

    #[test]
    fn content_shows_frontmatter_as_fields_and_the_body_as_markdown() {
        let (fields, html) = content_view(
            "---\nname: x\ndescription: d\ntype: project\n---\n# Title\n\n<script>alert(1)</script>\n",
        );
        let mut names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, vec!["description", "name", "type"]);
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(!html.contains("<script>"), "{html}");
        let (fields, html) = content_view("- [a](a.md) — about a\n");
        assert!(fields.is_empty());
        assert!(html.contains("<li>"), "{html}");
    }
}
