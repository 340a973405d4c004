//! Property tests for the parsers, the index merge and the three-way text merge.

use std::collections::BTreeSet;

use memsync_core::index::{self, Index, IndexEntry, IndexItem};
use memsync_core::memory::{self, MemoryDoc, MemoryType};
use memsync_core::merge::merge_text;
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Memory files

#[derive(Debug, Clone)]
struct Memory {
    bom: bool,
    crlf: bool,
    dots_closer: bool,
    fence_padding: String,
    name: String,
    description: String,
    kind: MemoryType,
    type_in_metadata: bool,
    extras: Vec<(String, String)>,
    comment: Option<String>,
    body_lines: Vec<String>,
    body_trailing_newline: bool,
}

impl Memory {
    fn text(&self) -> (String, String) {
        let nl = if self.crlf { "\r\n" } else { "\n" };
        let mut fm = vec![format!("---{}", self.fence_padding)];
        if let Some(c) = &self.comment {
            fm.push(format!("# {c}"));
        }
        for (k, v) in &self.extras {
            fm.push(format!("{k}: {v}"));
        }
        fm.push(format!("name: {}", self.name));
        fm.push(format!("description: \"{}\"", self.description));
        if self.type_in_metadata {
            fm.push("metadata:".into());
            fm.push(format!("  type: {}", self.kind.as_str()));
        } else {
            fm.push(format!("type: {}", self.kind.as_str()));
        }
        fm.push(format!(
            "{}{}",
            if self.dots_closer { "..." } else { "---" },
            self.fence_padding
        ));
        let mut body = self.body_lines.join(nl);
        if self.body_trailing_newline && !self.body_lines.is_empty() {
            body.push_str(nl);
        }
        let mut text = String::new();
        if self.bom {
            text.push('\u{feff}');
        }
        text.push_str(&fm.join(nl));
        text.push_str(nl);
        text.push_str(&body);
        (text, body)
    }

    fn frontmatter_lines(&self) -> u32 {
        let n = 4
            + self.extras.len()
            + usize::from(self.comment.is_some())
            + usize::from(self.type_in_metadata)
            + 1;
        u32::try_from(n).unwrap()
    }
}

fn memory_strategy() -> impl Strategy<Value = Memory> {
    (
        (any::<bool>(), any::<bool>(), any::<bool>(), "[ \t]{0,2}"),
        "[a-z][a-z0-9-]{0,30}".prop_filter("YAML keywords", |n| {
            !matches!(n.as_str(), "null" | "true" | "false")
        }),
        "[A-Za-z][A-Za-z0-9 ,.:#'-]{0,60}[A-Za-z0-9]",
        prop::sample::select(MemoryType::ALL.to_vec()),
        any::<bool>(),
        prop::collection::vec(("x_[a-z]{1,8}", "[a-z0-9 ]{0,10}[a-z0-9]"), 0..4),
        prop::option::of("[ -~]{0,20}"),
        prop::collection::vec(
            prop_oneof![Just("---".to_owned()), Just("...".to_owned()), "\\PC{0,40}"],
            0..8,
        ),
        any::<bool>(),
    )
        .prop_map(
            |(
                (bom, crlf, dots_closer, fence_padding),
                name,
                description,
                kind,
                type_in_metadata,
                extras,
                comment,
                body_lines,
                body_trailing_newline,
            )| {
                // Unique keys: YAML rejects duplicates.
                let mut seen = BTreeSet::new();
                let extras = extras
                    .into_iter()
                    .filter(|(k, _)| seen.insert(k.clone()))
                    .collect();
                Memory {
                    bom,
                    crlf,
                    dots_closer,
                    fence_padding,
                    name,
                    description,
                    kind,
                    type_in_metadata,
                    extras,
                    comment,
                    body_lines,
                    body_trailing_newline,
                }
            },
        )
}

