//! The revision bus: each replica keeps every project's current revision in memory, so that a
//! pull asking for what the client already has is answered after authentication with no database
//! round trip.
//!
//! The database announces every new revision on `memsync_revision` when the writing transaction
//! commits (a trigger on `projects`, migration 9). A replica listens, and loads every project's
//! revision whenever its listener (re)connects and every 30 s. Until that load is done — at start,
//! or after the listener lost its connection — the bus knows nothing and pulls go to the
//! database, so a replica never answers from a view it cannot keep current.
//!
//! What the bus may answer is only "you are up to date": a pull whose `since` (or
//! `If-None-Match`) is the known revision. Every successful write through this replica (a push,
//! an admin action, a review decision) drops what the bus knew of its project before the answer
//! leaves (`http::bus_writes`), and the next pull there reads the database and tells the bus what
//! it found: so after a write, nobody pulling from that replica is told it is up to date with an
//! older revision. On another replica the author asks with the new revision, which that bus
//! either knows or has not heard of yet (then the database answers); only a client that has not
//! written may there, for the milliseconds an announcement takes, be told it is up to date.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use memsync_core::ProjectId;
use sqlx::PgPool;

/// The channel the trigger announces on.
pub const CHANNEL: &str = "memsync_revision";
/// How often the whole map is loaded again even when no connection was lost.
const RESYNC: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Inner {
    revisions: RwLock<HashMap<String, i64>>,
    /// The map is current: loaded since the listener last connected, and the listener is up.
    synced: AtomicBool,
}

#[derive(Clone, Default)]
pub struct RevisionBus(Arc<Inner>);

impl RevisionBus {
    /// The project's current revision, when this replica knows it for sure.
    pub fn known(&self, project: &ProjectId) -> Option<i64> {
        if !self.0.synced.load(Ordering::Acquire) {
            return None;
        }
        self.0
            .revisions
            .read()
            .ok()
            .and_then(|m| m.get(project.as_str()).copied())
    }

    /// An announcement: revisions only grow, so an announcement older than what a load found
    /// (delivered after it) changes nothing.
    fn heard(&self, payload: &str) -> bool {
        let Some((project, revision)) = payload.rsplit_once(' ') else {
            return false;
        };
        let Ok(revision) = revision.parse::<i64>() else {
            return false;
        };
        self.advance(project, revision);
        true
    }

    /// A write through this replica changed `project` (None: some project, e.g. an approval
    /// named by its id): what the bus knew of it is dropped, so the next pull here reads the
    /// database (and tells the bus what it read) instead of trusting an announcement that may not
    /// have arrived yet.
    pub fn wrote(&self, project: Option<&str>) {
        if let Ok(mut m) = self.0.revisions.write() {
            match project {
                Some(p) => {
                    m.remove(p);
                }
                None => m.clear(),
            }
        }
    }

    /// What a pull just read from the database: the project was at `revision` (or later).
    pub fn read(&self, project: &ProjectId, revision: i64) {
        self.advance(project.as_str(), revision);
    }

    fn advance(&self, project: &str, revision: i64) {
        if let Ok(mut m) = self.0.revisions.write() {
            let known = m.entry(project.to_owned()).or_insert(revision);
            *known = (*known).max(revision);
        }
    }

    /// Loads every project's revision, replacing what was known (a restored database may have
    /// gone back).
    async fn load(&self, pool: &PgPool) -> anyhow::Result<()> {
        let rows = crate::store::memories::all_revisions(pool).await?;
        if let Ok(mut m) = self.0.revisions.write() {
            *m = rows.into_iter().collect();
        }
        self.0.synced.store(true, Ordering::Release);
        Ok(())
    }

    fn unsynced(&self) {
        self.0.synced.store(false, Ordering::Release);
    }

    /// Listens for announcements for as long as the pool is open: on every (re)connect the map
    /// is loaded again after the LISTEN is in place (so nothing committed in between is missed),
    /// and again every 30 s; while the listener is down the bus knows nothing.
    pub fn spawn(&self, pool: PgPool) {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                me.unsynced();
                match sqlx::postgres::PgListener::connect_with(&pool).await {
                    Ok(mut listener) => {
                        if let Err(e) = listener.listen(CHANNEL).await {
                            tracing::warn!(error = %e, "LISTEN for revisions failed");
                        } else if let Err(e) = me.load(&pool).await {
                            tracing::warn!(error = %e, "loading project revisions failed");
                        } else {
                            loop {
                                match tokio::time::timeout(RESYNC, listener.recv()).await {
                                    Ok(Ok(n)) => {
                                        if !me.heard(n.payload()) {
                                            tracing::warn!(
                                                payload = n.payload(),
                                                "unreadable revision announcement"
                                            );
                                        }
                                    }
                                    Ok(Err(e)) => {
                                        me.unsynced();
                                        if pool.is_closed() {
                                            return;
                                        }
                                        tracing::warn!(error = %e, "revision listener lost its connection");
                                        break;
                                    }
                                    Err(_) => {
                                        if let Err(e) = me.load(&pool).await {
                                            me.unsynced();
                                            tracing::warn!(error = %e, "reloading project revisions failed");
                                            break;
                                        }
                                    }
                                }
                            }
                        }
                    }
                    Err(_) if pool.is_closed() => return,
                    Err(e) => tracing::warn!(error = %e, "revision listener cannot connect"),
                }
                me.unsynced();
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announcements_only_move_revisions_forward_and_nothing_is_known_unsynced() {
        let bus = RevisionBus::default();
        let p = ProjectId::new("acme", "api").unwrap();
        assert!(bus.heard("acme/api 5"));
        assert_eq!(bus.known(&p), None, "not loaded yet: nothing is known");
        bus.0.synced.store(true, Ordering::Release);
        assert_eq!(bus.known(&p), Some(5));
        assert!(bus.heard("acme/api 4"));
        assert_eq!(
            bus.known(&p),
            Some(5),
            "an older announcement changes nothing"
        );
        assert!(bus.heard("acme/api 7"));
        assert_eq!(bus.known(&p), Some(7));
        assert!(!bus.heard("garbage"));
        assert!(!bus.heard("acme/api x"));
        bus.unsynced();
        assert_eq!(bus.known(&p), None);
    }
}
