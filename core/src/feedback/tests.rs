use proptest::prelude::*;

use super::*;

/// A feedback memory whose directive is `rule` (the description adds nothing).
fn fb(rule: &str) -> String {
    format!(
        "---\nname: m\ndescription: x\ntype: feedback\n---\n{rule}\n\n**Why:** because.\n\n**How to apply:** always.\n"
    )
}

fn verdict(a: &str, b: &str) -> Option<(Kind, String)> {
    let (ta, tb) = (fb(a), fb(b));
    let f = compare(
        &[Note {
            path: "a.md",
            text: &ta,
        }],
        &[Note {
            path: "b.md",
            text: &tb,
        }],
    );
    assert!(f.len() <= 1);
    f.into_iter().next().map(|f| {
        assert!(
            !f.reason.contains('\n') && !f.reason.is_empty(),
            "{}",
            f.reason
        );
        assert_eq!((f.a.as_str(), f.b.as_str()), ("a.md", "b.md"));
        (f.kind, f.reason)
    })
}

fn debug(a: &str, b: &str) -> String {
    format!("\n--- a\n{}--- b\n{}", explain(&fb(a)), explain(&fb(b)))
}

#[track_caller]
fn contradiction(a: &str, b: &str) -> String {
    match verdict(a, b) {
        Some((Kind::Contradiction, r)) => {
            // The verdict does not depend on which side is which.
            assert!(
                matches!(verdict(b, a), Some((Kind::Contradiction, _))),
                "{b:?} vs {a:?} is not a contradiction"
            );
            r
        }
        other => panic!(
            "{a:?} vs {b:?}: expected a contradiction, got {other:?}{}",
            debug(a, b)
        ),
    }
}

#[track_caller]
fn related(a: &str, b: &str) -> String {
    match verdict(a, b) {
        Some((Kind::Related, r)) => r,
        other => panic!(
            "{a:?} vs {b:?}: expected related, got {other:?}{}",
            debug(a, b)
        ),
    }
}

#[track_caller]
fn nothing(a: &str, b: &str) {
    if let Some(v) = verdict(a, b) {
        panic!("{a:?} vs {b:?}: expected nothing, got {v:?}{}", debug(a, b));
    }
}

#[test]
fn lexicon_compiles() {
    assert_eq!(lexicon::Lexicon::get().broken, 0);
}

#[test]
fn the_issue_example() {
    let private = "---\nname: mock-db\ndescription: mock the database in integration tests\ntype: feedback\n---\nMock the database in integration tests.\n\n**Why:** the suite is slow.\n";
    let team = "---\nname: testing-policy\ndescription: integration tests hit a real database\ntype: feedback\n---\nIntegration tests must hit a real database, not mocks.\n\n**Why:** a mocked test passed while the prod migration failed.\n**How to apply:** any test under tests/ that touches storage.\n";
    let f = compare(
        &[Note {
            path: "mock-db.md",
            text: private,
        }],
        &[Note {
            path: "testing-policy.md",
            text: team,
        }],
    );
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].kind, Kind::Contradiction);
    assert_eq!(
        (f[0].a.as_str(), f[0].b.as_str()),
        ("mock-db.md", "testing-policy.md")
    );
    let r = &f[0].reason;
    assert!(
        r.starts_with("both about the database in tests (integration tests);"),
        "{r}"
    );
    assert!(
        r.contains("\"Mock the database in integration tests\""),
        "{r}"
    );
    assert!(r.contains("must hit a real database"), "{r}");
    // The same through the single-candidate entry point.
    let one = check_one(
        &Note {
            path: "mock-db.md",
            text: private,
        },
        &[Note {
            path: "testing-policy.md",
            text: team,
        }],
    );
    assert_eq!(one, f);
    // Serialized the way the wire and `check --json` carry it.
    let json = serde_json::to_value(&f[0]).unwrap();
    assert_eq!(json["kind"], "contradiction");
}

// --- Polarity cue families -------------------------------------------------------------------

#[test]
fn always_vs_never() {
    contradiction(
        "Always squash-merge pull requests.",
        "Never squash pull requests when merging.",
    );
    contradiction(
        "You must use tabs for indentation.",
        "Tabs must never be used for indentation.",
    );
}

#[test]
fn do_vs_dont() {
    contradiction(
        "Run `cargo fmt` before committing.",
        "Don't run `cargo fmt` before committing; CI does it.",
    );
    contradiction("Commit the lockfile.", "Do not commit lockfiles.");
    contradiction(
        "Add emoji to commit messages.",
        "No emoji in commit messages.",
    );
}