proptest! {
    #[test]
    fn memory_round_trip(m in memory_strategy()) {
        let (text, body) = m.text();
        let doc = MemoryDoc::parse(&text).map_err(|p| TestCaseError::fail(format!("{p:?}\n{text:?}")))?;
        prop_assert_eq!(doc.render(), text.clone());
        prop_assert_eq!(doc.body(), body.as_str());
        prop_assert_eq!(doc.body_start_line(), m.frontmatter_lines() + 1);
        prop_assert_eq!(doc.name(), Some(m.name.as_str()));
        prop_assert_eq!(doc.description(), Some(m.description.as_str()));
        prop_assert_eq!(doc.memory_type(), Some(m.kind));
        for (k, v) in &m.extras {
            // Only values that YAML reads as plain strings (not numbers, booleans or null).
            let v = v.trim();
            if v.starts_with(|c: char| c.is_ascii_lowercase()) && !matches!(v, "null" | "true" | "false") {
                prop_assert_eq!(doc.get_str(k), Some(v));
            }
        }
        let validated = memory::validate(text.as_bytes(), memory::DEFAULT_MAX_FILE_BYTES);
        prop_assert_eq!(validated, Ok(doc));
    }

    #[test]
    fn memory_parse_never_panics(text in "\\PC{0,200}") {
        if let Ok(doc) = MemoryDoc::parse(&text) {
            prop_assert_eq!(doc.render(), text.clone());
        }
        let _ = memory::validate(text.as_bytes(), 100);
    }
}

// ---------------------------------------------------------------------------------------------
// Index parse/render

fn index_line() -> impl Strategy<Value = String> {
    let word = "[A-Za-z0-9 ()\\[\\]\\\\<>#:./-]{0,12}";
    prop_oneof![
        "\\PC{0,30}",
        (
            "[ \t]{0,2}",
            prop::sample::select(vec!["-", "*", "+", "", "-\t"]),
            "[ ]{0,2}",
            word,
            word,
            prop::sample::select(vec![
                "",
                " — ",
                " - ",
                " – ",
                " -- ",
                ": ",
                "—",
                " — — ",
                " x "
            ]),
            word,
            "[ \r]{0,2}",
        )
            .prop_map(|(indent, bullet, space, title, target, sep, hook, tail)| {
                format!("{indent}{bullet}{space}[{title}]({target}){sep}{hook}{tail}")
            }),
        ("#{0,7}", "[ \t]{0,2}", word).prop_map(|(h, s, t)| format!("{h}{s}{t}")),
        Just(String::new()),
        Just("\u{feff}".to_owned()),
    ]
}

fn index_text() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(index_line(), 0..12),
        prop::sample::select(vec!["\n", "\r\n"]),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lines, nl, trailing, bom)| {
            let mut s = if bom {
                "\u{feff}".to_owned()
            } else {
                String::new()
            };
            s.push_str(&lines.join(nl));
            if trailing && !lines.is_empty() {
                s.push_str(nl);
            }
            s
        })
}

proptest! {
    #[test]
    fn index_round_trip(text in index_text()) {
        let parsed = Index::parse(&text);
        let rendered = parsed.render();
        prop_assert_eq!(Index::parse(&rendered), parsed.clone());
        // A rendered index is canonical, and canonical text renders to itself.
        prop_assert_eq!(Index::parse(&rendered).render(), rendered.clone());
        // One item per line.
        prop_assert_eq!(parsed.items.len(), rendered.lines().count());
    }
}

// ---------------------------------------------------------------------------------------------
// Index merge

const TARGETS: [&str; 8] = [
    "a.md",
    "b.md",
    "c.md",
    "d.md",
    "e.md",
    "sub/MEMORY.md",
    "g.md",
    "h.md",
];

fn merge_item() -> impl Strategy<Value = IndexItem> {
    prop_oneof![
        4 => (prop::sample::select(TARGETS.to_vec()), prop::sample::select(vec!["", "h1", "h2", "h3"]))
            .prop_map(|(t, h)| IndexItem::Entry(IndexEntry {
                title: t.trim_end_matches(".md").to_uppercase(),
                target: t.to_owned(),
                hook: h.to_owned(),
            })),
        1 => prop::sample::select(vec!["Testing", "Infra", "Other"])
            .prop_map(|t| IndexItem::Heading { level: 2, text: t.to_owned() }),
        1 => prop::sample::select(vec!["", "note"]).prop_map(|t| IndexItem::Text(t.to_owned())),
    ]
}

