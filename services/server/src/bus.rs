//! The revision bus: each replica keeps every project's current revision in memory, so that a
//! pull asking for what the client already has is answered after authentication with no database
//! round trip.
//!
//! Every new revision is announced on `memsync_revision`: by the replica that wrote it right after
//! its commit for a client push ([`announce`], which keeps pushes committing together), else by
//! a trigger on `projects` when the writing transaction commits (migrations 9 and 11). A replica
//! listens, and loads every project's
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
//!
//! **Waiting.** Long-polls and event streams wait on [`RevisionBus::subscribe`]: a `watch`
//! channel per watched project holding its newest revision (never a queue: a slow reader sees
//! only the newest value, so a waiter's memory is bounded), moved by announcements, by loads and
//! by pulls that read the database. Review events (`memsync_review`, migration 10) go out on one
//! bounded broadcast channel; a reader that falls behind is told it missed some.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use memsync_core::ProjectId;
use sqlx::PgPool;
use tokio::sync::{broadcast, watch};

pub mod announce;

/// The channel the revision trigger announces on.
pub const CHANNEL: &str = "memsync_revision";
/// The channel the proposals trigger announces on.
pub const REVIEW_CHANNEL: &str = "memsync_review";
/// How often the whole map is loaded again even when no connection was lost.
const RESYNC: Duration = Duration::from_secs(30);
/// Review events buffered for slow readers before they are told they missed some.
const REVIEW_BACKLOG: usize = 256;

/// A proposal of `project` was made or decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewNote {
    pub project: String,
    pub proposal: String,
    pub status: String,
}

struct Inner {
    revisions: RwLock<HashMap<String, i64>>,
    /// Projects written through this replica since the last load began (`true`: some project
    /// the write did not name): a load that read the database before such a write must not
    /// bring back what the write made stale.
    written_since_load: Mutex<(HashSet<String>, bool)>,
    /// The map is current: loaded since the listener last connected, and the listener is up.
    synced: AtomicBool,
    /// The newest revision of every project someone waits on.
    watchers: Mutex<HashMap<String, watch::Sender<i64>>>,
    reviews: broadcast::Sender<ReviewNote>,
}

impl Default for Inner {
    fn default() -> Self {
        Inner {
            revisions: RwLock::default(),
            written_since_load: Mutex::default(),
            synced: AtomicBool::new(false),
            watchers: Mutex::default(),
            reviews: broadcast::Sender::new(REVIEW_BACKLOG),
        }
    }
}

#[derive(Clone, Default)]
pub struct RevisionBus(Arc<Inner>);

impl RevisionBus {
    /// Whether the bus is current (its listener is up and it has loaded since it connected).
    /// While it is not, waiters must also ask the database now and then.
    pub fn is_synced(&self) -> bool {
        self.0.synced.load(Ordering::Acquire)
    }

    /// A receiver of the project's newest revision as this replica learns of it; its current
    /// value is what the bus knew when subscribing (0 when nothing), marked as seen.
    pub fn subscribe(&self, project: &ProjectId) -> watch::Receiver<i64> {
        let start = self.known(project).unwrap_or(0);
        let mut w = self.0.watchers.lock().unwrap_or_else(|e| e.into_inner());
        w.entry(project.as_str().to_owned())
            .or_insert_with(|| watch::Sender::new(start))
            .subscribe()
    }

    /// Review events of every project (the reader filters).
    pub fn review_events(&self) -> broadcast::Receiver<ReviewNote> {
        self.0.reviews.subscribe()
    }

    /// Projects someone waits on, now (for metrics and tests).
    pub fn watched(&self) -> usize {
        self.0
            .watchers
            .lock()
            .map(|w| w.values().filter(|s| s.receiver_count() > 0).count())
            .unwrap_or(0)
    }

    fn wake(&self, project: &str, revision: i64) {
        let w = self.0.watchers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = w.get(project) {
            tx.send_if_modified(|r| {
                let newer = revision > *r;
                if newer {
                    *r = revision;
                }
                newer
            });
        }
    }

    /// Drops the channels nobody waits on any more.
    fn sweep(&self) {
        if let Ok(mut w) = self.0.watchers.lock() {
            w.retain(|_, tx| tx.receiver_count() > 0);
        }
    }