#[test]
fn avoid_stop_skip_no_longer() {
    contradiction("Avoid tabs for indentation.", "Indent with tabs.");
    contradiction(
        "Stop adding license headers to new files.",
        "Every new file must start with the license header.",
    );
    contradiction("Skip the e2e suite in CI.", "CI must run the e2e suite.");
    contradiction("We no longer use yarn.", "Use yarn to install packages.");
    // What was replaced or retired is given up, in any language.
    contradiction(
        "The Jenkins pipeline was replaced by GitHub Actions last year.",
        "Add new build steps to the Jenkins pipeline.",
    );
    contradiction(
        "`ntpd` temel imajlardan 2023'te kaldırıldı.",
        "Sunucularda saat eşitleme için `ntpd` kurulur.",
    );
    contradiction(
        "Teamets delade lösenord i 1Password är avvecklade; vi använder Bitwarden.",
        "Spara teamets delade lösenord i 1Password.",
    );
}

#[test]
fn instead_of_rather_than_over_without() {
    contradiction("Indent with spaces instead of tabs.", "Indent with tabs.");
    contradiction(
        "Use `ripgrep` rather than `grep -r`.",
        "Search with `grep -r`.",
    );
    contradiction("Prefer pnpm over npm.", "Install packages with npm.");
    contradiction(
        "Commit without running `cargo test`.",
        "Always run `cargo test` before committing.",
    );
}

#[test]
fn is_fine_and_optional() {
    contradiction(
        "Force-pushing to main is fine after a bad merge.",
        "Never force-push to main.",
    );
    contradiction(
        "Docstrings are optional.",
        "Every public function must have a docstring.",
    );
    contradiction(
        "No need to write a changelog entry; the release tool generates it.",
        "Always write a CHANGELOG entry for user-visible changes.",
    );
    // Two permissions don't contradict each other.
    related(
        "Tabs are fine for indentation.",
        "Spaces are fine for indentation.",
    );
}

#[test]
fn negation_not_lifted_by_a_weak_verb() {
    // "don't use X" stays a negation; "never X, always Y" switches.
    contradiction("Don't use npm.", "Use npm for installs.");
    let r = contradiction("Never use tabs, always use spaces.", "Indent with tabs.");
    assert!(r.contains("indentation"), "{r}");
}

#[test]
fn conditions_and_places_are_not_directives() {
    // "when squash-merging" does not ask to squash.
    related(
        "When squash-merging, use the PR title as the commit subject.",
        "Merge pull requests with a merge commit.",
    );
    // "in commit messages" is where the rule applies, not what it forbids.
    related(
        "Write the PR title in the imperative mood.",
        "No emoji in commit messages or PR titles.",
    );
}

#[test]
fn same_choice_in_other_words_is_not_a_contradiction() {
    related(
        "Squash-merge every pull request.",
        "Use 'Squash and merge' on GitHub for PRs.",
    );
    related(
        "Use pnpm.",
        "Install dependencies with pnpm install --frozen-lockfile in CI.",
    );
}

// --- Lexicon ---------------------------------------------------------------------------------

#[test]
fn lexicon_exclusive_choices() {
    let r = contradiction("Use npm to install packages.", "This repo uses pnpm.");
    assert!(r.contains("package manager"), "{r}");
    contradiction("Install packages with yarn.", "Install packages with bun.");
    let r = contradiction(
        "Land pull requests with a merge commit.",
        "Squash-merge every pull request.",
    );
    assert!(r.contains("merged"), "{r}");
    contradiction(
        "Use rebase-and-merge for pull requests.",
        "Squash-merge every pull request.",
    );
    contradiction("Indent with tabs.", "Indent with 4 spaces.");
    contradiction("Indent with 2 spaces.", "Indent with 4 spaces.");
    contradiction(
        "Name variables in camelCase.",
        "Name variables in snake_case.",
    );
    contradiction("Name files in kebab-case.", "Name files in snake_case.");
    contradiction("Log timestamps in UTC.", "Log timestamps in local time.");
    contradiction(
        "Mock the database in integration tests.",
        "Integration tests run against a throwaway Postgres.",
    );
    contradiction(
        "Wrap lines at 80 columns.",
        "The max line width is 120 characters.",
    );
    contradiction(
        "Use single quotes for strings.",
        "Use double quotes for strings.",
    );
    contradiction(
        "Format Python with black.",
        "Format Python with ruff format.",
    );
    contradiction(
        "Rebase your branch onto main to update it.",
        "Merge main into your branch to update it.",
    );
}

