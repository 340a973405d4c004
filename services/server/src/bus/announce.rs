//! Announcing a client push's revision after its transaction commits, not inside it.
//!
//! A transaction that calls `pg_notify` takes PostgreSQL's database-wide notification lock at
//! commit and holds it until its commit record is flushed, so notifying transactions commit one
//! fsync at a time: no group commit. Measured with pgbench's model of a push on this project's
//! machine, one `pg_notify` in the transaction took it from 638 to 198 transactions/s. So a
//! client push (the one hot write) sets `memsync.notify_after_commit` for its transaction, which
//! the revision and export triggers read (migration 11) and then stay silent; the replica that
//! wrote announces the new revision itself once the commit is done, from one connection of its
//! own with `synchronous_commit = off` (a notification is a hint, never data), many pushes'
//! announcements in one statement.
//!
//! Every other writer (admin actions, approvals, rescans, the command line, anything run by
//! hand) leaves the setting alone and the triggers announce in its transaction as before.
//!
//! What could be missed: the announcement of a push whose replica dies between its commit and
//! the announcement (or whose announcing connection keeps failing). Then the other replicas'
//! buses learn the revision at their next full load (30 s, `bus::RESYNC`) or from any pull that
//! reads the database, and the exporter from its 5 s poll of the outbox; nothing is lost, it is
//! late. A request cancelled after it asked for the commit still announces (the announcement of
//! a revision that was not committed only makes waiters look at the database and find nothing).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::{Connection, PgConnection, PgPool};
use tokio::sync::Notify;

use super::CHANNEL;

/// The setting a transaction sets (locally) to keep the triggers from announcing in it.
pub const AFTER_COMMIT_SETTING: &str = "memsync.notify_after_commit";
/// The channel the exporter listens on.
const EXPORT_CHANNEL: &str = "memsync_export";
/// Attempts for one batch before it is given up (the periodic loads catch up).
const ATTEMPTS: u32 = 3;

#[derive(Default)]
struct Queue {
    /// Project → newest revision to announce (a project's older pending revisions are implied).
    pending: HashMap<String, i64>,
    /// A batch taken from `pending` is being sent.
    sending: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    wake: Notify,
    /// Wakes `flush` once the pending batch went out.
    sent: Notify,
}

/// Announces committed revisions for this replica's client pushes; cheap to clone.
#[derive(Clone, Default)]
pub struct Announcer(Arc<Shared>);

impl Announcer {
    /// Queues the announcement of `project` at `revision` (sent as soon as the connection is
    /// free; what queues meanwhile goes out together).
    pub fn announce(&self, project: &str, revision: i64) {
        {
            let mut q = self.0.queue.lock().unwrap_or_else(|e| e.into_inner());
            let r = q.pending.entry(project.to_owned()).or_insert(revision);
            *r = (*r).max(revision);
        }
        self.0.wake.notify_one();
    }

    /// An announcement made when the returned guard is dropped, unless it is
    /// [`Pending::cancel`]led: armed right before a commit, it announces after the commit
    /// returns and also when the request is cancelled while committing (when nobody can know
    /// whether the commit happened).
    pub fn pending(&self, project: &str, revision: i64) -> Pending<'_> {
        Pending {
            announcer: self,
            project: Some((project.to_owned(), revision)),
        }
    }

    /// Takes what is queued, marking it as being sent (until `sent`).
    fn take(&self) -> HashMap<String, i64> {
        let mut q = self.0.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.sending = !q.pending.is_empty();
        std::mem::take(&mut q.pending)
    }

    fn sent(&self) {
        self.0
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .sending = false;
        self.0.sent.notify_waiters();
    }

    /// Nothing queued and nothing being sent.
    fn is_idle(&self) -> bool {
        let q = self.0.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.pending.is_empty() && !q.sending
    }

    /// Waits (at most `limit`) until what is queued has been sent: at shutdown, before the
    /// database connections close.
    pub async fn flush(&self, limit: Duration) {
        let _ = tokio::time::timeout(limit, async {
            while !self.is_idle() {
                let sent = self.0.sent.notified();
                self.0.wake.notify_one();
                let _ = tokio::time::timeout(Duration::from_millis(50), sent).await;
            }
        })
        .await;
    }

    /// Sends the announcements for as long as the pool is open, from a connection of its own.
    pub fn spawn(&self, pool: PgPool) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut conn: Option<PgConnection> = None;
            loop {
                me.0.wake.notified().await;
                let batch = me.take();
                if batch.is_empty() {
                    me.sent();
                    continue;
                }
                let mut attempt = 0;
                loop {
                    attempt += 1;
                    match send(&pool, &mut conn, &batch).await {
                        Ok(()) => break,
                        Err(e) => {
                            conn = None;
                            if pool.is_closed() || attempt >= ATTEMPTS {
                                tracing::warn!(error = %e, projects = batch.len(),
                                    "announcing new revisions failed; other replicas learn them at their next load");
                                break;
                            }
                            tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt)))
                                .await;
                        }
                    }
                }
                me.sent();
                if pool.is_closed() && me.is_idle() {
                    return;
                }
            }
        });
    }
}

async fn send(
    pool: &PgPool,
    conn: &mut Option<PgConnection>,
    batch: &HashMap<String, i64>,
) -> sqlx::Result<()> {
    let c = match conn {
        Some(c) => c,
        None => {
            let mut c = PgConnection::connect_with(&pool.connect_options()).await?;
            sqlx::query("SET synchronous_commit = off")
                .execute(&mut c)
                .await?;
            conn.insert(c)
        }
    };
    let (projects, revisions): (Vec<&str>, Vec<i64>) =
        batch.iter().map(|(p, r)| (p.as_str(), *r)).unzip();
    sqlx::query(
        "SELECT pg_notify($1, t.p || ' ' || t.r), pg_notify($2, t.p)
         FROM unnest($3::text[], $4::bigint[]) AS t(p, r)",
    )
    .bind(CHANNEL)
    .bind(EXPORT_CHANNEL)
    .bind(&projects)
    .bind(&revisions)
    .execute(c)
    .await?;
    Ok(())
}

/// See [`Announcer::pending`].
pub struct Pending<'a> {
    announcer: &'a Announcer,
    project: Option<(String, i64)>,
}

impl Pending<'_> {
    /// The commit failed: nothing to announce.
    pub fn cancel(mut self) {
        self.project = None;
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if let Some((project, revision)) = self.project.take() {
            self.announcer.announce(&project, revision);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announcements_coalesce_per_project_and_a_cancelled_one_is_not_made() {
        let a = Announcer::default();
        a.announce("acme/api", 3);
        a.announce("acme/api", 2);
        a.announce("acme/web", 1);
        drop(a.pending("acme/api", 5));
        a.pending("acme/docs", 9).cancel();
        let batch = a.take();
        assert_eq!(batch.len(), 2, "{batch:?}");
        assert_eq!(batch["acme/api"], 5, "the newest revision only");
        assert_eq!(batch["acme/web"], 1);
        assert!(!a.is_idle(), "taken but not sent yet");
        a.sent();
        assert!(a.is_idle());
    }
}
