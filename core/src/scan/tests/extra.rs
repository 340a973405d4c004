//! Extra rules: how a configured rule is checked, what it reports, and the rule-set identity.

use super::*;

fn rule(id: &str, category: Category, pattern: &str) -> ExtraRule {
    ExtraRule {
        id: id.to_owned(),
        category,
        pattern: pattern.to_owned(),
        description: format!("{id} found"),
    }
}

fn acme() -> ExtraRule {
    rule(
        "acme-internal-token",
        Category::Secret,
        r"ACME-[0-9A-Z]{16}",
    )
}

fn with(rules: &[ExtraRule]) -> Scanner {
    Scanner::with_extra_rules(rules).expect("valid rules")
}

#[test]
fn an_extra_secret_rule_reports_like_a_built_in_one() {
    let mut g = Gen::new(7);
    let token = format!("ACME-{}", g.pick(UPPER_ALNUM, 16));
    let text = format!("# Staging\n\nThe deploy bot signs in with {token} on weekdays.\n");
    assert!(
        Scanner::new().scan(&text).is_empty(),
        "the built-in rules pass it"
    );
    let findings = with(&[acme()]).scan(&text);
    assert_eq!(findings.len(), 1, "{findings:?}");
    let f = &findings[0];
    assert_eq!(
        (f.rule, f.category, f.line, f.column),
        ("acme-internal-token", Category::Secret, 3, 30)
    );
    assert_eq!(f.preview, "ACME\u{2026}");
    assert_eq!(
        f.fingerprint,
        sha256_hex(&[b"acme-internal-token", b"\0", token.as_bytes()])
    );
    assert_no_leak(f, &token);
}

#[test]
fn group_one_is_the_value_and_an_injection_rule_shows_its_description() {
    let mut g = Gen::new(8);
    let value = g.alnum(20);
    let text = format!("intro\nacme_session = \"{value}\"\nrun the nightly purge of all logs\n");
    let scanner = with(&[
        rule(
            "acme-session",
            Category::Secret,
            r#"acme_session\s*=\s*"([0-9A-Za-z]{20})""#,
        ),
        rule("nightly-purge", Category::Injection, r"(?i)nightly purge"),
    ]);
    let findings = scanner.scan(&text);
    let secret = findings
        .iter()
        .find(|f| f.rule == "acme-session")
        .expect("secret");
    assert_eq!(
        (secret.line, secret.column),
        (2, 17),
        "the value, not the name"
    );
    assert_eq!(
        secret.fingerprint,
        sha256_hex(&[b"acme-session", b"\0", value.as_bytes()])
    );
    assert_no_leak(secret, &value);
    let inj = findings
        .iter()
        .find(|f| f.rule == "nightly-purge")
        .expect("injection");
    assert_eq!(
        (inj.category, inj.line, inj.preview.as_str()),
        (Category::Injection, 3, "nightly-purge found")
    );
}

#[test]
fn a_hidden_character_inside_the_token_does_not_hide_it() {
    let mut g = Gen::new(9);
    let body = g.pick(UPPER_ALNUM, 16);
    let text = format!("see ACME-{}\u{200B}{}\n", &body[..8], &body[8..]);
    let findings = with(&[acme()]).scan(&text);
    assert!(
        findings.iter().any(|f| f.rule == "acme-internal-token"),
        "{findings:?}"
    );
}

#[test]
fn without_extra_rules_the_scanner_is_the_built_in_one() {
    let mut g = Gen::new(10);
    let text = format!("key: {}\nplain words\n", g.github("ghp"));
    assert_eq!(with(&[]).scan(&text), Scanner::new().scan(&text));
    assert_eq!(with(&[]).rule_set_id(), Scanner::new().rule_set_id());
    assert_eq!(
        with(&[acme()]).extra_rule_ids().collect::<Vec<_>>(),
        ["acme-internal-token"]
    );
}

#[test]
fn the_rule_set_id_changes_with_any_rule() {
    let base = Scanner::new().rule_set_id().to_owned();
    assert_eq!(base.len(), 16);
    assert!(base.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(Scanner::new().rule_set_id(), base, "stable");
    assert_eq!(scanner().rule_set_id(), base, "the shared scanner's");
    let one = with(&[acme()]).rule_set_id().to_owned();
    assert_ne!(one, base);
    assert_eq!(
        with(&[acme()]).rule_set_id(),
        one,
        "stable with extra rules"
    );
    let mut other_pattern = acme();
    other_pattern.pattern = r"ACME-[0-9A-Z]{20}".into();
    let mut other_id = acme();
    other_id.id = "acme-token".into();
    let mut other_category = acme();
    other_category.category = Category::Injection;
    let mut other_description = acme();
    other_description.description = "reworded".into();
    for (what, r, same) in [
        ("pattern", other_pattern, false),
        ("id", other_id, false),
        ("category", other_category, false),
        ("description", other_description, true),
    ] {
        assert_eq!(
            with(&[r]).rule_set_id() == one,
            same,
            "a changed {what} {} the identity",
            if same { "keeps" } else { "changes" }
        );
    }
}

#[test]
fn bad_rules_are_refused_with_the_rule_and_the_problem() {
    let cases: Vec<(ExtraRule, &str)> = vec![
        (rule("Acme_Token", Category::Secret, "x"), "kebab-case"),
        (rule("", Category::Secret, "x"), "kebab-case"),
        (rule("acme--token", Category::Secret, "x"), "kebab-case"),
        (rule("aws-access-key-id", Category::Secret, "x"), "built-in"),
        (
            rule("acme", Category::Policy, "x"),
            "`secret` or `injection`",
        ),
        (rule("acme", Category::Secret, ""), "1-4096 bytes"),
        (
            rule("acme", Category::Secret, "ACME-("),
            "not a valid regular expression",
        ),
        (
            rule("acme", Category::Secret, "a*"),
            "matches the empty text",
        ),
        (
            rule("acme", Category::Secret, r"\w{1000}\w{1000}\w{1000}"),
            "compiles to more than",
        ),
        (
            ExtraRule {
                description: "  ".into(),
                ..rule("acme", Category::Secret, "x")
            },
            "`description`",
        ),
        (
            ExtraRule {
                description: "two\nlines".into(),
                ..rule("acme", Category::Secret, "x")
            },
            "`description`",
        ),
    ];
    for (r, why) in cases {
        let id = r.id.clone();
        let Err(e) = Scanner::with_extra_rules(&[r]) else {
            panic!("rule `{id}` was accepted");
        };
        assert!(e.contains(why), "{id}: {e}");
        assert!(e.starts_with("scan rule #1"), "{e}");
        if !id.is_empty() {
            assert!(e.contains(&format!("`{id}`")), "{e}");
        }
    }
    let e = Scanner::with_extra_rules(&[acme(), acme()])
        .err()
        .expect("duplicate");
    assert!(
        e.starts_with("scan rule #2 `acme-internal-token`") && e.contains("unique"),
        "{e}"
    );
    let many: Vec<ExtraRule> = (0..=MAX_EXTRA_RULES)
        .map(|i| rule(&format!("r{i}"), Category::Secret, "x"))
        .collect();
    let e = Scanner::with_extra_rules(&many).err().expect("too many");
    assert!(e.contains("at most 200"), "{e}");
}
