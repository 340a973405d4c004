//! The feedback memories and the setup the feedback tests share: a team rule that integration
//! tests hit a real database, a private rule that mocks it (what the detector calls a
//! contradiction), one that resets it (what it calls related), and a project where alice
//! published the first and bob pulled it.

use crate::{Server, TestDb, User};

/// The clone origin of the project the fixtures publish to (`acme/api`).
pub const ORIGIN: &str = "git@github.com:acme/api.git";

/// A feedback memory with `rule` as its body and `extra` frontmatter lines (each ending in `\n`).
pub fn feedback_memory(name: &str, description: &str, rule: &str, extra: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: {description}\ntype: feedback\n{extra}---\n{rule}\n\n**Why:** it bit us before.\n**How to apply:** every change under tests/.\n"
    )
}

/// The team rule: integration tests hit a real database.
pub fn real_db() -> String {
    feedback_memory(
        "testing-policy",
        "integration tests hit a real database",
        "Integration tests must hit a real database, not mocks.",
        "",
    )
}

/// What the detector calls a contradiction of [`real_db`], with `extra` frontmatter lines
/// (`overrides:`, `supersedes:`, `compatible-with:`).
pub fn mock_db(extra: &str) -> String {
    feedback_memory(
        "fast-tests",
        "mock the database in integration tests",
        "Mock the database in integration tests so they run fast.",
        extra,
    )
}

/// What the detector calls related to [`real_db`] (no opposing directives).
pub fn reset_db() -> String {
    feedback_memory(
        "db-reset",
        "integration tests reset the real database",
        "Integration tests must reset the real database before each test.",
        "",
    )
}

/// A server where alice published [`real_db`] as `testing.md` with `memsync push` and bob
/// pulled it: (server, its database, alice, bob).
pub async fn bob_pulled_the_testing_rule() -> (Server, TestDb, User, User) {
    let (server, db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    alice.write("testing.md", &real_db());
    assert_eq!(alice.run(&["push"]).code, 0);
    assert_eq!(bob.run(&["pull"]).code, 0);
    (server, db, alice, bob)
}
