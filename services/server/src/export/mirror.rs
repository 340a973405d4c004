//! Pushes exported repositories to a configured mirror with `git push --mirror`: in a task of its
//! own, one push at a time, each time-limited, a failing project retried with exponential
//! backoff (5 s doubling up to an hour) without holding up the others. Only while this process
//! runs the export: one that lost the export lock drops what it had queued, since its copy may be
//! older than the mirror's and the new exporter pushes every repository once it has caught up.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use memsync_core::ProjectId;
use sqlx::PgPool;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{MirrorConfig, Stats, bump, repo};
use crate::store::outbox;

const FIRST_RETRY: Duration = Duration::from_secs(5);
const LAST_RETRY: Duration = Duration::from_secs(3600);

pub struct Mirror {
    tx: mpsc::UnboundedSender<ProjectId>,
}

struct Retry {
    failures: u32,
    at: Instant,
}

fn backoff(failures: u32) -> Duration {
    FIRST_RETRY
        .saturating_mul(1 << failures.saturating_sub(1).min(20))
        .min(LAST_RETRY)
}

impl Mirror {
    pub fn spawn(
        pool: PgPool,
        cfg: MirrorConfig,
        dir: PathBuf,
        stats: Arc<Stats>,
        leader: Arc<AtomicBool>,
    ) -> Mirror {
        let (tx, mut rx) = mpsc::unbounded_channel::<ProjectId>();
        tokio::spawn(async move {
            let mut due: BTreeMap<ProjectId, Retry> = BTreeMap::new();
            loop {
                let next = due.values().map(|r| r.at).min();
                let got = match next {
                    Some(at) => tokio::select! {
                        p = rx.recv() => Some(p),
                        () = tokio::time::sleep_until(at) => None,
                    },
                    None => Some(rx.recv().await),
                };
                let mut wanted = Vec::new();
                match got {
                    Some(None) => return, // the exporter is gone
                    Some(Some(p)) => wanted.push(p),
                    None => {}
                }
                while let Ok(p) = rx.try_recv() {
                    wanted.push(p);
                }
                let now = Instant::now();
                for p in wanted {
                    // A project in backoff keeps its schedule.
                    due.entry(p).or_insert(Retry {
                        failures: 0,
                        at: now,
                    });
                }
                let ready: Vec<ProjectId> = due
                    .iter()
                    .filter(|(_, r)| r.at <= now)
                    .map(|(p, _)| p.clone())
                    .collect();
                for p in ready {
                    if pool.is_closed() {
                        return;
                    }
                    if !leader.load(Ordering::Relaxed) {
                        due.remove(&p);
                        continue;
                    }
                    match push(&pool, &cfg, &dir, &p).await {
                        Ok(()) => {
                            bump(&stats.mirror_ok, 1);
                            due.remove(&p);
                        }
                        Err(e) => {
                            bump(&stats.mirror_failed, 1);
                            if let Some(r) = due.get_mut(&p) {
                                r.failures += 1;
                                let wait = backoff(r.failures);
                                r.at = Instant::now() + wait;
                                tracing::warn!(project = %p, failures = r.failures, retry_in = ?wait,
                                    error = format!("{e:#}"), "pushing to the mirror failed");
                            }
                        }
                    }
                }
            }
        });
        Mirror { tx }
    }

    /// Queues a push of the project's repository.
    pub fn push_soon(&self, project: ProjectId) {
        let _ = self.tx.send(project);
    }
}

/// `export rebuild`: a few attempts in a row.
pub async fn push_with_retries(
    pool: &PgPool,
    cfg: &MirrorConfig,
    dir: &Path,
    project: &ProjectId,
    attempts: u32,
) -> anyhow::Result<()> {
    let mut n = 0;
    loop {
        n += 1;
        match push(pool, cfg, dir, project).await {
            Ok(()) => return Ok(()),
            Err(e) if n >= attempts => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_secs(1 << n)).await,
        }
    }
}

/// One `git push --mirror` of the project's repository; a rewrite waiting for the mirror is
/// marked done once pushed.
async fn push(
    pool: &PgPool,
    cfg: &MirrorConfig,
    dir: &Path,
    project: &ProjectId,
) -> anyhow::Result<()> {
    let path = repo::path(dir, project);
    let rewrite = outbox::awaiting_mirror(pool, project).await?;
    if !path.exists() {
        // Nothing exported (a project without revisions): nothing to push.
        if let Some(t) = rewrite {
            outbox::mirrored(pool, project, t).await?;
        }
        return Ok(());
    }
    let url = cfg.url(project);
    let mut cmd = super::git_command();
    cmd.arg("--git-dir")
        .arg(&path)
        .args(["push", "--mirror", "--force", "--quiet"])
        .arg(&url)
        .env("GIT_TERMINAL_PROMPT", "0");
    let out = tokio::time::timeout(cfg.timeout, cmd.output())
        .await
        .with_context(|| format!("git push took longer than {:?}", cfg.timeout))?
        .context("running git push")?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).replace(&url, "<mirror>");
        bail!(
            "git push --mirror failed: {}",
            redact_userinfo(stderr.trim())
                .chars()
                .take(500)
                .collect::<String>()
        );
    }
    if let Some(t) = rewrite {
        outbox::mirrored(pool, project, t).await?;
    }
    tracing::info!(%project, "pushed to the mirror");
    Ok(())
}

/// Drops `user:password@` from any URL in `s`: git may quote the mirror's URL in its errors.
fn redact_userinfo(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c == '/' || c.is_whitespace() || c == '\'' || c == '"')
            .unwrap_or(tail.len());
        match tail[..end].rfind('@') {
            Some(at) => {
                out.push_str("***@");
                rest = &tail[at + 1..];
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_an_hour() {
        assert_eq!(backoff(1), Duration::from_secs(5));
        assert_eq!(backoff(2), Duration::from_secs(10));
        assert_eq!(backoff(4), Duration::from_secs(40));
        assert_eq!(backoff(100), LAST_RETRY);
    }

    #[test]
    fn credentials_in_urls_are_redacted() {
        assert_eq!(
            redact_userinfo("fatal: unable to access 'https://bot:s3cret@example.com/a.git/': 403"),
            "fatal: unable to access 'https://***@example.com/a.git/': 403"
        );
        assert_eq!(
            redact_userinfo("no url here, file:///tmp/x"),
            "no url here, file:///tmp/x"
        );
    }
}
