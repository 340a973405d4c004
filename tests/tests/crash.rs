//! Crash safety: SIGKILL the server during a stream of pushes; after a restart every
//! acknowledged push is there and none is half-applied.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use memsync_e2e::*;

const P: &str = "acme/crash";

fn gen_of(content: &str) -> i64 {
    content
        .rsplit("gen ")
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_during_pushes_loses_nothing_acknowledged() {
    let (mut server, _db) = Server::start().await;
    let token = server.token("alice", &["acme"]);
    let stop = Arc::new(AtomicBool::new(false));
    // The most pushes any one task has had acknowledged so far.
    let most_acked = Arc::new(AtomicI64::new(0));
    let mut tasks = Vec::new();
    for t in 0..4 {
        let c = server.client(&token);
        let stop = stop.clone();
        let most_acked = most_acked.clone();
        tasks.push(tokio::spawn(async move {
            let (mut sha_a, mut sha_b): (Option<String>, Option<String>) = (None, None);
            let mut acked = 0i64;
            let mut attempted = 0i64;
            for g in 1.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                attempted = g;
                let a = memory("a", "pair a", "project", &format!("task {t} gen {g}"));
                let b = memory("b", "pair b", "project", &format!("task {t} gen {g}"));
                let body = batch(vec![
                    put(&format!("t{t}/a.md"), &a, sha_a.as_deref()),
                    put(&format!("t{t}/b.md"), &b, sha_b.as_deref()),
                ]);
                let sent = c
                    .http
                    .post(format!("{}/v1/projects/{P}/push", c.base))
                    .bearer_auth(&c.token)
                    .json(&body)
                    .send()
                    .await;
                match sent {
                    Ok(r) if r.status() == 200 => {
                        let v: serde_json::Value = r.json().await.unwrap();
                        sha_a = sha_of(&v, &format!("t{t}/a.md"));
                        sha_b = sha_of(&v, &format!("t{t}/b.md"));
                        acked = g;
                        most_acked.fetch_max(g, Ordering::Relaxed);
                    }
                    // The server died mid-request: stop; whatever was acknowledged must survive.
                    _ => break,
                }
            }
            (t, acked, attempted)
        }));
    }
    // Kill once the stream is well under way (however slow the machine is), while pushes are
    // still in flight.
    let started = std::time::Instant::now();
    while most_acked.load(Ordering::Relaxed) <= 5 && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.kill();
    stop.store(true, Ordering::Relaxed);
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.unwrap());
    }
    assert!(
        results.iter().any(|(_, acked, _)| *acked > 3),
        "too few pushes before the kill: {results:?}"
    );

    server.restart();
    let c = server.client(&token);
    let snap = c.pull(P, 0).await;
    assert_eq!(snap.status, 200, "{}", snap.text);
    for (t, acked, attempted) in results {
        let a = change_of(&snap.body, &format!("t{t}/a.md"))
            .map(|c| gen_of(c["content"].as_str().unwrap()));
        let b = change_of(&snap.body, &format!("t{t}/b.md"))
            .map(|c| gen_of(c["content"].as_str().unwrap()));
        assert_eq!(a, b, "task {t}: a push was half-applied");
        let g = a.unwrap_or(0);
        assert!(
            g >= acked,
            "task {t}: acknowledged gen {acked} lost (have {g})"
        );
        assert!(g <= attempted, "task {t}: gen {g} was never sent");
    }
    // Revisions stay dense across the crash.
    let mut conn = sqlx::PgConnection::connect(server.database_url.as_deref().unwrap())
        .await
        .unwrap();
    let (n, max): (i64, Option<i64>) =
        sqlx::query_as("SELECT count(*), max(revision) FROM revisions")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(Some(n), max);
}

use sqlx::Connection;
