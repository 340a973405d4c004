//! `memsync review list|show|approve|reject`: the review queue of a project under
//! `review = required` (reviewers: every open item of their teams; members: their own).

use std::path::Path;

use memsync::api::{ApiError, IdempotencyKey, ProposalQuery};
use memsync_core::wire::{
    ConflictDetails, ProposalApprove, ProposalDecision, ProposalDetail, ProposalReject,
    ProposalStatus, ProposalSummary, PushOp,
};
use serde_json::json;

use super::{
    Fail, Need, OK, PROBLEMS, admin_failure, api_client, print_json, runtime, settings_at,
};
use crate::{Global, ReviewCmd};

pub fn run(g: &Global, cwd: &Path, cmd: ReviewCmd) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let api = api_client(g, &settings)?;
    let rt = runtime()?;
    let team = settings
        .project
        .as_ref()
        .map_or_else(|| "TEAM".to_owned(), |p| p.team().to_owned());
    let (command, need) = match &cmd {
        ReviewCmd::List { .. } => ("review list", Need::TeamMember(team)),
        ReviewCmd::Show { .. } => ("review show", Need::TeamMember(team)),
        ReviewCmd::Approve { .. } => ("review approve", Need::Reviewer(team)),
        ReviewCmd::Reject { .. } => ("review reject", Need::Reviewer(team)),
    };
    let refused = |e| admin_failure(e, command, &need, &settings, &api, &rt);
    match cmd {
        ReviewCmd::List { all } => {
            let q = ProposalQuery {
                project: settings.project.as_ref().map(ToString::to_string),
                status: Some(if all { "all" } else { "open" }.to_owned()),
                ..ProposalQuery::default()
            };
            let list = rt.block_on(api.proposals(&q)).map_err(refused)?;
            if g.json {
                print_json(&list)?;
            } else if list.proposals.is_empty() {
                if !g.quiet {
                    let scope = q.project.as_deref().unwrap_or("your projects");
                    println!("no {}proposals in {scope}", if all { "" } else { "open " });
                }
            } else {
                for p in &list.proposals {
                    println!("{}", summary_line(p));
                }
            }
            Ok(OK)
        }
        ReviewCmd::Show { id } => {
            let d = rt.block_on(api.proposal(id)).map_err(refused)?;
            if g.json {
                print_json(&d)?;
            } else {
                print!("{}", describe(&d));
            }
            Ok(OK)
        }
        ReviewCmd::Approve {
            id,
            note,
            supersedes,
        } => {
            let supersedes = supersedes
                .iter()
                .map(|s| super::admin::memory_path(s, cwd, &settings).map(|p| p.to_string()))
                .collect::<Result<Vec<_>, _>>()?;
            let req = ProposalApprove { note, supersedes };
            // One key for this approval, sent with each retry: a lost answer is not a second
            // approval.
            let key = IdempotencyKey::new();
            match rt.block_on(api.approve(id, &req, &key)) {
                Ok(done) => decided(g, "approved", done.answer, done.replayed),
                Err(e) => not_decided(g, id, e, refused),
            }
        }
        ReviewCmd::Reject { id, reason } => {
            let key = IdempotencyKey::new();
            match rt.block_on(api.reject(id, &ProposalReject { reason }, &key)) {
                Ok(done) => decided(g, "rejected", done.answer, done.replayed),
                Err(e) => not_decided(g, id, e, refused),
            }
        }
    }
}

/// "#12  pending  put     x.md  acme/api  bob  2026-12-01T10:00:00Z  (dated)".
fn summary_line(p: &ProposalSummary) -> String {
    let op = match p.op {
        PushOp::Put => "put",
        PushOp::Delete => "delete",
    };
    let mut line = format!(
        "#{:<5} {:<9} {:<7} {}  {}  by {}  {}",
        p.id,
        status_name(p.status),
        op,
        p.path,
        p.project,
        p.author,
        p.created_at
    );
    if p.lifecycle == memsync_core::wire::Lifecycle::Dated {
        line.push_str("  (dated note)");
    }
    if let Some(r) = &p.reason {
        line.push_str(&format!("  — {r}"));
    }
    line
}