#[test]
fn lexicon_claims_the_more_specific_name() {
    // "--force-with-lease" is not a plain "--force".
    related(
        "Use --force-with-lease when updating your PR branch.",
        "Never use --force on your PR branch.",
    );
    // "npm packages" are packages, whatever installs them.
    nothing("Check the licence of new npm packages.", "Use pnpm.");
    // "spaces in file names" is not indentation.
    nothing("Never put spaces in file names.", "Indent with tabs.");
}

#[test]
fn unrelated_and_one_shared_word() {
    nothing(
        "Use rg instead of grep.",
        "Add a CHANGELOG entry for user-visible changes.",
    );
    nothing(
        "Never commit .env files.",
        "Commit the regenerated openapi.yaml with API changes.",
    );
    nothing("Keep your answers short.", "Keep functions under 50 lines.");
}

// --- Scope -----------------------------------------------------------------------------------

#[test]
fn scope_separates_rules() {
    let r = related(
        "Force-pushing your own feature branch is fine.",
        "Never force-push shared branches like main.",
    );
    assert!(
        r.contains("different scopes")
            && r.contains("your own branch")
            && r.contains("shared branches"),
        "{r}"
    );
    related(
        "Show times in the UI in the user's local timezone.",
        "Log timestamps in UTC.",
    );
    related(
        "Log timestamps in UTC.",
        "Store timestamps in local time in the database.",
    );
    related(
        "unwrap() is fine in tests.",
        "Never call unwrap() in library code.",
    );
    related(
        "Mock the database in unit tests.",
        "Integration tests must hit a real database.",
    );
    related(
        "Use 2-space indentation in the frontend.",
        "Backend code uses 4-space indentation.",
    );
    related(
        "Don't run the e2e suite locally.",
        "CI must run the e2e suite.",
    );
    related(
        "Name Python functions in snake_case.",
        "Name TypeScript functions in camelCase.",
    );
    related(
        "Use kebab-case for file names.",
        "Use camelCase for variables.",
    );
    related("Use emoji in CLI output.", "No emoji in logs.");
    // Who the rule is for: employees, contractors, interns.
    let r = related(
        "Contractors don't receive a home-office allowance.",
        "Each employee gets a one-time home-office allowance of EUR 400.",
    );
    assert!(r.contains("contractors vs employees"), "{r}");
    related(
        "Stajyerler hiçbir koşulda fazla mesai yapmaz.",
        "Tam zamanlı çalışanlar, yöneticinin onayıyla fazla mesai yapabilir.",
    );
    // Who uses it: customers or the company's own people.
    let r = related(
        "Internal admin tools don't mark required fields at all.",
        "Customer-facing forms mark optional fields, not required ones.",
    );
    assert!(r.contains("different scopes"), "{r}");
    contradiction(
        "A home-office allowance is never granted.",
        "Each employee is granted a one-time home-office allowance of EUR 400.",
    );
}

#[test]
fn a_rule_without_scope_applies_everywhere() {
    contradiction(
        "Force-pushing your own feature branch is fine.",
        "Never force-push.",
    );
    contradiction(
        "Indent with tabs.",
        "Frontend code is indented with 2 spaces.",
    );
}

#[test]
fn scope_of_a_sentence_part() {
    // The rule is "tabs in Go, spaces in Python"; the other says tabs in Python.
    contradiction(
        "Use tabs in Go files, spaces in Python files.",
        "Indent Python files with tabs.",
    );
    related(
        "Use tabs in Go files, spaces in Python files.",
        "Indent Go files with tabs.",
    );
}

// --- CJK and other languages -----------------------------------------------------------------

#[test]
fn chinese() {
    let r = contradiction(
        "集成测试里可以直接 mock 数据库。",
        "集成测试必须连接真实的数据库，不要使用 mock。",
    );
    assert!(r.contains("集成测试里可以直接 mock 数据库"), "{r}");
    related(
        "单元测试里可以 mock 数据库。",
        "集成测试必须连接真实数据库。",
    );
    contradiction(
        "安装依赖用 npm，不要用 pnpm。",
        "Use pnpm for everything; npm is not allowed.",
    );
    // Shared CJK terms make a subject.
    let r = related(
        "数据库迁移必须先在预发环境运行。",
        "数据库迁移需要两个人评审。",
    );
    assert!(r.contains("数据库迁移"), "{r}");
}

#[test]
fn japanese_and_korean() {
    contradiction(
        "インデントにはタブを使う。",
        "インデントはスペース2つ。タブは使わないこと。",
    );
    related(
        "ログのタイムスタンプは UTC で出力する。",
        "画面に表示する時刻はユーザーのローカル時間にする。",
    );
    contradiction(
        "PR は rebase してからマージする。マージコミットは作らない。",
        "Always merge PRs with a merge commit.",
    );
    contradiction(
        "cargo fmt 는 직접 실행하지 마세요.",
        "Run cargo fmt before every push.",
    );
}

