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
    /// The project's revision this answer reflects; the client's next `since`.
    pub revision: i64,
    pub since: i64,
    pub changes: Vec<FileState>,
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
        assert_eq!(g.get("ops"), Some(&TeamRole::Admin));
        assert_eq!(g.get("acme"), Some(&TeamRole::Member));
    }
}
