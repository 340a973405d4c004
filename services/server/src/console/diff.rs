//! A diff as the console shows it: unified (one column, old and new line numbers) or side by side.
//! Built from the unified diff text the domain gives (`crate::admin::memories::diff`, a
//! proposal's `diff`); every text in it is escaped by the template.

use super::render::{self, DiffKind};

/// One row of a unified view.
pub struct UnifiedRow {
    /// CSS class: `header`, `hunk`, `context`, `added`, `removed` or `note`.
    pub class: &'static str,
    pub mark: &'static str,
    pub old_no: String,
    pub new_no: String,
    pub text: String,
}

/// One row of a side-by-side view; a side is empty where a line has no counterpart.
pub struct SplitRow {
    pub hunk: Option<String>,
    pub left_no: String,
    pub left: String,
    pub left_class: &'static str,
    pub right_no: String,
    pub right: String,
    pub right_class: &'static str,
}

pub struct DiffView {
    pub split: bool,
    pub empty: bool,
    pub unified: Vec<UnifiedRow>,
    pub rows: Vec<SplitRow>,
}

fn no(n: Option<u32>) -> String {
    n.map(|n| n.to_string()).unwrap_or_default()
}

impl DiffView {
    pub fn new(unified_diff: &str, split: bool) -> DiffView {
        let lines = render::parse_unified(unified_diff);
        let empty = !lines
            .iter()
            .any(|l| matches!(l.kind, DiffKind::Added | DiffKind::Removed));
        let unified = if split {
            Vec::new()
        } else {
            lines
                .iter()
                .map(|l| {
                    let (class, mark) = match l.kind {
                        DiffKind::Header => ("header", ""),
                        DiffKind::Hunk => ("hunk", ""),
                        DiffKind::Context => ("context", " "),
                        DiffKind::Added => ("added", "+"),
                        DiffKind::Removed => ("removed", "-"),
                        DiffKind::Note => ("note", ""),
                    };
                    UnifiedRow {
                        class,
                        mark,
                        old_no: no(l.old_no),
                        new_no: no(l.new_no),
                        text: l.text.clone(),
                    }
                })
                .collect()
        };
        let rows = if split {
            render::side_by_side(&lines)
                .into_iter()
                .map(|r| {
                    let side = |c: &Option<render::SideCell>, changed: &'static str| match c {
                        Some(c) => (
                            c.no.to_string(),
                            c.text.clone(),
                            if c.changed { changed } else { "context" },
                        ),
                        None => (String::new(), String::new(), "blank"),
                    };
                    let (left_no, left, left_class) = side(&r.left, "removed");
                    let (right_no, right, right_class) = side(&r.right, "added");
                    SplitRow {
                        hunk: r.hunk,
                        left_no,
                        left,
                        left_class,
                        right_no,
                        right,
                        right_class,
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        DiffView {
            split,
            empty,
            unified,
            rows,
        }
    }
}
