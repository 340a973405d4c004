//! Rescanning what is published when the scanner's rules change (SPEC §9, issue 12 §6).
//!
//! Every live version records the scanner rule set that checked it (`memories.rule_set`,
//! `memsync_core::scan::rule_set_id`: the built-in rules plus the `--scan-rules` file). A rescan
//! scans every live memory (indexes aside: they are derived from the memories) whose rule set is
//! not the current one, NULL included, so everything stored before rule sets were recorded is
//! scanned once:
//!
//! - clean (or every finding allowlisted for the project): its rule set is updated;
//! - otherwise it is **disabled** by a revision of kind `rescan` written by `memsync-server` (a
//!   system principal, never a token), whose note names the rules; a review item of kind
//!   `flagged` is queued (the findings' rules, lines, columns and fingerprints, never the matched
//!   text), and the audit log gets a `rescan_disabled` row. The three commit together.
//!
//! Each memory is its own small transaction and the rule set is recorded as it goes, so a
//! rescan cut short (a restart, a lost database) picks up where it stopped. One process rescans
//! at a time (a PostgreSQL advisory lock); `serve` rescans in the background at start-up, and
//! `memsync-server rescan` on demand (`--all`: also what the current rules already checked).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::Context;
use memsync_core::wire::{Failure, Provenance, PushChange, PushOp, PushRequest, VersionProvenance};
use memsync_core::{ProjectId, guard, policy, scan};
use serde_json::json;
use sqlx::PgPool;

use crate::auth::{Claims, Principal};
use crate::error::ApiError;
use crate::store::history::{self, Flagged};
use crate::store::memories::{self, RescanCandidate, rfc3339};
use crate::store::{allowlist, outbox};
use crate::sync::{self, PushMeta, SyncLimits};

/// Who rescans: the name on the revisions, review items and audit rows a rescan writes.
pub const ACTOR: &str = "memsync-server";

/// Memories read, scanned and recorded at a time.
const BATCH: i64 = 100;

/// What a rescan did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Summary {
    /// The rule set it scanned with.
    pub rule_set: String,
    /// Memories scanned.
    pub rescanned: u64,
    /// Projects they are in.
    pub projects: u64,
    /// Memories disabled and queued for review.
    pub disabled: u64,
    /// Memories with a finding left published because their project is archived (read-only);
    /// they are rescanned again next time.
    pub archived: u64,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plural =
            |n: u64, one: &'static str, many: &'static str| if n == 1 { one } else { many };
        write!(
            f,
            "rescanned {} {} in {} {}; disabled {}",
            self.rescanned,
            plural(self.rescanned, "memory", "memories"),
            self.projects,
            plural(self.projects, "project", "projects"),
            self.disabled
        )?;
        if self.archived > 0 {
            write!(
                f,
                "; {} with findings left published in archived projects",
                self.archived
            )?;
        }
        Ok(())
    }
}

/// The rescan of `serve`: at start-up, in the background; while another process holds the lock
/// (a replica, or `memsync-server rescan`), it waits and tries again, until one pass is done.
pub fn spawn(pool: PgPool, limits: SyncLimits) {
    tokio::spawn(async move {
        let mut wait = Duration::from_secs(5);
        loop {
            if pool.is_closed() {
                return;
            }
            match run(&pool, limits, false, None).await {
                Ok(Some(s)) => {
                    if s.rescanned > 0 || s.archived > 0 {
                        tracing::info!(rule_set = %s.rule_set, rescanned = s.rescanned, projects = s.projects,
                            disabled = s.disabled, archived = s.archived, "rescan: {s}");
                    }
                    return;
                }
                Ok(None) => {
                    tracing::info!("another process is rescanning; trying again in 30s");
                    wait = Duration::from_secs(30);
                }
                Err(e) => {
                    if pool.is_closed() {
                        return;
                    }
                    tracing::warn!(error = format!("{e:#}"), retry_in = ?wait, "rescan failed; it resumes where it stopped");
                    wait = (wait * 2).min(Duration::from_secs(300));
                }
            }
            tokio::time::sleep(wait).await;
        }
    });
}