fn merge_index() -> impl Strategy<Value = Index> {
    prop::collection::vec(merge_item(), 0..12).prop_map(|items| Index { items })
}

fn target_set(index: &Index) -> BTreeSet<String> {
    index.entries().map(|e| e.target.clone()).collect()
}

fn assert_no_duplicates(index: &Index) -> Result<(), TestCaseError> {
    let mut seen = BTreeSet::new();
    for e in index.entries() {
        prop_assert!(
            seen.insert(e.target.clone()),
            "duplicate {} in {:?}",
            e.target,
            index
        );
    }
    Ok(())
}

fn first_entries(index: &Index) -> std::collections::BTreeMap<String, IndexEntry> {
    let mut m = std::collections::BTreeMap::new();
    for e in index.entries() {
        m.entry(e.target.clone()).or_insert_with(|| e.clone());
    }
    m
}

proptest! {
    #[test]
    fn merge_one_sided(b in merge_index(), x in merge_index()) {
        let ours_only = index::merge(&b, &x, &b);
        prop_assert_eq!(target_set(&ours_only), target_set(&x));
        assert_no_duplicates(&ours_only)?;
        let theirs_only = index::merge(&b, &b, &x);
        prop_assert_eq!(target_set(&theirs_only), target_set(&x));
        assert_no_duplicates(&theirs_only)?;
        // Only theirs changed: the result is theirs, minus repeated entries.
        prop_assert_eq!(first_entries(&theirs_only), first_entries(&x));
        prop_assert_eq!(first_entries(&ours_only), first_entries(&x));
    }

    #[test]
    fn merge_two_sided(b in merge_index(), x in merge_index(), y in merge_index()) {
        let m = index::merge(&b, &x, &y);
        assert_no_duplicates(&m)?;
        let (bs, xs, ys, ms) = (first_entries(&b), first_entries(&x), first_entries(&y), first_entries(&m));
        for t in xs.keys().chain(ys.keys()) {
            if !bs.contains_key(t) {
                prop_assert!(ms.contains_key(t), "added {} missing from {:?}", t, m);
            }
        }
        for (t, xe) in &xs {
            if !bs.contains_key(t) {
                prop_assert_eq!(ms.get(t), Some(xe), "both added: ours wins");
            }
        }
        for (t, be) in &bs {
            match (xs.get(t), ys.get(t)) {
                (None, None) => prop_assert!(!ms.contains_key(t)),
                (None, Some(ye)) if ye == be => prop_assert!(!ms.contains_key(t)),
                (Some(xe), None) if xe == be => prop_assert!(!ms.contains_key(t)),
                (Some(xe), Some(ye)) => {
                    let want = if xe != be { xe } else { ye };
                    prop_assert_eq!(ms.get(t), Some(want));
                }
                _ => prop_assert!(ms.contains_key(t)),
            }
        }
        // Nothing appears that neither side has.
        for t in ms.keys() {
            prop_assert!(xs.contains_key(t) || ys.contains_key(t));
        }
        prop_assert_eq!(Index::parse(&m.render()), m);
    }
}

// ---------------------------------------------------------------------------------------------
// Three-way text merge

fn paragraphs() -> impl Strategy<Value = Vec<Vec<String>>> {
    prop::collection::vec(
        prop::collection::vec("[a-z]{1,8}( [a-z]{1,8}){0,4}", 1..4),
        3..8,
    )
}

fn join(paras: &[Vec<String>], trailing_newline: bool) -> String {
    let mut s = paras
        .iter()
        .map(|p| p.join("\n"))
        .collect::<Vec<_>>()
        .join("\n\n");
    if trailing_newline {
        s.push('\n');
    }
    s
}

/// Lines are made unique per paragraph so that the diff cannot align them elsewhere.
fn tag(paras: Vec<Vec<String>>) -> Vec<Vec<String>> {
    paras
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            p.into_iter()
                .enumerate()
                .map(|(k, l)| format!("p{i}.{k} {l}"))
                .collect()
        })
        .collect()
}

