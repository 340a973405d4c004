//! How alike two memories are worded, as wholes: the cosine of their character n-gram profiles
//! (3 to 5 characters inside each word, the word padded with a space on each side; term
//! frequencies damped with a logarithm; no weights learned from any corpus).
//!
//! Character n-grams see one subject under other spellings and inflections ("migration",
//! "migrations", "Migrationen", "migración"; "Postgres", "PostgreSQL"; "pre-commit hook",
//! "pre-commit hooks") and read Chinese and Japanese text without segmenting it. Two rules
//! about one subject share much of their wording even when no single term weighs enough on its
//! own; two rules that share one word and nothing else do not. The detector uses it twice: a
//! pair worded this much alike is at least `related` (so the session-start notice can list it),
//! and a flipped word only makes a contradiction between memories that are worded alike at all.

use std::hash::{Hash, Hasher};

/// Shortest and longest n-gram, in characters.
const MIN_N: usize = 3;
const MAX_N: usize = 5;
/// At most this many characters of a memory are read.
const MAX_CHARS: usize = 6000;

/// A memory's n-gram profile: hashed n-grams, sorted, with L2-normalised weights.
#[derive(Debug, Clone, Default)]
pub(crate) struct Profile(Vec<(u64, f32)>);

fn hash(gram: &[char]) -> u64 {
    // `DefaultHasher::new()` has fixed keys: the same n-gram hashes the same in every process.
    let mut h = std::hash::DefaultHasher::new();
    gram.hash(&mut h);
    h.finish()
}

/// The profile of a text (lower-cased here).
pub(crate) fn profile(text: &str) -> Profile {
    let mut grams: Vec<u64> = Vec::new();
    let lower: String = text
        .chars()
        .take(MAX_CHARS)
        .flat_map(char::to_lowercase)
        .collect();
    for word in lower.split_whitespace() {
        let padded: Vec<char> = std::iter::once(' ')
            .chain(word.chars())
            .chain(std::iter::once(' '))
            .collect();
        for n in MIN_N..=MAX_N {
            if padded.len() <= n {
                // A word shorter than the n-gram is one n-gram of its own.
                grams.push(hash(&padded));
                break;
            }
            for w in padded.windows(n) {
                grams.push(hash(w));
            }
        }
    }
    grams.sort_unstable();
    let mut out: Vec<(u64, f32)> = Vec::new();
    for g in grams {
        match out.last_mut() {
            Some((last, count)) if *last == g => *count += 1.0,
            _ => out.push((g, 1.0)),
        }
    }
    let mut norm = 0.0f32;
    for (_, w) in &mut out {
        *w = 1.0 + w.ln();
        norm += *w * *w;
    }
    let norm = norm.sqrt();
    if norm > 0.0 {
        for (_, w) in &mut out {
            *w /= norm;
        }
    }
    Profile(out)
}

/// The cosine of two profiles, 0–1.
pub(crate) fn cosine(a: &Profile, b: &Profile) -> f32 {
    let (a, b) = (&a.0, &b.0);
    let (mut i, mut j, mut dot) = (0, 0, 0.0f32);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                dot += a[i].1 * b[j].1;
                i += 1;
                j += 1;
            }
        }
    }
    dot.clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alike_wording_scores_higher_than_a_shared_word() {
        let a = profile("Run database migrations in a transaction");
        let b = profile("Each database migration runs inside one transaction");
        let c = profile("The database team reviews dashboards weekly");
        assert!(cosine(&a, &b) > cosine(&a, &c) + 0.1);
        assert!((cosine(&a, &a) - 1.0).abs() < 1e-5);
        assert_eq!(cosine(&a, &profile("")), 0.0);
    }

    #[test]
    fn reads_text_without_spaces() {
        let a = profile("提交信息用英文写");
        let b = profile("提交信息必须用中文");
        assert!(cosine(&a, &b) > 0.0);
    }
}
