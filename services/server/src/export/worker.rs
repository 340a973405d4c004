//! The background exporter, and the work done while holding the export lock: catching a
//! repository up with its project's revisions, and rewriting one from scratch.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::{Context, bail};
use memsync_core::ProjectId;
use sqlx::postgres::{PgListener, PgPoolOptions};
use sqlx::{PgConnection, PgPool};

use super::{Exporter, bump, repo};
use crate::store::{history, outbox};

/// Revisions read from Postgres and committed at a time, at most; and their content at most.
const BATCH: i64 = 512;
const BATCH_BYTES: i64 = 32 * 1024 * 1024;
/// Packs in a repository above which they are merged.
const MAX_PACKS: usize = 16;
/// The shortest time between the starts of two export passes.
const PASS_GAP: std::time::Duration = std::time::Duration::from_millis(100);

pub fn spawn(pool: PgPool, ex: Arc<Exporter>) {
    tokio::spawn(async move {
        // The connection the export lock is tried on, and held on while this process leads.
        let mut lock_conn: Option<PgConnection> = None;
        let mut listener: Option<PgListener> = None;
        // Since taking the lock, a pass has compared every repository with its project.
        let mut reconciled = false;
        let mut last_pass: Option<tokio::time::Instant> = None;
        loop {
            if pool.is_closed() {
                return;
            }
            // At most one pass per PASS_GAP: a push after a quiet spell is exported at once,
            // a steady stream of pushes in batches (a pass per push cost the exporter more than
            // the push itself: a pack, a branch update and the queries, for one revision).
            if let Some(at) = last_pass {
                tokio::time::sleep_until(at + PASS_GAP).await;
            }
            last_pass = Some(tokio::time::Instant::now());
            if listener.is_none() {
                listener = listen(&pool).await;
            }
            match step(&pool, &ex, &mut lock_conn, &mut reconciled).await {
                Ok(()) => {}
                Err(e) => {
                    if pool.is_closed() {
                        return;
                    }
                    bump(&ex.stats.failures, 1);
                    tracing::warn!(error = format!("{e:#}"), "git export pass failed; retrying");
                }
            }
            let woke = match listener.as_mut() {
                Some(l) => tokio::select! {
                    r = tokio::time::timeout(ex.cfg.interval, l.recv()) => match r {
                        Ok(Ok(_)) => {
                            // One pass covers every notification that arrived meanwhile.
                            while l.next_buffered().is_some() {}
                            Ok(())
                        }
                        Ok(Err(e)) => Err(e),
                        Err(_) => Ok(()),
                    },
                    () = ex.wake.notified() => Ok(()),
                },
                None => {
                    tokio::select! {
                        () = tokio::time::sleep(ex.cfg.interval) => {}
                        () = ex.wake.notified() => {}
                    }
                    Ok(())
                }
            };
            if let Err(e) = woke {
                if !pool.is_closed() {
                    tracing::warn!(error = %e, "export listener lost its connection");
                }
                listener = None;
            }
        }
    });
}

/// LISTEN on a connection of its own: `PgListener::connect_with` keeps one of its pool's
/// connections for as long as it lives, which must not be one the requests need.
async fn listen(pool: &PgPool) -> Option<PgListener> {
    let own = PgPoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .connect_lazy_with((*pool.connect_options()).clone());
    let mut l = match PgListener::connect_with(&own).await {
        Ok(l) => l,
        Err(e) => {
            if !pool.is_closed() {
                tracing::warn!(error = %e, "export listener cannot connect; polling");
            }
            return None;
        }
    };
    match l.listen(outbox::CHANNEL).await {
        Ok(()) => Some(l),
        Err(e) => {
            tracing::warn!(error = %e, "LISTEN for the export failed; polling");
            None
        }
    }
}