#[test]
fn european_languages() {
    contradiction(
        "Verwende npm für neue Pakete.",
        "Wir nutzen ausschließlich pnpm; npm install ist verboten.",
    );
    related(
        "In Unit-Tests darf die Datenbank gemockt werden.",
        "Integrationstests müssen gegen eine echte Datenbank laufen.",
    );
    contradiction(
        "Nunca hagas squash de los commits al fusionar un PR.",
        "Los PR se fusionan siempre con squash.",
    );
    contradiction(
        "Les horodatages des logs doivent être en heure locale.",
        "Log timestamps are UTC.",
    );
    contradiction(
        "Schreibe Commit-Nachrichten auf Deutsch.",
        "Commit messages must be written in English.",
    );
    // "No X" determiners negate as "never" does.
    contradiction(
        "Niente icon font nell'app web: solo SVG.",
        "Nell'app web usiamo un icon font.",
    );
    contradiction(
        "Aucun appel à Google Fonts depuis le site.",
        "Le site charge ses polices depuis Google Fonts.",
    );
    contradiction(
        "Ningún endpoint devuelve trazas de pila.",
        "Los endpoints devuelven trazas de pila.",
    );
    // And a ban the other side states after its subject is the same ban.
    let r = related(
        "Never put @Autowired on a field.",
        "@Autowired on fields is rejected in review.",
    );
    assert!(r.contains("no opposing directives"), "{r}");
}

// --- What is read ----------------------------------------------------------------------------

#[test]
fn why_and_how_lines_are_context() {
    let a = "---\nname: readme\ndescription: keep the readme short\ntype: feedback\n---\nKeep the README short.\n\n**Why:** Also, never mock the database in integration tests.\n**How to apply:** mock nothing.\n";
    let b = fb("Mock the database in integration tests.");
    assert!(
        compare(
            &[Note { path: "a", text: a }],
            &[Note {
                path: "b",
                text: &b
            }]
        )
        .is_empty()
    );
    // Labels in other languages end the rule too.
    let a = "---\nname: zh\ndescription: x\ntype: feedback\n---\n保持 README 简短。\n\n**原因：** 集成测试里可以 mock 数据库。\n";
    let b = fb("集成测试必须连接真实的数据库。");
    assert!(
        compare(
            &[Note { path: "a", text: a }],
            &[Note {
                path: "b",
                text: &b
            }]
        )
        .is_empty()
    );
}

#[test]
fn description_is_part_of_the_directive() {
    let a = "---\nname: a\ndescription: Use npm to install packages\ntype: feedback\n---\n**Why:** habit.\n";
    let b = fb("This repo uses pnpm.");
    let f = compare(
        &[Note { path: "a", text: a }],
        &[Note {
            path: "b",
            text: &b,
        }],
    );
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].kind, Kind::Contradiction);
}

#[test]
fn only_feedback_memories_that_parse() {
    let rule = "Use npm to install packages.";
    let project = format!("---\nname: p\ndescription: x\ntype: project\n---\n{rule}\n");
    let user = format!("---\nname: u\ndescription: x\ntype: user\n---\n{rule}\n");
    let untyped = format!("---\nname: u\ndescription: x\n---\n{rule}\n");
    let broken = format!("---\nname: [b\ntype: feedback\n---\n{rule}\n");
    let bare = rule.to_owned();
    let meta = format!("---\nname: m\ndescription: x\nmetadata:\n  type: feedback\n---\n{rule}\n");
    let crlf = fb(rule).replace('\n', "\r\n");
    let team = fb("This repo uses pnpm.");
    let b = [Note {
        path: "team.md",
        text: &team,
    }];
    for (text, expected) in [
        (&project, 0),
        (&user, 0),
        (&untyped, 0),
        (&broken, 0),
        (&bare, 0),
        (&meta, 1),
        (&crlf, 1),
    ] {
        let f = compare(&[Note { path: "p.md", text }], &b);
        assert_eq!(f.len(), expected, "{text:?}: {f:?}");
    }
}