fn status_name(s: ProposalStatus) -> &'static str {
    match s {
        ProposalStatus::Pending => "pending",
        ProposalStatus::Due => "due",
        ProposalStatus::Flagged => "flagged",
        ProposalStatus::Approved => "approved",
        ProposalStatus::Rejected => "rejected",
        ProposalStatus::Superseded => "superseded",
    }
}

/// Everything a reviewer reads before deciding: the header, where it came from, what it
/// contradicts, whether it is stale, then the diff.
fn describe(d: &ProposalDetail) -> String {
    let p = &d.summary;
    let mut out = String::new();
    let op = match p.op {
        PushOp::Put => "put",
        PushOp::Delete => "delete",
    };
    let lifecycle = match p.lifecycle {
        memsync_core::wire::Lifecycle::Dated => "dated note",
        memsync_core::wire::Lifecycle::Evergreen => "evergreen",
    };
    out.push_str(&format!(
        "proposal #{} in {}: {op} {}\n  status:     {}\n  author:     {}\n  created:    {}\n  lifecycle:  {lifecycle}\n",
        p.id,
        p.project,
        p.path,
        status_name(p.status),
        p.author,
        p.created_at
    ));
    if let Some(r) = &p.reason {
        out.push_str(&format!("  reason:     {r}\n"));
    }
    let v = &d.provenance;
    let unknown = "unknown";
    out.push_str(&format!(
        "  provenance: session {}, head {}, branch {}, client {}, token {}, pushed {}\n",
        v.client.session_id.as_deref().unwrap_or(unknown),
        v.client.head.as_deref().unwrap_or(unknown),
        v.client.branch.as_deref().unwrap_or(unknown),
        v.client.client_version.as_deref().unwrap_or(unknown),
        v.token_id.as_deref().unwrap_or(unknown),
        v.pushed_at,
    ));
    if let Some(by) = &d.reviewed_by {
        out.push_str(&format!(
            "  reviewed:   by {by}{}{}\n",
            d.reviewed_at
                .as_deref()
                .map(|t| format!(" at {t}"))
                .unwrap_or_default(),
            d.note
                .as_deref()
                .map(|n| format!(": {n}"))
                .unwrap_or_default()
        ));
    }
    if let Some(r) = d.published_revision {
        out.push_str(&format!("  published:  revision {r}\n"));
    }
    for f in &d.feedback {
        if f.kind == "contradiction" {
            out.push_str(&format!(
                "  CONFLICT with the team's {}: {}. Approve it as superseding that rule with `memsync review approve {} --supersedes {}`, or reject it with `memsync review reject {} --reason TEXT`\n",
                f.team, f.reason, p.id, f.team, p.id
            ));
        } else {
            out.push_str(&format!(
                "  related to the team's {}: {}\n",
                f.team, f.reason
            ));
        }
    }
    if d.stale {
        out.push_str(
            "  stale: what is published changed since the author started from it; approving merges the two three-way, or reports the conflict\n",
        );
    } else if d.base_sha256.is_none() && d.published_sha256.is_none() && p.op == PushOp::Put {
        out.push_str("  new: nothing is published at this path yet\n");
    }
    out.push('\n');
    out.push_str(&d.diff);
    if !d.diff.is_empty() && !d.diff.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// Prints an approval's or rejection's result.
fn decided(g: &Global, verb: &str, d: ProposalDecision, replayed: bool) -> Result<u8, Fail> {
    if replayed && !g.quiet {
        eprintln!(
            "memsync: this was {verb} by an earlier attempt of this command whose answer was lost; this is the server's record of it (it was applied once)"
        );
    }
    if g.json {
        print_json(&d)?;
        return Ok(OK);
    }
    if g.quiet {
        return Ok(OK);
    }
    let p = &d.proposal;
    let published = d
        .push
        .as_ref()
        .filter(|r| r.created_revision)
        .map(|r| format!(": published in revision {}", r.revision))
        .unwrap_or_default();
    println!(
        "{verb} #{} (`{}` in {}){published}",
        p.id, p.path, p.project
    );
    if let Some(merged) = d.push.as_ref().filter(|r| !r.merged.is_empty()) {
        println!(
            "  merged three-way with what was published meanwhile: {}",
            merged.merged.join(", ")
        );
    }
    Ok(OK)
}

/// An approval or rejection the server did not take: a conflict (the proposal overlaps what
/// was published since: exit 1, with the conflict), a proposal no longer open (exit 1), or a
/// refusal.
fn not_decided(
    g: &Global,
    id: i64,
    e: ApiError,
    refused: impl Fn(ApiError) -> Fail,
) -> Result<u8, Fail> {
    match e {
        ApiError::Conflict { message, details } => {
            print_conflict(g, id, &message, &details)?;
            Ok(PROBLEMS)
        }
        ApiError::Server {
            status: 409,
            message,
            ..
        } => Err(Fail::problem(format!(
            "{message} (see `memsync review show {id}`)"
        ))),
        e => Err(refused(e)),
    }
}

fn print_conflict(
    g: &Global,
    id: i64,
    message: &str,
    details: &ConflictDetails,
) -> Result<(), Fail> {
    let advice = format!(
        "nothing was published; reject it (`memsync review reject {id} --reason TEXT`) so its author can redo it on top of what is published, or look at both with `memsync review show {id}`"
    );
    if g.json {
        print_json(&json!({
            "error": { "message": format!("{message}; {advice}"), "exit_code": PROBLEMS },
            "conflicts": details.conflicts,
        }))?;
    }
    eprintln!("memsync: {message}");
    for c in &details.conflicts {
        eprintln!(
            "  CONFLICT {} ({}): the proposal and what is published now change the same lines",
            c.path, c.reason
        );
    }
    eprintln!("memsync: {advice}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use memsync_core::wire::{FeedbackFinding, Lifecycle, Provenance, VersionProvenance};

    fn detail() -> ProposalDetail {
        ProposalDetail {
            summary: ProposalSummary {
                id: 12,
                project: "acme/api".into(),
                path: "2026-11-30-testing.md".into(),
                op: PushOp::Put,
                author: "bob".into(),
                created_at: "2026-12-01T10:00:00Z".into(),
                status: ProposalStatus::Pending,
                sha256: None,
                reason: None,
                lifecycle: Lifecycle::Dated,
            },
            content: Some("x".into()),
            base_sha256: None,
            published_sha256: None,
            diff: "--- a\n+++ b\n+Mock the database.\n".into(),
            stale: true,
            provenance: VersionProvenance {
                author: "bob".into(),
                author_sub: "bob".into(),
                token_id: Some("jti-1".into()),
                client: Provenance {
                    client_version: Some("memsync/0.1.0".into()),
                    session_id: Some("s-1".into()),
                    head: Some("abc1234".into()),
                    branch: None,
                },
                pushed_at: "2026-12-01T10:00:00Z".into(),
                approved_by: None,
                proposal_id: None,
            },
            feedback: vec![FeedbackFinding {
                team: "testing.md".into(),
                kind: "contradiction".into(),
                reason: "opposite rules on mocks".into(),
            }],
            reviewed_by: None,
            reviewed_at: None,
            note: None,
            published_revision: None,
        }
    }

    #[test]
    fn show_gives_header_provenance_conflict_stale_note_and_diff() {
        let text = describe(&detail());
        for want in [
            "proposal #12 in acme/api: put 2026-11-30-testing.md",
            "status:     pending",
            "author:     bob",
            "lifecycle:  dated note",
            "provenance: session s-1, head abc1234, branch unknown, client memsync/0.1.0, token jti-1",
            "CONFLICT with the team's testing.md: opposite rules on mocks",
            "memsync review approve 12 --supersedes testing.md",
            "memsync review reject 12 --reason TEXT",
            "stale: what is published changed",
        ] {
            assert!(text.contains(want), "no {want:?} in\n{text}");
        }
        assert!(text.ends_with("+Mock the database.\n"), "{text}");
    }

    #[test]
    fn list_lines_name_the_item() {
        let mut s = detail().summary;
        s.status = ProposalStatus::Rejected;
        s.reason = Some("not a rule".into());
        let line = summary_line(&s);
        assert!(
            line.starts_with("#12    rejected  put     2026-11-30-testing.md  acme/api  by bob"),
            "{line}"
        );
        assert!(line.ends_with("(dated note)  — not a rule"), "{line}");
    }
}
