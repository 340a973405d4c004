//! A labeled corpus of feedback-memory pairs for `memsync_core::feedback`, and its scoring.
//!
//! Each [`Pair`] is a private feedback memory and a team feedback memory written by hand the
//! way coding agents write them (frontmatter, the rule, `**Why:**` and `**How to apply:**`
//! lines), labeled `contradiction`, `related` or nothing. The two sides of a contradiction are
//! worded differently on purpose. Scoring runs [`feedback::compare`] over the whole cross
//! product of [`private_set`] × [`team_set`], so a finding between two memories of different
//! pairs counts too: it is right only if [`cross_labels`] says so, and a false alarm otherwise.
//! Several pairs share a topic (the database in tests, the package manager, timezones, merge
//! strategy…), so many memories of different pairs really do contradict each other: those
//! contradictions were enumerated per topic from the texts, before looking at the checker's
//! output. Related memories of different pairs were labeled by reviewing each `related` finding
//! by hand, so the `related` row measures precision, not recall.
//!
//! Groups (see each pair's `note`): contradictions in English; same-subject compatible
//! refinements (`related`); opposite directives in different scopes (`related`); unrelated
//! pairs, many sharing a word on purpose ("keep … short", "commit", "squash", "spaces"); and
//! pairs in Chinese, Japanese, Korean, German, Spanish and French, some mixed with English.
//!
//! Every case the checker gets wrong is listed in [`EXPLAINED`] with the reason; the test
//! `tests/tests/feedback_corpus.rs` fails if a wrong case is not explained there, or if an
//! explained one is now right (so the list stays true). Labels are never bent to fit the
//! checker.

use std::time::{Duration, Instant};

use memsync_core::feedback::{self, Kind, Note};

/// One labeled pair.
pub struct Pair {
    /// The private memory's full text.
    pub private: String,
    /// The team memory's full text.
    pub team: String,
    /// `"contradiction"`, `"related"` or `None` (nothing in common).
    pub expected: Option<&'static str>,
    pub note: &'static str,
}

const C: Option<&str> = Some("contradiction");
const R: Option<&str> = Some("related");
const N: Option<&str> = None;

#[derive(Clone, Copy)]
enum Lang {
    En,
    Zh,
    Ja,
    Ko,
    De,
    Es,
    Fr,
}

#[derive(Clone, Copy)]
enum Form {
    Standard,
    /// `type` under `metadata:`.
    Metadata,
    /// CRLF line endings.
    Crlf,
    /// The rule alone, no why/how lines.
    RuleOnly,
}

/// One memory, before rendering.
struct M {
    name: &'static str,
    description: &'static str,
    rule: &'static str,
    why: &'static str,
    how: &'static str,
    lang: Lang,
    form: Form,
}