#[test]
fn findings_are_in_order_and_pairwise() {
    let texts: Vec<String> = [
        "Use npm to install packages.",
        "Indent with tabs.",
        "Mock the database in integration tests.",
        "Keep your answers short.",
    ]
    .iter()
    .map(|r| fb(r))
    .collect();
    let team: Vec<String> = [
        "This repo uses pnpm.",
        "Integration tests must hit a real database.",
        "Indent with 2 spaces.",
        "Give detailed answers.",
    ]
    .iter()
    .map(|r| fb(r))
    .collect();
    let a: Vec<Note<'_>> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| Note {
            path: ["a0", "a1", "a2", "a3"][i],
            text: t,
        })
        .collect();
    let b: Vec<Note<'_>> = team
        .iter()
        .enumerate()
        .map(|(i, t)| Note {
            path: ["b0", "b1", "b2", "b3"][i],
            text: t,
        })
        .collect();
    let all = compare(&a, &b);
    let got: Vec<(&str, &str, Kind)> = all
        .iter()
        .map(|f| (f.a.as_str(), f.b.as_str(), f.kind))
        .collect();
    assert_eq!(
        got,
        vec![
            ("a0", "b0", Kind::Contradiction),
            ("a1", "b2", Kind::Contradiction),
            ("a2", "b1", Kind::Contradiction),
            ("a3", "b3", Kind::Contradiction),
        ]
    );
    // Each verdict depends on its two memories only.
    for f in &all {
        let x = a.iter().find(|n| n.path == f.a).unwrap();
        let y = b.iter().find(|n| n.path == f.b).unwrap();
        assert_eq!(check_one(x, std::slice::from_ref(y)), vec![f.clone()]);
    }
    assert_eq!(compare(&a, &b), all, "deterministic");
}

#[test]
fn hostile_input_is_bounded() {
    let cues =
        "never always must not don't instead of rather than is fine 不要 必须 しない ".repeat(3000);
    let cjk = "集成测试必须连接真实的数据库".repeat(5000);
    let ticks = "`".repeat(50_000);
    let commas = "a, (b) — c: d; ".repeat(5000);
    let lines = "- x\n".repeat(20_000);
    let long_word = "a".repeat(90_000);
    let nested = "(".repeat(30_000);
    for body in [&cues, &cjk, &ticks, &commas, &lines, &long_word, &nested] {
        let text = format!("---\nname: h\ndescription: x\ntype: feedback\n---\n{body}");
        let notes = vec![
            Note {
                path: "h",
                text: &text
            };
            3
        ];
        let _ = compare(&notes, &notes);
    }
}

fn arbitrary_body() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "\\PC{0,400}",
        proptest::collection::vec(
            prop_oneof![
                Just("never ".to_owned()),
                Just("always ".to_owned()),
                Just("don't ".to_owned()),
                Just("instead of ".to_owned()),
                Just("is fine".to_owned()),
                Just("tabs ".to_owned()),
                Just("spaces ".to_owned()),
                Just("npm ".to_owned()),
                Just("pnpm ".to_owned()),
                Just("mock the database ".to_owned()),
                Just("real database ".to_owned()),
                Just("in integration tests".to_owned()),
                Just("`cargo fmt` ".to_owned()),
                Just("unwrap() ".to_owned()),
                Just("不要使用 mock".to_owned()),
                Just("必须".to_owned()),
                Just("しないこと".to_owned()),
                Just("**Why:** ".to_owned()),
                Just(", ".to_owned()),
                Just(". ".to_owned()),
                Just("(".to_owned()),
                Just(")".to_owned()),
                Just("`".to_owned()),
                Just("\n".to_owned()),
                Just("\u{200b}".to_owned()),
                Just("\u{0301}".to_owned()),
                Just("İ".to_owned()),
                "\\PC{0,12}",
            ],
            0..60,
        )
        .prop_map(|v| v.concat()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn never_panics_on_arbitrary_text(a in any::<String>(), b in "\\PC*") {
        let _ = compare(&[Note { path: "a", text: &a }], &[Note { path: "b", text: &b }]);
    }

    #[test]
    fn never_panics_on_arbitrary_bodies(a in arbitrary_body(), b in arbitrary_body(), d in "\\PC{0,80}") {
        let ta = format!("---\nname: a\ndescription: {}\ntype: feedback\n---\n{a}", serde_json::to_string(&d).unwrap());
        let tb = format!("---\nname: b\ndescription: x\ntype: feedback\n---\n{b}");
        let f = compare(&[Note { path: "a", text: &ta }], &[Note { path: "b", text: &tb }]);
        prop_assert!(f.len() <= 1);
        for x in &f {
            prop_assert!(!x.reason.contains('\n') && !x.reason.contains('\r'));
            prop_assert!(x.reason.starts_with("both about "));
        }
        // Symmetric in kind: swapping the sides finds the same relation (amounts are the
        // exception: "within 15 minutes" breaks "within 5 minutes", not the other way round).
        let g = compare(&[Note { path: "b", text: &tb }], &[Note { path: "a", text: &ta }]);
        if !f.iter().chain(&g).any(|x| x.reason.contains("different amounts")) {
            prop_assert_eq!(f.iter().map(|x| x.kind).collect::<Vec<_>>(), g.iter().map(|x| x.kind).collect::<Vec<_>>());
        }
    }
}