proptest! {
    #[test]
    fn merge_text_one_sided(b in "\\PC{0,80}", x in "\\PC{0,80}") {
        prop_assert_eq!(merge_text(&b, &x, &b), Ok(x.clone()));
        prop_assert_eq!(merge_text(&b, &b, &x), Ok(x.clone()));
        prop_assert_eq!(merge_text(&b, &x, &x), Ok(x));
    }

    #[test]
    fn merge_text_separate_paragraphs(
        paras in paragraphs(),
        i in 0usize..8,
        j in 0usize..8,
        edit_a in "[A-Z]{1,8}",
        edit_b in "[A-Z]{1,8}",
        trailing in any::<bool>(),
    ) {
        let paras = tag(paras);
        let n = paras.len();
        let i = i % n;
        // Any paragraph but i.
        let j = (i + 1 + j % (n - 1)) % n;
        let base = join(&paras, trailing);
        let mut ours = paras.clone();
        ours[i] = vec![format!("ours {edit_a}")];
        let mut theirs = paras.clone();
        theirs[j].push(format!("theirs {edit_b}"));
        let mut both = ours.clone();
        both[j] = theirs[j].clone();
        prop_assert_eq!(
            merge_text(&base, &join(&ours, trailing), &join(&theirs, trailing)),
            Ok(join(&both, trailing))
        );
    }

    #[test]
    fn merge_text_same_line_conflicts(paras in paragraphs(), i in 0usize..8, trailing in any::<bool>()) {
        let paras = tag(paras);
        let i = i % paras.len();
        let base = join(&paras, trailing);
        let mut ours = paras.clone();
        ours[i][0] = "ours".into();
        let mut theirs = paras.clone();
        theirs[i][0] = "theirs".into();
        prop_assert!(merge_text(&base, &join(&ours, trailing), &join(&theirs, trailing)).is_err());
    }
}

// ---------------------------------------------------------------------------------------------
// On-disk layout: which paths may live together

fn small_path() -> impl Strategy<Value = String> {
    // A tiny alphabet with case variants and `.md` directory names, so clashes are common.
    let seg = prop::sample::select(vec![
        "a",
        "A",
        "b",
        "a.md",
        "A.md",
        "MEMORY.md",
        "memory.md",
    ]);
    prop::collection::vec(seg, 1..4).prop_map(|segs| {
        let mut p = segs.join("/");
        if !p.ends_with(".md") {
            p.push_str(".md");
        }
        p
    })
}

proptest! {
    /// What the server looks up (paths selected by `lookup_keys`) finds every clash the whole
    /// project would show, so checking against the candidates alone is as strict as checking
    /// against everything.
    #[test]
    fn lookup_keys_find_every_clash(
        stored in prop::collection::vec(small_path(), 0..12),
        new in small_path(),
    ) {
        use memsync_core::tree::PathTree;
        let (full, _) = PathTree::build(stored.iter().map(String::as_str));
        let keys = PathTree::lookup_keys(&new);
        let (picked, _) = PathTree::build(
            stored.iter().map(String::as_str).filter(|p| keys.selects(p)),
        );
        prop_assert_eq!(full.check(&new).is_some(), picked.check(&new).is_some());
    }

    /// A tree never holds two names that one case-insensitive filesystem would merge, nor a file
    /// and a directory of one name.
    #[test]
    fn accepted_paths_coexist_on_disk(paths in prop::collection::vec(small_path(), 0..16)) {
        use memsync_core::tree::{PathTree, fold};
        let mut tree = PathTree::new();
        let mut accepted: Vec<String> = Vec::new();
        for p in &paths {
            if tree.insert(p).is_ok() {
                accepted.push(p.clone());
            }
        }
        let mut names: std::collections::HashMap<String, (String, bool)> = Default::default();
        for p in &accepted {
            let segs: Vec<&str> = p.split('/').collect();
            for i in 0..segs.len() {
                let name = segs[..=i].join("/");
                let dir = i + 1 < segs.len();
                let prev = names.entry(fold(&name)).or_insert((name.clone(), dir));
                prop_assert_eq!(&prev.0, &name);
                prop_assert_eq!(prev.1, dir);
            }
        }
    }
}
