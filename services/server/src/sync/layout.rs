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
use super::push::Stop;
use crate::store::memories;

/// What the batch would do to the team directory on disk and to purged history: no path may
/// collide with another as file and directory or by letter case (on every filesystem a team
/// uses), and content an admin purged does not come back without a team admin's override.
pub async fn layout_rules(
    tx: &mut PgConnection,
    meta: &PushMeta<'_>,
    checked: &[CheckedChange],
    allow_purged: bool,
) -> Result<(), Stop> {
    let project = meta.project;
    let mut failures = Vec::new();

    let puts: Vec<&CheckedChange> = checked.iter().filter(|c| c.op == PushOp::Put).collect();
    if !puts.is_empty() {
        let mut keys = LookupKeys::default();
        for c in &puts {
            keys.extend(PathTree::lookup_keys(c.path.as_str()));
        }
        let deleted: HashSet<&str> = checked
            .iter()
            .filter(|c| c.op == PushOp::Delete)
            .map(|c| c.path.as_str())
            .collect();
        let pushed: HashSet<&str> = puts.iter().map(|c| c.path.as_str()).collect();
        let stored =
            memories::clash_candidates(&mut *tx, project, &keys.exact, &keys.prefixes).await?;
        // What stays: the stored paths this batch neither deletes nor rewrites (rewriting a path
        // in its own spelling is no clash), then the batch's own files, in order.
        let (mut tree, _) = PathTree::build(
            stored
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

    let hashes: Vec<String> = puts
        .iter()
        .filter_map(|c| c.content.as_deref())
        .map(|t| Sha256::of(t.as_bytes()).to_hex())
        .collect();
    if !hashes.is_empty() {
        let purged = crate::store::history::purged_hashes(&mut *tx, project, &hashes).await?;
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
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(Stop::refused(failures))
    }
}
