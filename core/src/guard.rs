//! The team-write guards as push failures: scanner findings (secrets, injection payloads) in the
//! shape both the server's 422 and the client's report use. The matched value never appears:
//! only the rule, the position, a redacted preview and the fingerprint.

use crate::scan::{Category, Finding, scanner};
use crate::wire::Failure;

pub fn category_name(c: Category) -> &'static str {
    match c {
        Category::Secret => "secret",
        Category::Injection => "injection",
        Category::Policy => "policy",
    }
}

/// A scanner finding as a push failure.
pub fn finding_failure(path: &str, f: &Finding) -> Failure {
    let what = match f.category {
        Category::Secret => "what looks like a secret",
        Category::Injection => "what looks like a prompt-injection payload",
        Category::Policy => "a policy violation",
    };
    let fix = match f.category {
        Category::Secret => {
            "remove it (write a placeholder such as <your-key> instead, and rotate the secret if it was real)"
        }
        _ => "remove it",
    };
    Failure {
        path: path.to_owned(),
        rule: f.rule.to_owned(),
        message: format!(
            "{what} ({}) at line {}, column {}: `{}`; {fix}. If it is not one, a team admin can allowlist this exact finding for the project (fingerprint {})",
            f.rule, f.line, f.column, f.preview, f.fingerprint
        ),
        line: Some(f.line),
        column: Some(f.column),
        category: Some(category_name(f.category).to_owned()),
        preview: Some(f.preview.clone()),
        fingerprint: Some(f.fingerprint.clone()),
    }
}

/// Every guard finding in one file's text, as failures.
pub fn scan_text(path: &str, text: &str) -> Vec<Failure> {
    scanner()
        .scan(text)
        .iter()
        .map(|f| finding_failure(path, f))
        .collect()
}