#[test]
fn amounts_are_read_with_their_unit() {
    let x = analyze(&fb(
        "Keep old API versions for at least 6 months after the new one ships.",
    ))
    .unwrap();
    let q = quantities(&x);
    assert_eq!(q.len(), 1, "{q:?}");
    assert_eq!((q[0].value, q[0].unit.as_str()), (6.0, "month"));
    let x = analyze(&fb("Every MR needs two approvals before merging.")).unwrap();
    let q = quantities(&x);
    assert_eq!(
        (q[0].value, q[0].unit.as_str()),
        (2.0, "approvals"),
        "{q:?}"
    );
    let x = analyze(&fb("旧版本至少保留 6 个月。")).unwrap();
    assert_eq!(quantities(&x)[0].unit, "month");
}

#[test]
fn different_amounts_of_one_thing_contradict() {
    let v = verdict(
        "Keep old API versions running for at least 6 months after the new version ships.",
        "Old API versions are turned off 3 months after the new version ships.",
    );
    assert_eq!(v.as_ref().map(|x| x.0), Some(Kind::Contradiction), "{v:?}");
    assert!(v.unwrap().1.contains("different amounts"));
    let v = verdict(
        "Keep old API versions running for at least 6 months after the new version ships.",
        "Keep old API versions running for 6 months after the new version ships, then remove them.",
    );
    assert_ne!(v.map(|x| x.0), Some(Kind::Contradiction));
    // Units of time compare across units: a day is 24 hours, an hour 60 minutes.
    let r = contradiction(
        "Issue user access tokens that are valid for 24 hours.",
        "User access tokens expire after at most 15 minutes.",
    );
    assert!(r.contains("different amounts"), "{r}");
    let v = verdict(
        "User access tokens expire after one day.",
        "User access tokens expire after at most 24 hours.",
    );
    assert_ne!(v.map(|x| x.0), Some(Kind::Contradiction));
    // A month is no fixed number of days.
    let v = verdict(
        "Keep old API versions running for 30 days after the new version ships.",
        "Keep old API versions running for a month after the new version ships.",
    );
    assert_ne!(v.map(|x| x.0), Some(Kind::Contradiction));
}

#[test]
fn one_subject_under_different_names_is_one_term() {
    let keys =
        |rule: &str| -> Vec<String> { terms(&fb(rule)).into_iter().map(|(k, _)| k).collect() };
    for (a, b, key) in [
        (
            "Every MR needs a reviewer.",
            "Pull requests need a reviewer.",
            "pr",
        ),
        (
            "Set limits on k8s pods.",
            "Set limits on Kubernetes pods.",
            "kubernetes",
        ),
        (
            "ITs hit pg 15.",
            "Integration tests use PostgreSQL.",
            "postgres",
        ),
        (
            "ITs hit pg 15.",
            "Integration tests use PostgreSQL.",
            "integration-test",
        ),
        (
            "所有关联列都要建外键约束。",
            "No foreign key constraints in the orders cluster.",
            "foreign-key",
        ),
        (
            "Datenbank-Migrationen laufen vor dem Deploy.",
            "Database migrations run first.",
            "database",
        ),
        (
            "テストは必ず CI で実行する。",
            "Run the tests in CI.",
            "test",
        ),
    ] {
        assert!(keys(a).contains(&key.to_owned()), "{a}: {:?}", keys(a));
        assert!(keys(b).contains(&key.to_owned()), "{b}: {:?}", keys(b));
    }
    // "its" is a possessive, not integration tests.
    assert!(!keys("Keep its config small.").contains(&"integration-test".to_owned()));
}

#[test]
fn bounds_in_the_same_direction_can_both_be_kept() {
    // Acknowledging within 5 minutes keeps to both: the stricter bound refines the looser one,
    // in either order. They are listed, not refused.
    let v = verdict(
        "Acknowledge every page within 15 minutes.",
        "Pages are acknowledged within 5 minutes, day or night.",
    );
    assert_eq!(v.as_ref().map(|x| x.0), Some(Kind::Related), "{v:?}");
    let v = verdict(
        "Acknowledge every page within 5 minutes.",
        "Pages are acknowledged within 15 minutes, day or night.",
    );
    assert_eq!(v.as_ref().map(|x| x.0), Some(Kind::Related), "{v:?}");
    // An exact amount inside the other's bound keeps to it.
    let v = verdict(
        "The admin console requests access tokens with a 10-minute lifetime.",
        "Access tokens have a lifetime of at most 15 minutes.",
    );
    assert_eq!(v.as_ref().map(|x| x.0), Some(Kind::Related), "{v:?}");
    // Two approvals against one is still a contradiction: the unit is the subject.
    let v = verdict(
        "A pull request needs two approvals before it is merged.",
        "One approval is enough to merge a pull request.",
    );
    assert_eq!(v.as_ref().map(|x| x.0), Some(Kind::Contradiction), "{v:?}");
}

