//! Which copy of a project's repository a clone may be served from. Replicas need not share
//! `--export-dir`: only the exporting replica's copy is kept current, and another replica's may be
//! missing, behind, or written before a purge it never saw. A clone through `/git/` is therefore
//! served only from a copy known to be current and free of purged content:
//!
//! - no copy is served while a rewrite of the project's repository is pending (a purge or
//!   `export rebuild` was committed and not yet carried out): each may still hold what it removes;
//! - the exporting replica, once it has caught its repositories up after taking the export lock,
//!   serves its copy as before, even a few milliseconds behind the newest push (it is catching
//!   up);
//! - every other copy (another replica's, or the exporter's before it has caught up) is served
//!   only when its branch head carries the project's current revision (`Memsync-Revision` ==
//!   `projects.revision`);
//! - no copy that holds a purged version is served ([`repo::holds_purged`]).
//!
//! The cost per request is one query on primary keys ([`outbox::clone_state`]) and reading the
//! branch and its head commit. Only for a project that ever had content purged are its purged
//! versions listed (one query) and, once per branch head and set of purged versions, the commits
//! of the purged revisions looked at; the answer is remembered.
//!
//! A replica sharing the export directory with the exporter passes these checks as soon as the
//! exporter has written the newest revision. The check and the serving are not one atomic step:
//! what may change a copy in between is only the exporter (which appends current revisions, or
//! swaps in a rewritten repository), never something older.

use std::collections::HashMap;
use std::sync::Mutex;

use git2::Oid;
use memsync_core::ProjectId;

use super::{Exporter, repo};
use crate::error::{ApiError, ApiResult};
use crate::store::outbox::{self, CloneState};

/// Remembered purge checks, at most this many projects (then forgotten all at once).
const REMEMBERED: usize = 10_000;

/// A project's purged versions, (revision, path), newest first.
type Purged = Vec<(i64, String)>;

/// The purged versions a branch head was checked against, per project, when it held none.
#[derive(Default)]
pub(super) struct PurgeChecks(Mutex<HashMap<ProjectId, (Oid, Purged)>>);

impl PurgeChecks {
    fn clean(&self, project: &ProjectId, head: Oid, purged: &[(i64, String)]) -> bool {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(project)
            .is_some_and(|(h, p)| *h == head && p.as_slice() == purged)
    }

    fn remember(&self, project: &ProjectId, head: Oid, purged: Purged) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= REMEMBERED && !map.contains_key(project) {
            map.clear();
        }
        map.insert(project.clone(), (head, purged));
    }
}

/// Why a copy is not served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stale {
    RewritePending,
    Missing { current: i64 },
    Behind { copy: i64, current: i64 },
    Ahead { copy: i64, current: i64 },
    HoldsPurged,
    Unreadable,
}

impl Stale {
    /// What the caller is told: what is wrong with this copy, and what to do instead.
    pub fn message(&self, project: &ProjectId) -> String {
        const INSTEAD: &str = "The replica that runs the git export is catching up (it has just taken the export over, or is rebuilding); retry in a few seconds, or clone from the mirror.";
        let what = match self {
            Stale::RewritePending => {
                return format!(
                    "the git export of {project} is being rewritten (after a purge or `memsync-server export rebuild`) and is not served until that is done; retry in a few seconds."
                );
            }
            Stale::Missing { current } => format!(
                "this server has no copy of the git export of {project} (the project is at revision {current})"
            ),
            Stale::Behind { copy, current } => format!(
                "this server's copy of the git export of {project} is at revision {copy}, the project at {current}"
            ),
            Stale::Ahead { copy, current } => format!(
                "this server's copy of the git export of {project} is at revision {copy}, ahead of the project's {current} (restored database?)"
            ),
            Stale::HoldsPurged => format!(
                "this server's copy of the git export of {project} was written before content was purged and still holds it"
            ),
            Stale::Unreadable => format!(
                "this server's copy of the git export of {project} cannot be read (see the server's log)"
            ),
        };
        format!("{what}, so it is not served. {INSTEAD}")
    }
}

/// What to do with a clone request, from the database's state of the project, the revision of
/// this copy's branch head (None: no copy, or no commit), and whether this process runs the
/// export and has caught its repositories up since taking it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Decision {
    /// There is no such project.
    NoProject,
    /// Nothing to clone yet: no revision, or the exporter is writing the first commits.
    NotExported,
    Refuse(Stale),
    /// Current: served, once the purged versions are known not to be in it.
    CheckPurges,
    Serve,
}

fn decide(state: Option<CloneState>, copy: Option<i64>, exporter: bool) -> Decision {
    let Some(state) = state else {
        return Decision::NoProject;
    };
    if state.rewrite_pending {
        return Decision::Refuse(Stale::RewritePending);
    }
    let current = state.revision;
    match copy {
        None if current == 0 || exporter => return Decision::NotExported,
        None => return Decision::Refuse(Stale::Missing { current }),
        Some(copy) if copy > current => return Decision::Refuse(Stale::Ahead { copy, current }),
        Some(copy) if copy < current && !exporter => {
            return Decision::Refuse(Stale::Behind { copy, current });
        }
        Some(_) => {}
    }
    if state.ever_purged {
        Decision::CheckPurges
    } else {
        Decision::Serve
    }
}

