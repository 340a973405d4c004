//! Many writers on one project at once: nothing acknowledged is lost, revisions are dense.

use std::collections::BTreeSet;

use memsync_e2e::*;

const P: &str = "acme/busy";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_writers() {
    let (server, db) = Server::start().await;
    let seed = server.client(&server.token("seed", &["acme"]));
    // A shared file every writer edits in its own paragraph (mergeable), and a hot line that
    // several writers change at once (overlapping).
    let mut shared_body = String::new();
    for i in 0..20 {
        shared_body.push_str(&format!("Writer {i} paragraph: original.\n\n"));
    }
    let shared = memory("shared", "edited by everyone", "project", &shared_body);
    let hot = memory("hot", "one contested line", "project", "The answer is 0.\n");
    let r = seed
        .push(
            P,
            &batch(vec![
                put("shared.md", &shared, None),
                put("hot.md", &hot, None),
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let shared_sha = sha_of(&r.body, "shared.md").unwrap();
    let hot_sha = sha_of(&r.body, "hot.md").unwrap();

    let mut tasks = Vec::new();
    for i in 0..20 {
        let c = server.client(&server.token(&format!("w{i}"), &["acme"]));
        let (shared, hot, shared_sha, hot_sha) = (
            shared.clone(),
            hot.clone(),
            shared_sha.clone(),
            hot_sha.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let own = memory(
                &format!("own-{i}"),
                "a writer's own file",
                "project",
                &format!("Mine: {i}\n"),
            );
            let mut changes = vec![
                put(&format!("own/w{i}.md"), &own, None),
                put(
                    "shared.md",
                    &shared.replace(
                        &format!("Writer {i} paragraph: original."),
                        &format!("Writer {i} paragraph: edited by w{i}."),
                    ),
                    Some(&shared_sha),
                ),
            ];
            if i % 4 == 0 {
                changes.push(put(
                    "hot.md",
                    &hot.replace("is 0.", &format!("is {}.", i + 100)),
                    Some(&hot_sha),
                ));
            }
            (i, c.push(P, &batch(changes)).await)
        }));
    }
    let mut accepted = Vec::new();
    let mut conflicted = Vec::new();
    for t in tasks {
        let (i, resp) = t.await.unwrap();
        match resp.status {
            200 => accepted.push((i, resp.body["revision"].as_i64().unwrap())),
            409 => {
                let c = &resp.body["error"]["details"]["conflicts"][0];
                assert_eq!(c["path"], "hot.md", "{}", resp.text);
                assert_eq!(c["reason"], "overlapping_edit");
                assert!(
                    c["server"]["content"]
                        .as_str()
                        .unwrap()
                        .contains("The answer is")
                );
                conflicted.push(i);
            }
            s => panic!("writer {i}: unexpected {s}: {}", resp.text),
        }
    }
    // Exactly one hot-line writer wins; the other four overlapped with it.
    let hot_writers: Vec<i32> = (0..20).filter(|i| i % 4 == 0).collect();
    assert_eq!(
        conflicted.len(),
        hot_writers.len() - 1,
        "conflicted: {conflicted:?}"
    );
    assert_eq!(accepted.len(), 20 - conflicted.len());

    // Revisions are 1 (seed) then dense and unique.
    let revs: BTreeSet<i64> = accepted.iter().map(|(_, r)| *r).collect();
    assert_eq!(revs.len(), accepted.len(), "duplicate revisions");
    assert_eq!(revs, (2..2 + accepted.len() as i64).collect());
    let mut conn = db.connect().await;
    let stored: Vec<i64> = sqlx::query_scalar("SELECT revision FROM revisions ORDER BY revision")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    assert_eq!(stored, (1..=1 + accepted.len() as i64).collect::<Vec<_>>());

    // Every acknowledged write is in the history and in the current state.
    let final_state = seed.pull(P, 0).await;
    let shared_now = change_of(&final_state.body, "shared.md").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    for (i, rev) in &accepted {
        assert!(
            shared_now.contains(&format!("edited by w{i}.")),
            "writer {i}'s paragraph lost:\n{shared_now}"
        );
        let own = change_of(&final_state.body, &format!("own/w{i}.md")).unwrap();
        assert_eq!(own["revision"].as_i64().unwrap(), *rev);
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM memory_versions WHERE path = $1 AND revision = $2",
        )
        .bind(format!("own/w{i}.md"))
        .bind(rev)
        .fetch_one(&mut conn)
        .await
        .unwrap();
        assert_eq!(n, 1);
    }
    for i in &conflicted {
        assert!(
            !shared_now.contains(&format!("edited by w{i}.")),
            "a refused push was half-applied"
        );
        assert!(change_of(&final_state.body, &format!("own/w{i}.md")).is_none());
    }
    // The own/ index lists every accepted writer's file.
    let own_index = change_of(&final_state.body, "own/MEMORY.md").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    for (i, _) in &accepted {
        assert!(own_index.contains(&format!("(w{i}.md)")), "{own_index}");
    }
}