/// Takes the export lock if nobody holds it (or checks this process still does), and runs a
/// pass while holding it. The lock is kept between passes: this process is the exporter until
/// it stops or its lock connection is lost, and another replica takes over then.
async fn step(
    pool: &PgPool,
    ex: &Exporter,
    lock_conn: &mut Option<PgConnection>,
    reconciled: &mut bool,
) -> anyhow::Result<()> {
    let lost = |lock_conn: &mut Option<PgConnection>, reconciled: &mut bool| {
        *lock_conn = None; // closing the session frees the lock, if it still had it
        *reconciled = false;
        ex.caught_up.store(false, Ordering::Relaxed);
        if ex.leader.swap(false, Ordering::Relaxed) {
            tracing::warn!(
                "this process no longer runs the git export (its lock connection failed); another replica takes over"
            );
        }
    };
    let conn = match lock_conn {
        Some(c) => c,
        None => lock_conn.insert(outbox::connect(pool).await?),
    };
    if ex.is_leader() {
        if let Err(e) = outbox::ping(conn).await {
            lost(lock_conn, reconciled);
            return Err(e.into());
        }
    } else {
        match outbox::try_lock(conn).await {
            Ok(true) => {
                // Other replicas forward clones to the URL recorded here.
                if let Err(e) = outbox::advertise(conn, &ex.advertise).await {
                    lost(lock_conn, reconciled);
                    return Err(
                        anyhow::Error::from(e).context("recording where clones are forwarded")
                    );
                }
                ex.leader.store(true, Ordering::Relaxed);
                tracing::info!(
                    "this process now runs the git export (it holds the export lock); catching up its repositories"
                );
            }
            Ok(false) => return Ok(()),
            Err(e) => {
                lost(lock_conn, reconciled);
                return Err(e.into());
            }
        }
    }
    pass(pool, ex, !*reconciled).await?;
    if !*reconciled {
        *reconciled = true;
        ex.caught_up.store(true, Ordering::Relaxed);
        if let Some(m) = &ex.mirror {
            // The mirror gets what the previous exporter may not have pushed.
            for p in repo::list(&ex.dir) {
                m.push_soon(p);
            }
        }
    }
    Ok(())
}

/// Rebuild requests first (a purge waits on them), then the outbox, longest waiting first.
/// A failing project is logged and retried on the next pass; it does not hold up the others.
async fn pass(pool: &PgPool, ex: &Exporter, reconcile: bool) -> anyhow::Result<()> {
    if let Err(e) = rebuild_requested(pool, ex, None).await {
        bump(&ex.stats.failures, 1);
        tracing::warn!(error = format!("{e:#}"), "rebuilding git exports failed");
    }
    let work: Vec<(ProjectId, i64)> = if reconcile {
        outbox::projects(pool).await?
    } else {
        outbox::pending(pool).await?
    };
    for (project, upto) in work {
        if let Err(e) = export_project(pool, ex, &project, upto, reconcile).await {
            bump(&ex.stats.failures, 1);
            tracing::warn!(%project, error = format!("{e:#}"), "exporting to git failed");
        }
    }
    if reconcile {
        // Rows of projects the reconciliation did not see (pushed meanwhile).
        for (project, upto) in outbox::pending(pool).await? {
            if let Err(e) = export_project(pool, ex, &project, upto, false).await {
                bump(&ex.stats.failures, 1);
                tracing::warn!(%project, error = format!("{e:#}"), "exporting to git failed");
            }
        }
    }
    Ok(())
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .context("a git export task panicked")?
}

/// Brings the project's repository up to revision `upto`, from the revision its newest commit
/// carries, then drops the outbox rows up to `upto`. With `check` (the first pass of a process
/// that has just taken the export lock), a repository written before a purge it missed is
/// rebuilt instead of continued.
#[tracing::instrument(name = "export.project", skip_all, fields(memsync.project = %project, memsync.upto = upto))]
async fn export_project(
    pool: &PgPool,
    ex: &Exporter,
    project: &ProjectId,
    upto: i64,
    check: bool,
) -> anyhow::Result<()> {
    let path = ex.repo_path(project);
    let (mut head, exists) = {
        let (path, project) = (path.clone(), project.clone());
        blocking(move || Ok((repo::exported_revision(&path, &project)?, path.exists()))).await?
    };
    if check && exists && head > 0 {
        let purged = outbox::purged(pool, project, head).await?;
        let stale = !purged.is_empty() && {
            let (path, project) = (path.clone(), project.clone());
            blocking(move || repo::holds_purged(&path, &project, &purged)).await?
        };
        if stale {
            tracing::warn!(%project, "the git export was written before a purge it does not have (another replica rewrote it); rebuilding it");
            bump(&ex.stats.rebuilds, 1);
            rebuild(pool, ex, project).await?;
            if let Some(m) = &ex.mirror {
                m.push_soon(project.clone());
            }
            return Ok(());
        }
    }
    if !exists || head > upto {
        let current = crate::store::memories::revision(pool, project)
            .await?
            .unwrap_or(0);
        if head > current {
            tracing::warn!(%project, repository = head, database = current,
                "the git export is ahead of the database (restored from a backup?); rebuilding it");
            bump(&ex.stats.rebuilds, 1);
        } else if !exists && current == 0 {
            return Ok(());
        }
        // A new repository is built aside and moved into place like a rebuilt one, so a clone
        // never finds it without commits.
        if !exists || head > current {
            rebuild(pool, ex, project).await?;
            if let Some(m) = &ex.mirror {
                m.push_soon(project.clone());
            }
            return Ok(());
        }
    }
    let before = head;
    while head < upto {
        let end =
            outbox::batch_end(pool, project, head, (head + BATCH).min(upto), BATCH_BYTES).await?;
        let revs = described(pool, project, head, end).await?;
        let (p, proj) = (path.clone(), project.clone());
        head = blocking(move || repo::append(&p, &proj, &revs)).await?;
        if ex.cfg.failpoint.as_deref() == Some("after-commit") {
            tracing::warn!(%project, revision = head, "export failpoint after-commit: exiting");
            std::process::exit(86);
        }
    }
    outbox::exported(pool, project, upto).await?;
    if head > before {
        bump(&ex.stats.commits, (head - before) as u64);
        tracing::info!(%project, from = before + 1, to = head, "exported to git");
        maintain(&path).await;
        if let Some(m) = &ex.mirror {
            m.push_soon(project.clone());
        }
    }
    Ok(())
}