/// Ok when this process's copy of `project` may be served; otherwise the answer to give: 404
/// when there is no project or nothing exported yet, `Err(Ok(stale))` when the copy is refused.
pub(super) async fn check(ex: &Exporter, project: &ProjectId) -> ApiResult<Result<(), Stale>> {
    let state = outbox::clone_state(&ex.pool, project).await?;
    let path = ex.repo_path(project);
    let head = {
        let (path, project) = (path.clone(), project.clone());
        tokio::task::spawn_blocking(move || repo::head(&path, &project))
            .await
            .map_err(|e| ApiError::Internal(anyhow::anyhow!("reading the branch head: {e}")))?
    };
    let head = match head {
        Ok(h) => h,
        Err(e) => {
            tracing::warn!(%project, error = format!("{e:#}"), "cannot read the git export's branch head; not serving it");
            return Ok(Err(Stale::Unreadable));
        }
    };
    let exporter = ex.is_leader() && ex.is_caught_up();
    match decide(state, head.map(|(_, r)| r), exporter) {
        Decision::NoProject => Err(crate::sync::not_found(project)),
        Decision::NotExported => Err(ApiError::NotFound(format!(
            "{project} has no git export yet (it is written within seconds of the first push)"
        ))),
        Decision::Refuse(stale) => Ok(Err(stale)),
        Decision::Serve => Ok(Ok(())),
        Decision::CheckPurges => {
            let Some((oid, revision)) = head else {
                return Ok(Err(Stale::Unreadable));
            };
            let purged = outbox::purged(&ex.pool, project, revision).await?;
            if purged.is_empty() || ex.purge_checks.clean(project, oid, &purged) {
                return Ok(Ok(()));
            }
            let held = {
                let (project, purged) = (project.clone(), purged.clone());
                tokio::task::spawn_blocking(move || {
                    repo::holds_purged_from(&path, &project, oid, &purged)
                })
                .await
                .map_err(|e| ApiError::Internal(anyhow::anyhow!("checking for purges: {e}")))?
            };
            match held {
                Ok(false) => {
                    ex.purge_checks.remember(project, oid, purged);
                    Ok(Ok(()))
                }
                Ok(true) => {
                    tracing::warn!(%project, "not serving a git export written before a purge");
                    Ok(Err(Stale::HoldsPurged))
                }
                Err(e) => {
                    tracing::warn!(%project, error = format!("{e:#}"), "cannot check the git export for purged content; not serving it");
                    Ok(Err(Stale::Unreadable))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(revision: i64, rewrite_pending: bool, ever_purged: bool) -> Option<CloneState> {
        Some(CloneState {
            revision,
            rewrite_pending,
            ever_purged,
        })
    }

    #[test]
    fn only_a_current_copy_is_served_and_the_exporter_may_be_catching_up() {
        use Decision::*;
        let cases = [
            // (database, copy's head revision, this process exports and has caught up, decision)
            (None, Some(3), true, NoProject),
            (state(0, false, false), None, false, NotExported),
            (state(5, false, false), None, true, NotExported),
            (
                state(5, false, false),
                None,
                false,
                Refuse(Stale::Missing { current: 5 }),
            ),
            (state(5, false, false), Some(5), false, Serve),
            (state(5, false, false), Some(5), true, Serve),
            (
                state(5, false, false),
                Some(4),
                false,
                Refuse(Stale::Behind {
                    copy: 4,
                    current: 5,
                }),
            ),
            (state(5, false, false), Some(4), true, Serve),
            (
                state(5, false, false),
                Some(6),
                true,
                Refuse(Stale::Ahead {
                    copy: 6,
                    current: 5,
                }),
            ),
            (state(5, false, true), Some(5), false, CheckPurges),
            (state(5, false, true), Some(4), true, CheckPurges),
            (
                state(5, false, true),
                Some(4),
                false,
                Refuse(Stale::Behind {
                    copy: 4,
                    current: 5,
                }),
            ),
            (
                state(5, true, false),
                Some(5),
                true,
                Refuse(Stale::RewritePending),
            ),
            (
                state(5, true, false),
                Some(5),
                false,
                Refuse(Stale::RewritePending),
            ),
        ];
        for (db, copy, exporter, want) in cases {
            assert_eq!(
                decide(db, copy, exporter),
                want,
                "{db:?} {copy:?} {exporter}"
            );
        }
    }

    #[test]
    fn a_refusal_says_what_to_do() {
        let p = ProjectId::new("acme", "api").expect("project");
        let m = Stale::Behind {
            copy: 2,
            current: 7,
        }
        .message(&p);
        assert!(m.contains("revision 2, the project at 7"), "{m}");
        assert!(m.contains("clone from the mirror"), "{m}");
        assert!(m.contains("retry"), "{m}");
        assert!(!m.contains('\n'));
        assert!(Stale::RewritePending.message(&p).contains("retry"));
    }

    #[test]
    fn remembered_checks_are_for_one_head_and_one_set_of_purged_versions() {
        let checks = PurgeChecks::default();
        let p = ProjectId::new("acme", "api").expect("project");
        let head = Oid::from_str("0123456789012345678901234567890123456789").expect("oid");
        let other = Oid::from_str("1123456789012345678901234567890123456789").expect("oid");
        let purged = vec![(3, "leak.md".to_owned())];
        assert!(!checks.clean(&p, head, &purged));
        checks.remember(&p, head, purged.clone());
        assert!(checks.clean(&p, head, &purged));
        assert!(!checks.clean(&p, other, &purged));
        let more = vec![(4, "b.md".to_owned()), (3, "leak.md".to_owned())];
        assert!(!checks.clean(&p, head, &more));
    }
}
