//! The JSON documents of the HTTP API (`/v1`), shared by the server and the client.
//! `openapi.yaml` at the repository root describes the same shapes.

use serde::{Deserialize, Serialize};

use crate::sha::Sha256;
use crate::text::Text;

/// `GET /v1/projects/{team}/{name}/changes?since=N`: every path whose latest revision is greater
/// than `since`, with its current state. `since=0` is a full snapshot, tombstones included.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PullResponse {
    pub project: String,
    /// The revision this answer is complete up to: the client's next `since`. Equal to `head`
    /// unless `more` is true (a page).
    pub revision: i64,
    pub since: i64,
    pub changes: Vec<FileState>,
    /// More changes follow: pull again with `since = revision`. A page holds whole revisions
    /// (every path whose latest revision is at most `revision`), so applying it and recording
    /// `revision` is always consistent.
    #[serde(default)]
    pub more: bool,
    /// The project's revision when the answer was made (servers before paging: absent, read as
    /// `revision`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<i64>,
}

/// The JSON of an `event: revision` on `GET /v1/projects/{team}/{name}/events` (its SSE `id` is
/// the revision too).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RevisionEvent {
    pub project: String,
    pub revision: i64,
}

/// The JSON of an `event: review` (sent to the team's reviewers only): a proposal of the project
/// was made or decided. `missed: true` (and no proposal) when the stream fell behind and some
/// review events were dropped: list the queue again.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReviewEvent {
    pub project: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub missed: bool,
}

/// The JSON of an `event: end`: the server closes the stream (`reason`: `revoked`, `expired`,
/// `shutdown`, `archived`); reconnecting is pointless for the first two.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct EndEvent {
    pub reason: String,
    pub message: String,
}

/// The state of one path at a revision: its content, or a tombstone.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileState {
    pub path: String,
    /// The revision that last changed this path.
    pub revision: i64,
    pub deleted: bool,
    /// Absent for a tombstone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Sha256>,
    /// Absent for a tombstone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Display name of the user whose push made this state.
    pub author: String,
    /// RFC 3339 time of that push.
    pub updated_at: String,
    /// Repository paths this memory names that existed in the author's working tree when it was
    /// pushed (`PushChange::named_paths`); clients check them for staleness.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub named_paths: Vec<String>,
}

/// `POST /v1/projects/{team}/{name}/push`: one atomic batch. The `Idempotency-Key` header makes a
/// retry apply once.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PushRequest {
    pub changes: Vec<PushChange>,
    /// Lets a push delete more than max(50, 10 %) of the project's files.
    #[serde(default)]
    pub allow_mass_delete: bool,
    /// Lets a team admin push content that an admin purged from the project (it is refused
    /// otherwise, so that a retry or a stale copy cannot bring a purged secret back).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_purged: bool,
    /// Where the push comes from; stored with every version it makes. Never required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
}

/// The source of a push, as the client knows it. Every field is optional and at most 200
/// characters; the server adds the author, token id and time.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// `memsync/<version>` of the pushing client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    /// The agent session that wrote the memories (Claude Code's hook `session_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The repository's `HEAD` commit (hex) at push time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// The checked-out branch at push time (absent when detached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
}

/// What the server keeps of a version's source: the client's `Provenance` plus what the server
/// knows itself. Shown in history, review and audit.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct VersionProvenance {
    /// Display name of the author (for an approved proposal: the proposal's author).
    pub author: String,
    /// The author's `sub`.
    pub author_sub: String,
    /// The `jti` of the token that pushed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_id: Option<String>,
    #[serde(flatten)]
    pub client: Provenance,
    /// RFC 3339 time the content was pushed (for an approved proposal: when it was proposed).
    pub pushed_at: String,
    /// Who approved it, for a version published through review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    /// The proposal it was published from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<i64>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PushOp {
    Put,
    Delete,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PushChange {
    pub path: String,
    pub op: PushOp,
    /// The sha256 of the version this edit started from; absent or null for a new file.
    #[serde(default)]
    pub base_sha256: Option<Sha256>,
    /// The new content, for `put`.
    #[serde(default)]
    pub content: Option<String>,
    /// For `put`: repository paths the memory names that exist in the pusher's working tree (at
    /// most 64, each a relative `/`-separated path); kept with the version for staleness checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub named_paths: Vec<String>,
}

