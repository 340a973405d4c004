//! The layout rules a push is held to under the project lock: what the batch would do to the
//! team directory on disk (no file/directory or letter-case clash on any filesystem a team uses)
//! and to purged history (purged content does not come back without a team admin's override).

use std::collections::HashSet;

use memsync_core::Sha256;
use memsync_core::policy::CheckedChange;
use memsync_core::tree::{LookupKeys, PathTree};
use memsync_core::wire::{Failure, PushOp};
use sqlx::PgConnection;

use super::PushMeta;
use crate::store::memories::{self, PushSnapshot, SnapshotQuery};

/// What a batch asks of the database under the lock, worked out before taking it: its paths,
/// the on-disk clash keys of its puts and the hashes of its contents.
pub struct BatchKeys {
    paths: Vec<String>,
    clash: LookupKeys,
    hashes: Vec<String>,
}

impl BatchKeys {
    pub fn of(checked: &[CheckedChange]) -> BatchKeys {
        let mut clash = LookupKeys::default();
        let mut hashes = Vec::new();
        for c in checked.iter().filter(|c| c.op == PushOp::Put) {
            clash.extend(PathTree::lookup_keys(c.path.as_str()));
            if let Some(t) = c.content.as_deref() {
                hashes.push(Sha256::of(t.as_bytes()).to_hex());
            }
        }
        BatchKeys {
            paths: checked.iter().map(|c| c.path.as_str().to_owned()).collect(),
            clash,
            hashes,
        }
    }

    /// Reads the batch's `PushSnapshot` (call it with the project locked).
    pub async fn snapshot(
        &self,
        tx: &mut PgConnection,
        meta: &PushMeta<'_>,
        idempotency: Option<&str>,
    ) -> sqlx::Result<PushSnapshot> {
        let sub = meta.principal.claims.sub.as_str();
        memories::push_snapshot(
            tx,
            meta.project,
            &SnapshotQuery {
                paths: &self.paths,
                clash_exact: &self.clash.exact,
                clash_prefixes: &self.clash.prefixes,
                hashes: &self.hashes,
                idempotency: idempotency.map(|k| (sub, k)),
            },
        )
        .await
    }
}

/// What the batch would do to the team directory on disk and to purged history: no path may
/// collide with another as file and directory or by letter case (on every filesystem a team
/// uses), and content an admin purged does not come back without a team admin's override.
/// Decided from the snapshot read under the lock: no database round trip of its own. Returns
/// the failures (none: the batch keeps to the rules).
pub fn layout_rules(
    meta: &PushMeta<'_>,
    checked: &[CheckedChange],
    allow_purged: bool,
    snapshot: &PushSnapshot,
) -> Vec<Failure> {
    let project = meta.project;
    let mut failures = Vec::new();

    let puts: Vec<&CheckedChange> = checked.iter().filter(|c| c.op == PushOp::Put).collect();
    if !puts.is_empty() {
        let deleted: HashSet<&str> = checked
            .iter()
            .filter(|c| c.op == PushOp::Delete)
            .map(|c| c.path.as_str())
            .collect();
        let pushed: HashSet<&str> = puts.iter().map(|c| c.path.as_str()).collect();
        // What stays: the stored paths this batch neither deletes nor rewrites (rewriting a path
        // in its own spelling is no clash), then the batch's own files, in order.
        let (mut tree, _) = PathTree::build(
            snapshot
                .clash_candidates
                .iter()
                .map(String::as_str)
                .filter(|p| !deleted.contains(p) && !pushed.contains(p)),
        );
        for c in &puts {
            if let Err(clash) = tree.insert(c.path.as_str()) {
                failures.push(Failure::new(
                    c.path.to_string(),
                    clash.rule(),
                    clash.message(),
                    None,
                ));
            }
        }
    }

    let purged = &snapshot.purged;
    let overridden = allow_purged && meta.principal.is_team_admin(project);
    if !purged.is_empty() && !overridden {
        for c in &puts {
            let sha = c
                .content
                .as_deref()
                .map(|t| Sha256::of(t.as_bytes()).to_hex());
            if let Some((_, from)) = purged.iter().find(|(h, _)| Some(h) == sha.as_ref()) {
                failures.push(Failure::new(
                    c.path.to_string(),
                    "purged_content",
                    format!(
                        "this content was purged from {from} by an admin and cannot be pushed again; \
                         delete it locally (`memsync pull` after removing the file), or ask a team admin to \
                         push it with `allow_purged` if the purge was a mistake"
                    ),
                    None,
                ));
            }
        }
    }
    failures
}