fn m(lang: Lang, [name, description, rule, why, how]: [&'static str; 5]) -> M {
    M {
        name,
        description,
        rule,
        why,
        how,
        lang,
        form: Form::Standard,
    }
}

fn en(f: [&'static str; 5]) -> M {
    m(Lang::En, f)
}
fn zh(f: [&'static str; 5]) -> M {
    m(Lang::Zh, f)
}
fn ja(f: [&'static str; 5]) -> M {
    m(Lang::Ja, f)
}
fn ko(f: [&'static str; 5]) -> M {
    m(Lang::Ko, f)
}
fn de(f: [&'static str; 5]) -> M {
    m(Lang::De, f)
}
fn es(f: [&'static str; 5]) -> M {
    m(Lang::Es, f)
}
fn fr(f: [&'static str; 5]) -> M {
    m(Lang::Fr, f)
}

impl M {
    fn form(mut self, form: Form) -> M {
        self.form = form;
        self
    }

    fn labels(&self) -> (&'static str, &'static str) {
        match self.lang {
            Lang::En => ("**Why:**", "**How to apply:**"),
            Lang::Zh => ("**原因：**", "**如何应用：**"),
            Lang::Ja => ("**理由:**", "**適用方法:**"),
            Lang::Ko => ("**이유:**", "**적용:**"),
            Lang::De => ("**Warum:**", "**Anwendung:**"),
            Lang::Es => ("**Por qué:**", "**Cómo aplicar:**"),
            Lang::Fr => ("**Pourquoi :**", "**Comment l'appliquer :**"),
        }
    }

    fn render(&self) -> String {
        let ty = match self.form {
            Form::Metadata => "metadata:\n  type: feedback\n  origin: agent",
            _ => "type: feedback",
        };
        let (why, how) = self.labels();
        let mut text = format!(
            "---\nname: {}\ndescription: {}\n{ty}\n---\n{}\n",
            self.name,
            yaml_str(self.description),
            self.rule
        );
        if !matches!(self.form, Form::RuleOnly) {
            text.push_str(&format!("\n{why} {}\n\n{how} {}\n", self.why, self.how));
        }
        if matches!(self.form, Form::Crlf) {
            text = text.replace('\n', "\r\n");
        }
        text
    }
}

/// A YAML scalar: plain when that is safe, else double-quoted (JSON strings are YAML).
fn yaml_str(s: &str) -> String {
    let risky = s.contains(": ")
        || s.contains(" #")
        || s.contains('"')
        || s.ends_with(':')
        || s.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@`".contains(c));
    if risky {
        serde_json::to_string(s).unwrap_or_default()
    } else {
        s.to_owned()
    }
}

fn pair(
    expected: Option<&'static str>,
    note: &'static str,
    private: M,
    team: M,
) -> (M, M, Option<&'static str>, &'static str) {
    (private, team, expected, note)
}

#[rustfmt::skip]
fn table() -> Vec<(M, M, Option<&'static str>, &'static str)> {
    vec![
        // ---------------------------------------------------------------------------------
        // Contradictions, English. The two sides are worded differently.
        // ---------------------------------------------------------------------------------
        pair(C, "the issue's example: mock vs real database in integration tests",
            en(["mock-db-in-integration-tests", "Integration tests should mock the database layer for speed",
                "Mock the database in integration tests.",
                "Spinning up Postgres made the suite take 6 minutes on my laptop.",
                "Use the in-memory repository fakes in tests/support when writing integration tests."]),
            en(["integration-tests-real-db", "Integration tests must hit a real database, not mocks",
                "Integration tests must hit a real database.",
                "A mocked test passed while the prod migration failed (incident 2024-03).",
                "Any test under tests/ that touches storage uses the throwaway Postgres from scripts/test-db."])),
        pair(C, "package manager: npm vs pnpm",
            en(["use-npm-for-installs", "Install packages with npm",
                "Use npm to add and install dependencies in the web app.",
                "npm is what I have globally and pnpm kept asking for a store path.",
                "Run npm install / npm install <pkg> in web/."]),
            en(["pnpm-only", "This monorepo uses pnpm; npm and yarn break the workspace links",
                "This repo uses pnpm. Never run npm install or yarn in any package.",
                "npm install created a package-lock.json and duplicated react, breaking hooks.",
                "pnpm install at the root, pnpm add <pkg> --filter <workspace>."])),
        pair(C, "merge strategy: merge commit vs squash",
            en(["merge-commits-for-prs", "Merge PRs with a merge commit to keep branch history",
                "Land pull requests with a merge commit (--no-ff) so the individual commits stay visible.",
                "Bisecting is easier when each small commit is preserved.",
                "Use the 'Create a merge commit' button or git merge --no-ff."]),
            en(["squash-merge-prs", "All pull requests are squash-merged",
                "Squash-merge every pull request into main.",
                "main's history should read one entry per change; WIP commits are noise.",
                "Use 'Squash and merge' in GitHub; edit the squash message to the PR title."])),
        pair(C, "indentation: tabs vs 2 spaces in TypeScript",
            en(["tabs-in-typescript", "Indent TypeScript with tabs",
                "Use tabs for indentation in TypeScript files.",
                "Tabs let everyone choose their own width.",
                "Set indent_style = tab in your editor for .ts files."]),
            en(["ts-two-space-indent", "TypeScript is indented with 2 spaces (Prettier default)",
                "TypeScript files are indented with 2 spaces, never tabs.",
                "Prettier enforces it in CI; tab-indented files fail the format check.",
                "Let Prettier format on save; don't override useTabs."])),
        pair(C, "naming: camelCase vs snake_case API fields",
            en(["camelcase-json-fields", "JSON API fields in camelCase",
                "Name JSON fields in API responses in camelCase, like userId.",
                "The frontend is TypeScript and camelCase avoids mapping code.",
                "Add #[serde(rename_all = \"camelCase\")] to response structs."]),
            en(["snake-case-api-payloads", "API payload fields are snake_case",
                "All API payload fields are snake_case.",
                "Our public API has been snake_case since v1; mixing styles breaks clients.",
                "Never rename fields with serde rename_all on API types."])),
        pair(C, "timezone of log timestamps: local vs UTC",
            en(["local-time-in-logs", "Log timestamps in the server's local time",
                "Write log timestamps in local time so they match the wall clock.",
                "Debugging at 2am is easier when the log time matches my clock.",
                "Use chrono::Local::now() in the log formatter."]),
            en(["utc-log-timestamps", "All log timestamps are UTC",
                "Log timestamps must always be UTC (RFC 3339 with Z).",
                "Servers run in three regions; local times made the incident timeline unreadable.",
                "The tracing subscriber is configured with UtcTime; don't change it."])),
        pair(C, "line length: 80 vs 120",
            en(["80-column-lines", "Keep lines under 80 columns",
                "Wrap code at 80 columns.",
                "I review diffs side by side on a laptop.",
                "Set max_width = 80 in your local rustfmt override."]),
            en(["rustfmt-max-width-120", "Max line width is 120 (rustfmt.toml)",
                "Lines may be up to 120 characters; rustfmt.toml sets max_width = 120.",
                "We agreed on 120 to reduce awkward wrapping of long generics.",
                "Never add a local rustfmt.toml that changes max_width."])),
        pair(C, "force-push to main: 'is fine' vs 'never'",
            en(["force-push-main-after-bad-merge", "Force-pushing main is ok to undo a bad merge",
                "Force-pushing to main is fine to undo a bad merge, as long as you tell the channel.",
                "Reverting leaves a messy history; a quick force-push is cleaner.",
                "git push --force-with-lease origin main, then post in #dev."]),
            en(["never-force-push-main", "Never force-push main or release branches",
                "Never force-push to main or release/*.",
                "A force-push in 2023 dropped two merged PRs that nobody noticed for a week.",
                "Revert with a new commit instead."])),
        pair(C, "cargo fmt on the whole workspace: don't vs always",
            en(["no-cargo-fmt-on-untouched", "Don't reformat files you didn't change",
                "Don't run cargo fmt on the whole workspace; only format the files you touched.",
                "Whole-repo formatting made my PR diff 3,000 lines.",
                "rustfmt path/to/changed.rs instead."]),
            en(["cargo-fmt-all-before-commit", "Run cargo fmt --all before every commit",
                "Always run `cargo fmt --all` before committing.",
                "CI runs cargo fmt --check and fails on any diff.",
                "Or install the pre-commit hook from scripts/hooks."])),
        pair(C, "unwrap() in library code: 'is fine' vs 'no'",
            en(["unwrap-ok-when-infallible", "unwrap() is fine in library code when it can't fail",
                "unwrap() is fine in library code when the value can't be None.",
                "Adding error variants for impossible cases is noise.",
                "Leave a comment saying why it can't fail."]),
            en(["no-unwrap-in-lib", "No unwrap()/expect() in library code",
                "No unwrap() or expect() in library code; return an error instead.",
                "A panic in the parser took down the server on malformed input.",
                "Use ? with a thiserror variant; unwrap is only for tests."])),
        pair(C, "lockfile: don't commit vs always commit",
            en(["dont-commit-package-lock", "Keep package-lock.json out of commits",
                "Don't commit package-lock.json; it causes merge conflicts.",
                "Every rebase had lockfile conflicts.",
                "Add it to your global gitignore."]),
            en(["commit-the-lockfile", "Lockfiles are always committed",
                "Always commit the lockfile together with package.json changes.",
                "Without it CI resolved a newer minor version of esbuild and the build broke.",
                "git add pnpm-lock.yaml with the manifest."])),
        pair(C, "conventional commits: 'don't bother' vs 'must follow'",
            en(["plain-commit-messages", "Skip conventional commit prefixes",
                "Don't bother with conventional commit prefixes; write a plain sentence.",
                "The prefixes add nothing when the PR title says it all.",
                "Subject line like 'Handle empty config files'."]),
            en(["conventional-commits", "Commit messages follow Conventional Commits",
                "Commit messages must follow Conventional Commits (feat:, fix:, chore: …).",
                "release-please generates the changelog from the prefixes.",
                "Breaking changes get a ! and a BREAKING CHANGE footer."])),
        pair(C, "migrations: 'without asking' vs 'always ask' (the private rule is unscoped)",
            en(["run-migrations-freely", "Apply migrations without asking",
                "Run database migrations without asking me first.",
                "I'm the only one using the dev database.",
                "sqlx migrate run after creating them."]),
            en(["ask-before-migrations", "Ask before running a migration against any shared database",
                "Always ask before running a migration against any shared database.",
                "An agent ran a destructive migration on staging during a demo.",
                "Show the SQL and wait for a yes."])),
        pair(C, "docstrings: skip vs required on public functions",
            en(["skip-docstrings", "Skip docstrings; code should speak for itself",
                "Skip docstrings on functions; well-named code speaks for itself.",
                "Docstrings drift out of date.",
                "Only add a comment when the why isn't obvious."]),
            en(["public-functions-docstrings", "Every public function needs a docstring",
                "Every public function must have a docstring.",
                "Our API docs are generated from them.",
                "Google style, with Args and Returns."])),
        pair(C, "emoji in commit messages",
            en(["gitmoji-commits", "Use gitmoji in commit messages",
                "Start commit messages with a gitmoji, like ✨ for features.",
                "It makes the log scannable at a glance.",
                "See gitmoji.dev for the list."]),
            en(["no-emoji-in-commits", "No emoji in commit messages",
                "No emoji in commit messages or PR titles.",
                "Some of our tooling chokes on non-ASCII in subjects.",
                "Use plain text prefixes."])),
        pair(C, "language of replies: German vs English",
            en(["answer-in-german", "Answer me in German",
                "Answer me in German.",
                "I think faster in my native language.",
                "Code and identifiers stay in English."]),
            en(["agent-responses-english", "Agent responses are in English so transcripts can be reviewed",
                "All agent responses must be in English.",
                "Transcripts are reviewed by the whole team, and not everyone reads German or Spanish.",
                "Quote non-English input as-is, answer in English."])),
        pair(C, "semicolons in TypeScript: omit vs always",
            en(["no-semicolons-ts", "Omit semicolons in TypeScript",
                "Omit semicolons in TypeScript; ASI handles it.",
                "Less noise.",
                "Set semi: false in your editor."]),
            en(["semicolons-required", "TypeScript statements end with semicolons",
                "Always end TypeScript statements with semicolons.",
                "Prettier config has semi: true; ASI bit us with a leading ( line.",
                "Don't change the Prettier config."])),
        pair(C, "string quotes: single vs double",
            en(["single-quotes-js", "Prefer single quotes in JavaScript",
                "Prefer single quotes for strings in JS and TS.",
                "Less shift-key.",
                "Configure your editor's quote style."]),
            en(["double-quotes-prettier", "Strings use double quotes (Prettier config)",
                "Use double quotes for strings; the Prettier config sets singleQuote: false.",
                "Consistency with JSON and our Python code.",
                "Run prettier --write."])),
        pair(C, "test runner: Jest vs Vitest",
            en(["jest-for-frontend-tests", "Write frontend tests with Jest",
                "Write new frontend unit tests with Jest.",
                "I know its mocking API well.",
                "npx jest --watch."]),
            en(["vitest-not-jest", "We migrated to Vitest; no new Jest tests",
                "We migrated to Vitest; don't add new Jest tests.",
                "Running two test runners doubled CI time.",
                "Import from 'vitest' and use vi.fn()."])),
        pair(C, "Python packaging: pip vs uv",
            en(["pip-requirements", "Install Python deps with pip and requirements.txt",
                "Install Python dependencies with pip install -r requirements.txt.",
                "It's what the Dockerfile does.",
                "Keep requirements.txt sorted."]),
            en(["uv-for-python", "uv manages all Python dependencies",
                "Use uv for all Python dependency management; don't call pip directly.",
                "uv.lock gives reproducible environments; pip installs drifted.",
                "uv add <pkg>, uv sync."])),
        pair(C, "type hints: not in scripts vs all Python code",
            en(["no-type-hints-in-scripts", "Don't add type hints to quick scripts",
                "Don't add type hints to the scripts in tools/; they slow me down.",
                "They're throwaway.",
                "Keep them short."]),
            en(["python-fully-typed", "All Python code must be fully type-annotated",
                "All Python code must be fully type-annotated and pass mypy --strict.",
                "Type errors caught in review are cheaper than in prod.",
                "CI runs mypy --strict on every package, tools/ included."])),
        pair(C, "tests after vs failing test first",
            en(["implementation-then-tests", "Write the implementation first, tests afterwards",
                "Write the implementation first and add tests afterwards.",
                "I explore the design in code before pinning it down.",
                "Tests before opening the PR."]),
            en(["failing-test-first", "Write a failing test before fixing a bug",
                "Write a failing test before the fix (TDD), then make it pass.",
                "Regressions came back twice because fixes had no test.",
                "The PR must show the test failing on main."])),
        pair(C, "end-of-task summary: don't vs always",
            en(["no-trailing-summary", "Don't end responses with a summary",
                "Don't end responses with a summary of what you just did.",
                "I can read the diff; the recap wastes my time.",
                "Stop after the last code change or answer."]),
            en(["summarize-changes-at-end", "Finish each task with a short summary of changes",
                "Finish every task with a short summary of the files changed and why.",
                "Reviewers use the summary to write the PR description.",
                "Three bullets max."])),
        pair(C, "dependency versions: caret ranges vs exact pins",
            en(["caret-ranges-npm", "Use caret ranges for npm dependencies",
                "Use caret ranges (^1.2.3) for npm dependencies so we get fixes.",
                "Pinned versions go stale and miss security patches.",
                "npm install without --save-exact."]),
            en(["pin-exact-versions", "Pin exact versions in package.json",
                "Pin exact dependency versions in package.json.",
                "A caret range pulled in a broken minor release on deploy day.",
                "pnpm add --save-exact; Renovate bumps them."])),
        pair(C, "primary keys: bigserial vs UUID",
            en(["serial-ids-new-tables", "Use auto-increment integer ids",
                "New tables should use bigserial integer ids.",
                "They're smaller and sort by insertion.",
                "id BIGSERIAL PRIMARY KEY."]),
            en(["uuid-primary-keys", "New tables use UUID primary keys",
                "New tables use UUID primary keys (uuid v7).",
                "IDs are exposed in URLs; sequential ids leak volumes.",
                "id UUID PRIMARY KEY DEFAULT uuidv7()."])),
        pair(C, "async runtime: async-std vs tokio only",
            en(["async-std-worker", "Use async-std for the new worker",
                "Use async-std for the new background worker; it's simpler.",
                "Less configuration than tokio.",
                "async_std::task::spawn."]),
            en(["tokio-only-runtime", "Tokio is the only async runtime",
                "Tokio is the only async runtime in this workspace; don't add another.",
                "Two runtimes in one process deadlocked the server in 2023.",
                "Use tokio::spawn and tokio::sync."])),
        pair(C, "queries: Diesel ORM vs raw SQL, no ORM",
            en(["diesel-for-queries", "Write new queries with Diesel",
                "Write new queries with the Diesel ORM.",
                "Type-safe query builder catches mistakes.",
                "Put schema in src/schema.rs."]),
            en(["raw-sql-with-sqlx", "Raw SQL via sqlx; no ORM",
                "Use raw SQL through sqlx; no ORM.",
                "We need full control over query plans.",
                "Queries live in one store module per aggregate."])),
        pair(C, "git hooks: --no-verify vs never bypass",
            en(["no-verify-when-hooks-slow", "Use --no-verify when hooks are slow",
                "Use `git commit --no-verify` when the hooks are slow and you're just checkpointing.",
                "The hooks take 90 seconds.",
                "Run them before pushing."]),
            en(["never-bypass-hooks", "Never bypass the pre-commit hooks",
                "Never bypass the pre-commit hooks.",
                "Unformatted code and a leaked key both came in via --no-verify.",
                "Fix the hook if it's slow."])),
        pair(C, "console.log: leave in vs remove",
            en(["leave-console-logs", "Leave console.log calls in while developing",
                "Leave console.log calls in the code; they help me debug later.",
                "Re-adding them each time is tedious.",
                "Prefix them with [debug]."]),
            en(["remove-console-log", "Remove console.log before committing",
                "Remove all console.log statements before committing.",
                "They leaked user emails to the browser console in prod.",
                "ESLint no-console is an error in CI."])),
        pair(C, "staging: git add -A vs explicit paths",
            en(["stage-everything", "Stage everything with git add -A",
                "Stage everything with git add -A before committing.",
                "It's faster than picking files.",
                "Check git status first."]),
            en(["stage-files-explicitly", "Stage files explicitly; never git add -A",
                "Stage files explicitly; never use git add -A or git add .",
                "An agent committed a 2 GB dump and a .env file with git add -A.",
                "git add <paths> and review git diff --staged."])),
        pair(C, "answer length: detailed vs short",
            en(["detailed-explanations", "Give detailed explanations with every change",
                "Explain every change in detail, including alternatives you considered.",
                "I'm learning the codebase and want to understand the reasoning.",
                "A few paragraphs is fine."]),
            en(["short-responses", "Keep responses short and to the point",
                "Keep responses short and to the point.",
                "Long answers bury the one line that matters.",
                "Lead with the answer, skip preamble."])),
        pair(C, "sleep in tests: add one vs never",
            en(["sleep-for-server-startup", "Sleep to wait for the test server",
                "In tests, add a sleep(2) after starting the server so it's ready.",
                "The race made tests flaky.",
                "std::thread::sleep(Duration::from_secs(2))."]),
            en(["no-sleep-in-tests", "Never use sleep in tests; poll with a timeout",
                "Never use sleep() in tests; poll for readiness with a timeout.",
                "Sleeps made CI both slow and flaky.",
                "Use the wait_for helper in tests/support."])),
        pair(C, "feature flags: remove at launch vs keep two releases",
            en(["remove-flags-at-launch", "Remove feature flags as soon as the feature ships",
                "Remove feature flags as soon as the feature ships.",
                "Stale flags pile up.",
                "Delete the flag and the dead branch in the launch PR."]),
            en(["keep-flags-two-releases", "Keep feature flags for two releases after launch",
                "Keep feature flags around for two releases after launch.",
                "We needed to turn a feature off a week after launch twice.",
                "Add a cleanup ticket when you launch."])),
        pair(C, "trailing commas in argument lists",
            en(["no-trailing-commas", "No trailing commas in argument lists",
                "Don't put trailing commas in function call arguments.",
                "They look like a typo.",
                "Delete them when you touch a call."]),
            en(["trailing-commas-multiline", "Trailing commas in multiline lists",
                "Always use trailing commas in multiline lists and argument lists.",
                "Cleaner diffs when adding an item.",
                "rustfmt and Prettier do this; don't fight them."])),
        pair(C, "API timestamps: epoch seconds vs RFC 3339",
            en(["epoch-timestamps-api", "Return timestamps as unix epoch seconds",
                "Return timestamps in API responses as unix epoch seconds.",
                "Easier arithmetic in the client.",
                "i64 seconds."]),
            en(["rfc3339-timestamps", "API timestamps are RFC 3339 strings",
                "Timestamps in the API are RFC 3339 strings in UTC.",
                "Humans can read them in logs and curl output.",
                "chrono's to_rfc3339_opts(SecondsFormat::Secs, true)."])),
        pair(C, "config format: YAML vs TOML",
            en(["yaml-config", "Put new config in YAML files",
                "Put new service configuration in YAML files under config/.",
                "YAML supports comments and anchors.",
                "config/<service>.yaml"]),
            en(["toml-config-only", "Configuration lives in TOML",
                "Configuration lives in TOML; don't add YAML config files.",
                "One format, one parser, one set of docs.",
                "Extend config/app.toml."])),
        pair(C, "error messages: capitalized with a period vs lowercase without",
            en(["capitalized-error-messages", "Start error messages with a capital letter",
                "Start error messages with a capital letter and end them with a period.",
                "They read like sentences in the UI.",
                "Error::new(\"Config file not found.\")"]),
            en(["lowercase-error-messages", "Error messages are lowercase without trailing punctuation",
                "Error messages are lowercase and have no trailing period.",
                "They get wrapped with context (\"reading config: file not found\").",
                "Follow the Rust API guidelines."])),
        pair(C, "container tool for local dev: podman vs docker compose",
            en(["podman-locally", "Use podman instead of Docker locally",
                "Use podman instead of Docker for local development.",
                "Rootless, no daemon.",
                "alias docker=podman."]),
            en(["docker-compose-dev-env", "Local dev environment runs with Docker Compose",
                "Run the local dev environment with docker compose up.",
                "The compose file uses Docker-only features (host-gateway).",
                "Install Docker Desktop or the docker engine."])),
        pair(C, "updating a branch: merge main in vs rebase onto main",
            en(["merge-main-into-branch", "Update branches by merging main into them",
                "Merge main into your branch to bring it up to date.",
                "Rebasing rewrites commits reviewers already looked at.",
                "git merge origin/main."]),
            en(["rebase-onto-main", "Rebase feature branches onto main",
                "Rebase feature branches onto main instead of merging main into them.",
                "Merge commits from main clutter the PR diff.",
                "git pull --rebase origin main."])),
        pair(C, "styling: styled-components vs Tailwind, no CSS-in-JS",
            en(["styled-components-new", "Use styled-components for new components",
                "Use styled-components for new React components.",
                "Co-locating styles with the component is nicer.",
                "const Button = styled.button`…`"]),
            en(["tailwind-no-css-in-js", "Style with Tailwind; no CSS-in-JS",
                "Style components with Tailwind utility classes; no CSS-in-JS libraries.",
                "CSS-in-JS added 40 KB and runtime cost.",
                "Extract repeated class lists into components."])),
        pair(C, "println! in server code",
            en(["println-diagnostics", "Use println! for quick diagnostics in the server",
                "Use println! for diagnostics in the server code.",
                "It's quicker than setting up a tracing subscriber.",
                "Remove them later."]),
            en(["tracing-not-println", "Use tracing, never println!, in server code",
                "Use tracing macros, never println!, in server code.",
                "stdout is the JSON log stream; stray prints corrupt it.",
                "tracing::debug! with fields."])),
        pair(C, "Python formatter: black vs ruff format",
            en(["black-for-python", "Format Python with black",
                "Format Python code with black.",
                "It's the standard.",
                "black ."]),
            en(["ruff-format-not-black", "ruff format is our Python formatter; black is no longer used",
                "ruff format is our Python formatter; black is no longer used.",
                "One tool for lint and format, 30x faster.",
                "ruff format && ruff check --fix."])),
        pair(C, "shell scripts: bash with bashisms vs POSIX sh",
            en(["bash-scripts-fine", "Write scripts in bash; bashisms are fine",
                "Write scripts in bash; bashisms like [[ ]] and arrays are fine.",
                "POSIX sh is too limiting.",
                "#!/usr/bin/env bash with set -euo pipefail."]),
            en(["posix-sh-scripts", "Scripts must be POSIX sh",
                "Scripts must be POSIX sh (#!/bin/sh); no bashisms.",
                "They run in Alpine containers without bash.",
                "Check with shellcheck -s sh."])),
        pair(C, "squashing your work before the PR vs keeping separate commits",
            en(["squash-before-pr", "Squash your commits into one before opening a PR",
                "Squash your work into a single commit before opening a pull request.",
                "Reviewers see one clean commit.",
                "git rebase -i main."]),
            en(["keep-commits-in-pr", "Keep small separate commits in PRs; don't squash locally",
                "Keep commits small and separate in a PR; don't squash them before review.",
                "Reviewers read commit by commit.",
                "Fixups are fine; we squash on merge."])),
        pair(C, "e2e suite in CI: skip vs must run",
            en(["skip-e2e-in-ci", "Skip the slow e2e suite in CI",
                "Skip the e2e suite in CI for small PRs; it's too slow.",
                "It takes 25 minutes.",
                "Add [skip e2e] to the PR title."]),
            en(["ci-runs-full-e2e", "CI must run the full e2e suite on every PR",
                "CI must run the full e2e suite on every pull request.",
                "Half our production bugs were caught only by e2e.",
                "Never add skip markers to the workflow."])),
        pair(C, "error type: Result<T, String> vs thiserror enums",
            en(["string-errors-in-cli", "Use Result<T, String> in the CLI rather than custom error types",
                "Use `Result<T, String>` rather than custom error types in the CLI.",
                "Defining enums for every failure is overkill for a CLI.",
                "map_err(|e| e.to_string())"]),
            en(["typed-errors-thiserror", "Define error enums with thiserror; no String errors",
                "Define error enums with thiserror; don't use String as an error type.",
                "Callers need to match on error kinds.",
                "One error enum per crate boundary."])),
        pair(C, "license headers: stop adding vs required",
            en(["no-license-headers", "Stop adding license headers to new files",
                "Stop adding license headers to new files.",
                "The LICENSE file at the root covers everything.",
                "Delete the template from your editor."]),
            en(["apache-header-every-file", "Every new source file starts with the Apache-2.0 header",
                "Every new source file must start with the Apache-2.0 license header.",
                "Legal requires it for the open-source release.",
                "Copy it from HEADER.txt."])),

        // ---------------------------------------------------------------------------------
        // Related: the same subject, compatible directives (refinements).
        // ---------------------------------------------------------------------------------
        pair(R, "real database in integration tests; a refinement about cleanup",
            en(["db-transaction-rollback-tests", "Roll back the test database after each integration test",
                "Wrap each integration test in a transaction and roll it back at the end, so the real database stays clean.",
                "Leftover rows made later tests order-dependent.",
                "Use the with_tx helper."]),
            en(["integration-tests-hit-postgres", "Integration tests run against a real Postgres",
                "Integration tests run against a real Postgres started by scripts/test-db.",
                "Mocks hid a broken migration.",
                "Don't share one database between parallel test binaries."])),
        pair(R, "pnpm in CI with a frozen lockfile; the workspace uses pnpm",
            en(["pnpm-frozen-lockfile-ci", "Use pnpm install --frozen-lockfile in CI",
                "In CI, install with pnpm install --frozen-lockfile.",
                "It fails fast when the lockfile is stale.",
                "Same flag in the Dockerfile."]),
            en(["workspace-uses-pnpm", "The workspace uses pnpm workspaces",
                "The JavaScript workspace is managed with pnpm workspaces.",
                "Shared packages link without publishing.",
                "pnpm -r build."])),
        pair(R, "squash commit subject from the PR title",
            en(["squash-title-as-subject", "When squash-merging, use the PR title as the commit subject",
                "When squash-merging, make the commit subject the PR title and delete the WIP lines from the body.",
                "The default squash message lists every fixup commit.",
                "Edit the message in the merge dialog."]),
            en(["pr-titles-imperative", "PR titles are imperative and under 72 characters",
                "PR titles are imperative and under 72 characters; they become the squash commit subject.",
                "git log --oneline shows them.",
                "'Add retry to webhook sender', not 'Added retries'."])),
        pair(R, "UTC log timestamps: the Z suffix; a ts field in UTC",
            en(["z-suffix-log-times", "Log timestamps end with Z",
                "Make sure UTC log timestamps carry the Z suffix, not +00:00.",
                "grep for Z is how I filter.",
                "Use SecondsFormat with use_z = true."]),
            en(["log-timestamp-field", "Log lines carry the timestamp in a ts field",
                "Every log line carries its timestamp in a top-level ts field in UTC.",
                "Our log shipper parses ts.",
                "Configured in telemetry.rs."])),
        pair(R, "clippy: fix rather than allow; run with -D warnings",
            en(["clippy-fix-not-allow", "Fix clippy lints instead of allowing them",
                "Fix clippy warnings rather than adding #[allow] attributes.",
                "Allows accumulate and hide real issues.",
                "If a lint is wrong, discuss it in the PR."]),
            en(["clippy-deny-warnings", "CI runs clippy with -D warnings",
                "Run cargo clippy --all-targets -- -D warnings before pushing; CI does the same.",
                "Warnings left alone turn into hundreds.",
                "Fix or justify each one."])),
        pair(R, "expect() over unwrap() in tests; no panics in request handlers (different code)",
            en(["expect-over-unwrap-in-tests", "In tests prefer expect(\"why\") over unwrap()",
                "In tests, prefer expect(\"reason\") over unwrap() so failures explain themselves.",
                "A bare unwrap panic in CI told me nothing.",
                "expect(\"config fixture parses\")"]),
            en(["no-panics-in-request-handlers", "Request handlers never panic",
                "Request handlers must not panic: no unwrap(), no expect(), no indexing that can go out of bounds.",
                "A panic kills the connection without a response.",
                "Return ApiError instead."])),
        pair(R, "conventional commit prefixes in detail",
            en(["fix-prefix-for-bugfixes", "Use fix: for bug fixes and feat: for features",
                "Use the fix: prefix for bug fixes and feat: for new features; chore: for dependency bumps.",
                "release-please maps them to version bumps.",
                "Scope in parentheses: fix(api): …"]),
            en(["conventional-commit-format", "Commit messages follow Conventional Commits",
                "Commit messages follow the Conventional Commits format.",
                "The changelog is generated from them.",
                "See conventionalcommits.org."])),
        pair(R, "docstring style; docstrings on public modules",
            en(["google-style-docstrings", "Docstrings use Google style",
                "Write docstrings in Google style with Args: and Returns: sections.",
                "Sphinx napoleon renders them.",
                "Type info goes in the signature, not the docstring."]),
            en(["docstrings-on-public-api", "Public modules and classes have docstrings",
                "Public modules and classes need a docstring explaining their purpose.",
                "New joiners read the API reference first.",
                "One line summary, then details."])),
        pair(R, "pull request size and content",
            en(["separate-refactor-prs", "Split refactors into their own PR",
                "Put refactors in their own pull request, separate from behavior changes.",
                "Mixed PRs are hard to review and to revert.",
                "Land the refactor first."]),
            en(["small-prs", "Keep pull requests under 400 changed lines",
                "Keep pull requests under 400 changed lines.",
                "Review quality drops sharply above that.",
                "Stack PRs if needed."])),
        pair(R, "Tailwind: extract repeated class lists; use theme tokens",
            en(["extract-tailwind-class-lists", "Extract repeated Tailwind class lists",
                "When the same Tailwind class list appears three times, extract a component.",
                "Long class strings are hard to keep consistent.",
                "components/ui/."]),
            en(["tailwind-config-tokens", "Use Tailwind theme tokens, not arbitrary values",
                "Use the Tailwind theme tokens for colors and spacing instead of arbitrary values like [13px].",
                "Arbitrary values drift from the design system.",
                "Add a token to tailwind.config.ts if one is missing."])),
        pair(R, "migrations: show SQL before running; reversible pairs",
            en(["show-sql-before-migrating", "Show the SQL before asking to run a migration",
                "When asking to run a migration, show the generated SQL first.",
                "I want to check for table rewrites.",
                "sqlx migrate info and the file contents."]),
            en(["reversible-migrations", "Migrations come in reversible up/down pairs",
                "Write every migration as a reversible up/down pair.",
                "Rollbacks during incidents must be fast.",
                "Test the down migration locally."])),
        pair(R, "pinned dependencies: read the changelog; bumps via Renovate",
            en(["read-changelog-before-bump", "Read the changelog before bumping a pinned dependency",
                "Before bumping a pinned dependency, read its changelog for breaking changes.",
                "A minor bump of axum changed extractor order.",
                "Link the changelog in the PR."]),
            en(["renovate-bumps", "Dependency bumps go through Renovate PRs",
                "Dependency version bumps go through Renovate pull requests, one package per PR.",
                "Batched bumps are impossible to bisect.",
                "Don't bump by hand unless it's a security fix."])),
        pair(R, "tracing: spans with request ids; structured fields",
            en(["request-id-span-field", "Add a span per handler with the request id",
                "Give every request handler a tracing span with the request id as a field.",
                "Lets me follow one request across services in the logs.",
                "#[tracing::instrument(fields(request_id))]"]),
            en(["structured-log-fields", "Log with structured fields, not formatted strings",
                "Log with structured tracing fields (user_id = %id) instead of formatting values into the message.",
                "The log pipeline indexes fields.",
                "tracing::info!(user_id = %id, \"login\")"])),
        pair(R, "snake_case database columns; lower snake_case SQL identifiers",
            en(["db-columns-snake-case", "Database columns are snake_case",
                "Name database columns and tables in snake_case.",
                "Postgres folds unquoted identifiers to lower case.",
                "created_at, not createdAt."]),
            en(["sql-identifiers-lowercase", "SQL identifiers are lower snake_case",
                "Use lower snake_case for all SQL identifiers; never quote identifiers.",
                "Quoted mixed-case names need quoting forever.",
                "user_accounts, not \"UserAccounts\"."])),
        pair(R, "regression tests: naming; one per bug fix",
            en(["regression-test-names", "Name regression tests after the issue",
                "Name regression tests after the issue they cover, like issue_1234_empty_body.",
                "Makes it obvious why the test exists.",
                "Link the issue in a comment."]),
            en(["regression-test-per-bug", "Every bug fix comes with a regression test",
                "Every bug fix comes with a regression test.",
                "Fixed bugs came back twice.",
                "Put it next to the code it covers."])),
        pair(R, "English: British spelling in replies; comments and docs in English",
            en(["british-spelling", "Use British English spelling in replies",
                "Use British English spelling in your replies (colour, behaviour).",
                "Our docs and customers are UK-based.",
                "Code identifiers keep their US spelling."]),
            en(["english-in-code-comments", "Code comments and docs are written in English",
                "Write code comments and docs in English.",
                "The team spans four countries.",
                "Translate quotes from tickets."])),
        pair(R, "UUIDs: v7 when ordered; opaque in the API",
            en(["uuid-v7-when-ordered", "Generate UUIDs in the app; v7 when ordering matters",
                "Generate UUIDs in the application, and use v7 when rows need to sort by creation time.",
                "v4 keys fragment the index.",
                "uuid::Uuid::now_v7()."]),
            en(["ids-opaque-in-api", "IDs (UUIDs) are opaque strings in the API",
                "Expose IDs (UUIDs) in the API as opaque strings; clients must not parse them.",
                "We changed the ID format once already.",
                "Document them as type: string."])),
        pair(R, "e2e specs: run the affected ones locally; where they live",
            en(["affected-e2e-specs-locally", "Run only affected e2e specs locally",
                "Run only the affected e2e specs locally while iterating.",
                "The full suite takes 25 minutes.",
                "pnpm e2e --grep <area>."]),
            en(["e2e-specs-in-e2e-dir", "e2e specs live under e2e/ and use Playwright",
                "End-to-end specs live under e2e/ and use Playwright.",
                "One runner, one place.",
                "npx playwright test."])),
        pair(R, "blocking work: spawn_blocking for CPU-heavy work; never block the runtime",
            en(["spawn-blocking-cpu-work", "Use spawn_blocking for CPU-heavy work",
                "Use tokio::task::spawn_blocking for CPU-heavy work like hashing.",
                "Hashing on the runtime stalled every other request.",
                "Wrap argon2 calls."]),
            en(["no-blocking-in-async", "Never block the async runtime",
                "Never call blocking I/O or heavy computation directly in async functions.",
                "One blocking call stalls all tasks on that worker.",
                "Move it to spawn_blocking or a dedicated thread."])),
        pair(R, "feature flags: naming; default off",
            en(["flag-naming-prefix", "Prefix feature flag names with the team",
                "Prefix feature flag names with the owning team, like payments.new_checkout.",
                "Finding owners of stale flags took days.",
                "Register them in flags.yaml."]),
            en(["flags-default-off", "New feature flags default to off",
                "New feature flags default to off in production.",
                "A default-on flag shipped an unfinished page.",
                "Turn it on per environment in the admin UI."])),
        pair(R, "commit messages: imperative subject; body explains why",
            en(["commit-subject-72", "Commit subjects are imperative and under 72 characters",
                "Write commit subjects in the imperative mood, under 72 characters.",
                "git log --oneline stays readable.",
                "'Fix race in cache eviction', not 'Fixed…'."]),
            en(["commit-body-explains-why", "Commit bodies explain why, not what",
                "Commit message bodies explain why the change was made; the diff shows what.",
                "Blame is useless without the why.",
                "Wrap the body at 72 columns."])),
        pair(R, "force-with-lease on your PR branch; never force-push others' branches",
            en(["force-with-lease-on-pr-branch", "Use --force-with-lease when updating your PR branch",
                "When updating your PR branch after a rebase, use --force-with-lease, never plain --force.",
                "It refuses to overwrite commits a reviewer pushed.",
                "git push --force-with-lease."]),
            en(["dont-force-push-others-branches", "Never force-push a branch someone else pushed to",
                "Never force-push a branch someone else has pushed to.",
                "It silently drops their commits.",
                "Coordinate in the PR first."])),

        // ---------------------------------------------------------------------------------
        // Related: opposite directives, different scopes.
        // ---------------------------------------------------------------------------------
        pair(R, "force-push: your own feature branch vs shared branches",
            en(["force-push-own-branch", "Force-push your own feature branch freely",
                "Force-pushing your own feature branch is fine, especially after a rebase.",
                "Keeps the PR history tidy.",
                "Nobody else should be pushing to it."]),
            en(["no-force-push-shared-branches", "Never force-push shared branches",
                "Never force-push shared branches (main, develop, release/*).",
                "We lost a day of work to a force-push on develop.",
                "Use git revert."])),
        pair(R, "timezone: local time in the UI vs UTC in logs",
            en(["local-time-in-ui", "Show times to users in their local timezone",
                "Show times in the UI in the user's local timezone.",
                "Customers complained about UTC times in the dashboard.",
                "Intl.DateTimeFormat with the browser's zone."]),
            en(["logs-in-utc", "Logs use UTC",
                "Log lines use UTC timestamps.",
                "Correlating across regions.",
                "Never configure local time in the log formatter."])),
        pair(R, "database: mocked in unit tests vs real in integration tests",
            en(["mock-db-in-unit-tests", "Mock the database in unit tests",
                "Mock the database in unit tests; keep them fast.",
                "Unit tests should run in milliseconds.",
                "Use the Repo trait with an in-memory fake."]),
            en(["integration-tests-real-postgres", "Integration tests use a real Postgres",
                "Integration tests must talk to a real Postgres, never a mock.",
                "Mocks hid a broken migration.",
                "scripts/test-db starts one."])),
        pair(R, "unwrap(): fine in tests vs never in library code",
            en(["unwrap-fine-in-tests", "unwrap() is fine in tests",
                "unwrap() is fine in tests and examples.",
                "A panic with a line number is the best test failure.",
                "No need for expect messages everywhere."]),
            en(["no-unwrap-in-library-code", "Library code never calls unwrap()",
                "Library code never calls unwrap(); propagate errors with ?.",
                "A panic in a library is a crash in every caller.",
                "clippy::unwrap_used is denied in lib crates."])),
        pair(R, "naming: kebab-case file names vs camelCase variables and functions",
            en(["kebab-case-file-names", "Use kebab-case for file names",
                "Use kebab-case for file names in the frontend, like user-profile.tsx.",
                "Case-insensitive file systems broke imports.",
                "Rename with git mv."]),
            en(["camelcase-variables-functions", "JS variables and functions are camelCase",
                "Use camelCase for JavaScript variables and functions.",
                "Matches the standard library.",
                "ESLint enforces it."])),
        pair(R, "indentation: 2 spaces in YAML vs tabs in Go",
            en(["two-space-yaml", "Indent YAML with 2 spaces",
                "Indent YAML files with 2 spaces.",
                "Kubernetes examples all use 2.",
                "Set it in .editorconfig."]).form(Form::RuleOnly),
            en(["gofmt-tabs", "Go code is indented with tabs (gofmt)",
                "Go code is indented with tabs; always run gofmt.",
                "gofmt is not negotiable.",
                "Editors: format on save."])),
        pair(R, "colors and emoji: in CLI output for humans vs not in logs",
            en(["colors-in-cli-output", "Use colors and emoji in CLI output",
                "Use colors and emoji in CLI output meant for humans.",
                "It makes status easy to scan.",
                "owo-colors, and respect NO_COLOR."]),
            en(["plain-json-logs", "Logs are plain JSON, no colors",
                "Logs are single-line JSON with no ANSI colors or emoji.",
                "The log pipeline can't parse escape codes.",
                "The subscriber sets with_ansi(false)."])),
        pair(R, "e2e: don't run locally vs must pass in CI",
            en(["skip-e2e-locally", "Skip e2e locally; unit tests are enough while iterating",
                "Don't run the e2e suite locally; unit tests are enough while iterating.",
                "e2e needs the full docker stack.",
                "Let CI run it."]),
            en(["ci-e2e-required", "The e2e job in CI is required for merging",
                "The e2e suite must pass in CI before merging.",
                "It's the only test of the real deploy topology.",
                "Don't mark the job optional."])),
        pair(R, "indentation width: 4 in backend Rust vs 2 in the frontend",
            en(["four-space-rust", "Rust backend code uses 4-space indentation",
                "Backend Rust code uses 4-space indentation (rustfmt default).",
                "It's what rustfmt does.",
                "Don't add tab_spaces to rustfmt.toml."]),
            en(["two-space-frontend", "Frontend code uses 2-space indentation",
                "Frontend code is indented with 2 spaces.",
                "Prettier default.",
                "Format on save."])),
        pair(R, "timezone: local in the frontend display vs UTC in the database",
            en(["display-dates-local", "Display dates in the viewer's local time",
                "Display dates in the viewer's local timezone on the frontend.",
                "Support tickets about 'wrong' times.",
                "date-fns-tz."]),
            en(["store-timestamps-utc", "Store timestamps in UTC",
                "Store all timestamps in UTC in the database.",
                "Daylight saving broke our billing jobs.",
                "timestamptz columns."])),
        pair(R, "function naming by language: snake_case in Python vs camelCase in TypeScript",
            en(["python-snake-functions", "Python function names are snake_case",
                "Name Python functions in snake_case.",
                "PEP 8.",
                "ruff enforces N802."]),
            en(["ts-camel-functions", "TypeScript function names are camelCase",
                "TypeScript functions are named in camelCase.",
                "Ecosystem convention.",
                "ESLint naming-convention rule."])),
        pair(R, "committing directly: your own branch vs main",
            en(["commit-directly-to-own-branch", "Commit directly to your own feature branch; no PR needed until it's ready",
                "Commit directly to your own feature branch; a PR isn't needed until it's ready for review.",
                "Draft PRs for every experiment are noise.",
                "Open the PR when tests pass."]),
            en(["no-direct-commits-to-main", "Never commit directly to main; open a PR",
                "Never commit directly to main; every change goes through a pull request.",
                "Direct commits skipped CI.",
                "Branch protection enforces it."])),
        pair(R, "print debugging: fine in tests vs not in production code",
            en(["print-debugging-in-tests", "print() debugging is fine in tests",
                "print() debugging is fine inside tests while you investigate.",
                "pytest -s shows it.",
                "Remove before merging if noisy."]),
            en(["no-print-in-production", "No print statements in production code",
                "No print statements in production code; use the logger.",
                "Prints bypass log levels and redaction.",
                "logger = logging.getLogger(__name__)"])),
        pair(R, "`any`: ok in test fixtures vs not in application code",
            en(["any-ok-in-test-fixtures", "`any` is OK in test fixtures",
                "`any` is OK in test fixtures and mocks.",
                "Typing every fixture precisely is busywork.",
                "Keep it out of src/."]),
            en(["no-any-in-app-code", "No `any` in TypeScript application code",
                "Don't use `any` in TypeScript application code; use unknown and narrow.",
                "any disabled type checking on a payment path.",
                "eslint no-explicit-any is an error."])),
        pair(R, "rebase: your own branch vs shared branches",
            en(["rebase-own-branch-onto-main", "Rebase your own branch onto main before review",
                "Rebase your own branch onto main before asking for review.",
                "Reviewers see only your changes.",
                "git fetch && git rebase origin/main."]),
            en(["no-rebase-shared-branches", "Never rebase shared branches",
                "Never rebase a shared branch like develop or a release branch.",
                "Rewriting shared history breaks everyone's checkout.",
                "Merge instead."])),

        // ---------------------------------------------------------------------------------
        // Unrelated pairs; several share a word on purpose.
        // ---------------------------------------------------------------------------------
        pair(N, "unrelated: search tool vs changelog",
            en(["rg-over-grep", "Use rg instead of grep",
                "Use rg instead of grep when searching the repo.",
                "Respects .gitignore, much faster.",
                "rg -n pattern."]),
            en(["changelog-entry", "User-visible changes need a CHANGELOG entry",
                "Add a CHANGELOG.md entry for every user-visible change.",
                "Release notes are built from it.",
                "Under ## Unreleased."])),
        pair(N, "unrelated, shares 'commit': .env files vs the OpenAPI spec",
            en(["never-commit-env-files", "Never commit .env files",
                "Never commit .env files.",
                "Secrets leak.",
                "Use .env.example for placeholders."]),
            en(["commit-generated-openapi", "Commit the regenerated OpenAPI spec with API changes",
                "Commit the regenerated openapi.yaml together with any API change.",
                "The spec test compares it with the routes.",
                "cargo run --bin gen-openapi."])),
        pair(N, "unrelated, shares 'keep … short': answers vs functions",
            en(["keep-answers-short", "Keep answers short",
                "Keep your answers short.",
                "I skim.",
                "Bullets over paragraphs."]),
            en(["short-functions", "Keep functions short",
                "Keep functions under 50 lines.",
                "Long functions hide bugs.",
                "Extract helpers."])),
        pair(N, "unrelated, shares 'docs': test suite for docs changes vs where docs live",
            en(["no-full-suite-for-docs", "Skip the full test suite for docs-only changes",
                "Don't run the full test suite for docs-only changes.",
                "It takes 20 minutes and tests nothing relevant.",
                "Run markdownlint instead."]),
            en(["docs-in-markdown", "Docs are Markdown under docs/",
                "Write documentation in Markdown under docs/.",
                "Rendered by mkdocs.",
                "One page per topic."])),
        pair(N, "unrelated: early returns vs one component per file",
            en(["early-returns", "Prefer early returns over nested ifs",
                "Prefer early returns over deeply nested if blocks.",
                "Flatter code is easier to follow.",
                "Guard clauses at the top."]),
            en(["one-component-per-file", "One React component per file",
                "Put one React component per file.",
                "Easier to find.",
                "Name the file after the component."])),
        pair(N, "unrelated, shares 'mock … in tests': time vs external HTTP",
            en(["dont-mock-time", "Don't mock time in tests; inject a clock",
                "Don't mock time in tests; inject a Clock instead.",
                "Global time mocks leaked between tests.",
                "Pass &dyn Clock."]),
            en(["mock-http-with-wiremock", "Mock external HTTP services in tests with wiremock",
                "Mock external HTTP services in tests with wiremock.",
                "Third-party sandboxes are flaky.",
                "One MockServer per test."])),
        pair(N, "unrelated, shares 'squash': database migrations vs API versions",
            en(["no-squash-migrations", "Don't squash old database migrations",
                "Don't squash old database migrations into one file.",
                "Deployed databases track each migration by name.",
                "Leave them as they are."]),
            en(["api-versioning", "Breaking API changes need a new version prefix",
                "Breaking API changes go under a new /v2 prefix.",
                "Clients pin to /v1.",
                "Keep /v1 for 12 months."])),
        pair(N, "unrelated, shares 'spaces'/'tabs': file names vs Makefiles",
            en(["no-spaces-in-filenames", "No spaces in file names",
                "Never put spaces in file names.",
                "Shell scripts break.",
                "Use dashes."]),
            en(["makefile-tabs", "Makefile recipes are indented with tabs",
                "Makefile recipes must be indented with tabs.",
                "make requires it.",
                "Check your editor doesn't expand them."])),
        pair(N, "unrelated, shares 'real … not mocks' and 'test': Stripe test mode vs branch names",
            en(["real-stripe-test-mode", "Use Stripe test mode, not mocks, for payment tests",
                "Payment tests use Stripe's real test mode, not mocks.",
                "Mocks drifted from Stripe's API.",
                "STRIPE_TEST_KEY from 1Password."]),
            en(["feature-branch-naming", "Branch names are type/short-description",
                "Name branches like feat/short-description or fix/issue-123.",
                "Automation parses the prefix.",
                "Lowercase, dashes."])),
        pair(N, "unrelated, shares 'comment': explain regexes vs commented-out code",
            en(["explain-regexes", "Explain non-obvious regexes in a comment",
                "Add a comment explaining any non-obvious regex.",
                "Nobody can read them a month later.",
                "Include an example match."]),
            en(["no-commented-out-code", "Don't leave commented-out code",
                "Delete commented-out code instead of leaving it in.",
                "Git remembers it.",
                "Reference the commit if needed."])),
        pair(N, "unrelated: asking before deleting files vs HTTP timeouts",
            en(["ask-before-deleting-files", "Ask before deleting files",
                "Ask me before deleting any file you didn't create.",
                "An agent removed my scratch notes.",
                "List them and wait."]),
            en(["timeouts-on-http-calls", "Every outbound HTTP call has a timeout",
                "Every outbound HTTP call must set a timeout.",
                "A hung upstream exhausted the pool.",
                "reqwest::Client::builder().timeout(…)."])),
        pair(N, "unrelated, shares 'editor config': Neovim vs .editorconfig",
            en(["assume-neovim", "Assume Neovim when suggesting editor config",
                "When suggesting editor config, assume Neovim with lazy.nvim.",
                "That's my setup.",
                "Lua snippets, not VS Code JSON."]).form(Form::Metadata),
            en(["editorconfig-in-sync", "Keep .editorconfig in sync with the formatters",
                "Keep .editorconfig in sync with the formatter settings.",
                "Editors and CI must agree.",
                "Update it with rustfmt.toml or .prettierrc changes."]).form(Form::Crlf)),

        // ---------------------------------------------------------------------------------
        // Other languages.
        // ---------------------------------------------------------------------------------
        pair(C, "zh: mock vs real database in integration tests",
            zh(["zh-mock-db-integration", "集成测试里可以直接 mock 数据库",
                "集成测试里可以直接 mock 数据库，速度快很多。",
                "真实数据库启动太慢。",
                "用 tests/support 里的内存实现。"]),
            zh(["zh-integration-real-db", "集成测试必须连接真实的数据库",
                "集成测试必须连接真实的数据库，不要使用 mock。",
                "mock 掩盖过一次迁移失败。",
                "用 scripts/test-db 启动 Postgres。"])),
        pair(R, "zh: commit messages in Chinese; Conventional Commits format",
            zh(["zh-commit-msg-chinese", "提交信息可以用中文写",
                "提交信息可以用中文写。",
                "团队都是中文母语。",
                "标题简短即可。"]),
            zh(["zh-conventional-commits", "提交信息遵循 Conventional Commits 格式",
                "提交信息遵循 Conventional Commits 格式，例如 feat: 和 fix:。",
                "changelog 由提交信息自动生成。",
                "破坏性变更加 !。"])),
        pair(C, "ja: tabs vs 2 spaces",
            ja(["ja-tabs-indent", "インデントはタブを使う",
                "インデントにはタブを使う。",
                "幅を各自で調整できるから。",
                "エディタの設定で useTabs を有効にする。"]),
            ja(["ja-two-space-indent", "インデントはスペース2つ",
                "インデントはスペース2つ。タブは使わないこと。",
                "Prettier の設定と揃えるため。",
                "エディタの自動整形に任せる。"])),
        pair(R, "ja: UTC in logs vs local time on screen (different scopes)",
            ja(["ja-utc-logs", "ログのタイムスタンプは UTC で出力する",
                "ログのタイムスタンプは UTC で出力する。",
                "複数リージョンのログを突き合わせるため。",
                "tracing の設定で UtcTime を使う。"]),
            ja(["ja-local-time-display", "画面に表示する時刻はローカル時間にする",
                "画面に表示する時刻はユーザーのローカル時間にする。",
                "UTC 表示は問い合わせが多かった。",
                "Intl.DateTimeFormat を使う。"])),
        pair(C, "de: npm vs pnpm only",
            de(["de-npm-for-packages", "Neue Pakete mit npm installieren",
                "Verwende npm für neue Pakete.",
                "Das kenne ich am besten.",
                "npm install <paket> im web-Ordner."]),
            de(["de-pnpm-only", "Wir nutzen ausschließlich pnpm",
                "Wir nutzen ausschließlich pnpm; npm install ist verboten.",
                "npm hat die Workspace-Links zerstört.",
                "pnpm add <paket> --filter <workspace>."])),
        pair(C, "de vs en: commit messages in German vs in English",
            de(["de-commit-messages-german", "Commit-Nachrichten auf Deutsch",
                "Schreibe Commit-Nachrichten auf Deutsch.",
                "Das Team in Berlin liest sie.",
                "Betreff im Imperativ."]),
            en(["commit-messages-english", "Commit messages are written in English",
                "Commit messages must be written in English.",
                "Contributors from five countries read the log.",
                "Translate ticket titles."])),
        pair(C, "es: never squash vs always squash",
            es(["es-no-squash", "No hagas squash al fusionar PRs",
                "Nunca hagas squash de los commits al fusionar un PR; usa merge commits.",
                "Quiero conservar el historial completo.",
                "Botón 'Create a merge commit'."]),
            es(["es-squash-siempre", "Los PR se fusionan siempre con squash",
                "Los PR se fusionan siempre con squash.",
                "Un commit por cambio en main.",
                "Usa 'Squash and merge'."])),
        pair(N, "es: reply in Spanish vs reversible migrations",
            es(["es-responde-espanol", "Responde siempre en español",
                "Responde siempre en español.",
                "Es mi idioma.",
                "El código sigue en inglés."]),
            es(["es-migraciones-reversibles", "Las migraciones deben ser reversibles",
                "Cada migración debe tener su down.",
                "Los rollbacks en incidentes tienen que ser rápidos.",
                "Prueba el down en local."])),
        pair(C, "fr vs en: log timestamps in local time vs UTC",
            fr(["fr-heure-locale-logs", "Horodatages des logs en heure locale",
                "Les horodatages des logs doivent être en heure locale.",
                "Plus simple pour déboguer.",
                "chrono::Local."]),
            en(["log-times-utc-z", "Log timestamps are UTC with a Z suffix",
                "Every log timestamp is UTC, written with a Z suffix.",
                "Our log search assumes UTC.",
                "Configured once in telemetry.rs."])),
        pair(R, "zh: mock in unit tests vs real database in integration tests",
            zh(["zh-unit-test-mock-db", "单元测试里可以 mock 数据库",
                "单元测试里可以 mock 数据库。",
                "单元测试要快。",
                "用 Repo trait 的内存实现。"]),
            zh(["zh-integration-tests-real-db-2", "集成测试必须连接真实数据库",
                "集成测试必须连接真实数据库。",
                "mock 掩盖过迁移问题。",
                "scripts/test-db。"])),
        pair(N, "ja: reply in Japanese vs HTTP timeouts",
            ja(["ja-reply-in-japanese", "返答は日本語で",
                "返答は日本語でお願いします。",
                "英語だと読むのに時間がかかる。",
                "コードのコメントは英語のままでよい。"]),
            ja(["ja-http-timeout", "外部 HTTP 呼び出しには必ずタイムアウトを設定する",
                "外部 HTTP 呼び出しには必ずタイムアウトを設定すること。",
                "上流が固まって接続プールが枯渇した。",
                "reqwest の timeout を使う。"])),
        pair(C, "ko vs en: don't run cargo fmt (CI does) vs run it before every push",
            ko(["ko-no-cargo-fmt", "cargo fmt 는 직접 실행하지 마세요",
                "cargo fmt 는 직접 실행하지 마세요. CI가 처리합니다.",
                "로컬 포맷 때문에 diff 가 커졌습니다.",
                "CI 결과를 확인하세요."]),
            en(["run-cargo-fmt-before-push", "Run cargo fmt before every push",
                "Run cargo fmt before every push.",
                "CI rejects unformatted code and the round trip wastes 10 minutes.",
                "Format on save also works."])),
        pair(C, "ja vs en: rebase-merge, no merge commits vs always merge commits",
            ja(["ja-rebase-no-merge-commit", "PR は rebase してからマージし、マージコミットは作らない",
                "PR は rebase してからマージする。マージコミットは作らない。",
                "履歴を一直線に保ちたい。",
                "GitHub の Rebase and merge を使う。"]),
            en(["merge-commits-keep-history", "PRs are merged with merge commits",
                "Always merge PRs with a merge commit so the branch history is kept.",
                "We bisect by PR.",
                "Never use rebase-and-merge on this repo."])),
        pair(C, "zh vs en: npm, not pnpm vs pnpm, npm not allowed",
            zh(["zh-npm-not-pnpm", "安装依赖用 npm，不要用 pnpm",
                "安装依赖用 npm，不要用 pnpm。",
                "npm 最熟悉。",
                "npm install。"]),
            en(["pnpm-everything-no-npm", "Use pnpm for everything; npm is not allowed",
                "Use pnpm for everything; npm is not allowed.",
                "Mixed lockfiles broke the build twice.",
                "pnpm install, pnpm add."])),
        pair(R, "de: mocked database allowed in unit tests vs real one in integration tests",
            de(["de-unit-tests-mock-db", "In Unit-Tests darf die Datenbank gemockt werden",
                "In Unit-Tests darf die Datenbank gemockt werden.",
                "Unit-Tests sollen schnell bleiben.",
                "Repo-Trait mit In-Memory-Implementierung."]),
            de(["de-integration-real-db", "Integrationstests laufen gegen eine echte Datenbank",
                "Integrationstests müssen gegen eine echte Datenbank laufen.",
                "Mocks haben eine kaputte Migration versteckt.",
                "scripts/test-db startet Postgres."])),
        pair(R, "es: pnpm with --frozen-lockfile in CI; the monorepo uses pnpm",
            es(["es-pnpm-frozen-ci", "En CI usa pnpm con --frozen-lockfile",
                "En CI, usa pnpm install --frozen-lockfile.",
                "Falla rápido si el lockfile está desactualizado.",
                "Igual en el Dockerfile."]),
            es(["es-pnpm-workspaces", "El monorepo usa pnpm",
                "El monorepo usa pnpm para todos los paquetes.",
                "Los paquetes compartidos se enlazan sin publicar.",
                "pnpm -r build."])),
    ]
}

/// The labeled pairs.
pub fn pairs() -> Vec<Pair> {
    table()
        .into_iter()
        .map(|(p, t, expected, note)| Pair {
            private: p.render(),
            team: t.render(),
            expected,
            note,
        })
        .collect()
}

/// Memories in the sets that belong to no pair: they must produce no finding at all (not
/// feedback, or not parseable).
/// Memories of one side: (path relative to its dir, text).
pub type MemorySet = Vec<(String, String)>;

fn extras() -> (MemorySet, MemorySet) {
    let private = vec![
        (
            "user-role.md".to_owned(),
            "---\nname: user-role\ndescription: who I am\ntype: user\n---\nI'm a backend engineer; never use npm, always pnpm.\n".to_owned(),
        ),
        (
            "broken.md".to_owned(),
            "---\nname: broken\ndescription: [unclosed\ntype: feedback\n---\nMock the database in integration tests.\n".to_owned(),
        ),
    ];
    let team = vec![
        (
            "web-stack.md".to_owned(),
            "---\nname: web-stack\ndescription: the web app's tooling\ntype: project\n---\nThe web app uses npm and Jest; tabs for indentation.\n".to_owned(),
        ),
        (
            "no-frontmatter.md".to_owned(),
            "Integration tests must never hit a real database.\n".to_owned(),
        ),
    ];
    (private, team)
}

fn path_of(text: &str) -> String {
    let name = memsync_core::MemoryDoc::parse(text)
        .ok()
        .and_then(|d| d.name().map(str::to_owned))
        .unwrap_or_else(|| "unnamed".to_owned());
    format!("{name}.md")
}

/// The private side of every pair (path, text), then the extras.
pub fn private_set() -> MemorySet {
    let mut out: MemorySet = pairs()
        .into_iter()
        .map(|p| (path_of(&p.private), p.private))
        .collect();
    out.extend(extras().0);
    out
}

/// The team side of every pair (path, text), then the extras.
pub fn team_set() -> MemorySet {
    let mut out: MemorySet = pairs()
        .into_iter()
        .map(|p| (path_of(&p.team), p.team))
        .collect();
    out.extend(extras().1);
    out
}

/// Labels for pairs of memories from different pairs that really are about the same subject:
/// (private path, team path, kind, why).
pub fn cross_labels() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    CROSS.to_vec()
}

const CROSS: &[(&str, &str, &str, &str)] = &[
    // Contradictions between memories of different pairs, enumerated per topic group from the
    // texts (not from the checker's output).
    (
        "zh-mock-db-integration.md",
        "integration-tests-real-db.md",
        "contradiction",
        "mocked vs real database in integration tests",
    ),
    (
        "mock-db-in-integration-tests.md",
        "integration-tests-hit-postgres.md",
        "contradiction",
        "mocked vs real database in integration tests",
    ),
    (
        "zh-mock-db-integration.md",
        "integration-tests-hit-postgres.md",
        "contradiction",
        "mocked vs real database in integration tests",
    ),
    (
        "mock-db-in-integration-tests.md",
        "integration-tests-real-postgres.md",
        "contradiction",
        "mocked vs real database in integration tests",
    ),
    (
        "zh-mock-db-integration.md",
        "integration-tests-real-postgres.md",
        "contradiction",
        "mocked vs real database in integration tests",
    ),
    (
        "mock-db-in-integration-tests.md",
        "zh-integration-real-db.md",
        "contradiction",
        "mocked vs real database in integration tests",
    ),
    (
        "mock-db-in-integration-tests.md",
        "zh-integration-tests-real-db-2.md",
        "contradiction",
        "mocked vs real database in integration tests",
    ),
    (
        "zh-mock-db-integration.md",
        "zh-integration-tests-real-db-2.md",
        "contradiction",
        "mocked vs real database in integration tests",
    ),
    (
        "mock-db-in-integration-tests.md",
        "de-integration-real-db.md",
        "contradiction",
        "mocked vs real database in integration tests",
    ),
    (
        "zh-mock-db-integration.md",
        "de-integration-real-db.md",
        "contradiction",
        "mocked vs real database in integration tests",
    ),
    (
        "use-npm-for-installs.md",
        "workspace-uses-pnpm.md",
        "contradiction",
        "npm vs pnpm for installing packages",
    ),
    (
        "use-npm-for-installs.md",
        "de-pnpm-only.md",
        "contradiction",
        "npm vs pnpm for installing packages",
    ),
    (
        "use-npm-for-installs.md",
        "pnpm-everything-no-npm.md",
        "contradiction",
        "npm vs pnpm for installing packages",
    ),
    (
        "use-npm-for-installs.md",
        "es-pnpm-workspaces.md",
        "contradiction",
        "npm vs pnpm for installing packages",
    ),
    (
        "de-npm-for-packages.md",
        "pnpm-only.md",
        "contradiction",
        "npm vs pnpm for installing packages",
    ),
    (
        "de-npm-for-packages.md",
        "workspace-uses-pnpm.md",
        "contradiction",
        "npm vs pnpm for installing packages",
    ),
    (
        "de-npm-for-packages.md",
        "pnpm-everything-no-npm.md",
        "contradiction",
        "npm vs pnpm for installing packages",
    ),
    (
        "de-npm-for-packages.md",
        "es-pnpm-workspaces.md",
        "contradiction",
        "npm vs pnpm for installing packages",
    ),
    (
        "zh-npm-not-pnpm.md",
        "pnpm-only.md",
        "contradiction",
        "npm vs pnpm for installing packages",
    ),
    (
        "zh-npm-not-pnpm.md",
        "workspace-uses-pnpm.md",
        "contradiction",
        "npm vs pnpm for installing packages",
    ),
    (
        "zh-npm-not-pnpm.md",
        "de-pnpm-only.md",
        "contradiction",
        "npm vs pnpm for installing packages",
    ),
    (
        "zh-npm-not-pnpm.md",
        "es-pnpm-workspaces.md",
        "contradiction",
        "npm vs pnpm for installing packages",
    ),
    (
        "merge-commits-for-prs.md",
        "pr-titles-imperative.md",
        "contradiction",
        "opposite merge strategies (a team rule that PR titles become the squash commit subject presupposes squash merges)",
    ),
    (
        "merge-commits-for-prs.md",
        "es-squash-siempre.md",
        "contradiction",
        "opposite merge strategies (a team rule that PR titles become the squash commit subject presupposes squash merges)",
    ),
    (
        "es-no-squash.md",
        "squash-merge-prs.md",
        "contradiction",
        "opposite merge strategies (a team rule that PR titles become the squash commit subject presupposes squash merges)",
    ),
    (
        "es-no-squash.md",
        "pr-titles-imperative.md",
        "contradiction",
        "opposite merge strategies (a team rule that PR titles become the squash commit subject presupposes squash merges)",
    ),
    (
        "ja-rebase-no-merge-commit.md",
        "squash-merge-prs.md",
        "contradiction",
        "opposite merge strategies (a team rule that PR titles become the squash commit subject presupposes squash merges)",
    ),
    (
        "ja-rebase-no-merge-commit.md",
        "pr-titles-imperative.md",
        "contradiction",
        "opposite merge strategies (a team rule that PR titles become the squash commit subject presupposes squash merges)",
    ),
    (
        "ja-rebase-no-merge-commit.md",
        "es-squash-siempre.md",
        "contradiction",
        "opposite merge strategies (a team rule that PR titles become the squash commit subject presupposes squash merges)",
    ),
    (
        "force-push-main-after-bad-merge.md",
        "no-force-push-shared-branches.md",
        "contradiction",
        "force-pushing main, a shared branch: fine vs never",
    ),
    (
        "force-push-main-after-bad-merge.md",
        "dont-force-push-others-branches.md",
        "contradiction",
        "force-pushing main, a shared branch: fine vs never",
    ),
    (
        "local-time-in-logs.md",
        "log-timestamp-field.md",
        "contradiction",
        "log timestamps: local time vs UTC",
    ),
    (
        "local-time-in-logs.md",
        "logs-in-utc.md",
        "contradiction",
        "log timestamps: local time vs UTC",
    ),
    (
        "local-time-in-logs.md",
        "log-times-utc-z.md",
        "contradiction",
        "log timestamps: local time vs UTC",
    ),
    (
        "fr-heure-locale-logs.md",
        "utc-log-timestamps.md",
        "contradiction",
        "log timestamps: local time vs UTC",
    ),
    (
        "fr-heure-locale-logs.md",
        "log-timestamp-field.md",
        "contradiction",
        "log timestamps: local time vs UTC",
    ),
    (
        "fr-heure-locale-logs.md",
        "logs-in-utc.md",
        "contradiction",
        "log timestamps: local time vs UTC",
    ),
    (
        "es-responde-espanol.md",
        "agent-responses-english.md",
        "contradiction",
        "replies: Spanish vs English",
    ),
    (
        "ja-reply-in-japanese.md",
        "agent-responses-english.md",
        "contradiction",
        "replies: Japanese vs English",
    ),
    (
        "zh-commit-msg-chinese.md",
        "commit-messages-english.md",
        "contradiction",
        "commit messages: Chinese allowed vs English required",
    ),
    (
        "tabs-in-typescript.md",
        "ja-two-space-indent.md",
        "contradiction",
        "indentation: a general rule against a scoped one it contradicts",
    ),
    (
        "tabs-in-typescript.md",
        "two-space-frontend.md",
        "contradiction",
        "indentation: a general rule against a scoped one it contradicts",
    ),
    (
        "ja-tabs-indent.md",
        "ts-two-space-indent.md",
        "contradiction",
        "indentation: a general rule against a scoped one it contradicts",
    ),
    (
        "ja-tabs-indent.md",
        "two-space-frontend.md",
        "contradiction",
        "indentation: a general rule against a scoped one it contradicts",
    ),
    (
        "four-space-rust.md",
        "ja-two-space-indent.md",
        "contradiction",
        "indentation: a general rule against a scoped one it contradicts",
    ),
    (
        "unwrap-ok-when-infallible.md",
        "no-unwrap-in-library-code.md",
        "contradiction",
        "unwrap() in library code: fine vs never",
    ),
    (
        "unwrap-ok-when-infallible.md",
        "no-panics-in-request-handlers.md",
        "contradiction",
        "unwrap() in production code: fine when infallible vs never in request handlers",
    ),
    (
        "no-cargo-fmt-on-untouched.md",
        "run-cargo-fmt-before-push.md",
        "contradiction",
        "cargo fmt on everything: don't vs before every push",
    ),
    (
        "ko-no-cargo-fmt.md",
        "cargo-fmt-all-before-commit.md",
        "contradiction",
        "cargo fmt: don't run it vs always run it",
    ),
    (
        "plain-commit-messages.md",
        "conventional-commit-format.md",
        "contradiction",
        "conventional commit prefixes: don't bother vs follow",
    ),
    (
        "plain-commit-messages.md",
        "zh-conventional-commits.md",
        "contradiction",
        "conventional commit prefixes: don't bother vs follow",
    ),
    (
        "leave-console-logs.md",
        "no-print-in-production.md",
        "contradiction",
        "debug prints left in the code vs none in production code",
    ),
    (
        "println-diagnostics.md",
        "no-print-in-production.md",
        "contradiction",
        "println! in server code vs no print statements in production code",
    ),
    (
        "styled-components-new.md",
        "tailwind-config-tokens.md",
        "contradiction",
        "styling: styled-components vs Tailwind",
    ),
    (
        "serial-ids-new-tables.md",
        "ids-opaque-in-api.md",
        "contradiction",
        "ids: bigserial integers vs UUIDs",
    ),
    (
        "skip-e2e-in-ci.md",
        "ci-e2e-required.md",
        "contradiction",
        "e2e in CI: skip vs must pass",
    ),
    // Related memories of different pairs, found by reviewing every `related` finding between
    // different pairs and judging each by hand (three judged spurious are in EXPLAINED). Related
    // cross pairs the checker does not report were not hunted for: this part measures the
    // precision of `related`, not its recall.
    (
        "merge-commits-for-prs.md",
        "keep-commits-in-pr.md",
        "related",
        "how pull requests are merged",
    ),
    (
        "merge-commits-for-prs.md",
        "merge-commits-keep-history.md",
        "related",
        "how pull requests are merged",
    ),
    (
        "tabs-in-typescript.md",
        "gofmt-tabs.md",
        "related",
        "indentation",
    ),
    (
        "tabs-in-typescript.md",
        "makefile-tabs.md",
        "related",
        "indentation",
    ),
    (
        "camelcase-json-fields.md",
        "sql-identifiers-lowercase.md",
        "related",
        "naming conventions; different scopes",
    ),
    (
        "camelcase-json-fields.md",
        "camelcase-variables-functions.md",
        "related",
        "naming conventions",
    ),
    (
        "camelcase-json-fields.md",
        "ts-camel-functions.md",
        "related",
        "naming conventions",
    ),
    (
        "local-time-in-logs.md",
        "rfc3339-timestamps.md",
        "related",
        "times in UTC or local time; different scopes",
    ),
    (
        "local-time-in-logs.md",
        "store-timestamps-utc.md",
        "related",
        "times in UTC or local time; different scopes",
    ),
    (
        "local-time-in-logs.md",
        "ja-local-time-display.md",
        "related",
        "times in UTC or local time",
    ),
    (
        "80-column-lines.md",
        "pr-titles-imperative.md",
        "related",
        "line length; different scopes",
    ),
    (
        "skip-docstrings.md",
        "docstrings-on-public-api.md",
        "related",
        "docstrings; different scopes",
    ),
    (
        "gitmoji-commits.md",
        "plain-json-logs.md",
        "related",
        "emoji; different scopes",
    ),
    (
        "answer-in-german.md",
        "english-in-code-comments.md",
        "related",
        "which language to write in; different scopes",
    ),
    (
        "answer-in-german.md",
        "commit-messages-english.md",
        "related",
        "which language to write in; different scopes",
    ),
    (
        "leave-console-logs.md",
        "tracing-not-println.md",
        "related",
        "debug prints; different scopes",
    ),
    (
        "remove-flags-at-launch.md",
        "flags-default-off.md",
        "related",
        "feature flags",
    ),
    (
        "epoch-timestamps-api.md",
        "utc-log-timestamps.md",
        "related",
        "timestamp formats; different scopes",
    ),
    (
        "merge-main-into-branch.md",
        "no-rebase-shared-branches.md",
        "related",
        "rebasing and updating branches",
    ),
    (
        "println-diagnostics.md",
        "remove-console-log.md",
        "related",
        "debug prints; different scopes",
    ),
    (
        "squash-before-pr.md",
        "squash-merge-prs.md",
        "related",
        "how pull requests are merged",
    ),
    (
        "squash-before-pr.md",
        "pr-titles-imperative.md",
        "related",
        "how pull requests are merged",
    ),
    (
        "squash-before-pr.md",
        "es-squash-siempre.md",
        "related",
        "how pull requests are merged",
    ),
    (
        "db-transaction-rollback-tests.md",
        "integration-tests-real-db.md",
        "related",
        "the database in tests",
    ),
    (
        "db-transaction-rollback-tests.md",
        "integration-tests-real-postgres.md",
        "related",
        "the database in tests",
    ),
    (
        "db-transaction-rollback-tests.md",
        "zh-integration-real-db.md",
        "related",
        "the database in tests",
    ),
    (
        "db-transaction-rollback-tests.md",
        "zh-integration-tests-real-db-2.md",
        "related",
        "the database in tests",
    ),
    (
        "db-transaction-rollback-tests.md",
        "de-integration-real-db.md",
        "related",
        "the database in tests",
    ),
    (
        "pnpm-frozen-lockfile-ci.md",
        "pnpm-only.md",
        "related",
        "the JavaScript package manager",
    ),
    (
        "pnpm-frozen-lockfile-ci.md",
        "commit-the-lockfile.md",
        "related",
        "the lockfile",
    ),
    (
        "pnpm-frozen-lockfile-ci.md",
        "de-pnpm-only.md",
        "related",
        "the JavaScript package manager",
    ),
    (
        "pnpm-frozen-lockfile-ci.md",
        "pnpm-everything-no-npm.md",
        "related",
        "the JavaScript package manager",
    ),
    (
        "pnpm-frozen-lockfile-ci.md",
        "es-pnpm-workspaces.md",
        "related",
        "the JavaScript package manager",
    ),
    (
        "squash-title-as-subject.md",
        "squash-merge-prs.md",
        "related",
        "how pull requests are merged",
    ),
    (
        "squash-title-as-subject.md",
        "keep-commits-in-pr.md",
        "related",
        "how pull requests are merged",
    ),
    (
        "squash-title-as-subject.md",
        "es-squash-siempre.md",
        "related",
        "how pull requests are merged",
    ),
    (
        "squash-title-as-subject.md",
        "merge-commits-keep-history.md",
        "related",
        "how pull requests are merged",
    ),
    (
        "z-suffix-log-times.md",
        "utc-log-timestamps.md",
        "related",
        "times in UTC or local time",
    ),
    (
        "z-suffix-log-times.md",
        "rfc3339-timestamps.md",
        "related",
        "times in UTC or local time",
    ),
    (
        "z-suffix-log-times.md",
        "logs-in-utc.md",
        "related",
        "times in UTC or local time",
    ),
    (
        "z-suffix-log-times.md",
        "store-timestamps-utc.md",
        "related",
        "times in UTC or local time",
    ),
    (
        "z-suffix-log-times.md",
        "ja-local-time-display.md",
        "related",
        "times in UTC or local time; different scopes",
    ),
    (
        "z-suffix-log-times.md",
        "log-times-utc-z.md",
        "related",
        "times in UTC or local time",
    ),
    (
        "expect-over-unwrap-in-tests.md",
        "no-unwrap-in-lib.md",
        "related",
        "unwrap()",
    ),
    (
        "expect-over-unwrap-in-tests.md",
        "no-unwrap-in-library-code.md",
        "related",
        "unwrap()",
    ),
    (
        "fix-prefix-for-bugfixes.md",
        "conventional-commits.md",
        "related",
        "conventional commit prefixes",
    ),
    (
        "fix-prefix-for-bugfixes.md",
        "zh-conventional-commits.md",
        "related",
        "conventional commit prefixes",
    ),
    (
        "google-style-docstrings.md",
        "public-functions-docstrings.md",
        "related",
        "docstrings",
    ),
    (
        "extract-tailwind-class-lists.md",
        "tailwind-no-css-in-js.md",
        "related",
        "Tailwind styling",
    ),
    (
        "read-changelog-before-bump.md",
        "pin-exact-versions.md",
        "related",
        "pinned dependencies",
    ),
    (
        "db-columns-snake-case.md",
        "snake-case-api-payloads.md",
        "related",
        "naming conventions",
    ),
    (
        "db-columns-snake-case.md",
        "camelcase-variables-functions.md",
        "related",
        "naming conventions; different scopes",
    ),
    (
        "db-columns-snake-case.md",
        "ts-camel-functions.md",
        "related",
        "naming conventions; different scopes",
    ),
    (
        "british-spelling.md",
        "agent-responses-english.md",
        "related",
        "which language to write in",
    ),
    (
        "british-spelling.md",
        "commit-messages-english.md",
        "related",
        "which language to write in",
    ),
    (
        "uuid-v7-when-ordered.md",
        "uuid-primary-keys.md",
        "related",
        "UUID keys",
    ),
    (
        "spawn-blocking-cpu-work.md",
        "tokio-only-runtime.md",
        "related",
        "tokio",
    ),
    (
        "flag-naming-prefix.md",
        "keep-flags-two-releases.md",
        "related",
        "feature flags",
    ),
    (
        "commit-subject-72.md",
        "pr-titles-imperative.md",
        "related",
        "line length",
    ),
    (
        "force-with-lease-on-pr-branch.md",
        "never-force-push-main.md",
        "related",
        "force-pushing",
    ),
    (
        "force-with-lease-on-pr-branch.md",
        "rebase-onto-main.md",
        "related",
        "rebasing and updating branches",
    ),
    (
        "force-with-lease-on-pr-branch.md",
        "no-force-push-shared-branches.md",
        "related",
        "force-pushing",
    ),
    (
        "force-with-lease-on-pr-branch.md",
        "no-rebase-shared-branches.md",
        "related",
        "rebasing and updating branches",
    ),
    (
        "force-push-own-branch.md",
        "never-force-push-main.md",
        "related",
        "force-pushing; different scopes",
    ),
    (
        "force-push-own-branch.md",
        "rebase-onto-main.md",
        "related",
        "rebasing and updating branches",
    ),
    (
        "force-push-own-branch.md",
        "dont-force-push-others-branches.md",
        "related",
        "force-pushing; different scopes",
    ),
    (
        "force-push-own-branch.md",
        "no-rebase-shared-branches.md",
        "related",
        "rebasing and updating branches",
    ),
    (
        "local-time-in-ui.md",
        "utc-log-timestamps.md",
        "related",
        "times in UTC or local time; different scopes",
    ),
    (
        "local-time-in-ui.md",
        "rfc3339-timestamps.md",
        "related",
        "times in UTC or local time; different scopes",
    ),
    (
        "local-time-in-ui.md",
        "log-timestamp-field.md",
        "related",
        "times in UTC or local time; different scopes",
    ),
    (
        "local-time-in-ui.md",
        "store-timestamps-utc.md",
        "related",
        "times in UTC or local time; different scopes",
    ),
    (
        "local-time-in-ui.md",
        "ja-local-time-display.md",
        "related",
        "times in UTC or local time",
    ),
    (
        "local-time-in-ui.md",
        "log-times-utc-z.md",
        "related",
        "times in UTC or local time; different scopes",
    ),
    (
        "mock-db-in-unit-tests.md",
        "integration-tests-real-db.md",
        "related",
        "the database in tests; different scopes",
    ),
    (
        "mock-db-in-unit-tests.md",
        "integration-tests-hit-postgres.md",
        "related",
        "the database in tests; different scopes",
    ),
    (
        "mock-db-in-unit-tests.md",
        "zh-integration-real-db.md",
        "related",
        "the database in tests; different scopes",
    ),
    (
        "mock-db-in-unit-tests.md",
        "zh-integration-tests-real-db-2.md",
        "related",
        "the database in tests; different scopes",
    ),
    (
        "mock-db-in-unit-tests.md",
        "de-integration-real-db.md",
        "related",
        "the database in tests; different scopes",
    ),
    (
        "unwrap-fine-in-tests.md",
        "no-unwrap-in-lib.md",
        "related",
        "unwrap(); different scopes",
    ),
    (
        "unwrap-fine-in-tests.md",
        "no-panics-in-request-handlers.md",
        "related",
        "unwrap(); different scopes",
    ),
    (
        "kebab-case-file-names.md",
        "snake-case-api-payloads.md",
        "related",
        "naming conventions; different scopes",
    ),
    (
        "kebab-case-file-names.md",
        "sql-identifiers-lowercase.md",
        "related",
        "naming conventions; different scopes",
    ),
    (
        "kebab-case-file-names.md",
        "ts-camel-functions.md",
        "related",
        "naming conventions; different scopes",
    ),
    (
        "two-space-yaml.md",
        "ts-two-space-indent.md",
        "related",
        "indentation; different scopes",
    ),
    (
        "two-space-yaml.md",
        "two-space-frontend.md",
        "related",
        "indentation",
    ),
    (
        "two-space-yaml.md",
        "makefile-tabs.md",
        "related",
        "indentation; different scopes",
    ),
    (
        "two-space-yaml.md",
        "ja-two-space-indent.md",
        "related",
        "indentation",
    ),
    (
        "colors-in-cli-output.md",
        "no-emoji-in-commits.md",
        "related",
        "emoji; different scopes",
    ),
    (
        "four-space-rust.md",
        "ts-two-space-indent.md",
        "related",
        "indentation; different scopes",
    ),
    (
        "four-space-rust.md",
        "gofmt-tabs.md",
        "related",
        "indentation; different scopes",
    ),
    (
        "four-space-rust.md",
        "makefile-tabs.md",
        "related",
        "indentation; different scopes",
    ),
    (
        "display-dates-local.md",
        "utc-log-timestamps.md",
        "related",
        "times in UTC or local time; different scopes",
    ),
    (
        "display-dates-local.md",
        "rfc3339-timestamps.md",
        "related",
        "times in UTC or local time; different scopes",
    ),
    (
        "display-dates-local.md",
        "log-timestamp-field.md",
        "related",
        "times in UTC or local time; different scopes",
    ),
    (
        "display-dates-local.md",
        "logs-in-utc.md",
        "related",
        "times in UTC or local time; different scopes",
    ),
    (
        "display-dates-local.md",
        "ja-local-time-display.md",
        "related",
        "times in UTC or local time",
    ),
    (
        "display-dates-local.md",
        "log-times-utc-z.md",
        "related",
        "times in UTC or local time; different scopes",
    ),
    (
        "python-snake-functions.md",
        "snake-case-api-payloads.md",
        "related",
        "naming conventions",
    ),
    (
        "python-snake-functions.md",
        "sql-identifiers-lowercase.md",
        "related",
        "naming conventions",
    ),
    (
        "python-snake-functions.md",
        "camelcase-variables-functions.md",
        "related",
        "naming conventions; different scopes",
    ),
    (
        "print-debugging-in-tests.md",
        "remove-console-log.md",
        "related",
        "debug prints; different scopes",
    ),
    (
        "print-debugging-in-tests.md",
        "tracing-not-println.md",
        "related",
        "debug prints; different scopes",
    ),
    (
        "rebase-own-branch-onto-main.md",
        "rebase-onto-main.md",
        "related",
        "rebasing and updating branches",
    ),
    (
        "keep-answers-short.md",
        "short-responses.md",
        "related",
        "answer length",
    ),
    (
        "zh-commit-msg-chinese.md",
        "agent-responses-english.md",
        "related",
        "which language to write in; different scopes",
    ),
    (
        "zh-commit-msg-chinese.md",
        "english-in-code-comments.md",
        "related",
        "which language to write in; different scopes",
    ),
    (
        "ja-tabs-indent.md",
        "gofmt-tabs.md",
        "related",
        "indentation",
    ),
    (
        "ja-tabs-indent.md",
        "makefile-tabs.md",
        "related",
        "indentation",
    ),
    (
        "ja-utc-logs.md",
        "utc-log-timestamps.md",
        "related",
        "times in UTC or local time",
    ),
    (
        "ja-utc-logs.md",
        "rfc3339-timestamps.md",
        "related",
        "times in UTC or local time",
    ),
    (
        "ja-utc-logs.md",
        "log-timestamp-field.md",
        "related",
        "times in UTC or local time",
    ),
    (
        "ja-utc-logs.md",
        "logs-in-utc.md",
        "related",
        "times in UTC or local time",
    ),
    (
        "ja-utc-logs.md",
        "store-timestamps-utc.md",
        "related",
        "times in UTC or local time",
    ),
    (
        "ja-utc-logs.md",
        "log-times-utc-z.md",
        "related",
        "times in UTC or local time",
    ),
    (
        "de-commit-messages-german.md",
        "agent-responses-english.md",
        "related",
        "which language to write in; different scopes",
    ),
    (
        "de-commit-messages-german.md",
        "english-in-code-comments.md",
        "related",
        "which language to write in; different scopes",
    ),
    (
        "es-no-squash.md",
        "keep-commits-in-pr.md",
        "related",
        "how pull requests are merged",
    ),
    (
        "es-no-squash.md",
        "merge-commits-keep-history.md",
        "related",
        "how pull requests are merged",
    ),
    (
        "es-responde-espanol.md",
        "english-in-code-comments.md",
        "related",
        "which language to write in; different scopes",
    ),
    (
        "es-responde-espanol.md",
        "commit-messages-english.md",
        "related",
        "which language to write in; different scopes",
    ),
    (
        "fr-heure-locale-logs.md",
        "rfc3339-timestamps.md",
        "related",
        "times in UTC or local time; different scopes",
    ),
    (
        "fr-heure-locale-logs.md",
        "store-timestamps-utc.md",
        "related",
        "times in UTC or local time; different scopes",
    ),
    (
        "fr-heure-locale-logs.md",
        "ja-local-time-display.md",
        "related",
        "times in UTC or local time",
    ),
    (
        "zh-unit-test-mock-db.md",
        "integration-tests-real-db.md",
        "related",
        "the database in tests; different scopes",
    ),
    (
        "zh-unit-test-mock-db.md",
        "integration-tests-hit-postgres.md",
        "related",
        "the database in tests; different scopes",
    ),
    (
        "zh-unit-test-mock-db.md",
        "integration-tests-real-postgres.md",
        "related",
        "the database in tests; different scopes",
    ),
    (
        "zh-unit-test-mock-db.md",
        "zh-integration-real-db.md",
        "related",
        "the database in tests; different scopes",
    ),
    (
        "zh-unit-test-mock-db.md",
        "de-integration-real-db.md",
        "related",
        "the database in tests; different scopes",
    ),
    (
        "ja-reply-in-japanese.md",
        "english-in-code-comments.md",
        "related",
        "which language to write in; different scopes",
    ),
    (
        "ja-reply-in-japanese.md",
        "commit-messages-english.md",
        "related",
        "which language to write in; different scopes",
    ),
    (
        "ja-rebase-no-merge-commit.md",
        "keep-commits-in-pr.md",
        "related",
        "how pull requests are merged",
    ),
    (
        "de-unit-tests-mock-db.md",
        "integration-tests-real-db.md",
        "related",
        "the database in tests; different scopes",
    ),
    (
        "de-unit-tests-mock-db.md",
        "integration-tests-hit-postgres.md",
        "related",
        "the database in tests; different scopes",
    ),
    (
        "de-unit-tests-mock-db.md",
        "integration-tests-real-postgres.md",
        "related",
        "the database in tests; different scopes",
    ),
    (
        "de-unit-tests-mock-db.md",
        "zh-integration-real-db.md",
        "related",
        "the database in tests; different scopes",
    ),
    (
        "de-unit-tests-mock-db.md",
        "zh-integration-tests-real-db-2.md",
        "related",
        "the database in tests; different scopes",
    ),
    (
        "es-pnpm-frozen-ci.md",
        "pnpm-only.md",
        "related",
        "the JavaScript package manager",
    ),
    (
        "es-pnpm-frozen-ci.md",
        "commit-the-lockfile.md",
        "related",
        "the lockfile",
    ),
    (
        "es-pnpm-frozen-ci.md",
        "workspace-uses-pnpm.md",
        "related",
        "the JavaScript package manager",
    ),
    (
        "es-pnpm-frozen-ci.md",
        "de-pnpm-only.md",
        "related",
        "the JavaScript package manager",
    ),
    (
        "es-pnpm-frozen-ci.md",
        "pnpm-everything-no-npm.md",
        "related",
        "the JavaScript package manager",
    ),
    (
        "squash-title-as-subject.md",
        "no-emoji-in-commits.md",
        "related",
        "what goes into commit subjects and PR titles",
    ),
    (
        "fix-prefix-for-bugfixes.md",
        "renovate-bumps.md",
        "related",
        "dependency bumps: their commit prefix and how they land",
    ),
    (
        "separate-refactor-prs.md",
        "keep-commits-in-pr.md",
        "related",
        "what goes into one pull request",
    ),
    (
        "show-sql-before-migrating.md",
        "ask-before-migrations.md",
        "related",
        "asking before running migrations",
    ),
    (
        "skip-e2e-locally.md",
        "ci-runs-full-e2e.md",
        "related",
        "running the e2e suite; different scopes (locally vs CI)",
    ),
    (
        "commit-directly-to-own-branch.md",
        "keep-commits-in-pr.md",
        "related",
        "commits on a branch before review",
    ),
    (
        "no-squash-migrations.md",
        "ask-before-migrations.md",
        "related",
        "database migrations",
    ),
    (
        "real-stripe-test-mode.md",
        "integration-tests-real-db.md",
        "related",
        "real services rather than mocks in tests",
    ),
    (
        "real-stripe-test-mode.md",
        "integration-tests-real-postgres.md",
        "related",
        "real services rather than mocks in tests",
    ),
    (
        "squash-before-pr.md",
        "merge-commits-keep-history.md",
        "related",
        "how PRs are merged; squashing your own commits before review and merging the PR with a merge commit can both be followed",
    ),
    (
        "commit-subject-72.md",
        "rustfmt-max-width-120.md",
        "related",
        "length limits: 72 characters for commit subjects, 120 for code lines",
    ),
    (
        "no-full-suite-for-docs.md",
        "ci-runs-full-e2e.md",
        "related",
        "running the full suite: what the agent runs for docs-only changes vs what CI runs on every PR",
    ),
];

/// Every case the checker gets wrong on this corpus, with the reason: (private path, team path,
/// why). Kept exact by the test: a wrong case missing here, or one listed here that is now right,
/// fails it.
pub const EXPLAINED: &[(&str, &str, &str)] = &[
    // Found `related` by the wording similarity (and a few missed contradictions) since round three.
    (
        "unwrap-ok-when-infallible.md",
        "no-panics-in-request-handlers.md",
        "'unwrap()' is allowed in one and forbidden in the other, but the two short rules share little wording (n-gram cosine under 0.18) and under half their subject, so the flipped word is not trusted and it reports `related`",
    ),
    (
        "mock-db-in-integration-tests.md",
        "ask-before-migrations.md",
        "two short rules of one domain that share wording (both name database); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "mock-db-in-integration-tests.md",
        "mock-http-with-wiremock.md",
        "two short rules of one domain that share wording (both name mock, tests); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "use-npm-for-installs.md",
        "uv-for-python.md",
        "two short rules of one domain that share wording (both name dependencies); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "merge-commits-for-prs.md",
        "no-emoji-in-commits.md",
        "two short rules of one domain that share wording (both name pull requests, commit); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "merge-commits-for-prs.md",
        "small-prs.md",
        "two short rules of one domain that share wording (both name pull requests); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "merge-commits-for-prs.md",
        "no-direct-commits-to-main.md",
        "two short rules of one domain that share wording (both name pull requests, commit); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-cargo-fmt-on-untouched.md",
        "tokio-only-runtime.md",
        "two short rules of one domain that share wording (both name workspace); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-cargo-fmt-on-untouched.md",
        "workspace-uses-pnpm.md",
        "two short rules of one domain that share wording (both name workspace); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "dont-commit-package-lock.md",
        "pin-exact-versions.md",
        "two short rules of one domain that share wording (both name package-lock.json); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "dont-commit-package-lock.md",
        "merge-commits-keep-history.md",
        "two short rules of one domain that share wording (both name commit, merge); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "run-migrations-freely.md",
        "integration-tests-real-db.md",
        "two short rules of one domain that share wording (both name database); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "run-migrations-freely.md",
        "reversible-migrations.md",
        "two short rules of one domain that share wording (both name migrations); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "gitmoji-commits.md",
        "conventional-commits.md",
        "two short rules of one domain that share wording (both name commit, messages); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "gitmoji-commits.md",
        "conventional-commit-format.md",
        "two short rules of one domain that share wording (both name commit, messages); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "gitmoji-commits.md",
        "commit-messages-english.md",
        "two short rules of one domain that share wording (both name commit, messages); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "jest-for-frontend-tests.md",
        "failing-test-first.md",
        "two short rules of one domain that share wording (both name write, tests); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "jest-for-frontend-tests.md",
        "two-space-frontend.md",
        "two short rules of one domain that share wording (both name frontend); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-type-hints-in-scripts.md",
        "posix-sh-scripts.md",
        "two short rules of one domain that share wording (both name scripts); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-trailing-summary.md",
        "agent-responses-english.md",
        "two short rules of one domain that share wording (both name responses); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-trailing-summary.md",
        "short-responses.md",
        "two short rules of one domain that share wording (both name responses); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "caret-ranges-npm.md",
        "uv-for-python.md",
        "two short rules of one domain that share wording (both name dependencies); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-trailing-commas.md",
        "lowercase-error-messages.md",
        "two short rules of one domain that share wording (both name trailing); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "epoch-timestamps-api.md",
        "log-timestamp-field.md",
        "two short rules of one domain that share wording (both name timestamps); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "epoch-timestamps-api.md",
        "logs-in-utc.md",
        "two short rules of one domain that share wording (both name timestamps); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "epoch-timestamps-api.md",
        "store-timestamps-utc.md",
        "two short rules of one domain that share wording (both name timestamps); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "epoch-timestamps-api.md",
        "log-times-utc-z.md",
        "two short rules of one domain that share wording (both name timestamps); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "merge-main-into-branch.md",
        "never-force-push-main.md",
        "two short rules of one domain that share wording (both name main, branch); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "merge-main-into-branch.md",
        "no-force-push-shared-branches.md",
        "two short rules of one domain that share wording (both name main, branch); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "merge-main-into-branch.md",
        "merge-commits-keep-history.md",
        "two short rules of one domain that share wording (both name merge, branch); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "black-for-python.md",
        "python-fully-typed.md",
        "two short rules of one domain that share wording (both name python, code); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "string-errors-in-cli.md",
        "ids-opaque-in-api.md",
        "two short rules of one domain that share wording (both name string); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "db-transaction-rollback-tests.md",
        "ask-before-migrations.md",
        "two short rules of one domain that share wording (both name database); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "squash-title-as-subject.md",
        "commit-body-explains-why.md",
        "two short rules of one domain that share wording (both name body, commit); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "fix-prefix-for-bugfixes.md",
        "uv-for-python.md",
        "two short rules of one domain that share wording (both name dependency); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "read-changelog-before-bump.md",
        "changelog-entry.md",
        "two short rules of one domain that share wording (both name changelog, changes); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "read-changelog-before-bump.md",
        "api-versioning.md",
        "two short rules of one domain that share wording (both name breaking, changes); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "mock-db-in-unit-tests.md",
        "store-timestamps-utc.md",
        "two short rules of one domain that share wording (both name database); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "mock-db-in-unit-tests.md",
        "mock-http-with-wiremock.md",
        "two short rules of one domain that share wording (both name mock, tests); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "commit-directly-to-own-branch.md",
        "rebase-onto-main.md",
        "two short rules of one domain that share wording (both name feature, branch); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "commit-directly-to-own-branch.md",
        "merge-commits-keep-history.md",
        "two short rules of one domain that share wording (both name commit, branch, pr); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "rebase-own-branch-onto-main.md",
        "never-force-push-main.md",
        "two short rules of one domain that share wording (both name branch, main); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "dont-mock-time.md",
        "mock-http-with-wiremock.md",
        "two short rules of one domain that share wording (both name mock, tests); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-squash-migrations.md",
        "integration-tests-real-db.md",
        "two short rules of one domain that share wording (both name database); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-squash-migrations.md",
        "keep-commits-in-pr.md",
        "two short rules of one domain that share wording (both name squash); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-squash-migrations.md",
        "reversible-migrations.md",
        "two short rules of one domain that share wording (both name migrations); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-squash-migrations.md",
        "es-squash-siempre.md",
        "two short rules of one domain that share wording (both name squash); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-spaces-in-filenames.md",
        "ts-two-space-indent.md",
        "two short rules of one domain that share wording (both name spaces, file); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-spaces-in-filenames.md",
        "two-space-frontend.md",
        "two short rules of one domain that share wording (both name spaces); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "real-stripe-test-mode.md",
        "integration-tests-hit-postgres.md",
        "two short rules of one domain that share wording (both name tests, real); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "explain-regexes.md",
        "commit-body-explains-why.md",
        "two short rules of one domain that share wording (both name explaining); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "ask-before-deleting-files.md",
        "ask-before-migrations.md",
        "two short rules of one domain that share wording (both name ask); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "es-no-squash.md",
        "no-emoji-in-commits.md",
        "two short rules of one domain that share wording (both name commits, pr); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    (
        "ja-rebase-no-merge-commit.md",
        "no-rebase-shared-branches.md",
        "two short rules of one domain that share wording (both name rebase); the checker lists them as `related` for the session-start notice (worded alike, no contradiction), the corpus labels them unrelated",
    ),
    // Missed contradictions.
    (
        "string-errors-in-cli.md",
        "typed-errors-thiserror.md",
        "the conflict is `Result<T, String>` vs 'error enums with thiserror'; the lexicon has no \
         concept for error types, and the opposed terms ('string' and the common 'error') weigh \
         less than two words, so it reports `related`",
    ),
    // False contradictions (the label is `related`).
    (
        "squash-before-pr.md",
        "merge-commits-keep-history.md",
        "'squash your work into a single commit' is read as the squash-merge choice, exclusive \
         with merge commits; the checker cannot tell squashing a branch before review from \
         squash-merging a PR",
    ),
    (
        "commit-subject-72.md",
        "rustfmt-max-width-120.md",
        "72 vs 120 characters are exclusive line lengths; the team rule names no scope (it means \
         code lines), and an unscoped rule applies to commit subjects too",
    ),
    (
        "no-full-suite-for-docs.md",
        "ci-runs-full-e2e.md",
        "'run the full … suite' is don't in one and do in the other; the private rule names no \
         scope, so the checker cannot see it is about the agent's own runs while the team rule is \
         about CI",
    ),
    // Related pairs reported as nothing: the shared subject weighs less than two words.
    (
        "commit-subject-72.md",
        "commit-body-explains-why.md",
        "both are about commit messages, but that is their scope; as terms they share only the \
         common word 'commit'",
    ),
    // Unrelated pairs reported as related: they share workflow words, not a subject.
    (
        "squash-before-pr.md",
        "no-direct-commits-to-main.md",
        "'open a pull request' and 'commit' are shared, but one is about squashing your work and \
         the other about committing to main",
    ),
    (
        "request-id-span-field.md",
        "no-panics-in-request-handlers.md",
        "'request handler' is shared, but one is about tracing spans and the other about panics",
    ),
    // Since the weights for unseen rules (issue 16): common terms weigh half, a phrase both use
    // adds a word, a hyphenated word weighs one word.
    (
        "no-cargo-fmt-on-untouched.md",
        "clippy-deny-warnings.md",
        "both run `cargo` something: 'cargo' and 'run' side by side in both make a phrase, which \
         adds to the two words; one is about formatting untouched files, the other about clippy \
         warnings",
    ),
    (
        "detailed-explanations.md",
        "commit-body-explains-why.md",
        "'explain' next to 'change(s)' in both is a phrase, which adds to the shared words; one is \
         about answers to the user, the other about commit bodies",
    ),
    (
        "styled-components-new.md",
        "one-component-per-file.md",
        "'React components' is a phrase in both; one is about how components are styled, the \
         other about how many go in a file",
    ),
    (
        "affected-e2e-specs-locally.md",
        "ci-runs-full-e2e.md",
        "'run … e2e' is a phrase in both; one is about what to run locally, the other about what \
         CI runs",
    ),
    (
        "no-full-suite-for-docs.md",
        "ci-e2e-required.md",
        "'test suite' / 'suite … test' is a phrase in both; one is about the agent's runs for docs \
         changes, the other about CI passing before merge",
    ),
    (
        "any-ok-in-test-fixtures.md",
        "no-any-in-app-code.md",
        "`any` in backticks is the TypeScript type, but a backticked everyday word weighs as the \
         word (so `main` alone makes no subject), and 'any' is a common word; nothing else is \
         shared",
    ),
    // Round nine: without the embedding model, a pair whose rules leave it silent but that shares
    // a word's weight is related when the model fitted on the development sets says its shared
    // terms and wording put it on one subject. The development sets' cross-topic pairs are
    // easier negatives than the rules of one codebase here: one shared term between two one-line
    // rules of one domain, with a fifth of their short wording in common, reads as a subject.
    (
        "mock-db-in-integration-tests.md",
        "store-timestamps-utc.md",
        "two one-line rules of one domain that share only database and 17% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "use-npm-for-installs.md",
        "pin-exact-versions.md",
        "two one-line rules of one domain that share only dependencies, packages and 20% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "use-npm-for-installs.md",
        "renovate-bumps.md",
        "two one-line rules of one domain that share only dependencies, packages and 18% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "camelcase-json-fields.md",
        "agent-responses-english.md",
        "two one-line rules of one domain that share only responses and 19% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "camelcase-json-fields.md",
        "short-responses.md",
        "two one-line rules of one domain that share only responses and 17% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "camelcase-json-fields.md",
        "log-timestamp-field.md",
        "two one-line rules of one domain that share only fields and 18% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "camelcase-json-fields.md",
        "structured-log-fields.md",
        "two one-line rules of one domain that share only fields and 18% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "camelcase-json-fields.md",
        "plain-json-logs.md",
        "two one-line rules of one domain that share only json and 13% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "force-push-main-after-bad-merge.md",
        "rebase-onto-main.md",
        "two one-line rules of one domain that share only main, merge and 18% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-cargo-fmt-on-untouched.md",
        "pnpm-only.md",
        "two one-line rules of one domain that share only workspace, run and 15% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "run-migrations-freely.md",
        "integration-tests-hit-postgres.md",
        "two one-line rules of one domain that share only database, run and 18% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "run-migrations-freely.md",
        "es-migraciones-reversibles.md",
        "two one-line rules of one domain that share only migrations and 14% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "run-migrations-freely.md",
        "de-integration-real-db.md",
        "two one-line rules of one domain that share only database and 19% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "single-quotes-js.md",
        "rfc3339-timestamps.md",
        "two one-line rules of one domain that share only strings and 15% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "implementation-then-tests.md",
        "vitest-not-jest.md",
        "two one-line rules of one domain that share only add, tests and 16% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "caret-ranges-npm.md",
        "renovate-bumps.md",
        "two one-line rules of one domain that share only dependencies and 17% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "caret-ranges-npm.md",
        "pnpm-everything-no-npm.md",
        "two one-line rules of one domain that share only npm and 19% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "async-std-worker.md",
        "no-blocking-in-async.md",
        "two one-line rules of one domain that share only async-std and 18% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "leave-console-logs.md",
        "no-commented-out-code.md",
        "two one-line rules of one domain that share only leave, code and 18% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "sleep-for-server-startup.md",
        "vitest-not-jest.md",
        "two one-line rules of one domain that share only tests, add and 15% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "sleep-for-server-startup.md",
        "tracing-not-println.md",
        "two one-line rules of one domain that share only server and 20% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-trailing-commas.md",
        "no-blocking-in-async.md",
        "two one-line rules of one domain that share only function, call and 18% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "epoch-timestamps-api.md",
        "agent-responses-english.md",
        "two one-line rules of one domain that share only responses and 16% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "epoch-timestamps-api.md",
        "short-responses.md",
        "two one-line rules of one domain that share only responses and 17% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "squash-before-pr.md",
        "no-emoji-in-commits.md",
        "two one-line rules of one domain that share only pull request, commit and 20% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "squash-before-pr.md",
        "small-prs.md",
        "two one-line rules of one domain that share only pull request and 14% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "skip-e2e-in-ci.md",
        "keep-commits-in-pr.md",
        "two one-line rules of one domain that share only small, prs and 17% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "skip-e2e-in-ci.md",
        "e2e-specs-in-e2e-dir.md",
        "two one-line rules of one domain that share only e2e and 10% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "string-errors-in-cli.md",
        "double-quotes-prettier.md",
        "two one-line rules of one domain that share only string and 19% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "string-errors-in-cli.md",
        "rfc3339-timestamps.md",
        "two one-line rules of one domain that share only string and 18% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "db-transaction-rollback-tests.md",
        "store-timestamps-utc.md",
        "two one-line rules of one domain that share only database and 17% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "fix-prefix-for-bugfixes.md",
        "regression-test-per-bug.md",
        "two one-line rules of one domain that share only fix, bug and 14% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "fix-prefix-for-bugfixes.md",
        "feature-branch-naming.md",
        "two one-line rules of one domain that share only feat, fix and 14% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "separate-refactor-prs.md",
        "squash-merge-prs.md",
        "two one-line rules of one domain that share only pull request and 20% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "separate-refactor-prs.md",
        "no-direct-commits-to-main.md",
        "two one-line rules of one domain that share only pull request, changes and 13% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "extract-tailwind-class-lists.md",
        "one-component-per-file.md",
        "two one-line rules of one domain that share only component and 17% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "show-sql-before-migrating.md",
        "raw-sql-with-sqlx.md",
        "two one-line rules of one domain that share only sql and 13% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "show-sql-before-migrating.md",
        "es-migraciones-reversibles.md",
        "two one-line rules of one domain that share only migration and 14% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "read-changelog-before-bump.md",
        "uv-for-python.md",
        "two one-line rules of one domain that share only dependency and 21% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "request-id-span-field.md",
        "log-timestamp-field.md",
        "two one-line rules of one domain that share only field and 20% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "db-columns-snake-case.md",
        "integration-tests-real-db.md",
        "two one-line rules of one domain that share only database and 18% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "db-columns-snake-case.md",
        "ask-before-migrations.md",
        "two one-line rules of one domain that share only database and 20% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "db-columns-snake-case.md",
        "store-timestamps-utc.md",
        "two one-line rules of one domain that share only database and 16% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "affected-e2e-specs-locally.md",
        "docker-compose-dev-env.md",
        "two one-line rules of one domain that share only run, locally and 14% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "affected-e2e-specs-locally.md",
        "ci-e2e-required.md",
        "two one-line rules of one domain that share only e2e and 15% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "flag-naming-prefix.md",
        "api-versioning.md",
        "two one-line rules of one domain that share only prefix and 19% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "mock-db-in-unit-tests.md",
        "ask-before-migrations.md",
        "two one-line rules of one domain that share only database and 16% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "kebab-case-file-names.md",
        "two-space-frontend.md",
        "two one-line rules of one domain that share only frontend and 16% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "two-space-yaml.md",
        "toml-config-only.md",
        "two one-line rules of one domain that share only yaml, files and 15% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "colors-in-cli-output.md",
        "tailwind-config-tokens.md",
        "two one-line rules of one domain that share only colors and 19% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "skip-e2e-locally.md",
        "e2e-specs-in-e2e-dir.md",
        "two one-line rules of one domain that share only e2e and 8% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "display-dates-local.md",
        "two-space-frontend.md",
        "two one-line rules of one domain that share only frontend and 14% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "commit-directly-to-own-branch.md",
        "no-emoji-in-commits.md",
        "two one-line rules of one domain that share only commit, pr and 19% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "any-ok-in-test-fixtures.md",
        "integration-tests-real-db.md",
        "two one-line rules of one domain that share only mocks, test and 14% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "any-ok-in-test-fixtures.md",
        "integration-tests-real-postgres.md",
        "two one-line rules of one domain that share only mocks, test and 16% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "any-ok-in-test-fixtures.md",
        "mock-http-with-wiremock.md",
        "two one-line rules of one domain that share only mocks, test and 15% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "rebase-own-branch-onto-main.md",
        "ask-before-migrations.md",
        "two one-line rules of one domain that share only asking and 20% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "rebase-own-branch-onto-main.md",
        "no-force-push-shared-branches.md",
        "two one-line rules of one domain that share only branch, main and 18% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "dont-mock-time.md",
        "integration-tests-real-db.md",
        "two one-line rules of one domain that share only mock, tests and 16% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "dont-mock-time.md",
        "integration-tests-real-postgres.md",
        "two one-line rules of one domain that share only mock, tests and 15% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-squash-migrations.md",
        "integration-tests-real-postgres.md",
        "two one-line rules of one domain that share only database and 17% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-squash-migrations.md",
        "store-timestamps-utc.md",
        "two one-line rules of one domain that share only database and 12% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-squash-migrations.md",
        "es-migraciones-reversibles.md",
        "two one-line rules of one domain that share only migrations and 14% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-squash-migrations.md",
        "de-integration-real-db.md",
        "two one-line rules of one domain that share only database and 21% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "real-stripe-test-mode.md",
        "mock-http-with-wiremock.md",
        "two one-line rules of one domain that share only mocks, tests and 19% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "explain-regexes.md",
        "docstrings-on-public-api.md",
        "two one-line rules of one domain that share only explaining and 16% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "explain-regexes.md",
        "english-in-code-comments.md",
        "two one-line rules of one domain that share only comment and 19% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "explain-regexes.md",
        "no-commented-out-code.md",
        "two one-line rules of one domain that share only comment and 19% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "es-no-squash.md",
        "no-direct-commits-to-main.md",
        "two one-line rules of one domain that share only commits, pr and 15% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "fr-heure-locale-logs.md",
        "plain-json-logs.md",
        "two one-line rules of one domain that share only logs and 17% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "zh-unit-test-mock-db.md",
        "mock-http-with-wiremock.md",
        "two one-line rules of one domain that share only mock and 20% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "ja-rebase-no-merge-commit.md",
        "rebase-onto-main.md",
        "two one-line rules of one domain that share only rebase and 21% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-cargo-fmt-on-untouched.md",
        "summarize-changes-at-end.md",
        "two one-line rules of one domain that share only files, change and 16% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "plain-commit-messages.md",
        "api-versioning.md",
        "two one-line rules of one domain that share only prefixes and 14% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "run-migrations-freely.md",
        "integration-tests-real-postgres.md",
        "two one-line rules of one domain that share only database and 16% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "squash-title-as-subject.md",
        "no-direct-commits-to-main.md",
        "two one-line rules of one domain that share only commit, pr and 16% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "fix-prefix-for-bugfixes.md",
        "api-versioning.md",
        "two one-line rules of one domain that share only prefix and 15% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "separate-refactor-prs.md",
        "ci-runs-full-e2e.md",
        "two one-line rules of one domain that share only pull request and 14% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "show-sql-before-migrating.md",
        "sql-identifiers-lowercase.md",
        "two one-line rules of one domain that share only sql and 7% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "local-time-in-ui.md",
        "commit-body-explains-why.md",
        "two one-line rules of one domain that share only show and 12% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "ja-utc-logs.md",
        "ja-http-timeout.md",
        "two one-line rules of one domain that share only タイム and 3% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "ja-rebase-no-merge-commit.md",
        "no-emoji-in-commits.md",
        "two one-line rules of one domain that share only pr, コミット and 12% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "de-unit-tests-mock-db.md",
        "ask-before-migrations.md",
        "two one-line rules of one domain that share only datenbank and 2% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "de-unit-tests-mock-db.md",
        "store-timestamps-utc.md",
        "two one-line rules of one domain that share only datenbank and 7% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "pip-requirements.md",
        "de-pnpm-only.md",
        "two one-line rules of one domain that share only install and 12% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "squash-before-pr.md",
        "ci-runs-full-e2e.md",
        "two one-line rules of one domain that share only pull request and 12% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
    (
        "no-spaces-in-filenames.md",
        "tailwind-config-tokens.md",
        "two one-line rules of one domain that share only spaces and 6% of their wording; the model fitted on the development sets relates such pairs for the session-start notice (no contradiction), the corpus labels them unrelated",
    ),
];

fn pairs_index() -> Vec<(String, String, Option<&'static str>, &'static str)> {
    pairs()
        .into_iter()
        .map(|p| (path_of(&p.private), path_of(&p.team), p.expected, p.note))
        .collect()
}

/// One scored pair of the cross product (only those with a label or a finding).
#[derive(Debug, Clone)]
pub struct Outcome {
    pub private: String,
    pub team: String,
    pub expected: Option<&'static str>,
    pub got: Option<&'static str>,
    pub reason: Option<String>,
    /// The label's note (empty for an unlabeled pair).
    pub note: &'static str,
    /// Why the checker gets this one wrong, if it does and it is explained.
    pub explained: Option<&'static str>,
}

impl Outcome {
    pub fn correct(&self) -> bool {
        self.expected == self.got
    }
}

/// The score over the cross product.
pub struct Report {
    pub outcomes: Vec<Outcome>,
    /// `confusion[expected][got]`, index 0 contradiction, 1 related, 2 nothing.
    pub confusion: [[usize; 3]; 3],
    pub pairs: usize,
    pub private_notes: usize,
    pub team_notes: usize,
    /// The cross product, lexicon already compiled.
    pub elapsed: Duration,
    /// Compiling the lexicon (once per process, on first use).
    pub first_use: Duration,
}

fn idx(k: Option<&str>) -> usize {
    match k {
        Some("contradiction") => 0,
        Some("related") => 1,
        _ => 2,
    }
}

const KINDS: [&str; 3] = ["contradiction", "related", "nothing"];

impl Report {
    /// Precision of `contradiction` findings.
    pub fn precision(&self) -> f64 {
        let tp = self.confusion[0][0] as f64;
        let predicted: usize = (0..3).map(|e| self.confusion[e][0]).sum();
        if predicted == 0 {
            1.0
        } else {
            tp / predicted as f64
        }
    }

    /// Recall of labeled contradictions.
    pub fn recall(&self) -> f64 {
        let tp = self.confusion[0][0] as f64;
        let labeled: usize = self.confusion[0].iter().sum();
        if labeled == 0 {
            1.0
        } else {
            tp / labeled as f64
        }
    }

    /// The wrong cases.
    pub fn errors(&self) -> impl Iterator<Item = &Outcome> {
        self.outcomes.iter().filter(|o| !o.correct())
    }

    /// The confusion matrix as text.
    pub fn matrix(&self) -> String {
        let mut s = format!(
            "{:>24} | {:>13} {:>8} {:>8}\n",
            "expected \\ got", KINDS[0], KINDS[1], KINDS[2]
        );
        for (e, row) in self.confusion.iter().enumerate() {
            s.push_str(&format!(
                "{:>24} | {:>13} {:>8} {:>8}\n",
                KINDS[e], row[0], row[1], row[2]
            ));
        }
        s
    }

    /// A one-paragraph summary.
    pub fn summary(&self) -> String {
        let labeled: [usize; 3] = [0, 1, 2].map(|e| self.confusion[e].iter().sum());
        format!(
            "{} labeled pairs; {} private x {} team memories = {} pairs scored in {:.1} ms \
             (compiling the lexicon on first use: {:.1} ms)\n\
             labels over the cross product: {} contradiction, {} related, {} nothing\n\
             contradiction: precision {:.3}, recall {:.3}\n",
            self.pairs,
            self.private_notes,
            self.team_notes,
            self.private_notes * self.team_notes,
            self.elapsed.as_secs_f64() * 1000.0,
            self.first_use.as_secs_f64() * 1000.0,
            labeled[0],
            labeled[1],
            labeled[2],
            self.precision(),
            self.recall(),
        )
    }
}

/// Runs the checker over the cross product and scores it.
pub fn evaluate() -> Report {
    let private = private_set();
    let team = team_set();
    let a: Vec<Note<'_>> = private
        .iter()
        .map(|(p, t)| Note { path: p, text: t })
        .collect();
    let b: Vec<Note<'_>> = team
        .iter()
        .map(|(p, t)| Note { path: p, text: t })
        .collect();
    let start = Instant::now();
    let _ = feedback::compare(&a[..1], &b[..1]);
    let first_use = start.elapsed();
    let start = Instant::now();
    let findings = feedback::compare(&a, &b);
    let elapsed = start.elapsed();

    let index = pairs_index();
    let mut confusion = [[0usize; 3]; 3];
    let mut outcomes = Vec::new();
    for (p, _) in &private {
        for (t, _) in &team {
            let f = findings.iter().find(|f| &f.a == p && &f.b == t);
            let got = f.map(|f| match f.kind {
                Kind::Contradiction => "contradiction",
                Kind::Related => "related",
            });
            let (expected, note) = index
                .iter()
                .find(|(ip, it, _, _)| ip == p && it == t)
                .map(|(_, _, e, n)| (*e, *n))
                .or_else(|| {
                    CROSS
                        .iter()
                        .find(|(cp, ct, _, _)| cp == p && ct == t)
                        .map(|(_, _, k, n)| (Some(*k), *n))
                })
                .unwrap_or((None, ""));
            confusion[idx(expected)][idx(got)] += 1;
            if expected.is_some() || got.is_some() {
                let explained = EXPLAINED
                    .iter()
                    .find(|(ep, et, _)| ep == p && et == t)
                    .map(|(_, _, why)| *why);
                outcomes.push(Outcome {
                    private: p.clone(),
                    team: t.clone(),
                    expected,
                    got,
                    reason: f.map(|f| f.reason.clone()),
                    note,
                    explained,
                });
            }
        }
    }
    Report {
        outcomes,
        confusion,
        pairs: index.len(),
        private_notes: private.len(),
        team_notes: team.len(),
        elapsed,
        first_use,
    }
}