/// The answer to an accepted push.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PushResponse {
    pub project: String,
    /// The revision this push created, or the current one when it changed nothing.
    pub revision: i64,
    /// Whether the push created a revision (false when every change was already there).
    pub created_revision: bool,
    /// The resulting state of every path this revision touched, including merged files and the
    /// `MEMORY.md` the server kept consistent. The client takes these as its new bases.
    pub changes: Vec<FileState>,
    /// Paths whose stored content differs from what was pushed: memory files merged three-way
    /// with a concurrent edit, and pushed `MEMORY.md` files the server merged or completed. The
    /// client takes their content from `changes`.
    pub merged: Vec<String>,
    /// Under `review = required`, a push by a member who is not a reviewer publishes nothing:
    /// each change became (or matched) a proposal, listed here, and the answer is 202.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proposed: Vec<Proposed>,
}

/// One change of a push that became a proposal.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Proposed {
    pub path: String,
    pub id: i64,
    pub op: PushOp,
    /// `pending`, or `rejected` when this exact content was already rejected (with `reason`).
    pub status: ProposalStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A project's release policy.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ReviewMode {
    /// A push publishes at once.
    #[default]
    Off,
    /// A push by a member who is not a reviewer becomes proposals.
    Required,
}

/// `GET`/`PUT /v1/admin/projects/{team}/{name}/settings` (team admins).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProjectSettings {
    pub review: ReviewMode,
    /// Published memories not changed or confirmed for this many days become due for review;
    /// null turns it off.
    #[serde(default)]
    pub review_after_days: Option<u32>,
}

/// The state of a review-queue item.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ProposalStatus {
    /// A proposed change waiting for a reviewer.
    Pending,
    /// A published memory not changed or confirmed for `review_after_days`.
    Due,
    /// A published memory a rescan disabled (a newer scanner rule matches it).
    Flagged,
    /// Published (a change) or confirmed/re-enabled (a due or flagged memory).
    Approved,
    Rejected,
    /// The author proposed a newer version of the same path before this one was reviewed.
    Superseded,
}

impl ProposalStatus {
    /// Whether it still waits for a reviewer.
    pub fn is_open(self) -> bool {
        matches!(self, Self::Pending | Self::Due | Self::Flagged)
    }
}

/// `GET /v1/proposals`: the review queue (reviewers: every open item of their teams' projects;
/// members: their own proposals).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ProposalList {
    pub proposals: Vec<ProposalSummary>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ProposalSummary {
    pub id: i64,
    pub project: String,
    pub path: String,
    /// `put` or `delete`; a due or flagged memory is a `put` (approving keeps it published).
    pub op: PushOp,
    /// Display name of whoever proposed it (for a due or flagged item: the server).
    pub author: String,
    pub created_at: String,
    pub status: ProposalStatus,
    /// The proposed content's sha256 (absent for a delete); lets an author's client tell whether
    /// its local file is the one that was proposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Sha256>,
    /// Why it was rejected, flagged or is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `dated` when the memory's file name carries a date (a note about a moment), else
    /// `evergreen`.
    pub lifecycle: Lifecycle,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Lifecycle {
    Dated,
    Evergreen,
}

impl Lifecycle {
    /// A memory whose file name carries a date (`2026-11-30-outage.md`, `standup_20261130.md`,
    /// `notes/2026-11/retro.md`) is a dated note; the rest are evergreen.
    pub fn of_path(path: &str) -> Lifecycle {
        let digits_at = |s: &[u8], i: usize, n: usize| {
            s.len() >= i + n && s[i..i + n].iter().all(u8::is_ascii_digit)
        };
        let plausible = |y: &[u8], m: &[u8]| {
            let num = |d: &[u8]| d.iter().fold(0u32, |a, c| a * 10 + u32::from(c - b'0'));
            (1990..=2199).contains(&num(y)) && (1..=12).contains(&num(m))
        };
        for segment in path.split('/') {
            let s = segment.as_bytes();
            for i in 0..s.len() {
                // A date starts at the segment's start or after a non-digit.
                if i > 0 && s[i - 1].is_ascii_digit() {
                    continue;
                }
                // YYYY-MM[-DD], YYYY_MM[_DD], YYYY.MM[.DD]
                if digits_at(s, i, 4)
                    && s.len() > i + 4
                    && matches!(s[i + 4], b'-' | b'_' | b'.')
                    && digits_at(s, i + 5, 2)
                    && !digits_at(s, i + 7, 1)
                    && plausible(&s[i..i + 4], &s[i + 5..i + 7])
                {
                    return Lifecycle::Dated;
                }
                // YYYYMMDD
                if digits_at(s, i, 8)
                    && !digits_at(s, i + 8, 1)
                    && plausible(&s[i..i + 4], &s[i + 4..i + 6])
                {
                    return Lifecycle::Dated;
                }
            }
        }
        Lifecycle::Evergreen
    }
}

/// `GET /v1/proposals/{id}`: everything a reviewer needs to decide.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ProposalDetail {
    #[serde(flatten)]
    pub summary: ProposalSummary,
    /// The proposed content (absent for a delete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The published version the author started from (absent for a new file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_sha256: Option<Sha256>,
    /// What is published now (absent when nothing is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_sha256: Option<Sha256>,
    /// Unified diff from what is published now to the proposal.
    pub diff: String,
    /// Whether what is published changed since the author's base (approving merges three-way).
    pub stale: bool,
    pub provenance: VersionProvenance,
    /// Published team feedback the proposed content contradicts or relates to.
    #[serde(default)]
    pub feedback: Vec<FeedbackFinding>,
    /// Who reviewed it, when, and the note or reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewed_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The revision that published it, once approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_revision: Option<i64>,
}