/// One rescan while holding the rescan lock. Without the lock: `Ok(None)` when `wait_for_lock`
/// is None, else waits that long for it (then fails).
pub async fn run(
    pool: &PgPool,
    limits: SyncLimits,
    all: bool,
    wait_for_lock: Option<Duration>,
) -> anyhow::Result<Option<Summary>> {
    let mut conn = outbox::connect(pool).await?;
    if !memories::try_lock_rescan(&mut conn).await? {
        let Some(wait) = wait_for_lock else {
            return Ok(None);
        };
        eprintln!("memsync-server: waiting for the rescan another process is running");
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            if memories::try_lock_rescan(&mut conn).await? {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                anyhow::bail!(
                    "another process kept the rescan lock for {}s; try again later",
                    wait.as_secs()
                );
            }
        }
    }
    let result = pass(pool, limits, all).await;
    // Closing the session frees the lock if unlocking fails.
    let _ = memories::unlock_rescan(&mut conn).await;
    result.map(Some)
}

async fn pass(pool: &PgPool, limits: SyncLimits, all: bool) -> anyhow::Result<Summary> {
    let rule_set = scan::rule_set_id();
    let stale_for = (!all).then_some(rule_set);
    let mut summary = Summary {
        rule_set: rule_set.to_owned(),
        ..Summary::default()
    };
    for name in memories::rescan_projects(pool, stale_for).await? {
        let Ok(project) = name.parse::<ProjectId>() else {
            tracing::warn!(project = name, "rescan: skipping an invalid project id");
            continue;
        };
        let before = summary.rescanned;
        rescan_project(pool, limits, &project, stale_for, &mut summary)
            .await
            .with_context(|| format!("rescanning {project}"))?;
        if summary.rescanned > before {
            summary.projects += 1;
        }
    }
    Ok(summary)
}

async fn rescan_project(
    pool: &PgPool,
    limits: SyncLimits,
    project: &ProjectId,
    stale_for: Option<&str>,
    summary: &mut Summary,
) -> anyhow::Result<()> {
    let allowed = allowlist::fingerprints(pool, project).await?;
    let mut after = String::new();
    loop {
        let batch = memories::rescan_candidates(pool, project, stale_for, &after, BATCH).await?;
        let Some(last) = batch.last() else {
            return Ok(());
        };
        after = last.path.clone();
        // Scanning is CPU work: off the async runtime.
        let scanned = tokio::task::spawn_blocking(move || {
            batch
                .into_iter()
                .map(|c| {
                    let findings = guard::scan_text(&c.path, &c.content);
                    (c, findings)
                })
                .collect::<Vec<_>>()
        })
        .await
        .context("a rescan task panicked")?;
        let mut checked = Vec::new();
        for (memory, findings) in scanned {
            summary.rescanned += 1;
            let findings = policy::allowlisted(findings, &allowed);
            if findings.is_empty() {
                checked.push((memory.path, memory.revision));
                continue;
            }
            match disable(pool, limits, project, &memory, &findings).await? {
                Outcome::Disabled => summary.disabled += 1,
                Outcome::Archived => summary.archived += 1,
                Outcome::Changed => {}
            }
        }
        if !checked.is_empty() {
            memories::mark_checked(pool, project, scan::rule_set_id(), &checked).await?;
        }
    }
}

enum Outcome {
    Disabled,
    /// Left published: the project is archived (read-only).
    Archived,
    /// A push changed or removed it meanwhile (and scanned what it wrote).
    Changed,
}