#[test]
fn amounts_for_different_scopes_do_not_contradict() {
    let v = verdict(
        "Staging database backups are kept for 7 days.",
        "Production database backups are kept for 90 days.",
    );
    assert_ne!(v.as_ref().map(|x| x.0), Some(Kind::Contradiction), "{v:?}");
}

#[test]
fn a_lexicon_pick_is_about_what_its_sentence_names() {
    // Both name a naming style, for different things. (Two one-line memories that are little
    // more than the style are still taken to be about it: see the module docs.)
    let v = verdict(
        "Database tables are plural and snake_case, and every table has a created_at column \
         filled by the database.",
        "Feature flag keys are kebab-case with the owning team as prefix, e.g. \
         payments-new-checkout; flags are removed within two sprints of full rollout.",
    );
    assert_ne!(v.as_ref().map(|x| x.0), Some(Kind::Contradiction), "{v:?}");
    // The same thing, two styles.
    let v = verdict(
        "JSON field names in the public API are camelCase.",
        "Field names in API payloads are snake_case.",
    );
    assert_eq!(v.as_ref().map(|x| x.0), Some(Kind::Contradiction), "{v:?}");
}

#[test]
fn memories_worded_alike_are_related() {
    // Few terms weigh enough in common, but the wording is close.
    let v = verdict(
        "Regenerate the GraphQL client types after every schema change and commit them.",
        "GraphQL client types are regenerated in CI from the schema; never commit generated types.",
    );
    assert!(v.is_some(), "{v:?}");
}

#[test]
fn antonyms_oppose_without_a_negation() {
    let v = verdict(
        "Use absolute imports for sibling modules in the package.",
        "Use relative imports for sibling modules in the package.",
    );
    assert_eq!(v.as_ref().map(|x| x.0), Some(Kind::Contradiction), "{v:?}");
    assert!(
        v.unwrap()
            .1
            .contains("opposite words (absolute vs relative)"),
        "reason names the words"
    );
    let v = verdict(
        "Ship each feature as one large pull request so reviewers see it whole.",
        "Ship each feature as a chain of small pull requests that reviewers can read in one sitting.",
    );
    assert_eq!(v.as_ref().map(|x| x.0), Some(Kind::Contradiction), "{v:?}");
    // A sentence that says both words says neither.
    let v = verdict(
        "Run the linter before and after rebasing the branch.",
        "Run the linter after rebasing the branch.",
    );
    assert_ne!(v.as_ref().map(|x| x.0), Some(Kind::Contradiction), "{v:?}");
}

#[test]
fn what_fails_without_something_needs_it() {
    let v = verdict(
        "Every alert carries a `runbook_url` annotation.",
        "Alerts without a `runbook_url` annotation fail the lint job.",
    );
    assert_ne!(v.as_ref().map(|x| x.0), Some(Kind::Contradiction), "{v:?}");
    let v = verdict(
        "Alerts may go out without a `runbook_url` annotation.",
        "Alerts without a `runbook_url` annotation fail the lint job.",
    );
    assert!(v.is_some(), "{v:?}");
}

#[test]
fn two_names_that_share_a_part_are_not_one_subject() {
    let v = verdict(
        "Each API error carries a stable machine-readable code in SCREAMING_SNAKE_CASE, like \
         `CARD_DECLINED` or `QUOTA_EXCEEDED`.",
        "CSV exports always start with a header row using snake_case column names, one row per \
         order line.",
    );
    assert_ne!(v.as_ref().map(|x| x.0), Some(Kind::Contradiction), "{v:?}");
}

#[test]
fn a_named_setting_is_an_amount() {
    let v = verdict(
        "Every standard SQS queue has a dead-letter queue with `maxReceiveCount: 5`.",
        "All queues use a redrive policy with `maxReceiveCount: 3`.",
    );
    assert_eq!(v.as_ref().map(|x| x.0), Some(Kind::Contradiction), "{v:?}");
    // An acronym before a number is no setting: RFC 7807 and RFC 3339 are two standards.
    let v = verdict(
        "Error responses use RFC 7807 problem details.",
        "Timestamps in responses use RFC 3339.",
    );
    assert_ne!(v.as_ref().map(|x| x.0), Some(Kind::Contradiction), "{v:?}");
}