/// `POST /v1/proposals/{id}/approve`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProposalApprove {
    #[serde(default)]
    pub note: Option<Text>,
    /// Approve a feedback memory that contradicts published team feedback as superseding these
    /// team files: the server adds them to its `supersedes:` and deletes them in the same revision.
    #[serde(default)]
    pub supersedes: Vec<String>,
}

/// `POST /v1/proposals/{id}/reject`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProposalReject {
    pub reason: Text,
}

/// The answer to approve and reject: the item as it is now, and for an approval that published
/// something, the revision it made.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ProposalDecision {
    pub proposal: ProposalSummary,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<PushResponse>,
}

/// `POST /v1/admin/projects/{team}/{name}/disable` and `.../enable`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AdminRelease {
    pub path: Text,
    /// Why; kept in the audit log and the export's commit message.
    #[serde(default)]
    pub reason: Option<Text>,
}

/// `POST /v1/admin/projects/{team}/{name}/rollback`: publish the version of `path` at
/// `revision` as a new revision.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AdminRollback {
    pub path: Text,
    pub revision: i64,
    #[serde(default)]
    pub reason: Option<Text>,
}

/// `GET /v1/admin/teams/{team}/reviewers`: users granted the reviewer role (team admins are
/// reviewers without a grant).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Reviewers {
    pub team: String,
    pub reviewers: Vec<ReviewerEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReviewerEntry {
    /// The user's `sub` (what `memsync-server token issue --user` sets).
    pub user: String,
    pub added_by: String,
    pub created_at: String,
}

/// `details` of a 409 `conflict` error: one entry per path that could not be merged.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ConflictDetails {
    pub conflicts: Vec<Conflict>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Conflict {
    pub path: String,
    /// Why it could not be applied, e.g. `overlapping_edit`, `deleted_on_server`.
    pub reason: String,
    pub base_sha256: Option<Sha256>,
    /// The server's current version of the path (null when it never existed).
    pub server: Option<FileState>,
}

/// `details` of a 422 `validation_failed` error: every problem in the batch, at once.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ValidationDetails {
    pub failures: Vec<Failure>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Failure {
    /// The path as sent (truncated when absurdly long); empty for batch-level failures.
    pub path: String,
    /// A stable rule id, e.g. `path_invalid`, `frontmatter_invalid`, `type_user_in_team`.
    pub rule: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based, in characters; for scanner findings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// `secret`, `injection` or `policy`, for guard findings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// A redacted preview (a few leading characters, then `…`): never the secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// sha256 of the rule id and the matched value; what a team admin allowlists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

impl Failure {
    /// A failure that is not a guard finding.
    pub fn new(
        path: impl Into<String>,
        rule: impl Into<String>,
        message: impl Into<String>,
        line: Option<u32>,
    ) -> Failure {
        Failure {
            path: path.into(),
            rule: rule.into(),
            message: message.into(),
            line,
            column: None,
            category: None,
            preview: None,
            fingerprint: None,
        }
    }
}

/// `GET /v1/projects/{team}/{name}/allowlist`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Allowlist {
    pub entries: Vec<AllowlistEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct AllowlistEntry {
    pub fingerprint: String,
    pub rule: String,
    pub reason: String,
    pub added_by: String,
    pub created_at: String,
}

/// `POST /v1/projects/{team}/{name}/allowlist`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AllowlistAdd {
    pub fingerprint: Text,
    pub rule: Text,
    pub reason: Text,
}