/// Disables `memory`, queues it for review and audits it, in one transaction.
async fn disable(
    pool: &PgPool,
    limits: SyncLimits,
    project: &ProjectId,
    memory: &RescanCandidate,
    findings: &[Failure],
) -> anyhow::Result<Outcome> {
    let rules: Vec<&str> = findings
        .iter()
        .map(|f| f.rule.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let note = format!("rescan: {}", rules.join(", "));
    let principal = system_principal();
    let meta = PushMeta {
        note: Some(&note),
        provenance: Some(VersionProvenance {
            author: ACTOR.into(),
            author_sub: ACTOR.into(),
            token_id: None,
            client: Provenance {
                client_version: Some(format!("{ACTOR}/{}", env!("CARGO_PKG_VERSION"))),
                ..Provenance::default()
            },
            pushed_at: rfc3339(chrono::Utc::now()),
            approved_by: None,
            proposal_id: None,
        }),
        ..PushMeta::new(project, &principal, "rescan")
    };
    let req = PushRequest {
        changes: vec![PushChange {
            path: memory.path.clone(),
            op: PushOp::Delete,
            base_sha256: Some(memory.sha256.parse().context("a stored sha256")?),
            content: None,
            named_paths: Vec::new(),
        }],
        allow_mass_delete: true,
        allow_purged: false,
        provenance: None,
    };
    let mut tx = pool.begin().await?;
    let resp = match sync::push_in(&mut tx, pool, limits, &meta, &req).await {
        Ok(r) if r.created_revision => r,
        Ok(_) | Err(ApiError::Conflict { .. }) => return Ok(Outcome::Changed),
        Err(ApiError::Unprocessable {
            code: "project_archived",
            ..
        }) => {
            tracing::warn!(%project, path = memory.path, rules = ?rules,
                "rescan: a finding in an archived project; the memory stays published (unarchive the project to have it disabled)");
            return Ok(Outcome::Archived);
        }
        Err(e) => return Err(anyhow::Error::new(e).context(format!("disabling {}", memory.path))),
    };
    let listed: Vec<serde_json::Value> = findings
        .iter()
        .map(|f| {
            json!({
                "rule": f.rule, "line": f.line, "column": f.column, "fingerprint": f.fingerprint,
            })
        })
        .collect();
    let mut lines: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for f in findings {
        lines
            .entry(f.rule.as_str())
            .or_default()
            .push(f.line.map_or_else(|| "?".into(), |l| l.to_string()));
    }
    let reason = format!(
        "the scanner's rules (rule set {}) now find {} in the published version (revision {}), so it was disabled; \
         enable it once the finding is allowlisted, or publish an edited version",
        scan::rule_set_id(),
        lines
            .iter()
            .map(|(rule, ls)| format!("{rule} on line {}", ls.join(", ")))
            .collect::<Vec<_>>()
            .join("; "),
        memory.revision
    );
    let source = match &memory.provenance {
        Some(p) => p.clone(),
        None => serde_json::to_value(VersionProvenance {
            author: memory.author_name.clone(),
            author_sub: memory.author_sub.clone(),
            token_id: None,
            client: Provenance::default(),
            pushed_at: rfc3339(memory.written_at),
            approved_by: None,
            proposal_id: None,
        })?,
    };
    let item = history::flag_for_review(
        &mut tx,
        project,
        &Flagged {
            path: &memory.path,
            sha256: &memory.sha256,
            provenance: &source,
            reason: &reason,
            findings: &serde_json::Value::Array(listed),
            by: ACTOR,
        },
    )
    .await?;
    let fingerprints: Vec<&str> = findings
        .iter()
        .filter_map(|f| f.fingerprint.as_deref())
        .collect();
    crate::admin::audit::event(
        &mut *tx,
        &principal,
        project,
        "rescan_disabled",
        Some(&memory.path),
        Some(resp.revision),
        None,
        json!({
            "rules": rules, "fingerprints": fingerprints, "rule_set": scan::rule_set_id(),
            "disabled_revision": memory.revision, "proposal_id": item,
        }),
    )
    .await?;
    tx.commit().await?;
    tracing::info!(%project, path = memory.path, rules = ?rules, revision = resp.revision,
        "rescan: disabled a memory and queued it for review");
    Ok(Outcome::Disabled)
}

/// The server itself as the actor of a rescan: it acts in every project, and no token carries it.
fn system_principal() -> Principal {
    Principal {
        claims: Claims {
            sub: ACTOR.into(),
            name: ACTOR.into(),
            email: None,
            teams: BTreeMap::new(),
            admin: true,
            jti: uuid::Uuid::nil(),
            iat: 0,
            exp: 0,
            iss: ACTOR.into(),
            aud: ACTOR.into(),
            scope: None,
            projects: Vec::new(),
            rate: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_line_counts_in_words() {
        let s = |rescanned, projects, disabled, archived| {
            Summary {
                rule_set: "0123456789abcdef".into(),
                rescanned,
                projects,
                disabled,
                archived,
            }
            .to_string()
        };
        assert_eq!(
            s(0, 0, 0, 0),
            "rescanned 0 memories in 0 projects; disabled 0"
        );
        assert_eq!(s(1, 1, 1, 0), "rescanned 1 memory in 1 project; disabled 1");
        assert_eq!(
            s(214, 9, 1, 2),
            "rescanned 214 memories in 9 projects; disabled 1; 2 with findings left published in archived projects"
        );
    }
}