/// Revisions `after+1 ..= upto` with every path each one changed and what made it.
async fn described(
    pool: &PgPool,
    project: &ProjectId,
    after: i64,
    upto: i64,
) -> anyhow::Result<Vec<(repo::Revision, repo::About)>> {
    let revs = outbox::revisions(pool, project, after, upto).await?;
    if revs.len() as i64 != upto - after {
        bail!(
            "revisions {}..={upto} of {project} are not all in the database",
            after + 1
        );
    }
    let mut notes: HashMap<i64, history::RevisionNote> =
        history::revision_notes(pool, project, after, upto)
            .await?
            .into_iter()
            .map(|n| (n.revision, n))
            .collect();
    Ok(revs
        .into_iter()
        .map(|r| {
            let about = notes
                .remove(&r.revision)
                .map(|n| repo::About::new(n.kind, n.note, n.provenance.as_ref()))
                .unwrap_or_default();
            (r, about)
        })
        .collect())
}

/// Rewrites the repository of every open rebuild request (or of `only`'s) from scratch. Errors
/// with the first failure, after trying every request.
pub(super) async fn rebuild_requested(
    pool: &PgPool,
    ex: &Exporter,
    only: Option<&ProjectId>,
) -> anyhow::Result<()> {
    let mut first_error = None;
    for req in outbox::rebuild_requests(pool, only).await? {
        if let Some(t) = req.rebuilt_at {
            match (&ex.mirror, &ex.cfg.mirror) {
                (Some(m), _) => m.push_soon(req.project),
                // No mirror any more: nothing to wait for.
                (None, None) => outbox::mirrored(pool, &req.project, t).await?,
                // `export rebuild` pushes to the mirror itself.
                (None, Some(_)) => {}
            }
            continue;
        }
        match rebuild(pool, ex, &req.project).await {
            Ok(()) => {
                bump(&ex.stats.rebuilds, 1);
                outbox::rebuilt(
                    pool,
                    &req.project,
                    req.requested_at,
                    ex.cfg.mirror.is_some(),
                )
                .await?;
                if let Some(m) = &ex.mirror {
                    m.push_soon(req.project);
                }
            }
            Err(e) => {
                tracing::warn!(project = %req.project, error = format!("{e:#}"), "rebuilding the git export failed");
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Writes the project's repository anew from every revision in Postgres and swaps it in (or
/// removes it when the project has no revision).
#[tracing::instrument(name = "export.rebuild", skip_all, fields(memsync.project = %project))]
async fn rebuild(pool: &PgPool, ex: &Exporter, project: &ProjectId) -> anyhow::Result<()> {
    let upto = crate::store::memories::revision(pool, project)
        .await?
        .unwrap_or(0);
    let root = ex.dir.clone();
    let scratch = {
        let (root, project) = (root.clone(), project.clone());
        blocking(move || repo::begin_rebuild(&root, &project)).await?
    };
    let mut head = 0;
    while head < upto {
        let end =
            outbox::batch_end(pool, project, head, (head + BATCH).min(upto), BATCH_BYTES).await?;
        let revs = described(pool, project, head, end).await?;
        let (p, proj) = (scratch.clone(), project.clone());
        head = blocking(move || repo::append(&p, &proj, &revs)).await?;
    }
    {
        let (root, project) = (root.clone(), project.clone());
        blocking(move || repo::finish_rebuild(&root, &project, head > 0)).await?;
    }
    outbox::exported(pool, project, upto).await?;
    bump(&ex.stats.commits, head as u64);
    tracing::info!(%project, revisions = upto, "rebuilt the git export");
    maintain(&ex.repo_path(project)).await;
    Ok(())
}

/// Entries of `dir` whose name ends with `suffix` (0 when it cannot be read).
async fn entries(dir: &Path, suffix: &str) -> usize {
    let mut n = 0;
    if let Ok(mut rd) = tokio::fs::read_dir(dir).await {
        while let Ok(Some(e)) = rd.next_entry().await {
            if e.file_name().to_string_lossy().ends_with(suffix) {
                n += 1;
            }
        }
    }
    n
}

/// Packs loose objects once there are many (the threshold of `git gc --auto`; the exporter
/// writes packs, but a repository may come from an older version), and merges packs once there
/// are a few: geometrically (`--geometric=2`, each pack at least twice the next smaller), so a
/// merge costs what the small packs hold, not the whole history. Only `git repack`, never `gc`:
/// a gc outliving a killed server would lock the branch while it packs refs.
async fn maintain(path: &Path) {
    // Like git, estimate the loose objects from one of the 256 fan-out directories.
    let loose = entries(&path.join("objects/17"), "").await * 256;
    let packs = entries(&path.join("objects/pack"), ".pack").await;
    if packs <= MAX_PACKS && loose <= 6700 {
        return;
    }
    let mut cmd = super::git_command();
    cmd.arg("--git-dir").arg(path).args(["repack", "-d", "-q"]);
    if packs > MAX_PACKS {
        cmd.arg("--geometric=2");
    }
    match tokio::time::timeout(std::time::Duration::from_secs(300), cmd.output()).await {
        Ok(Ok(out)) if out.status.success() => {}
        Ok(Ok(out)) => tracing::warn!(
            repository = %path.display(),
            stderr = %String::from_utf8_lossy(&out.stderr).chars().take(500).collect::<String>(),
            "git repack failed"
        ),
        Ok(Err(e)) => tracing::warn!(error = %e, "cannot run git repack"),
        Err(_) => tracing::warn!(repository = %path.display(), "git repack timed out"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn packs_are_merged_geometrically_once_there_are_many() {
        let root = std::env::temp_dir().join(format!(
            "memsync-maintain-test-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        let project = ProjectId::new("acme", "api").expect("project");
        let path = repo::path(&root, &project);
        let packs = path.join("objects/pack");
        for r in 1..=(MAX_PACKS as i64 + 4) {
            let rev = repo::Revision {
                revision: r,
                author_sub: "ann".into(),
                author_name: "ann".into(),
                author_email: None,
                at: chrono::DateTime::from_timestamp(1_700_000_000 + r, 0).expect("time"),
                changes: vec![repo::Change {
                    path: format!("m{}.md", r % 5),
                    content: repo::Content::Text(format!("revision {r}\n")),
                }],
            };
            repo::append(&path, &project, &[(rev, repo::About::default())]).expect("append");
            if r as usize <= MAX_PACKS {
                maintain(&path).await;
                assert_eq!(
                    entries(&packs, ".pack").await,
                    r as usize,
                    "few packs are left alone"
                );
            }
        }
        assert_eq!(entries(&packs, ".pack").await, MAX_PACKS + 4);
        maintain(&path).await;
        let after = entries(&packs, ".pack").await;
        assert!(after < MAX_PACKS / 2, "{after} packs after merging");
        assert_eq!(
            repo::exported_revision(&path, &project).expect("head"),
            MAX_PACKS as i64 + 4
        );
        let fsck = super::super::git_command()
            .arg("--git-dir")
            .arg(&path)
            .args(["fsck", "--strict", "--no-dangling"])
            .output()
            .await
            .expect("git fsck");
        assert!(
            fsck.status.success(),
            "{}",
            String::from_utf8_lossy(&fsck.stderr)
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