/// Every error answer: `{"error":{"code","message","details"}}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ErrorBody {
    pub error: ErrorInfo,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ErrorInfo {
    pub code: String,
    pub message: String,
    #[serde(default)]
    pub details: serde_json::Value,
}

/// `GET /v1/projects/{team}/{name}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ProjectInfo {
    pub project: String,
    pub revision: i64,
    pub files: i64,
    pub bytes: i64,
    pub created_at: String,
    pub updated_at: String,
    /// The release policy; members see it so their client can say a push will be proposed.
    #[serde(default)]
    pub review: ReviewMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_after_days: Option<u32>,
}

/// `GET /v1/me`: who the server thinks the token belongs to.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct WhoAmI {
    pub sub: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    pub teams: std::collections::BTreeMap<String, TeamRole>,
    pub admin: bool,
    /// Unix seconds.
    pub expires_at: i64,
    /// Teams where this user was granted the reviewer role (team admins review without it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reviewer: Vec<String>,
    /// What the token may do (`pull`, `push`, `admin`); absent: everything its teams allow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The projects the token is limited to; empty: every project of its teams.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub projects: Vec<String>,
    /// Who vouches for the token: `memsync` (issued by this server) or an identity provider's
    /// issuer URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum TeamRole {
    Member,
    Admin,
}

/// One `--team` grant as every command line takes it: `TEAM`, `TEAM:member` or `TEAM:admin`.
pub fn parse_team_grant(spec: &str) -> Result<(String, TeamRole), String> {
    let (team, role) = match spec.split_once(':') {
        None => (spec, TeamRole::Member),
        Some((t, "admin")) => (t, TeamRole::Admin),
        Some((t, "member")) => (t, TeamRole::Member),
        Some((_, other)) => {
            return Err(format!(
                "unknown role `{other}` in --team {spec}: use TEAM or TEAM:admin"
            ));
        }
    };
    if !crate::project::valid_segment(team) {
        return Err(format!(
            "`{team}` in --team {spec} is not a valid team name: use lowercase letters, digits, `.`, `_` or `-`"
        ));
    }
    Ok((team.to_owned(), role))
}

/// Several `--team` grants; a team named twice keeps its highest role.
pub fn parse_team_grants<S: AsRef<str>>(
    specs: &[S],
) -> Result<std::collections::BTreeMap<String, TeamRole>, String> {
    let mut teams = std::collections::BTreeMap::new();
    for spec in specs {
        let (team, role) = parse_team_grant(spec.as_ref())?;
        let e = teams.entry(team).or_insert(role);
        *e = (*e).max(role);
    }
    Ok(teams)
}

/// `POST /v1/projects/{team}/{name}/feedback/check`: a candidate (e.g. private) feedback memory,
/// checked against the project's team feedback. Nothing of it is stored or logged.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FeedbackCheckRequest {
    /// A name for the candidate, used in the reasons (e.g. its path in the private dir).
    pub path: String,
    pub content: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FeedbackCheckResponse {
    pub findings: Vec<FeedbackFinding>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FeedbackFinding {
    /// The team memory the candidate was compared with.
    pub team: String,
    /// `contradiction` or `related`.
    pub kind: String,
    pub reason: String,
}

/// `POST /v1/admin/projects/{team}/{name}/delete` and `.../purge`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AdminPathAction {
    pub path: Text,
    /// Why; kept in the audit log.
    pub reason: Text,
}

/// `POST /v1/admin/projects/{team}/{name}/restore`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AdminRestore {
    pub path: Text,
    /// The revision whose version of the path comes back.
    pub revision: i64,
    pub reason: Text,
}

/// `POST /v1/admin/tokens` (server admins).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TokenIssue {
    pub user: Text,
    #[serde(default)]
    pub email: Option<Text>,
    #[serde(default)]
    pub teams: std::collections::BTreeMap<String, TeamRole>,
    #[serde(default)]
    pub admin: bool,
    /// Days until it expires (default 90).
    #[serde(default)]
    pub ttl_days: Option<u32>,
    /// What the token may do (default: everything its teams allow).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<Scope>,
    /// `team/name` projects it is limited to (default: every project of its teams).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub projects: Vec<String>,
    /// Its own request rate (default: the server's default for tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<TokenRate>,
}

/// A token's request rate: `rps` requests per second sustained, bursts of up to `burst`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TokenRate {
    pub rps: u32,
    pub burst: u32,
}

impl std::str::FromStr for TokenRate {
    type Err = String;

