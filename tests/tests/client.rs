//! The real `memsync` binary against the real server, with separate temporary `$HOME`s.

use memsync_e2e::*;

const ORIGIN: &str = "git@github.com:Acme/API.git";

fn mem(name: &str, body: &str) -> String {
    memory(name, &format!("about {name}"), "project", body)
}

#[tokio::test]
async fn push_pull_delete_and_offline_user_catch_up() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);

    let files = [
        ("testing.md", mem("testing", "Use a real database.\n")),
        ("deploy.md", mem("deploy", "Deploys go through CI.\n")),
        ("style/rust.md", mem("rust-style", "Run cargo fmt.\n")),
    ];
    for (p, c) in &files {
        alice.write(p, c);
    }
    let index = "# Team memory\n- [Testing](testing.md) — real databases\n- [Deploy](deploy.md) — via CI\n- [Style](style/MEMORY.md) — code style\n";
    alice.write("MEMORY.md", index);
    let r = alice.run(&["push", "--json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(
        r.json()["push"]["pushed"].as_array().unwrap().len(),
        4,
        "{}",
        r.stdout
    );

    let r = bob.run(&["pull"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for (p, c) in &files {
        assert_eq!(bob.read(p).as_deref(), Some(c.as_str()), "{p}");
    }
    assert_eq!(bob.read("MEMORY.md").as_deref(), Some(index));
    // The subdirectory got its index from the server; bob has it too, as alice will.
    assert!(bob.read("style/MEMORY.md").unwrap().contains("(rust.md)"));
    // Bookkeeping lives outside the team dir.
    assert!(!bob.team_dir().join(".memsync").exists());
    assert!(bob.home.path().join(".local/state/memsync").is_dir());

    // Bob deletes one and pushes; alice's next pull removes it.
    std::fs::remove_file(bob.team_dir().join("deploy.md")).unwrap();
    let r = bob.run(&["push"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let r = alice.run(&["pull", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(alice.read("deploy.md").is_none());
    assert!(
        !alice.read("MEMORY.md").unwrap().contains("deploy.md"),
        "the index entry goes with the file"
    );

    // Carol was offline for all of it: one pull gives her the final state.
    let carol = User::new(&server, "carol", &["acme"], ORIGIN);
    assert_eq!(carol.run(&["pull"]).code, 0);
    assert!(carol.read("deploy.md").is_none());
    assert_eq!(carol.read("testing.md"), alice.read("testing.md"));
    assert_eq!(carol.read("MEMORY.md"), alice.read("MEMORY.md"));

    // Nothing new: a cheap no-op.
    let r = carol.run(&["pull", "--json"]);
    assert_eq!(r.json()["pull"]["not_modified"], true, "{}", r.stdout);
}

#[tokio::test]
async fn concurrent_edits_merge_or_conflict_and_resolve() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    let base = mem(
        "notes",
        "First paragraph.\n\nSecond paragraph.\n\nThird paragraph.\n",
    );
    alice.write("notes.md", &base);
    assert_eq!(alice.run(&["push"]).code, 0);
    assert_eq!(bob.run(&["pull"]).code, 0);

    // Different paragraphs: both edits survive.
    alice.write(
        "notes.md",
        &base.replace("First paragraph.", "First paragraph, by alice."),
    );
    bob.write(
        "notes.md",
        &base.replace("Third paragraph.", "Third paragraph, by bob."),
    );
    assert_eq!(alice.run(&["push"]).code, 0);
    let r = bob.run(&["sync"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(alice.run(&["pull"]).code, 0);
    for u in [&alice, &bob] {
        let t = u.read("notes.md").unwrap();
        assert!(
            t.contains("by alice") && t.contains("by bob"),
            "{}: {t}",
            u.name
        );
    }

    // The same line: bob's push is a reported conflict; nothing is lost.
    let now = alice.read("notes.md").unwrap();
    alice.write(
        "notes.md",
        &now.replace("Second paragraph.", "Second paragraph (alice)."),
    );
    bob.write(
        "notes.md",
        &now.replace("Second paragraph.", "Second paragraph (bob)."),
    );
    assert_eq!(alice.run(&["push"]).code, 0);
    let r = bob.run(&["push", "--json"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.json()["push"]["conflicts"][0]["path"], "notes.md");
    assert!(
        bob.read("notes.md").unwrap().contains("(bob)"),
        "bob's edit was overwritten"
    );
    let st = bob.run(&["status", "--json"]);
    assert_eq!(st.code, 1);
    assert_eq!(st.json()["conflicts"][0]["path"], "notes.md");
    let d = bob.run(&["diff", "notes.md"]);
    assert!(
        d.stdout.contains("(alice)") && d.stdout.contains("(bob)"),
        "{}",
        d.stdout
    );
    // A pull does not overwrite it either.
    assert_eq!(bob.run(&["pull"]).code, 1);
    assert!(bob.read("notes.md").unwrap().contains("(bob)"));

    // Settle it with bob's version: after the push everyone has it.
    let r = bob.run(&["resolve", "notes.md", "--take", "local"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(bob.run(&["push"]).code, 0);
    assert_eq!(alice.run(&["pull"]).code, 0);
    assert!(alice.read("notes.md").unwrap().contains("(bob)"));

    // Another conflict, settled the other way: the server's version wins, bob's copy is backed up.
    let now = alice.read("notes.md").unwrap();
    alice.write("notes.md", &now.replace("(bob)", "(alice again)"));
    bob.write("notes.md", &now.replace("(bob)", "(bob again)"));
    assert_eq!(alice.run(&["push"]).code, 0);
    assert_eq!(bob.run(&["push"]).code, 1);
    let r = bob.run(&["resolve", "notes.md", "--take", "server"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(bob.read("notes.md").unwrap().contains("(alice again)"));
    assert!(r.stderr.contains("saved at"), "{}", r.stderr);
    assert_eq!(
        bob.run(&["status", "--json"]).json()["conflicts"],
        serde_json::json!([])
    );

    // And merged by hand: resolve writes both sides with markers, the user edits, resolves again.
    let now = alice.read("notes.md").unwrap();
    alice.write("notes.md", &now.replace("(alice again)", "(alice 3)"));
    bob.write("notes.md", &now.replace("(alice again)", "(bob 3)"));
    assert_eq!(alice.run(&["push"]).code, 0);
    assert_eq!(bob.run(&["push"]).code, 1);
    assert_eq!(
        bob.run(&["resolve", "notes.md", "--take", "merged"]).code,
        0
    );
    let marked = bob.read("notes.md").unwrap();
    assert!(
        marked.contains("<<<<<<<") && marked.contains("(alice 3)") && marked.contains("(bob 3)"),
        "{marked}"
    );
    let r = bob.run(&["resolve", "notes.md", "--take", "merged"]);
    assert_eq!(r.code, 1, "markers left: must refuse");
    let fixed: String = marked
        .lines()
        .filter(|l| {
            !l.starts_with("<<<<<<<")
                && !l.starts_with("=======")
                && !l.starts_with(">>>>>>>")
                && !l.starts_with("|||||||")
                && !l.contains("(alice again)")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    bob.write("notes.md", &fixed);
    assert_eq!(
        bob.run(&["resolve", "notes.md", "--take", "merged"]).code,
        0
    );
    assert_eq!(bob.run(&["push"]).code, 0);
    assert_eq!(alice.run(&["pull"]).code, 0);
    let t = alice.read("notes.md").unwrap();
    assert!(t.contains("(alice 3)") && t.contains("(bob 3)"), "{t}");
}

#[tokio::test]
async fn index_entries_added_at_once_both_land() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    alice.write("a.md", &mem("a", "A\n"));
    alice.write("MEMORY.md", "- [A](a.md) — first\n");
    assert_eq!(alice.run(&["push"]).code, 0);
    assert_eq!(bob.run(&["pull"]).code, 0);
    alice.write("b.md", &mem("b", "B\n"));
    alice.write(
        "MEMORY.md",
        "- [A](a.md) — first\n- [B](b.md) — alice's entry\n",
    );
    bob.write("c.md", &mem("c", "C\n"));
    bob.write(
        "MEMORY.md",
        "- [A](a.md) — first\n- [C](c.md) — bob's entry\n",
    );
    assert_eq!(alice.run(&["push"]).code, 0);
    let r = bob.run(&["push"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(alice.run(&["pull"]).code, 0);
    for u in [&alice, &bob] {
        let idx = u.read("MEMORY.md").unwrap();
        assert!(
            idx.contains("alice's entry") && idx.contains("bob's entry"),
            "{}: {idx}",
            u.name
        );
    }
}

#[tokio::test]
async fn local_edits_survive_pulls_and_server_deletes() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    alice.write("keep.md", &mem("keep", "Line.\n\nMiddle.\n\nEnd.\n"));
    alice.write("gone.md", &mem("gone", "Line.\n"));
    assert_eq!(alice.run(&["push"]).code, 0);
    assert_eq!(bob.run(&["pull"]).code, 0);

    // Bob edits keep.md locally (not pushed); alice changes it too: bob's pull merges, never
    // overwrites.
    let base = bob.read("keep.md").unwrap();
    bob.write("keep.md", &format!("{base}Bob's local line.\n"));
    alice.write("keep.md", &base.replace("Line.", "Alice's line."));
    assert_eq!(alice.run(&["push"]).code, 0);
    let r = bob.run(&["pull", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let t = bob.read("keep.md").unwrap();
    assert!(
        t.contains("Bob's local line.") && t.contains("Alice's line."),
        "{t}"
    );

    // Bob edits gone.md; alice deletes it: bob's copy is kept and reported.
    bob.write(
        "gone.md",
        &format!("{}More.\n", bob.read("gone.md").unwrap()),
    );
    std::fs::remove_file(alice.team_dir().join("gone.md")).unwrap();
    assert_eq!(alice.run(&["push"]).code, 0);
    let r = bob.run(&["pull", "--json"]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.json()["pull"]["conflicts"][0]["reason"],
        "deleted_on_server",
        "{}",
        r.stdout
    );
    assert!(bob.read("gone.md").unwrap().contains("More."));
    // Keeping it re-creates it for everyone.
    assert_eq!(bob.run(&["resolve", "gone.md", "--take", "local"]).code, 0);
    let r = bob.run(&["push"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(alice.run(&["pull"]).code, 0);
    assert!(alice.read("gone.md").unwrap().contains("More."));
}

#[tokio::test]
async fn refused_files_and_mass_delete_guard() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    alice.write(
        "me.md",
        &memory("me", "about me", "user", "I prefer tabs.\n"),
    );
    alice.write("ok.md", &mem("ok", "fine\n"));
    let r = alice.run(&["push", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let j = r.json();
    assert_eq!(j["push"]["refused"][0]["rule"], "type_user_in_team");
    assert_eq!(j["push"]["pushed"], serde_json::json!(["ok.md"]));
    // Not retried until it changes.
    let r = alice.run(&["push", "--json"]);
    assert_eq!(r.json()["push"]["pushed"], serde_json::json!([]));
    assert_eq!(r.json()["push"]["refused"][0]["path"], "me.md");

    for i in 0..60 {
        alice.write(&format!("bulk/n{i}.md"), &mem(&format!("n{i}"), "x\n"));
    }
    assert_eq!(alice.run(&["push"]).code, 1, "me.md is still refused");
    std::fs::remove_file(alice.team_dir().join("me.md")).unwrap();
    std::fs::remove_dir_all(alice.team_dir().join("bulk")).unwrap();
    let r = alice.run(&["push", "--json"]);
    assert_eq!(r.code, 1);
    assert!(
        r.json()["push"]["held_deletes"]
            .as_str()
            .unwrap()
            .contains("allow-mass-delete")
    );
    // The deletions were never pushed; the files come back from their last synced versions.
    let r = alice.run(&["pull", "--restore-deleted"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(alice.read("bulk/n7.md"), Some(mem("n7", "x\n")));
    let st = alice.run(&["status", "--json", "--offline"]).json();
    assert_eq!(st["ahead"]["deleted"], serde_json::json!([]), "{st}");
}

/// A push does not read files that look as they did when last found unchanged (same size,
/// inode, modification and status-change times, left alone for 3 s). An edit that keeps the
/// size and sets the modification time back is still seen: its status-change time moved.
#[tokio::test]
async fn an_edit_keeping_size_and_modification_time_is_still_pushed() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    let old = mem("db", "Use a real database.\n");
    alice.write("db.md", &old);
    alice.write("other.md", &mem("other", "Something else.\n"));
    assert_eq!(alice.run(&["push"]).code, 0);
    assert_eq!(bob.run(&["pull"]).code, 0);

    // Stamps are only trusted for files left alone for a while.
    std::thread::sleep(std::time::Duration::from_millis(3500));
    let r = bob.run(&["push", "--json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let state_dir = bob.home.path().join(".local/state/memsync");
    let state_file = std::fs::read_dir(&state_dir)
        .unwrap()
        .map(|e| e.unwrap().path().join("state.json"))
        .find(|p| p.exists())
        .expect("a state file");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state_file).unwrap()).unwrap();
    assert!(
        state["files"]["db.md"]["stamp"].is_object(),
        "the no-op push stamped the unchanged file: {state}"
    );

    let path = bob.team_dir().join("db.md");
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let new = mem("db", "Use a fake database.\n");
    assert_eq!(new.len(), old.len());
    bob.write("db.md", &new);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let r = bob.run(&["status", "--offline"]);
    assert!(r.stdout.contains("modified db.md"), "{}", r.stdout);
    let r = bob.run(&["push", "--json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(
        r.json()["push"]["pushed"],
        serde_json::json!(["db.md"]),
        "{}",
        r.stdout
    );
    assert_eq!(alice.run(&["pull"]).code, 0);
    assert_eq!(alice.read("db.md").as_deref(), Some(new.as_str()));
}
