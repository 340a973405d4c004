//! Properties over arbitrary input: no panics, positions inside the text, sorted output,
//! and no finding ever quoting more than four characters of a planted secret.

use proptest::prelude::*;

use super::*;

fn line_count(text: &str) -> u32 {
    text.split('\n').count() as u32
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_text_scans_without_panicking(text in "\\PC{0,400}") {
        let findings = scan(&text);
        let lines: Vec<&str> = text.split('\n').collect();
        for f in &findings {
            prop_assert!(f.line >= 1 && f.line <= line_count(&text));
            let width = lines[(f.line - 1) as usize].chars().count() as u32;
            prop_assert!(f.column >= 1 && f.column <= width.max(1));
            prop_assert_eq!(f.fingerprint.len(), 64);
        }
        let keys: Vec<(u32, u32, &str)> = findings.iter().map(|f| (f.line, f.column, f.rule)).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        prop_assert_eq!(keys, sorted);
    }

    #[test]
    fn mixed_scripts_invisibles_and_markup_scan_without_panicking(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("\u{200B}".to_owned()), Just("\u{200D}".to_owned()), Just("\u{FE0F}".to_owned()),
                Just("👩".to_owned()), Just("🏴".to_owned()), Just("\u{E0067}".to_owned()),
                Just("\u{E007F}".to_owned()), Just("ｇｈｐ_".to_owned()), Just("AKIA".to_owned()),
                Just("-----BEGIN PRIVATE KEY-----".to_owned()), Just("\\n".to_owned()),
                Just("\n".to_owned()), Just("\r\n".to_owned()), Just("://".to_owned()),
                Just("@".to_owned()), Just(":".to_owned()), Just("password=".to_owned()),
                Just("<system>".to_owned()), Just("curl ".to_owned()), Just("$TOKEN".to_owned()),
                Just("葛".to_owned()), Just("\u{E0100}".to_owned()), Just("ﬁ".to_owned()),
                "[A-Za-z0-9+/=_-]{0,40}",
            ],
            0..40,
        )
    ) {
        let text: String = parts.concat();
        let findings = scan(&text);
        for f in &findings {
            prop_assert!(f.line >= 1 && f.line <= line_count(&text));
        }
    }

    #[test]
    fn the_fast_special_character_scan_matches_the_plain_definition(text in "(\\PC|[\\x00-\\x1f\\x7f]){0,200}") {
        let naive: Vec<usize> = text
            .char_indices()
            .filter(|&(_, c)| !(matches!(c, ' '..='~' | '\n' | '\t' | '\r')))
            .map(|(i, _)| i)
            .collect();
        prop_assert_eq!(crate::scan::unicode::special_chars(&text), naive);
    }

    #[test]
    fn planted_tokens_are_found_and_never_leaked(
        seed in any::<u64>(),
        before in "[a-z ]{0,20}",
        after in "[a-z .]{0,20}",
    ) {
        let mut g = Gen::new(seed);
        let token = g.github("ghp");
        let text = format!("{before} {token} {after}");
        let findings = scan(&text);
        prop_assert!(findings.iter().any(|f| f.rule == "github-pat-classic"), "{:?}", findings);
        for f in &findings {
            assert_no_leak(f, &token);
        }
    }
}