    /// `RPS` (bursts of twice that, at least 1) or `RPS/BURST`.
    fn from_str(s: &str) -> Result<TokenRate, String> {
        let bad = || {
            format!(
                "`{s}` is not a rate: write requests per second, optionally with a burst, e.g. `5` or `5/20`"
            )
        };
        let (rps, burst) = match s.trim().split_once('/') {
            Some((r, b)) => (
                r.trim().parse::<u32>().map_err(|_| bad())?,
                Some(b.trim().parse::<u32>().map_err(|_| bad())?),
            ),
            None => (s.trim().parse::<u32>().map_err(|_| bad())?, None),
        };
        if rps == 0 {
            return Err(format!(
                "`{s}`: the rate must be at least 1 request per second"
            ));
        }
        let burst = burst.unwrap_or(rps.saturating_mul(2));
        if burst < rps {
            return Err(format!(
                "`{s}`: the burst ({burst}) must be at least the rate ({rps})"
            ));
        }
        Ok(TokenRate { rps, burst })
    }
}

/// What a token may do. Each scope includes the ones before it: `push` can pull, `admin` can
/// push and pull. A token's team roles still bound it: `admin` on a member's token administers
/// nothing.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Read team memory: pull, live updates, git clone, feedback checks.
    Pull,
    /// Also write it: push, and review proposals where the user reviews.
    Push,
    /// Also administer: history, rollback, delete, allowlists, settings, tokens, audit.
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Pull, Scope::Push, Scope::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Pull => "pull",
            Scope::Push => "push",
            Scope::Admin => "admin",
        }
    }

    /// The scopes a space- or comma-separated scope string grants, ignoring what is not a
    /// memsync scope (an identity provider's `openid`, `email`…). `memsync:push` and
    /// `memsync.push` are read as `push`. `None` when it names none of them.
    pub fn parse_list(s: &str) -> Option<std::collections::BTreeSet<Scope>> {
        let set: std::collections::BTreeSet<Scope> = s
            .split([' ', ','])
            .filter_map(|w| {
                let w = w.trim();
                let w = w
                    .strip_prefix("memsync:")
                    .or_else(|| w.strip_prefix("memsync."))
                    .unwrap_or(w);
                w.parse().ok()
            })
            .collect();
        (!set.is_empty()).then_some(set)
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Scope {
    type Err = String;

    fn from_str(s: &str) -> Result<Scope, String> {
        match s.trim() {
            "pull" => Ok(Scope::Pull),
            "push" => Ok(Scope::Push),
            "admin" => Ok(Scope::Admin),
            other => Err(format!(
                "`{other}` is not a scope: use `pull` (read only), `push` (read and write) or `admin`"
            )),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TokenIssued {
    /// The token, shown once.
    pub token: String,
    pub jti: String,
    /// Unix seconds.
    pub expires_at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle_from_the_path() {
        for dated in [
            "2026-11-30-outage.md",
            "incidents/2026-11-30.md",
            "standup_20261130.md",
            "notes/2026-11/retro.md",
            "retro-2025_03.md",
            "release.2026.01.02.md",
        ] {
            assert_eq!(Lifecycle::of_path(dated), Lifecycle::Dated, "{dated}");
        }
        for evergreen in [
            "testing-policy.md",
            "http2-settings.md",
            "port-8080.md",
            "ticket-1234567.md",
            "build-123456789.md",
            "v2026-13-01.md",
            "sha-20261399.md",
            "oauth2.md",
        ] {
            assert_eq!(
                Lifecycle::of_path(evergreen),
                Lifecycle::Evergreen,
                "{evergreen}"
            );
        }
    }

    #[test]
    fn team_grants() {
        assert_eq!(
            parse_team_grant("acme"),
            Ok(("acme".into(), TeamRole::Member))
        );
        assert_eq!(
            parse_team_grant("ops:admin"),
            Ok(("ops".into(), TeamRole::Admin))
        );
        assert_eq!(
            parse_team_grant("ops:member"),
            Ok(("ops".into(), TeamRole::Member))
        );
        for bad in ["ops:", "ops:owner", ":admin", "Ops", "a/b:admin", ""] {
            assert!(parse_team_grant(bad).is_err(), "{bad}");
        }
        let g = parse_team_grants(&["ops", "ops:admin", "acme"]).expect("valid");
        assert_eq!(g.len(), 2);
        assert_eq!(g.get("ops"), Some(&TeamRole::Admin));
        assert_eq!(g.get("acme"), Some(&TeamRole::Member));
    }
}