#[test]
fn a_named_thing_retired_or_banned_contradicts_its_use() {
    // One name is enough when the other memory retires or bans it as a whole.
    let r = contradiction(
        "I run `mypy --strict` locally and in CI for all our Python services.",
        "The CI type check is Pyright in strict mode; `mypy` was removed from the toolchain in 2024.",
    );
    assert!(r.contains("mypy"), "{r}");
    contradiction(
        "Yeni üretim kümelerinde servis ağı olarak Istio kuruyorum.",
        "Servis ağı olarak yalnızca Linkerd kullanıyoruz; Istio 2023'te kaldırıldı.",
    );
    contradiction(
        "I encrypt sensitive fields with PyCryptodome.",
        "Application code encrypts with the `cryptography` package; PyCryptodome is on the deny list.",
    );
    // A common word in a retiring sentence is not the thing retired.
    related(
        "Update screenshots inside the Playwright image.",
        "Visual checks moved to Playwright; Chromatic was retired and screenshots live in the repo.",
    );
}

#[test]
fn european_bans_in_the_plural() {
    contradiction(
        "Dans les guides, j'écris « cliquez ici » pour les liens.",
        "Le texte d'un lien décrit sa destination ; « cliquez ici » et « ce lien » sont interdits.",
    );
    contradiction(
        "I nya skärmar använder jag Material Symbols.",
        "Vi använder Lucide-ikoner; Material Symbols togs bort i designsystemet.",
    );
}

#[test]
fn the_tool_a_thing_is_made_in_is_what_the_rule_is_about() {
    // "in Pulumi" names the tool, "in Go services" the place.
    let made_in = explain(&fb("I write new infrastructure in Pulumi with TypeScript."));
    assert!(made_in.contains("term pulumi Pos"), "{made_in}");
    let place = explain(&fb("Return wrapped errors in Go services."));
    assert!(!place.contains("term servic"), "{place}");
}

#[test]
fn french_ne_que_is_only_and_elisions_are_not_words() {
    // "ne … que" restricts ("only on Tuesdays"); "ne … pas" negates.
    contradiction("On ne déploie que le mardi.", "On ne déploie pas le mardi.");
    let only = explain(&fb("On ne déploie que le mardi."));
    assert!(only.contains("term mardi Pos"), "{only}");
    // "l'API", "qu'en", "dell'utente": the word after the apostrophe is the term, and a cue
    // after one ("j'utilise") is still a cue.
    let read = explain(&fb(
        "J'utilise l'API d'un client qu'en CI, nell'ambiente di test.",
    ));
    for t in ["term api ", "term client ", "term environment "] {
        assert!(read.contains(t), "{t}: {read}");
    }
    let terms: String = read
        .lines()
        .filter(|l| l.starts_with("term ") || l.starts_with("topic terms"))
        .collect();
    for t in ["l'api", "d'un", "qu'en", "j'utilis", "nell'"] {
        assert!(!terms.contains(t), "{t}: {read}");
    }
}

#[test]
fn turkish_verbs_negated_by_their_suffix() {
    // "kullanmıyoruz" (we don't use) and "kullanılmaz" (is not used) negate what comes before
    // them; a case ending after a name ("Story point'i", "Redis'te") is not part of the name.
    contradiction(
        "Geliştirme işlerini planlamada Fibonacci story point ile tahmin ederim.",
        "Planlamada story point kullanmıyoruz; işleri gün olarak tahmin ederiz.",
    );
    let read = explain(&fb("Redis'te TTL'siz anahtar kullanılmaz."));
    assert!(read.contains("term redis Neg"), "{read}");
    // "geçmez" (does not exceed) states a bound, not a ban.
    let bound = explain(&fb("Önbellek anahtarının TTL'i bir saati geçmez."));
    assert!(!bound.contains(" Neg "), "{bound}");
}

#[test]
fn a_negated_bound_is_the_opposite_bound() {
    // "no function above 3008 MB" is at most 3008 MB: 128 MB keeps to it.
    assert!(
        !matches!(
            verdict(
                "No Lambda function gets memory above 3008 MB without FinOps approval.",
                "Every Lambda function gets 128 MB of memory by default.",
            ),
            Some((Kind::Contradiction, _))
        ),
        "{}",
        debug(
            "No Lambda function gets memory above 3008 MB without FinOps approval.",
            "Every Lambda function gets 128 MB of memory by default."
        )
    );
    // "never below 512 MB" is at least 512 MB: 128 MB breaks it.
    let r = contradiction(
        "Lambda functions never get memory below 512 MB.",
        "Every Lambda function gets 128 MB of memory by default.",
    );
    assert!(r.contains("different amounts"), "{r}");
}