    fn heard_review(&self, payload: &str) -> bool {
        let mut parts = payload.split(' ');
        let (Some(project), Some(proposal), Some(status), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        // No receiver is not an error: nobody watches.
        let _ = self.0.reviews.send(ReviewNote {
            project: project.to_owned(),
            proposal: proposal.to_owned(),
            status: status.to_owned(),
        });
        true
    }

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
    /// (delivered after it) changes nothing. It moves a revision the bus knows, and never makes
    /// one known: notifications arrive late, and one sent before a write through this replica
    /// (say the project's creation, at revision 0, before the push that made it 1) may arrive
    /// after the write made the bus forget the project; taken as news, it would answer the next
    /// pull here "nothing new since 0". A project becomes known again from the database (a pull's
    /// read, or a load). Waiters are woken either way: they read for themselves.
    fn heard(&self, payload: &str) -> bool {
        let Some((project, revision)) = payload.rsplit_once(' ') else {
            return false;
        };
        let Ok(revision) = revision.parse::<i64>() else {
            return false;
        };
        if let Ok(mut m) = self.0.revisions.write()
            && let Some(known) = m.get_mut(project)
        {
            *known = (*known).max(revision);
        }
        self.wake(project, revision);
        true
    }

    /// A write through this replica changed `project` (None: some project, e.g. an approval
    /// named by its id): what the bus knew of it is dropped, so the next pull here reads the
    /// database (and tells the bus what it read) instead of trusting an announcement that may not
    /// have arrived yet.
    pub fn wrote(&self, project: Option<&str>) {
        // Recorded before the map is touched: a load replacing the map meanwhile drops it too.
        if let Ok(mut w) = self.0.written_since_load.lock() {
            match project {
                Some(p) => {
                    w.0.insert(p.to_owned());
                }
                None => w.1 = true,
            }
        }
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
        self.wake(project, revision);
    }

    /// Loads every project's revision, replacing what was known (a restored database may have
    /// gone back).
    async fn load(&self, pool: &PgPool) -> anyhow::Result<()> {
        if let Ok(mut w) = self.0.written_since_load.lock() {
            *w = Default::default();
        }
        let rows = crate::store::memories::all_revisions(pool).await?;
        // Waiters hear of what was announced while the listener was down.
        self.sweep();
        let watched: Vec<(String, i64)> = {
            let w = self.0.watchers.lock().unwrap_or_else(|e| e.into_inner());
            rows.iter()
                .filter(|(p, _)| w.contains_key(p))
                .cloned()
                .collect()
        };
        if let Ok(mut m) = self.0.revisions.write() {
            *m = rows.into_iter().collect();
            // Written here while the rows were read: what was read of them may predate the write.
            let written = std::mem::take(
                &mut *self
                    .0
                    .written_since_load
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()),
            );
            if written.1 {
                m.clear();
            } else {
                for p in &written.0 {
                    m.remove(p);
                }
            }
        }
        for (project, revision) in watched {
            self.wake(&project, revision);
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
                        if let Err(e) = listener.listen_all([CHANNEL, REVIEW_CHANNEL]).await {
                            tracing::warn!(error = %e, "LISTEN for revisions failed");
                        } else if let Err(e) = me.load(&pool).await {
                            tracing::warn!(error = %e, "loading project revisions failed");
                        } else {
                            loop {
                                match tokio::time::timeout(RESYNC, listener.recv()).await {
                                    Ok(Ok(n)) => {
                                        let understood = if n.channel() == REVIEW_CHANNEL {
                                            me.heard_review(n.payload())
                                        } else {
                                            me.heard(n.payload())
                                        };
                                        if !understood {
                                            tracing::warn!(
                                                payload = n.payload(),
                                                channel = n.channel(),
                                                "unreadable announcement"
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
        bus.read(&p, 5);
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

    #[test]
    fn an_announcement_late_for_a_write_here_does_not_bring_the_project_back() {
        let bus = RevisionBus::default();
        bus.0.synced.store(true, Ordering::Release);
        let p = ProjectId::new("acme", "new").unwrap();
        // The project's creation (revision 0) is announced by the trigger; the push that made
        // it 1 went through this replica, which forgot the project; the 0 arrives only now.
        bus.wrote(Some("acme/new"));
        assert!(bus.heard("acme/new 0"));
        assert_eq!(
            bus.known(&p),
            None,
            "a late announcement makes nothing known"
        );
        assert!(bus.heard("acme/new 1"));
        assert_eq!(
            bus.known(&p),
            None,
            "nor does a current one: the database does"
        );
        bus.read(&p, 1);
        assert_eq!(bus.known(&p), Some(1));
        assert!(bus.heard("acme/new 2"));
        assert_eq!(
            bus.known(&p),
            Some(2),
            "a known project moves on announcements"
        );
    }

    #[tokio::test]
    async fn waiters_see_the_newest_revision_only_and_idle_channels_are_swept() {
        let bus = RevisionBus::default();
        let p = ProjectId::new("acme", "api").unwrap();
        let mut rx = bus.subscribe(&p);
        assert_eq!(*rx.borrow(), 0);
        assert!(bus.heard("acme/api 3"));
        assert!(bus.heard("acme/api 4"));
        assert!(
            bus.heard("other/x 9"),
            "another project's news wakes nobody here"
        );
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow_and_update(), 4, "coalesced: the newest only");
        bus.read(&p, 2);
        assert!(!rx.has_changed().unwrap(), "an older read wakes nobody");
        bus.read(&p, 5);
        assert!(
            rx.has_changed().unwrap(),
            "a newer database read wakes waiters"
        );
        assert_eq!(bus.watched(), 1);
        drop(rx);
        assert_eq!(bus.watched(), 0);
        bus.sweep();
        assert!(bus.0.watchers.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn review_announcements_reach_subscribers() {
        let bus = RevisionBus::default();
        let mut rx = bus.review_events();
        assert!(bus.heard_review("acme/api 12 pending"));
        assert!(!bus.heard_review("acme/api 12"));
        assert!(!bus.heard_review("acme/api 12 pending extra"));
        assert_eq!(
            rx.recv().await.unwrap(),
            ReviewNote {
                project: "acme/api".into(),
                proposal: "12".into(),
                status: "pending".into()
            }
        );
    }
}
